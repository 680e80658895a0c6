"""The compiled all-LRU hierarchy (pcs.cache.native) against the Python one (pcs.cache.Hierarchy).

The Python hierarchy over Tier + LRUPolicy is the reference (it implements
docs/semantics.md §3-§8); the native one must give the same
admissions, per-request columns, ledger and end state (resident blocks with
pin counts, LRU order, counters) -- on hypothesis traces, on a seeded stress
stream with ``_check`` after every step, and through ``pcs.replay`` on the
real Mooncake trace (summary and per-request table).
"""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pcs
from pcs import _native
from pcs.blocks import BlockRules
from pcs.cache import Hierarchy, Tier, make_policy
from pcs.engine.engine import ReplayEngine, TimeModel
from pcs.engine.chunks import iter_chunks
from pcs.engine.select import SUMMARY_KEYS
from helpers import LinearCompute, admission_fields, finish_and_check, per_trace, stress_trace, assert_twin_runs_equal
from helpers import ALL_RULES, BS, SETTINGS, traces

native = pytest.importorskip("pcs.cache.native")
if native._lruhier is None:
    pytest.skip("pcs.cache._lruhier is not compiled", allow_module_level=True)


def _tiers(caps):
    return [Tier(f"t{i}", c, make_policy("lru", c)) for i, c in enumerate(caps)]


def _admit(h, keys, check=True):
    """One request of ``keys`` through ``h`` whole (every key may hit, every key is kept): start, prefill_done,
    finish, then the hierarchy's own invariant check unless ``check`` is False; returns the admission."""
    a = h.start(keys, len(keys), len(keys))
    h.prefill_done(a)
    h.finish(a)
    if check:
        h._check()
    return a


def _orders(h):
    """The (GPU, CPU) LRU orders of a two-tier hierarchy, first victim first."""
    return h.tiers[0].policy.order(), h.tiers[1].policy.order()


def _run(reqs, caps, timing, rules, wp, use_native, check=True):
    h = native.NativeHierarchy(_tiers(caps), wp) if use_native else Hierarchy(_tiers(caps), wp)
    eng = ReplayEngine(h, timing, block_bytes=[7] * len(caps), check=check)
    for ch in iter_chunks(reqs, rules, TimeModel(LinearCompute())):
        eng.feed(ch)
    return eng.close(), h


def _same(reqs, caps, timing, rules, wp):
    a, ha = _run(reqs, caps, timing, rules, wp, False)
    b, hb = _run(reqs, caps, timing, rules, wp, True)
    assert_twin_runs_equal(a, ha, b, hb)
    return a


config = st.tuples(st.lists(st.integers(0, 12), min_size=1, max_size=3), st.sampled_from(["sequential", "modeled"]),
                   st.sampled_from(ALL_RULES), st.sampled_from(["back", "through"]))


@SETTINGS
@given(traces(), config)
def test_native_equals_python_on_random_traces(reqs, cfg):
    caps, timing, rules, wp = cfg
    _same(reqs, caps, timing, rules, wp)


@SETTINGS
@given(st.lists(st.lists(st.integers(0, 6), max_size=6), min_size=1, max_size=12), st.integers(0, 5),
       st.integers(0, 5), st.booleans(), st.sampled_from(["back", "through"]))
def test_admissions_equal_with_repeated_ids_and_waits(chains, c0, c1, wait, wp):
    """Direct start/prefill_done/finish calls, ids repeated within a request, wait_if_full, requests left
    running: every Admission field and the end state agree -- and the compiled ``start_ids`` (the keys as a
    uint64 buffer, the compiled step loop's call) agrees with ``start`` (a list of ints)."""
    hs = [Hierarchy(_tiers([c0, c1]), wp), native.NativeHierarchy(_tiers([c0, c1]), wp),
          native.NativeHierarchy(_tiers([c0, c1]), wp)]
    running: list[list] = [[], [], []]
    for r, keys in enumerate(chains):
        n = len(keys)
        args = (n, max(0, n - r % 2), r % 3, wait)
        outs = [h.start(keys, *args) for h in hs[:2]] + [hs[2].start_ids(np.array(keys, np.uint64).tobytes(), *args)]
        if any(o is None for o in outs):
            assert all(o is None for o in outs)
        else:
            f = admission_fields
            assert f(outs[0]) == f(outs[1]) == f(outs[2])
            for h, a, run in zip(hs, outs, running):
                h.prefill_done(a)
                run.append(a)
        finish_and_check(hs, running, r)


def _stress_trace(seed, n):
    return stress_trace(seed, n, BS)


def test_seeded_stress_check_after_every_step():
    """600 requests, _check (C invariants: hash table, LRU links, counts) after every step, results equal;
    the small GPU tier truncates long requests."""
    reqs = _stress_trace(7, 600)
    for caps in ([40, 60, 80], [6, 20, 30], [6, 9]):
        for timing in ("sequential", "modeled"):
            for wp in ("back", "through"):
                L = _same(reqs, caps, timing, BlockRules(), wp).ledger
                assert L.num_requests == 600
                assert (L.requests_truncated > 0) == (caps[0] == 6)


def test_growth_of_tables_past_many_blocks():
    """Tiers far larger than the initial hash table (64 entries): growth, deletion and reuse of entries. The
    compiled twin's invariants (``_check``: hash table, LRU links, counts) after every step; the Python
    reference's once, at the end (after every step they took ~90 % of the test's CPU: O(steps x blocks))."""
    reqs = _stress_trace(11, 3000)
    for caps in ([500, 3000], [2000]):
        a, ha = _run(reqs, caps, "modeled", BlockRules(), "back", False, check=False)
        ha._check()
        b, hb = _run(reqs, caps, "modeled", BlockRules(), "back", True)
        assert_twin_runs_equal(a, ha, b, hb)
        for t in hb.tiers:      # each table grew past 64 entries, then more were deleted than it holds (reuse)
            assert t.stats.peak_resident_blocks > 64 and t.stats.evicted_blocks > t.capacity_blocks


