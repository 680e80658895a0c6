"""Benchmark: ``pcs sweep summarize`` time and peak memory on a 3,000-point results directory, this tree
against another tree's (``--peer``, e.g. main's checkout with its venv), alternated rounds.

The directory: the 12 replay points of ``tests/sweep/dozen.toml`` (each file ~240 columns with its
``result_json``, as a real sweep writes them), each copied 250 times under new point ids -> 3,000 points.
Each round runs ``summarize`` in a fresh process per tree (imports included, as ``pcs sweep summarize``
pays them) and reads its wall time, CPU time (user + system) and peak RSS (``ru_maxrss``) from
``resource.getrusage`` of that child. The two trees' summaries are compared (front and best point ids).

Usage: python benchmarks/bench_sweep_summary.py --peer-python PEER_CHECKOUT/.venv/bin/python [--points 3000]
       [--rounds 3]
The last line printed is one JSON object with every figure (medians).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common  # benchmarks/common.py (this script's folder is on sys.path)

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import json, sys
from pcs.sweep.summary import summarize
s = summarize(sys.argv[1])
print(json.dumps({"front": [p.point_id for p in s.front], "best": [b.point_id for b in s.best],
                  "points": s.points}))
"""


def make_dir(out: Path, points: int) -> None:
    """``points`` result files: the dozen plan's 12, each cloned under new ids (``c<k>-<id>``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pcs.sweep import run_sweep

    seed = out / "seed"
    run_sweep(ROOT / "tests" / "sweep" / "dozen.toml", seed, jobs=1)
    tables = [pq.read_table(f) for f in sorted(seed.glob("*.parquet"))]
    for n in range(points):
        t = tables[n % len(tables)]
        pid = f"c{n // len(tables):04d}-{t.column('point_id')[0].as_py()}"
        t = t.set_column(t.column_names.index("point_id"), "point_id", pa.array([pid]))
        pq.write_table(t, out / f"{pid}.parquet")


def one(python: str, d: Path, cwd: str) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run([python, "-c", CHILD, str(d)], capture_output=True, text=True, cwd=cwd, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "max_rss_mb": after.ru_maxrss / 1024, "out": json.loads(r.stdout)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer-python", required=True, help="the other tree's python (its pcs installed editable)")
    ap.add_argument("--points", type=common.count, default=3000)
    ap.add_argument("--rounds", type=common.count, default=3)
    a = ap.parse_args()
    if not (os.path.isfile(a.peer_python) and os.access(a.peer_python, os.X_OK)):
        ap.error(f"--peer-python: not an executable file: {a.peer_python}")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "out"
        d.mkdir()
        make_dir(d, a.points)
        runs: dict[str, list[dict]] = {"this": [], "peer": []}
        for _ in range(a.rounds):                       # alternated; ru_maxrss of CHILDREN is a running max,
            for name, py in (("peer", a.peer_python), ("this", sys.executable)):   # so one process per figure
                res = subprocess.run([sys.executable, __file__, "--one", py, str(d)], capture_output=True,
                                     text=True, check=True)
                runs[name].append(json.loads(res.stdout.splitlines()[-1]))
                print(name, {k: round(v, 3) for k, v in runs[name][-1].items() if k != "out"}, flush=True)
        same = runs["this"][0]["out"] == runs["peer"][0]["out"]
        summary = {"points": a.points, "same_summary": same, "load_avg": os.getloadavg()[0]}
        for name, rs in runs.items():
            for k in ("wall_s", "cpu_s", "max_rss_mb"):
                summary[f"{name}_{k}"] = round(statistics.median(r[k] for r in rs), 3)
        print(json.dumps(summary))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--one":
        print(json.dumps(one(sys.argv[2], Path(sys.argv[3]), "/")))
    else:
        common.run(main, "bench_sweep_summary")
