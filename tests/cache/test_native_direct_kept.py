"""The direct map kept between tables (pcs/cache/_dmap.h ``dmap_keep`` / ``dmap_take``).

A shared LRU table's direct map of the least size (2**20 keys, 4 MB: traces of up to 2**19 block hashes) is not
unmapped when its table ends or goes hashed: the next table of that size takes it, the keys the last one touched
cleared, instead of faulting its pages in again (docs/performance.md, "The 1x call's fixed costs"). What the tests
pin: a table built on a kept map holds none of the keys its map's last table held, so the hand-worked demotion and
restore of test_native_direct_table.py come out as worked there, and the twin's invariants (``check``) hold.
"""
from __future__ import annotations

import functools
import gc

import pytest

from helpers import in_fresh_process
from pcs.cache import Tier, make_policy

native = pytest.importorskip("pcs.cache.native")
if native._lruhier is None:
    pytest.skip("pcs.cache._lruhier is not compiled", allow_module_level=True)

LEAST = 1 << 20            # dmap_limit's least (expected_blocks small): the size that is kept
_ORIG = native._lruhier.Hierarchy

# GPU 2 + CPU 3 blocks, write-back: test_native_direct_table.STEPS (worked by hand in test_replay_native.py): the
# request's keys, then (GPU order, CPU order) after it, first victim first.
STEPS = [([1, 2], ([2, 1], [])), ([3], ([1, 3], [2])), ([2], ([3, 2], [2, 1])), ([4, 5], ([5, 4], [1, 3, 2])),
         ([6], ([4, 6], [3, 2, 5]))]


def _hier(monkeypatch, caps, limit=-1):
    monkeypatch.setattr(native._lruhier, "Hierarchy", functools.partial(_ORIG, direct_limit=limit))
    return native.NativeHierarchy([Tier(f"t{i}", c, make_policy("lru", c)) for i, c in enumerate(caps)], "back",
                                  expected_blocks=100)


def _admit(h, keys):
    a = h.start(keys, len(keys), len(keys))
    h.prefill_done(a)
    h.finish(a)
    h._check()


def _used_then_dropped(monkeypatch, hashed: bool) -> None:
    """A table of the kept size that held keys 0 .. 99 (GPU 64 + CPU 64 blocks: all resident at its end), and,
    when ``hashed``, then added a key past its limit (its map released mid-life, the keys still in it), freed."""
    first = _hier(monkeypatch, [64, 64])
    assert first._h.direct_limit() == LEAST
    for k in range(0, 100, 4):
        _admit(first, list(range(k, k + 4)))
    assert len(first._h.resident(0)) + len(first._h.resident(1)) == 100
    if hashed:
        _admit(first, [LEAST + 5])
        assert first._h.direct_limit() == 0
    del first
    gc.collect()


@pytest.mark.parametrize("hashed", [False, True])
def test_a_kept_map_comes_back_cleared(monkeypatch, hashed):
    """The next table of the kept size (built right after the first ended, so the map it takes is the first's or,
    if one was kept before, that older one: cleared either way) finds none of keys 0 .. 99, and keys 1 .. 6 --
    all held by the first table -- go through STEPS's orders as worked by hand (a stale map item would make [1, 2]
    a hit and every order after it different)."""
    _used_then_dropped(monkeypatch, hashed)
    h = _hier(monkeypatch, [2, 3])
    assert h._h.direct_limit() == LEAST
    assert all(h._h.pin_count(j, k) is None for j in (0, 1) for k in range(100))
    for keys, orders in STEPS:
        _admit(h, keys)
        assert (h.tiers[0].policy.order(), h.tiers[1].policy.order()) == orders


def test_two_tables_at_once_each_have_their_own_map(monkeypatch):
    """One map is kept at most: two live tables of the kept size (the second built while the first holds keys) do
    not share one; each holds its own keys, and the first's keys stay its own after the second ends."""
    _used_then_dropped(monkeypatch, False)
    a = _hier(monkeypatch, [2, 3])
    b = _hier(monkeypatch, [2, 3])
    _admit(a, [1, 2])
    _admit(b, [7])
    assert a._h.pin_count(0, 7) is None and b._h.pin_count(0, 1) is None
    assert a.tiers[0].policy.order() == [2, 1] and b.tiers[0].policy.order() == [7]
    del b
    gc.collect()
    _admit(a, [3])
    assert a.tiers[0].policy.order() == [1, 3] and a.tiers[1].policy.order() == [2]


def _filled_then_dropped() -> tuple[list[int], list[int]]:
    """GPU 8,192 + CPU 8,192 LRU blocks, write-back, the shared table direct: keys 0 .. 16,383 admitted in requests
    of 64, each finished. By hand: the GPU keeps the last 8,192 keys and demotes the first 8,192 to the CPU tier,
    which holds exactly them (nothing is evicted from it). The orders (least recent first), then the hierarchy
    freed."""
    h = native.NativeHierarchy([Tier(f"t{i}", 8192, make_policy("lru", 8192)) for i in range(2)], "back",
                               expected_blocks=16384)
    for k in range(0, 16384, 64):
        _admit(h, list(range(k, k + 64)))
    orders = sorted(h._h.resident(0)), sorted(h._h.resident(1))
    del h
    gc.collect()
    return orders


def test_a_dead_tables_arrays_are_kept_for_the_next():
    in_fresh_process(__file__, "_a_dead_tables_arrays_are_kept_for_the_next")


def _a_dead_tables_arrays_are_kept_for_the_next():
    # pcs/_kept.h kept_alloc: the shared table's entry array (16,385 entries of 32 B: 524 KB) and the tiers' order
    # arrays pass 128 KiB, so they are mappings; a freed hierarchy's are kept (the module's pool grows), and an
    # identical hierarchy takes each back (every kept one an exact fit) and leaves the pool as the first left it.
    # The pool is emptied first: what earlier tests' tables left in it (bounded: 48 mappings, 64 MB) could fit the
    # first hierarchy's arrays, or leave no room for them
    gc.collect()
    native._lruhier.kept_clear()
    before = native._lruhier.kept_bytes()
    assert before == 0
    gpu, cpu = _filled_then_dropped()
    assert gpu == list(range(8192, 16384)) and cpu == list(range(8192))
    first = native._lruhier.kept_bytes()
    assert first - before >= 524288
    gpu, cpu = _filled_then_dropped()
    assert gpu == list(range(8192, 16384)) and cpu == list(range(8192))
    assert native._lruhier.kept_bytes() == first
