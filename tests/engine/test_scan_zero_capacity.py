"""The one-pass scan at 0 slots (the single-sequence walks' own scan when no LRU scan runs: pcs/engine/runner.py
``_singles``): nothing stays resident, so the compiled kernel only marks ids stamped (pcs/engine/_lruscan.c
``lru_mark``). Hand-worked runs, both kernels, and the stamp count the 2**31 guard reads."""
from __future__ import annotations

import numpy as np
import pytest

from pcs import _native
from pcs.engine.lruscan import SequentialLru

KERNELS = ["python"] + (["c"] if _native.built("lruscan") else [])


def _feed(lru, reqs, n, decode=None):
    keys = np.array([k for r in reqs for k in r], np.uint64)
    offsets = np.concatenate(([0], np.cumsum([len(r) for r in reqs]))).astype(np.int64)
    dec = None
    if decode is not None:
        dec = (np.concatenate(([0], np.cumsum([len(d) for d in decode]))).astype(np.int64),
               np.array([k for d in decode for k in d], np.uint64))
    return [x.tolist() for x in lru.feed(keys, offsets, np.array(n, np.int64), decode=dec)]


@pytest.mark.parametrize("kernel", KERNELS)
def test_zero_slots_leading_runs_by_hand(kernel):
    # r0 [1 2] n 2: nothing before it -> lead 0, seen 0, ideal 0; stamps 1, 2 (never resident at 0 slots).
    # r1 [1 2 3] n 2: 1, 2 stamped by r0 -> seen 2; looked up by r0 -> ideal 2 (3 new ends it); lead 0.
    # r2 [3 1] n 2: 3 was looked up by r1 (ideal 1, then 1: 2) but never stamped (not cacheable there) -> seen 0.
    # r3 [1 1 2] n 3 (a repeat, unchecked): 1, 1, 2 all stamped before -> seen 3, ideal 3; lead 0 throughout.
    lru = SequentialLru(0, kernel, check=False)
    lead, seen, ideal = _feed(lru, [[1, 2], [1, 2, 3], [3, 1], [1, 1, 2]], [2, 2, 2, 3])
    assert (lead, seen, ideal) == ([0, 0, 0, 0], [0, 2, 0, 3], [0, 2, 2, 3])
    if kernel == "c":   # every cacheable id of every request is a stamp: 2 + 2 + 2 + 3
        assert lru._ext.lru_stats(lru._state)["stamps"] == 9
        assert lru._ext.lru_stats(lru._state)["resident"] == 0


@pytest.mark.parametrize("kernel", KERNELS)
def test_zero_slots_decode_walk_by_hand(kernel):
    # r0 [1] n 1, decode ids [5] marked after it. r1 [5 1 6] n 3: 5 only a decode id -> seen 0 (never stamped),
    # seen_decode 1 (marked), then 1 (stamped by r0) -> 2, 6 new ends it; ideal 0 (5 never looked up before).
    # r2 [5 1 6] n 3: all three stamped by r1 -> seen 3, seen_decode 3, ideal 3.
    lru = SequentialLru(0, kernel, check=False)
    lead, seen, ideal, seen_dec = _feed(lru, [[1], [5, 1, 6], [5, 1, 6]], [1, 3, 3], decode=[[5], [], []])
    assert (lead, seen, ideal, seen_dec) == ([0, 0, 0], [0, 0, 3], [0, 0, 3], [0, 2, 3])
