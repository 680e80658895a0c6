"""A Parquet trace read by a replay: batch sizes by use, one footer read per call, no default-pool open.

pcs/trace/parquet.py reads in :data:`~pcs.trace.parquet.STREAM_ROWS` (4,096) rows for a caller that holds one batch
at a time (the one-pass scan's read-ahead decodes batch k + 1 while it scans batch k, even at 1x Mooncake: 12,031
rows, one row group) and :data:`~pcs.trace.parquet.READ_ROWS` (16,384) for one that keeps and joins every batch
(``side_by_side``, :class:`pcs.engine.decoded.Decoded`); the rows are the same either way. The footer is read once
by :func:`pcs.trace.open_trace`, which keeps the scans' size hint (the footer's count of block hashes), so a replay
opens the file twice: for the trace and for its one read of the rows.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

import pcs
from pcs.trace import open_trace, parquet
from pcs.trace.parquet import SCHEMA_NAME

from helpers import fresh_python


def _write(path, rows: int, ids_per_row: int = 1):
    """``rows`` requests: request i arrives at i s with 512 * ``ids_per_row`` tokens (at 512 per block:
    ``ids_per_row`` ids), ids i * ids_per_row ... (all distinct)."""
    k = ids_per_row
    t = pa.table({"arrival_s": pa.array([float(i) for i in range(rows)], pa.float64()),
                  "prompt_tokens": pa.array([512 * k] * rows, pa.int64()),
                  "output_tokens": pa.array([1] * rows, pa.int64()),
                  "block_hashes": pa.array([list(range(i * k, i * k + k)) for i in range(rows)], pa.list_(pa.uint64()))})
    meta = {b"pcs.schema": SCHEMA_NAME.encode(), b"pcs.block_size": b"512", b"pcs.source_format": b"mooncake"}
    pq.write_table(t.replace_schema_metadata(meta), path)
    return path


def test_streamed_in_stream_rows_kept_in_read_rows_same_rows(tmp_path):
    # 4,097 rows: a stream gives 4,096 + 1 (STREAM_ROWS = 2**12), a read that keeps every batch one of 4,097
    # (READ_ROWS = 2**14 > 4,097); the ids are 0..4,096 in order either way
    assert (parquet.STREAM_ROWS, parquet.READ_ROWS) == (4096, 16384)
    trace = open_trace(_write(tmp_path / "t.parquet", 4097))
    streamed, kept = list(trace.iter_batches()), list(trace.iter_batches(side_by_side=True))
    assert [len(b) for b in streamed] == [4096, 1] and [len(b) for b in kept] == [4097]
    assert [b.first_request_id for b in streamed] == [0, 4096] and kept[0].first_request_id == 0
    want = list(range(4097))
    assert [h for b in streamed for h in b.block_hashes.tolist()] == want == kept[0].block_hashes.tolist()
    assert [t for b in streamed for t in b.arrival_s.tolist()] == [float(i) for i in want] == kept[0].arrival_s.tolist()


def test_the_footer_hint_is_kept_by_open_trace(tmp_path, monkeypatch):
    # 3 rows of 2 ids: the footer counts 6 block hashes; the hint is then given without opening the file again
    trace = open_trace(_write(tmp_path / "t.parquet", 3, ids_per_row=2))
    assert trace.parquet_block_hashes == 6

    def no_open(*a, **k):
        raise AssertionError("opened again")

    monkeypatch.setattr(parquet, "_open", no_open)
    assert parquet.expected_block_hashes(trace) == 6


def test_a_replay_reads_the_footer_once(tmp_path, monkeypatch):
    # one footer read by open_trace (block size, reuse note, hint), which the read of the rows takes
    # (Trace._take_opened) -- for the one-tier sequential scan as for the default two-tier modeled replay, whose
    # step scheduler reads the trace through a limited view (before: 2 each, the read reading it again; earlier 4
    # for the one-tier scan, whose size hint opened it twice more)
    path = _write(tmp_path / "t.parquet", 5)
    opened = []
    real = parquet._open

    def counting(p, n, metadata=None):
        if metadata is None:
            opened.append(1)
        return real(p, n, metadata)

    monkeypatch.setattr(parquet, "_open", counting)
    r = pcs.replay(str(path), tiers=["gpu=4blocks"], policy="lru", timing="sequential")
    assert (r.summary.requests, len(opened)) == (5, 1)
    opened.clear()
    r = pcs.replay(str(path), tiers=["gpu=4blocks", "cpu=16blocks"], policy="lru")
    assert (r.summary.requests, len(opened)) == (5, 1)


def test_opening_a_trace_takes_nothing_from_pyarrows_default_pool(tmp_path):
    # a fresh process: the footer's read goes through the system pool, so pyarrow's default pool (mimalloc, whose
    # first use sets up arenas of about 4 MB resident) has never allocated a byte (before: 1,984 B here, the footer
    # read's buffers)
    path = _write(tmp_path / "t.parquet", 2)
    code = ("import pyarrow as pa\nfrom pcs.trace import open_trace\n"
            f"t = open_trace({str(path)!r})\n"
            "print(t.block_size, t.parquet_block_hashes, pa.default_memory_pool().max_memory())\n")
    assert fresh_python(code, tmp_path).split() == ["512", "2", "0"]
