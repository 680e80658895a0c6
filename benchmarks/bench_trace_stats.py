"""Benchmark: ``pcs trace stats`` (:func:`pcs.trace.stats.trace_stats`) in block ids per second.

The Mooncake FAST'25 conversation trace replicated (``--copies``, default
1,10,50; :func:`common.replicate_mooncake`, ids remapped per copy), as JSONL
and as pcs Parquet (converted once, untimed). Each file's whole
``trace_stats(open_trace(path))`` (read, reuse distances, single-sequence
hits, prefix tree, conversations) is timed ``--rounds`` times, JSONL and
Parquet alternated; medians of wall and CPU seconds (``time.process_time``).

Targets: >= 10 M ids/s from Parquet and >= 5 M from JSONL at 50x.
The last line printed is one JSON object.

Usage: python benchmarks/bench_trace_stats.py [--copies 1,10,50] [--rounds 2]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def _stats(path: Path) -> tuple[float, float, int]:
    from pcs.trace import open_trace
    from pcs.trace.stats import trace_stats

    w, c = time.perf_counter(), time.process_time()
    s = trace_stats(open_trace(path))
    return time.perf_counter() - w, time.process_time() - c, int(s["block_accesses"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=common.counts, default="1,10,50")
    ap.add_argument("--rounds", type=common.count, default=2)
    a = ap.parse_args()
    common.need_trace(common.MOONCAKE_CONV, "bench_trace_stats")
    from pcs.trace import open_trace
    from pcs.trace.convert import convert

    rows = []
    with tempfile.TemporaryDirectory(prefix="pcs-bench-") as tmp:
        one = common.replicate_mooncake(common.MOONCAKE_CONV, Path(tmp), 1, count="ids", name="one.jsonl").block_ids
        for k in a.copies:
            rep = common.replicate_mooncake(common.MOONCAKE_CONV, Path(tmp), k * one, count="ids", name=f"x{k}.jsonl")
            parquet = Path(tmp) / f"x{k}.parquet"
            convert(open_trace(rep.path), parquet)
            times: dict[str, list] = {"jsonl": [], "parquet": []}
            for r in range(a.rounds):
                for fmt in (("jsonl", "parquet") if r % 2 == 0 else ("parquet", "jsonl")):
                    times[fmt].append(_stats(rep.path if fmt == "jsonl" else parquet))
            row = {"copies": k, "ids": rep.block_ids}
            for fmt, ts in times.items():
                wall, cpu = statistics.median(t[0] for t in ts), statistics.median(t[1] for t in ts)
                row[fmt] = {"s": round(wall, 3), "ids_per_s": round(rep.block_ids / wall),
                            "ids_per_cpu_s": round(rep.block_ids / cpu)}
                print(f"x{k:<3d} {fmt:8s} {rep.block_ids:>11,} ids  {wall:7.2f} s  {rep.block_ids / wall / 1e6:6.2f} M ids/s"
                      f"  {rep.block_ids / cpu / 1e6:6.2f} M ids/cpu-s")
            rows.append(row)
            rep.path.unlink()
            parquet.unlink()
    print(json.dumps({"bench": "trace_stats", "rounds": a.rounds, "sizes": rows,
                      "targets_ids_per_s": {"parquet": 10_000_000, "jsonl": 5_000_000},
                      "machine": common.machine_info()}))


if __name__ == "__main__":
    common.run(main, "bench_trace_stats")
