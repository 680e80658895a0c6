"""The sequential baseline in C (:func:`pcs.engine.seqbase.sequential_baseline`) against the event loop.

The reference is :class:`pcs.engine.engine.ReplayEngine` in sequential timing over the Python
:class:`pcs.cache.Hierarchy` (docs/semantics.md §3-§8, §12): the same hit blocks per request and the
same ledger counters, on hypothesis traces (1-3 lru tiers, both write policies, every rule set, batches
of a few requests), on the committed samples and on the Mooncake trace (skipped when absent). For a hybrid
model's cache groups (§3.1) the reference is the same loop over the Python
:class:`pcs.cache.grouphier.GroupHierarchy` and the C loop is ``NativeGroupHierarchy.run_sequential``
(pcs/cache/_grouphier.c): the same hit blocks and refused blocks per request, ledger and end state
(resident pages, LRU order, counters, residency); on Mooncake against the event loop over the compiled
hierarchy, and through ``pcs.replay`` (tests/cache/test_grouphier_native.py compares its summaries).
"""
from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import (ALL_RULES, BS, SETTINGS, arbitrary_traces, assert_group_states_equal, group_sets, req,
                     residency_fields, traces)
from pcs.blocks import BlockRules
from pcs.cache import Hierarchy, Tier, make_policy
from pcs.engine import seqbase
from pcs.engine.chunks import iter_chunks
from pcs.engine.engine import ReplayEngine
from pcs.trace import open_trace
from pcs.trace.batches import as_batches

native = pytest.importorskip("pcs.cache.native")
if native._lruhier is None:
    pytest.skip("pcs.cache._lruhier is not compiled", allow_module_level=True)

LEDGER = ("num_requests", "prompt_tokens", "hit_tokens", "hit_blocks", "requests_with_hit", "block_accesses",
          "cacheable_blocks", "computed_tokens")


def _tiers(caps):
    return [Tier(f"t{i}", c, make_policy("lru", c)) for i, c in enumerate(caps)]


def _reference(source, caps, rules, wp):
    eng = ReplayEngine(Hierarchy(_tiers(caps), wp), "sequential")
    for ch in iter_chunks(source, rules):
        eng.feed(ch)
    return eng.close()


class _Recording:
    """A NativeHierarchy whose run_sequential keeps each batch's hit blocks."""

    def __init__(self, caps, wp):
        self.h = native.NativeHierarchy(_tiers(caps), wp)
        self.tiers, self.hits = self.h.tiers, []

    def run_sequential(self, hashes, off, n, cap, out):
        self.h.run_sequential(hashes, off, n, cap, out)
        self.hits.append(out.copy())


def _compare(source, caps, rules, wp):
    want = _reference(source, caps, rules, wp)
    rec = _Recording(caps, wp)
    got = seqbase.sequential_baseline(source, rec, rules)
    hits = np.concatenate(rec.hits) if rec.hits else np.zeros(0, np.int64)
    assert hits.tolist() == np.frombuffer(want.columns["hit_blocks"], np.int64).tolist()
    assert [getattr(got.ledger, k) for k in LEDGER] == [getattr(want.ledger, k) for k in LEDGER]
    rec.h._check()


@SETTINGS
@given(traces(), st.lists(st.integers(0, 12), min_size=1, max_size=3), st.sampled_from(ALL_RULES),
       st.sampled_from(["back", "through"]), st.integers(1, 5))
def test_compiled_sequential_equals_the_event_loop(reqs, caps, rules, wp, rows):
    orig = seqbase.as_batches
    seqbase.as_batches = functools.partial(as_batches, rows=rows)
    try:
        _compare(reqs, caps, rules, wp)
    finally:
        seqbase.as_batches = orig


@pytest.mark.parametrize("caps", [[200, 800], [1000, 4000, 9000], [3000]])
def test_compiled_sequential_on_real_traces(exact_trace, caps):
    _compare(open_trace(str(exact_trace)), caps, BlockRules(), "back")
    _compare(open_trace(str(exact_trace)), caps[:2], BlockRules(), "through")