def test_refuses_what_has_no_compiled_twin():
    """A plug-in policy (here a subclass of a built-in one under its own name) has no C twin: it is hosted
    (pcs/cache/_pol_py.c), but not behind retain (the C retain pool forgets only for compiled policies), nor
    are two retains on one tier (tests/cache/test_native_admission.py: every admission kind has a twin, retain
    in front of every compiled policy); an object that is not an EvictionPolicy is refused."""
    from pcs.cache.admission import apply_admission
    from pcs.cache.policies import PolicyContext
    from pcs.cache.policies.context import TraceOracle
    from types import SimpleNamespace

    from pcs.cache.policies.lru import LRUPolicy

    class Mine(LRUPolicy):
        name = "mine"

    tiers = [Tier("gpu", 4, make_policy("lru", 4)), Tier("cpu", 4, Mine(4))]
    assert native.policy_spec(tiers[1].policy)[0] == "py" and native.NativeHierarchy(tiers).tiers[1].policy.name == "mine"
    tiers = [Tier("gpu", 4, make_policy("lru", 4)), Tier("cpu", 4, make_policy("lru", 4))]
    tiers[1].policy = SimpleNamespace(name="notapolicy")
    with pytest.raises(ValueError, match="gpu:lru, cpu:notapolicy"):
        native.NativeHierarchy(tiers)
    for kinds, inner in ((["retain:tokens=0-4,duration=1"], Mine(4)),
                         (["retain:tokens=0-4,duration=1", "retain:tokens=4-8,duration=1"], make_policy("fifo", 4))):
        pol, adm = apply_admission(kinds, inner, PolicyContext(TraceOracle()))
        tiers = [Tier("gpu", 4, make_policy("lru", 4)), Tier("cpu", 4, pol, adm)]
        with pytest.raises(ValueError, match="one retain per tier in front of a compiled policy"):
            native.NativeHierarchy(tiers)
    with pytest.raises(ValueError, match="write policy"):
        native.NativeHierarchy(_tiers([4]), "sideways")


# llama-3.1-70b at TP 8 stores 167.8 MB per block: 400GB = 2,384 blocks, 20GB = 119 blocks
# (fewer than the largest request of either trace); the sample's tiers are a quarter as large
REAL = {"mooncake": [("modeled", "back", ["gpu=400GB", "cpu=2TB"]),
                     ("sequential", "back", ["gpu=400GB", "cpu=2TB"]),
                     ("modeled", "through", ["gpu=400GB", "cpu=1TB", "ssd=4TB"]),
                     ("sequential", "through", ["gpu=100GB", "cpu=1TB"]),
                     ("modeled", "back", ["gpu=20GB", "cpu=200GB", "ssd=1TB"])],   # GPU tier < the largest request
        "sample": [("modeled", "back", ["gpu=100GB", "cpu=500GB"]),
                   ("sequential", "back", ["gpu=100GB", "cpu=500GB"]),
                   ("modeled", "through", ["gpu=100GB", "cpu=250GB", "ssd=1TB"]),
                   ("sequential", "through", ["gpu=25GB", "cpu=250GB"]),
                   ("modeled", "back", ["gpu=20GB", "cpu=50GB", "ssd=250GB"])]}


@pytest.mark.parametrize("case", range(5))
def test_trace_summary_and_table_identical(exact_trace, case):
    from pcs.engine.api import replay
    timing, wp, tiers = per_trace(exact_trace, **REAL)[case]
    kw = dict(model="llama-3.1-70b", tiers=tiers, timing=timing, write_policy=wp)
    a = replay(exact_trace, engine="reference", **kw)
    b = replay(exact_trace, engine="auto", **kw)
    step = timing == "modeled" and _native.built("stepsched")     # the default step scheduler's compiled loop
    assert (a.summary.engine, b.summary.engine) == ("reference", "compiled-step" if step else "compiled-hierarchy")
    assert a.requests.column_names == b.requests.column_names
    for name in a.requests.column_names:       # as bytes: the NaN finish_s of sequential runs compare equal
        assert a.requests[name].to_numpy().tobytes() == b.requests[name].to_numpy().tobytes(), name
    unnamed = {k: None for k in SUMMARY_KEYS}           # only the keys naming the engine differ
    assert dataclasses.replace(a.summary, **unnamed) == dataclasses.replace(b.summary, **unnamed)
    if tiers[0] == "gpu=20GB":
        assert a.summary.requests_truncated > 0


def test_lru_order_after_many_touches_worked_by_hand():
    """The inline LRU order (pcs/cache/_lruq.h: a queue with lazy deletion, compacted and grown as it fills)
    against an order worked out by hand from LRUPolicy's rules (docs/semantics.md §8: a finish unpins its keys
    tail first, so a request's last block is the first victim; a hit moves a block to the end), one tier of 3."""
    h = native.NativeHierarchy(_tiers([3]), "back")

    def run(keys):
        _admit(h, keys, check=False)

    run([1, 2, 3])                   # unpinned tail first: 3, 2, 1
    assert h.tiers[0].policy.order() == [3, 2, 1]
    run([4])                         # evicts 3; 4 is last
    run([1])                         # a hit: 1 moves to the end
    assert h.tiers[0].policy.order() == [2, 4, 1]
    run([5, 6])                      # evicts 2 and 4; 6 then 5 (tail first)
    assert h.tiers[0].policy.order() == [1, 6, 5]
    for r in range(200):             # 200 hits, far more than the queue's first 64 items: stale items, compactions
        run([5] if r % 2 == 0 else [6])
    assert h.tiers[0].policy.order() == [1, 5, 6]    # the last hit was 6
    run([7])                         # evicts 1, the least recently used
    assert h.tiers[0].policy.order() == [5, 6, 7]
    h._check()


