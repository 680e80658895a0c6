"""The compiled JSONL decoder ``pcs.trace._jsonrows`` (C++ on simdjson) against the line-by-line authority.

tests/trace/test_jsonl_fast.py diffs every shortcut (this one included) against
``json.loads`` line by line on the committed samples, hypothesis rows and hostile
lines; here: the real Mooncake trace read whole, the columns of hand-written rows,
and that a clean chunk really is taken by the twin (not silently left to the authority).
"""
from __future__ import annotations

import numpy as np
import pytest

from pcs import _native
from pcs.trace import jsonfast
from pcs.trace.hashids import BAILIAN, MOONCAKE, ReadState, read_hashid_jsonl

pytestmark = pytest.mark.skipif(not _native.built("jsonrows"), reason="pcs.trace._jsonrows is not built")

COLUMNS = ("arrival_s", "prompt_tokens", "output_tokens", "block_offsets", "block_hashes", "session_id",
           "parent_id", "turn")


def _same(a, b) -> None:
    for f in COLUMNS:
        x, y = getattr(a, f), getattr(b, f)
        assert (x is None) == (y is None), f
        if x is not None:
            assert x.dtype == y.dtype and np.array_equal(x, y), f
    assert a.type == b.type


def test_mooncake_trace_reads_the_same_and_every_chunk_is_taken(mooncake_conv, monkeypatch):
    want_state, got_state = ReadState(), ReadState()
    want = list(read_hashid_jsonl(mooncake_conv, "m", MOONCAKE, None, want_state, fast=False))
    fallbacks = []
    real = jsonfast.native_checked

    def counted(spec, cols, bs, state, *arena):
        batch = real(spec, cols, bs, state, *arena)
        fallbacks.append(batch is None)
        return batch

    monkeypatch.setattr(jsonfast, "native_checked", counted)
    got = list(read_hashid_jsonl(mooncake_conv, "m", MOONCAKE, None, got_state, fast="native"))
    assert len(got) == len(want) and fallbacks and not any(fallbacks)  # the whole trace is clean JSONL
    for a, b in zip(want, got):
        _same(a, b)
    assert (got_state.last_ts, got_state.synthetic_rows) == (want_state.last_ts, want_state.synthetic_rows)


def test_hand_rows_give_hand_columns():
    # Bailian rows at 16-token blocks: ceil(20 / 16) = 2 ids, ceil(16 / 16) = 1, ceil(0 / 16) = 0.
    # timestamps in seconds (ts_per_s 1): 1.5, 2 (an int), 2.25e0; the one "synthetic" row is counted once.
    chunk = (b'{"timestamp": 1.5, "input_length": 20, "output_length": 3, "hash_ids": [18446744073709551615, 0],'
             b' "chat_id": -9223372036854775808, "parent_chat_id": -1, "turn": 1, "type": "text"}\n'
             b'{"turn": 2, "hash_ids": [7], "parent_chat_id": 4, "chat_id": 5, "output_length": 0,'
             b' "input_length": 16, "timestamp": 2, "reuse": "synthetic", "type": null}\r\n'
             b'{"timestamp": 2.25e0, "input_length": 0, "output_length": 1, "hash_ids": [], "chat_id": 6,'
             b' "parent_chat_id": 5, "turn": 3, "reuse": "recorded"}')
    state = ReadState()
    b = jsonfast.native_chunk(BAILIAN, chunk, 16, state)
    assert b is not None
    assert b.arrival_s.tolist() == [1.5, 2.0, 2.25] and b.prompt_tokens.tolist() == [20, 16, 0]
    assert b.output_tokens.tolist() == [3, 0, 1] and b.block_offsets.tolist() == [0, 2, 3, 3]
    assert b.block_hashes.dtype == np.uint64 and b.block_hashes.tolist() == [2**64 - 1, 0, 7]
    assert b.session_id.tolist() == [-2**63, 5, 6] and b.parent_id.tolist() == [-1, 4, 5]
    assert b.turn.tolist() == [1, 2, 3] and b.type == ("text", None, None)
    assert state.synthetic_rows == 1 and state.last_ts == 2.25


