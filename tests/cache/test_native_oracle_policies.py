"""The compiled trace-reading policies (``gdsf``: pcs/cache/_pol_gdsf.c, ``belady``: pcs/cache/_pol_belady.c)
against their Python references (pcs/cache/policies/gdsf.py, belady.py; docs/semantics.md §8, §15).

Both read a trace pre-pass (:class:`TraceOracle`: chain parents and depths, future uses) and belady a request
clock (the Python hierarchy wrapped by :func:`clocked`; the compiled one counts its own admissions). The
Python hierarchy is the reference: the compiled one with the same policy per tier must give the same
admissions, per-request columns, ledger and end state (each tier's ``policy.order()`` included) -- on
hypothesis traces (1-3 tiers, a policy per tier mixed with the other compiled ones, tiers down to 0 blocks,
both write policies, both timings, every block rule), on direct calls with waits and requests left running,
on a seeded stress stream with the C invariants checked after every step, and through ``pcs.replay`` on the
committed sample and the Mooncake trace (summary and per-request table). The compiled oracle on one tier,
sequential, equals the one-pass Belady curve (:func:`pcs.curves.belady.belady_hits`) as the Python one does.
"""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import (ALL_RULES, BS, SETTINGS, LinearCompute, chained_traces, per_trace, stress_trace, traces,
                     drive_direct_calls, assert_twin_runs_equal)
from pcs.blocks import BlockRules
from pcs.cache import Hierarchy, Tier, make_policy
from pcs.cache.policies import PolicyContext
from pcs.cache.policies.context import TraceOracle, clocked
from pcs.curves.api import load_accesses
from pcs.curves.belady import belady_hits, plan_belady
from pcs.engine.chunks import iter_chunks
from pcs.engine.engine import ReplayEngine, TimeModel
from pcs.engine.select import SUMMARY_KEYS

native = pytest.importorskip("pcs.cache.native")
if native._lruhier is None:
    pytest.skip("pcs.cache._lruhier is not compiled", allow_module_level=True)

NAMES = ["gdsf", "belady"]
#: the trace-reading policies and the compiled ones they share hierarchies with in the mixed test
SPECS = NAMES + ["lru", "lfu", "arc", "s3fifo"]
PER_POLICY = settings(SETTINGS, max_examples=60)


def _context(reqs, rules, cost=True):
    """The trace pre-pass of ``reqs``; block cost 1 + depth / 8 s (every depth a different cost, ties in H
    within a depth), or none (every block 1 s)."""
    return PolicyContext(TraceOracle.build(iter_chunks(reqs, rules)), (lambda d: 1.0 + d / 8) if cost else None)


def _tiers(caps, specs, ctx):
    ctx = ctx.fresh()           # one clock per hierarchy, as pcs.replay builds them
    return [Tier(f"t{i}", c, make_policy(s, c, ctx)) for i, (c, s) in enumerate(zip(caps, specs))]


def _hier(caps, specs, ctx, wp, use_native):
    tiers = _tiers(caps, specs, ctx)
    return native.NativeHierarchy(tiers, wp) if use_native else clocked(Hierarchy(tiers, wp))


def _run(reqs, caps, specs, timing, rules, wp, use_native, ctx):
    h = _hier(caps, specs, ctx, wp, use_native)
    eng = ReplayEngine(h, timing, block_bytes=[7] * len(caps), check=True)
    for ch in iter_chunks(reqs, rules, TimeModel(LinearCompute())):
        eng.feed(ch)
    return eng.close(), h


def _same(reqs, caps, specs, timing, rules, wp, cost=True):
    ctx = _context(reqs, rules, cost)
    a, ha = _run(reqs, caps, specs, timing, rules, wp, False, ctx)
    b, hb = _run(reqs, caps, specs, timing, rules, wp, True, ctx)
    assert_twin_runs_equal(a, ha, b, hb)
    return a


