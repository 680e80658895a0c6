"""pcs.trace.source.iter_chunks: the reused-buffer read (``reuse=True``) and newline counts sent back by a parser.

Hand-worked chunks of a small file read 4 bytes at a time (the reads decide where chunks end), and a reader's
error line after chunks whose lines the twin counted.
"""
from __future__ import annotations

import pytest

from pcs import _native
from pcs.errors import InputError
from pcs.trace import source
from pcs.trace.hashids import MOONCAKE, ReadState, read_hashid_jsonl

# BOM, a CRLF line, a line of 10 bytes (longer than a read), a last line without LF
DATA = b"\xef\xbb\xbf" + b"a\r\nbb\n" + b"c" * 10 + b"\n" + b"dd"
# reads of 4 bytes: BOM+"a" (BOM dropped, no LF) | "\r\nbb" -> "a\r\n" | "\nccc" -> "bb\n" | "cccc" | "ccc\n" ->
# 10 c's and LF | "dd" | end -> "dd"
CHUNKS = [(1, b"a\r\n"), (2, b"bb\n"), (3, b"c" * 10 + b"\n"), (4, b"dd")]


@pytest.mark.parametrize("reuse", [False, True])
def test_chunks_of_4_byte_reads(tmp_path, reuse):
    p = tmp_path / "t.jsonl"
    p.write_bytes(DATA)
    assert [(ln, bytes(c)) for ln, c in source.iter_chunks(p, chunk_bytes=4, reuse=reuse)] == CHUNKS


@pytest.mark.parametrize("reuse", [False, True])
def test_a_sent_count_is_used_instead_of_counting(tmp_path, reuse):
    # sending 10 after the first chunk: the second chunk's first line is 1 + 10, not 2 (nothing counted here)
    p = tmp_path / "t.jsonl"
    p.write_bytes(DATA)
    g = source.iter_chunks(p, chunk_bytes=4, reuse=reuse)
    assert next(g)[0] == 1
    assert g.send(10)[0] == 11
    assert g.send(None)[0] == 12   # None: counted here (one LF in "bb\n")
    g.close()


def test_a_line_over_the_limit_names_its_line_with_reuse(tmp_path, monkeypatch):
    # limit 5 bytes: line 3 (10 c's) is refused once more than 5 of its bytes are held
    monkeypatch.setattr(source, "MAX_LINE_BYTES", 5)
    p = tmp_path / "t.jsonl"
    p.write_bytes(DATA)
    with pytest.raises(InputError, match=r"t\.jsonl:3: line longer than"):
        list(source.iter_chunks(p, chunk_bytes=4, reuse=True))


@pytest.mark.skipif(not _native.built("jsonrows"), reason="pcs.trace._jsonrows is not built")
def test_error_line_after_chunks_the_twin_counted(tmp_path, monkeypatch):
    # 100-byte reads of rows padded to 100 bytes with their LF: each of the 5 good rows is a chunk the twin takes,
    # and sends back its count (one LF each); row 6's input_length -1 goes to the authority, which names line
    # 1 + 5 = 6. No chunk's newlines are counted by the chunk reader.
    counted = []
    real = source.count_newlines
    monkeypatch.setattr(source, "count_newlines", lambda data: counted.append(1) or real(data))
    monkeypatch.setattr(source, "CHUNK_BYTES", 100)
    rows = [b'{"timestamp": %d, "input_length": 512, "output_length": 1, "hash_ids": [%d]}' % (i, i) for i in range(5)]
    rows.append(b'{"timestamp": 9, "input_length": -1, "output_length": 1, "hash_ids": []}')
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"".join(r.ljust(99) + b"\n" for r in rows))
    got = []
    with pytest.raises(InputError, match=r"t\.jsonl:6: "):
        for b in read_hashid_jsonl(p, "t.jsonl", MOONCAKE, None, ReadState(), fast="native"):
            got.append(len(b))
    assert got == [1, 1, 1, 1, 1] and counted == []


@pytest.mark.parametrize("lo, hi, want", [
    (0, 10_000, 9_000),       # in the first window (the last 4,096 bytes: 5,904..9,999)
    (0, 13_096, 9_000),       # 9,000 is the first byte of the first window (9,000..13,095)
    (0, 13_097, 9_000),       # just before it: found in the second window (8,192 bytes, 809..9,000)
    (0, 30_000, 9_000),       # third window (after 4,096 + 8,192 bytes without LF)
    (9_001, 30_000, -1),      # the LF lies before lo: not searched
    (9_000, 9_001, 9_000),    # a one-byte range holding it
    (9_000, 9_000, -1),       # an empty range
    (0, 200, 100),            # the earlier LF, the later one lying at or past hi
])
def test_last_newline_searches_windows_back_from_hi(lo, hi, want):
    # LFs at 100 and 9,000 in 30,000 bytes of "x" (an uninitialised buffer's view, as the reused-buffer read has)
    import numpy as np
    buf = np.full(30_000, ord("x"), dtype=np.uint8)
    buf[[100, 9_000]] = 10
    assert source._last_newline(memoryview(buf), lo, hi) == want


@pytest.mark.parametrize("lazy", [False, True])
def test_iter_lines_by_hand(lazy):
    # the pieces between LFs, one CR at a line's end removed, no line after a last LF; lazy cuts one line at a time
    chunk = b"a\r\n\nb\r\r\n c\rd\n"
    assert list(source.iter_lines(7, chunk, lazy=lazy)) == [(7, b"a"), (8, b""), (9, b"b\r"), (10, b" c\rd")]
    assert list(source.iter_lines(1, b"x", lazy=lazy)) == [(1, b"x")]
    assert list(source.iter_lines(1, b"\n", lazy=lazy)) == [(1, b"")]
    assert list(source.iter_lines(1, b"", lazy=lazy)) == []


def test_lazy_lines_equal_the_split_on_random_chunks():
    import random

    rng = random.Random(29)
    pieces = [b"a", b"bc", b"\n", b"\r", b" ", b"\r\n", b"\n\n", b"\r\r"]
    for _ in range(5000):
        chunk = b"".join(rng.choice(pieces) for _ in range(rng.randrange(0, 25)))
        assert list(source.iter_lines(3, chunk, lazy=True)) == list(source.iter_lines(3, chunk)), chunk


def test_peek_lines_reads_the_first_non_blank_lines(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"\n  \r\n" + b"first\r\n" + b"x" * 70_000 + b"\nthird\n")   # the second line spans two reads
    assert source.peek_lines(p, 1) == [b"first"]
    assert source.peek_lines(p, 3) == [b"first", b"x" * 70_000, b"third"]
