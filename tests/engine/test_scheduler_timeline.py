"""The step scheduler against timelines worked out by hand (docs/semantics.md §9).

Cost model of every test here: 1 ms per token computed, nothing else (no
weights, KV reads or attention), so a step of T tokens takes T ms.
"""
from __future__ import annotations

import numpy as np
import pytest

from helpers import req, step_cost, step_run

MS = 0.001


def _col(eng, name):
    col = eng.result.columns[name]
    if isinstance(col, np.ndarray):     # the compiled step loop's columns: numpy over its own bytes
        return col.tolist()
    return np.frombuffer(col, dtype={"q": np.int64, "d": np.float64, "b": np.int8}[col.typecode]).tolist()


def test_three_requests_budget_four():
    # block size 2, budget 4 tokens, distinct ids (no hits), GPU 100 blocks (no preemption).
    # R0: t=0,      prompt 6, output 3     R1: t=1 ms, prompt 3, output 2     R2: t=1.5 ms, prompt 2, output 1
    # step 1 [0, 4 ms):   no decode; R0 admitted, chunk 4 of 6                       -> 4 tokens, 4 ms
    #                     (R1, R2 arrive during it and wait for the next boundary)
    # step 2 [4, 8 ms):   R0 chunk 2 (done); R1 admitted, chunk 2 of 3; budget spent: R2 waits
    #                                                                                -> 4 tokens, 4 ms
    #                     R0's first token at 8 ms: TTFT 8 ms
    # step 3 [8, 12 ms):  R0 decodes 1; R1 chunk 1 (done); R2 admitted, chunk 2 (done) -> 4 tokens, 4 ms
    #                     R1 TTFT 12 - 1 = 11 ms; R2 TTFT 12 - 1.5 = 10.5 ms, output 1: finishes at 12 ms
    # step 4 [12, 14 ms): R0 and R1 decode (R0's 3rd token, R1's 2nd): both finish    -> 2 tokens, 2 ms
    reqs = [req([1, 2, 3], 0.0, prompt=6, out=3, bs=2), req([11, 12], 1 * MS, prompt=3, out=2, bs=2),
            req([21], 1.5 * MS, prompt=2, out=1, bs=2)]
    eng = step_run(reqs, [100], step_cost(token_s=MS), budget=4, seqs=4)
    steps = [(round(t / MS, 9), round(s / MS, 9), tokens, d, chunks, n)
             for t, s, _, tokens, d, chunks, n in eng.steps_log]
    assert steps == [(0.0, 4.0, 4, 0, 1, 1), (4.0, 4.0, 4, 0, 2, 1), (8.0, 4.0, 4, 1, 2, 1), (12.0, 2.0, 2, 2, 0, 1)]
    assert _col(eng, "ttft_s") == pytest.approx([8 * MS, 11 * MS, 10.5 * MS], abs=1e-12)
    assert _col(eng, "finish_s") == pytest.approx([14 * MS, 14 * MS, 12 * MS], abs=1e-12)
    # TPOT = (finish - first token) / (output - 1): R0 (14 - 8) / 2 = 3 ms, R1 (14 - 12) / 1 = 2 ms, R2 none
    tpot = _col(eng, "tpot_s")
    assert tpot[:2] == pytest.approx([3 * MS, 2 * MS], abs=1e-12) and np.isnan(tpot[2])
    # no KV shortage: no wait for KV space (wait_s); the queue waits were for the step budget and, with the steps
    # that were not theirs, make the compute wait: R0 8 - 8 = 0, R1 11 - 8 = 3 ms, R2 10.5 - 4 = 6.5 ms, where the
    # own prefill steps are R0 steps 1-2 (8 ms), R1 steps 2-3 (8 ms), R2 step 3 (4 ms)
    assert _col(eng, "wait_s") == [0.0, 0.0, 0.0]
    assert _col(eng, "prefill_steps_s") == pytest.approx([8 * MS, 8 * MS, 4 * MS], abs=1e-12)
    assert _col(eng, "wait_compute_s") == pytest.approx([0.0, 3 * MS, 6.5 * MS], abs=1e-12)
    st = eng.stats
    assert st.busy_s == pytest.approx(14 * MS) and st.steps == 4 and st.prefill_steps == 3
    # Little's law: requests in the system integrated over time = sum of end-to-end latencies 14 + 13 + 10.5 ms
    assert st.in_system_area_s == pytest.approx(37.5 * MS, abs=1e-12)


