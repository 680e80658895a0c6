"""Benchmark: the floor of a two-tier LRU replay on this machine -- a minimal compiled two-tier LRU, no scheduler.

The stream: per request of the trace (in trace order), its cacheable blocks head to tail (``BlockRules().
cacheable_blocks``: full prompt blocks, ``input_length // 512`` for Mooncake), one access each -- the accesses
the modeled ``pcs.replay`` looks up, without its scheduler's order, pins or columns. ``benchmarks/floor_lru2.c``
(compiled here with the system C compiler, ``-O3`` as setup.py builds pcs, into a temporary directory) replays
it through an exclusive two-tier LRU (GPU ``--gpu`` blocks, CPU ``--cpu`` blocks, a GPU victim demoted to the
CPU, a CPU victim dropped, a CPU hit restored to the GPU) in three variants:

- ``hashed``: an open-addressing table of the resident blocks only (slots of entry index + 32-bit fingerprint,
  as pcs/cache/_oatable.h; at most half full) over entries with doubly linked lists: what a replay of this design
  must do per access;
- ``hashed_prefetch``: the same with the table slot of the access ``--ahead`` places later prefetched, and the
  entry its slot names ``--ahead / 2`` places later;
- ``dense``: the ids remapped to 0 .. D-1 beforehand (untimed), per-id link arrays, no hash table: the floor of
  the list links alone;
- ``libcachesim`` (when installed): the speed targets' reference (docs/performance.md, Summary), ``LRU(GPU).process_trace`` on the flat LRU stream of
  the trace (:func:`common.flat_lru_stream`, 2 gets per access, written once as oracleGeneral, untimed), timed in
  the same rounds -- so each variant's ratio to it is the most a replay of that design could show.

The variants' hits per tier are checked equal (three implementations of one rule; a disagreement exits 2).
Timed: the C call alone (``time.perf_counter`` and ``time.process_time`` around it), ``--repeat`` times each,
variants alternated; medians and minima, in ns per cacheable access (libCacheSim's too: its time over the same
count). The figure is the least any compiled loop of this design spends per access on this VM: the modeled
replay's step loop (feed + close) adds its scheduler, pins, releases and per-request columns on top.

Usage: python benchmarks/bench_floor.py TRACE [--gpu 16384] [--cpu 65536] [--repeat 7] [--ahead 16]
Prints one line per variant, then the JSON line last.
"""
from __future__ import annotations

import argparse
import ctypes
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

BENCH = "floor"
SOURCE = Path(__file__).resolve().parent / "floor_lru2.c"


def forward_stream(trace_path: str) -> np.ndarray:
    """The trace's cacheable blocks, request by request, head to tail: np.uint64, shape (cacheable accesses,)."""
    from pcs.blocks import BlockRules
    from pcs.trace import open_trace

    rules, parts = BlockRules(), []
    for b in open_trace(trace_path).iter_batches():
        counts = np.diff(b.block_offsets)
        n = np.fromiter((rules.cacheable_blocks(int(p), int(c), b.block_size)
                         for p, c in zip(b.prompt_tokens, counts)), dtype=np.int64, count=len(counts))
        starts = np.asarray(b.block_offsets[:-1], dtype=np.int64)
        within = np.arange(int(n.sum()), dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
        parts.append(np.asarray(b.block_hashes)[np.repeat(starts, n) + within])
    return np.ascontiguousarray(np.concatenate(parts) if parts else np.zeros(0, np.uint64), dtype=np.uint64)


def build(tmp: Path) -> ctypes.CDLL:
    """floor_lru2.c compiled into tmp and loaded; a compiler error exits 2 with its message."""
    so = tmp / "floor_lru2.so"
    r = subprocess.run(["cc", "-O3", "-shared", "-fPIC", "-o", str(so), str(SOURCE)],
                       capture_output=True, text=True)
    if r.returncode:
        common.fail(BENCH, f"cc failed: {r.stderr.strip()}")
    lib = ctypes.CDLL(str(so))
    p, i64 = ctypes.c_void_p, ctypes.c_int64
    lib.floor_dense.argtypes = [p, i64, i64, i64, i64, p]
    lib.floor_hashed.argtypes = [p, i64, i64, i64, i64, p]
    return lib


def runner(lib: ctypes.CDLL, name: str, keys: np.ndarray, dense: np.ndarray, d: int, g: int, c: int, ahead: int):
    """A callable running one variant once: returns (wall s, CPU s, (GPU hits, CPU hits))."""
    hits = np.zeros(2, np.int64)
    n = keys.shape[0]

    def call():
        t0, c0 = time.perf_counter(), time.process_time()
        if name == "dense":
            rc = lib.floor_dense(dense.ctypes.data, n, d, g, c, hits.ctypes.data)
        else:
            rc = lib.floor_hashed(keys.ctypes.data, n, g, c, ahead if name == "hashed_prefetch" else 0,
                                  hits.ctypes.data)
        w, cpu = time.perf_counter() - t0, time.process_time() - c0
        if rc:
            raise MemoryError(f"{name}: no memory")
        return w, cpu, (int(hits[0]), int(hits[1]))
    return call


def libcachesim_runner(trace: str, g: int, tmp: Path):
    """libCacheSim's ``LRU(g).process_trace`` on the flat LRU stream of the trace (:func:`common.flat_lru_stream`,
    written once as oracleGeneral into tmp, untimed): the reference of the speed targets' ratios (bench_user.py's
    ``libcachesim`` case, GPU capacity only); a callable as :func:`runner`'s (hits: (stream length, misses)), or
    None when libcachesim is not installed."""
    try:
        import libcachesim as lcs
    except ImportError:
        return None
    from compare_libcachesim import hashpower_for, write_oracle_general
    from pcs.trace import open_trace

    fs = common.flat_lru_stream(open_trace(trace))
    path = tmp / "flat.oracleGeneral"
    write_oracle_general(fs, path)
    n = int(fs.ids.shape[0])

    def call():
        t0, c0 = time.perf_counter(), time.process_time()
        cache = lcs.LRU(g, hashpower=hashpower_for(g))
        miss_ratio, _ = cache.process_trace(lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE))
        return time.perf_counter() - t0, time.process_time() - c0, (n, round(miss_ratio * n))
    return call


