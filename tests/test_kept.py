"""pcs.release_memory gives back every mapping the compiled modules keep between calls (pcs/kept.py).

Sizes worked from the arrays' definitions: an id arena of 600,000 ids on huge pages is 4,800,000 B, kept as 1,172
whole 4 KiB pages (4,800,512 B); a scan hinted 1,000,000 ids has a direct array of 1,125,000 entries of 8 B
(9,000,000 B -> 9,003,008 B in pages) and with a lower tier its times, 4 B an entry (4,501,504 B).
"""
from __future__ import annotations

import gc

import numpy as np
import pytest

import pcs
from pcs import _native, kept
from pcs.engine.lruscan import SequentialLru

pytestmark = pytest.mark.skipif(not (_native.built("jsonrows") and _native.built("lruscan")),
                                reason="the compiled reader and scan are not built")


def test_release_memory_unmaps_what_every_pool_keeps():
    gc.collect()            # earlier tests' garbage (a JSONL reader's 32 MiB arena in a cycle) freed first, not below
    pcs.release_memory()
    assert kept.kept_bytes() == 0
    arena = _native.module("jsonrows").Arena(600_000, huge_pages=True)
    arena.append(np.arange(600_000, dtype=np.uint64))
    del arena
    ids = np.arange(1_000_000, dtype=np.uint64)
    offsets = np.array([0, 500_000, 1_000_000], np.int64)
    lru = SequentialLru(1000, "c", False, 1_000_000, 2)
    lru.feed(ids, offsets, np.diff(offsets), np.diff(offsets))
    del lru
    gc.collect()
    assert _native.module("jsonrows").kept_bytes() == 4_800_512
    assert _native.module("lruscan").kept_bytes() == 9_003_008 + 4_501_504
    held = kept.kept_bytes()
    assert held >= 4_800_512 + 9_003_008 + 4_501_504          # the step loop's and hierarchy's pools may add theirs
    assert pcs.release_memory() == held
    assert kept.kept_bytes() == 0
    assert all(_native.module(m).kept_bytes() == 0 for m in kept.POOLED)
    assert pcs.release_memory() == 0                          # nothing left


def test_a_replay_after_release_memory_gives_the_same_result(tmp_path):
    path = tmp_path / "t.jsonl"   # six requests of 2 blocks (block 512); the last three repeat the first three
    path.write_text("".join(f'{{"timestamp": {i}, "input_length": 1024, "output_length": 1, "hash_ids": '
                            f'[{2 * (i % 3)}, {2 * (i % 3) + 1}]}}\n' for i in range(6)))
    first = pcs.replay(str(path), tiers=["gpu=100blocks"], timing="sequential")
    pcs.release_memory()
    again = pcs.replay(str(path), tiers=["gpu=100blocks"], timing="sequential")
    # each repeat finds its first block (the last-token rule keeps the second, docs/semantics.md §4): 3 of 12 blocks
    assert first.summary.hit_ratio == again.summary.hit_ratio == pytest.approx(3 / 12)