def test_two_plain_lru_tiers_share_one_table():
    """The layout the compiled hierarchy takes (pcs/cache/_lruhier.c ``sh_open``): two tiers, both plain LRU (no
    admission policy, no retain) share one table -- so the two-tier equality tests above run on it -- and every
    other configuration keeps one table per tier (the three-tier cases, another policy, one tier)."""
    def shared(caps, policies=None, wp="back"):
        pols = policies or ["lru"] * len(caps)
        tiers = [Tier(f"t{i}", c, make_policy(p, c)) for i, (c, p) in enumerate(zip(caps, pols))]
        return native.NativeHierarchy(tiers, wp)._h.shared_table()

    assert shared([4, 8]) and shared([4, 8], wp="through") and shared([0, 0])
    assert not shared([4]) and not shared([4, 8, 16]) and not shared([4, 8], ["lru", "fifo"])
    assert not shared([4, 8], ["slru", "lru"])


def test_demotion_and_restore_in_the_shared_table_worked_by_hand():
    """GPU 2 + CPU 3 blocks, LRU both, write-back, on the shared table: the orders and residency worked out by hand
    from docs/semantics.md §6 (a finish unpins tail first: a request's last block is the GPU's first victim), §7
    (victims demoted after the restores' touches, a block resident in the CPU tier moves to its end) and §8 (LRU)."""
    h = native.NativeHierarchy(_tiers([2, 3]), "back")
    assert h._h.shared_table()

    def run(keys):
        return _admit(h, keys)

    run([1, 2])                      # GPU order 2, 1
    run([3])                         # evicts 2 -> CPU [2]; GPU [1, 3]
    assert (h.tiers[0].policy.order(), h.tiers[1].policy.order()) == ([1, 3], [2])
    a = run([2])                     # restore 2 from CPU: evicts 1 (-> CPU after the touch of 2): CPU [2, 1]
    assert list(a.restored_blocks_per_tier) == [0, 1]
    assert (h.tiers[0].policy.order(), h.tiers[1].policy.order()) == ([3, 2], [2, 1])
    assert 2 in h.tiers[0] and 2 in h.tiers[1]       # a restore copies: the block is in both tiers
    run([4, 5])                      # evicts 3, 2: 3 new in CPU (one free slot), 2 moves to the end: CPU [1, 3, 2]
    assert (h.tiers[0].policy.order(), h.tiers[1].policy.order()) == ([5, 4], [1, 3, 2])
    assert h.dropped_blocks == 0
    run([6])                         # evicts 5: CPU full, its LRU block 1 is dropped: CPU [3, 2, 5]
    assert (h.tiers[0].policy.order(), h.tiers[1].policy.order()) == ([4, 6], [3, 2, 5])
    assert h.dropped_blocks == 1 and h.written_blocks == [0, 4]    # written into the CPU tier: 2, 1, 3, 5
    assert 1 not in h.tiers[0] and 1 not in h.tiers[1]


@pytest.mark.parametrize("use_native", [False, True])
def test_fill_of_the_shared_table_worked_by_hand(use_native):
    """The shared table's fill (pcs/cache/_lruhier.c ``sh_fill``: prefill_done and extend), each of its cases on
    GPU 5 + CPU 3 blocks, LRU, write-back, worked out by hand from docs/semantics.md §5-§8 and asserted on the
    Python hierarchy (the reference) and on the compiled one: a computed block found in the CPU tier only (it enters
    the GPU tier pinned once and takes a reserved slot; its CPU copy and place stay), a new block (a new entry, then
    one from the free list after a block left both tiers), a block resident in the GPU tier unpinned (pinned, no
    slot taken)."""
    h = native.NativeHierarchy(_tiers([5, 3]), "back") if use_native else Hierarchy(_tiers([5, 3]), "back")
    if use_native:
        assert h._h.shared_table()

    def orders():
        return _orders(h)

    def run(keys):
        _admit(h, keys)

    run([1, 2, 3])                   # GPU [3, 2, 1]: a finish unpins tail first
    run([4, 5, 6])                   # 3 slots, 2 free: evicts 3 -> CPU [3]
    assert orders() == ([2, 1, 6, 5, 4], [3])
    a = h.start([3, 7], 2, 0)        # no hit allowed: 3 (CPU only) is computed; 2 slots: evicts 2, 1 -> CPU
    assert (a.hit_blocks, list(a.restored_blocks_per_tier), a.reserved_blocks) == (0, [0, 0], 2)
    assert orders() == ([6, 5, 4], [3, 2, 1])
    h.prefill_done(a)                # fill 3 (from its CPU entry) and 7 (new): both pinned once, both slots used
    assert (h.tiers[0].resident[3], h.tiers[0].resident[7], a.reserved_blocks) == (1, 1, 0)
    assert 3 in h.tiers[1] and orders() == ([6, 5, 4], [3, 2, 1])     # the CPU copy of 3 stays, in place
    h.finish(a)
    assert orders() == ([6, 5, 4, 7, 3], [3, 2, 1])
    b = h.start([6], 1, 1, 2)        # 6 pinned, 2 extra slots: evicts 5, 4 -> CPU pushes out 3 (in GPU) and 2
    assert orders() == ([7, 3], [1, 5, 4])
    assert 2 not in h.tiers[0] and 2 not in h.tiers[1] and h.dropped_blocks == 2
    h.extend(b, [7, 8, 5])           # 7: GPU unpinned -> pinned, no slot; 8: new; 5: CPU only -> GPU: 2 slots used
    assert [h.tiers[0].resident[k] for k in (6, 7, 8, 5, 3)] == [1, 1, 1, 1, 0]
    assert b.reserved_blocks == 0 and orders() == ([3], [1, 5, 4])
    h._check()
    h.finish(b)                      # computed keys tail first (5, 8, 7), then the pinned 6
    assert orders() == ([3, 5, 8, 7, 6], [1, 5, 4])
    assert h.written_blocks == [0, 5] and h.tiers[0].reserved_blocks == 0
    h._check()