def test_trace_reading_policies_are_compiled_with_their_data():
    """Hand trace: request 0 = blocks 1 2 3, request 1 = blocks 1 4 5 (ids are the hashes), 12 tokens each, so
    the hit cap is 2 blocks (§4: the last token is recomputed). gdsf's data: the blocks in first-seen order 1 2 3
    4 5 at depths 0 1 2 1 2, the parents of the blocks of depth > 0 (2 <- 1, 3 <- 2, 4 <- 1, 5 <- 4) and the cost
    1 + depth / 8 of each depth; belady's: the blocks with a use below the cap and their use keys request << 24 |
    position: 1 at (0, 0) and (1, 0), 2 at (0, 1), 4 at (1, 1)."""
    from helpers import req
    reqs = [req([1, 2, 3]), req([1, 4, 5])]
    ctx = _context(reqs, BlockRules())
    name, opts, (keys, slots, parent, cost, cost0) = native.policy_spec(make_policy("gdsf", 4, ctx))
    assert (name, opts) == ("gdsf", ())
    assert (keys.tolist(), parent.tolist()) == ([1, 2, 3, 4, 5], [-1, 0, 1, 0, 3])
    assert cost.tolist() == [1.0, 1.125, 1.25, 1.125, 1.25] and cost0.tolist() == [1.0]
    assert _index_finds(slots, keys)
    name, opts, (bkeys, bslots, off, uses) = native.policy_spec(make_policy("belady", 4, ctx))
    assert (name, opts, bkeys.tolist(), off.tolist()) == ("belady", (), [1, 2, 4], [0, 2, 3, 4])
    assert uses.tolist() == [0, 1 << 24, 1, (1 << 24) | 1] and _index_finds(bslots, bkeys)
    assert native.policy_spec(make_policy("gdsf", 4)) == ("gdsf", (), None)    # no trace: leaves of 1 s
    for spec in NAMES:
        assert native.available(_tiers([8, 16], [spec, spec], ctx)), spec


def _index_finds(slots, keys) -> bool:
    """Every key found from its home slot (hash x 0x9E3779B97F4A7C15 mod 2**64, top k bits) by linear probing
    before an empty slot, with 2**k >= 2 x len(keys) slots."""
    size = len(slots)
    k = size.bit_length() - 1
    assert size == 1 << k and size >= 2 * len(keys)
    for j, key in enumerate(keys.tolist()):
        i = ((key * 0x9E3779B97F4A7C15) % 2**64) >> (64 - k)
        while slots[i] != j:
            assert slots[i] >= 0, key
            i = (i + 1) % size
    return sorted(s for s in slots.tolist() if s >= 0) == list(range(len(keys)))


@settings(SETTINGS, max_examples=30)
@given(st.lists(st.integers(0, 2**64 - 1), unique=True, max_size=3000))
def test_key_index_finds_every_key(keys):
    import numpy as np
    assert _index_finds(native.key_index(np.array(keys, dtype=np.uint64)), np.array(keys, dtype=np.uint64))


config = st.tuples(st.lists(st.tuples(st.integers(0, 12), st.sampled_from(SPECS)), min_size=1, max_size=3),
                   st.sampled_from(["sequential", "modeled"]), st.sampled_from(ALL_RULES),
                   st.sampled_from(["back", "through"]), st.booleans())


@SETTINGS
@given(traces(), config)
def test_mixed_tiers_equal_python_on_random_traces(reqs, cfg):
    tiers, timing, rules, wp, cost = cfg
    _same(reqs, [c for c, _ in tiers], [s for _, s in tiers], timing, rules, wp, cost)


@pytest.mark.parametrize("name", NAMES)
@PER_POLICY
@given(reqs=traces(), caps=st.lists(st.integers(0, 10), min_size=1, max_size=3),
       timing=st.sampled_from(["sequential", "modeled"]), wp=st.sampled_from(["back", "through"]))
def test_each_policy_on_every_tier(name, reqs, caps, timing, wp):
    _same(reqs, caps, [name] * len(caps), timing, BlockRules(), wp)


@pytest.mark.parametrize("name", NAMES)
@PER_POLICY
@given(st.lists(st.lists(st.integers(0, 6), max_size=6), min_size=1, max_size=12), st.integers(0, 5),
       st.integers(0, 5), st.booleans(), st.sampled_from(["back", "through"]))
