"""Malformed trace input: one line naming file, line and field, exit code 2; --on-error skip counts.

Each case puts one bad line at line 3 of an otherwise valid 4-line Mooncake
file (block size 512) and checks the CLI message and exit code, then that
``--on-error skip`` reads the other 3 requests and reports 1 skipped line.
"""
from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import per_trace
from pcs.cli.main import cli
from pcs.errors import InputError
from pcs.trace import open_trace


def good(ts: int, n_tokens: int = 600, first_id: int = 0) -> str:
    """A valid Mooncake line: ceil(600/512) = 2 ids."""
    ids = list(range(first_id, first_id + math.ceil(n_tokens / 512)))
    return json.dumps({"timestamp": ts, "input_length": n_tokens, "output_length": 5, "hash_ids": ids})


def with_bad_line(bad: str) -> str:
    return "\n".join([good(0, first_id=0), good(10, first_id=10), bad, good(30, first_id=30)]) + "\n"


# (name, bad line 3, field named in the message or None, words the message must contain)
CASES = [
    ("invalid_json", '{"timestamp": 20, "input_length": 600,', None, "invalid JSON"),
    ("not_an_object", "[1, 2, 3]", None, "expected a JSON object"),
    ("duplicate_key", '{"timestamp": 20, "timestamp": 21, "input_length": 1, "output_length": 1, "hash_ids": [1]}',
     None, "appears twice"),
    ("missing_field", '{"timestamp": 20, "output_length": 5, "hash_ids": [1, 2]}', "input_length", "missing"),
    ("missing_hash_ids", '{"timestamp": 20, "input_length": 600, "output_length": 5}', "hash_ids", "missing"),
    ("wrong_type_str", '{"timestamp": 20, "input_length": "600", "output_length": 5, "hash_ids": [1, 2]}',
     "input_length", "must be an integer"),
    ("wrong_type_float", '{"timestamp": 20, "input_length": 600.5, "output_length": 5, "hash_ids": [1, 2]}',
     "input_length", "must be an integer"),
    ("wrong_type_bool", '{"timestamp": true, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}',
     "timestamp", "must be a number"),
    ("ids_not_list", '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": 7}',
     "hash_ids", "must be a list"),
    ("negative_input", '{"timestamp": 20, "input_length": -3, "output_length": 5, "hash_ids": []}',
     "input_length", "must be >= 0"),
    ("negative_output", '{"timestamp": 20, "input_length": 600, "output_length": -1, "hash_ids": [1, 2]}',
     "output_length", "must be >= 0"),
    ("nan_timestamp", '{"timestamp": NaN, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}',
     "timestamp", "finite"),
    ("decreasing_timestamp", good(5, first_id=20), "timestamp", "decreases"),
    ("empty_ids", '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": []}',
     "hash_ids", "empty for a non-empty prompt"),
    ("wrong_count", '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2, 3]}',
     "hash_ids", "ceil(600 / block size 512) = 2"),
    ("repeated_id", '{"timestamp": 20, "input_length": 1100, "output_length": 5, "hash_ids": [4, 9, 4]}',
     "hash_ids", "repeated at positions 0 and 2"),
    ("id_too_big", '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 18446744073709551616]}',
     "hash_ids", "does not fit an unsigned 64-bit id"),
    ("id_negative", '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [-1, 2]}',
     "hash_ids", "does not fit an unsigned 64-bit id"),
    ("blank_line", "", None, "blank line"),
    ("whitespace_line", "  \t ", None, "blank line"),
    ("invalid_utf8", '{"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [1, 2], "x": "\udcff"}',
     None, "not UTF-8 (byte 0xff at byte 86 of the line)"),   # 85 bytes before it, counted by hand
]


@pytest.fixture()
def runner() -> CliRunner:
    return CliRunner()