@pytest.mark.parametrize("use_native", [False, True])
def test_extend_past_the_admission_first_buffers_worked_by_hand(use_native):
    """An extend that takes an admission past its first buffers (64 keys in the compiled one: ``adm_grow``, counts,
    keys and hints in one block) keeps what the start wrote: the per-tier hits, the pinned and computed keys, the
    pins; the finish then releases every key (computed tail first, then pinned: docs/semantics.md §6). Worked by
    hand on GPU 200 + CPU 10 blocks, write-back."""
    h = native.NativeHierarchy(_tiers([200, 10]), "back") if use_native else Hierarchy(_tiers([200, 10]), "back")
    _admit(h, [1, 2, 3])                       # GPU [3, 2, 1]
    a = h.start([1, 2, 10], 3, 3, 70)          # 1, 2 GPU hits (pinned), 10 computed; 1 + 70 extra slots
    h.prefill_done(a)
    decode = list(range(100, 170))             # 70 blocks: 3 + 70 keys, past 64
    h.extend(a, decode)
    assert (a.hit_blocks, list(a.hit_blocks_per_tier), list(a.restored_blocks_per_tier)) == (2, [2, 0], [0, 0])
    assert (list(a.pinned_hashes), list(a.computed_hashes)) == ([1, 2], [10] + decode)
    assert a.reserved_blocks == 0
    assert [h.tiers[0].resident[k] for k in (1, 2, 3, 10, 100, 169)] == [1, 1, 0, 1, 1, 1]
    assert _orders(h) == ([3], [])
    h.finish(a)
    assert _orders(h) == ([3] + decode[::-1] + [10, 2, 1], [])
    assert h.tiers[0].reserved_blocks == 0
    h._check()


def test_finish_of_keys_not_pinned_changes_nothing():
    """The compiled finish checks each key as it drops its pin (computed keys tail first, then the pinned keys:
    ``finish_pass``); a key that is not pinned raises KeyError after giving back the pins it dropped, so a bad call
    changes nothing. Worked by hand on GPU 4 + CPU 4 blocks (docs/semantics.md §6: a finish unpins tail first)."""
    h = native.NativeHierarchy(_tiers([4, 4]), "back")

    def pins():
        return {k: h.tiers[0].resident[k] for k in (1, 2, 3)}

    a = h.start([1, 2], 2, 2)
    h.prefill_done(a)
    h.finish(a)                      # GPU [2, 1]
    b = h.start([1, 2, 3], 3, 3)     # 1, 2 pinned (GPU hits), 3 computed
    h.prefill_done(b)
    h.finish(b)                      # 3, then 2, 1: GPU [3, 2, 1]
    assert h.tiers[0].policy.order() == [3, 2, 1]
    with pytest.raises(KeyError, match="block 3 is not pinned"):
        h.finish(b)                  # the first key checked (3) is not pinned: nothing dropped
    d = h.start([3], 1, 1)           # 3 pinned again: GPU [2, 1]
    with pytest.raises(KeyError, match="block 2 is not pinned"):
        h.finish(b)                  # 3's pin dropped, then 2 is not pinned: 3's pin given back
    assert pins() == {1: 0, 2: 0, 3: 1} and h.tiers[0].policy.order() == [2, 1]
    h._check()
    h.finish(d)
    assert pins() == {1: 0, 2: 0, 3: 0} and h.tiers[0].policy.order() == [2, 1, 3]
    h._check()