def measure(trace: str, g: int, c: int, repeat: int, ahead: int) -> dict:
    """Every variant ``repeat`` times, alternated (one untimed warm-up call each), beside libCacheSim when
    installed; the JSON summary."""
    keys = forward_stream(trace)
    uniq, inv = np.unique(keys, return_inverse=True)
    dense = np.ascontiguousarray(inv, dtype=np.int64)
    names = ["hashed", "hashed_prefetch", "dense"]
    with tempfile.TemporaryDirectory() as tmp:
        lib = build(Path(tmp))
        calls = {nm: runner(lib, nm, keys, dense, int(uniq.size), g, c, ahead) for nm in names}
        hits = {nm: calls[nm]()[2] for nm in names}
        if len(set(hits.values())) != 1:
            common.fail(BENCH, f"the variants disagree on the hits per tier: {hits}")
        lcs_call = libcachesim_runner(trace, g, Path(tmp))
        if lcs_call:
            lcs_gets, lcs_misses = lcs_call()[2]
            calls["libcachesim"] = lcs_call
        times = {nm: [] for nm in calls}
        for r in range(repeat):
            for nm in (list(calls) if r % 2 == 0 else list(calls)[::-1]):
                times[nm].append(calls[nm]()[:2])
    out = {"bench": BENCH, "trace": trace, "accesses": int(keys.shape[0]), "distinct_blocks": int(uniq.size),
           "gpu_blocks": g, "cpu_blocks": c, "ahead": ahead, "repeat": repeat, "gpu_hits": hits["dense"][0],
           "cpu_hits": hits["dense"][1], "machine": common.machine_info()}
    if "libcachesim" in calls:
        out["libcachesim_gets"], out["libcachesim_misses"] = lcs_gets, lcs_misses
    return report(out, times, names)


def report(out: dict, times: dict, names: list[str]) -> dict:
    """Each variant's medians and minimum into ``out`` (ns per access, ms per call) and one printed line each,
    then libCacheSim's ratios and the hits; returns ``out``. times: variant -> [(wall s, CPU s), ...]."""
    n = out["accesses"]
    for nm in times:
        w = [t[0] for t in times[nm]]
        cpu = [t[1] for t in times[nm]]
        out[nm] = {"wall_ns_median": statistics.median(w) / n * 1e9, "wall_ns_min": min(w) / n * 1e9,
                   "cpu_ns_median": statistics.median(cpu) / n * 1e9, "wall_ms_median": statistics.median(w) * 1e3}
        print(f"{nm:16s} {out[nm]['wall_ns_median']:6.1f} ns/access median wall (min {out[nm]['wall_ns_min']:.1f}, "
              f"CPU {out[nm]['cpu_ns_median']:.1f}); {out[nm]['wall_ms_median']:.1f} ms for {n:,} accesses")
    if "libcachesim" in times:
        lw = out["libcachesim"]["wall_ms_median"]
        print("x libCacheSim (its median wall over each variant's): "
              + ", ".join(f"{nm} {lw / out[nm]['wall_ms_median']:.2f}x" for nm in names))
    print(f"hits: GPU {out['gpu_hits']:,}, CPU {out['cpu_hits']:,} of {n:,} accesses, "
          f"{out['distinct_blocks']:,} distinct blocks")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace", help="a pcs trace (Parquet or Mooncake JSONL)")
    ap.add_argument("--gpu", type=common.count, default=16384, help="GPU tier capacity, blocks")
    ap.add_argument("--cpu", type=common.count, default=65536, help="CPU tier capacity, blocks")
    ap.add_argument("--repeat", type=common.count, default=7, help="timed calls per variant")
    ap.add_argument("--ahead", type=common.count, default=16, help="hashed_prefetch's prefetch distance, accesses")
    a = ap.parse_args()
    a.trace = str(common.need_trace(a.trace, BENCH))
    common.emit(measure(a.trace, a.gpu, a.cpu, a.repeat, a.ahead))


if __name__ == "__main__":
    common.run(main, BENCH)