def test_preemption_of_the_youngest():
    # block size 2, GPU 4 blocks, budget 8, no hits. R0, R1: t=0, prompt 2 (one block), output 4.
    # step 1 [0, 4 ms): both admitted (1 block each), chunks 2 + 2 -> 4 tokens, 4 ms; first tokens out
    # step 2 [4, 6 ms): both decode, writing KV position 2: a 2nd block each (4 of 4 used) -> 2 ms
    # step 3 [6, 8 ms): position 3, same blocks -> 2 ms
    # step 4 [8, 9 ms): position 4 needs a 3rd block, none is left: the youngest growing request, R1, is
    #                   preempted after 3 tokens (its blocks freed, its prompt block stays cached); R0 grows
    #                   and decodes alone (its 4th token: done at 9 ms); R1 cannot get 3 blocks yet -> 1 ms
    # step 5 [9, 12 ms): R1 re-admitted: prompt 2 + 3 tokens generated = 5 tokens, cap (5 - 1) // 2 = 2 blocks;
    #                   its prompt block hits, 3 tokens computed -> 3 ms, and its 4th token is out: done at 12 ms
    reqs = [req([1], 0.0, prompt=2, out=4, bs=2), req([2], 0.0, prompt=2, out=4, bs=2)]
    eng = step_run(reqs, [4], step_cost(token_s=MS), budget=8, seqs=8, skip=False)
    steps = [(round(t / MS, 9), round(s / MS, 9), tokens, n) for t, s, _, tokens, _, _, n in eng.steps_log]
    assert steps == [(0.0, 4.0, 4, 1), (4.0, 2.0, 2, 1), (6.0, 2.0, 2, 1), (8.0, 1.0, 1, 1), (9.0, 3.0, 3, 1)]
    assert _col(eng, "preemptions") == [0, 1]
    assert _col(eng, "ttft_s") == pytest.approx([4 * MS, 4 * MS], abs=1e-12)     # the first token counts
    assert _col(eng, "finish_s") == pytest.approx([9 * MS, 12 * MS], abs=1e-12)
    # the hit ratio counts R1's prompt once (its first admission: no hit); the 3 recomputed tokens are waste
    assert _col(eng, "hit_tokens") == [0, 0]
    assert eng.stats.recompute_tokens == 3 and eng.stats.preemptions == 1
    # event skipping gives the same timeline: steps 2-3 in one closed-form advance
    fast = step_run(reqs, [4], step_cost(token_s=MS), budget=8, seqs=8)
    assert [(round(t / MS, 9), round(s / MS, 9), n) for t, s, *_, n in fast.steps_log] == \
        [(0.0, 4.0, 1), (4.0, 4.0, 2), (8.0, 1.0, 1), (9.0, 3.0, 1)]
    assert _col(fast, "finish_s") == _col(eng, "finish_s")


class _Link:
    """1 us per byte, no setup: a 3,000-byte block takes 3 ms."""

    setup_s = 0.0

    def transfer_s(self, num_bytes, io_size_bytes=None):
        return num_bytes * 1e-6


# block size 2; GPU 3 blocks, CPU 10; a CPU block restores in 3 ms.
# R0 t=0 ids [1, 2] prompt 4 output 1: computes both (4 ms), done at 4 ms; [2] released first (tail first).
# R1 t=10 ms ids [3, 4] prompt 4 output 1: needs 2 slots, 1 free: evicts [2] (the older), demoted to CPU.
# R2 t=20 ms ids [1, 2, 5] prompt 6 output 1: [1] on the GPU, [2] on the CPU, [5] nowhere; cap (6 - 1) // 2 = 2
#   -> 2 hits, one to restore (3 ms). The GPU lead is 1 block. The restore saves the prefill of tokens 2-3:
#   prefill(4 new after 2) - prefill(2 new after 4) = 4 - 2 = 2 ms < 3 ms: the envelope says it loses.
_RESTORE_CASES = {
    # fallback: recompute from the GPU lead: 4 tokens, one 4 ms step -> TTFT 4 ms; hits 2 tokens (GPU)
    "fallback": (dict(restore_fallback=True), 4.0, 2, 0.0, 1),
    # layerwise (4 layers): the 2-token step computes 2 ms, W = 2 x 3/4 = 1.5 ms; the block lands at 3 ms:
    # the step is stretched by 3 - 1.5 = 1.5 ms -> TTFT 3.5 ms; hits 4 tokens
    "layerwise": (dict(restore_fallback=False), 3.5, 4, 1.5, 0),
    # wait: prefill starts when the block has landed (3 ms), 2 ms -> TTFT 5 ms
    "wait": (dict(restore_fallback=False, restore_policy="wait"), 5.0, 4, 3.0, 0),
    # best-effort, 1 ms timeout: nothing landed by 21 ms (the block needs 3 ms): recompute from the GPU lead,
    # 4 tokens from 21 ms -> TTFT 5 ms; the exposed restore is the 1 ms waited
    "best-effort": (dict(restore_fallback=False, restore_policy="best-effort", restore_timeout_s=0.001), 5.0, 2, 1.0,
                    0),
}