@pytest.mark.parametrize("use_native", [False, True])
def test_finish_of_restored_blocks_worked_by_hand(use_native):
    """A restore's admission in the shared table carries each restored block's entry (pcs/cache/_lruhier.c
    ``start_admission``: its GPU entry is its entry in the table), so finish releases it without a lookup. GPU 3 +
    CPU 3 blocks, LRU, write-back, worked out by hand from docs/semantics.md §6 (a finish unpins its computed keys
    tail first, then its pinned keys tail first), §7 (restores are touched in the lower tier tail first, then the
    GPU victims are demoted) and §8 (LRU), on the Python hierarchy (the reference) and on the compiled one; then a
    finish whose restored key is no longer pinned raises KeyError and changes nothing."""
    h = native.NativeHierarchy(_tiers([3, 3]), "back") if use_native else Hierarchy(_tiers([3, 3]), "back")

    def orders():
        return _orders(h)

    def run(keys):
        _admit(h, keys)

    run([1, 2])                      # GPU [2, 1], one slot free
    run([3, 4, 5])                   # 3 slots, 1 free: evicts 2, 1 -> CPU [2, 1]; GPU [5, 4, 3]
    assert orders() == ([5, 4, 3], [2, 1])
    a = h.start([1, 2, 6], 3, 3)     # 1, 2 restored from the CPU tier, 6 computed: 3 slots, evicts 5, 4, 3
    assert (a.hit_blocks, list(a.restored_blocks_per_tier), a.reserved_blocks) == (2, [0, 2], 1)
    # the touches (2, then 1) leave CPU [2, 1]; the 3 victims need 2 more slots there: 2 and 1 leave the CPU tier
    # (still in the GPU tier, pinned) -> CPU [5, 4, 3]
    assert orders() == ([], [5, 4, 3]) and h.dropped_blocks == 2 and h.written_blocks == [0, 5]
    h.prefill_done(a)
    h.finish(a)                      # 6, then 2, 1
    assert orders() == ([6, 2, 1], [5, 4, 3])
    assert {k: h.tiers[0].resident[k] for k in (1, 2, 6)} == {1: 0, 2: 0, 6: 0}
    h._check()
    if not use_native:
        return
    d = h.start([6], 1, 1)           # 6 pinned again: GPU [2, 1]
    with pytest.raises(KeyError, match="block 2 is not pinned"):
        h.finish(a)                  # 6's pin dropped, then the restored 2 is not pinned: 6's pin given back
    assert {k: h.tiers[0].resident[k] for k in (1, 2, 6)} == {1: 0, 2: 0, 6: 1} and orders()[0] == [2, 1]
    h.finish(d)
    assert orders()[0] == [2, 1, 6]
    h._check()


def test_run_sequential_releases_live_admissions_worked_by_hand():
    """run_sequential finishes each admission it has just made (pcs/cache/_lruhier.c ``seq_one``): a live admission
    (``PcsAdm.live``), whose hints are taken at finish without the key compare (``hint_ok``: its start and fill found
    each entry, pinned by it). The requests of test_finish_of_restored_blocks_worked_by_hand on GPU 3 + CPU 3 blocks,
    LRU, write-back, worked out by hand there (docs/semantics.md §6-§8): [1, 2] (no hit; GPU [2, 1]), [3, 4, 5] (no
    hit; 2, 1 demoted: CPU [2, 1], GPU [5, 4, 3]), [1, 2, 6] (1, 2 restored: 2 hits; 5, 4, 3 demoted, 2 and 1 leave
    the CPU tier: CPU [5, 4, 3]); its finish releases 6, then 2, 1: GPU [6, 2, 1], every pin 0."""
    h = native.NativeHierarchy(_tiers([3, 3]), "back")
    keys = np.array([1, 2, 3, 4, 5, 1, 2, 6], dtype=np.uint64)
    offsets = np.array([0, 2, 5, 8], dtype=np.int64)
    n = np.array([2, 3, 3], dtype=np.int64)
    out = np.zeros(3, dtype=np.int64)
    h.run_sequential(keys, offsets, n, n.copy(), out)
    assert out.tolist() == [0, 0, 2]
    assert _orders(h) == ([6, 2, 1], [5, 4, 3])
    assert {k: h.tiers[0].resident[k] for k in (1, 2, 6)} == {1: 0, 2: 0, 6: 0}
    assert h.dropped_blocks == 2 and h.tiers[0].reserved_blocks == 0
    h._check()


def test_finish_of_an_admission_whose_hints_are_all_known_worked_by_hand():
    """A compiled admission of a shared table whose every hint is known (``PcsAdm.live`` 2: the lookup's entries for
    its GPU hits, the fill's for its computed keys) is finished without a check per key (pcs/cache/_lruhier.c
    ``known_pass``: more than PF_AHEAD keys, so both of its loops run). run_sequential finishes each admission it
    has just made. GPU 30 + CPU 30 blocks, LRU, write-back, worked out by hand from docs/semantics.md §6 (a finish
    unpins its computed keys tail first, then its pinned keys tail first) and §8 (LRU): [1..12] (no hit; GPU [12,
    ..., 1]); [1..10, 13..22] (1..10 GPU hits, pinned: GPU [12, 11]; 13..22 computed into free slots, no eviction;
    finish: 22..13, then 10..1); [11, 12, 23] (11, 12 hits; 23 computed; finish: 23, then 12, 11)."""
    h = native.NativeHierarchy(_tiers([30, 30]), "back")
    reqs = [list(range(1, 13)), list(range(1, 11)) + list(range(13, 23)), [11, 12, 23]]
    keys = np.array([k for r in reqs for k in r], dtype=np.uint64)
    offsets = np.array([0, 12, 32, 35], dtype=np.int64)
    n = np.array([12, 20, 3], dtype=np.int64)
    out = np.zeros(3, dtype=np.int64)
    h.run_sequential(keys, offsets, n, n.copy(), out)
    assert out.tolist() == [0, 10, 2]
    assert _orders(h) == (list(range(22, 12, -1)) + list(range(10, 0, -1)) + [23, 12, 11], [])
    assert all(h.tiers[0].resident[k] == 0 for k in range(1, 24))
    assert h.tiers[0].reserved_blocks == 0
    h._check()


