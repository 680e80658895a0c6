"""The compiled trace-reading policies (``gdsf``: pcs/cache/_pol_gdsf.c, ``belady``: pcs/cache/_pol_belady.c)
against their Python references (pcs/cache/policies/gdsf.py, belady.py; docs/semantics.md §8, §15).

Both read a trace pre-pass (:class:`TraceOracle`: chain parents and depths, future uses) and belady a request
clock (the Python hierarchy wrapped by :func:`clocked`; the compiled one counts its own admissions). The
Python hierarchy is the reference: the compiled one with the same policy per tier must give the same
admissions, per-request columns, ledger and end state (each tier's ``policy.order()`` included) -- on
hypothesis traces (1-3 tiers, a policy per tier mixed with the other compiled ones, tiers down to 0 blocks,
both write policies, both timings, every block rule) and, alone and mixed, in the ``pcs.replay`` cases of
test_native_policies.py, whose per-policy properties (every tier one policy, direct calls with waits and
requests left running, the seeded stress stream with the C invariants checked after every step) run over
them as over every other compiled policy. The compiled oracle on one tier, sequential, equals the one-pass
Belady curve (:func:`pcs.curves.belady.belady_hits`) as the Python one does.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import (ALL_RULES, SETTINGS, chained_traces, engine_run, index_probes, replay_twins, trace_context,
                     traces, twin_hierarchy, twin_tiers)
from pcs.blocks import BlockRules
from pcs.cache import make_policy
from pcs.curves.api import load_accesses
from pcs.curves.belady import belady_hits, plan_belady

native = pytest.importorskip("pcs.cache.native")
if native._lruhier is None:
    pytest.skip("pcs.cache._lruhier is not compiled", allow_module_level=True)

NAMES = ["gdsf", "belady"]
#: the trace-reading policies and the compiled ones they share hierarchies with in the mixed test
SPECS = NAMES + ["lru", "lfu", "arc", "s3fifo"]


def test_trace_reading_policies_are_compiled_with_their_data():
    """Hand trace: request 0 = blocks 1 2 3, request 1 = blocks 1 4 5 (ids are the hashes), 12 tokens each, so
    the hit cap is 2 blocks (§4: the last token is recomputed). gdsf's data: the blocks in first-seen order 1 2 3
    4 5 at depths 0 1 2 1 2, the parents of the blocks of depth > 0 (2 <- 1, 3 <- 2, 4 <- 1, 5 <- 4) and the cost
    1 + depth / 8 of each depth; belady's: the blocks with a use below the cap and their use keys request << 24 |
    position: 1 at (0, 0) and (1, 0), 2 at (0, 1), 4 at (1, 1)."""
    from helpers import req
    reqs = [req([1, 2, 3]), req([1, 4, 5])]
    ctx = trace_context(reqs, BlockRules())
    name, opts, (keys, slots, parent, cost, cost0, seed) = native.policy_spec(make_policy("gdsf", 4, ctx))
    assert (name, opts) == ("gdsf", ())
    assert (keys.tolist(), parent.tolist()) == ([1, 2, 3, 4, 5], [-1, 0, 1, 0, 3])
    assert cost.tolist() == [1.0, 1.125, 1.25, 1.125, 1.25] and cost0.tolist() == [1.0]
    assert seed.tolist() == [native.INDEX_SEED] and _index_finds(slots, keys, native.INDEX_SEED)
    name, opts, (bkeys, bslots, off, uses, bseed) = native.policy_spec(make_policy("belady", 4, ctx))
    assert (name, opts, bkeys.tolist(), off.tolist()) == ("belady", (), [1, 2, 4], [0, 2, 3, 4])
    assert uses.tolist() == [0, 1 << 24, 1, (1 << 24) | 1] and _index_finds(bslots, bkeys, int(bseed[0]))
    assert native.policy_spec(make_policy("gdsf", 4)) == ("gdsf", (), None)    # no trace: leaves of 1 s
    for spec in NAMES:
        assert native.available(twin_tiers([8, 16], [spec, spec], ctx=ctx)), spec




def _index_finds(slots, keys, seed: int) -> bool:
    index_probes(slots, keys, seed)
    return sorted(s for s in slots.tolist() if s >= 0) == list(range(len(keys)))


@settings(SETTINGS, max_examples=30)
@given(st.lists(st.integers(0, 2**64 - 1), unique=True, max_size=3000), st.integers(0, 2**64 - 1))
def test_key_index_finds_every_key(keys, seed):
    import numpy as np
    k = np.array(keys, dtype=np.uint64)
    assert _index_finds(native.key_index(k, seed), k, seed)
    assert _index_finds(native.key_index(k), k, native.INDEX_SEED)


config = st.tuples(st.lists(st.tuples(st.integers(0, 12), st.sampled_from(SPECS)), min_size=1, max_size=3),
                   st.sampled_from(["sequential", "modeled"]), st.sampled_from(ALL_RULES),
                   st.sampled_from(["back", "through"]), st.booleans())


@SETTINGS
@given(traces(), config)
def test_mixed_tiers_equal_python_on_random_traces(reqs, cfg):
    tiers, timing, rules, wp, cost = cfg
    replay_twins(reqs, [c for c, _ in tiers], [s for _, s in tiers], timing, rules, wp,
                 ctx=trace_context(reqs, rules, cost))


@SETTINGS
@given(chained_traces(), st.integers(0, 12))
def test_compiled_oracle_equals_the_min_curve_on_one_tier(reqs, capacity):
    """One tier, sequential, chained hashes: the compiled oracle's hit tokens are MIN's (tests/curves/test_belady.py
    checks the curve against an exhaustive search)."""
    h = twin_hierarchy(twin_tiers([capacity], ["belady"], ctx=trace_context(reqs, BlockRules())), "back", True)
    ledger = engine_run(h, reqs, "sequential", BlockRules()).ledger
    assert ledger.hit_tokens == belady_hits(plan_belady(load_accesses(reqs)[0]), capacity).hit_tokens
