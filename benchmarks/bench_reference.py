"""The Python reference engine of two source trees, alternated: whole ``pcs.replay`` CPU seconds.

Workload: the Mooncake FAST'25 conversation trace (../shared/traces; 12,031
requests, 288,500 block accesses), read once into memory by each child, then
replayed by the whole ``pcs.replay(trace, policy=P, timing=T,
engine="reference", tiers=TIERS)`` with its other defaults (llama-2-70b,
8 x h100-sxm, write-back). ``modeled`` runs with ``compute_mode="infinite"``
where the tree has it (trees from before the step scheduler had only that
compute); engine ``reference`` is ``general`` in trees from before the
restructure. The call includes the sequential baseline and the
single-sequence passes, so it times the event loop over the Python
:class:`pcs.cache.Hierarchy` (``pcs/cache/hierarchy.py``, ``tier.py``,
``policies/``) in both timings.

Like for like: the tiers are pinned in blocks (:data:`TIERS`, the default
gpu=400GB cpu=2TB of trees before the step scheduler: 2,384 and 11,920
blocks of 167,772,160 B). Sized from the deployment, today's default GPU tier
is 2,372 blocks (the step scheduler's reservation), a different replay. Each
case's replay fingerprint (:data:`FINGERPRINT`: hit blocks, block misses,
per-tier hit ratios, the sequential baseline, restored bytes) must be equal
in every tree; the script says so and exits 1 when it is not.

Each ``--tree DIR`` runs in its own process (``DIR/.venv/bin/python`` when it
exists) that imports ``pcs`` from DIR; rounds alternate the trees (A B A B ...)
so both see the same load. Measured: process CPU seconds
(``time.process_time``) and wall seconds (``time.perf_counter``) of the
replay call, best and median over ``--rounds``; ``ratio`` = a tree's best CPU
/ the first tree's best CPU (the peer measured in the same run).
Prints one human line per case, then ONE JSON line last.
Usage: python benchmarks/bench_reference.py --tree . --tree ../old-checkout [--rounds 3]
       [--case modeled:lru --case sequential:lru ...]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path


def _load_common():
    """This tree's benchmarks/common.py as ``_bench_common`` (the argument checks; a child imports the measured
    tree's own ``common``, which this name does not shadow)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_bench_common", Path(__file__).resolve().with_name("common.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules["_bench_common"] = mod          # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


_common = _load_common()

HERE = Path(__file__).resolve()
#: (timing, policy) pairs timed by default.
CASES = ("modeled:lru", "sequential:lru", "modeled:slru", "modeled:fifo")
#: The tiers of every run, in blocks (llama-2-70b fp16 on 8 x h100-sxm: 167,772,160 B per block;
#: 400 GB -> 2,384 blocks, 2 TB -> 11,920), so every tree replays the same capacities.
TIERS = ("gpu=2384blocks", "cpu=11920blocks")
#: Summary fields that must be equal in every tree (the same replay); dotted = nested.
FINGERPRINT = ("hit_blocks", "block_misses", "hit_ratio_per_tier", "sequential_hit_ratio", "bytes.restored")
#: Older spellings tried when a name is refused (engine ``general``, policy ``protected``).
FALLBACK = {"reference": "general", "slru": "protected"}


def _in_memory(trace: str):
    """The trace read once: an object with ``block_size``, ``path`` and ``iter_batches()`` over the kept batches."""
    from pcs.trace import open_trace

    tr = open_trace(trace)
    batches = list(tr.iter_batches())

    class InMemory:
        block_size = tr.block_size
        path = trace

        def iter_batches(self):
            return iter(batches)

    return InMemory


def _fingerprint(summary) -> dict:
    """The :data:`FINGERPRINT` fields of a summary (a dict in old trees, a dataclass with ``to_dict`` now)."""
    d = summary.to_dict() if hasattr(summary, "to_dict") else summary
    out = {}
    for key in FINGERPRINT:
        v = d
        for part in key.split("."):
            v = v[part]
        out[key] = v
    return out


def _child(tree: str, trace: str, cases: list[str]) -> None:
    """Replay every case once from ``tree``'s pcs; print one JSON object of CPU/wall seconds and fingerprints."""
    sys.path.insert(0, tree)
    import inspect

    import pcs

    InMemory = _in_memory(trace)
    replay = pcs.replay
    params = inspect.signature(replay).parameters
    out = {"pcs": pcs.__file__}
    for case in cases:
        timing, policy = case.split(":")
        kw = {"policy": policy, "timing": timing, "engine": "reference", "tiers": list(TIERS)}
        if "compute_mode" in params and timing == "modeled":
            kw["compute_mode"] = "infinite"
        t, w = time.process_time(), time.perf_counter()
        try:
            res = replay(InMemory(), **kw)
        except ValueError:
            res = replay(InMemory(), **{k: FALLBACK.get(v, v) if isinstance(v, str) else v for k, v in kw.items()})
        cpu, wall = time.process_time() - t, time.perf_counter() - w
        out[case] = {"cpu_s": cpu, "wall_s": wall, "replay": _fingerprint(res.summary)}
    print(json.dumps(out))