@pytest.mark.parametrize("use_native", [False, True])
def test_finish_appends_in_one_pass_worked_by_hand(use_native):
    """The compiled finish of an inline-LRU GPU tier (pcs/cache/_lruhier.c ``finish_lru``) puts each block reaching
    0 pins at the queue's end as it drops the pin; when a later key is not pinned, the blocks already put there
    leave it again and get their pins back. GPU 6 + CPU 6 blocks, LRU, write-back, worked out by hand from
    docs/semantics.md §6 (a finish unpins its computed keys tail first, then its pinned keys tail first) and §8
    (LRU), on the Python hierarchy (the reference) and on the compiled one; the bad finish on the compiled one. A
    first request of 100 keys finds the queue without room for them (the two-pass finish, then the one-pass ones)."""
    h = native.NativeHierarchy(_tiers([6, 6]), "back") if use_native else Hierarchy(_tiers([6, 6]), "back")
    _admit(h, [1, 2, 3])             # computed, tail first: GPU [3, 2, 1]
    assert _orders(h) == ([3, 2, 1], [])
    b = _admit(h, [1, 2, 4, 5])      # 1, 2 GPU hits, 4, 5 computed (3 slots free): 5, 4, then 2, 1
    assert _orders(h) == ([3, 5, 4, 2, 1], [])
    d = h.start([5, 4, 2], 3, 3)     # three GPU hits, pinned: GPU [3, 1]
    assert _orders(h) == ([3, 1], [])
    if use_native:
        with pytest.raises(KeyError, match="block 1 is not pinned"):
            h.finish(b)              # 5, 4, 2 reach 0 (queued), then 1 is not pinned: all three pinned again
        assert {k: h.tiers[0].resident[k] for k in (1, 2, 3, 4, 5)} == {1: 0, 2: 1, 3: 0, 4: 1, 5: 1}
        assert _orders(h) == ([3, 1], [])
        h._check()
    h.finish(d)                      # tail first: 2, 4, 5
    assert _orders(h) == ([3, 1, 2, 4, 5], [])
    h._check()
    big = native.NativeHierarchy(_tiers([200, 200]), "back") if use_native else Hierarchy(_tiers([200, 200]), "back")
    _admit(big, list(range(1, 101)))             # 100 computed keys, tail first
    _admit(big, list(range(101, 151)))
    assert _orders(big) == (list(range(100, 0, -1)) + list(range(150, 100, -1)), [])


@pytest.mark.parametrize("use_native", [False, True])
def test_hit_blocks_per_tier_of_a_truncated_restore_worked_by_hand(use_native):
    """The per-tier hit and restore counts of a two-tier admission whose restores do not all fit (the compiled
    hierarchy takes the lower tier's hits as the kept restores: pcs/cache/_lruhier.c ``start_restore``). GPU 2 +
    CPU 4 blocks, LRU, write-back, worked out by hand from docs/semantics.md §5 (the budget: restores first, the hits
    end at the first restore that does not fit), §6 and §8, on the Python hierarchy and the compiled one."""
    h = native.NativeHierarchy(_tiers([2, 4]), "back") if use_native else Hierarchy(_tiers([2, 4]), "back")
    _admit(h, [1, 2])                # GPU [2, 1]
    _admit(h, [3, 4])                # evicts 2, 1 -> CPU [2, 1]; GPU [4, 3]
    assert _orders(h) == ([4, 3], [2, 1])
    # 1, 2 in the CPU tier only, 3 in the GPU tier (unpinned): lead 3, two restores wanted, 3 pinned. Free GPU
    # slots: 2 - 2 resident + 2 unpinned - 1 (3, pinned now) = 1: one restore kept (1), the hits end at 2
    a = h.start([1, 2, 3], 3, 3)
    assert (a.prefix_hit_blocks, a.hit_blocks, a.truncated, a.reserved_blocks) == (3, 1, True, 0)
    assert list(a.hit_blocks_per_tier) == [0, 1] and list(a.restored_blocks_per_tier) == [0, 1]
    assert _orders(h) == ([], [2, 1, 4])         # 1's slot: evicts 4 -> CPU after 1's touch
    h.prefill_done(a)
    h.finish(a)                      # the pinned keys tail first: 3, then 1
    assert _orders(h) == ([3, 1], [2, 1, 4])
    b = h.start([3, 1, 5], 3, 3)     # 3, 1 GPU hits, 5 computed: 1 slot, none free -> no room, truncated
    assert list(b.hit_blocks_per_tier) == [2, 0] and list(b.restored_blocks_per_tier) == [0, 0]
    assert (b.hit_blocks, b.truncated, b.reserved_blocks) == (2, True, 0)
    h.finish(b)
    h._check()


@pytest.mark.parametrize("expected", [0, 1, 5, 10 ** 6])
def test_shared_table_sized_once_changes_no_number(expected):
    """``expected_blocks`` (the trace's distinct ids, when the caller knows them) sizes the shared table's slots once
    (pcs/cache/_lruhier.c ``sh_open``: for min(expected, GPU + CPU capacity) blocks) instead of doubling them from 16;
    only where blocks lie in the table may differ. The demotion and restore of
    ``test_demotion_and_restore_in_the_shared_table_worked_by_hand`` (GPU 2 + CPU 3, worked by hand there) give the
    same orders for a hint of none, too small, exact and far too large."""
    h = native.NativeHierarchy(_tiers([2, 3]), "back", expected_blocks=expected)
    assert h._h.shared_table()
    _admit(h, [1, 2])
    _admit(h, [3])
    assert _orders(h) == ([1, 3], [2])
    a = _admit(h, [2])
    assert list(a.restored_blocks_per_tier) == [0, 1] and _orders(h) == ([3, 2], [2, 1])
    _admit(h, [4, 5])
    assert _orders(h) == ([5, 4], [1, 3, 2])
    _admit(h, [6])
    assert _orders(h) == ([4, 6], [3, 2, 5])
    assert h.dropped_blocks == 1 and h.written_blocks == [0, 4]
    for k in range(100, 400):        # past the hint: the table grows as before
        _admit(h, [k], check=False)
    h._check()
    assert _orders(h) == ([398, 399], [395, 396, 397])


