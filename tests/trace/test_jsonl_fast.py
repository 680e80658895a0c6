"""The JSONL shortcut parsers (the compiled simdjson twin, pysimdjson, pyarrow.json) against the line-by-line authority.

The authority (``fast=False``: ``json.loads`` per line) decides what a line
means; a shortcut may only reproduce it. So for every committed block-id
sample, for hypothesis-made JSONL (valid and broken) and for a list of bad
lines, each shortcut must give the same batches, or the same InputError
message (file, line, field, words) as the authority.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pcs import _native
from pcs.errors import InputError
from pcs.trace.hashids import BAILIAN, MOONCAKE, ReadState, read_hashid_jsonl
from pcs.trace.jsonfast import clean_lines

pytest.importorskip("simdjson")  # pcs[test] installs it; the pyarrow shortcut is checked either way

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = [(ROOT / "traces" / n, MOONCAKE, None) for n in
           ("sample_chat.jsonl", "sample_exact.jsonl", "sample_azure_conv.jsonl", "formats/mooncake_conv_8.jsonl")]
SAMPLES += [(ROOT / "traces" / "sample_tokens_b16.jsonl", MOONCAKE, 16),  # hash ids at 16-token blocks
            (ROOT / "traces" / "formats" / "bailian_6.jsonl", BAILIAN, None)]
# the compiled twin pcs.trace._jsonrows (C++ on simdjson) whenever it is built: a normal install builds it
PATHS = [False, "pyarrow", "simdjson"] + (["native"] if _native.built("jsonrows") else [])


def read(path, spec, fast, bs=None, on_error="raise"):
    """Everything a read yields: the batches' columns and the skip count, or the error's text and place."""
    state = ReadState()
    try:
        bs_ = list(read_hashid_jsonl(path, "t.jsonl", spec, bs, state, on_error, fast=fast))
    except InputError as e:
        return ("error", str(e), e.line, e.field)
    cols = []
    for b in bs_:
        cols.append([b.arrival_s.tolist(), b.prompt_tokens.tolist(), b.output_tokens.tolist(),
                     b.block_offsets.tolist(), b.block_hashes.tolist(), b.block_hashes.dtype.str,
                     None if b.session_id is None else b.session_id.tolist(),
                     None if b.parent_id is None else b.parent_id.tolist(),
                     None if b.turn is None else b.turn.tolist(), b.type])
    return cols, state.skipped


@pytest.mark.parametrize("path,spec,bs", SAMPLES, ids=[p.name for p, _, _ in SAMPLES])
def test_committed_samples_read_the_same_on_every_path(path, spec, bs):
    want = read(path, spec, False, bs=bs)
    assert want[0] != "error" and want[0][0][4], "the sample reads and has ids"
    for fast in PATHS[1:]:
        assert read(path, spec, fast, bs=bs) == want, fast


def test_clean_lines_counts_lines_opening_with_a_brace():
    # Hand-counted: 2 lines; a last line without LF counts; a blank or indented line refuses the chunk.
    assert clean_lines(b'{"a":1}\n{"b":2}\n') == 2
    assert clean_lines(b'{"a":1}\n{"b":2}') == 2
    assert clean_lines(b'{"a":1}\n\n{"b":2}\n') is None
    assert clean_lines(b'{"a":1}\n {"b":2}\n') is None
    assert clean_lines(b' {"a":1}\n') is None


GOOD = '{"timestamp": 10, "input_length": 600, "output_length": 5, "hash_ids": [7, 8]}'
# Lines that JSON parsers disagree on, or that a whole-chunk parser could misread; each sits at line 2.
BAD = [
    '{"timestamp": 20, "timestamp": 21, "input_length": 1, "output_length": 1, "hash_ids": [1]}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2], "x": 1}',  # unknown key: fine
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}\r{"timestamp": 21}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}, {"timestamp": 30}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1,',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [true, 2]}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1.0, 2]}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [-1, 2]}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [18446744073709551615, 2]}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [18446744073709551616, 2]}',
    '{"timestamp": 20, "input_length": 9223372036854775808, "output_length": 5, "hash_ids": [1, 2]}',
    '{"timestamp": 1e400, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}',
    '{"timestamp": Infinity, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}',
    '{"timestamp": "20", "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}',
    '{"timestamp": null, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}',
    '{"timestamp": 20, "input_length": 600, "output_length": false, "hash_ids": [1, 2]}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": {"0": 1}}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": "12"}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [[1], 2]}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [[1, 2]]}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [{"a": 1}, 2]}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [[], 1, 2]}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2], "t": "\\ud800"}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [2, 2]}',
    '{"timestamp": 5, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}',
    '{"timestamp": 20.5e0, "input_length": 0, "output_length": 0, "hash_ids": []}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]} // x',
    '  {"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}  ',
    '[{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}]',
    "null",
    "",
    # the optional "reuse" key: counted in the key total, so a missing required key must still be found missing
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2], "reuse": "synthetic"}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2], "reuse": "other"}',
    '{"timestamp": 20, "input_length": 600, "hash_ids": [1, 2], "reuse": "recorded"}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2], "type": "text"}',
    '{"a": ' * 400 + "1" + "}" * 400,
    # lines a C++ decoder could take differently from json.loads (pcs/trace/_jsonrows.cpp)
    '\ufeff{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}',  # BOM: json.loads refuses
    '{"timestamp": -0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}',  # int 0 for json.loads
    '{"timestamp": -0.0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}',
    '{"timestamp": 20, "input_length": -0, "output_length": 5, "hash_ids": [1, 2]}',
    '{"timestamp": 100000000000000000000, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}',
    '{"timestamp": 20.000000000000001, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}',
    '{"time\\u0073tamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}',  # escaped key
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2], "reuse": null}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2], "reuse": "synthetic", '
    '"reuse": "synthetic"}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2], "reuse": "synth\\u0065tic"}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}\t \r',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}\x00',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2], "reuse": "a\x01"}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2 ] }',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2], "reuse": "\udcff"}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [01, 2]}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]',
    '{}',
    # structure an on-demand parser checks only as it reads (pcs/trace/_jsonrows.cpp): json.loads refuses each
    '{"timestamp": 20 "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}',
    '{"timestamp" 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}',
    '{"timestamp", 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}',
    '{, "timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2],}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2,]}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1 2]}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1,, 2]}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1: 2]}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2}}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]]}',
    '{"timestamp": 20, "input_length": 600x, "output_length": 5, "hash_ids": [1, 2]}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]} '
    '{"timestamp": 30, "input_length": 600, "output_length": 5, "hash_ids": [3, 4]}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]} 7',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2], "reuse": "recorded" "x"}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2], "reuse": recorded}',
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [-0, 2]}',  # int 0 for json.loads
    '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2e0]}',
]


@pytest.mark.parametrize("bad", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_bad_lines_give_the_authoritys_result_and_message(tmp_path, bad, on_error):
    p = tmp_path / "t.jsonl"
    p.write_bytes((GOOD + "\n" + bad + "\n" + GOOD.replace("10", "40") + "\n").encode("utf-8", "surrogatepass"))
    want = read(p, MOONCAKE, False, on_error=on_error)
    for fast in PATHS[1:]:
        assert read(p, MOONCAKE, fast, on_error=on_error) == want, fast


_ids = st.lists(st.integers(min_value=-2, max_value=2**64 + 1), max_size=5)
_scalar = st.one_of(st.integers(-3, 40), st.floats(allow_nan=False, width=32), st.booleans(), st.none(),
                    st.text(max_size=2), st.integers(2**63 - 2, 2**64 + 2))


@st.composite
def jsonl_rows(draw):
    """A Mooncake- or Bailian-shaped object, mostly valid, sometimes with a wrong value, key or layout."""
    bailian = draw(st.booleans())
    n = draw(st.integers(0, 6))
    obj = {"timestamp": draw(st.integers(0, 9) | st.floats(0, 9) | _scalar), "input_length": n,
           "output_length": draw(st.integers(0, 3) | _scalar),
           "hash_ids": draw(st.just(sorted(draw(st.sets(st.integers(0, 2**64 - 1), min_size=-(-n // 2),
                                                        max_size=-(-n // 2))))) | _ids
                        | st.lists(st.lists(st.integers(0, 9), max_size=2) | st.integers(0, 9), max_size=3))}
    if bailian:
        obj.update({"chat_id": draw(st.integers(-2**63, 2**63 - 1) | _scalar), "parent_chat_id": -1,
                    "turn": draw(st.integers(0, 3))})
        if draw(st.booleans()):
            obj["type"] = draw(st.sampled_from(["text", None, 3]))
    if draw(st.integers(0, 9)) == 0:
        obj.pop(draw(st.sampled_from(sorted(obj))))
    if draw(st.integers(0, 9)) == 0:
        obj["extra"] = draw(_scalar)
    if draw(st.integers(0, 4)) == 0:
        obj["reuse"] = draw(st.sampled_from(["recorded", "synthetic", "other", 1]))
    text = json.dumps(obj)
    return draw(st.sampled_from([text, text, text, text + "\r", " " + text, "", text + text[:5]]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(jsonl_rows(), min_size=1, max_size=8), bailian=st.booleans(),
       on_error=st.sampled_from(["raise", "skip"]), last_lf=st.booleans())
def test_hypothesis_jsonl_reads_the_same_on_every_path(tmp_path, lines, bailian, on_error, last_lf):
    p = tmp_path / "h.jsonl"
    p.write_text("\n".join(lines) + ("\n" if last_lf else ""))
    spec = BAILIAN if bailian else MOONCAKE
    want = read(p, spec, False, bs=2, on_error=on_error)
    for fast in PATHS[1:]:
        assert read(p, spec, fast, bs=2, on_error=on_error) == want, fast


def test_simdjson_path_yields_uint64_ids_from_its_own_buffers(tmp_path):
    # Two hand-written rows: ids [2**64 - 1] and [0, 5]; ceil(600 / 512) = 2, ceil(100 / 512) = 1.
    p = tmp_path / "t.jsonl"
    p.write_text('{"timestamp": 0, "input_length": 100, "output_length": 1, "hash_ids": [18446744073709551615]}\n'
                 '{"timestamp": 1500, "input_length": 600, "output_length": 2, "hash_ids": [0, 5]}\n')
    (b,) = read_hashid_jsonl(p, "t", MOONCAKE, None, ReadState(), fast="simdjson")
    assert b.block_hashes.dtype == np.uint64 and b.block_hashes.tolist() == [2**64 - 1, 0, 5]
    assert b.block_offsets.tolist() == [0, 1, 3] and b.arrival_s.tolist() == [0.0, 1.5]


def test_unknown_parser_is_a_value_error(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text(GOOD + "\n")
    with pytest.raises(ValueError, match="unknown JSONL parser 'orjson'"):
        list(read_hashid_jsonl(p, "t", MOONCAKE, None, ReadState(), fast="orjson"))


def test_auto_prefers_native_then_simdjson_then_pyarrow(monkeypatch):
    import pcs.trace.jsonfast as jf
    from pcs.trace.hashids import _shortcut

    # the compiled twin unless PCS_NATIVE=python; then pysimdjson when installed (the [fast] extra), else pyarrow.
    monkeypatch.setenv("PCS_NATIVE", "auto")
    assert _shortcut(True) == "native" if _native.built("jsonrows") else _shortcut(True) != "native"
    monkeypatch.setenv("PCS_NATIVE", "python")
    assert _shortcut(True) == ("simdjson" if jf.available("simdjson") else "pyarrow") and _shortcut(False) is None
    monkeypatch.setattr(jf, "available", lambda p: p == "pyarrow")  # as if neither were there
    assert _shortcut(True) == _shortcut("auto") == "pyarrow"
    with pytest.raises(ValueError, match=r"pip install -e '\.\[fast\]' in the pcs clone"):
        _shortcut("simdjson")


@pytest.mark.parametrize("fast", PATHS)
def test_an_absurd_timestamp_names_file_line_and_field(tmp_path, fast):
    """A timestamp of 1e25 ms (1e22 s, past the 2**32 s a float64 clock resolves to a microsecond,
    pcs.trace.batches.MAX_ARRIVAL_S) was refused as "request 1: ..." without file or line; every parser now
    names line 2 (the second row) and the field, as for any other bad value. 4294967296 s = 2**32 s is the
    last arrival taken: 4294967296000 ms on line 1 reads."""
    p = tmp_path / "t.jsonl"
    p.write_text('{"timestamp": 4294967296000, "input_length": 100, "output_length": 5, "hash_ids": [1]}\n'
                 '{"timestamp": 1e25, "input_length": 100, "output_length": 5, "hash_ids": [2]}\n')
    kind, message, line, field = read(p, MOONCAKE, fast)
    assert (kind, line, field) == ("error", 2, "timestamp")
    assert message.startswith("t.jsonl:2: field 'timestamp': arrival 1e+22 s is beyond +-2**32 s")
    assert read(p, MOONCAKE, fast, on_error="skip")[-1] == 1          # skipped like any bad line


@pytest.mark.parametrize("fast", PATHS)
def test_no_arrival_is_negative_zero(tmp_path, fast):
    """pyarrow.json read "timestamp": -0 as -0.0 (its float64 column) where json.loads and
    simdjson give the integer 0; -0.0 and 0.0 are the same time, so every reader gives +0.0 (sign bit clear),
    for "-0.0" too."""
    p = tmp_path / "t.jsonl"
    p.write_text('{"timestamp": -0, "input_length": 100, "output_length": 5, "hash_ids": [1]}\n'
                 '{"timestamp": -0.0, "input_length": 100, "output_length": 5, "hash_ids": [2]}\n')
    state = ReadState()
    arrival = np.concatenate([b.arrival_s for b in read_hashid_jsonl(p, "t.jsonl", MOONCAKE, None, state,
                                                                         fast=fast)])
    assert arrival.tolist() == [0.0, 0.0] and not np.signbit(arrival).any()
