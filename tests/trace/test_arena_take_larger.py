"""A JSONL reader's id arena takes a larger mapping a dead arena left (``Arena(..., take_larger=True)``).

pcs/trace/_jsonrows.cpp's arenas from 128 KiB are mappings of the module's pool (pcs/_kept.h): a plain arena takes a
kept mapping of its size up to twice it; one made with ``take_larger`` takes any kept mapping at least its size,
and its room is then the whole mapping. :func:`pcs.trace.jsonfast.arena` asks for that, so when a 50x Parquet read
(an arena of 115 MB) and a 50x JSONL read (4 Mi ids asked, 32 MiB) alternate, the JSONL ids fill the pages the
Parquet read left resident. Sizes below are worked out from the page size: an arena of n ids asks 8 n bytes,
rounded up to whole 4 KiB pages.
"""
from __future__ import annotations

import numpy as np
import pytest

from pcs import _native
from pcs.trace import jsonfast

jsonrows = _native.module("jsonrows")
needs_twin = pytest.mark.skipif(jsonrows is None, reason="pcs.trace._jsonrows not built")

#: an arena of 10,000,000 ids: 80,000,000 B, 19,531.25 pages -> 19,532 pages = 80,003,072 B, above twice the
#: 32 MiB (33,554,432 B) of a JSONL arena, so a plain arena of 4 Mi ids does not take it
BIG_IDS, BIG_BYTES = 10_000_000, 80_003_072


@pytest.fixture
def clean_pool():
    jsonfast.release_arenas()
    jsonrows.kept_clear()
    yield
    jsonfast.release_arenas()
    jsonrows.kept_clear()


def _plant_big() -> None:
    """A dead arena's mapping of BIG_BYTES kept in the pool, its first ids written (stale contents)."""
    big = jsonrows.Arena(BIG_IDS, huge_pages=False)
    assert big.append(np.full(1000, 0xFFFF_FFFF_FFFF_FFFF, dtype=np.uint64)) == 0
    del big
    assert jsonrows.kept_bytes() == BIG_BYTES


@needs_twin
def test_take_larger_takes_a_larger_kept_mapping_and_its_room_is_all_of_it(clean_pool):
    _plant_big()
    plain = jsonrows.Arena(1 << 22)              # 32 MiB asked: 80 MB > 2 x 32 MiB, not taken; a new mapping
    assert plain.capacity == 1 << 22 and jsonrows.kept_bytes() == BIG_BYTES
    a = jsonrows.Arena(1 << 22, take_larger=True)
    assert a.capacity == BIG_BYTES // 8 == 10_000_384 and jsonrows.kept_bytes() == 0
    ids = np.arange(10_000_384, dtype=np.uint64)[::-1].copy()         # the whole room, over the stale ids
    assert a.append(ids) == 0 and a.append(np.array([1], dtype=np.uint64)) == -1
    assert np.array_equal(np.frombuffer(a, dtype=np.uint64), ids)
    del plain, a
    assert jsonrows.kept_bytes() == BIG_BYTES + (1 << 25)           # both mappings back: 112 MB <= 128 MiB


@needs_twin
def test_take_larger_with_nothing_kept_gets_the_room_asked(clean_pool):
    a = jsonrows.Arena(1 << 22, take_larger=True)
    assert a.capacity == 1 << 22
    small = jsonrows.Arena(1000, take_larger=True)                     # 8 KB: malloc's, the room asked
    assert small.capacity == 1000


@needs_twin
def test_the_readers_arena_takes_it_and_is_not_kept_as_an_object(clean_pool):
    # jsonfast.arena: the larger mapping, not the 4 Mi ids asked; given back with no ids, the arena object is not
    # kept (its room is above ARENA_IDS) and its mapping goes back to the pool once it dies
    _plant_big()
    got = jsonfast.arena()
    assert got.capacity == 10_000_384 and jsonrows.kept_bytes() == 0
    jsonfast.ARENAS.keep(got)
    assert jsonfast.ARENAS.take() is None
    del got
    assert jsonrows.kept_bytes() == BIG_BYTES


@needs_twin
def test_a_read_into_the_larger_mapping_gives_the_written_ids(clean_pool, tmp_path, monkeypatch):
    # 300 rows of 4 ids (request i: 4i .. 4i + 3) in 4 KiB chunks, decoded side by side into the planted mapping,
    # whose first 1,000 ids were all ones: the read's ids are those written, one view of the larger arena
    from pcs.engine.decoded import Decoded
    from pcs.trace import source

    _plant_big()
    monkeypatch.setattr(source, "CHUNK_BYTES", 1 << 12)
    rows = [b'{"timestamp": %d, "input_length": 2048, "output_length": 1, "hash_ids": [%d, %d, %d, %d]}\n'
            % (i, 4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3) for i in range(300)]
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(rows))
    d = Decoded(str(path))
    assert len(d.batches) == 1 and d.batches[0].block_hashes.tolist() == list(range(1200))
    h = d.batches[0].block_hashes
    assert type(h.base.obj).__name__ == "Arena" and h.base.obj.capacity == 10_000_384
