"""A Parquet read that keeps its batches (``side_by_side``) decodes pieces and lays their ids side by side.

pcs/trace/parquet.py's ``read_parquet(side_by_side=True)`` asks pyarrow for pieces of at most
:data:`~pcs.trace.parquet.PIECE_ROWS` rows, joins consecutive pieces into batches of ``rows`` rows, and copies each
piece's ids into an arena of the compiled twin (``Arena.append``, pcs/trace/_jsonrows.cpp), so every batch's ids --
and the joins of :class:`pcs.engine.decoded.Decoded` -- are views of one buffer. Expected values are the files'
own rows, written here: ids ``i * k ... i * k + k - 1`` for request ``i``.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pcs import _native
from pcs.engine.decoded import Decoded
from pcs.errors import InputError
from pcs.trace import open_trace, parquet
from pcs.trace.parquet import SCHEMA_NAME

jsonrows = _native.module("jsonrows")
needs_twin = pytest.mark.skipif(jsonrows is None, reason="pcs.trace._jsonrows not built")


def _write(path, rows: int, k: int = 2, row_group: int | None = None, nulls_at: int | None = None):
    """``rows`` requests: request i arrives at i s with 512 * k tokens and ids i * k ... i * k + k - 1; a null
    ``output_tokens`` at row ``nulls_at`` (0-based) when given."""
    out = [None if i == nulls_at else 1 for i in range(rows)]
    t = pa.table({"arrival_s": pa.array([float(i) for i in range(rows)], pa.float64()),
                  "prompt_tokens": pa.array([512 * k] * rows, pa.int64()),
                  "output_tokens": pa.array(out, pa.int64()),
                  "block_hashes": pa.array([list(range(i * k, i * k + k)) for i in range(rows)],
                                           pa.list_(pa.uint64()))})
    meta = {b"pcs.schema": SCHEMA_NAME.encode(), b"pcs.block_size": b"512", b"pcs.source_format": b"mooncake"}
    pq.write_table(t.replace_schema_metadata(meta), path, row_group_size=row_group or rows)
    return str(path)


@needs_twin
def test_arena_append_copies_after_the_ids_before():
    a = jsonrows.Arena(10)
    assert a.append(np.array([7, 8, 9], dtype=np.uint64)) == 0
    assert a.append(np.array([2**64 - 1] + list(range(9)), dtype=np.uint64)) == -1    # 10 ids: 7 left, none copied
    assert a.used == 3
    assert a.append(np.arange(11, 18, dtype=np.uint64)) == 3 and a.used == 10       # 7 ids: exactly the room
    assert np.frombuffer(a, dtype=np.uint64).tolist() == [7, 8, 9, 11, 12, 13, 14, 15, 16, 17]
    assert a.append(np.zeros(0, dtype=np.uint64)) == 10


@needs_twin
@pytest.mark.parametrize("n", [1, 15, 16, 17, 1000])
def test_arena_append_copies_every_id_of_any_count(n):
    # the copy moves 16 ids a step, then one by one: counts around a step, the ids' top bits set
    ids = np.arange(n, dtype=np.uint64) | np.uint64(1 << 63)
    a = jsonrows.Arena(n + 3)
    assert a.append(np.array([1, 2, 3], dtype=np.uint64)) == 0 and a.append(ids) == 3
    assert np.frombuffer(a, dtype=np.uint64).tolist() == [1, 2, 3] + ids.tolist()


@needs_twin
@pytest.mark.parametrize("bad", [np.arange(3, dtype=np.int64), np.zeros((2, 2), dtype=np.uint64),
                                 np.arange(6, dtype=np.uint64)[::2], b"12345678"])
def test_arena_append_takes_contiguous_uint64_only(bad):
    with pytest.raises((TypeError, ValueError)):      # a strided array: numpy's own ValueError (not contiguous)
        jsonrows.Arena(10).append(bad)


@needs_twin
def test_a_kept_read_joins_pieces_whose_ids_lie_side_by_side(tmp_path, monkeypatch):
    # 10 rows of 3 ids in pieces of 2 rows, batches of 4 rows: 4 + 4 + 2 rows, ids 0..29 in one arena
    monkeypatch.setattr(parquet, "PIECE_ROWS", 2)
    monkeypatch.setattr(parquet.read_parquet, "__defaults__", ("raise", 4))
    kept = list(open_trace(_write(tmp_path / "t.parquet", 10, k=3)).iter_batches(side_by_side=True))
    assert [len(b) for b in kept] == [4, 4, 2]
    assert [h for b in kept for h in b.block_hashes.tolist()] == list(range(30))
    assert [b.block_offsets.tolist() for b in kept] == [[0, 3, 6, 9, 12], [0, 3, 6, 9, 12], [0, 3, 6]]
    assert [t for b in kept for t in b.arrival_s.tolist()] == [float(i) for i in range(10)]
    arena = kept[0].block_hashes.base.obj        # numpy.frombuffer's memoryview holds the arena's export
    assert type(arena).__name__ == "Arena" and arena.used == 30 and arena.exports == 3
    assert all(b.block_hashes.base.obj is arena and not b.block_hashes.flags.writeable for b in kept)


@needs_twin
def test_decoded_joins_the_batches_as_a_view(tmp_path, monkeypatch):
    # three row groups of 3 rows, batches of 4 rows at most: the decoded trace is one batch of 9 rows (fewer than
    # MERGE_REQUESTS), its ids 0..17 a view of the read's arena, equal to a streamed read's
    monkeypatch.setattr(parquet.read_parquet, "__defaults__", ("raise", 4))
    path = _write(tmp_path / "t.parquet", 9, row_group=3)
    d = Decoded(path)
    assert len(d.batches) == 1 and d.batches[0].block_hashes.tolist() == list(range(18))
    assert type(d.batches[0].block_hashes.base.obj).__name__ == "Arena"
    streamed = [h for b in open_trace(path).iter_batches() for h in b.block_hashes.tolist()]
    assert streamed == list(range(18))


@needs_twin
@pytest.mark.parametrize("footer", [0, 5, 10**6])
def test_a_wrong_footer_count_changes_no_id(tmp_path, monkeypatch, footer):
    # the first arena holds the footer's count (0 or 5: too few, a new arena takes the rest; a million: room
    # never touched); the ids are 0..39 whatever it says
    monkeypatch.setattr(parquet, "PIECE_ROWS", 4)
    monkeypatch.setattr(parquet, "footer_block_hashes", lambda pf: footer)
    kept = list(open_trace(_write(tmp_path / "t.parquet", 20)).iter_batches(side_by_side=True))
    assert [h for b in kept for h in b.block_hashes.tolist()] == list(range(40))


def test_without_the_twin_the_pieces_keep_their_own_ids(tmp_path, monkeypatch):
    # PCS_NATIVE=python: no arena; the batches are the same rows, the joined ids a copy
    monkeypatch.setenv("PCS_NATIVE", "python")
    monkeypatch.setattr(parquet, "PIECE_ROWS", 2)
    kept = list(open_trace(_write(tmp_path / "t.parquet", 7)).iter_batches(side_by_side=True))
    assert [len(b) for b in kept] == [7] and kept[0].block_hashes.tolist() == list(range(14))
    assert type(kept[0].block_hashes.base).__name__ != "Arena"


@pytest.mark.parametrize("piece", [1, 2, 3, 8])
def test_a_null_names_its_row_in_any_piece(tmp_path, monkeypatch, piece):
    # row 6 (1-based) has a null output_tokens: named whatever the pieces
    monkeypatch.setattr(parquet, "PIECE_ROWS", piece)
    with pytest.raises(InputError) as err:
        list(open_trace(_write(tmp_path / "t.parquet", 8, nulls_at=5)).iter_batches(side_by_side=True))
    assert err.value.line == 6 and err.value.field == "output_tokens" and "null" in str(err.value)


def test_a_batch_is_checked_before_the_next_piece_is_read(tmp_path, monkeypatch):
    # pieces of 2 rows, batches of 2: row 2 arrives before row 1 (decreases), row 4 holds a null -- the batch of
    # rows 1-2 is checked, and its error raised, before the piece of rows 3-4 is read
    monkeypatch.setattr(parquet, "PIECE_ROWS", 2)
    monkeypatch.setattr(parquet.read_parquet, "__defaults__", ("raise", 2))
    t = pa.table({"arrival_s": pa.array([5.0, 3.0, 6.0, 7.0]), "prompt_tokens": pa.array([512] * 4, pa.int64()),
                  "output_tokens": pa.array([1, 1, 1, None], pa.int64()),
                  "block_hashes": pa.array([[1], [2], [3], [4]], pa.list_(pa.uint64()))})
    meta = {b"pcs.schema": SCHEMA_NAME.encode(), b"pcs.block_size": b"512", b"pcs.source_format": b"mooncake"}
    path = tmp_path / "t.parquet"
    pq.write_table(t.replace_schema_metadata(meta), path)
    with pytest.raises(InputError) as err:
        list(open_trace(str(path)).iter_batches(side_by_side=True))
    assert err.value.line == 2 and err.value.field == "arrival_s" and "decreases" in str(err.value)


@needs_twin
@pytest.mark.parametrize("n", [10, (4 << 20) // 8, (4 << 20) // 8 + 3])
def test_an_arena_on_huge_pages_holds_the_same_ids(n):
    # huge_pages=True: from 4 MB (524,288 ids) the buffer is 2 MB aligned and advised to use huge pages; below, as
    # without it. Either way: the ids appended, in order, the same room
    a = jsonrows.Arena(n, huge_pages=True)
    assert (a.capacity, a.used) == (n, 0)
    ids = np.arange(n - 2, dtype=np.uint64) | np.uint64(1 << 63)
    assert a.append(np.array([5, 6], dtype=np.uint64)) == 0 and a.append(ids) == 2
    assert a.append(np.array([1], dtype=np.uint64)) == -1 and a.used == n
    assert np.frombuffer(a, dtype=np.uint64).tolist() == [5, 6] + ids.tolist()
    if n * 8 >= 4 << 20:
        assert np.frombuffer(a, dtype=np.uint64).ctypes.data % (2 << 20) == 0


@needs_twin
@pytest.mark.parametrize("huge", [True, False])
def test_the_read_is_the_same_with_its_arena_on_huge_pages_or_not(tmp_path, monkeypatch, huge):
    # 10 rows of 3 ids, ids 0..29, whatever the arena's pages
    monkeypatch.setattr(parquet, "HUGE_ARENA", huge)
    made, real = [], jsonrows.Arena

    def spy(cap, huge_pages=False):
        made.append(huge_pages)
        return real(cap, huge_pages=huge_pages)

    monkeypatch.setattr(jsonrows, "Arena", spy)
    monkeypatch.setattr(parquet, "PIECE_ROWS", 2)
    kept = list(open_trace(_write(tmp_path / "t.parquet", 10, k=3)).iter_batches(side_by_side=True))
    assert [h for b in kept for h in b.block_hashes.tolist()] == list(range(30)) and made == [huge]


@needs_twin
def test_a_dead_huge_arenas_mapping_is_kept_for_the_next_one():
    # An arena of 4 MiB or more on huge pages (the Parquet reader's, _IdRoom) is a mapping (pcs/_kept.h): once it
    # dies its mapping is kept (its 600,000 ids: 4,800,000 B, 1,172 whole 4 KiB pages = 4,800,512 B) and the next
    # such arena of about its size takes it (the pool then empty), its ids read back as appended; a small arena
    # (malloc's) keeps nothing; kept_clear unmaps what is kept.
    jsonrows.kept_clear()
    a = jsonrows.Arena(600_000, huge_pages=True)
    assert a.append(np.arange(600_000, dtype=np.uint64)) == 0
    del a
    assert jsonrows.kept_bytes() == 4_800_512
    b = jsonrows.Arena(599_000, huge_pages=True)
    assert jsonrows.kept_bytes() == 0
    ids = np.arange(599_000, dtype=np.uint64)[::-1].copy()
    assert b.append(ids) == 0 and np.frombuffer(b, dtype=np.uint64)[:599_000].tolist() == ids.tolist()
    del b
    small = jsonrows.Arena(1_000, huge_pages=True)             # 8 KB: malloc's, nothing kept
    del small
    assert jsonrows.kept_bytes() == 4_800_512
    assert jsonrows.kept_clear() == 1 and jsonrows.kept_bytes() == 0
