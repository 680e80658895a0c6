"""The Python reference engine of two source trees, alternated: whole ``pcs.replay`` CPU seconds.

Workload: the Mooncake FAST'25 conversation trace (../shared/traces; 23,608
requests, 288,500 block accesses), read once into memory by each child, then
replayed by the whole ``pcs.replay(trace, policy=P, timing=T,
engine="reference")`` with its other defaults (llama-2-70b, 8 x h100-sxm,
tiers gpu=400GB cpu=2TB, write-back). ``modeled`` runs with
``compute_mode="infinite"`` where the tree has it (trees from before the step
scheduler had only that compute); engine ``reference`` is ``general`` in trees
from before the restructure. The call includes the sequential baseline and the
single-sequence passes, so it times the event loop over the Python
:class:`pcs.cache.Hierarchy` (``pcs/cache/hierarchy.py``, ``tier.py``,
``policies/``) in both timings.

Each ``--tree DIR`` runs in its own process (``DIR/.venv/bin/python`` when it
exists) that imports ``pcs`` from DIR; rounds alternate the trees (A B A B ...)
so both see the same load. Measured: process CPU seconds
(``time.process_time``) of the replay call, best and median over ``--rounds``;
``ratio`` = a tree's best / the first tree's best (the peer measured in the
same run), and the hit ratios, which must be equal.
Prints one human line per case, then ONE JSON line last.
Usage: python benchmarks/bench_reference.py --tree /work/main --tree /tmp/old [--rounds 3]
       [--case modeled:lru --case sequential:lru ...]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
#: (timing, policy) pairs timed by default.
CASES = ("modeled:lru", "sequential:lru", "modeled:slru", "modeled:fifo")
#: Older spellings tried when a name is refused (engine ``general``, policy ``protected``).
FALLBACK = {"reference": "general", "slru": "protected"}


def _child(tree: str, trace: str, cases: list[str]) -> None:
    """Replay every case once from ``tree``'s pcs; print one JSON object of CPU seconds and hit ratios."""
    sys.path.insert(0, tree)
    import inspect

    import pcs
    from pcs.trace import open_trace

    tr = open_trace(trace)
    batches = list(tr.iter_batches())

    class InMemory:
        block_size = tr.block_size
        path = trace

        def iter_batches(self):
            return iter(batches)

    replay = pcs.replay
    params = inspect.signature(replay).parameters
    out = {"pcs": pcs.__file__}
    for case in cases:
        timing, policy = case.split(":")
        kw = {"policy": policy, "timing": timing, "engine": "reference"}
        if "compute_mode" in params and timing == "modeled":
            kw["compute_mode"] = "infinite"
        t = time.process_time()
        try:
            res = replay(InMemory(), **kw)
        except ValueError:
            res = replay(InMemory(), **{k: FALLBACK.get(v, v) for k, v in kw.items()})
        cpu = time.process_time() - t
        s = res.summary
        hit = s.hit_ratio if hasattr(s, "hit_ratio") else s["hit_ratio"]
        seq = s.sequential_hit_ratio if hasattr(s, "sequential_hit_ratio") else s["sequential_hit_ratio"]
        out[case] = {"cpu_s": cpu, "hit_ratio": hit, "sequential_hit_ratio": seq}
    print(json.dumps(out))


def _python(tree: str) -> str:
    venv = Path(tree) / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def _run(tree: str, trace: str, cases: list[str]) -> dict:
    cmd = [_python(tree), str(HERE), "--child", tree, "--trace", trace] + sum((["--case", c] for c in cases), [])
    env = dict(os.environ, PYTHONPATH=tree)
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", default=[], help="a source tree (repeatable; the first is the peer)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--case", action="append", default=[], help="TIMING:POLICY (repeatable)")
    ap.add_argument("--trace", default=None)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.trace is None:
        sys.path.insert(0, str(HERE.parent))
        import common
        args.trace = str(common.MOONCAKE_CONV)
    cases = args.case or list(CASES)
    if args.child:
        return _child(args.child, args.trace, cases)
    trees = [str(Path(t).resolve()) for t in (args.tree or [str(HERE.parents[1])])]
    cpu: dict = {t: {c: [] for c in cases} for t in trees}
    hits: dict = {t: {} for t in trees}
    load = [os.getloadavg()[0]]
    for _ in range(args.rounds):
        for t in trees:                                   # alternated: every tree once per round
            got = _run(t, args.trace, cases)
            for c in cases:
                cpu[t][c].append(got[c]["cpu_s"])
                hits[t][c] = (got[c]["hit_ratio"], got[c]["sequential_hit_ratio"])
    load.append(os.getloadavg()[0])
    out = {"bench": "reference", "trace": args.trace, "rounds": args.rounds, "loadavg": load, "cases": {}}
    for c in cases:
        peer = min(cpu[trees[0]][c])
        row = {}
        for t in trees:
            best = min(cpu[t][c])
            row[t] = {"best_cpu_s": best, "median_cpu_s": statistics.median(cpu[t][c]), "all_cpu_s": cpu[t][c],
                      "ratio": best / peer, "hit_ratio": hits[t][c][0], "sequential_hit_ratio": hits[t][c][1]}
            print(f"[{c}] {t}: best {best:.2f} s CPU, median {statistics.median(cpu[t][c]):.2f} s, "
                  f"{best / peer:.3f}x the first tree, hit ratio {hits[t][c][0]:.6f}")
        row["hit_ratios_equal"] = len({hits[t][c] for t in trees}) == 1
        out["cases"][c] = row
    print(json.dumps(out))


if __name__ == "__main__":
    main()
