"""A fleet's shared tier under the step scheduler (docs/semantics.md §17.2): N step loops on one clock."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from pcs.engine.schedconfig import SchedulerConfig
from pcs.fleet import fleet_replay
from tests.helpers import (FLEET_TIERS, assert_empty_shared_tier_is_plain, assert_one_instance_is_single_replay,
                           HandTrace, stress_trace, tables_equal)

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
    assert c.summary.shared_tier == py.summary.shared_tier
    tables_equal(c.requests, py.requests)
