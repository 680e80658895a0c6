"""Benchmark: ``pcs sweep`` points per minute with --jobs 1, --jobs 2 and Ray, and Ray's overhead per point.

Two plans, both run through :func:`pcs.sweep.run_sweep` into fresh
temporary directories (so every point runs; rows are written as in a real
sweep):

- the work plan: 256 replay points of the bundled 1,700-request sample
  (``traces/sample_chat.jsonl``), llama-3.1-8b on one GPU, modeled timing,
  the 8 compiled eviction policies x GPU tier 150/300/600/1,200 blocks x host
  DRAM 0..70 GB in 10 GB steps -- about 0.05 s of work per point since the
  step loop and the policies are compiled (a 24-point plan was 1.2 s of work
  in all, less than the pool's start-up, so it measured the start-up);
- the empty plan: 200 footprint points (``pcs.footprint``, microseconds of
  work each), so the wall time per point is the backend's own cost.

Measured: wall time and points per minute of the work plan with ``--jobs 1``,
``--jobs 2`` (a spawn pool: its start-up is included) and Ray on a local
2-CPU instance (``ray.init(num_cpus=2)``, its start-up reported apart); the
speed-up of 2 processes over 1; per-point overhead = (wall of the empty plan
on the backend - wall in-process) / 200 for the pool and for Ray (it can be
below 0: the backend spreads the rows' encoding over 2 CPUs); a no-op Ray
task's round trip and Ray's no-op task throughput; the time and size of
putting the trace into Ray's object store. ``--repeat`` runs of
each, alternating, the median kept (the machine is shared).

What a user waits for: the same work plan as ``pcs sweep PLAN -o DIR --jobs 1``
and ``--jobs 2``, each a fresh process (``cli_*`` keys). In-process, the
``--jobs 1`` driver stays warm across repeats (imports done, first-point
set-up cached) while every pool starts cold, so the in-process speed-up
understates what ``--jobs 2`` saves a user; the process figures start both
cold, as a user's run does.

Calibration: ``cpu_capacity`` = 2 x (seconds of a pure-Python loop alone) /
(seconds of the same loop in each of two processes at once), measured before
and after the runs: 2.0 when two cores are free, 1.0 when other work leaves
one. ``pool2_efficiency`` = the 2-process speed-up / that capacity.

Usage: python benchmarks/bench_sweep.py [--repeat 3] [--skip-ray]
The last line printed is one JSON object with every figure.
"""
from __future__ import annotations

import argparse
import json
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common

from pcs.sweep import make_plan, run_sweep
from pcs.sweep.api import prepare

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "traces" / "sample_chat.jsonl"

POLICIES = ("lru", "fifo", "slru", "sieve", "2q", "s3fifo", "arc", "lfu")
GPU_BLOCKS = (150, 300, 600, 1200)
WORK = {"kind": "replay",
        "fixed": {"trace": str(SAMPLE), "model": "llama-3.1-8b", "tp": 1},
        "axes": {"policy": list(POLICIES), "tier.gpu": [f"{n}blocks" for n in GPU_BLOCKS],
                 "tier.cpu": {"from": "0GB", "to": "70GB", "step": "10GB"}}}
EMPTY = {"kind": "footprint", "fixed": {"model": "llama-3.1-8b"},
         "axes": {"tokens": {"from": 1, "to": 200, "step": 1}}}


def _burn(n: int = 5_000_000) -> float:
    """Seconds of a pure-Python loop of ``n`` steps."""
    t0 = time.perf_counter()
    x = 0
    for i in range(n):
        x += i * i
    return time.perf_counter() - t0


def cpu_capacity() -> float:
    """2 x one loop alone / the slower of two loops run at once in two processes (2.0 = two free cores)."""
    import multiprocessing

    alone = min(_burn() for _ in range(2))
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(_burn, [1000, 1000])                       # start both workers first
        both = max(pool.map(_burn, [5_000_000, 5_000_000]))
    return 2.0 * alone / both


def _wall(plan, **kwargs) -> float:
    """Seconds for one whole sweep of ``plan`` into a fresh directory (every point runs)."""
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as out:
        t0 = time.perf_counter()
        run = run_sweep(plan, out, **kwargs)
        wall = time.perf_counter() - t0
    assert run.failed == 0 and run.ran == len(plan.points), run
    return wall


def _medians(plan, backends: dict[str, dict], repeat: int) -> dict[str, float]:
    """Median wall time per backend, the backends alternating within each repeat."""
    times: dict[str, list[float]] = {name: [] for name in backends}
    for _ in range(repeat):
        for name, kwargs in backends.items():
            times[name].append(_wall(plan, **kwargs))
    return {name: statistics.median(ts) for name, ts in times.items()}


_WORK_TOML = """kind = "replay"
[fixed]
trace = "{trace}"
model = "llama-3.1-8b"
tp = 1
[axes]
policy = {policies}
"tier.gpu" = {gpus}
"tier.cpu" = {{from = "0GB", to = "70GB", step = "10GB"}}
"""


