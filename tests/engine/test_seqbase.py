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
        self.tiers, self.hits, self.sync = self.h.tiers, [], self.h.sync

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


# -- the same baseline from the one-pass scan's two tiers (pcs/engine/_lruscan_tiers.h) ----------------------

from helpers import make_requests  # noqa: E402
from pcs.engine import fastpath, lruscan  # noqa: E402
from pcs.engine.api import replay  # noqa: E402

needs_scan = pytest.mark.skipif(not lruscan._native.built("lruscan"), reason="pcs.engine._lruscan is not compiled")


def _scan_hits(ids_per_request, c0, c1):
    """The scan's baseline hit blocks, every block cacheable and no hit cap (n = max_hit = len(ids))."""
    lru = lruscan.SequentialLru(c0, "c", False, 0, c1)
    ids = np.array([i for r in ids_per_request for i in r], np.uint64)
    n = np.array([len(r) for r in ids_per_request], np.int64)
    off = np.concatenate(([0], np.cumsum(n))).astype(np.int64)
    return lru.feed(ids, off, n, n)[3].tolist(), lru.tiers_hold()


@needs_scan
def test_scan_two_tiers_hand_traced():
    # docs/semantics.md §7's worked example (GPU 2, CPU 4, LRU, write-back), as
    # tests/cache/test_cache_tier.py::test_two_tiers_write_back_hand_traced traces it: [1,2] and [5,6] miss
    # (GPU demotes 2, 1 to the CPU); [1,2] 2 CPU hits; [7] misses; [1,2] 1 GPU hit + 1 CPU hit
    assert _scan_hits([[1, 2], [5, 6], [1, 2], [7], [1, 2]], 2, 4) == ([0, 0, 2, 0, 2], True)
    # §5: GPU 2 blocks, [1,2,3] caches its head 1, 2 (truncated); the second [1,2,3] hits those 2;
    # a CPU of 0 blocks holds nothing: after [5,6] evicts 1, 2 (dropped) [1,2] hits nothing
    assert _scan_hits([[1, 2, 3], [1, 2, 3], [5, 6], [1, 2]], 2, 0) == ([0, 2, 0, 0], True)
    # CPU 1 block: [5,6] demotes 2 then 1 (LRU first), so the CPU keeps 1 (the newest): [1,2] hits 1 block
    assert _scan_hits([[1, 2], [5, 6], [1, 2]], 2, 1) == ([0, 0, 1], True)
    # a GPU-resident block after a miss: not chained, the baseline is not given
    assert _scan_hits([[5], [9, 5]], 2, 4) == ([0, -1], False)


@needs_scan
def test_scan_two_tiers_victims_with_a_lower_copy_hand_traced():
    # GPU 2, CPU 4, LRU, write-back: a restored block keeps its CPU copy (§7 touches it), so a later GPU victim can
    # already be below -- set aside (its old CPU time dies), then demoted with the other victims.
    # [1,2]: GPU 1, 2. [5,6]: victims 2, 1 demoted; CPU (oldest first) 2, 1. [1,2]: both below, 2 hits; restores
    # touch 2, 1; victims 6, 5 demoted: CPU 2, 1, 6, 5. [5,6]: 2 CPU hits; restores touch 6, 5 (CPU 2, 1, 6, 5);
    # victims 2, 1 are below: set aside (CPU holds 2), then stamped: CPU 6, 5, 2, 1 -- 4 blocks, nothing dropped.
    # [7,8]: misses; victims 6, 5 below: set aside, stamped: CPU 2, 1, 6, 5. [1,2]: 2 CPU hits. (Without the
    # set-aside the CPU would count 6 blocks at [5,6] and drop its 2 oldest, 2 and 1: the last request would hit 0.)
    assert _scan_hits([[1, 2], [5, 6], [1, 2], [5, 6], [7, 8], [1, 2]], 2, 4) == ([0, 0, 2, 2, 0, 2], True)


@needs_scan
def test_scan_two_tiers_log_ring_wraps_hand_traced():
    # GPU 3,000, CPU 3,000 blocks, LRU, write-back; the scan logs each GPU time's id in a ring of 4,096 entries
    # (times from 64). R1 = ids 0 .. 2999 (times 64 .. 3063) misses. R2 = 3000 .. 5999 misses: the 3,000 victims
    # are R1's ids (demoted: the CPU holds R1), R2 is released at times 3064 .. 6063, whose log entries run past the
    # ring's end (3064 .. 4095, then 0 .. 1967). R3 = R1's ids: no GPU lead, all 3,000 below: 3,000 hits; restores
    # touch them, then R2's ids -- read back through the wrapped log -- are demoted, newer: the CPU keeps R2's.
    # R4 = R2's ids: 3,000 CPU hits only if the log gave R2's ids back; then R3's ids are demoted. R5 = R1's: 3,000.
    r1, r2 = list(range(3000)), list(range(3000, 6000))
    assert _scan_hits([r1, r2, r1, r2, r1], 3000, 3000) == ([0, 0, 3000, 3000, 3000], True)


