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

    def counted(spec, cols, bs, state):
        batch = real(spec, cols, bs, state)
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