def test_bad_buffers_are_refused():
    h = native.NativeHierarchy(_tiers([4]), "back")
    z = np.zeros(1, np.int64)
    with pytest.raises(ValueError, match="len\\(offsets\\)"):
        h.run_sequential(np.zeros(2, np.uint64), np.zeros(3, np.int64), z, z, z)
    with pytest.raises(TypeError, match="8-byte"):
        h.run_sequential(np.zeros(2, np.uint32), np.zeros(2, np.int64), z, z, z)
    with pytest.raises(ValueError, match="offsets must rise"):
        h.run_sequential(np.zeros(2, np.uint64), np.array([0, 5], np.int64), z + 1, z, z)


# --- cache groups (pcs/cache/_grouphier.c run_sequential) -----------------------------------------------------

grouphier = pytest.importorskip("pcs.cache.nativegroups")
needs_grouphier = pytest.mark.skipif(grouphier._grouphier is None, reason="pcs.cache._grouphier is not compiled")


def _group_pair(caps, wp, groups):
    """(Python reference, compiled) hybrid hierarchies over fresh LRU levels of ``caps`` pages."""
    from pcs.cache.grouphier import GroupHierarchy

    pb = [[3 + j] for j in range(len(caps))]
    return (GroupHierarchy(_tiers(caps), wp, groups, 1, pb, 0.01),
            grouphier.NativeGroupHierarchy(_tiers(caps), wp, groups, 1, pb, 0.01))


def _group_compare(source, ref, nat, rules):
    """The event loop over ``ref`` and seqbase over ``nat``: hits, refused blocks, ledger, end state."""
    eng = ReplayEngine(ref, "sequential")
    for ch in iter_chunks(source, rules):
        eng.feed(ch)
    want = eng.close()
    run, hits = nat.run_sequential, []
    nat.run_sequential = lambda *a: (run(*a), hits.append(a[4].copy()))   # keep each batch's hit blocks
    got = seqbase.sequential_baseline(source, nat, rules)
    want_hits = np.frombuffer(want.columns["hit_blocks"], np.int64).tolist()
    assert (np.concatenate(hits).tolist() if hits else []) == want_hits
    assert got.columns["hybrid_lost_tokens"].tolist() == [x * BS for x in ref.residency.request_lost]
    assert [getattr(got.ledger, k) for k in LEDGER] == [getattr(want.ledger, k) for k in LEDGER]
    assert_group_states_equal(ref, nat)
    nat._check()
    return want_hits, got


@needs_grouphier
@SETTINGS
@given(st.one_of(traces(), arbitrary_traces()), group_sets(), st.lists(st.integers(0, 24), min_size=1, max_size=3),
       st.sampled_from(ALL_RULES), st.sampled_from(["back", "through"]), st.integers(1, 5))
def test_compiled_hybrid_sequential_equals_the_event_loop(reqs, groups, caps, rules, wp, rows):
    orig = seqbase.as_batches
    seqbase.as_batches = functools.partial(as_batches, rows=rows)
    try:
        ref, nat = _group_pair(caps, wp, groups)
        want_hits, got = _group_compare(reqs, ref, nat, rules)
        assert got.ledger.hit_blocks == sum(want_hits)
    finally:
        seqbase.as_batches = orig


@needs_grouphier
def test_hand_traced_window_blocks_dropped_refuse_the_hit():
    # BS = 4; groups: full attention (1 page a block) and a window of 5 tokens = ceil((5 - 1) / 4) = 1 block
    # (1 page); one GPU level of 4 pages, default rules (a hit stops before the last prompt token).
    # A = [1, 2, 3], 12 tokens: nothing cached, hit 0. It computes full (1), (2), (3) and window (3) (the
    #   window block before the end, kept) = 4 pages, all its GPU slots; its window pages (1), (2) slide out at
    #   prefill end, stored unpinned, but no slot is free: cut and dropped (one level).
    # B = [1, 2, 5, 6], 16 tokens: cap (16 - 1) // 4 = 3; full attention has blocks 1, 2 (lead 2); a hit at 2
    #   needs block 2's window page, dropped; at 1 block 1's, dropped; so every group accepts 0 blocks: hit 0,
    #   refused by the rules min(cap, lead) - 0 = 2 blocks = 8 tokens.
    from pcs.cache.groups import CacheGroup

    groups = [CacheGroup("full_attention", "full", ("full_attention",), BS, 0, 1, layers=1),
              CacheGroup("sliding_window", "window", ("sliding_window",), BS, 5, 1, layers=1)]
    trace = [req([1, 2, 3], 0.0), req([1, 2, 5, 6], 1.0)]
    ref, nat = _group_pair([4], "back", groups)
    hits, got = _group_compare(trace, ref, nat, BlockRules())
    assert hits == [0, 0]
    assert got.columns["hybrid_lost_tokens"].tolist() == [0, 8]
    assert got.ledger.hit_tokens == 0