@pytest.mark.parametrize("name,bad,field,words", CASES, ids=[c[0] for c in CASES])
def test_bad_line_is_one_line_error_with_exit_2(tmp_path, runner, name, bad, field, words):
    path = tmp_path / f"{name}.jsonl"
    text = with_bad_line(bad)
    path.write_bytes(text.encode("utf-8", errors="surrogateescape"))
    res = runner.invoke(cli, ["trace", "stats", str(path), "--format", "json"])
    assert res.exit_code == 2, res.output
    msg = res.stderr.strip() if hasattr(res, "stderr") else res.output.strip()
    assert len(msg.splitlines()) == 1 and "Traceback" not in res.output
    prefix = f"pcs: error: {path}:3: " + (f"field '{field}': " if field else "")
    assert msg.startswith(prefix), msg
    assert words in msg, msg

    res = runner.invoke(cli, ["trace", "stats", str(path), "--format", "json", "--on-error", "skip"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["requests"] == 3 and out["skipped"] == 1


def test_decreasing_timestamp_sort_reorders(tmp_path):
    path = tmp_path / "unsorted.jsonl"
    path.write_text(with_bad_line(good(5, first_id=20)))
    t = open_trace(path, sort=True)
    # arrivals 0, 10, 5, 30 ms -> sorted 0, 5, 10, 30; the 5 ms request (ids 20, 21) moves to position 1
    reqs = list(t)
    assert [r.arrival_s for r in reqs] == [0.0, 0.005, 0.01, 0.03]
    assert reqs[1].block_hashes.tolist() == [20, 21]
    assert [r.request_id for r in reqs] == [0, 1, 2, 3]


def test_crlf_and_bom_are_accepted_as_the_same_data(tmp_path):
    text = "\n".join(good(i * 10, first_id=10 * i) for i in range(5)) + "\n"
    plain, crlf, bom = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    plain.write_bytes(text.encode())
    crlf.write_bytes(text.replace("\n", "\r\n").encode())
    bom.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())

    def rows(p):
        return [(r.arrival_s, r.prompt_tokens, r.block_hashes.tolist()) for r in open_trace(p)]

    assert rows(plain) == rows(crlf) == rows(bom)
    assert len(rows(plain)) == 5


def test_truncated_gzip_is_an_error(tmp_path, runner):
    text = "\n".join(good(i, first_id=10 * i) for i in range(2000)) + "\n"
    data = gzip.compress(text.encode())
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="truncated gzip stream"):
        list(open_trace(path))
    res = runner.invoke(cli, ["trace", "stats", str(path)])
    assert res.exit_code == 2
    assert res.output.startswith(f"pcs: error: {path}:") and "truncated gzip stream" in res.output
    # --on-error skip does not hide a truncated stream: the end of the trace is unknown
    assert runner.invoke(cli, ["trace", "stats", str(path), "--on-error", "skip"]).exit_code == 2


def test_block_size_mismatch_rejected_on_line_1(exact_trace, runner):
    res = runner.invoke(cli, ["trace", "stats", str(exact_trace), "--block-size", "16"])
    assert res.exit_code == 2
    n, p = per_trace(exact_trace, sample=(6, 3068), mooncake=(14, 6758))     # line 1: ids, input_length
    assert res.output.startswith(f"pcs: error: {exact_trace}:1: field 'hash_ids': has {n} ids but ceil({p:,} / block size 16)")


def test_errors_after_the_first_chunk_name_the_right_line(tmp_path, monkeypatch):
    import pcs.trace.source as source

    monkeypatch.setattr(source, "CHUNK_BYTES", 256)  # ~3 lines per chunk
    lines = [good(i, first_id=10 * i) for i in range(40)]
    lines[29] = lines[29].replace('"input_length": 600', '"input_length": -600')
    path = tmp_path / "late.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as e:
        list(open_trace(path))
    assert (e.value.line, e.value.field) == (30, "input_length")


def test_unknown_format_and_empty_file(tmp_path):
    p = tmp_path / "empty.jsonl"
    p.write_text("")
    with pytest.raises(InputError, match="empty trace"):
        open_trace(p)
    q = tmp_path / "other.jsonl"
    q.write_text('{"foo": 1}\n')
    with pytest.raises(InputError, match="cannot detect the format"):
        open_trace(q)
    with pytest.raises(ValueError, match="valid: mooncake, bailian, tokens, parquet"):
        open_trace(q, format="csv")