@pytest.mark.parametrize("line", [
    b'{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [1], "x": 1}',  # unknown key
    b'{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [1], "type": "t"}',  # Mooncake: no type
    b'{"timestamp": 1, "input_length": 1, "output_length": 1}',  # missing key
    b'{"timestamp": 1, "input_length": 1.0, "output_length": 1, "hash_ids": [1]}',
    b'{"timestamp": true, "input_length": 1, "output_length": 1, "hash_ids": [1]}',
    b' {"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [1]}',
    b'',
])
def test_lines_the_twin_leaves_to_the_authority(line):
    # Each makes the whole two-line chunk return None (the authority then accepts or names the line).
    good = b'{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [0]}\n'
    assert _native.module("jsonrows").decode(good + line + b"\n", (), False) is None
    assert _native.module("jsonrows").decode(good, (), False) is not None


_BAILIAN_ROW = (b'{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [1], "chat_id": 1, '
                b'"parent_chat_id": -1, "turn": 1, "type": %s}\n')


@pytest.mark.parametrize("typ", [b"nul", b"nulll", b"tru", b"3", b'["text"]', b'"\\ud800"', b'"text" "x"'])
def test_type_values_the_twin_leaves_to_the_authority(typ):
    # a misspelt null, a number, a list, a lone surrogate (json.loads keeps one, UTF-8 cannot), two values
    ext = _native.module("jsonrows")
    keys = (b"chat_id", b"parent_chat_id", b"turn")
    assert ext.decode(_BAILIAN_ROW % b'"text"' + _BAILIAN_ROW % typ, keys, True) is None
    assert ext.decode(_BAILIAN_ROW % b'"text"', keys, True) is not None


def test_type_strings_are_unescaped():
    # "te\u0078t" is "text" for json.loads (\u0078 = "x"); "\u00e9" is U+00E9; null is None
    b = jsonfast.native_chunk(BAILIAN, _BAILIAN_ROW % b'"te\\u0078t"' + _BAILIAN_ROW % b'"\\u00e9"'
                              + _BAILIAN_ROW % b"null", 1, ReadState())
    assert b.type == ("text", "\u00e9", None)


def test_bad_arguments_are_type_errors():
    ext = _native.module("jsonrows")
    with pytest.raises(TypeError):
        ext.decode(b"{}", ("chat_id",), False)  # str keys: must be bytes
    with pytest.raises(TypeError):
        ext.decode(b"{}", tuple(b"k%d" % i for i in range(9)), False)  # at most 8 extras


@pytest.mark.parametrize("rows, increasing", [
    ([[1, 2, 3], [4]], True),         # each row strictly increasing
    ([[5], [1, 2]], True),            # a row boundary may go down: rows are checked one by one
    ([[1, 3, 3]], False),             # a repeat within a row
    ([[2, 1]], False),                # a decrease within a row (distinct, but not the shortcut: the caller sorts)
    ([[]], True),
])
def test_increasing_flag(rows, increasing):
    # the last field: every row's ids strictly increase (jsonfast.rows_distinct's shortcut, read off the parse)
    chunk = b"".join(b'{"timestamp": 0, "input_length": %d, "output_length": 1, "hash_ids": [%s]}\n'
                     % (len(r), b", ".join(b"%d" % i for i in r)) for r in rows)
    assert _native.module("jsonrows").decode(chunk, (), False)[-1] is increasing


def test_repeat_within_a_row_still_goes_to_the_authority():
    # [1, 3, 3]: the flag is False, so the vectorised rows_distinct check runs and sends the chunk back (None)
    chunk = b'{"timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": [1, 3, 3]}\n'
    assert jsonfast.native_chunk(MOONCAKE, chunk, 1, ReadState()) is None


# -- the fast lane (rows read byte by byte, ids 8 bytes at a time) and simdjson's per-line fallback --------------
def _cols(chunk: bytes):
    """(arrival_s, prompt, output, offsets, ids) of a Mooncake chunk at 1-token blocks, or None."""
    b = jsonfast.native_chunk(MOONCAKE, chunk, 1, ReadState())
    if b is None:
        return None
    return (b.arrival_s.tolist(), b.prompt_tokens.tolist(), b.output_tokens.tolist(), b.block_offsets.tolist(),
            b.block_hashes.tolist())


