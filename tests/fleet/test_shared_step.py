"""A fleet's shared tier under the step scheduler (docs/semantics.md §17.2): N step loops on one clock."""
from __future__ import annotations

import dataclasses

import math

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from pcs.engine.schedconfig import SchedulerConfig
from pcs.fleet import fleet_replay
from tests.helpers import (FLEET_TIERS, assert_empty_shared_tier_is_plain, assert_one_instance_is_single_replay,
                           HandTrace, conversation_trace, req, stress_trace,
                           tables_equal)

BS = 4
STEP = dict(model="llama-3.1-8b", hardware="h100-sxm", tp=1)      # a ComputeModel: the step scheduler runs


def _Trace(rows):
    """9-token prompts (2 full blocks + 1), one output token (the prefill's)."""
    return HandTrace(rows, BS, 1)


ROWS = [(0.0, [1, 2, 90]),      # r0 -> i0: misses; its one prefill step runs [0, e0], e0 = one step of 9 tokens
                                #     (>= the weights' read, 16 GB / 3.35 TB/s = 4.8 ms); at e0 blocks 1, 2 are
                                #     cached on i0 and written through into the shared tier
        (0.0001, [1, 2, 91]),   # r1 -> i1: its step begins at 0.1 ms < e0: the shared tier is still empty, so
                                #     1, 2 miss (under one clock; a write at e0 is not seen before e0)
        (10.0, [1, 2, 92]),     # r2 -> i0: 1, 2 in i0's own GPU tier: 8 GPU hit tokens
        (20.0, [3, 4, 93]),     # r3 -> i1: misses; 3, 4 written through into the shared tier at its prefill end
        (30.0, [3, 4, 94])]     # r4 -> i0: 3, 4 not on i0's GPU, in the shared tier: 8 shared hit tokens,
                                #     restored over i0's own link


def test_hand_traced_two_instances_under_the_step_scheduler():
    # restore_fallback off: a 2-block restore saves an 8-token prefill only, which the envelope says loses (§10)
    # and the default would recompute it; here every restore is taken, so the shared hit shows
    kw = dict(instances=2, router="round-robin", tiers=["gpu=8blocks"], shared_tier="remote=8blocks",
              write_policy="through", scheduler=SchedulerConfig(restore_fallback=False), **STEP)
    f = fleet_replay(_Trace(ROWS), **kw)
    t = f.requests
    assert f.assignment.tolist() == [0, 1, 0, 1, 0]
    assert t.column("ttft_s").to_pylist()[0] > 0.0001       # the premise: r1 begins before r0's step ends
    assert t.column("hit_tokens_remote").to_pylist() == [0, 0, 0, 0, 8]
    assert t.column("hit_tokens_gpu").to_pylist() == [0, 0, 8, 0, 0]
    assert t.column("restored_bytes").to_pylist()[4] == 2 * f.summary.shared_tier.bytes_per_block
    assert t.column("restore_s").to_pylist()[4] > 0 and t.column("restore_s").to_pylist()[:4] == [0.0] * 4
    sh = f.summary.shared_tier
    assert [p.hit_tokens for p in sh.per_instance] == [(8, 8), (0, 0)]       # (gpu, remote) per instance
    assert [p.shared_read_bytes for p in sh.per_instance] == [2 * sh.bytes_per_block, 0]
    assert sh.read_blocks == 2 and sh.peak_resident_blocks == 4              # {1, 2, 3, 4}
    # i0 writes 1, 2 (r0); i1 offers 1, 2 again at r1's end -- already there: touched, not written (§17.1) --
    # and writes 3, 4 (r3); r2 and r4 compute only their partial last block (never cached, §2)
    assert [p.shared_written_blocks for p in sh.per_instance] == [2, 2]
    assert all(x.busy_s > 0 for x in f.summary.per_instance)                 # the step scheduler's busy time
    # the same trace with sequential timing (each request done before the next): r1 reads r0's blocks
    seq = fleet_replay(_Trace(ROWS), timing="sequential", **kw)
    assert seq.requests.column("hit_tokens_remote").to_pylist() == [0, 8, 0, 0, 8]