# --- property: random input never escapes as anything but InputError / ValueError ----------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=5),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=5), kids, max_size=4),
    max_leaves=12,
)
_field = st.sampled_from(["timestamp", "input_length", "output_length", "hash_ids", "token_ids",
                          "chat_id", "parent_chat_id", "turn", "type", "cache_salt", "lora_id", "mm_hashes"])
_obj = st.dictionaries(_field, _json | st.lists(st.integers(min_value=-5, max_value=2**64 + 5), max_size=6),
                       max_size=8)


def _read_all(path, fmt):
    try:
        t = open_trace(path, format=fmt, block_size=2)
        n = sum(len(b) for b in t.iter_batches())
        assert n >= 0
    except (InputError, ValueError):
        pass


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300), fmt=st.sampled_from(["mooncake", "bailian", "tokens", "parquet", None]))
def test_random_bytes_never_raise_anything_else(tmp_path, data, fmt):
    p = tmp_path / "random.bin"
    p.write_bytes(data)
    _read_all(p, fmt)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(objs=st.lists(_obj | _json, min_size=1, max_size=5), fmt=st.sampled_from(["mooncake", "bailian", "tokens", None]),
       gz=st.booleans())
def test_random_json_lines_never_raise_anything_else(tmp_path, objs, fmt, gz):
    text = "\n".join(json.dumps(o) for o in objs) + "\n"
    p = tmp_path / "random.jsonl"
    p.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    _read_all(p, fmt)


_valid_ids = st.lists(st.integers(min_value=0, max_value=2**64 - 1), min_size=0, max_size=4, unique=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.integers(0, 50), st.integers(-1, 8), st.integers(-1, 3), _valid_ids,
                               st.sampled_from(["", " ", "\r", "  x"])), min_size=1, max_size=8))
def test_fast_and_slow_paths_agree(tmp_path, rows):
    """The pyarrow path and the json.loads path accept the same lines and give the same arrays."""
    from pcs.trace.hashids import MOONCAKE, ReadState, read_hashid_jsonl

    lines = [json.dumps({"timestamp": ts, "input_length": il, "output_length": ol, "hash_ids": ids}) + tail
             for ts, il, ol, ids, tail in rows]
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(lines) + "\n")

    def run(fast):
        try:
            bs = list(read_hashid_jsonl(p, "t", MOONCAKE, 2, ReadState(), fast=fast))
        except InputError as e:
            return ("error", e.line, e.field)
        return [(b.arrival_s.tolist(), b.prompt_tokens.tolist(), b.output_tokens.tolist(),
                 b.block_offsets.tolist(), b.block_hashes.tolist()) for b in bs]

    assert run(True) == run(False)