def test_ids_of_every_length_and_at_the_chunk_end():
    # ids of 1 to 8 digits (the 8-byte read takes 1-7 digits and a separator; 8+ digits go one at a time), the
    # largest id 2**64 - 1 (20 digits: simdjson's, the lane takes 19), and a last line without LF ending
    # within 8 bytes of the chunk's end (the byte-at-a-time read). Mooncake ms: 1500 -> 1.5 s, 3000 -> 3.0 s.
    chunk = (b'{"timestamp": 1500, "input_length": 9, "output_length": 2, "hash_ids": '
             b'[0, 7, 42, 123, 4096, 65536, 1234567, 12345678, 1234567890123456789]}\n'
             b'{"timestamp": 1500, "input_length": 1, "output_length": 0, "hash_ids": [18446744073709551615]}\n'
             b'{"timestamp": 3000, "input_length": 2, "output_length": 1, "hash_ids": [5, 99]}')
    assert _cols(chunk) == ([1.5, 1.5, 3.0], [9, 1, 2], [2, 0, 1], [0, 9, 10, 12],
                            [0, 7, 42, 123, 4096, 65536, 1234567, 12345678, 1234567890123456789,
                             18446744073709551615, 5, 99])


def test_whitespace_and_key_order_the_lane_reads():
    # spaces, tabs and CRs between any tokens, no space at all, keys in any order, a CRLF line end
    chunk = (b'{ "hash_ids" :[ 3 ,4\t,\r5 ] ,"output_length":7,"input_length":3 , "timestamp":\t-250 }\r\n'
             b'{"timestamp":0,"input_length":0,"output_length":0,"hash_ids":[]}\n')
    assert _cols(chunk) == ([-0.25, 0.0], [3, 0], [7, 0], [0, 3, 3], [3, 4, 5])


def test_lane_and_simdjson_rows_mix_in_one_chunk():
    # row 2's key is written with an escape ("time\u0073tamp" = "timestamp") and row 3's timestamp has 17
    # digits: both beyond the lane, read by simdjson; rows 1 and 4 by the lane; one batch, in order
    chunk = (b'{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [10]}\n'
             b'{"time\\u0073tamp": 2, "input_length": 1, "output_length": 1, "hash_ids": [20]}\n'
             b'{"timestamp": 10000000000000000, "input_length": 1, "output_length": 1, "hash_ids": [30]}\n'
             b'{"timestamp": 10000000000000001, "input_length": 2, "output_length": 1, "hash_ids": [40, 41]}\n')
    # 1e16 ms = 1e13 s > 2**32 s: the arrival rule sends the chunk to the authority; so only the first two here
    head = b"\n".join(chunk.split(b"\n")[:2]) + b"\n"
    assert _cols(head) == ([0.001, 0.002], [1, 1], [1, 1], [0, 1, 2], [10, 20])
    cols = _native.module("jsonrows").decode(chunk, (), False)
    assert np.frombuffer(cols[0], dtype=np.float64).tolist() == [1.0, 2.0, 1e16, 10000000000000001.0]
    assert np.frombuffer(cols[4], dtype=np.uint64).tolist() == [10, 20, 30, 40, 41]


def test_float_timestamps_match_the_authority():
    # fractions and exponents (std::from_chars in the lane, correctly rounded like json.loads): 0.1 ms is
    # float("0.1") / 1000; 2.5e3 ms = 2.5 s; 1E-3 ms = 1e-6 s (in arrival order)
    rows = [b"1E-3", b"0.1", b"123.456", b"2.5e3"]
    chunk = b"".join(b'{"timestamp": %s, "input_length": 0, "output_length": 0, "hash_ids": []}\n' % r for r in rows)
    assert _cols(chunk)[0] == [1e-3 / 1000, 0.1 / 1000, 123.456 / 1000, 2.5]


@pytest.mark.parametrize("ids", [b"[-0]", b"[01]", b"[1,]", b"[1 2]", b"[1.0]", b"[1e2]", b"[18446744073709551616]",
                                 b"[[1]]", b'["1"]', b"[1", b"[0x1]"])
def test_ids_the_lane_and_simdjson_both_refuse(ids):
    # refused by both readers of the twin, so the chunk goes to the authority (None)
    line = b'{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": %s}\n' % ids
    assert _native.module("jsonrows").decode(line, (), False) is None