def _sequential_reference(reqs, caps, rules):
    return np.frombuffer(_reference(reqs, caps, rules, "back").columns["hit_blocks"], np.int64).tolist()


@needs_scan
@SETTINGS
@given(traces(), st.integers(0, 12), st.integers(0, 12), st.sampled_from(ALL_RULES), st.integers(1, 5), st.booleans(),
       st.integers(0, 30))
def test_scan_two_tiers_equal_the_event_loop(reqs, c0, c1, rules, rows, big, small):
    if big:   # ids >= small far apart (an odd multiplier mod 2**64 keeps them distinct, none below 30 but 0 -> 7
        # when small == 0): the scan's hashed table; with small > 0 the batches of ids below small run in direct
        # mode first (both tiers stamped), then the first batch with a large id moves them into the table
        mult, add = np.uint64(0x9E3779B97F4A7C15), np.uint64(7)
        reqs = [r._replace(block_hashes=np.where(r.block_hashes < small, r.block_hashes, r.block_hashes * mult + add))
                for r in reqs]
    orig = fastpath.as_batches
    fastpath.as_batches = functools.partial(as_batches, rows=rows)
    try:
        sc = fastpath.scan(reqs, c0, rules, "c", check=False, lower_blocks=c1)
    finally:
        fastpath.as_batches = orig
    assert sc.baseline_hits is not None                      # chained ids: the premise holds
    assert sc.baseline_hits.tolist() == _sequential_reference(reqs, [c0, c1], rules)
    one = fastpath.scan(reqs, 0, rules, "c", check=False)    # the single-sequence walks unchanged
    assert fastpath.single_results(sc) == fastpath.single_results(one)


@needs_scan
@pytest.mark.parametrize("caps", [[200, 800], [1000, 4000], [3000, 100], [50, 0]])
def test_scan_two_tiers_on_real_traces(exact_trace, caps):
    rec = _Recording(caps, "back")
    seqbase.sequential_baseline(open_trace(str(exact_trace)), rec, BlockRules())
    sc = fastpath.scan(open_trace(str(exact_trace)), caps[0], BlockRules(), "c", check=False, lower_blocks=caps[1])
    assert sc.baseline_hits.tolist() == np.concatenate(rec.hits).tolist()


@needs_scan
def test_replay_takes_the_baseline_from_the_scan_or_falls_back():
    chained = make_requests([([1, 2], 8), ([1, 3], 8), ([4, 5], 8), ([1, 2], 8)])
    tiers = ["gpu=2blocks", "cpu=1blocks"]
    s = replay(chained, tiers=tiers).summary
    named = replay(chained, tiers=tiers, engine="compiled-step").summary    # the baseline on compiled-hierarchy
    assert (s.baseline_engine, named.baseline_engine) == ("lru-scan", "compiled-hierarchy")
    assert s.to_dict()["gap"] == named.to_dict()["gap"]
    s = replay(make_requests([([5], 4), ([9, 5], 8)]), tiers=tiers).summary
    assert s.baseline_engine == "compiled-hierarchy"
    assert "not lru-scan: the block hashes are not chained" in s.baseline_engine_reason
    s = replay(chained, tiers=tiers, write_policy="through").summary       # other rules: today's path
    assert s.baseline_engine == "compiled-hierarchy"
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
    # (1 page); one GPU level of 6 pages, default rules (a hit stops before the last prompt token).
    # A = [1, 2, 3], 12 tokens: nothing cached, hit 0. It computes full (1), (2), (3) and window (3) (the
    #   window block before the end, kept) and window (1), (2), which slide out: every page the prefill writes
    #   takes a slot, 6 pages, all the GPU; at prefill end (1), (2) of the window are stored unpinned in their
    #   slots, then finish unpins the rest: LRU w2 w1 f3 f2 f1 w3.
    # C = [9], 4 tokens: f9 and w9 (kept: the window block before the end) = 2 slots: evicts w2, w1 (dropped,
    #   one level).
    # B = [1, 2, 5, 6], 16 tokens: cap (16 - 1) // 4 = 3; full attention has blocks 1, 2 (lead 2); a hit at 2
    #   needs block 2's window page, dropped; at 1 block 1's, dropped; so every group accepts 0 blocks: hit 0,
    #   refused by the rules min(cap, lead) - 0 = 2 blocks = 8 tokens.
    from pcs.cache.groups import CacheGroup

    groups = [CacheGroup("full_attention", "full", ("full_attention",), BS, 0, 1, layers=1),
              CacheGroup("sliding_window", "window", ("sliding_window",), BS, 5, 1, layers=1)]
    trace = [req([1, 2, 3], 0.0), req([9], 1.0), req([1, 2, 5, 6], 2.0)]
    ref, nat = _group_pair([6], "back", groups)
    hits, got = _group_compare(trace, ref, nat, BlockRules())
    assert hits == [0, 0, 0]
    assert got.columns["hybrid_lost_tokens"].tolist() == [0, 0, 8]
    assert got.ledger.hit_tokens == 0


