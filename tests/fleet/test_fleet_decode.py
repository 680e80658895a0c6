"""The fleet gap split under the step scheduler with decode blocks cached (docs/semantics.md §9, §17).

An instance caches a finished request's output blocks under the next turn's ids, so the ceilings count
them: fleet ceiling >= captured >= delivered, preemptions or not. Why preemption cannot break the second
(docs/semantics.md §9, §17): a request's hits count once, at its first admission; an instance admits its
requests for the first time in sub-trace order (FIFO; a preempted request goes back to the head of the queue,
so nobody overtakes a request that was never admitted); every block present at that admission was stored by a
request admitted before it (its prompt blocks, or output blocks under the next turn's ids, which the walk sees
right after that request's prompt), so the walk in sub-trace order holds it too. A re-admission recomputes the
prompt and the output so far (ids the walk has seen) and its hits are not counted. The hand case:
``test_hand_case_a_preempted_request_counts_its_first_admission``.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import conversation_trace, req
from pcs import _native
from pcs.blocks import BlockRules, single_sequence_hits
from pcs.engine.turns import decode_blocks_python
from pcs.fleet import fleet_replay, router_names

BS = 4
STEP = dict(model="llama-3.1-8b", hardware="h100-sxm", tp=1)     # the analytic compute: the step scheduler runs


def test_hand_case_of_the_blocker():
    # block size 4, one instance (the blocker's 8 instances, cut to the smallest case).
    # A at 0 s: ids [1, 2], prompt 8, output 9 -> its output fills positions 2 .. (8 + 9 - 1) // 4 - 1 = 3.
    # B at 10 s (A has long finished): ids [1, 2, 3, 4, 5], prompt 20 >= 17: A's next turn; A's output
    # blocks are cached under B's ids 3, 4, and B hits [1, 2, 3, 4] (cap (20 - 1) // 4 = 4 blocks) = 16
    # tokens. Prompt tokens 8 + 20 = 28.
    # The prompt-only ceiling counts 3 and 4 as first uses: B hits [1, 2] = 8 tokens -> 8 / 28 < 16 / 28
    # delivered: the blocker. The decode-aware ceiling (and captured) is 16 / 28.
    reqs = [req([1, 2], 0.0, prompt=8, out=9, bs=BS), req([1, 2, 3, 4, 5], 10.0, prompt=20, out=0, bs=BS)]
    assert single_sequence_hits(reqs, BlockRules()).hit_tokens == 8
    for instances, router in ((1, "round-robin"), (2, "consistent-hash:k=1")):
        s = fleet_replay(reqs, instances=instances, router=router, **STEP).summary
        assert s.hit_tokens == 16 and s.prompt_tokens == 28
        assert s.gap.fleet_ceiling_hit_ratio == s.gap.captured_hit_ratio == s.gap.delivered_hit_ratio == 16 / 28
    # round-robin splits the conversation: nothing captured, nothing delivered; the ceiling stays 16 / 28
    s = fleet_replay(reqs, instances=2, router="round-robin", **STEP).summary
    assert (s.gap.fleet_ceiling_hit_ratio, s.gap.captured_hit_ratio, s.hit_tokens) == (16 / 28, 0.0, 0)
    # decode blocks off: the prompt-only ceilings again (8 / 28), and delivered is 8 tokens too
    from pcs.engine.schedconfig import SchedulerConfig

    s = fleet_replay(reqs, instances=1, scheduler=SchedulerConfig(cache_decode_blocks=False), **STEP).summary
    assert (s.gap.fleet_ceiling_hit_ratio, s.gap.captured_hit_ratio, s.hit_tokens) == (8 / 28, 8 / 28, 8)


def test_hand_case_a_preempted_request_counts_its_first_admission():
    # block size 4, one instance, a GPU tier of 5 blocks and nothing below it (the smallest preemption).
    # A and B arrive at 0 s: A ids [1, 2], B ids [3, 4], each prompt 8 (2 blocks), output 5 tokens, no next turn.
    # Step 1 admits both (4 of 5 slots, no hits: the cache is empty) and prefills both (16 tokens, within the
    # budget): each has its first token. The next decode step writes each one's token at KV position 8, a block
    # boundary: A (older) takes the 5th slot; B finds none and is the youngest running request that grows, so B
    # is preempted (semantics.md §9): its blocks are freed and stay cached, [3, 4] unpinned.
    # A then writes positions 9 .. 11 in its third block (no boundary) and finishes; nothing is evicted
    # (5 slots, 3 + 2 used). B is admitted again with prompt 8 + its 1 generated token = 9 tokens: its chain
    # [3, 4] is resident, a hit of 2 blocks (cap (9 - 1) // 4 = 2) = 8 tokens at the re-admission.
    # Counted at the re-admission that hit would make delivered 8 / 16 > captured: the walk in sub-trace
    # order (A, then B, infinite cache) gives B nothing before it, so captured = fleet ceiling = 0. Hits count
    # once, at the first admission (0 for both): delivered = 0 = captured = ceiling.
    reqs = [req([1, 2], 0.0, prompt=8, out=5, bs=BS), req([3, 4], 0.0, prompt=8, out=5, bs=BS)]
    f = fleet_replay(reqs, instances=1, tiers=["gpu=5blocks"], **STEP)
    s = f.summary
    assert f.requests.column("preemptions").to_pylist() == [0, 1]
    assert f.requests.column("hit_tokens").to_pylist() == [0, 0]
    gpu = s.instance_summaries[0].tiers[0]
    assert (gpu.evicted_blocks, gpu.resident_blocks_end) == (0, 4)       # [1, 2] and [3, 4] cached, none evicted
    assert (s.gap.fleet_ceiling_hit_ratio, s.gap.captured_hit_ratio, s.hit_tokens) == (0.0, 0.0, 0)
    assert s.per_instance[0].ceiling_hit_tokens == 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10 ** 6), conversations=st.integers(1, 5), turns=st.integers(1, 4),
       system=st.integers(1, 3), instances=st.integers(1, 4),
       router=st.sampled_from([r for r in router_names() if r != "session"]),
       gpu=st.sampled_from(["gpu=4blocks", "gpu=6blocks", "gpu=8blocks", "gpu=40blocks"]))
def test_ceiling_captured_delivered_under_the_step_scheduler(seed, conversations, turns, system, instances,
                                                             router, gpu):
    # Unconditional, preemptions included (the tiny GPU tiers force them: 41 of 80 such fleets drawn preempted).
    # The first inequality: the fleet ceiling's cache holds after every request what each instance's does. The
    # second, per instance: hits count at first admissions, which follow the sub-trace order (module docstring).
    reqs = conversation_trace(np.random.default_rng(seed), conversations, turns, system)
    s = fleet_replay(reqs, instances=instances, router=router, tiers=[gpu, "cpu=40blocks"], **STEP).summary
    g = s.gap
    assert g.fleet_ceiling_hit_ratio >= g.captured_hit_ratio
    assert all(x.ceiling_hit_tokens >= x.hit_tokens for x in s.per_instance)
    assert g.captured_hit_ratio >= g.delivered_hit_ratio


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10 ** 6), instances=st.integers(1, 3),
       router=st.sampled_from(["round-robin", "random", "cache-aware"]),
       gpu=st.sampled_from(["gpu=6blocks", "gpu=400blocks"]), decode=st.sampled_from([None, False]))
def test_reused_instance_ceilings_are_the_sub_trace_scans(seed, instances, router, gpu, decode):
    # The fleet takes each instance's ceiling from its replay (computed once); it must be the single-sequence
    # walk of the instance's requests in trace order (pcs.blocks.single_sequence_hits, the plain Python set
    # walk), with the next turns of that sub-trace (decode_blocks_python) when its step scheduler cached them.
    from pcs.engine.schedconfig import SchedulerConfig

    reqs = conversation_trace(np.random.default_rng(seed), 4, 3, 2)
    f = fleet_replay(reqs, instances=instances, router=router, tiers=[gpu],
                     scheduler=SchedulerConfig(cache_decode_blocks=decode), **STEP)
    for i, (row, summ) in enumerate(zip(f.summary.per_instance, f.summary.instance_summaries)):
        mine = [r for r, a in zip(reqs, f.assignment.tolist()) if a == i]
        cached = summ is not None and bool(summ.scheduler.cache_decode_blocks)
        want = single_sequence_hits(mine, BlockRules(), decode_blocks_python(mine) if cached else None)
        assert row.ceiling_hit_tokens == want.hit_tokens
        assert row.ceiling_hit_ratio == (want.hit_ratio if mine else None)


@pytest.mark.skipif(not (_native.built("lruscan") and _native.built("turns")), reason="compiled twins not built")
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10 ** 6), instances=st.integers(1, 3),
       router=st.sampled_from(["round-robin", "consistent-hash", "cache-aware"]))
def test_compiled_and_python_routes_equal(seed, instances, router):
    reqs = conversation_trace(np.random.default_rng(seed), 4, 3, 2)
    a = fleet_replay(reqs, instances=instances, router=router, native="c", **STEP).summary.to_dict()
    b = fleet_replay(reqs, instances=instances, router=router, native="python", **STEP).summary.to_dict()
    for d in (a, b):
        d.pop("instance_summaries")        # each names the engine that ran it
        d.pop("engines")                   # the engines that ran, named once
    assert a == b