def _cli_walls(jobs: list[int], repeat: int) -> dict[int, float]:
    """Median wall seconds of ``pcs sweep WORK.toml -o NEW --jobs N`` as a fresh process, the jobs alternating.

    What a user waits for: each run starts cold (imports, first-point set-up), unlike the in-process
    figures above, where the driver stays warm across repeats and only the pool's workers start cold.
    """
    times: dict[int, list[float]] = {j: [] for j in jobs}
    with tempfile.TemporaryDirectory(prefix="bench-sweep-cli-") as tmp:
        plan = Path(tmp) / "work.toml"
        plan.write_text(_WORK_TOML.format(trace=SAMPLE.as_posix(), policies=json.dumps(list(POLICIES)),
                                          gpus=json.dumps([f"{n}blocks" for n in GPU_BLOCKS])))
        for r in range(repeat):
            for j in jobs:
                out = Path(tmp) / f"out-{r}-{j}"
                t0 = time.perf_counter()
                subprocess.run([sys.executable, "-m", "pcs", "sweep", str(plan), "-o", str(out), "--jobs", str(j)],
                               check=True, stdout=subprocess.DEVNULL)
                times[j].append(time.perf_counter() - t0)
    return {j: statistics.median(ts) for j, ts in times.items()}


def _ray_init() -> tuple[float | None, str | None]:
    try:
        import ray
    except ImportError:
        return None, "ray not installed (pip install 'pcs[ray]')"
    import logging

    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    return time.perf_counter() - t0, None


def _noop() -> None:
    return None


def _ray_task_costs() -> dict:
    """Latency of one no-op Ray task alone (median of 50) and the throughput of 1,000 submitted together."""
    import ray

    f = ray.remote(num_cpus=1)(_noop)
    ray.get([f.remote() for _ in range(20)])               # warm the workers
    lat = []
    for _ in range(50):
        t0 = time.perf_counter()
        ray.get(f.remote())
        lat.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    ray.get([f.remote() for _ in range(1000)])
    return {"ray_task_roundtrip_s": statistics.median(lat), "ray_tasks_per_s": 1000 / (time.perf_counter() - t0)}


def _put_cost(plan) -> dict:
    import ray

    traces = prepare(plan, tempfile.mkdtemp(prefix="bench-sweep-")).traces
    (trace,) = traces.values()
    t0 = time.perf_counter()
    ref = ray.put(trace)
    put_s = time.perf_counter() - t0
    del ref
    return {"trace_put_s": put_s, "trace_pickled_bytes": len(pickle.dumps(trace, protocol=5))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=common.count, default=3)
    ap.add_argument("--skip-ray", action="store_true")
    args = ap.parse_args()
    work, empty = make_plan(WORK), make_plan(EMPTY)
    capacity = [cpu_capacity()]
    backends = {"jobs1": {"jobs": 1}, "jobs2": {"jobs": 2}}
    ray_init_s, ray_skip = (None, "--skip-ray") if args.skip_ray else _ray_init()
    if ray_skip is None:
        backends["ray"] = {"ray": "local"}
    w = _medians(work, backends, args.repeat)
    e = _medians(empty, backends, args.repeat)
    cli = _cli_walls([1, 2], args.repeat)
    capacity.append(cpu_capacity())
    n, m = len(work.points), len(empty.points)
    out = {"bench": "sweep", "machine": common.machine_info(), "repeat": args.repeat,
           "work_points": n, "empty_points": m,
           **{f"{b}_wall_s": w[b] for b in w}, **{f"{b}_points_per_min": 60.0 * n / w[b] for b in w},
           "speedup_jobs2_over_jobs1": w["jobs1"] / w["jobs2"], "cpu_capacity": capacity,
           "pool2_efficiency": w["jobs1"] / w["jobs2"] / statistics.mean(capacity),
           "work_s_per_point_jobs1": w["jobs1"] / n,
           "pool2_overhead_s_per_point": (e["jobs2"] - e["jobs1"]) / m,
           "empty_jobs1_s_per_point": e["jobs1"] / m,
           "cli_jobs1_wall_s": cli[1], "cli_jobs2_wall_s": cli[2],
           "cli_speedup_jobs2_over_jobs1": cli[1] / cli[2],
           "cli_pool2_efficiency": cli[1] / cli[2] / statistics.mean(capacity)}
    if ray_skip is None:
        out.update({"ray_init_s": ray_init_s, "ray_overhead_s_per_point": (e["ray"] - e["jobs1"]) / m,
                    "ray_over_jobs2_wall": w["ray"] / w["jobs2"], **_put_cost(work), **_ray_task_costs()})
    else:
        out["ray_skipped"] = ray_skip
    print(f"work plan, {n} replay points: " + ", ".join(f"{b} {60.0 * n / w[b]:.0f} points/min" for b in w))
    print(f"pcs sweep as a fresh process, {n} replay points: --jobs 1 {cli[1]:.2f} s, --jobs 2 {cli[2]:.2f} s "
          f"({cli[1] / cli[2]:.2f}x)")
    print(f"cpu capacity (2.0 = two free cores): {', '.join(f'{c:.2f}' for c in capacity)}")
    print(f"empty plan, {m} footprint points: " + ", ".join(f"{b} {1000 * e[b] / m:.2f} ms/point" for b in e))
    common.emit(out)


if __name__ == "__main__":
    common.run(main, "bench_sweep")
