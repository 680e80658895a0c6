"""Each JSONL chunk decoded on a thread of its own while the reader reads the next (``decode_ahead``).

``pcs.trace._jsonrows.decode_start`` (a C++ thread, no GIL) against ``decode``; the id arena while such a decode
fills it; the chunk reader that keeps a chunk until the second after it is asked for (``iter_chunks(keep=True)``);
the read buffers and arenas kept for the next reader (taken only when given back and nothing views them); and the
reader with ``decode_ahead`` against the one in line: the same batches, state, line numbers and errors.
"""
from __future__ import annotations

import gc

import numpy as np
import pytest

from pcs import _native
from pcs.errors import InputError
from pcs.trace import jsonfast, source
from pcs.trace.hashids import MOONCAKE, ReadState, read_hashid_jsonl

pytestmark = pytest.mark.skipif(not _native.built("jsonrows"), reason="pcs.trace._jsonrows is not built")

ROW = b'{"timestamp": %d, "input_length": %d, "output_length": 1, "hash_ids": [%s]}\n'
# two rows: ids 5, 6 then 7, 8, 9; timestamps 10 and 20 ms; prompts 1024 and 1536 tokens
TWO = ROW % (10, 1024, b"5, 6") + ROW % (20, 1536, b"7, 8, 9")


def _ext():
    return _native.module("jsonrows")


def _cols(got) -> tuple:
    """(ts, il, ol, offsets) of a decode's tuple as lists, and its ids field as it is (an index or a Column)."""
    ts, il, ol, off, ids = got[:5]
    return (np.frombuffer(ts, np.float64).tolist(), np.frombuffer(il, np.int64).tolist(),
            np.frombuffer(ol, np.int64).tolist(), np.frombuffer(off, np.int64).tolist()), ids


def test_decode_start_gives_decodes_result():
    ext = _ext()
    cols, ids = _cols(ext.decode_start(TWO, (), False).result())
    assert cols == ([10.0, 20.0], [1024, 1536], [1, 1], [0, 2, 5])
    assert np.frombuffer(ids, np.uint64).tolist() == [5, 6, 7, 8, 9]
    assert ext.decode_start(b'{"timestamp": 0, "timestamp": 0}\n', (), False).result() is None   # the authority's
    with pytest.raises(TypeError):
        ext.decode_start(TWO, (), False, object())


def test_a_decode_into_the_arena_keeps_it_busy_until_its_result():
    ext = _ext()
    arena = ext.Arena(200)         # room for a chunk of up to 396 bytes (an id per 2 bytes, + 2)
    first = ext.decode_start(TWO, (), False, arena)
    # while it fills the room past used = 0: no other taker (fits False, append -1, take False, decode its own)
    assert not arena.fits(10) and arena.append(np.array([1], np.uint64)) == -1 and not arena.take()
    other = ext.decode(TWO, (), False, arena)
    assert not isinstance(other[4], int) and arena.used == 0
    cols, at = _cols(first.result())
    assert at == 0 and arena.used == 5 and arena.fits(10)          # ids 0 .. 4 of the arena
    assert np.frombuffer(arena, np.uint64, count=5).tolist() == [5, 6, 7, 8, 9]
    with pytest.raises(RuntimeError, match="already taken"):
        first.result()
    # the next one goes after them; a dropped one (no result taken) waits for its thread and lets the arena go
    assert _cols(ext.decode_start(TWO, (), False, arena).result())[1] == 5 and arena.used == 10
    dropped = ext.decode_start(TWO, (), False, arena)
    del dropped
    gc.collect()
    assert arena.fits(10) and arena.used == 10 and arena.take() and arena.used == 0 and arena.leased == 1


# BOM, a CRLF line, a line of 10 bytes (longer than a read), a last line without LF (tests/trace/test_chunk_reads.py)
DATA = b"\xef\xbb\xbf" + b"a\r\nbb\n" + b"c" * 10 + b"\n" + b"dd"
CHUNKS = [(1, b"a\r\n"), (2, b"bb\n"), (3, b"c" * 10 + b"\n"), (4, b"dd")]


