"""A Parquet trace opened by ``open_trace`` hands its open reader to its first read only (pcs/trace/api.py
``Trace._take_opened``, pcs/trace/parquet.py ``Opened``): the file is opened once for the footer and that read,
each later read opens it again, and a copy or a pickled trace carries no reader (it opens the file when read).
The rows of every read are the file's, worked out from the rows written here."""
from __future__ import annotations

import copy
import pickle

import pyarrow as pa
import pyarrow.parquet as pq

from pcs.trace import open_trace, parquet

# three requests at block size 2: prompts 3, 2, 5 tokens -> ceil(3 / 2) = 2, 1, ceil(5 / 2) = 3 ids
ROWS = [(0.0, 3, [11, 12]), (1.0, 2, [11]), (2.5, 5, [11, 12, 13])]


def _write(path) -> str:
    schema = parquet.arrow_schema(block_size=2)
    cols = [pa.array([r[0] for r in ROWS], pa.float64()), pa.array([r[1] for r in ROWS], pa.int64()),
            pa.array([1] * len(ROWS), pa.int64()), pa.array([r[2] for r in ROWS], schema.field("block_hashes").type)]
    pq.write_table(pa.Table.from_arrays(cols, schema=schema), path)
    return str(path)


def _rows(trace) -> tuple:
    """(arrivals, prompts, block offsets, ids) of a whole read."""
    bs = list(trace.iter_batches())
    return ([t for b in bs for t in b.arrival_s.tolist()], [p for b in bs for p in b.prompt_tokens.tolist()],
            [n for b in bs for n in (b.block_offsets[1:] - b.block_offsets[:-1]).tolist()],
            [h for b in bs for h in b.block_hashes.tolist()])


WANT = ([0.0, 1.0, 2.5], [3, 2, 5], [2, 1, 3], [11, 12, 11, 11, 12, 13])


def test_the_first_read_takes_the_reader_the_next_opens_again(tmp_path, monkeypatch):
    path = _write(tmp_path / "t.parquet")
    opens = []
    real = parquet._open
    monkeypatch.setattr(parquet, "_open", lambda p, n: opens.append(str(p)) or real(p, n))
    trace = open_trace(path)
    assert trace.block_size == 2 and trace.parquet_rows == 3 and trace.parquet_block_hashes == 6
    assert opens == [path]                     # the footer's open
    assert _rows(trace) == WANT
    assert opens == [path]                     # the first read: the same reader, no second open
    assert _rows(trace) == WANT
    assert opens == [path, path]               # a later read opens the file again


def test_a_copy_or_a_pickled_trace_reads_without_the_reader(tmp_path):
    path = _write(tmp_path / "t.parquet")
    trace = open_trace(path)
    again = pickle.loads(pickle.dumps(trace))  # the open reader does not pickle: left behind
    twin = copy.copy(trace)
    assert _rows(again) == WANT and _rows(twin) == WANT and _rows(trace) == WANT