@needs_grouphier
@pytest.mark.parametrize("model,gpu,threaded", [("gemma-3-27b", "40GB", False), ("gemma-3-27b", "40GB", True),
                                                ("gpt-oss-120b", "100GB", False)])
def test_compiled_hybrid_sequential_on_mooncake(model, gpu, threaded):
    # the event loop over the compiled hierarchy (itself diffed against the Python one in
    # tests/cache/test_grouphier_native.py) against run_sequential, Mooncake at a preset's pages; threaded: the
    # baseline runs on a worker thread without the GIL while this thread runs the event loop over the other
    # compiled hierarchy of the same extension (as pcs.engine.runner runs it beside the step loop)
    from pcs.beside import Beside
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
    side = Beside(threaded)
    pending = seqbase.begin_sequential(source, b, BlockRules(), side)
    assert (side._thread is not None) == threaded
    eng = ReplayEngine(a, "sequential")
    for ch in iter_chunks(source, BlockRules()):
        eng.feed(ch)
    want = eng.close()
    got = pending()
    side.close()
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


@needs_grouphier
def test_run_sequential_refuses_bad_buffers_on_a_worker_thread():
    # the same refusals raised where run_sequential runs without the GIL (its errors take the GIL: pcs/_nogil.h)
    from pcs.cache.groups import CacheGroup
    from pcs.beside import Beside

    h = grouphier.NativeGroupHierarchy(_tiers([4]), "back", [CacheGroup("f", "full", ("f",), BS, 0, 1, layers=1)])
    assert h.releases_gil
    z, side = np.zeros(1, np.int64), Beside(True)
    side.start(h.run_sequential, np.zeros(2, np.uint64), np.array([0, 5], np.int64), z + 1, z, z, z)
    with pytest.raises(ValueError, match="offsets must rise"):
        side.join()
    side.start(h.run_sequential, np.zeros(2, np.uint64), np.array([0, 1], np.int64), z + 1, z, z, z, np.zeros(2))
    with pytest.raises(ValueError, match="arrival"):
        side.join()
    side.close()


@needs_grouphier
def test_a_followed_clock_keeps_the_baseline_on_this_thread():
    # a followed clock is a Python call per request, so run_sequential keeps the GIL and begin_sequential runs it at
    # once on the caller's thread: no worker thread starts, and the result is the inline one.
    # BS = 4, one full-attention group, one level of 8 pages, default rules (a hit stops before the last prompt
    # token). A = [1, 2], 8 tokens: nothing cached, hit 0. B = [1, 2, 3], 12 tokens: cap (12 - 1) // 4 = 2,
    # blocks 1, 2 cached by A: hit 2 blocks = 8 tokens.
    from pcs.cache.groups import CacheGroup
    from pcs.beside import Beside

    groups = [CacheGroup("f", "full", ("f",), BS, 0, 1, layers=1)]
    trace = [req([1, 2], 0.0), req([1, 2, 3], 1.0)]
    free = grouphier.NativeGroupHierarchy(_tiers([8]), "back", groups)
    held = grouphier.NativeGroupHierarchy(_tiers([8]), "back", groups)
    held.follow(lambda: 0.5)
    assert free.releases_gil and not held.releases_gil
    results = []
    for h in (free, held):
        side = Beside(True)
        pending = seqbase.begin_sequential(trace, h, BlockRules(), side)
        assert (side._thread is not None) == (h is free)
        results.append(pending())
        side.close()
    for got in results:
        assert got.ledger.hit_blocks == 2 and got.ledger.hit_tokens == 8
        assert got.columns["hybrid_lost_tokens"].tolist() == [0, 0]


# --- the compiled hierarchy's baseline beside the caller (pcs/cache/_lruhier.c run_sequential without the GIL) ---

