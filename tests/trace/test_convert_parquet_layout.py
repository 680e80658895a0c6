"""How ``pcs trace convert`` lays out Parquet: delta-packed ids, row groups of a fixed size, exact ids.

The layout is a speed choice (pcs/trace/convert.py ``PARQUET_WRITE_OPTIONS``, docs/performance.md); what
must hold whatever the layout: every id round-trips bit for bit, including the extremes of uint64, where
DELTA_BINARY_PACKED computes deltas with int64 wrap-around (Parquet format spec, "Delta Encoding").
"""
import json

import numpy as np
import pyarrow.parquet as pq

from pcs.trace import open_trace
from pcs.trace.convert import ROW_GROUP_ROWS, convert

# Hand-picked ids: 0, the largest uint64, the int64 boundary on both sides, and a descending jump of 2**64 - 1.
EXTREMES = [[0, 2**64 - 1], [2**63 - 1, 2**63], [2**64 - 1, 0], [5, 2**63 + 5]]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps({"timestamp": i, "input_length": 1000, "output_length": 1, "hash_ids": ids})
                            + "\n" for i, ids in enumerate(rows)))


def test_extreme_ids_round_trip_exactly(tmp_path):
    src, out = tmp_path / "t.jsonl", tmp_path / "t.parquet"
    _jsonl(src, EXTREMES)
    convert(open_trace(src), out)
    (b,) = list(open_trace(out).iter_batches())
    assert b.block_hashes.dtype == np.uint64
    assert b.block_hashes.tolist() == [i for row in EXTREMES for i in row]
    assert b.block_offsets.tolist() == [0, 2, 4, 6, 8]


def test_ids_are_delta_packed_in_row_groups_of_the_readers_batch(tmp_path):
    # 2 * ROW_GROUP_ROWS + 3 rows of two ids each, written from 1 MiB JSONL chunks (about 13 k rows each):
    # row groups of ROW_GROUP_ROWS, ROW_GROUP_ROWS and 3 rows, whatever the chunking.
    n = 2 * ROW_GROUP_ROWS + 3
    src, out = tmp_path / "t.jsonl", tmp_path / "t.parquet"
    _jsonl(src, [[2 * i, 2 * i + 1] for i in range(n)])
    convert(open_trace(src), out)
    md = pq.ParquetFile(out).metadata
    assert [md.row_group(g).num_rows for g in range(md.num_row_groups)] == [ROW_GROUP_ROWS, ROW_GROUP_ROWS, 3]
    ids = md.schema.names.index("element") if "element" in md.schema.names else 3
    assert "DELTA_BINARY_PACKED" in md.row_group(0).column(ids).encodings
    got = np.concatenate([b.block_hashes for b in open_trace(out).iter_batches()])
    assert np.array_equal(got, np.arange(2 * n, dtype=np.uint64))


def test_pages_are_written_uncompressed(tmp_path):
    # every column chunk UNCOMPRESSED: the read never decompresses a page (pcs/trace/convert.py)
    src, out = tmp_path / "t.jsonl", tmp_path / "t.parquet"
    _jsonl(src, [[2 * i, 2 * i + 1] for i in range(100)])
    convert(open_trace(src), out)
    md = pq.ParquetFile(out).metadata
    assert {md.row_group(0).column(j).compression for j in range(md.num_columns)} == {"UNCOMPRESSED"}


def test_a_zstd_file_of_an_older_writer_reads_the_same(tmp_path):
    # the same rows written as pcs wrote them before (zstd pages): the same batch, value for value
    rows = [[7, 8], [7, 9], [2**64 - 1, 4], [0, 2**63]]  # 1000 tokens: 2 ids a row
    src, new, old = tmp_path / "t.jsonl", tmp_path / "new.parquet", tmp_path / "old.parquet"
    _jsonl(src, rows)
    convert(open_trace(src), new)
    pq.write_table(pq.read_table(new), old, compression="zstd",
                   column_encoding={"block_hashes.list.element": "DELTA_BINARY_PACKED"}, use_dictionary=False)
    assert {pq.ParquetFile(old).metadata.row_group(0).column(j).compression for j in range(4)} == {"ZSTD"}
    (b,) = list(open_trace(old).iter_batches())
    assert b.block_hashes.tolist() == [7, 8, 7, 9, 2**64 - 1, 4, 0, 2**63]
    assert b.block_offsets.tolist() == [0, 2, 4, 6, 8]
    assert b.arrival_s.tolist() == [0.0, 0.001, 0.002, 0.003]  # Mooncake timestamps are ms
    assert b.prompt_tokens.tolist() == [1000] * 4 and b.output_tokens.tolist() == [1] * 4