def test_a_write_at_t_is_seen_at_t_and_never_before():
    # e0 = the end of r0's only step (its TTFT: it arrives at 0), when its blocks are written through. A
    # request on the other instance arriving at e0 begins its step at e0, after the end at e0 (ends before
    # begins at one time, §17.2): 2 shared hits; arriving one ulp before e0, its step begins first: misses
    kw = dict(instances=2, router="round-robin", tiers=["gpu=8blocks"], shared_tier="remote=8blocks",
              write_policy="through", scheduler=SchedulerConfig(restore_fallback=False), **STEP)
    e0 = fleet_replay(_Trace([(0.0, [1, 2, 90])]), **kw).requests.column("ttft_s").to_pylist()[0]
    for t, hit in ((e0, 8), (math.nextafter(e0, 0.0), 0), (e0 + 1.0, 8)):
        f = fleet_replay(_Trace([(0.0, [1, 2, 90]), (t, [1, 2, 91])]), **kw)
        assert f.requests.column("hit_tokens_remote").to_pylist() == [0, hit], t


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10 ** 6), n=st.integers(1, 40), instances=st.integers(1, 4), tiers=FLEET_TIERS,
       wp=st.sampled_from(["back", "through"]), router=st.sampled_from(["round-robin", "random", "cache-aware"]))
def test_size_zero_shared_tier_is_the_fleet_without_it(seed, n, instances, tiers, wp, router):
    # each instance runs its single replay's loop halves in the same order (§17.2), and an empty shared tier
    # holds nothing: exactly the fleet of independent replays (whose instances run the compiled step loop)
    reqs = stress_trace(seed, n, bs=16)
    kw = dict(instances=instances, router=router, tiers=tiers, write_policy=wp, **STEP)
    assert_empty_shared_tier_is_plain(reqs, **kw)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10 ** 6), n=st.integers(1, 50), instances=st.integers(1, 4), tiers=FLEET_TIERS,
       shared=st.integers(0, 60), wp=st.sampled_from(["back", "through"]), policy=st.sampled_from(["lru", "fifo"]))
def test_step_shared_tier_invariants(seed, n, instances, tiers, shared, wp, policy):
    reqs = stress_trace(seed, n, bs=16)
    f = fleet_replay(reqs, instances=instances, router="round-robin", tiers=tiers, shared_tier=f"remote={shared}blocks",
                     write_policy=wp, policy=policy, **STEP)
    s, sh = f.summary, f.summary.shared_tier
    assert sh.peak_resident_blocks <= sh.capacity_blocks == shared          # capacity never exceeded
    assert sum(x.requests for x in s.per_instance) == s.requests == n
    assert sh.hit_tokens == sum(f.requests.column("hit_tokens_remote").to_pylist())
    assert sh.read_blocks * 16 >= sh.hit_tokens                             # a shared hit block is read once
    ttft = np.array(f.requests.column("ttft_s").to_pylist())
    assert np.all(ttft > 0)                                                 # every request got its first token


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10 ** 6), n=st.integers(1, 50), tiers=FLEET_TIERS, shared=st.integers(0, 60),
       wp=st.sampled_from(["back", "through"]))
def test_one_instance_is_a_single_step_replay_whose_lowest_tier_is_the_shared_one(seed, n, tiers, shared, wp):
    # as tests/fleet/test_shared_tier.py claims for sequential and --compute infinite: the single replay has no
    # leases, so equal whenever no lease had to spare a block (counted)
    reqs = stress_trace(seed, n, bs=16)
    assert_one_instance_is_single_replay(reqs, tiers, shared, write_policy=wp, **STEP)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10 ** 6), n=st.integers(1, 50), instances=st.integers(1, 4), tiers=FLEET_TIERS,
       shared=st.integers(0, 60), wp=st.sampled_from(["back", "through"]),
       router=st.sampled_from(["round-robin", "cache-aware"]), fallback=st.booleans(), gpu_small=st.booleans())