@pytest.mark.parametrize("line", [
    b'{"timestamp": 0, "input_length": 07, "output_length": 1, "hash_ids": [1]}',   # a leading zero
    b'{"timestamp": -0, "input_length": 1, "output_length": 1, "hash_ids": [1]}\n{}',
    b'{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1,\n2]}',  # a row cut by an LF
    b'{"times\ntamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1]}',   # a key cut by an LF
    b'{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1]} x',   # a second value
])
def test_rows_the_twin_refuses(line):
    assert _native.module("jsonrows").decode(line + b"\n", (), False) is None


def test_columns_are_read_only_views_of_the_twins_buffers():
    # no bytes copy: the arrays view the twin's own buffers, read-only as bytes were
    b = jsonfast.native_chunk(MOONCAKE, b'{"timestamp": 0, "input_length": 2, "output_length": 1, "hash_ids": [1, 2]}\n',
                              1, ReadState())
    assert not b.block_hashes.flags.writeable and not b.block_offsets.flags.writeable
    assert type(b.block_hashes.base).__name__ == "Column"


def test_dense_ids_grow_the_buffers():
    # ids written "0,1,2,..." (2-4 bytes each) outnumber the reservation (a chunk's bytes / 8), so the id buffer
    # grows while the lane reads: 3 rows of 0..999, 0..1999 step 2, and 5 ids; 1000 + 1000 + 5 ids in order
    rows = [list(range(1000)), list(range(0, 2000, 2)), [1, 2, 3, 4, 5]]
    chunk = b"".join(b'{"timestamp":0,"input_length":%d,"output_length":0,"hash_ids":[%s]}\n'
                     % (len(r), b",".join(b"%d" % i for i in r)) for r in rows)
    got = _cols(chunk)
    assert got[3] == [0, 1000, 2000, 2005] and got[4] == rows[0] + rows[1] + rows[2]


def test_id_runs_meet_every_separator_and_the_chunk_end():
    # Row 1 in the writer's layout: ", " (the run), "," and " ," (the general separator), two spaces before an id,
    # an id of 7 digits (its ", " straddles the 8-byte read), 8 digits (general), a space before "]"; it goes down
    # (10000000 then 1234567), so the flag is False. Row 2: a space after "}" (not the writer's layout: read field by
    # field). Row 3 ends the chunk without LF, its last id within 16 bytes of the end (read the general way).
    ext = _native.module("jsonrows")
    chunk = (b'{"timestamp": 1000, "input_length": 7, "output_length": 1, '
             b'"hash_ids": [0, 5,6 ,  7, 9999999, 10000000, 1234567 ]}\n'
             b'{"timestamp": 1500, "input_length": 1, "output_length": 2, "hash_ids": [3]} \n'
             b'{"timestamp": 2000, "input_length": 2, "output_length": 0, "hash_ids": [1000000, 1000001]}')
    ts, il, ol, off, ids, _, _, synthetic, increasing = ext.decode(chunk, (), False)
    assert np.frombuffer(ts, dtype=np.float64).tolist() == [1000.0, 1500.0, 2000.0]
    assert np.frombuffer(il, dtype=np.int64).tolist() == [7, 1, 2]
    assert np.frombuffer(ol, dtype=np.int64).tolist() == [1, 2, 0]
    assert np.frombuffer(off, dtype=np.int64).tolist() == [0, 7, 8, 10]
    assert np.frombuffer(ids, dtype=np.uint64).tolist() == [0, 5, 6, 7, 9999999, 10000000, 1234567, 3, 1000000,
                                                            1000001]
    assert synthetic == 0 and increasing is False


def test_id_run_grows_the_buffer():
    # 3000 ids written "0, 1, 2, ..." (~5.9 bytes each) outnumber the reservation (the chunk's bytes / 8 + 16,
    # about 2,200), so the run stops at the buffer's end, the buffer grows and the run goes on: ids 0..2999 in order
    row = b", ".join(b"%d" % i for i in range(3000))
    chunk = b'{"timestamp": 0, "input_length": 3000, "output_length": 0, "hash_ids": [%s]}\n' % row
    got = _cols(chunk)
    assert got[3] == [0, 3000] and got[4] == list(range(3000))