@pytest.mark.parametrize("use_native", [False, True])
def test_cpu_victims_dropped_in_a_row_then_a_victim_kept_worked_by_hand(use_native):
    """GPU 1 + CPU 1 blocks, LRU, write-back: every request's block pushes the GPU block down and the CPU block out
    (on the shared table its entry, now in no tier, is deleted and freed: pcs/cache/_lruq.h ``lq_walk``, the
    deletions' free list and count kept in locals), a dropped block comes back as a new one (an entry from the free
    list), and a CPU victim still in the GPU tier (a restored block) keeps its entry. Worked out by hand from
    docs/semantics.md §6-§8 (a restore touches the CPU copy, then the GPU victim is demoted: the CPU tier evicts its
    least recently used block), asserted on the Python hierarchy and on the compiled one."""
    h = native.NativeHierarchy(_tiers([1, 1]), "back") if use_native else Hierarchy(_tiers([1, 1]), "back")
    if use_native:
        assert h._h.shared_table()
    _admit(h, [1])
    assert _orders(h) == ([1], []) and h.dropped_blocks == 0
    _admit(h, [2])                   # 1 demoted: CPU [1]
    assert _orders(h) == ([2], [1]) and h.dropped_blocks == 0
    _admit(h, [3])                   # 2 demoted, 1 dropped (in no tier)
    assert _orders(h) == ([3], [2]) and h.dropped_blocks == 1
    _admit(h, [4])                   # 3 demoted, 2 dropped
    assert _orders(h) == ([4], [3]) and h.dropped_blocks == 2
    a = _admit(h, [1])               # 1 is new again (no hit): 4 demoted, 3 dropped
    assert (a.hit_blocks, list(a.restored_blocks_per_tier)) == (0, [0, 0])
    assert _orders(h) == ([1], [4]) and h.dropped_blocks == 3
    b = _admit(h, [4])               # 4 restored (GPU slot: 1 evicted), its CPU copy touched, then 1 demoted: the
    assert (b.hit_blocks, list(b.restored_blocks_per_tier)) == (1, [0, 1])     # CPU tier evicts 4 (still in GPU)
    assert _orders(h) == ([4], [1]) and h.dropped_blocks == 4
    assert 4 in h.tiers[0] and 4 not in h.tiers[1] and 1 in h.tiers[1] and 1 not in h.tiers[0]
    assert h.written_blocks == [0, 5]                # written into the CPU tier: 1, 2, 3, 4, 1
    _admit(h, [5])                   # 4 demoted (a new CPU copy), 1 dropped
    assert _orders(h) == ([5], [4]) and h.dropped_blocks == 5 and h.written_blocks == [0, 6]


def test_replay_hands_the_trace_block_hashes_to_the_compiled_hierarchy(tmp_path, monkeypatch):
    """The replay passes a compiled hierarchy its size hint (pcs/engine/runner.py ``_event_loops``:
    ``expected_blocks`` = the decoded trace's block hashes, an upper bound on its distinct ids; NativeHierarchy sizes
    a shared table's slots from it once). Three Mooncake requests of 3, 4 and 1 blocks (512 tokens each): 3 + 4 + 1 =
    8 block hashes (6 distinct ids), handed to the run's hierarchy; the no-cache run's GPU-only hierarchy (no shared
    table) is built without it (0)."""
    seen = []

    class Spy(native.NativeHierarchy):
        def __init__(self, tiers, write_policy="back", expected_blocks=0):
            seen.append(expected_blocks)
            super().__init__(tiers, write_policy, expected_blocks)

    rows = [{"timestamp": 0, "input_length": 1536, "output_length": 5, "hash_ids": [1, 2, 3]},
            {"timestamp": 1000, "input_length": 2048, "output_length": 5, "hash_ids": [1, 2, 4, 5]},
            {"timestamp": 2000, "input_length": 512, "output_length": 5, "hash_ids": [6]}]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr(native, "NativeHierarchy", Spy)
    pcs.replay(str(path), tiers=["gpu=100blocks", "cpu=100blocks"], policy="lru")
    assert seen == [8, 0]


@pytest.mark.parametrize("use_native", [False, True])
def test_demotion_in_the_eviction_walk_and_past_the_cpu_room_worked_by_hand(use_native):
    """GPU 3 + CPU 1 blocks, LRU, write-back: GPU victims that fit the CPU tier's unpinned room are demoted in their
    eviction walk on the shared table (pcs/cache/_lruhier.c ``sh_demote``: the CPU tier's evictions after), a batch
    of victims past that room takes the two steps (its oldest pushed out: Tier.insert's batch rule, ``sh_cut``).
    Worked out by hand from docs/semantics.md §6-§8 (a finish unpins tail first), on the Python hierarchy and the
    compiled one."""
    h = native.NativeHierarchy(_tiers([3, 1]), "back") if use_native else Hierarchy(_tiers([3, 1]), "back")
    _admit(h, [1, 2, 3])
    assert _orders(h) == ([3, 2, 1], [])
    _admit(h, [4, 5, 6])             # victims 3, 2, 1: one fits the CPU tier, 3 and 2 pushed out (dropped)
    assert _orders(h) == ([6, 5, 4], [1]) and h.dropped_blocks == 2 and h.written_blocks == [0, 1]
    _admit(h, [7])                   # victim 6 fits (1 unpinned): demoted, the CPU tier evicts 1 (dropped)
    assert _orders(h) == ([5, 4, 7], [6]) and h.dropped_blocks == 3 and h.written_blocks == [0, 2]
    a = _admit(h, [5])               # a GPU hit: no eviction; 5 moves to the GPU order's end
    assert a.hit_blocks == 1 and _orders(h) == ([4, 7, 5], [6]) and h.dropped_blocks == 3
    _admit(h, [8, 9])                # victims 4, 7 past the room of 1: 4 pushed out, 7 stored, 6 evicted (dropped)
    assert _orders(h) == ([5, 9, 8], [7]) and h.dropped_blocks == 5 and h.written_blocks == [0, 3]
    assert 6 not in h.tiers[1] and 4 not in h.tiers[0] and 4 not in h.tiers[1]