@needs_grouphier
@pytest.mark.parametrize("model,gpu", [("gemma-3-27b", "40GB"), ("gpt-oss-120b", "100GB")])
def test_compiled_hybrid_sequential_on_mooncake(model, gpu):
    # the event loop over the compiled hierarchy (itself diffed against the Python one in
    # tests/cache/test_grouphier_native.py) against run_sequential, Mooncake at a preset's pages
    from conftest import MOONCAKE_CONV
    from pcs import units
    from pcs.engine.decoded import Decoded
    from pcs.engine.hybrid import plan_hybrid
    from pcs.model import get_model, group_block_bytes

    if not MOONCAKE_CONV.exists():
        pytest.skip("the Mooncake trace (../shared/traces) is not here")
    spec = get_model(model).with_tp(8)
    bb = [group_block_bytes(spec, 512, lay) for lay in ("reserved", "serialized")]
    plan = plan_hybrid(spec, 512, ["gpu", "cpu"], bb, [(units.parse_capacity(gpu).size_bytes, None),
                                                        (2 * 10**12, None)], "vllm", 0.8, 0.9, "all")
    caps = [c[0] for c in plan.capacity_pages]
    a, b = (grouphier.NativeGroupHierarchy(_tiers(caps), "back", plan.groups, 1, plan.page_bytes)
            for _ in range(2))
    source = Decoded(open_trace(MOONCAKE_CONV))
    eng = ReplayEngine(a, "sequential")
    for ch in iter_chunks(source, BlockRules()):
        eng.feed(ch)
    want = eng.close()
    got = seqbase.sequential_baseline(source, b, BlockRules())
    assert got.columns["hybrid_lost_tokens"].tolist() == [x * 512 for x in a.residency.request_lost]
    assert [getattr(got.ledger, k) for k in LEDGER] == [getattr(want.ledger, k) for k in LEDGER]
    assert got.ledger.num_requests == 12031 and got.ledger.block_accesses == 288500
    # the end states (the compiled tables read directly: the Mapping view rebuilds its dict per key)
    assert (a.written_blocks, a.dropped_blocks) == (b.written_blocks, b.dropped_blocks)
    for j in range(2):
        assert sorted(a._h.resident(j)) == sorted(b._h.resident(j)) and a._h.order(j) == b._h.order(j)
        assert a._h.tier_info(j) == b._h.tier_info(j)
    assert residency_fields(a.residency) == residency_fields(b.residency)


@needs_grouphier
def test_bad_group_buffers_are_refused():
    from pcs.cache.groups import CacheGroup

    h = grouphier.NativeGroupHierarchy(_tiers([4]), "back", [CacheGroup("f", "full", ("f",), BS, 0, 1, layers=1)])
    z = np.zeros(1, np.int64)
    with pytest.raises(ValueError, match="len\\(offsets\\)"):
        h.run_sequential(np.zeros(2, np.uint64), np.zeros(3, np.int64), z, z, z, z)
    with pytest.raises(TypeError, match="8-byte"):
        h.run_sequential(np.zeros(2, np.uint32), np.zeros(2, np.int64), z, z, z, z)
    with pytest.raises(ValueError, match="offsets must rise"):
        h.run_sequential(np.zeros(2, np.uint64), np.array([0, 5], np.int64), z + 1, z, z, z)
    with pytest.raises(ValueError, match="arrival"):
        h.run_sequential(np.zeros(2, np.uint64), np.array([0, 1], np.int64), z + 1, z, z, z, np.zeros(2))