# -- successors (an id that is the previous + 1 in as many digits, compared as text) and the id arena -------------
@pytest.mark.parametrize("ids", [
    [7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21],        # 9 -> 10 (a new length), 19 -> 20 (a decade)
    [98, 99, 100, 101, 198, 199, 200, 999, 1000],                       # 99 -> 100, 199 -> 200 (two digits carry)
    [999998, 999999, 1000000, 1000001, 1000009, 1000010, 1000011],     # 6 -> 7 digits, then a decade in 7 digits
    [1827860, 1827861, 1827862, 1827863, 9999998, 9999999, 10000000, 10000001],  # 7 digits, then 8 (general)
    [5, 60, 61, 7, 8],                      # "60" starts with the successor's text "6": read as 60, not 6
    [0, 1, 2, 3],                           # from 0
    list(range(1827850, 1827951)),          # 7 digits two at a time, across ten decades and 1827899 -> 1827900
    list(range(123450, 123521)),            # 6 digits (8 bytes an id with ", "): pairs fill the 16 bytes compared
    list(range(20, 131)),                   # 2 then 3 digits (pairs of 8 and 10 bytes)
    [1827860, 1827861, 1827862, 1827864, 1827865, 1827866, 1827867],   # a pair's second id not the successor
    [123450, 123451, 123452, 123440, 123441, 123442],                   # a pair's second id goes down
])
def test_successor_runs_read_the_written_ids(ids):
    # every id in the writer's layout (", " between ids), several decades and length changes on the way; the
    # row is the written list, whichever way each id is read. Padded with a second row so that no id is in the
    # chunk's last 16 bytes (the run's reads)
    row = b", ".join(b"%d" % i for i in ids)
    chunk = (b'{"timestamp": 0, "input_length": %d, "output_length": 1, "hash_ids": [%s]}\n' % (len(ids), row)
             + b'{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [123456789]}\n')
    got = _cols(chunk)
    assert got is not None and got[4] == ids + [123456789] and got[3] == [0, len(ids), len(ids) + 1]


@pytest.mark.parametrize("ids", [b"[18, 1:, 20]", b"[18, 19, 2:]", b"[5, 6x, 7]", b"[5, 6, 7x]", b"[5, 6, 07]",
                                 b"[1234567, 1234568,]", b"[1234567, 1234568 8]", b"[1, 2, 3\x00, 4]",
                                 b"[1827860, 1827861, 1827862, 1827863 , 1827864x]",
                                 b"[1827860, 1827861, 1827862, 1827863,, 1827864]",
                                 b"[123450, 123451, 123452, 123453, 12345:, 123455]"])
def test_text_near_a_successor_is_refused(ids):
    # ':' is the byte after '9' (a successor's last digit + 1 past 9 must not match it), a letter or NUL after the
    # successor's digits, a leading zero, a separator that is no JSON: the whole chunk goes to the authority
    line = b'{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": %s}\n' % ids
    assert _native.module("jsonrows").decode(line + line, (), False) is None


def test_arena_holds_consecutive_chunks_side_by_side():
    from pcs.trace.request import concat_batches

    ext = _native.module("jsonrows")
    one = b'{"timestamp": 0, "input_length": 2, "output_length": 1, "hash_ids": [5, 6]}\n'          # 76 bytes
    two = b'{"timestamp": 1, "input_length": 3, "output_length": 1, "hash_ids": [7, 8, 9]}\n'       # 79 bytes
    # a chunk of n bytes asks for n // 2 + 2 ids of room (an id takes a digit and a separator, but a row's last)
    arena = ext.Arena(80)
    assert arena.capacity == 80 and arena.used == 0
    assert arena.fits(76) and arena.fits(156) and not arena.fits(158)      # 40, 80 <= 80; 81 > 80
    state = ReadState()
    a = jsonfast.native_chunk(MOONCAKE, one, 1, state, arena)
    assert arena.used == 2 and arena.fits(152) and not arena.fits(154)     # 78 left: 78 <= 78; 79 > 78
    # a refused chunk (a repeated key) takes no room
    assert ext.decode(b'{"timestamp": 0, "timestamp": 0}\n', (), False, arena) is None and arena.used == 2
    b = jsonfast.native_chunk(MOONCAKE, two, 1, state, arena)
    assert arena.used == 5 and a.block_hashes.tolist() == [5, 6] and b.block_hashes.tolist() == [7, 8, 9]
    joined = concat_batches([a, b])
    # a view of the arena's ids 0..4, not a copy; read-only like the chunks' own columns
    assert joined.block_hashes.tolist() == [5, 6, 7, 8, 9] and joined.block_offsets.tolist() == [0, 2, 5]
    assert np.shares_memory(joined.block_hashes, a.block_hashes) and not joined.block_hashes.flags.writeable
    # 75 ids left; a chunk of 161 bytes (row one with 85 spaces before its LF) asks for 82: its ids get a buffer of
    # their own, and the arena is left as it was
    big = one[:-1] + b" " * 85 + b"\n"
    cols = ext.decode(big, (), False, arena)
    assert not isinstance(cols[4], int) and np.frombuffer(cols[4], dtype=np.uint64).tolist() == [5, 6]
    assert arena.used == 5