def test_keep_gives_the_same_chunks_each_valid_until_the_second_after_it(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(DATA)
    assert [(ln, bytes(c)) for ln, c in source.iter_chunks(p, chunk_bytes=4, reuse=True, keep=True)] == CHUNKS
    g = source.iter_chunks(p, chunk_bytes=4, reuse=True, keep=True)
    held = [next(g)[1]]
    for k in range(1, 4):
        held.append(g.send(None)[1])
        # chunk k - 1 unchanged once chunk k is read (the two buffers in turn)
        assert bytes(held[k - 1]) == CHUNKS[k - 1][1] and bytes(held[k]) == CHUNKS[k][1]
    g.close()


@pytest.fixture
def empty_pools():
    jsonfast.ARENAS.release()
    source.SPARES.release()
    yield
    jsonfast.ARENAS.release()
    source.SPARES.release()


def test_read_buffers_are_taken_again_only_when_given_back_and_no_view_is_alive(empty_pools):
    taken = []
    a = source._spare(64, taken)                       # a new ReadBuffer, leased
    assert taken == [a] and a.leased == 1 and source.SPARES.items() == []
    source.SPARES.keep(a)                              # given back, kept
    view = memoryview(a)[:4]                           # a chunk of it is alive
    assert source._spare(64, []) is not a and a.leased == 0 and a.exports == 1
    del view
    assert source._spare(32, []) is not a              # another size: a new one
    got = source._spare(64, [])
    assert got is a and a.leased == 1                  # given back, no view alive: taken
    assert source._spare(64, []) is not a              # leased, though nothing views it: not handed out twice
    ext = _ext()
    source.SPARES.keep(*(ext.ReadBuffer(n) for n in (1, 2, 3)))
    assert [b.nbytes for b in source.SPARES.items()] == [2, 3]   # the last two given back kept


def test_arenas_are_taken_again_only_when_given_back_and_no_batch_views_them(empty_pools):
    taken = []
    a = jsonfast.arena(taken)
    assert taken == [a] and a.leased == 1
    a.append(np.array([1, 2], np.uint64))
    jsonfast.ARENAS.keep(a)
    ids = np.frombuffer(a, np.uint64, count=2)          # a batch's ids view it
    b = jsonfast.arena()
    assert b is not a and a.exports == 1 and ids.tolist() == [1, 2]
    del ids
    c = jsonfast.arena()                                # given back, nothing views it: taken, emptied
    assert c is a and c.used == 0 and c.leased == 1
    assert jsonfast.arena() is not a                    # leased (nothing views it): not handed out twice
    jsonfast.ARENAS.keep(b)
    assert jsonfast.ARENAS.items() == [b]               # one kept: the last given back


def _rows(n: int, bad: int | None = None) -> bytes:
    """n Mooncake rows of 100 bytes with their LF (row i: timestamp i ms, ids 3i .. 3i + 2); row ``bad``'s
    input_length a string (the authority's error)."""
    out = []
    for i in range(n):
        il = b'"x"' if i == bad else b"1536"
        row = b'{"timestamp": %d, "input_length": %s, "output_length": 1, "hash_ids": [%d, %d, %d]}' % (
            i, il, 3 * i, 3 * i + 1, 3 * i + 2)
        out.append(row.ljust(99) + b"\n")
    return b"".join(out)


def _read(path, ahead: bool, fast=True) -> tuple:
    state = ReadState()
    got = [b for b in read_hashid_jsonl(path, "t.jsonl", MOONCAKE, None, state, fast=fast, side_by_side=True,
                                        decode_ahead=ahead)]
    return got, state


@pytest.mark.parametrize("rows, sizes", [(1, [1]), (2, [2]), (3, [2, 1]), (7, [2, 3, 2])])
def test_read_ahead_gives_the_batches_of_the_read_in_line(tmp_path, monkeypatch, rows, sizes):
    # 250-byte reads of 100-byte rows: rows 1-2 (50 bytes held), 50 + 250 bytes: rows 3-5, then rows 6-7; decoded
    # ahead or in line
    monkeypatch.setattr(source, "CHUNK_BYTES", 250)
    p = tmp_path / "t.jsonl"
    p.write_bytes(_rows(rows))
    starts: list = []
    real = jsonfast._start
    monkeypatch.setattr(jsonfast, "_start", lambda *a: starts.append(1) or real(*a))
    (inline, s1), (ahead, s2) = _read(p, False), _read(p, True)
    assert len(starts) == len(sizes) and [len(b) for b in ahead] == [len(b) for b in inline] == sizes
    for a, b in zip(inline, ahead):
        assert a.block_hashes.tolist() == b.block_hashes.tolist() and a.arrival_s.tolist() == b.arrival_s.tolist()
        assert a.block_offsets.tolist() == b.block_offsets.tolist()
    assert np.concatenate([b.block_hashes for b in ahead]).tolist() == list(range(3 * rows))
    assert s1.last_ts == s2.last_ts == rows - 1


@pytest.mark.parametrize("bad", [0, 3, 6])
def test_a_bad_row_read_ahead_is_named_as_in_line(tmp_path, monkeypatch, bad):
    # row bad + 1 (1-based line) goes to the authority, which names it: the same error, file, line and field
    monkeypatch.setattr(source, "CHUNK_BYTES", 250)
    p = tmp_path / "t.jsonl"
    p.write_bytes(_rows(7, bad))
    errors = []
    for ahead in (False, True):
        with pytest.raises(InputError) as err:
            _read(p, ahead)
        errors.append(str(err.value))
    assert errors[0] == errors[1] and f"t.jsonl:{bad + 1}:" in errors[0] and "input_length" in errors[0]


def test_a_read_error_comes_after_the_chunk_before_it(tmp_path, monkeypatch):
    # rows 1-4 good (two chunks), then a line longer than the limit (150 bytes): in line and ahead, the first two
    # chunks' batches are handed on before the error names line 5
    monkeypatch.setattr(source, "CHUNK_BYTES", 250)
    monkeypatch.setattr(source, "MAX_LINE_BYTES", 150)
    p = tmp_path / "t.jsonl"
    p.write_bytes(_rows(4) + b"{" + b" " * 400 + b"\n")
    for ahead in (False, True):
        got = []
        with pytest.raises(InputError, match=r"t\.jsonl:5: line longer than"):
            for b in read_hashid_jsonl(p, "t.jsonl", MOONCAKE, None, ReadState(), side_by_side=True,
                                       decode_ahead=ahead):
                got.append(len(b))
        assert got == [2, 2]


def test_the_mooncake_trace_read_ahead(mooncake_conv):
    (inline, s1), (ahead, s2) = _read(mooncake_conv, False), _read(mooncake_conv, True)
    assert len(inline) == len(ahead) > 1
    for a, b in zip(inline, ahead):
        for f in ("arrival_s", "prompt_tokens", "output_tokens", "block_offsets", "block_hashes"):
            assert np.array_equal(getattr(a, f), getattr(b, f)), f
    assert s1.last_ts == s2.last_ts


@pytest.mark.parametrize("data, want", [(b"", 0), (b"\n", 1), (b"a\nb", 1), (b"\n\n\n", 3), (b"a\r\nb\r\n", 2),
                                        (b"x" * 100 + b"\n", 1), (b"\n" + b"y" * 100, 1)])
def test_count_lf_counts_newlines(data, want):
    # the twin's count (memchr from one to the next) by hand, from bytes and from a view of a numpy buffer
    count_lf = _ext().count_lf
    assert count_lf(data) == want == source.count_newlines(data)
    assert count_lf(memoryview(np.frombuffer(data, np.uint8))) == want


def test_count_lf_on_random_bytes():
    rng = np.random.default_rng(7)
    for n in (1, 31, 32, 33, 4095, 4096, 70000):
        data = rng.choice(np.array([10, 97, 13, 0, 255], np.uint8), n).tobytes()
        assert _ext().count_lf(data) == data.count(b"\n")
