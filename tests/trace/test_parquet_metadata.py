"""Parquet key-value metadata: every ``pcs.*`` key pcs reads is checked, the others are ignored,
and the arrival clock bound names the file and row.

Parquet metadata are byte strings; another writer may keep binary under its own key. pcs reads
``pcs.schema``, ``pcs.block_size`` and ``pcs.reuse`` (pcs/trace/parquet.py): each must be UTF-8, one line;
``pcs.block_size`` ASCII digits of an integer in [1, MAX_BLOCK_SIZE] = [1, 2^20], the range of ``--block-size``.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pcs.errors import InputError, UserError
from pcs.trace import open_trace
from pcs.trace.parquet import SCHEMA_NAME
from pcs.trace.request import MAX_BLOCK_SIZE
from tests.helpers import assert_one_line_error, invoke


def _write(path, block_size: str | bytes = "512", arrival=(0.0, 1.0), prompt=(1000, 600), **extra):
    """Two requests (1000 and 600 tokens at 512 per block: ceil -> 2 ids each) with ``extra`` metadata."""
    t = pa.table({"arrival_s": pa.array(arrival, pa.float64()), "prompt_tokens": pa.array(prompt, pa.int64()),
                  "output_tokens": pa.array([5, 7], pa.int64()),
                  "block_hashes": pa.array([[1, 2], [1, 3]], pa.list_(pa.uint64()))})
    meta = {b"pcs.schema": SCHEMA_NAME.encode(), b"pcs.block_size": block_size, b"pcs.source_format": b"mooncake"}
    meta.update({k.encode(): v for k, v in extra.items()})
    pq.write_table(t.replace_schema_metadata({k: v if isinstance(v, bytes) else v.encode() for k, v in meta.items()}),
                   path)
    return path


def _error(path) -> InputError:
    with pytest.raises(InputError) as err:
        list(open_trace(path).iter_batches())
    return err.value


def test_binary_value_under_another_writers_key_is_ignored(tmp_path):
    # before: every key and value was decoded -> UnicodeDecodeError, "bug in pcs", exit 1
    p = _write(tmp_path / "t.parquet", **{"other.tool": b"\x89PNG\xff"})
    t = open_trace(p)
    assert t.block_size == 512 and sum(len(b) for b in t.iter_batches()) == 2
    assert invoke("trace", "stats", p, "--quiet").exit_code == 0


@pytest.mark.parametrize("key", ["pcs.schema", "pcs.block_size", "pcs.reuse"])
def test_non_utf8_pcs_value_names_the_key(tmp_path, key):
    kw = {"block_size": b"\xff\xfe"} if key == "pcs.block_size" else {}
    p = tmp_path / "t.parquet"
    if key == "pcs.schema":
        _write(p)
        t = pq.read_table(p)
        pq.write_table(t.replace_schema_metadata({**t.schema.metadata, b"pcs.schema": b"pcs-trace/1\xff"}), p)
    else:
        _write(p, **kw, **({"pcs.reuse": b"synth\xe9sised"} if key == "pcs.reuse" else {}))
    e = _error(p)
    assert (e.path, e.field) == (str(p), key) and "UTF-8" in e.problem
    assert_one_line_error(invoke("trace", "stats", p), str(p), f"field '{key}'")


def test_reuse_with_a_line_break_is_refused(tmp_path):
    # pcs.reuse is printed in a note on one line
    e = _error(_write(tmp_path / "t.parquet", **{"pcs.reuse": "synthesised\nsecond line"}))
    assert e.field == "pcs.reuse" and "one line" in e.problem


@pytest.mark.parametrize("text", [
    "0", "-16", "1048577",          # below 1 / above 2^20 = 1,048,576
    "2097152",                      # 2^21: accepted before, though --block-size refuses it
    "1099511627776",                # 2^40: before, ZeroDivisionError in StepCost (both fit points 0 blocks)
    "99999999999999999999",         # above int64: before, OverflowError in curve
    "\uff15\uff11\uff12",           # full-width 512: int() takes it, the rule is ASCII digits
    " 512", "5_12", "+512", "16.0", "abc", "",
])
def test_block_size_outside_the_block_size_option_range(tmp_path, text):
    e = _error(_write(tmp_path / "t.parquet", block_size=text))
    assert e.field == "pcs.block_size" and "[1, 1048576]" in e.problem and repr(text) in e.problem


def test_block_size_bounds_are_the_option_bounds(tmp_path):
    assert MAX_BLOCK_SIZE == 2**20
    from pcs.cli.params import MAX_BLOCK_SIZE as option_bound
    assert option_bound is MAX_BLOCK_SIZE  # one constant
    # 2^20 itself is accepted: 1000 and 600 tokens are one block each, so one id per row
    p = tmp_path / "t.parquet"
    t = pa.table({"arrival_s": [0.0, 1.0], "prompt_tokens": [1000, 600], "output_tokens": [5, 7],
                  "block_hashes": pa.array([[1], [2]], pa.list_(pa.uint64()))})
    pq.write_table(t.replace_schema_metadata({"pcs.schema": SCHEMA_NAME, "pcs.block_size": str(2**20)}), p)
    assert open_trace(p).block_size == 2**20
    # the API's block_size takes the same range
    with pytest.raises(UserError, match=r"\[1, 1048576\]"):
        open_trace(p, block_size=2**20 + 1)


def test_missing_block_size_says_so(tmp_path):
    p = tmp_path / "t.parquet"
    _write(p)
    t = pq.read_table(p)
    pq.write_table(t.replace_schema_metadata({b"pcs.schema": SCHEMA_NAME.encode()}), p)
    e = _error(p)
    assert e.field == "pcs.block_size" and "no such key" in e.problem


@pytest.mark.parametrize("arrival, row", [((-1e12, 0.0), 1), ((0.0, 2.0**32 + 1), 2)])
def test_arrival_beyond_the_clock_bound_names_file_and_row(tmp_path, arrival, row):
    # +-2^32 s is the bound (pcs.trace.batches.MAX_ARRIVAL_S); before, "request 0: ..." with no file or row
    e = _error(_write(tmp_path / "t.parquet", arrival=arrival))
    assert (e.line, e.field) == (row, "arrival_s") and "2**32" in e.problem


def test_open_trace_reads_the_footer_once(tmp_path, monkeypatch):
    # open_trace needs two things from the footer, the block size and the reuse note: one footer read for both
    # (before: one each). The first read of the rows takes that footer (Trace._take_opened), each later one reads
    # it again. By hand: 1 footer read for open_trace, 0 for the first read, 1 for the second.
    # The reader opens pyarrow's own reader class (the one pq.ParquetFile wraps) through pcs.trace.parquet._open,
    # which reads the footer unless it is given one (metadata).
    from pcs.trace import parquet

    path = _write(tmp_path / "t.parquet", "512", **{"pcs.reuse": "synthesised"})
    opened = []
    real = parquet._open

    def counting(p, n, metadata=None):
        if metadata is None:
            opened.append(p)
        return real(p, n, metadata)

    monkeypatch.setattr(parquet, "_open", counting)
    trace = open_trace(path)
    assert (trace.block_size, trace.reuse, len(opened)) == (512, "synthesised", 1)
    assert [len(b) for b in trace.iter_batches()] == [2] and len(opened) == 1
    assert [len(b) for b in trace.iter_batches()] == [2] and len(opened) == 2


def test_bad_reuse_after_good_block_size_still_named_with_one_open(tmp_path):
    # the shared footer keeps the checks' order: block size first, then pcs.reuse (not UTF-8 here)
    with pytest.raises(InputError) as err:
        open_trace(_write(tmp_path / "t.parquet", "512", **{"pcs.reuse": b"\xff"}))
    assert "pcs.reuse" in str(err.value) and "UTF-8" in str(err.value)
