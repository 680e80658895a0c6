"""The step scheduler's parts: the hierarchy's running-request calls (Python and compiled twins), the next-turn
rule of decode blocks, and the settings."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import req
from pcs.cache import Hierarchy, Tier, make_policy
from pcs.cache.native import NativeHierarchy, available
from pcs.engine.schedconfig import SchedulerConfig, vllm_batch_defaults
from pcs.engine.turns import decode_blocks
from pcs.hardware import get_gpu

NATIVE = available([Tier("gpu", 1, make_policy("lru", 1))])


def _hier(native, caps, write_policy="back"):
    tiers = [Tier(n, c, make_policy("lru", c)) for n, c in zip(("gpu", "cpu"), caps)]
    return NativeHierarchy(tiers, write_policy) if native else Hierarchy(tiers, write_policy)


def test_grow_abort_extend_by_hand():
    # GPU 4 blocks, CPU 4. A: ids [1, 2], computes both (2 slots) + 1 extra slot -> 3 held
    h = _hier(False, [4, 4])
    a = h.start([1, 2], 2, 1, 1, True)
    assert a.reserved_blocks == 3 and h.held_blocks() == 3 and a.gpu_lead_blocks == 0
    assert h.grow(a, 1) and a.reserved_blocks == 4 and h.held_blocks() == 4
    assert not h.grow(a, 1) and a.reserved_blocks == 4       # none left: nothing changes
    h.prefill_done(a)                                         # [1, 2] cached, 2 slots left reserved
    h.extend(a, [9])                                          # a decode block takes one of them
    assert a.reserved_blocks == 1 and a.computed_hashes == [1, 2, 9]
    h.finish(a)
    assert h.held_blocks() == 0 and sorted(h.tiers[0].resident) == [1, 2, 9]
    # B hits [1, 2, 9] on the GPU (lead 3), then is aborted before its prefill: pins dropped, slots returned,
    # its computed block [5] never cached
    b = h.start([1, 2, 9, 5], 4, 3, 0, True)
    assert b.hit_blocks == 3 and b.gpu_lead_blocks == 3 and b.reserved_blocks == 1
    h.abort(b)
    assert h.held_blocks() == 0 and 5 not in h.tiers[0].resident
    h._check()


def test_grow_demotes_its_victims():
    # GPU 2, CPU 4: A computes [1], finishes ([1] cached, unpinned); B needs 1 slot + grows by 1: [1] is evicted
    # and demoted to the CPU tier, as start's victims are (docs/semantics.md §7)
    h = _hier(False, [2, 4])
    a = h.start([1], 1, 1, 0, True)
    h.prefill_done(a)
    h.finish(a)
    b = h.start([7], 1, 1, 0, True)
    assert h.grow(b, 1)
    assert 1 not in h.tiers[0].resident and 1 in h.tiers[1].resident and h.written_blocks[1] == 1


def _ops(seed: int, native: bool, write_policy: str):
    """A seeded random sequence of start / prefill_done / grow / extend / abort / finish; returns a trace of
    everything observable."""
    rng = random.Random(seed)
    h = _hier(native, [rng.randint(3, 12), rng.randint(0, 12)], write_policy)
    live, out, nxt = [], [], 1000
    for _ in range(60):
        op = rng.random()
        if op < 0.35 or not live:
            n = rng.randint(0, 5)
            ids = [rng.randint(1, 12) for _ in range(n)]
            a = h.start(ids, n, rng.randint(0, n), rng.randint(0, 2), True)
            if a is not None:
                live.append([a, False])
                out.append(("start", a.hit_blocks, a.gpu_lead_blocks, a.reserved_blocks, list(a.pinned_hashes),
                            list(a.computed_hashes), list(a.restored_blocks_per_tier)))
            continue
        entry = rng.choice(live)
        a, done = entry
        if op < 0.5:
            out.append(("grow", h.grow(a, rng.randint(0, 2)), a.reserved_blocks))
        elif op < 0.65 and not done:
            h.prefill_done(a)
            entry[1] = True
        elif op < 0.8 and done and a.reserved_blocks:
            ids = list(range(nxt, nxt + rng.randint(1, a.reserved_blocks)))
            nxt += len(ids)
            h.extend(a, ids)
            out.append(("extend", a.reserved_blocks, list(a.computed_hashes)))
        else:
            (h.finish if done else h.abort)(a)
            live.remove(entry)
        out.append(("held", h.held_blocks(), [sorted(t.resident.items()) for t in h.tiers], list(h.written_blocks),
                    h.dropped_blocks))
        h._check()
    return out


@pytest.mark.skipif(not NATIVE, reason="the compiled hierarchy is not built")
@pytest.mark.parametrize("write_policy", ["back", "through"])
def test_compiled_calls_equal_python(write_policy):
    for seed in range(150):
        assert _ops(seed, True, write_policy) == _ops(seed, False, write_policy), seed


def test_next_turn_rule():
    # bs 2. A (0): ids [1, 2] prompt 4 output 3 -> output blocks at positions 2 .. (4 + 3 - 1) // 2 - 1 = 2.
    # B (1): [1, 2, 7] prompt 5: cannot hold A's 4 + 3 tokens -> not A's next turn.
    # C (2): [1, 2, 8, 9, 10] prompt 10 >= 7: A's next turn; A's output block gets C's id at position 2: 8.
    # D (3): [1, 2, 8, 11] prompt 8: A is taken; but B's 2 full blocks are [1, 2] and 8 >= 5 + 1: D is B's next
    #   turn -- B's KV ends at 5 + 1 - 1 = 5 tokens, 2 full blocks, none from its output: no ids.
    #   C's next turn would need C's 5 blocks: none.
    # E (4): [3] prompt 1: no full block, takes no part.
    reqs = [req([1, 2], 0, prompt=4, out=3, bs=2), req([1, 2, 7], 1, prompt=5, out=1, bs=2),
            req([1, 2, 8, 9, 10], 2, prompt=10, out=1, bs=2), req([1, 2, 8, 11], 3, prompt=8, out=1, bs=2),
            req([3], 4, prompt=1, out=5, bs=2)]
    dec = decode_blocks(reqs)
    assert dec.hashes == {0: [8]} and dec.pairs == 2 and dec.requests == 5
    assert dec.detected            # 2 pairs >= 1 % of 5 requests
    assert decode_blocks(reqs[2:]).pairs == 0 and not decode_blocks(reqs[2:]).detected


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 64), st.integers(1, 3000), st.integers(1, 3000))
def test_next_turn_blocks_are_the_next_prompts_ids(bs, p, o):
    # a two-turn conversation with distinct ids: A's output blocks are the ids B has at positions
    # p // bs .. (p + o - 1) // bs - 1, as far as B's full blocks reach
    a_ids = list(range(1, p // bs + (p % bs > 0) + 1))
    pb = p + o + 5
    b_ids = a_ids[:p // bs] + list(range(10_000, 10_000 + -(-pb // bs) - p // bs))   # ceil(pb / bs) ids in all
    dec = decode_blocks([req(a_ids, 0, prompt=p, out=o, bs=bs), req(b_ids, 1, prompt=pb, out=1, bs=bs)])
    if p // bs == 0:
        assert dec.pairs == 0
        return
    end = min((p + o - 1) // bs, pb // bs)
    assert dec.get(0) == b_ids[p // bs:end]


def test_vllm_batch_defaults():
    # vLLM EngineArgs.get_batch_defaults, OpenAI server: >= 70 GiB and not an A100 -> 8192 / 1024, else 2048 / 256
    assert vllm_batch_defaults(get_gpu("h100-sxm")) == (8192, 1024)      # 80 GB = 74.5 GiB
    assert vllm_batch_defaults(get_gpu("a100-80gb")) == (2048, 256)
    cfg = SchedulerConfig(max_num_batched_tokens=512).resolved(get_gpu("h100-sxm"), 3.5e-5, True)
    assert (cfg.max_num_batched_tokens, cfg.max_num_seqs, cfg.cache_decode_blocks) == (512, 512, True)
    assert cfg.restore_timeout_per_token_s == 3.5e-5


@pytest.mark.parametrize("kw, needle", [
    (dict(max_num_batched_tokens=0), "max_num_batched_tokens"),
    (dict(max_num_batched_tokens=8, max_num_seqs=16), "must be >= max_num_seqs"),
    (dict(restore_policy="eager"), "unknown restore policy"),
    (dict(restore_timeout_s=-1.0), "restore_timeout_s"),
    (dict(max_preemptions=-1), "max_preemptions"),
    (dict(ttft_slo_s=0.0), "ttft_slo_s"),
])
def test_settings_refused(kw, needle):
    with pytest.raises(ValueError, match=needle):
        SchedulerConfig(**kw)


def test_a_compute_without_step_cost():
    # measured-style compute objects (prefill_s / decode_s_per_token only) run with the instant-compute model
    # (a note says so); asking for the step scheduler with one is an error: it needs the step roofline
    from helpers import SMALL_TRACE, LinearCompute
    from pcs.engine.api import replay

    with pytest.raises(ValueError, match="step_cost"):
        replay(SMALL_TRACE, compute=LinearCompute(), compute_mode="step")
    s = replay(SMALL_TRACE, compute=LinearCompute()).summary
    assert s.compute == "infinite" and any("step_cost" in n for n in s.notes)


def test_out_of_order_arrival_is_timed_from_when_it_is_taken():
    # The latencies are computed after the run (pcs.engine.schedstats.end_times) from the running maximum of the
    # arrivals: a request listed after a later one is taken as arriving then (scheduler.feed), and its TTFT and
    # end-to-end time count from that moment, not from its own (earlier) timestamp. Worked by hand, 1 ms per
    # token and nothing else costs: r0 at 1.0 s and r1 stamped 0.5 s (taken at 1.0 s), 8 new tokens each, 3
    # output tokens. Step 1 at 1.0: both prefills (16 tokens) = 0.016 s -> first tokens at 1.016 s. Then 2 decode
    # steps of d = 2 tokens = 0.002 s each -> both finish at 1.020 s. TTFT 0.016 s, e2e 0.020 s, TPOT 0.002 s
    # for both; r1 would show 0.516 s / 0.520 s if timed from its stamp.
    from helpers import step_cost, step_run

    from pcs.trace.batches import as_batches
    from pcs.trace.request import concat_batches

    # a request list out of order is refused at the API (pcs/trace/reqcheck.py check_order); a batch source (as
    # an instance's stream) reaches the engine as it is, so the rule below is tested on one batch of both
    reqs = [req([1, 2], 1.0, prompt=8, out=3), req([7, 8], 0.5, prompt=8, out=3)]
    both = concat_batches([next(as_batches([r])) for r in reqs])

    class Source:
        block_size = both.block_size

        def iter_batches(self):
            return iter([both])

    cols = step_run(Source(), [100], step_cost(token_s=0.001), budget=64, seqs=8).result.columns
    assert list(cols["ttft_s"]) == pytest.approx([0.016, 0.016], rel=1e-9)
    assert list(cols["e2e_s"]) == pytest.approx([0.020, 0.020], rel=1e-9)
    assert list(cols["tpot_s"]) == pytest.approx([0.002, 0.002], rel=1e-9)
    assert list(cols["finish_s"]) == pytest.approx([1.020, 1.020], rel=1e-9)
    assert list(cols["wait_compute_s"]) == [0.0, 0.0]