def test_compiled_step_loops_equal_the_reference(seed, n, instances, tiers, shared, wp, router, fallback, gpu_small):
    # the C twin (pcs.engine.stepclocked, the default when built) against the Python StepEngine (native=python)
    # on the same fleet: identical per-instance rows, request tables, shared-tier summary (reads, writes, leases)
    from pcs.engine.stepclocked import ClockedNativeStepEngine

    reqs = stress_trace(seed, n, bs=16)
    tiers = ["gpu=6blocks"] + tiers[1:] if gpu_small else tiers                 # preemptions under pressure
    kw = dict(instances=instances, router=router, tiers=tiers, shared_tier=f"remote={shared}blocks",
              write_policy=wp, scheduler=SchedulerConfig(restore_fallback=fallback), **STEP)
    made = []
    real = ClockedNativeStepEngine.__init__

    def spy(self, *a, **k):
        made.append(1)
        real(self, *a, **k)

    ClockedNativeStepEngine.__init__ = spy
    try:
        c = fleet_replay(reqs, **kw)
    finally:
        ClockedNativeStepEngine.__init__ = real
    py = fleet_replay(reqs, native="python", **kw)
    assert made                                                              # the compiled loops ran
    assert [x.to_dict() for x in c.summary.per_instance] == [x.to_dict() for x in py.summary.per_instance]
    # every number equal; only which step loop ran differs (engine_reason says so: pcs/engine/select.py)
    assert (dataclasses.replace(c.summary.shared_tier, engine_reason="")
            == dataclasses.replace(py.summary.shared_tier, engine_reason=""))
    assert "compiled" in c.summary.shared_tier.engine_reason and "Python" in py.summary.shared_tier.engine_reason
    tables_equal(c.requests, py.requests)


def test_hand_case_a_request_admitted_after_a_later_one_on_another_instance():
    # block size 4, 2 instances, round-robin: r0 -> i0, x -> i1, r1 -> i0, r3 -> i1; each instance a GPU tier
    # of 200 blocks and one request at a time (max_num_seqs 1); shared tier of 100 blocks, write-through;
    # restore fallback off (a 4-block restore for a 17-token prefill loses the envelope, §10).
    # r0 at 0 s: 6 ids of its own, prompt 24, 400 output tokens: i0 decodes it alone until about 1.9 s
    #   (400 decode steps of at least 4.8 ms each: the weights' read, 16 GB / 3.35 TB/s).
    # x at 0.1 s: [201], prompt 4, 1 output token: i1, nothing shared.
    # r1 at 1.0 s: [1 .. 5], prompt 17: on i0 it waits for r0 to finish (one request at a time).
    # r3 at 1.2 s: [1 .. 4], prompt 16: i1 is idle, admitted at once; its prefill writes 1 .. 4 through.
    # r1's first admission (after r0, about 1.9 s) finds 1 .. 4 in the shared tier: 4 blocks (cap
    #   (17 - 1) // 4 = 4) = 16 tokens. Prompt tokens 24 + 4 + 17 + 16 = 61: delivered 16 / 61.
    # The trace-order walk takes r1 before r3: r1 finds nothing, r3 hits 1, 2, 3 (cap (16 - 1) // 4 = 3) =
    #   12 tokens: 12 / 61 < delivered, the failure of ceiling >= captured >= delivered with a shared tier.
    # The walk in the fleet's first-admission order (r0, x, r3, r1): r3 finds nothing, r1 hits 1 .. 4 = 16
    #   tokens: ceiling = captured = 16 / 61 = delivered. Routing alone (i0: r0, r1; i1: x, r3) shares nothing: 0.
    rows = [([101, 102, 103, 104, 105, 106], 0.0, 24, 400), ([201], 0.1, 4, 1), ([1, 2, 3, 4, 5], 1.0, 17, 1),
            ([1, 2, 3, 4], 1.2, 16, 1)]
    reqs = [req(ids, t, prompt=p, out=o, bs=BS) for ids, t, p, o in rows]
    f = fleet_replay(reqs, instances=2, router="round-robin", tiers=["gpu=200blocks"], shared_tier="remote=100blocks",
                     write_policy="through", scheduler=SchedulerConfig(restore_fallback=False, max_num_seqs=1),
                     **STEP)
    s, t = f.summary, f.requests
    assert f.assignment.tolist() == [0, 1, 0, 1]
    assert t.column("finish_s").to_pylist()[0] > 1.2 + t.column("ttft_s").to_pylist()[3]   # r3 done before r1 starts
    assert t.column("hit_tokens").to_pylist() == [0, 0, 16, 0] and s.shared_tier.hit_tokens == 16
    assert s.gap.fleet_ceiling_hit_ratio == s.gap.captured_hit_ratio == s.gap.delivered_hit_ratio == 16 / 61
    assert s.shared_tier.routing_captured_hit_ratio == 0.0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10 ** 6), conversations=st.integers(1, 6), turns=st.integers(1, 4),
       instances=st.integers(1, 4), router=st.sampled_from(["round-robin", "random", "least-loaded", "cache-aware"]),
       gpu=st.sampled_from(["gpu=4blocks", "gpu=8blocks", "gpu=40blocks"]), seqs=st.sampled_from([1, 2, 64]),
       wp=st.sampled_from(["back", "through"]))