def test_parquet_errors_name_the_row(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pcs.trace.parquet import arrow_schema

    schema = arrow_schema(block_size=4)
    tbl = pa.table({"arrival_s": [0.0, 1.0, 0.5], "prompt_tokens": [4, 5, 1], "output_tokens": [1, 1, 1],
                    "block_hashes": pa.array([[1], [1, 2], [3]], pa.list_(pa.uint64()))}).cast(schema)
    p = tmp_path / "t.parquet"
    pq.write_table(tbl, p)
    with pytest.raises(InputError) as e:
        list(open_trace(p))
    assert (e.value.line, e.value.field) == (3, "arrival_s")
    t = open_trace(p, on_error="skip")
    assert [r.prompt_tokens for r in t] == [4, 5] and t.skipped == 1
    pq.write_table(pa.table({"x": [1]}), tmp_path / "plain.parquet")
    with pytest.raises(InputError, match="pcs-trace/1"):
        open_trace(tmp_path / "plain.parquet")
    with pytest.raises(ValueError, match="block size 4"):
        open_trace(p, block_size=8)


def test_token_trace_errors(tmp_path):
    p = tmp_path / "tok.jsonl"
    p.write_text('{"token_ids": [1, 2, 3]}\n{"token_ids": [1, -2]}\n')
    with pytest.raises(InputError) as e:
        list(open_trace(p))
    assert (e.value.line, e.value.field) == (2, "token_ids")
    p.write_text('{"token_ids": [1, 2, 3], "cache_salt": 5}\n')
    with pytest.raises(InputError, match="field 'cache_salt'"):
        list(open_trace(p))
    p.write_text('{"token_ids": [1], "timestamp": 9}\n{"token_ids": [2], "timestamp": 3}\n')
    with pytest.raises(InputError, match="decreases"):
        list(open_trace(p))
    assert np.allclose([r.arrival_s for r in open_trace(p, sort=True)], [0.003, 0.009])


def test_truncated_gzip_names_the_line_where_it_ends(tmp_path):
    import gzip
    import zlib

    from pcs.errors import InputError
    from pcs.trace import open_trace

    lines = b"".join(b'{"timestamp": %d, "input_length": 600, "output_length": 1, "hash_ids": [%d, %d]}\n'
                     % (i, 2 * i, 2 * i + 1) for i in range(20000))
    z = gzip.compress(lines)
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(z[: len(z) // 2])
    # independently: how many whole lines the surviving half decompresses to
    whole = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(path.read_bytes()).count(b"\n")
    with pytest.raises(InputError) as info:
        for _ in open_trace(path):
            pass
    assert info.value.line == whole + 1
    assert "truncated gzip" in str(info.value)


@pytest.mark.parametrize("ts_ms", [1e25, 1e300, -1e22])
def test_arrival_beyond_2_pow_32_s_is_one_error(tmp_path, ts_ms):
    """A timestamp past 2**32 s (here 1e22 s and more, in ms in the file): a float64 clock there cannot add a
    0.001-s sampling step (1e22 + 0.001 == 1e22), so the replay used to loop forever; now one error naming the
    file, line 1 and the field (in-memory requests are named by number,
    tests/engine/test_stepsched_native.py), exit 2, in every timing. 1.7e12 ms (a Unix time in 2023) still
    replays."""
    from click.testing import CliRunner

    from pcs.cli.main import cli

    bad = tmp_path / "far.jsonl"
    bad.write_text(f'{{"timestamp": {ts_ms!r}, "input_length": 10, "output_length": 1, "hash_ids": [1]}}\n')
    for extra in ([], ["--timing", "sequential"]):
        r = CliRunner().invoke(cli, ["replay", str(bad), "--tier", "gpu=2blocks", "-q", *extra])
        assert r.exit_code == 2 and "far.jsonl:1: field 'timestamp': arrival" in r.output, r.output
        assert "beyond +-2**32 s" in r.output and len(r.output.strip().splitlines()) == 1
    ok = tmp_path / "unix.jsonl"
    ok.write_text('{"timestamp": 1.7e12, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n')
    assert CliRunner().invoke(cli, ["replay", str(ok), "--tier", "gpu=2blocks", "-q"]).exit_code == 0


def test_an_integer_timestamp_beyond_float_range_names_file_line_field(tmp_path):
    # json.loads keeps 10**400 as an exact int; float() of it overflows: the reader must say "must be finite" at
    # line 2, field 'timestamp', as it does for the float 1e400 (it raised OverflowError, an internal error)
    from pcs.errors import InputError
    from pcs.trace import open_trace

    p = tmp_path / "big.jsonl"
    p.write_text('{"timestamp": 0, "input_length": 512, "output_length": 1, "hash_ids": [1]}\n'
                 '{"timestamp": 1' + "0" * 400 + ', "input_length": 512, "output_length": 1, "hash_ids": [9]}\n')
    with pytest.raises(InputError) as e:
        list(open_trace(str(p)).iter_batches())
    assert f"{p}:2" in str(e.value) and "timestamp" in str(e.value) and "finite" in str(e.value)