@pytest.mark.parametrize("use_native", [False, True])
def test_a_start_that_waits_leaves_the_lead_unpinned_in_place_worked_by_hand(use_native):
    """GPU 5 + CPU 3 blocks, LRU, write-back: the shared table's lookup pins the GPU lead blocks as it finds them
    (pcs/cache/_lruhier.c ``sh_pin_lead``); a start that then waits (wait_if_full, docs/semantics.md §5) gives the
    pins back and puts each block back at its place in the GPU order (``sh_unpin``), so the hierarchy is as before.
    Worked out by hand (a finish unpins tail first), on the Python hierarchy and the compiled one."""
    h = native.NativeHierarchy(_tiers([5, 3]), "back") if use_native else Hierarchy(_tiers([5, 3]), "back")
    _admit(h, [1, 2, 3])
    assert _orders(h) == ([3, 2, 1], [])
    b = h.start([9], 1, 1, 1)        # 1 computed + 1 extra slot: 2 free slots, no eviction; the GPU tier is full
    assert b.reserved_blocks == 2 and _orders(h) == ([3, 2, 1], [])
    # lead [2] (unpinned: evictable), 3 computed: need 3, obtainable 5 - 3 - 2 + 3 - 1 = 2 < min(3, 5 - 1): waits
    assert h.start([2, 7, 8, 6], 4, 4, 0, True) is None
    assert _orders(h) == ([3, 2, 1], []) and [h.tiers[0].resident[k] for k in (1, 2, 3)] == [0, 0, 0]
    assert h.tiers[0].reserved_blocks == 2
    h._check()
    h.prefill_done(b)
    h.finish(b)                      # 9 joins the order; b's extra slot given back
    assert _orders(h) == ([3, 2, 1, 9], []) and h.tiers[0].reserved_blocks == 0
    a = h.start([1, 3, 2, 7], 4, 4, 0, True)    # lead [1, 3, 2], all unpinned; 7 computed: 1 free slot, admitted
    assert (a.hit_blocks, a.reserved_blocks) == (3, 1)
    assert _orders(h) == ([9], []) and [h.tiers[0].resident[k] for k in (1, 2, 3)] == [1, 1, 1]
    h.prefill_done(a)
    h.finish(a)                      # tail first: the computed 7, then the pinned 2, 3, 1
    assert _orders(h) == ([9, 7, 2, 3, 1], []) and h.tiers[0].reserved_blocks == 0
    h._check()


@pytest.mark.parametrize("use_native", [False, True])
def test_restores_touched_before_the_victims_demoted_in_their_walk_worked_by_hand(use_native):
    """LRU, write-back: a request with restores and GPU victims. On the shared table the restores' CPU copies are
    touched before the victims are chosen (pcs/cache/_lruhier.c ``sh_touch_first``), so the victims are demoted in
    their eviction walk, when the CPU tier's evictions for them stop short of the touched copies; else the two steps
    (GPU eviction, fill, touches, cascade). Either way the orders are those of docs/semantics.md §7 (victims demoted
    after the restores' touches; a finish unpins tail first), worked out by hand, on the Python hierarchy and the
    compiled one."""
    def hier(caps):
        return native.NativeHierarchy(_tiers(caps), "back") if use_native else Hierarchy(_tiers(caps), "back")

    h = hier([3, 4])                 # CPU room for the victims: one eviction, short of the touched copy
    _admit(h, [1, 2, 3])
    _admit(h, [4, 5, 6])             # victims 3, 2, 1 demoted
    assert _orders(h) == ([6, 5, 4], [3, 2, 1]) and h.dropped_blocks == 0
    a = _admit(h, [3, 7])            # restore 3 (touched: CPU [2, 1, 3]), 7 computed: victims 6, 5; the CPU tier has
    assert (a.hit_blocks, list(a.restored_blocks_per_tier)) == (1, [0, 1])   # one free slot, so it evicts 2
    assert _orders(h) == ([4, 7, 3], [1, 3, 6, 5]) and h.dropped_blocks == 1 and h.written_blocks == [0, 5]
    assert 2 not in h.tiers[0] and 2 not in h.tiers[1] and 3 in h.tiers[0] and 3 in h.tiers[1]

    h = hier([3, 3])                 # no CPU room: the evictions would reach a touched copy (the two steps)
    _admit(h, [1, 2, 3])
    _admit(h, [4, 5, 6])
    assert _orders(h) == ([6, 5, 4], [3, 2, 1])
    b = _admit(h, [1, 2])            # restores 1, 2 (touched tail first: CPU [3, 2, 1]), victims 6, 5: the CPU tier
    assert (b.hit_blocks, list(b.restored_blocks_per_tier)) == (2, [0, 2])   # evicts 3 (dropped) and 2 (in the GPU)
    assert _orders(h) == ([4, 2, 1], [1, 6, 5]) and h.dropped_blocks == 2 and h.written_blocks == [0, 5]
    assert 2 in h.tiers[0] and 2 not in h.tiers[1] and 3 not in h.tiers[0] and 3 not in h.tiers[1]