def test_ceiling_captured_delivered_with_a_shared_tier(seed, conversations, turns, instances, router, gpu, seqs, wp):
    # Unconditional: tiny GPU tiers preempt, one or two requests at a time per instance make requests wait, so
    # instances admit out of trace order across the fleet; every restore taken. The walk in the fleet's
    # first-admission order holds, before each request, every block any instance could hold then (§17.1).
    reqs = conversation_trace(np.random.default_rng(seed), conversations, turns, 2)
    s = fleet_replay(reqs, instances=instances, router=router, tiers=[gpu], shared_tier="remote=60blocks",
                     write_policy=wp, scheduler=SchedulerConfig(restore_fallback=False, max_num_seqs=seqs),
                     **STEP).summary
    g, sh = s.gap, s.shared_tier
    assert g.fleet_ceiling_hit_ratio == g.captured_hit_ratio >= g.delivered_hit_ratio
    assert g.captured_hit_ratio >= sh.routing_captured_hit_ratio


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10 ** 6), conversations=st.integers(1, 6), turns=st.integers(1, 4))
def test_the_walk_in_admission_order_is_the_set_walk_of_the_reordered_requests(seed, conversations, turns):
    # pcs.fleet.fleet._fleet_ceiling in an order (permute_batch, decodes.renumber: array gathers) against the
    # plain Python set walk (pcs.blocks.single_sequence_hits) of the requests listed in that order, each with
    # its own decode-block ids (decode_blocks_python of the trace, looked up by its trace position).
    from pcs.blocks import BlockRules, single_sequence_hits
    from pcs.engine.turns import DecodeBlocks, decode_blocks_python
    from pcs.fleet.fleet import _fleet_ceiling
    from pcs.trace.batches import as_batches
    from pcs.trace.request import concat_batches
    rng = np.random.default_rng(seed)
    reqs = conversation_trace(rng, conversations, turns, 2)
    order = rng.permutation(len(reqs)).astype(np.int64)
    dec = decode_blocks_python(reqs)
    moved = DecodeBlocks.from_dict({k: dec.get(a) for k, a in enumerate(order.tolist()) if dec.get(a)}, len(reqs),
                                   dec.pairs)
    want = single_sequence_hits([reqs[a] for a in order.tolist()], BlockRules(), moved)
    batch = concat_batches(list(as_batches(reqs)))
    assert _fleet_ceiling(batch, BlockRules(), dec, order) == want.hit_tokens
    assert _fleet_ceiling(batch, BlockRules(), None, order) == single_sequence_hits(
        [reqs[a] for a in order.tolist()], BlockRules()).hit_tokens