def test_concat_copies_arrays_that_are_not_side_by_side():
    from pcs.trace.request import RequestBatch, concat_batches

    def batch(ids):
        n = len(ids)
        return RequestBatch(0, 1, np.zeros(1), np.array([n]), np.array([0]), np.array([0, n]), ids)

    ext = _native.module("jsonrows")
    row = b'{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [%d]}\n'
    first, second = ext.Arena(100), ext.Arena(100)
    a = jsonfast.native_chunk(MOONCAKE, row % 1, 1, ReadState(), first)
    b = jsonfast.native_chunk(MOONCAKE, row % 2, 1, ReadState(), second)      # another arena
    c = jsonfast.native_chunk(MOONCAKE, row % 3, 1, ReadState(), first)       # first's ids 1, after a's
    for parts, want in (([a, b], [1, 2]), ([c, a], [3, 1]),                   # another arena; out of order
                        ([a, batch(np.array([4], dtype=np.uint64))], [1, 4])):   # a writable array
        joined = concat_batches(parts).block_hashes
        assert joined.tolist() == want and not np.shares_memory(joined, a.block_hashes)
    assert np.shares_memory(concat_batches([a, c]).block_hashes, c.block_hashes)


def test_a_caller_that_keeps_the_batches_gets_their_ids_side_by_side(tmp_path, monkeypatch):
    # 300 rows of 4 ids in 4 KiB chunks: the decode pass of a replay (Decoded) asks for side by side, so every
    # chunk's ids are views of one arena and its joined batch (all 300 rows: fewer than 65,536) views it too; a
    # plain read (trace stats, one batch at a time) gets each chunk's ids in a buffer of its own
    from pcs.engine.decoded import Decoded
    from pcs.trace import open_trace, source

    monkeypatch.setattr(source, "CHUNK_BYTES", 1 << 12)
    rows = [b'{"timestamp": %d, "input_length": 2048, "output_length": 1, "hash_ids": [%d, %d, %d, %d]}\n'
            % (i, 4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3) for i in range(300)]
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(rows))
    plain = list(open_trace(str(path)).iter_batches())
    assert len(plain) > 1 and all(type(b.block_hashes.base).__name__ == "Column" for b in plain)
    d = Decoded(str(path))
    assert len(d.batches) == 1 and d.batches[0].block_hashes.tolist() == list(range(1200))
    h = d.batches[0].block_hashes
    # a view of the arena itself (a join of joins too), through the memoryview numpy keeps to hold its export
    assert not h.flags.owndata and type(h.base.obj).__name__ == "Arena" and h.base.obj.exports >= 1


# -- the writer's row in one pass (canon_row) and jumps read within a run of one length -----------------------------
_PAD = b'{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [123456789]}\n'   # > 96 bytes to the end


def _raw(chunk: bytes):
    """(ts, il, ol, offsets, ids, increasing) of the twin's decode of ``chunk`` (Mooncake keys), or None."""
    got = _native.module("jsonrows").decode(chunk, (), False)
    if got is None:
        return None
    ts, il, ol, off, ids, _, _, _, increasing = got
    return (np.frombuffer(ts, dtype=np.float64).tolist(), np.frombuffer(il, dtype=np.int64).tolist(),
            np.frombuffer(ol, dtype=np.int64).tolist(), np.frombuffer(off, dtype=np.int64).tolist(),
            np.frombuffer(ids, dtype=np.uint64).tolist(), increasing)


