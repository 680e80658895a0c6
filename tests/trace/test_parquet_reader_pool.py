"""Where the Parquet reader's memory comes from, and what a replay from Parquet imports (pcs/trace/parquet.py).

The reader decodes through pyarrow's own reader class on pyarrow's *system* pool (the C library's malloc), so the
pages the decode frees go back to the allocator numpy and the compiled engines use; pyarrow's default pool
(mimalloc) kept them for the rest of the process. It reads the ids as the list values' slice, so no
``pyarrow.compute`` import (``ListArray.flatten()`` imports it on its first call), and it opens files without
``pyarrow.parquet`` (and ``pyarrow.fs`` with it).
"""
from __future__ import annotations

import gc
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
    gc.collect()    # an earlier test's garbage (a cycle holding Arrow buffers) freed now, not inside the counts below
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


def _read_on_worker(path, side_by_side: bool = True) -> list:
    """The ids of ``path`` read whole (``iter_batches``) on a thread other than the main one, as a replay's reader
    worker reads it."""
    import threading

    out: list = []
    t = threading.Thread(target=lambda: out.extend(b.block_hashes.tolist()
                                                   for b in open_trace(path).iter_batches(side_by_side=side_by_side)))
    t.start()
    t.join()
    return out


def test_the_free_heap_is_handed_back_once_after_a_worker_reads_side_by_side(tmp_path, monkeypatch):
    import pcs.trace.parquet as parquet

    calls: list[int] = []
    monkeypatch.setattr(parquet, "_given_back", False)
    monkeypatch.setattr(parquet, "_release_heap", lambda: calls.append(1))
    path = _write(tmp_path / "t.parquet")
    # read on the main thread (threads off): its own malloc reuses what pyarrow freed -- nothing handed back
    assert [b.block_hashes.tolist() for b in open_trace(path).iter_batches(side_by_side=True)] == [[1, 2, 3, 4, 5]]
    assert calls == []
    # a streamed read (the scan's), even on a worker: nothing
    assert _read_on_worker(path, side_by_side=False) == [[1, 2, 3, 4, 5]]
    assert calls == []
    # the decode pass's read on a worker: handed back once, at its end; the next such read: not again
    assert _read_on_worker(path) == [[1, 2, 3, 4, 5]]
    assert calls == [1]
    assert _read_on_worker(path) == [[1, 2, 3, 4, 5]]
    assert calls == [1]


def test_the_hand_back_returns_a_worker_arenas_free_pages_to_the_system(tmp_path):
    import platform

    import pytest

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("malloc_trim is glibc's")
    # a worker thread (a malloc arena of its own) touches 48 blocks of 64 KiB (3 MiB, below glibc's mmap threshold:
    # from the arena) and frees every other one: 1.5 MiB free and resident in that arena between blocks in use, so
    # glibc trims nothing by itself. The hand-back then returns their whole pages: the anonymous resident set falls
    # by at least 1 MiB (24 free blocks of 64 KiB, each holding 15 whole pages: 1.4 MiB).
    code = ("import threading\n"
            "from pcs.trace.parquet import _release_heap\n"
            "def rss():\n"
            "    return int(next(l for l in open('/proc/self/status') if l.startswith('RssAnon')).split()[1]) * 1024\n"
            "def churn():\n"
            "    global kept\n"
            "    blocks = [bytearray(65536) for _ in range(48)]\n"
            "    for b in blocks:\n"
            "        b[:] = bytes([1]) * 65536\n"
            "    kept = blocks[1::2]\n"
            "t = threading.Thread(target=churn)\n"
            "t.start()\n"
            "t.join()\n"
            "before = rss()\n"
            "_release_heap()\n"
            "print(before - rss() >= 1 << 20)\n")
    assert fresh_python(code, tmp_path).split() == ["True"]
