"""A Parquet trace opened by ``open_trace`` hands its footer to its first read only (pcs/trace/api.py
``Trace._take_opened``, pcs/trace/parquet.py ``Opened``): the footer is read once for ``open_trace`` and that read,
each later read reads it again, a copy or a pickled trace carries none (it reads the footer when read), a file
replaced since is read afresh, and no file stays open while the trace is unread.
The rows of every read are the file's, worked out from the rows written here."""
from __future__ import annotations

import copy
import pickle
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pcs.trace import open_trace, parquet

# three requests at block size 2: prompts 3, 2, 5 tokens -> ceil(3 / 2) = 2, 1, ceil(5 / 2) = 3 ids
ROWS = [(0.0, 3, [11, 12]), (1.0, 2, [11]), (2.5, 5, [11, 12, 13])]


def _write(path, rows: list = ROWS) -> str:
    schema = parquet.arrow_schema(block_size=2)
    cols = [pa.array([r[0] for r in rows], pa.float64()), pa.array([r[1] for r in rows], pa.int64()),
            pa.array([1] * len(rows), pa.int64()), pa.array([r[2] for r in rows], schema.field("block_hashes").type)]
    pq.write_table(pa.Table.from_arrays(cols, schema=schema), path)
    return str(path)


def _rows(trace) -> tuple:
    """(arrivals, prompts, block offsets, ids) of a whole read."""
    bs = list(trace.iter_batches())
    return ([t for b in bs for t in b.arrival_s.tolist()], [p for b in bs for p in b.prompt_tokens.tolist()],
            [n for b in bs for n in (b.block_offsets[1:] - b.block_offsets[:-1]).tolist()],
            [h for b in bs for h in b.block_hashes.tolist()])


WANT = ([0.0, 1.0, 2.5], [3, 2, 5], [2, 1, 3], [11, 12, 11, 11, 12, 13])


def test_the_first_read_takes_the_footer_the_next_reads_it_again(tmp_path, monkeypatch):
    path = _write(tmp_path / "t.parquet")
    opens = []                                 # (path, whether the footer was read) of each open
    real = parquet._open
    monkeypatch.setattr(parquet, "_open", lambda p, n, metadata=None: opens.append((str(p), metadata is None))
                        or real(p, n, metadata))
    trace = open_trace(path)
    assert trace.block_size == 2 and trace.parquet_rows == 3 and trace.parquet_block_hashes == 6
    assert opens == [(path, True)]             # open_trace's open reads the footer
    assert _rows(trace) == WANT
    assert opens == [(path, True), (path, False)]                  # the first read: that footer, not read again
    assert _rows(trace) == WANT
    assert opens == [(path, True), (path, False), (path, True)]    # a later read reads it again


# the same schema, two requests: prompts 4 and 1 tokens at block size 2 -> 2 and 1 ids
OTHER = [(0.0, 4, [21, 22]), (3.0, 1, [21])]


def test_a_file_replaced_after_open_trace_is_read_afresh(tmp_path):
    # pcs trace convert renames its output into place: a trace opened before that must read the new file at
    # its first read as at every later one (the footer kept from the old file would read the new one's pages
    # with the old one's row groups)
    path = _write(tmp_path / "t.parquet")
    trace = open_trace(path)
    _write(tmp_path / "new.parquet", OTHER)
    (tmp_path / "new.parquet").replace(path)
    want = ([0.0, 3.0], [4, 1], [2, 1], [21, 22, 21])
    assert _rows(trace) == want and _rows(trace) == want


def _held(path) -> int:
    """How many of this process's file descriptors are open on ``path`` (Linux ``/proc/self/fd``). Counted by
    target, not in all: another thread of the test process (a pool of an earlier test, pyarrow's own) may open or
    close descriptors of its own meanwhile (CI once saw 33 -> 35 that way, none of them the trace's)."""
    import os

    held = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            held += os.readlink(f"/proc/self/fd/{fd}") == str(path)
        except OSError:      # closed since it was listed
            pass
    return held


def test_an_unread_trace_holds_no_file_open(tmp_path):
    path = Path(_write(tmp_path / "t.parquet")).resolve()
    traces = [open_trace(path) for _ in range(20)]
    assert _held(path) == 0
    with open(path, "rb"):
        assert _held(path) == 1       # the count sees a descriptor on the file when there is one
    assert all(_rows(t) == WANT for t in traces)
    assert _held(path) == 0


def test_a_copy_or_a_pickled_trace_reads_without_the_reader(tmp_path):
    path = _write(tmp_path / "t.parquet")
    trace = open_trace(path)
    again = pickle.loads(pickle.dumps(trace))  # the kept footer is left behind: read again at its first read
    twin = copy.copy(trace)
    assert _rows(again) == WANT and _rows(twin) == WANT and _rows(trace) == WANT