@pytest.mark.parametrize("case", list(_RESTORE_CASES))
def test_restore_policies(case):
    config, ttft_ms, hit_tokens, exposed_ms, skipped = _RESTORE_CASES[case]
    reqs = [req([1, 2], 0.0, prompt=4, out=1, bs=2), req([3, 4], 0.010, prompt=4, out=1, bs=2),
            req([1, 2, 5], 0.020, prompt=6, out=1, bs=2)]
    eng = step_run(reqs, [3, 10], step_cost(token_s=MS, layers=4), links=[None, _Link()],
                   block_bytes=[3000, 3000], **config)
    assert _col(eng, "ttft_s")[2] == pytest.approx(ttft_ms * MS, abs=1e-12)
    assert _col(eng, "hit_tokens")[2] == hit_tokens
    assert _col(eng, "exposed_restore_s")[2] == pytest.approx(exposed_ms * MS, abs=1e-12)
    assert (_col(eng, "hit_tokens_gpu")[2], _col(eng, "hit_tokens_cpu")[2]) == (2, hit_tokens - 2)
    st = eng.stats
    assert (st.restores_considered, st.restores_losing, st.restores_skipped) == (1, 1, skipped)
    assert st.restore_timeouts == (1 if case == "best-effort" else 0)
    assert eng.result.ledger.links[1].restored_bytes == (0 if skipped else 3000)


@pytest.mark.parametrize("cache_decode", [True, False])
def test_decode_blocks_reused_by_the_next_turn(cache_decode):
    # block size 2. R0 t=0 ids [1, 2] prompt 4 output 3: its KV ends at 4 + 3 - 1 = 6 tokens, 3 full blocks:
    # position 2 is an output block. R1 t=1 s ids [1, 2, 7, 8] prompt 8 >= 4 + 3 holds R0's prompt and answer:
    # R0's output block gets R1's id at position 2, 7. Cached, R1 hits [1, 2, 7] (cap (8 - 1) // 2 = 3):
    # 6 tokens; without, [1, 2]: 4 tokens.
    from pcs.engine.turns import decode_blocks

    reqs = [req([1, 2], 0.0, prompt=4, out=3, bs=2), req([1, 2, 7, 8], 1.0, prompt=8, out=1, bs=2)]
    dec = decode_blocks(reqs)
    assert dec.hashes == {0: [7]} and dec.pairs == 1 and dec.detected
    eng = step_run(reqs, [20], step_cost(token_s=MS), decode=dec if cache_decode else None)
    assert _col(eng, "hit_tokens") == [0, 6 if cache_decode else 4]
    assert _col(eng, "decode_blocks_cached") == [1 if cache_decode else 0, 0]


def test_wait_for_kv_space():
    # block size 2, GPU 2 blocks. R0 t=0 ids [1, 2] prompt 4 output 1: both slots, one 4 ms step, done at 4 ms.
    # R1 t=0 ids [3] prompt 2 output 1: no slot left at 0 (head of line, KV space) until R0 finishes at 4 ms;
    # then one 2 ms step: TTFT 6 ms, all 4 ms of its queue wait for KV space, no compute wait
    reqs = [req([1, 2], 0.0, prompt=4, out=1, bs=2), req([3], 0.0, prompt=2, out=1, bs=2)]
    eng = step_run(reqs, [2], step_cost(token_s=MS), budget=8, seqs=8)
    assert _col(eng, "ttft_s") == pytest.approx([4 * MS, 6 * MS], abs=1e-12)
    assert _col(eng, "wait_s") == pytest.approx([0.0, 4 * MS], abs=1e-12)
    assert _col(eng, "wait_compute_s") == pytest.approx([0.0, 0.0], abs=1e-12)


