"""The Parquet reader's rules do not depend on where its batches are cut (pcs.trace.parquet.read_parquet ``rows``).

The reader checks a batch at a time with numpy; the JSONL authority (pcs/trace/hashids.py ``_slow_line``) reads
line by line: it reports the first bad line, and a line it skips never raises the bar of the order check. The
Parquet reader now does the same in every batch size, so reading in smaller batches (``READ_ROWS``) changes no
error and no skipped row. Expected values are worked out by hand from five rows below.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pcs.errors import InputError
from pcs.trace import open_trace, parquet

BS = 16   # tokens per block: a 16-token prompt is one block


def _write(path, rows: list[tuple[float, int, list[int]]]) -> str:
    schema = parquet.arrow_schema(block_size=BS)
    cols = [pa.array([r[0] for r in rows], pa.float64()), pa.array([r[1] for r in rows], pa.int64()),
            pa.array([1] * len(rows), pa.int64()), pa.array([r[2] for r in rows], schema.field("block_hashes").type)]
    pq.write_table(pa.Table.from_arrays(cols, schema=schema), path)
    return str(path)


@pytest.mark.parametrize("rows", [1, 2, 3, 1 << 14])
def test_the_first_bad_row_is_named_whatever_the_batch(tmp_path, monkeypatch, rows):
    # row 3 arrives at 3 s after row 2's 5 s (decreases); row 4 has -1 prompt tokens. Read line by line, row 3
    # comes first: "row 3, arrival_s, decreases" -- also when rows 3 and 4 share a batch (the prompt rule,
    # listed before the order rule, used to win there and name row 4)
    path = _write(tmp_path / "t.parquet", [(0, 16, [1]), (5, 16, [2]), (3, 16, [3]), (9, -1, []), (10, 16, [5])])
    monkeypatch.setattr(parquet.read_parquet, "__defaults__", ("raise", rows))
    with pytest.raises(InputError) as err:
        list(open_trace(path).iter_batches())
    assert err.value.line == 3 and err.value.field == "arrival_s" and "decreases" in str(err.value)


@pytest.mark.parametrize("rows", [1, 2, 4, 1 << 14])
def test_a_skipped_row_never_raises_the_order_bar(tmp_path, monkeypatch, rows):
    # row 2 (100 s) has -1 prompt tokens and is skipped; rows 3 (50 s) and 4 (60 s) follow row 1 (0 s) in order,
    # so they are kept: arrivals 0, 50, 60, one row skipped -- in one batch as across batches
    path = _write(tmp_path / "t.parquet", [(0, 16, [1]), (100, -1, []), (50, 16, [3]), (60, 16, [4])])
    monkeypatch.setattr(parquet.read_parquet, "__defaults__", ("raise", rows))
    trace = open_trace(path, on_error="skip")
    got = [float(t) for b in trace.iter_batches() for t in b.arrival_s]
    assert got == [0.0, 50.0, 60.0] and trace.skipped == 1


@pytest.mark.parametrize("rows", [1, 3, 1 << 14])
def test_a_repeated_id_is_the_first_bad_row_when_it_comes_first(tmp_path, monkeypatch, rows):
    # row 2 repeats id 7 (two blocks, 32 tokens); row 4 has -1 prompt tokens: row 2, block_hashes, is named
    path = _write(tmp_path / "t.parquet", [(0, 16, [1]), (1, 32, [7, 7]), (2, 16, [3]), (3, -1, [])])
    monkeypatch.setattr(parquet.read_parquet, "__defaults__", ("raise", rows))
    with pytest.raises(InputError) as err:
        list(open_trace(path).iter_batches())
    assert err.value.line == 2 and err.value.field == "block_hashes" and "id 7 repeated at positions 0 and 1" in str(err.value)