@pytest.mark.parametrize("ts, il, ol, want", [
    (b"12345678", b"0", b"7", (12345678.0, 0, 7)),          # 8 digits: the one-load read's longest, the 9th byte ','
    (b"0", b"1", b"99999999", (0.0, 1, 99999999)),          # "0" and an 8-digit length
    (b"123456789", b"5", b"6", (123456789.0, 5, 6)),        # 9 digits: the field readers' (the same value)
    (b"12345678.5", b"5", b"6", (12345678.5, 5, 6)),        # a fraction after 8 digits: the field readers'
    (b"1e3", b"10", b"6", (1000.0, 10, 6)),                 # an exponent after 1 digit
    (b"7", b"-3", b"6", (7.0, -3, 6)),                      # a sign: the field readers' (the caller's checks refuse)
    (b"7", b"123456789012345678", b"6", (7.0, 123456789012345678, 6)),   # 18 digits
])
def test_writer_rows_give_hand_columns(ts, il, ol, want):
    # a row in the writer's layout, values of 1 to 18 digits, followed by a row that puts its end more than 96 bytes
    # from the chunk's end (the one-pass read's reach); the columns are the written values whichever reader takes them
    row = b'{"timestamp": %s, "input_length": %s, "output_length": %s, "hash_ids": [4, 5, 6]}\n' % (ts, il, ol)
    got = _raw(row + _PAD)
    assert got == ([want[0], 0.0], [want[1], 1], [want[2], 1], [0, 3, 4], [4, 5, 6, 123456789], True)


@pytest.mark.parametrize("ts, il", [(b"01234567", b"1"), (b"00", b"1"), (b"5", b"012"), (b"5", b"01234567"),
                                    (b"5", b"1:"), (b"123456789:", b"1")])
def test_writer_rows_the_twin_refuses(ts, il):
    # leading zeros (of 2 and 8 digits), a byte after the digits that is no JSON: the authority's
    row = b'{"timestamp": %s, "input_length": %s, "output_length": 1, "hash_ids": [4]}\n' % (ts, il)
    assert _raw(row + _PAD) is None


@pytest.mark.parametrize("ids, increasing", [
    ([731160, 768396, 768397, 768398, 731161, 731162], False),   # jumps of 6 digits, one down: not increasing
    ([731160, 768396, 768397, 768398, 800000, 800001], True),            # jumps of 6 digits, each up
    ([500, 768409, 768410, 768411, 768419, 768420], True),               # a jump to a last digit 9, its successor carries
    ([1000000, 2000009, 2000010, 3000000, 3000001, 3000002], True),      # 7 digits (", " past the 8 bytes read)
    ([123456, 123457, 1234567, 1234568, 12345, 12346], False),           # jumps to another length: read by id_run
    ([11, 12, 15, 16, 99, 100, 13], False),                              # 2 digits, 99 -> 100, then down to 2 digits
    ([123456, 123457, 222222], True),                                    # the row's last id a jump (then ']')
    ([123456, 123456], False),                                           # a repeat: the flag is False
])
def test_jumps_within_a_run_give_the_written_ids(ids, increasing):
    # ids in the writer's layout; a jump to an id of the same length is read in the run, one of another length
    # by id_run, both giving the written value; the flag is False exactly when an id is not above the one before it
    row = b", ".join(b"%d" % i for i in ids)
    chunk = b'{"timestamp": 0, "input_length": %d, "output_length": 1, "hash_ids": [%s]}\n' % (len(ids), row) + _PAD
    got = _raw(chunk)
    assert got is not None and got[4] == ids + [123456789] and got[3] == [0, len(ids), len(ids) + 1]
    assert got[5] is increasing


@pytest.mark.parametrize("ids", [b"[768396, 768397, 731160x, 1]", b"[768396, 768397, 0731160, 1]",
                                 b"[768396, 768397, 731160,, 1]", b"[1000000, 2000009, 2000010 , 3000000]",
                                 b"[1000000, 2000009, 200001:, 3000000]", b"[768396, 768397, 73116:, 1]"])
def test_text_near_a_jump_is_refused(ids):
    # a jump of the run's length followed by a letter, with a leading zero, an empty element, a ':' that only looks
    # like a digit: the authority's (json.loads refuses each); " ," is JSON but not the run's (read the general way)
    line = b'{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": %s}\n' % ids
    got = _native.module("jsonrows").decode(line + _PAD, (), False)
    if ids == b"[1000000, 2000009, 2000010 , 3000000]":
        assert got is not None and np.frombuffer(got[4], dtype=np.uint64).tolist()[:4] == [1000000, 2000009,
                                                                                           2000010, 3000000]
    else:
        assert got is None
