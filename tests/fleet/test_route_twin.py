"""The compiled routing pass (pcs/fleet/_route.c) against the Python loop it mirrors (docs/semantics.md §17).

The reference is ``route(..., native="python")``: :func:`pcs.fleet.route._route_loop` with the routers'
``choose`` and :class:`pcs.fleet.index.CacheIndex`. The twin must give every request the same instance and
leave every instance's index holding the same ids in the same LRU order. The hand-traced cases of
``test_routers.py`` run on the twin too (the default ``native`` picks it when built).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from pcs import _native
from pcs.blocks import BlockRules
from pcs.fleet.index import CacheIndex
from pcs.fleet.route import route
from pcs.fleet.routers import parse_router
from pcs.fleet.routers.cache_aware import CacheAware
from pcs.trace.request import RequestBatch

pytestmark = pytest.mark.skipif(not _native.built("route"), reason="pcs.fleet._route not built")

TWINNED = ["prefix", "cache-aware", "cache-aware:overlap=1,load=3", "cache-aware:overlap=0.3,load=0.7",
           "cache-aware:overlap=0,load=1", "least-loaded", "least-loaded:by=tokens"]


def _batch(rows):
    """rows: (arrival_s, ids, prompt_tokens); block size 4."""
    offs = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r[1]) for r in rows], out=offs[1:])
    return RequestBatch(0, 4, np.array([r[0] for r in rows], dtype=np.float64),
                        np.array([r[2] for r in rows], dtype=np.int64), np.zeros(len(rows), dtype=np.int64), offs,
                        np.array([i for r in rows for i in r[1]], dtype=np.uint64), None, None)


def _both(b, rules, name, caps, service):
    """(assignment, index) of the twin and of the reference."""
    out = []
    for native in ("c", "python"):
        index = CacheIndex(caps)
        out.append((route(b, rules, parse_router(name, len(caps)), index, service, native=native), index))
    return out


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 6), st.lists(st.integers(0, 15), max_size=7), st.integers(1, 30)),
                     min_size=1, max_size=50),
       caps=st.lists(st.integers(0, 9), min_size=1, max_size=5),
       service=st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5, 40.0]), min_size=50, max_size=50),
       name=st.sampled_from(TWINNED), rules=st.sampled_from([BlockRules(), BlockRules(cache_partial_blocks=True,
                                                                                      recompute_last_token=False)]))
def test_twin_is_the_python_loop(rows, caps, service, name, rules):
    # small id alphabet and capacities 0..9 per instance (unequal): shared prefixes, ids repeated inside a
    # request, evictions of ids the same request stored, capacity 0; arrivals in steps of 0.5 s with equal
    # times and service times that end exactly at a later arrival (retired at <= now)
    rows = sorted(rows, key=lambda r: r[0])
    b = _batch([(t * 0.5, ids, p) for t, ids, p in rows])
    (fast, fi), (ref, ri) = _both(b, rules, name, caps, np.array(service[:len(rows)], dtype=np.float64))
    assert fast.tolist() == ref.tolist()
    for i in range(len(caps)):
        assert fi.held_blocks(i) == ri.held_blocks(i) <= caps[i]       # before and after the set is built
        assert fi.held_ids(i) == ri.held_ids(i)
        assert fi.held_blocks(i) == ri.held_blocks(i)


def test_twin_hand_traced_eviction_order():
    # one instance of 2 slots, prefix router (only one choice): the index after each request, LRU first:
    # r0 [1,2,3]: 1, 2 stored; 3 evicts 1 -> [2,3];  r1 [2,4]: 2 touched -> [3,2]; 4 evicts 3 -> [2,4]
    # r2 [5,5]: 5 evicts 2 -> [4,5]; the second 5 is held: touched -> [4,5]
    rules = BlockRules(cache_partial_blocks=True, recompute_last_token=False)
    b = _batch([(0.0, [1, 2, 3], 12), (1.0, [2, 4], 8), (2.0, [5, 5], 8)])
    index = CacheIndex([2])
    assert route(b, rules, parse_router("prefix", 1), index, np.ones(3), native="c").tolist() == [0, 0, 0]
    assert index.held_ids(0) == [4, 5]


def test_subclass_with_its_own_rule_runs_the_python_loop():
    # a router overriding choose is not the rule the twin mirrors: native_rule() is None
    class Last(CacheAware):
        def choose(self, req, index, load):
            return self.instances - 1

    assert CacheAware(3).native_rule() == (1, 2.0, 1.0)
    assert Last(3).native_rule() is None
    b = _batch([(0.0, [1], 4), (0.0, [1], 4)])
    assert route(b, BlockRules(), Last(3), CacheIndex([4] * 3), np.ones(2), native="c").tolist() == [2, 2]


def test_twin_on_the_mooncake_trace(mooncake_conv):
    # the real trace, the fleet's own index capacity: same instance for all 12,031 requests and the same
    # end index, at 4 and 8 instances
    from pcs.fleet.fleet import _setup, service_times
    from pcs.trace import open_trace
    from pcs.trace.batches import as_batches
    from pcs.trace.request import concat_batches

    trace = open_trace(mooncake_conv)
    b = concat_batches(list(as_batches(trace)))
    cap, compute, rules, _ = _setup(trace, {})
    svc = service_times(b, compute)
    for n in (4, 8):
        for name in ("prefix", "cache-aware", "least-loaded"):
            (fast, fi), (ref, ri) = _both(b, rules, name, [cap] * n, svc)
            assert fast.tolist() == ref.tolist()
            assert all(fi.held_ids(i) == ri.held_ids(i) for i in range(n))


@pytest.mark.parametrize("router", ["prefix", "cache-aware", "least-loaded:by=tokens"])
def test_fleet_json_is_the_same_with_either_pass(router, monkeypatch):
    # the whole fleet on the bundled sample trace, 3 instances: the routing pass in C (default) and in
    # Python (route called with native="python"; the instances' replays unchanged) give the same JSON
    import pcs.fleet.fleet as fleet_module

    fast = fleet_module.fleet_replay(None, instances=3, router=router, timing="sequential")
    real, calls = fleet_module.route, []

    def python_route(*a, **k):
        calls.append(1)
        return real(*a, **dict(k, native="python"))

    monkeypatch.setattr(fleet_module, "route", python_route)
    ref = fleet_module.fleet_replay(None, instances=3, router=router, timing="sequential")
    assert calls == [1]
    assert fast.assignment.tolist() == ref.assignment.tolist()
    assert fast.summary.to_dict() == ref.summary.to_dict()