def _python(tree: str) -> str:
    venv = Path(tree) / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def _run(tree: str, trace: str, cases: list[str]) -> dict:
    cmd = [_python(tree), str(HERE), "--child", tree, "--trace", trace] + sum((["--case", c] for c in cases), [])
    env = dict(os.environ, PYTHONPATH=tree)
    return _common.child_json(cmd, "bench_reference", env=env)


def _rounds(trees: list[str], trace: str, cases: list[str], rounds: int) -> tuple[dict, dict]:
    """Alternate the trees ``rounds`` times: {tree: {case: [{cpu_s, wall_s}, ...]}}, {tree: {case: fingerprint}}."""
    times: dict = {t: {c: [] for c in cases} for t in trees}
    prints: dict = {t: {} for t in trees}
    for _ in range(rounds):
        for t in trees:                                   # alternated: every tree once per round
            got = _run(t, trace, cases)
            for c in cases:
                times[t][c].append({"cpu_s": got[c]["cpu_s"], "wall_s": got[c]["wall_s"]})
                prints[t][c] = got[c]["replay"]
    return times, prints


def _case_row(case: str, trees: list[str], times: dict, prints: dict) -> dict:
    """One case's JSON row (per tree: best/median CPU and wall, ratio to the first tree) and its human lines."""
    peer = min(x["cpu_s"] for x in times[trees[0]][case])
    row = {}
    for t in trees:
        cpu = [x["cpu_s"] for x in times[t][case]]
        wall = [x["wall_s"] for x in times[t][case]]
        best = min(cpu)
        row[t] = {"best_cpu_s": best, "median_cpu_s": statistics.median(cpu), "all_cpu_s": cpu,
                  "best_wall_s": min(wall), "all_wall_s": wall, "ratio": best / peer, "replay": prints[t][case]}
        print(f"[{case}] {t}: best {best:.2f} s CPU ({min(wall):.2f} s wall), median {statistics.median(cpu):.2f} s, "
              f"{best / peer:.3f}x the first tree, misses {prints[t][case]['block_misses']}")
    row["replays_equal"] = len({json.dumps(prints[t][case], sort_keys=True) for t in trees}) == 1
    if not row["replays_equal"]:
        print(f"[{case}] NOT LIKE FOR LIKE: the trees replayed different caches (see 'replay' in the JSON)")
    return row


def _check_case(case: str) -> None:
    """``TIMING:POLICY`` with TIMING sequential or modeled and a policy this tree knows (or an older spelling of
    one); else exit 2 with one line."""
    from pcs.cache.policies import registered_names

    timing, sep, policy = case.partition(":")
    known = set(registered_names()) | {"protected"}   # protected: the older spelling of slru
    if not sep or timing not in ("sequential", "modeled") or policy not in known:
        _common.fail("bench_reference", f"--case {case!r}: expected TIMING:POLICY, TIMING sequential or modeled, "
                                        f"POLICY one of {', '.join(sorted(known))}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", default=[], help="a source tree (repeatable; the first is the peer)")
    ap.add_argument("--rounds", type=_common.count, default=3)
    ap.add_argument("--case", action="append", default=[], help="TIMING:POLICY (repeatable)")
    ap.add_argument("--trace", default=None)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.trace is None:
        args.trace = str(_common.MOONCAKE_CONV)
    if not args.child:
        _common.need_trace(args.trace, "bench_reference")
    cases = args.case or list(CASES)
    if args.child:
        _child(_common.need_tree(args.child, "bench_reference", "--child"), args.trace, cases)
        return 0
    for c in cases:                                     # this tree's names (a child imports the measured tree)
        _check_case(c)
    trees = [_common.need_tree(t, "bench_reference") for t in (args.tree or [str(HERE.parents[1])])]
    load = [os.getloadavg()[0]]
    times, prints = _rounds(trees, args.trace, cases, args.rounds)
    load.append(os.getloadavg()[0])
    out = {"bench": "reference", "trace": args.trace, "tiers": list(TIERS), "rounds": args.rounds,
           "loadavg": load, "cases": {c: _case_row(c, trees, times, prints) for c in cases}}
    out["replays_equal"] = all(r["replays_equal"] for r in out["cases"].values())
    print(json.dumps(out))
    return 0 if out["replays_equal"] else 1


if __name__ == "__main__":
    _common.run(main, "bench_reference")
