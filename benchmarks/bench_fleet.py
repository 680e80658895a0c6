"""Fleet replay speed: block accesses per second of ``pcs.fleet_replay`` with 8 instances.

Workload: the Mooncake FAST'25 conversation trace (../shared/traces; 12,031
requests, 288,500 block accesses), default deployment (llama-2-70b, 8 x
h100-sxm TP=8, GPU tier from the deployment + cpu=2TB), 8 instances.

Measured (process CPU seconds, ``time.process_time``: the machine is shared,
wall clock is not this process's), median of ``--repeat`` runs after one warm-up:

- ``route_s``: the routing pass alone (:func:`pcs.fleet.route.route`) per router;
- ``fleet_s``: the whole fleet (trace read, routing, 8 instance replays,
  summary) per router and instance engine: ``sequential`` timing,
  ``modeled`` with ``--compute infinite``, ``modeled`` with the step scheduler
  (the default); with ``--shared remote=20TB`` also ``shared``: modeled,
  ``--compute infinite``, write-through, that shared tier (the instances on one
  clock, :mod:`pcs.fleet.oneclock`), and ``shared-step``: the same under the
  step scheduler (:mod:`pcs.fleet.stepclock`, the Python step loop).

Block accesses per second = 288,500 x (1) / seconds. Target: >= 1 M/s
for 8 instances. Prints one JSON line (last).

    python benchmarks/bench_fleet.py [--repeat 3] [--routers round-robin,cache-aware] [--shared remote=20TB]
"""
from __future__ import annotations

import argparse
import statistics
import time

import common


def _cpu(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=common.count, default=3)
    ap.add_argument("--instances", type=common.count, default=8)
    ap.add_argument("--routers", default="round-robin,cache-aware")
    ap.add_argument("--shared", default=None, help="also time a fleet with this shared tier (NAME=SIZE)")
    args = ap.parse_args()
    common.need_trace(common.MOONCAKE_CONV, "bench_fleet")
    import numpy as np

    from pcs.fleet import fleet_replay
    from pcs.fleet.fleet import _setup, service_times
    from pcs.fleet.index import CacheIndex
    from pcs.fleet.route import route
    from pcs.fleet.routers import parse_router
    from pcs.trace import open_trace
    from pcs.trace.batches import as_batches
    from pcs.trace.request import concat_batches

    trace = open_trace(common.MOONCAKE_CONV)
    batch = concat_batches(list(as_batches(trace)))
    accesses = int(np.diff(batch.block_offsets).sum())
    cap, compute, rules, _ = _setup(trace, {})
    svc = service_times(batch, compute)
    n = args.instances
    out = {"bench": "bench_fleet", "trace": "mooncake-fast25 conversation", "instances": n,
           "block_accesses": accesses, "index_capacity_blocks": cap, "repeat": args.repeat}
    modes = {"sequential": dict(timing="sequential"), "infinite": dict(compute_mode="infinite"), "step": {}}
    if args.shared:
        modes["shared"] = dict(compute_mode="infinite", write_policy="through", shared_tier=args.shared)
        modes["shared-step"] = dict(write_policy="through", shared_tier=args.shared)
    for r in args.routers.split(","):
        t = _cpu(lambda: route(batch, rules, parse_router(r, n), CacheIndex([cap] * n), svc), args.repeat)
        out[f"route_s[{r}]"] = round(t, 3)
        out[f"route_accesses_per_s[{r}]"] = round(accesses / t)
        print(f"{r:16s} routing pass {t:.3f} s CPU ({accesses / t / 1e6:.1f} M accesses/s)", flush=True)
        for m, kw in modes.items():
            t = _cpu(lambda: fleet_replay(trace, instances=n, router=r, **kw), args.repeat)
            out[f"fleet_s[{r},{m}]"] = round(t, 3)
            out[f"fleet_accesses_per_s[{r},{m}]"] = round(accesses / t)
            print(f"{r:16s} {n} instances, {m:11s} {t:.3f} s CPU = {accesses / t / 1e6:.2f} M accesses/s "
                  "(the whole fleet_replay call)", flush=True)
    out["machine"] = common.machine_info()
    common.emit(out)


if __name__ == "__main__":
    common.run(main, "bench_fleet")