# One tier of 2 blocks, default rules. Each request is block X (full, cacheable) plus a partial block of its own
# (5 tokens: cacheable 1, hit cap (5 - 1) // 4 = 1 block), so a request hits 1 block (4 tokens) iff X is resident.
# X = A, B, A, C, A. lru: A, B missed ([A, B]); A hit (moved to the end: [B, A]); C missed, B evicted ([A, C]);
# A hit -> hits [0, 0, 1, 0, 1]. fifo: A, B missed ([A, B]); A hit (keeps its place); C missed, A evicted (the
# oldest: [B, C]); A missed -> hits [0, 0, 1, 0, 0].
from pcs.cache.policies.lru import LRUPolicy  # noqa: E402

_ABACA = [req([x, 100 + i], float(i), prompt=5) for i, x in enumerate([1, 2, 1, 3, 1])]
_ABACA_HITS = {"lru": [0, 0, 1, 0, 1], "fifo": [0, 0, 1, 0, 0]}


class _HostedLRU(LRUPolicy):
    """lru's Python class under another name: not a compiled twin, so the compiled hierarchy hosts it
    (pcs/cache/_pol_py.c) and run_sequential keeps the GIL."""

    name = "hosted_lru_test"


def _begin_on(h, threaded):
    """begin_sequential of _ABACA on ``h`` with a Beside(threaded): (result, whether a worker thread took it,
    per-request hit blocks)."""
    from pcs.beside import Beside

    run, hits = h.run_sequential, []
    h.run_sequential = lambda *a: (run(*a), hits.append(a[4]))    # the call's out array (read after the join)
    side = Beside(threaded)
    try:
        pending = seqbase.begin_sequential(_ABACA, h, BlockRules(), side)
        worker = side._thread is not None
        got = pending()
    finally:
        side.close()
    return got, worker, np.concatenate(hits).tolist()


@pytest.mark.parametrize("policy", ["lru", "fifo"])
@pytest.mark.parametrize("threaded", [False, True])
def test_compiled_hierarchy_baseline_runs_on_the_worker(policy, threaded):
    h = native.NativeHierarchy([Tier("gpu", 2, make_policy(policy, 2))], "back")
    assert h.releases_gil                       # a compiled policy: run_sequential releases the GIL
    got, worker, hits = _begin_on(h, threaded)
    assert worker == threaded
    assert hits == _ABACA_HITS[policy]
    n = sum(_ABACA_HITS[policy])
    assert (got.ledger.num_requests, got.ledger.prompt_tokens, got.ledger.block_accesses) == (5, 25, 10)
    assert (got.ledger.hit_blocks, got.ledger.hit_tokens, got.ledger.requests_with_hit) == (n, 4 * n, n)
    assert got.ledger.computed_tokens == 25 - 4 * n and got.ledger.cacheable_blocks == 5
    assert got.columns == {}


def test_a_hosted_policy_keeps_the_baseline_on_this_thread():
    # a hosted Python policy is called from C with the GIL held: no worker thread, the result the inline one
    # (lru's rule: hits [0, 0, 1, 0, 1], above)
    h = native.NativeHierarchy([Tier("gpu", 2, _HostedLRU(2))], "back")
    assert not h.releases_gil
    got, worker, hits = _begin_on(h, True)
    assert not worker and hits == _ABACA_HITS["lru"]
    assert (got.ledger.hit_blocks, got.ledger.hit_tokens) == (2, 8)


def test_a_hosted_policy_error_raises_at_the_start():
    # inline, as before the baseline ran beside: the hosted policy's error surfaces from begin_sequential itself
    # (the runner's _baseline, before the step loop), not later from the call it returns
    from pcs.beside import Beside
    from pcs.errors import PolicyError

    class Broken(_HostedLRU):
        def evict(self, n):
            raise RuntimeError("broken victim")

    h = native.NativeHierarchy([Tier("gpu", 2, Broken(2))], "back")
    side = Beside(True)
    with pytest.raises(PolicyError, match="broken victim"):
        seqbase.begin_sequential(_ABACA, h, BlockRules(), side)
    assert side._thread is None
    side.close()


def test_lruhier_run_sequential_refuses_bad_buffers_on_a_worker_thread():
    # its refusals raised where run_sequential runs without the GIL (its errors take the GIL: pcs/_nogil.h), the
    # same type and message as on the caller's thread
    from pcs.beside import Beside

    h = native.NativeHierarchy(_tiers([4]), "back")
    z = np.zeros(1, np.int64)
    for threaded in (False, True):
        side = Beside(threaded)
        side.start(h.run_sequential, np.zeros(2, np.uint64), np.array([0, 5], np.int64), z + 1, z, z)
        with pytest.raises(ValueError, match="offsets must rise"):
            side.join()
        side.start(h.run_sequential, np.zeros(2, np.uint64), np.zeros(3, np.int64), z, z, z)
        with pytest.raises(ValueError, match="len\\(offsets\\)"):
            side.join()
        side.close()