def test_best_effort_timeouts_at_the_same_deadline():
    # Hostile F1. Block size 2, GPU 4 blocks, CPU 10; each block restore takes 3 ms (_Link, 3,000 bytes).
    # R0 [1, 2] t=0 and R1 [3, 4] t=10 ms (4 tokens each) fill the GPU; R2 [5, 6, 7, 8] t=20 ms (8 tokens)
    # demotes all four to the CPU. R3 [1, 2] and R4 [3, 4] arrive together at 30 ms: each hits one CPU block
    # (cap (4 - 1) // 2 = 1), GPU lead 0; the 3 ms restore misses the 1 ms timeout, so both become ready at the
    # same deadline 31 ms with the same hit count: their pending-heap entries tie on time and must not compare
    # the request objects (a TypeError before). Each keeps 0 blocks and prefills 4 tokens; the two share one
    # 8-token step (budget 8, 1 ms a token): TTFT = 1 ms waited + 8 ms = 9 ms, 0 hit tokens, 2 timeouts.
    reqs = [req([1, 2], 0.0, prompt=4, out=1, bs=2), req([3, 4], 0.010, prompt=4, out=1, bs=2),
            req([5, 6, 7, 8], 0.020, prompt=8, out=1, bs=2),
            req([1, 2], 0.030, prompt=4, out=1, bs=2), req([3, 4], 0.030, prompt=4, out=1, bs=2)]
    eng = step_run(reqs, [4, 10], step_cost(token_s=MS), links=[None, _Link()], block_bytes=[3000, 3000],
                   restore_fallback=False, restore_policy="best-effort", restore_timeout_s=0.001)
    assert eng.stats.restore_timeouts == 2
    assert _col(eng, "hit_tokens")[3:] == [0, 0]
    assert _col(eng, "ttft_s")[3:] == pytest.approx([9 * MS, 9 * MS], abs=1e-12)


def test_a_readmission_restore_counts_in_the_request_row():
    # docs/semantics.md §11: a request's restored_bytes = the bytes every one of its admissions restored.
    # Block size 2; GPU 3 blocks, CPU 10; a CPU block restores in 3 ms (3,000 B at 1 us/B); write-back.
    # R0, R1: t=0, prompt 2 (one block: [1], [2]), output 4; budget 8.
    # step 1 [0, 4 ms):  both admitted (no hit), 2 + 2 tokens; first tokens out at 4 ms; 2 of 3 blocks used
    # step 2 [4, 5 ms):  KV position 2 needs a 2nd block each: R0 takes the free one, none is left for R1 (the
    #                    youngest): preempted after 1 token, its block [2] unpinned (cached); R0 decodes alone
    # step 3 [5, 6 ms):  R0 writes position 3 (same block)
    # step 4 [6, 7 ms):  position 4 needs a 3rd block: [2] (unpinned, LRU) is evicted and demoted to the CPU;
    #                    R0's 4th token: done at 7 ms, its blocks freed
    # 7 ms: R1 re-admitted with 2 + 1 = 3 tokens, cap (3 - 1) // 2 = 1 block: [2] hits on the CPU: one
    #       3,000 B restore (3 ms; it saves 3 - 1 = 2 ms of prefill, so it loses, but fallback is off); `wait`:
    #       lands at 10 ms
    # step [10, 11 ms): R1 computes 1 token (its 2nd); steps [11, 12), [12, 13): its 3rd and 4th: done at 13 ms
    # R1's first admission restored nothing; its re-admission moved 3,000 B over the link: its row says 3,000,
    # as the link does; restore_s stays its first admission's (0: TTFT at 4 ms had no restore).
    reqs = [req([1], 0.0, prompt=2, out=4, bs=2), req([2], 0.0, prompt=2, out=4, bs=2)]
    eng = step_run(reqs, [3, 10], step_cost(token_s=MS), links=[None, _Link()], block_bytes=[3000, 3000],
                   budget=8, seqs=8, skip=False, restore_fallback=False, restore_policy="wait")
    steps = [(round(t / MS, 9), round(s / MS, 9), tokens) for t, s, _, tokens, *_ in eng.steps_log]
    assert steps == [(0.0, 4.0, 4), (4.0, 1.0, 1), (5.0, 1.0, 1), (6.0, 1.0, 1), (10.0, 1.0, 1), (11.0, 1.0, 1),
                     (12.0, 1.0, 1)]
    assert _col(eng, "preemptions") == [0, 1]
    assert _col(eng, "finish_s") == pytest.approx([7 * MS, 13 * MS], abs=1e-12)
    assert _col(eng, "restored_bytes") == [0, 3000]
    assert [lk.restored_bytes for lk in eng.result.ledger.links] == [0, 3000]     # gpu (no link), cpu
    assert _col(eng, "restore_s") == [0.0, 0.0]
    assert (eng.stats.restores_considered, eng.stats.restores_losing) == (1, 1)
