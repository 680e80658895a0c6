"""Fleet replay: one instance is today's replay; the gap split's order; load and capacity bookkeeping."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, HealthCheck, strategies as st

import pcs
from pcs.fleet import fleet_replay, router_names
from tests.helpers import DyadicCompute, stress_trace

SMALL = dict(model="llama-3.1-8b", hardware="h100-sxm", tp=1, tiers=["gpu=24blocks", "cpu=40blocks"],
             compute=DyadicCompute())


@pytest.mark.parametrize("router", [r for r in router_names() if r != "session"])
def test_one_instance_is_todays_replay(router):
    # every router has one choice with one instance; the instance replays the trace itself
    plain = pcs.replay()
    fleet = fleet_replay(instances=1, router=router)
    # the trace's caveat (the sample's reuse is synthetic) is the fleet's, last, as pcs.replay's; not the instance's
    p = plain.summary.to_dict()
    assert "prefix reuse is synthetic" in p["notes"][-1] and fleet.summary.notes[-1] == p["notes"][-1]
    assert fleet.summary.instance_summaries[0].to_dict() == dict(p, notes=p["notes"][:-1])
    assert fleet.summary.hit_ratio == plain.summary.hit_ratio
    assert fleet.summary.gap.captured_hit_ratio == fleet.summary.gap.fleet_ceiling_hit_ratio
    assert fleet.assignment.tolist() == [0] * plain.summary.requests


def test_one_instance_session_router_on_a_trace_with_sessions():
    from pcs.trace.request import RequestBatch
    from tests.helpers import batch

    b = batch([(k * 0.01, [k % 3, 10 + k]) for k in range(8)], sessions=[k % 3 for k in range(8)], bs=16)

    class T:
        name, block_size = "<sessions>", 16

        def iter_batches(self):
            yield b

    plain = pcs.replay(T(), **SMALL)
    fleet = fleet_replay(T(), instances=1, router="session", **SMALL)
    assert isinstance(b, RequestBatch)
    assert fleet.summary.instance_summaries[0].to_dict() == plain.summary.to_dict()


def _check(f, n_requests, prompt_tokens):
    s = f.summary
    # the sum of per-instance requests is the trace's; every request went somewhere in range
    assert sum(x.requests for x in s.per_instance) == s.requests == n_requests
    assert sum(x.prompt_tokens for x in s.per_instance) == s.prompt_tokens == prompt_tokens
    assert f.assignment.min() >= 0 and f.assignment.max() < s.instances
    assert f.requests.column("request_id").to_pylist() == list(range(n_requests))
    # ceiling >= captured >= delivered (sequential timing: no decode blocks, no reordering)
    g = s.gap
    assert g.fleet_ceiling_hit_ratio >= g.captured_hit_ratio - 1e-12
    assert g.captured_hit_ratio >= g.delivered_hit_ratio - 1e-12
    # capacities never exceeded: tiers of each instance, and the router's index
    for x, summ in zip(s.per_instance, s.instance_summaries):
        assert x.index_blocks_end <= s.index_capacity_blocks
        if summ is not None:
            for t in summ.tiers:
                assert t.resident_blocks_peak <= t.capacity_blocks
    assert s.imbalance_requests >= 1.0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10 ** 6), n=st.integers(1, 40), instances=st.integers(1, 4),
       router=st.sampled_from([r for r in router_names() if r != "session"]), stale=st.sampled_from([0.0, 0.02]))
def test_fleet_invariants(seed, n, instances, router, stale):
    reqs = stress_trace(seed, n, bs=16)
    stale = stale if router in ("prefix", "cache-aware") else 0.0     # the routers a delay applies to
    f = fleet_replay(reqs, instances=instances, router=router, router_stale_s=stale, timing="sequential", **SMALL)
    _check(f, n, sum(r.prompt_tokens for r in reqs))


def test_modeled_fleet_counts_and_ttft():
    reqs = stress_trace(3, 60, bs=16)
    f = fleet_replay(reqs, instances=3, router="cache-aware", **SMALL)
    s = f.summary
    assert sum(x.requests for x in s.per_instance) == 60
    assert s.ttft_p50_s is not None and s.ttft_p99_s >= s.ttft_p50_s
    # the fleet's TTFT percentiles are over all requests of all instances
    ttft = f.requests.column("ttft_s").to_numpy()
    assert s.ttft_p99_s == pytest.approx(float(np.percentile(ttft, 99)))


def test_idle_instances_and_errors():
    reqs = stress_trace(1, 3, bs=16)
    f = fleet_replay(reqs, instances=6, router="round-robin", timing="sequential", **SMALL)
    idle = [x for x in f.summary.per_instance if x.requests == 0]
    assert len(idle) == 3 and all(x.hit_ratio is None for x in idle)
    assert f.summary.instance_summaries[5] is None
    # 3 requests on 6 instances: max 1 / mean 0.5 = 2
    assert f.summary.imbalance_requests == 2.0
    with pytest.raises(ValueError, match=r"^instances=0: must be in \[1, 4096\]"):   # the API's keyword
        fleet_replay(reqs, instances=0, **SMALL)
    with pytest.raises(ValueError, match="stale"):
        fleet_replay(reqs, instances=2, router_stale_s=-1, **SMALL)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10 ** 6), n=st.integers(1, 40), instances=st.integers(1, 5))
def test_instance_ceilings_are_the_sub_trace_scans(seed, n, instances):
    # one scan with per-instance ids == each sub-trace scanned alone (pcs.blocks.single_sequence_hits, the
    # plain Python reference of docs/semantics.md §12, over the instance's requests in trace order)
    from pcs.blocks import BlockRules, single_sequence_hits
    from pcs.fleet.fleet import instance_ceilings
    from pcs.trace.batches import as_batches
    from pcs.trace.request import concat_batches

    reqs = stress_trace(seed, n, bs=16)
    batch = concat_batches(list(as_batches(reqs)))
    assignment = np.random.default_rng(seed).integers(instances, size=n).astype(np.int64)
    got = instance_ceilings(batch, assignment, instances, BlockRules())
    for i in range(instances):
        mine = [r for r, a in zip(reqs, assignment.tolist()) if a == i]
        assert got[i] == single_sequence_hits(mine, BlockRules())
