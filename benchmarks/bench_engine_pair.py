"""The engine-only row of two source trees, alternated: ``ReplayEngine.feed`` over pre-built chunks.

Workload: ``benchmarks/bench_replay.py``'s ``two_tier_lru_modeled`` engine row
of each tree -- the Mooncake FAST'25 conversation trace replicated
``--copies`` times (x11 = 3,173,500 block accesses), llama-3.1-70b on
8 x h100-sxm, gpu=400GB cpu=2TB (2,384 + 11,920 blocks), LRU, write-back,
modeled timing (infinite compute), the compiled hierarchy; the chunks are
built before the clock starts. Each tree's own ``bench_replay.py``
(``Replicated``, ``_chunks``, ``_engine``) builds the workload, so a tree from
before the restructure (``pcs.replay.*``) runs as it was benchmarked then.

Each ``--tree DIR`` runs in a fresh process (``DIR/.venv/bin/python`` when
it exists, ``PYTHONPATH=DIR``); rounds alternate the trees (A B, B A, A B,
...) so both see the same load and drift. Per round: the best of
``--repeat`` engine runs, in process CPU seconds (``time.process_time``, as
``bench_replay.py``) and wall seconds. Reported per tree: accesses per
second at the best and the median round, and ``ratio_best`` /
``ratio_median`` = that tree's accesses/s / the first tree's (the peer).
The hit ratio must be equal in every tree (exit 1 when not).
Prints one human line per tree, then ONE JSON line last.
Usage: python benchmarks/bench_engine_pair.py --tree OLD --tree NEW [--rounds 5] [--copies 11] [--repeat 3]
"""
from __future__ import annotations

import argparse
import importlib.util
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


def _tree_bench(tree: str):
    """The tree's own ``benchmarks/bench_replay.py`` as a module (its ``main`` not run)."""
    spec = importlib.util.spec_from_file_location("tree_bench_replay", Path(tree) / "benchmarks" / "bench_replay.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["_bench_common"] = mod          # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def _resolve_link():
    """The tree's link resolver (``pcs.engine.api`` now, ``pcs.replay.api`` before the restructure)."""
    try:
        from pcs.engine.api import _resolve_link
    except ImportError:
        from pcs.replay.api import _resolve_link
    return _resolve_link


def _child(tree: str, copies: int, repeat: int) -> None:
    """Time the engine-only row from ``tree``'s pcs; print one JSON object."""
    sys.path[:1] = [tree, str(Path(tree) / "benchmarks")]  # not this script's folder: the tree's common.py, pcs
    bench = _tree_bench(tree)
    from pcs.compute import ComputeModel
    from pcs.hardware import get_gpu
    from pcs.model import block_bytes, get_model

    src = bench.Replicated(bench.TRACE, copies)
    model = get_model("llama-3.1-70b")
    bpb = [block_bytes(model, 512, "reserved").total_bytes, block_bytes(model, 512, "serialized").total_bytes]
    caps = [400 * 10**9 // bpb[0], 2 * 10**12 // bpb[1]]
    links = [None, _resolve_link()("cpu", None, 8)]
    chunks = bench._chunks(src, bench.TimeModel(ComputeModel(model, get_gpu("h100-sxm"), tp=8, block_size=512)))
    best_cpu = best_wall = float("inf")
    for _ in range(repeat):
        t, w = time.process_time(), time.perf_counter()
        e = bench._engine(caps, "modeled", bpb, links)
        for ch in chunks:
            e.feed(ch)
        res = e.close()
        best_cpu, best_wall = min(best_cpu, time.process_time() - t), min(best_wall, time.perf_counter() - w)
    print(json.dumps({"pcs": sys.modules["pcs"].__file__, "accesses": int(src.counts.sum()) * copies,
                      "cpu_s": best_cpu, "wall_s": best_wall, "hit_ratio": res.ledger.hit_ratio}))


def _run(tree: str, copies: int, repeat: int) -> dict:
    """One fresh child process of ``tree``; its JSON line."""
    venv = Path(tree) / ".venv" / "bin" / "python"
    cmd = [str(venv) if venv.exists() else sys.executable, str(HERE), "--child", tree, "--copies", str(copies),
           "--repeat", str(repeat)]
    return _common.child_json(cmd, "bench_engine_pair", cwd=tree, env=dict(os.environ, PYTHONPATH=tree))


def _rounds(trees: list[str], rounds: int, copies: int, repeat: int) -> dict:
    """{tree: [child JSON, ...]}; round r runs the trees in order, reversed on odd rounds."""
    got: dict = {t: [] for t in trees}
    for r in range(rounds):
        for t in (trees if r % 2 == 0 else trees[::-1]):
            got[t].append(_run(t, copies, repeat))
    return got


def _row(runs: list[dict]) -> dict:
    """A tree's figures: accesses/s (CPU) per round, best and median; wall seconds too."""
    acc = runs[0]["accesses"]
    rate = [acc / x["cpu_s"] for x in runs]
    return {"accesses_per_s": rate, "best_accesses_per_s": max(rate), "median_accesses_per_s": statistics.median(rate),
            "cpu_s": [x["cpu_s"] for x in runs], "wall_s": [x["wall_s"] for x in runs],
            "median_wall_accesses_per_s": statistics.median(acc / x["wall_s"] for x in runs),
            "hit_ratio": runs[0]["hit_ratio"], "pcs": runs[0]["pcs"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", default=[], help="a source tree (repeatable; the first is the peer)")
    ap.add_argument("--rounds", type=_common.count, default=5)
    ap.add_argument("--copies", type=_common.count, default=11)
    ap.add_argument("--repeat", type=_common.count, default=3)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(_common.need_tree(args.child, "bench_engine_pair", "--child"), args.copies, args.repeat)
        return 0
    trees = [_common.need_tree(t, "bench_engine_pair") for t in (args.tree or [str(HERE.parents[1])])]
    _common.need_trace(_common.MOONCAKE_CONV, "bench_engine_pair")
    load = [os.getloadavg()[0]]
    got = _rounds(trees, args.rounds, args.copies, args.repeat)
    load.append(os.getloadavg()[0])
    rows = {t: _row(got[t]) for t in trees}
    peer = rows[trees[0]]
    for t, row in rows.items():
        row["ratio_best"] = row["best_accesses_per_s"] / peer["best_accesses_per_s"]
        row["ratio_median"] = row["median_accesses_per_s"] / peer["median_accesses_per_s"]
        print(f"{t}: best {row['best_accesses_per_s'] / 1e6:.3f} M/s, median {row['median_accesses_per_s'] / 1e6:.3f} "
              f"M/s (CPU); {row['ratio_best']:.3f}x / {row['ratio_median']:.3f}x the first tree")
    equal = len({r["hit_ratio"] for r in rows.values()}) == 1
    print(json.dumps({"bench": "engine_pair", "copies": args.copies, "repeat": args.repeat, "rounds": args.rounds,
                      "loadavg": load, "trees": rows, "hit_ratios_equal": equal}))
    return 0 if equal else 1


if __name__ == "__main__":
    _common.run(main, "bench_engine_pair")
