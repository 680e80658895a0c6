"""The compiled scan's zeroed arrays kept between scans (pcs/engine/_lruscan.c ``lru_zalloc``, pcs/_kept.h):
a later scan handed a dead scan's mapping reads it as zero, exactly as a fresh one.

The hand-worked trace is test_replay_scan.py's ``test_hand_worked_on_mapped_arrays_that_grow_and_move`` (the
values worked out there); here it runs on arrays a first scan of 1,000,000 ids left dirty.
"""
from __future__ import annotations

import gc

import numpy as np
import pytest

from pcs import _native
from pcs.engine.lruscan import SequentialLru
from test_replay_scan import feed_renamed_hand_worked

pytestmark = pytest.mark.skipif(not _native.built("lruscan"), reason="the compiled scan is not built")

HINT = 1_000_000     # the direct array: 1,125,000 entries of 8 B (9 MB), the lower tier's times 4.5 MB: both mapped


@pytest.fixture
def ext():
    m = _native.module("lruscan")
    m.kept_clear()
    yield m
    m.kept_clear()


def _dirty_scan(lower):
    """A scan of every id 0 .. HINT - 1 (four requests, each id twice: every direct entry and lower time
    written), dropped: its mapped arrays go back to the pool."""
    ids = np.arange(HINT, dtype=np.uint64)
    keys = np.concatenate([ids, ids])
    offsets = np.arange(0, 2 * HINT + 1, HINT // 2, dtype=np.int64)
    n = np.diff(offsets)
    lru = SequentialLru(1000, "c", False, HINT, lower)
    lru.feed(keys, offsets, n, n) if lower is not None else lru.feed(keys, offsets, n)
    del lru
    gc.collect()


@pytest.mark.parametrize("lower", [None, 2])
def test_a_dead_scans_arrays_are_kept_and_read_as_zero_by_the_next(ext, lower):
    _dirty_scan(lower)
    kept = ext.kept_bytes()
    # the direct array (9,000,000 B) and with a lower tier its times (4,500,000 B), in whole 4 KiB pages
    assert kept == 9_003_008 + (4_501_504 if lower is not None else 0)
    lru = SequentialLru(2, "c", False, HINT, lower)
    assert ext.kept_bytes() == 0                       # taken again, not mapped anew
    got = feed_renamed_hand_worked(lru, 1_500_000)
    assert got[:3] == [[0, 1, 1, 1], [0, 1, 2, 1], [0, 1, 2, 1]]
    if lower is not None:
        assert got[3] == [0, 1, 2, 1] and lru.tiers_hold()


def test_kept_clear_unmaps_what_the_pool_keeps(ext):
    _dirty_scan(2)
    assert ext.kept_bytes() > 0
    assert ext.kept_clear() == 2 and ext.kept_bytes() == 0
    assert ext.kept_clear() == 0