def test_admissions_equal_with_waits_and_running_requests(name, chains, c0, c1, wait, wp):
    """Direct start/prefill_done/finish/abort/grow calls (a start that waits admits nothing: the clock does not
    move), requests left running: every Admission field and the end state agree."""
    from helpers import req
    reqs = [req(keys, prompt=4 * len(keys) + 1) for keys in chains]
    ctx = PolicyContext(TraceOracle.build(iter_chunks(reqs, BlockRules(True, False))), lambda d: 0.5 + d)
    hs = [_hier([c0, c1], [name, name], ctx, wp, False), _hier([c0, c1], [name, name], ctx, wp, True)]
    drive_direct_calls(hs, chains, wait)


@pytest.mark.parametrize("name", NAMES)
def test_seeded_stress_check_after_every_step(name):
    """600 requests, _check (the C structures' invariants) after every step, results equal; the 6-block GPU
    tier truncates long requests, the 9-block CPU tier overflows; large tiers grow the tables and heaps."""
    reqs = stress_trace(7, 600, BS)
    for caps in ([40, 60, 80], [6, 20, 30], [6, 9]):
        for timing in ("sequential", "modeled"):
            for wp in ("back", "through"):
                assert _same(reqs, caps, [name] * len(caps), timing, BlockRules(), wp).ledger.num_requests == 600
    big = stress_trace(11, 3000, BS)
    _same(big, [500, 3000], [name, "lfu"], "modeled", BlockRules(), "back")


@SETTINGS
@given(chained_traces(), st.integers(0, 12))
def test_compiled_oracle_equals_the_min_curve_on_one_tier(reqs, capacity):
    """One tier, sequential, chained hashes: the compiled oracle's hit tokens are MIN's (tests/curves/test_belady.py
    checks the curve against an exhaustive search)."""
    ledger = _run(reqs, [capacity], ["belady"], "sequential", BlockRules(), "back", True,
                  _context(reqs, BlockRules()))[0].ledger
    assert ledger.hit_tokens == belady_hits(plan_belady(load_accesses(reqs)[0]), capacity).hit_tokens


REAL = {"mooncake": [("modeled", "back", ["gpu=400GB", "cpu=2TB"]),
                     ("sequential", "through", ["gpu=100GB", "cpu=1TB"]),
                     ("modeled", "back", ["gpu=20GB", "cpu=200GB", "ssd=1TB"])],
        "sample": [("modeled", "back", ["gpu=100GB", "cpu=500GB"]),
                   ("sequential", "through", ["gpu=25GB", "cpu=250GB"]),
                   ("modeled", "back", ["gpu=20GB", "cpu=50GB", "ssd=250GB"])]}
TRACE_POLICIES = {"gdsf": ["gdsf"], "belady": ["belady"], "mixed": ["gdsf", "belady", "lfu"]}


@pytest.mark.parametrize("case", range(3))
@pytest.mark.parametrize("pol", list(TRACE_POLICIES))
def test_trace_summary_and_table_identical(exact_trace, case, pol):
    """Every case on the committed sample; on the Mooncake trace the two-tier modeled case per policy and every
    case of the mixed tiers."""
    from pcs.engine.api import replay
    if exact_trace.name != "sample_exact.jsonl" and case and pol != "mixed":
        pytest.skip("on the Mooncake trace: case 0 per policy, every case for mixed policies")
    timing, wp, tiers = per_trace(exact_trace, **REAL)[case]
    specs = (TRACE_POLICIES[pol] * 3)[:len(tiers)]
    tier_policies = {t.split("=")[0]: s for t, s in zip(tiers, specs)}
    kw = dict(model="llama-3.1-70b", tiers=tiers, tier_policies=tier_policies, timing=timing, write_policy=wp)
    a = replay(exact_trace, engine="reference", **kw)
    b = replay(exact_trace, engine="auto", **kw)
    assert (a.summary.engine, b.summary.engine) == ("reference", "compiled-step" if timing == "modeled"
                                                     else "compiled-hierarchy")
    assert a.requests.column_names == b.requests.column_names
    for name in a.requests.column_names:
        assert a.requests[name].to_numpy().tobytes() == b.requests[name].to_numpy().tobytes(), name
    unnamed = {k: None for k in SUMMARY_KEYS}
    assert dataclasses.replace(a.summary, **unnamed) == dataclasses.replace(b.summary, **unnamed)
