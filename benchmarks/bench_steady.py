"""Benchmark: steady calls of ``pcs.replay`` (default: the two-tier call), a fresh process per tree, alternated.

What it answers: what a call costs once a process has made one already (a sweep, a notebook, a service): its wall,
its user and system CPU and its minor page faults (``getrusage``, the whole process), where the first call of a
process also pays imports and the memory pcs keeps between calls is not there yet (docs/performance.md, "Fresh
pages a call").

Per process (a fresh one each time, ``--child``): ``--warmups`` untimed warm-up calls (default 1) of
``pcs.replay(TRACE, tiers=["gpu=16384blocks", "cpu=65536blocks"], policy="lru")`` -- ``--tiers`` (comma-separated)
and ``--timing`` change the call, e.g. ``--tiers gpu=16384blocks --timing sequential``, the one-tier sequential
LRU call --, then ``--calls`` timed calls; the process reports the medians of its calls, the calling thread's CPU
(``time.thread_time``, ``thread_ms``) among them. The parent runs ``--pairs`` pairs of processes, this tree's and
``--peer``'s, the order reversed every pair, and reports per tree the median over its processes of each median.
``--peer`` is a pcs source tree (its extensions built); without it only this tree runs.

Usage: python benchmarks/bench_steady.py TRACE [--peer TREE] [--pairs 6] [--calls 5] [--warmups 1]
       [--tiers gpu=16384blocks,cpu=65536blocks] [--timing modeled|sequential]
Prints one line per process, then the JSON summary line last.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

BENCH = "bench_steady"
TREE = str(Path(__file__).resolve().parent.parent)
#: The default call's tiers (the default two-tier call of docs/performance.md's figures).
TIERS = ["gpu=16384blocks", "cpu=65536blocks"]


def _child(tree: str, trace: str, calls: int, call: dict | None = None, warmups: int = 1) -> None:
    """In a fresh process, pcs imported from ``tree`` (put first on ``sys.path``, ahead of the checkout common.py
    puts there): ``warmups`` warm-up calls, then ``calls`` timed calls of ``pcs.replay(trace, **call)`` (None: the
    default two-tier call); one JSON line of the medians (wall, user, system and calling-thread CPU in ms, minor
    faults) and the pcs it imported."""
    sys.path.insert(0, tree)
    import pcs
    from pcs import _native

    if _native.missing():     # the Python twins would run: a figure of another program
        common.fail(BENCH, f"{tree}: compiled extensions not built ({', '.join(_native.missing())}): run "
                           f"python setup.py build_ext --inplace there")

    args = call or {"tiers": TIERS, "policy": "lru"}
    for _ in range(warmups):
        pcs.replay(trace, **args)
    rows = []
    for _ in range(calls):
        r0, c0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.thread_time(), time.perf_counter()
        pcs.replay(trace, **args)
        wall, cpu, r1 = time.perf_counter() - t0, time.thread_time() - c0, resource.getrusage(resource.RUSAGE_SELF)
        rows.append((wall * 1e3, (r1.ru_utime - r0.ru_utime) * 1e3, (r1.ru_stime - r0.ru_stime) * 1e3,
                     r1.ru_minflt - r0.ru_minflt, cpu * 1e3))
    med = [statistics.median(c) for c in zip(*rows)]
    common.emit({"pcs": pcs.__file__, "wall_ms": med[0], "user_ms": med[1], "sys_ms": med[2], "minflt": med[3],
                 "thread_ms": med[4]})


def _process(tree: str, trace: str, calls: int, call: dict | None = None, warmups: int = 1) -> dict:
    """One child process importing pcs from ``tree``; its JSON line."""
    env = dict(os.environ, PYTHONPATH=tree)
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
            f"import bench_steady; bench_steady._child({tree!r}, {trace!r}, {calls}, {call!r}, {warmups})")
    row = common.child_json([sys.executable, "-c", code], BENCH, env=env, cwd="/")
    if not row["pcs"].startswith(tree + os.sep):
        common.fail(BENCH, f"the child imported {row['pcs']}, not the tree {tree}")
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--peer", default=None, help="another pcs source tree, timed alternated with this one")
    ap.add_argument("--pairs", type=common.count, default=6,
                    help="process pairs: one process of this tree and one of --peer each, the order reversed every "
                         "pair (without --peer: this tree's processes); default 6")
    ap.add_argument("--calls", type=common.count, default=5,
                    help="timed calls in each process, after the warm-ups; the process reports their medians; "
                         "default 5")
    ap.add_argument("--warmups", type=common.count, default=1, help="untimed calls first in each process")
    ap.add_argument("--tiers", default=None, help="the call's tiers, comma-separated (default: the two-tier call's)")
    ap.add_argument("--timing", default=None, choices=("modeled", "sequential"), help="the call's timing")
    a = ap.parse_args()
    call = None if a.tiers is None and a.timing is None else {
        "tiers": a.tiers.split(",") if a.tiers else TIERS, "policy": "lru",
        **({"timing": a.timing} if a.timing else {})}
    trace = str(common.need_trace(a.trace, BENCH).resolve())
    trees = {"this": TREE} | ({"peer": common.need_tree(a.peer, BENCH, "--peer")} if a.peer else {})
    got: dict = {k: [] for k in trees}
    for i in range(a.pairs):
        for name in (list(trees) if i % 2 == 0 else list(trees)[::-1]):
            row = _process(trees[name], trace, a.calls, call, a.warmups)
            got[name].append(row)
            print(f"{name:5s} wall {row['wall_ms']:7.2f} ms  thread {row['thread_ms']:6.2f} ms  user "
                  f"{row['user_ms']:7.1f} ms  sys {row['sys_ms']:6.1f} ms  minflt {row['minflt']:7.0f}", flush=True)
    summary = {name: {k: round(statistics.median(r[k] for r in rows), 2) for k in ("wall_ms", "thread_ms", "user_ms",
                                                                                  "sys_ms", "minflt")}
               for name, rows in got.items()}
    common.emit({"bench": BENCH, "trace": trace, "call": call, "warmups": a.warmups, "pairs": a.pairs,
                 "calls": a.calls, "trees": trees,
                 "medians": summary, "load_average": os.getloadavg()[0], "machine": common.machine_info()})


if __name__ == "__main__":
    common.run(main, BENCH)
