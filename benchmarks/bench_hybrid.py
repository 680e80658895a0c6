"""Hybrid-model replay: hit ratio and peak resident bytes per component beside all-full-attention, and speed.

Workload: the Mooncake FAST'25 conversation trace (../shared/traces), 512-token
blocks, 12,031 requests, 288,500 block accesses (a "block access" is one hash id
of one request, as in ``bench_replay.py``).

1. ``table``: ``pcs.replay`` (defaults: 8 x h100-sxm, TP 8, modeled timing,
   LRU, write-back; tiers ``gpu=<size>`` and ``cpu=2TB``) for gpt-oss-120b and
   gemma-3-27b (and qwen3-next-80b-a3b, 3 Gated DeltaNet : 1 full attention)
   at two GPU tier sizes, with vLLM's hybrid KV cache manager
   (the default) -- hit ratio, the hits the hybrid rules lost, and peak
   resident GPU bytes per component -- beside the same run with every layer
   as full attention (``summary.hybrid.full_attention``); each with the step
   scheduler (``--compute step``, the default) and with ``--compute infinite``;
   then qwen3-next-80b-a3b with ``--mamba-cache-mode align`` (``align`` rows).
   These are docs/hybrid.md's table (``--sizes 100GB,400GB --skip-loops --skip-whole-call``: hit ratios and
   bytes do not depend on the machine's load).
2. ``speed`` (``--skip-loops``: none): the engine loops on pre-built chunks -- modeled with
   ``--compute infinite`` (:class:`pcs.engine.engine.ReplayEngine`) and the
   step scheduler (the default) -- over the compiled hybrid hierarchy
   (:class:`pcs.cache.nativegroups.NativeGroupHierarchy`, engine
   ``compiled-hybrid``; under the step scheduler its loop in C too,
   :class:`pcs.engine.hybridnative.HybridNativeStepEngine`, as ``pcs replay``
   runs it, and ``c-hier``: the Python step loop
   :class:`pcs.engine.hybridstep.HybridStepEngine` over it) and the Python
   reference (:class:`pcs.cache.grouphier.GroupHierarchy` under
   HybridStepEngine, engine ``hybrid``), runs alternated, block accesses per
   CPU second (best of ``--repeat``), both models at both GPU tier sizes; the
   ledgers are checked equal. (Sequential timing is timed as the whole call only.)

3. ``whole call``: what a user waits for, the whole ``pcs.replay`` call from the JSONL file (the engines
   replay picks), per model, GPU size and timing mode (``--modes``: step, the default; ``--compute infinite``;
   ``--timing sequential``), beside the same call without a model; fresh processes, ``--rounds`` rounds of
   ``--repeat`` calls; with ``--peer DIR`` (a checkout of main with its compiled extensions) the same calls
   from DIR alternated round by round, hit ratios checked equal; best CPU (every thread), wall and calling-thread
   CPU seconds per side, and the 1-minute load average before and after each row (a wall figure counts only
   at low load: the VM has 2 cores). ``target_met``: the whole call of each hybrid model at each size in the
   default mode (step) at 1 M block accesses per CPU second (the hybrid speed target); ``target_met_wall``: per wall second
   (the sequential baseline runs on a worker thread beside the step loop, so wall < CPU when a core is free).

Prints the table and speed lines, then ONE JSON summary line last.
Usage: python benchmarks/bench_hybrid.py [--repeat 3] [--sizes 40GB,100GB] [--skip-table] [--skip-loops]
       [--skip-whole-call] [--peer ../main] [--rounds 3] [--modes step,infinite,sequential]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import common  # noqa: E402
from common import MOONCAKE_CONV  # noqa: E402
TRACE = MOONCAKE_CONV  # benchmarks/common.py: PCS_MOONCAKE_TRACE or ../shared
MODELS = ("gpt-oss-120b", "gemma-3-27b")
MODES_MODELS = MODELS + (None,)   # the whole call: the hybrid models, then one without a model
TABLE_MODELS = MODELS + ("qwen3-next-80b-a3b",)  # the table also shows an SSM-state hybrid


def _gb(n: float) -> str:
    return f"{n / 1e9:,.1f}"


#: the ``align`` rows of the table: a model with a state group, vLLM's ``mamba_cache_mode="align"``
ALIGN_MODELS = ("qwen3-next-80b-a3b",)


def table(trace, sizes: list[str], models=TABLE_MODELS, align_models=ALIGN_MODELS) -> list[dict]:
    """One row per (model, GPU size, compute), then per (align model, size, compute) with ``mamba_cache_mode=
    "align"`` (``mamba_cache_mode`` in the row): hybrid and all-full-attention hit ratios and peak GPU bytes."""
    from pcs.engine.api import replay

    rows = []
    runs = [(m, z, c, None) for m in models for z in sizes for c in ("step", "infinite")]
    runs += [(m, z, c, "align") for m in align_models for z in sizes for c in ("step", "infinite")]
    for model, size, compute, mode in runs:
        s = replay(trace, model=model, tiers=[f"gpu={size}", "cpu=2TB"], compute_mode=compute,
                   mamba_cache_mode=mode).summary
        full = s.hybrid.full_attention
        gpu = full["tiers"][s.tiers[0].name]
        rows.append({"model": model, "mamba_cache_mode": mode, "gpu": size, "compute": compute,
                     "hit_ratio": s.hit_ratio,
                     "full_attention_hit_ratio": full["hit_ratio"], "lost_tokens": s.hybrid.lost_tokens,
                     "gap_hybrid_rules": s.gap.hybrid_rules,
                     "peak_gpu_bytes_by_component": dict(s.tiers[0].resident_bytes_peak_by_component),
                     "full_attention_peak_gpu_bytes_by_component": gpu["resident_bytes_peak_by_component"],
                     "gpu_pages": s.tiers[0].capacity_blocks, "full_attention_gpu_blocks": gpu["capacity_blocks"]})
        r = rows[-1]
        print(f"{model + (' align' if mode else ''):14s} gpu={size:6s} {compute:8s} hit {r['hit_ratio']:.4f} (all-full "
              f"{r['full_attention_hit_ratio']:.4f}) lost to hybrid rules {r['lost_tokens']:,} tokens; peak GPU GB "
              "hybrid " + ", ".join(f"{c} {_gb(v)}" for c, v in r["peak_gpu_bytes_by_component"].items())
              + " | all-full " + ", ".join(f"{c} {_gb(v)}" for c, v in
                                           r["full_attention_peak_gpu_bytes_by_component"].items()), flush=True)
    return rows


def _setup(model_name: str, trace, size: str):
    """(tiers maker, hierarchy kwargs, chunks, step cost, time model) of one hybrid model for the engine loops."""
    from pcs.blocks import BlockRules
    from pcs.cache import Tier, make_policy
    from pcs.engine.chunks import iter_chunks
    from pcs.engine.hybrid import plan_hybrid
    from pcs.engine.timing import TimeModel
    from pcs.compute import ComputeModel
    from pcs.hardware import get_gpu
    from pcs.model import get_model, group_block_bytes
    from pcs import units

    spec = get_model(model_name).with_tp(8)
    bb = [group_block_bytes(spec, 512, lay) for lay in ("reserved", "serialized")]
    sizes = [(units.parse_capacity(size).size_bytes, None), (2 * 10**12, None)]
    tm = TimeModel(ComputeModel(get_model(model_name), get_gpu("h100-sxm"), tp=8, block_size=512))
    chunks = list(iter_chunks(trace, BlockRules(), tm))
    step_chunks = list(iter_chunks(trace, BlockRules(), tm, False))
    plan = plan_hybrid(spec, 512, ["gpu", "cpu"], bb, sizes, "vllm", 0.8, 0.9, "all")
    caps = [c[0] for c in plan.capacity_pages]
    kw = dict(groups=plan.groups, pools=1, page_bytes=plan.page_bytes)
    make = lambda: [Tier(n, c, make_policy("lru", c)) for n, c in zip(("gpu", "cpu"), caps)]  # noqa: E731
    return make, kw, chunks, step_chunks, tm, [pb[0] for pb in plan.page_bytes]


def _run(impl: str, mode: str, make, kw, chunks, step_chunks, tm, bpb, trace):
    """One engine loop over the pre-built chunks: ``sequential`` / ``infinite`` (the modeled event loop,
    ``--compute infinite``) / ``step`` (:class:`pcs.engine.hybridstep.HybridStepEngine`, the default);
    ``impl``: ``python`` (GroupHierarchy), ``c`` (NativeGroupHierarchy; the step loop in C) or ``c-hier``
    (NativeGroupHierarchy under the Python step loop). Returns the closed result."""
    from pcs.cache.grouphier import GroupHierarchy
    from pcs.cache.nativegroups import NativeGroupHierarchy
    from pcs.engine.engine import ReplayEngine

    h = (GroupHierarchy if impl == "python" else NativeGroupHierarchy)(make(), "back", **kw)
    if mode == "step":
        from pcs.engine.hybridnative import HybridNativeStepEngine
        from pcs.engine.hybridstep import HybridStepEngine
        from pcs.engine.schedconfig import SchedulerConfig
        from pcs.engine.turns import decode_blocks
        from pcs.hardware import get_gpu

        cost = tm.compute.step_cost()
        dec = decode_blocks(trace)
        cfg = SchedulerConfig().resolved(get_gpu("h100-sxm"), cost.token_s, dec.detected)
        e = (HybridNativeStepEngine if impl == "c" else HybridStepEngine)(h, [None, None], bpb, cost, cfg, True, dec)
        src = step_chunks
    else:
        e = ReplayEngine(h, "sequential" if mode == "sequential" else "modeled", block_bytes=bpb)
        src = chunks
    for ch in src:
        e.feed(ch)
    return e.close()


def speed(trace, repeat: int, sizes: list[str]) -> list[dict]:
    """Block accesses per CPU second of the engine loops on pre-built chunks, the Python GroupHierarchy and
    the compiled one alternated (best of ``repeat`` each); the two give the same ledger (checked)."""
    out = []
    for model in MODELS:
        for size in sizes:
            make, kw, chunks, step_chunks, tm, bpb = _setup(model, trace, size)
            accesses = sum(ch.offsets[-1] - ch.offsets[0] for ch in chunks)
            for mode in ("infinite", "step"):   # sequential timing: the whole call (the Python event loop)
                impls = ("python", "c-hier", "c") if mode == "step" else ("python", "c")
                best = {impl: float("inf") for impl in impls}
                ledgers = {}
                for _ in range(repeat):
                    for impl in impls:
                        t = time.process_time()
                        res = _run(impl, mode, make, kw, chunks, step_chunks, tm, bpb, trace)
                        best[impl] = min(best[impl], time.process_time() - t)
                        ledgers[impl] = res.ledger
                assert all(v == ledgers["python"] for v in ledgers.values()), (model, size, mode)
                row = {"model": model, "gpu": size, "mode": mode, "accesses": accesses,
                       "python_cpu_s": best["python"], "c_cpu_s": best["c"],
                       "python_accesses_per_s": accesses / best["python"], "c_accesses_per_s": accesses / best["c"],
                       "speedup": best["python"] / best["c"]}
                if mode == "step":
                    row.update(c_hier_cpu_s=best["c-hier"], c_hier_accesses_per_s=accesses / best["c-hier"])
                out.append(row)
                print(f"speed {model:14s} gpu={size:6s} {mode:10s} C {row['c_accesses_per_s'] / 1e6:.2f} M accesses/s "
                      f"({best['c']:.2f} s) | Python {row['python_accesses_per_s'] / 1e6:.2f} M/s ({best['python']:.2f} s)"
                      f" | {row['speedup']:.1f}x" + (f" | C hierarchy, Python loop {row['c_hier_accesses_per_s'] / 1e6:.2f}"
                                                      f" M/s ({best['c-hier']:.2f} s)" if mode == "step" else ""),
                      flush=True)
    return out


#: the timing modes of the whole call: replay keywords (the default is the step scheduler)
MODES = {"step": {}, "infinite": {"compute_mode": "infinite"}, "sequential": {"timing": "sequential"}}

#: what one child process runs: one untimed call (imports, first-call costs), then ``repeat`` timed calls of
#: ``pcs.replay`` from the JSONL file, CPU (``time.process_time``: every thread), wall and the calling thread's CPU
#: seconds (``time.thread_time``: what is left on the caller's path when work runs on a worker thread) each; public
#: API only, so a checkout of main runs it as well
CHILD = """
import json, sys, time
import pcs
from pcs import replay
path, model, size, mode, repeat = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), int(sys.argv[5])
kw = dict(mode, tiers=["gpu=" + size, "cpu=2TB"], **({"model": model} if model != "-" else {}))
s = replay(path, **kw).summary
cpu, wall, main = [], [], []
for _ in range(repeat):
    c, w, m = time.process_time(), time.perf_counter(), time.thread_time()
    s = replay(path, **kw).summary
    cpu.append(time.process_time() - c)
    wall.append(time.perf_counter() - w)
    main.append(time.thread_time() - m)
