"""Arrays of 128 KiB to 4 MB kept between replays (pcs/_kept.h pools, since 2026-12-05): the one-pass scan's
zeroed arrays (pcs/engine/_lruscan.c ``lru_zalloc``: once a scan has ended in the process; a process's first scan
takes calloc's blocks, as before) and the Parquet reader's id arena (pcs/trace/_jsonrows.cpp ``arena_alloc``) of a
trace about the size of 1x Mooncake's come from their modules' pools, as 10x's did already (docs/performance.md,
"A steady 1x call's page faults"). What one call leaves there must not reach the next: a
replay of trace A after a replay of B, after two at once on two threads, or after a call that failed midway gives
A's result -- the result of the Python reference (``native="python"``: no compiled code, no pool), summary and
per-request columns.

The traces (Parquet, block size 512, two tiers of 16,384 and 65,536 blocks, the default call's): A has 10,000
requests of 4 new ids each (ids 0 .. 39,999), then the same 10,000 again; B the same ids, each request's four in
reverse order and the requests from the last to the first. 80,000 ids in the footer (the scan's size hint,
``expected_block_hashes``: 40,000 distinct): the scan's direct array 90,000 entries of 8 B (720,000 B) and its
lower tier's times 90,000 of 4 B (360,000 B), the arena 80,000 ids of 8 B (640,000 B): all three from 128 KiB to
4 MB, where the modules took calloc's and malloc's blocks before.
"""
from __future__ import annotations

import gc
import json
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers import tables_equal, without_engine_keys
from pcs import _native, release_memory
from pcs.engine.api import replay
from pcs.errors import InputError
from pcs.trace.parquet import SCHEMA_NAME

pytestmark = pytest.mark.skipif(bool(_native.missing()), reason=f"compiled twins not built: {_native.missing()}")

KW = dict(tiers=["gpu=16384blocks", "cpu=65536blocks"], policy="lru")
ROWS, K = 20_000, 4          # requests, ids per request


def _write(path, order, nulls_at=None) -> str:
    """A Mooncake-like Parquet trace: request j arrives at j / 100 s with 512 * K - 100 prompt tokens, 10 output
    tokens and the K ids of ``order[j]``; a null output at row ``nulls_at`` when given."""
    ids = [list(r) for r in order]
    t = pa.table({"arrival_s": pa.array([j / 100 for j in range(len(ids))], pa.float64()),
                  "prompt_tokens": pa.array([512 * K - 100] * len(ids), pa.int64()),
                  "output_tokens": pa.array([None if j == nulls_at else 10 for j in range(len(ids))], pa.int64()),
                  "block_hashes": pa.array(ids, pa.list_(pa.uint64()))})
    meta = {b"pcs.schema": SCHEMA_NAME.encode(), b"pcs.block_size": b"512", b"pcs.source_format": b"mooncake"}
    pq.write_table(t.replace_schema_metadata(meta), path)
    return str(path)


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("pools")
    half = [range(i * K, i * K + K) for i in range(ROWS // 2)]
    a = _write(d / "a.parquet", half + half)
    b = _write(d / "b.parquet", [r[::-1] for r in (half + half)[::-1]])
    bad = _write(d / "bad.parquet", half + half, nulls_at=ROWS - 1)      # its last row's output is null
    return {"a": a, "b": b, "bad": bad}


def _key(result) -> str:
    return json.dumps(without_engine_keys(result.summary.to_dict()), default=str, sort_keys=True)


@pytest.fixture(scope="module")
def reference(traces):
    """Per trace: the Python reference's result (no compiled code)."""
    return {name: replay(traces[name], native="python", **KW) for name in ("a", "b")}


def _same(result, ref) -> None:
    assert _key(result) == _key(ref)
    tables_equal(ref.requests, result.requests)


def _pooled() -> tuple[int, int]:
    """(bytes the scan's pool keeps, bytes the id arenas' pool keeps)."""
    return _native.module("lruscan").kept_bytes(), _native.module("jsonrows").kept_bytes()


#: a fresh process: the pools' bytes after one replay of A, then after a second (each result dropped)
FRESH = """
import gc, sys
from pcs import _native
from pcs.engine.api import replay
kw = dict(tiers=["gpu=16384blocks", "cpu=65536blocks"], policy="lru")
got = []
for _ in range(2):
    replay(sys.argv[1], **kw)
    gc.collect()
    got.append((_native.module("lruscan").kept_bytes(), _native.module("jsonrows").kept_bytes()))
print(got)
"""


def test_the_arrays_of_a_call_this_size_are_kept(traces):
    # In a fresh process, after a first replay of A: the scan's arrays were calloc's (nothing in its pool), the
    # arena is in its pool: 640,000 B -> 643,072 B in whole 4 KiB pages. After a second replay: the scan's two
    # arrays in the pool too, 720,000 -> 720,896 B and 360,000 -> 360,448 B; the arena the same one, taken again.
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", FRESH, traces["a"]], capture_output=True, text=True, check=True,
                         cwd=root, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}).stdout
    assert out.strip() == str([(0, 643_072), (720_896 + 360_448, 643_072)])


def test_a_b_a(traces, reference):
    release_memory()
    _same(replay(traces["a"], **KW), reference["a"])
    _same(replay(traces["b"], **KW), reference["b"])      # the arena on A's (the scan's: A's if not calloc's)
    _same(replay(traces["a"], **KW), reference["a"])      # the arena and the scan's arrays on B's


def test_two_threads_then_a(traces, reference):
    got: dict = {}

    def run(name, i):
        got[(name, i)] = replay(traces[name], **KW)

    threads = [threading.Thread(target=run, args=(name, i)) for i in range(2) for name in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (name, _), result in got.items():
        _same(result, reference[name])
    _same(replay(traces["a"], **KW), reference["a"])


def test_a_call_failed_midway_then_a(traces, reference):
    replay(traces["b"], **KW)
    with pytest.raises(InputError, match="output"):
        replay(traces["bad"], **KW)
    gc.collect()
    _same(replay(traces["a"], **KW), reference["a"])
