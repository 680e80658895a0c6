"""Hostile input: trace schemas are enforced the same way in every format.

Each mutation below breaks one field of one request; the same request goes
into a Mooncake JSONL file and into a Parquet file (its columns typed as the
value demands: a float column for 6758.7, a bool column for True ...). Both
readers must refuse it naming the field (JSONL ``input_length`` is Parquet
``prompt_tokens`` and so on) -- whatever JSONL rejects, Parquet rejects too.
The issue's example: a float ``prompt_tokens`` of 6758.7 was silently cut to 6758.
"""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pcs.errors import InputError
from pcs.trace import open_trace
from pcs.trace.parquet import SCHEMA_NAME

BS = 512
GOOD = [{"timestamp": 0, "input_length": 1000, "output_length": 5, "hash_ids": [1, 2]},
        {"timestamp": 1000, "input_length": 600, "output_length": 7, "hash_ids": [1, 3]}]
COLUMN = {"timestamp": "arrival_s", "input_length": "prompt_tokens", "output_length": "output_tokens",
          "hash_ids": "block_hashes"}
MUTATIONS = [  # (JSONL field, bad value for the second request)
    ("input_length", 600.7),          # the example, at this trace's scale
    ("input_length", 600.0),          # JSON 600.0 is a float: JSONL refuses it, so Parquet refuses float columns
    ("input_length", -1),
    ("input_length", True),
    ("input_length", "600"),
    ("input_length", 2**63),          # above int64: a uint64 column must not wrap to a negative length
    ("output_length", -7),
    ("output_length", 7.5),
    ("timestamp", float("nan")),
    ("timestamp", -5.0),              # decreasing (the first request is at 0)
    ("timestamp", "1000"),
    ("hash_ids", [1]),                # ceil(600 / 512) = 2 ids needed
    ("hash_ids", [1, 1]),             # an id repeated inside one request
    ("hash_ids", [1, -3]),            # ids are unsigned 64-bit
    ("hash_ids", [1.0, 3.0]),
    ("hash_ids", ["a", "b"]),
    ("hash_ids", None),
    ("input_length", None),
]


def _rows(field, value):
    rows = [dict(r) for r in GOOD]
    rows[1][field] = value
    return rows


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r).replace("NaN", "1e999") + "\n" for r in rows))


def _typed(values):
    """A column holds one type: a bool or str among numbers makes the whole column bools or strings."""
    kinds = {type(v) for v in values if v is not None}
    for odd in (bool, str):
        if odd in kinds:
            return [None if v is None else odd(v) for v in values]
    return values


def _arrow_type(values):
    """The Arrow type a writer would give these values (one non-null kind per column)."""
    kinds = {type(v) for v in values if v is not None}
    if kinds == {bool}:
        return pa.bool_()
    if kinds == {str}:
        return pa.string()
    if float in kinds:
        return pa.float64()
    if any(isinstance(v, int) and v > 2**63 - 1 for v in values):
        return pa.uint64()
    return pa.int64()


def _write_parquet(path, rows):
    cols = {}
    for field, col in COLUMN.items():
        values = _typed([r[field] for r in rows]) if field != "hash_ids" else [r[field] for r in rows]
        if field == "timestamp" and all(isinstance(v, (int, float)) for v in values):
            values = [v / 1000.0 for v in values]           # Mooncake ms -> arrival_s
        if field == "hash_ids":
            inner = _typed([x for v in values if isinstance(v, list) for x in v])
            it = iter(inner)
            values = [None if v is None else [next(it) for _ in v] for v in values]
            cols[col] = pa.array(values, type=pa.list_(_arrow_type(inner)))
        else:
            cols[col] = pa.array(values, type=_arrow_type(values))
    meta = {"pcs.schema": SCHEMA_NAME, "pcs.block_size": str(BS), "pcs.source_format": "mooncake"}
    pq.write_table(pa.table(cols).replace_schema_metadata(meta), path)


def _error(path, fmt):
    with pytest.raises(InputError) as err:
        list(open_trace(path, format=fmt, block_size=None if fmt == "parquet" else BS).iter_batches())
    return err.value


def test_the_good_trace_reads_the_same_in_both_formats(tmp_path):
    _write_jsonl(tmp_path / "t.jsonl", GOOD)
    _write_parquet(tmp_path / "t.parquet", GOOD)
    a = [(r.arrival_s, r.prompt_tokens, list(r.block_hashes)) for r in open_trace(tmp_path / "t.jsonl")]
    b = [(r.arrival_s, r.prompt_tokens, list(r.block_hashes)) for r in open_trace(tmp_path / "t.parquet")]
    assert a == b == [(0.0, 1000, [1, 2]), (1.0, 600, [1, 3])]


@pytest.mark.parametrize("field, value", MUTATIONS, ids=[f"{f}={v!r}" for f, v in MUTATIONS])
def test_whatever_jsonl_rejects_parquet_rejects_naming_the_column(tmp_path, field, value):
    rows = _rows(field, value)
    _write_jsonl(tmp_path / "t.jsonl", rows)
    assert _error(tmp_path / "t.jsonl", "mooncake").field == field
    _write_parquet(tmp_path / "t.parquet", rows)
    err = _error(tmp_path / "t.parquet", "parquet")
    assert err.field == COLUMN[field], str(err)
    assert "\n" not in str(err)


def test_float_prompt_tokens_is_an_error_not_a_cut(tmp_path):
    _write_parquet(tmp_path / "t.parquet", _rows("input_length", 600.7))
    err = _error(tmp_path / "t.parquet", "parquet")
    assert "prompt_tokens" in str(err) and "double" in str(err) and "integers" in str(err)


def _with_sessions(path, **cols):
    """GOOD as Parquet plus the given int64 session columns (lists of 2 values, None = null)."""
    _write_parquet(path, GOOD)
    t = pq.read_table(path)
    meta = t.schema.metadata
    for k, v in cols.items():
        t = t.append_column(k, pa.array(v, type=pa.int64()))
    pq.write_table(t.replace_schema_metadata(meta), path)


def test_session_id_alone_is_read(tmp_path):
    # hostile F7: a session_id column without parent_id/turn used to be ignored (all three or none)
    _with_sessions(tmp_path / "s.parquet", session_id=[7, 7])
    (b,) = list(open_trace(tmp_path / "s.parquet").iter_batches())
    assert b.session_id.tolist() == [7, 7] and b.parent_id is None and b.turn is None


@pytest.mark.parametrize("cols, field, row", [
    # a null session id in row 2 (1-based): named, not "cannot convert float NaN to integer"
    (dict(session_id=[5, None], parent_id=[-1, 5], turn=[1, 2]), "session_id", 2),
    (dict(session_id=[None, 6]), "session_id", 1),
    (dict(session_id=[5, 6], parent_id=[-1, None], turn=[1, 2]), "parent_id", 2),
    # a parent or a turn of no session
    (dict(parent_id=[-1, 5]), "parent_id", None),
    (dict(turn=[1, 2]), "turn", None),
])
def test_session_columns_null_or_partial_are_named_errors(tmp_path, cols, field, row):
    _with_sessions(tmp_path / "s.parquet", **cols)
    err = _error(tmp_path / "s.parquet", "parquet")
    assert (err.field, err.line) == (field, row), str(err)
    assert "\n" not in str(err) and ("null value" in str(err) if row else "needs a session_id column" in str(err))