print(json.dumps({"cpu_s": cpu, "wall_s": wall, "main_thread_cpu_s": main, "block_accesses": s.block_accesses,
                  "engine": s.engine,
                  "hit_ratio": s.hit_ratio, "pcs": pcs.__file__}))
"""


def _child(python: str, cwd: str, args: list[str]) -> dict:
    """Run :data:`CHILD` with ``python`` in ``cwd`` (first on ``PYTHONPATH``); its JSON line."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (cwd, os.environ.get("PYTHONPATH")))))
    out = subprocess.run([python, "-c", CHILD, *args], check=True, capture_output=True, text=True, cwd=cwd,
                         env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def whole_call(path: str, repeat: int, sizes: list[str], peer: str | None = None, rounds: int = 3,
               modes=tuple(MODES)) -> list[dict]:
    """What a user waits for: the whole ``pcs.replay`` call from the JSONL file (read, the engines it picks, its
    no-cache run, the sequential baseline, the all-full-attention comparison, summaries), per model, GPU size
    and timing mode (:data:`MODES`), beside the same call without a model (llama-2-70b, not hybrid). Each
    (model, size, mode) runs in fresh processes: ``rounds`` rounds of ``repeat`` calls, with ``peer`` (a
    checkout of main with its compiled extensions, run by its ``.venv`` python when it has one) alternated with
    this checkout round by round (peer first in odd rounds); best CPU and wall seconds of each side."""
    sides = {"this": (sys.executable, str(ROOT))}
    if peer:
        py = Path(peer) / ".venv" / "bin" / "python"
        sides["peer"] = (str(py) if py.exists() else sys.executable, str(Path(peer).resolve()))
    out = []
    for model, size, mode in [(m, z, o) for m in MODES_MODELS for z in sizes for o in modes]:
        args = [path, model or "-", size, json.dumps(MODES[mode]), str(repeat)]
        got: dict = {k: [] for k in sides}
        load = [os.getloadavg()[0]]
        for r in range(rounds):
            for k in (list(sides) if r % 2 == 0 else list(sides)[::-1]):
                got[k].append(_child(*sides[k], args))
        load.append(os.getloadavg()[0])
        row = {"model": model or "llama-2-70b (not hybrid)", "gpu": size, "mode": mode, "load_average": load}
        for k, runs in got.items():
            cpu, wall = min(c for x in runs for c in x["cpu_s"]), min(w for x in runs for w in x["wall_s"])
            main = min(c for x in runs for c in x["main_thread_cpu_s"])
            n = runs[-1]["block_accesses"]
            row[k] = {"cpu_s": cpu, "wall_s": wall, "main_thread_cpu_s": main, "accesses_per_cpu_s": n / cpu,
                      "accesses_per_wall_s": n / wall, "accesses_per_main_thread_cpu_s": n / main,
                      "engine": runs[-1]["engine"], "hit_ratio": runs[-1]["hit_ratio"], "pcs": runs[-1]["pcs"]}
        if peer:
            assert row["this"]["hit_ratio"] == row["peer"]["hit_ratio"], row
        out.append(row)
        print(f"whole call {row['model']:24s} gpu={size:6s} {mode:10s} " + " | ".join(
            f"{k} {v['accesses_per_cpu_s'] / 1e6:.2f} M/CPU-s {v['accesses_per_wall_s'] / 1e6:.2f} M/wall-s "
            f"{v['accesses_per_main_thread_cpu_s'] / 1e6:.2f} M/main-thread-CPU-s "
            f"({v['cpu_s']:.3f} / {v['wall_s']:.3f} / {v['main_thread_cpu_s']:.3f} s)"
            for k, v in row.items() if isinstance(v, dict))
            + f" | {row['this']['engine']} | load {load[0]:.1f}-{load[1]:.1f}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=common.count, default=3)
    ap.add_argument("--sizes", type=common.sizes, default="40GB,100GB", help="two GPU tier sizes (comma-separated)")
    ap.add_argument("--skip-table", action="store_true")
    ap.add_argument("--skip-loops", action="store_true", help="no engine-loop rows (the whole call only)")
    ap.add_argument("--skip-whole-call", action="store_true", help="no whole-call timing rows (with --skip-loops: "
                                                                   "the table alone, docs/hybrid.md's)")
    ap.add_argument("--peer", help="a checkout of main (compiled extensions built) timed beside this one")
    ap.add_argument("--rounds", type=common.count, default=3, help="alternated rounds of the whole call per side")
    ap.add_argument("--modes", default=",".join(MODES), help="timing modes of the whole call (comma-separated)")
    args = ap.parse_args()
    modes = tuple(common.choices(args.modes, tuple(MODES), "--modes", "bench_hybrid"))
    peer = common.need_tree(args.peer, "bench_hybrid", "--peer") if args.peer else None
    common.need_trace(TRACE, "bench_hybrid")
    from pcs.trace import open_trace

    trace = open_trace(TRACE)
    sizes = args.sizes
    rows = [] if args.skip_table else table(trace, sizes)
    sp = [] if args.skip_loops else speed(trace, args.repeat, sizes)
    whole = [] if args.skip_whole_call else whole_call(str(TRACE), args.repeat, sizes, peer, args.rounds, modes)
    step = [r for r in whole if r["model"] in MODELS and r["mode"] == "step"]
    w = [r["this"]["accesses_per_cpu_s"] for r in step]
    ww = [r["this"]["accesses_per_wall_s"] for r in step]
    print(json.dumps({"bench": "hybrid", "trace": TRACE.name, "load_average": os.getloadavg(), "table": rows,
                      "speed": sp, "whole_call": whole,
                      "c_min_accesses_per_s": min((r["c_accesses_per_s"] for r in sp), default=None),
                      "whole_call_min_accesses_per_s": min(w, default=None), "target_accesses_per_s": 1e6,
                      "target_met": bool(w) and min(w) >= 1e6,
                      "whole_call_min_accesses_per_wall_s": min(ww, default=None),
                      "whole_call_max_load_average": max((x for r in step for x in r["load_average"]), default=None),
                      "target_met_wall": bool(ww) and min(ww) >= 1e6}))

if __name__ == "__main__":
    common.run(main, "bench_hybrid")
