"""Where the Parquet reader's memory comes from, and what a replay from Parquet imports (pcs/trace/parquet.py).

The reader decodes through pyarrow's own reader class on pyarrow's *system* pool (the C library's malloc), so the
pages the decode frees go back to the allocator numpy and the compiled engines use; pyarrow's default pool
(mimalloc) kept them for the rest of the process. It reads the ids as the list values' slice, so no
``pyarrow.compute`` import (``ListArray.flatten()`` imports it on its first call), and it opens files without
``pyarrow.parquet`` (and ``pyarrow.fs`` with it).
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from pcs.trace import open_trace
from pcs.trace.parquet import SCHEMA_NAME

from helpers import fresh_python


def _write(path):
    """Two requests: 1500 tokens at 512 per block -> ceil = 3 ids (1, 2, 3); 1000 tokens -> 2 ids (4, 5)."""
    t = pa.table({"arrival_s": pa.array([0.0, 1.0], pa.float64()), "prompt_tokens": pa.array([1500, 1000], pa.int64()),
                  "output_tokens": pa.array([5, 7], pa.int64()),
                  "block_hashes": pa.array([[1, 2, 3], [4, 5]], pa.list_(pa.uint64()))})
    meta = {b"pcs.schema": SCHEMA_NAME.encode(), b"pcs.block_size": b"512", b"pcs.source_format": b"mooncake"}
    pq.write_table(t.replace_schema_metadata(meta), path)
    return path


def test_decoded_columns_live_in_the_system_pool_and_are_returned(tmp_path):
    path = _write(tmp_path / "t.parquet")
    system, default = pa.system_memory_pool(), pa.default_memory_pool()
    s0, d0 = system.bytes_allocated(), default.bytes_allocated()
    batches = list(open_trace(path).iter_batches())
    assert [b.block_hashes.tolist() for b in batches] == [[1, 2, 3, 4, 5]]
    # held while the batches are: at least the 5 ids (8 B each) and the arrival and token columns (3 x 2 x 8 B)
    assert system.bytes_allocated() - s0 >= 5 * 8 + 3 * 2 * 8
    assert default.bytes_allocated() == d0
    del batches
    assert system.bytes_allocated() == s0


def test_a_replay_from_parquet_imports_neither_pyarrow_compute_nor_pyarrow_parquet(tmp_path):
    path = _write(tmp_path / "t.parquet")
    code = ("import sys, pcs\n"
            f"r = pcs.replay({str(path)!r}, tiers=['gpu=4blocks', 'cpu=16blocks'], policy='lru')\n"
            "print(r.summary.requests, 'pyarrow.compute' in sys.modules, 'pyarrow.parquet' in sys.modules)\n")
    assert fresh_python(code, tmp_path).split() == ["2", "False", "False"]
