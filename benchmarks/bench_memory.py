"""Benchmark: peak memory of the default two-tier ``pcs.replay`` call, per distinct block, over several runs.

Workload: the Mooncake FAST'25 conversation trace (../shared/traces) replicated
1x and 10x (:func:`common.replicate_mooncake`: ids remapped per copy, so copies
share no block), as Mooncake JSONL and (``--formats``) converted once to pcs
Parquet. Per case and run a fresh process imports pcs (and, for Parquet,
pyarrow.parquet: the reader's library, about 36 MB resident, a fixed cost that
a JSONL replay never loads) and then the modules the call itself would import
on first use (pcs loads most of its engine lazily: about 90 modules, 5-7 MB
resident; found once per case by a first process that runs the call and lists
``sys.modules`` before and after, :func:`_call_modules`), notes its resident
set (``VmRSS``) after each step (``rss_after_pcs_import_bytes``, then
``rss_after_import_bytes``; their difference is ``call_import_bytes``, printed
apart: code loaded once per process whatever the trace, not memory the replay
holds per block), runs ``pcs.replay(path)`` with every default (llama-2-70b on 8 x
h100-sxm, the GPU tier from the deployment + ``cpu=2TB``, LRU, write-back,
modeled timing, step scheduler) and reads its peak resident set (``VmHWM``,
:func:`common.vm_hwm_bytes`); then, the peak read, it decodes the trace again
to count the decoded trace's bytes (``decoded_trace_bytes``: the arrays of
every :class:`pcs.trace.RequestBatch` of the trace -- 8 B per block hash plus
the per-request columns). ``late_modules`` counts the modules the call still
imported (0 when the list was complete).

The target is "peak memory at most 100 B per distinct block plus the decoded
trace batch in flight" (docs/performance.md, Summary). The default modeled
replay keeps its whole decoded trace for the run (pcs.engine.decoded: every
pass iterates the same batches), so the batch in flight is the whole decoded
trace, and the target's figure is ``target_bytes_per_id`` = (VmHWM - RSS after
the imports - decoded trace bytes) / distinct hash ids: what the call holds
besides the interpreter, the modules (pcs's own included, counted apart as
``call_import_bytes``), the libraries and the trace itself.

What a process pays once, on its first read of a trace, is counted apart too, beside (never instead of) the
target's figure: per run a fresh process makes the same imports, notes its resident set, reads a two-request
trace of the case's format (the case's first two requests, converted for Parquet) and notes the resident set
again (``first_read_bytes``: the reader's library code paged in on first use, and for Parquet the arenas of
pyarrow's default pool -- mimalloc, which pyarrow's Parquet reader class decompresses compressed pages into whatever
pool pcs passes it; a one-time cost: 5.8 MB from the uncompressed Parquet `pcs trace convert` writes, 10.4 MB from a
zstd one, 0.5 MB from JSONL, docs/performance.md).
``target_less_first_read_bytes_per_id`` is the target's figure less that median, per distinct id: what the call
holds per block once the process has read one trace.

Two denominators, both printed:

- ``distinct_ids``: distinct hash ids of the trace (every block a request
  names, the last partial one included): the target's "distinct block"
  (1.83 M at 10x);
- ``distinct_full_blocks``: distinct ids among the full prompt blocks
  (:class:`pcs.blocks.BlockRules` defaults: what the cache can hold), fewer,
  so its bytes per block are higher.

Memory does not move with the machine's load, but the peak moves from run to
run with the worker threads' interleaving (which buffers are alive at once;
``PCS_THREADS=off`` runs the side work inline and is steadier, and is recorded
as ``pcs_threads``), so every case runs ``--runs`` times (fresh processes) and
reports ``min`` / ``median`` / ``max`` of each figure.

Usage: python benchmarks/bench_memory.py [--replicas 1,10] [--formats jsonl,parquet] [--runs 5] [--trace PATH]
Prints one human line per case, then one JSON object last (``bench``, ``cases`` keyed ``jsonl_x1``,
``parquet_x10``..., each with ``runs``, ``call_modules`` (how many modules the call imports, and of them pcs's)
and the figures' ``{min, median, max}``, ``first_read_bytes`` and ``target_less_first_read_bytes_per_id`` among
them; ``pcs_threads``, ``machine``).
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

import common

BENCH = "bench_memory"
FORMATS = ("jsonl", "parquet")
#: the per-run figures summarised as {min, median, max}
FIGURES = ("peak_bytes", "call_import_bytes", "call_bytes", "target_bytes", "peak_bytes_per_id",
           "peak_bytes_per_full_block", "call_bytes_per_id", "call_bytes_per_full_block", "target_bytes_per_id", "target_bytes_per_full_block",
           "first_read_bytes")


def _imports(path: str) -> None:
    """What every child imports before its first resident-set reading: pcs, its trace opener and, for Parquet, the
    reader's library (a fixed cost, kept in the base)."""
    if path.endswith(".parquet"):
        import pyarrow.parquet  # noqa: F401
    import pcs  # noqa: F401
    from pcs.trace import open_trace  # noqa: F401


def _child_modules(path: str) -> None:
    """Child mode: the modules one default ``pcs.replay`` call imports (sorted names) as the JSON line."""
    import pcs

    _imports(path)
    before = set(sys.modules)
    pcs.replay(path)
    common.emit({"modules": sorted(set(sys.modules) - before)})


def _child(path: str, modules: list[str]) -> None:
    """Child mode: import ``modules`` (the call's own imports, :func:`_call_modules`), then one default
    ``pcs.replay`` call; print its memory figures as the JSON line."""
    import pcs
    from pcs.trace import open_trace

    _imports(path)
    pcs_rss = common.vm_rss_bytes()
    for name in modules:
        importlib.import_module(name)
    base = common.vm_rss_bytes()
    before = set(sys.modules)
    s = pcs.replay(path).summary
    peak = common.vm_hwm_bytes()
    late = len(set(sys.modules) - before)
    decoded = 0
    for b in open_trace(path).iter_batches():       # after the peak is read: the bytes the replay held decoded
        decoded += sum(getattr(getattr(b, f.name), "nbytes", 0) for f in dataclasses.fields(b))
    common.emit({"rss_after_pcs_import_bytes": pcs_rss, "rss_after_import_bytes": base,
                 "call_import_bytes": base - pcs_rss, "late_modules": late, "peak_bytes": peak,
                 "decoded_trace_bytes": decoded, "block_accesses": s.block_accesses, "hit_ratio": s.hit_ratio})


def _child_first_read(path: str, modules: list[str]) -> None:
    """Child mode: the imports of :func:`_child`, then one read of the small trace ``path``; print the resident
    set's growth over the read (``first_read_bytes``) as the JSON line."""
    from pcs.trace import open_trace

    _imports(path)
    for name in modules:
        importlib.import_module(name)
    base = common.vm_rss_bytes()
    rows = sum(len(b) for b in open_trace(path).iter_batches())
    common.emit({"first_read_bytes": common.vm_rss_bytes() - base, "requests": rows})


def _call_modules(path: Path) -> list[str]:
    """The modules a default ``pcs.replay`` call on ``path`` imports in a fresh process (after :func:`_imports`)."""
    return common.run_child(Path(__file__), ["--child-modules", str(path)])["modules"]


def _distinct(path: Path) -> tuple[int, int]:
    """(distinct hash ids, distinct ids among full prompt blocks) of a Mooncake JSONL file (512-token blocks)."""
    from pcs.blocks import BlockRules

    rules, ids, full = BlockRules(), set(), set()
    with open(path) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                h = r["hash_ids"]
                ids.update(h)
                full.update(h[:rules.cacheable_blocks(r["input_length"], len(h), 512)])
    return len(ids), len(full)


def _one_run(path: Path, n_ids: int, n_full: int, modules: list[str], first: Path) -> dict:
    out = common.run_child(Path(__file__), ["--child", str(path), "--modules", ",".join(modules)])
    out["first_read_bytes"] = common.run_child(Path(__file__), ["--child-first-read", str(first), "--modules",
                                                                ",".join(modules)])["first_read_bytes"]
    out["call_bytes"] = out["peak_bytes"] - out["rss_after_import_bytes"]
    out["target_bytes"] = out["call_bytes"] - out["decoded_trace_bytes"]
    for key in ("peak", "call", "target"):
        v = out[f"{key}_bytes"]
        out[f"{key}_bytes_per_id"] = round(v / n_ids, 1)
        out[f"{key}_bytes_per_full_block"] = round(v / n_full, 1)
    return out


def _case(path: Path, n_ids: int, n_full: int, runs: int, first: Path) -> dict:
    """``runs`` fresh processes on ``path`` (after one that lists the call's imports), each with a process that
    reads ``first`` (a two-request trace of the same format, :func:`_child_first_read`): each run's figures and
    their min / median / max."""
    modules = _call_modules(path)
    each = [_one_run(path, n_ids, n_full, modules, first) for _ in range(runs)]
    first = each[0]
    out = {"distinct_ids": n_ids, "distinct_full_blocks": n_full, "runs": runs,
           "call_modules": {"all": len(modules), "pcs": sum(m == "pcs" or m.startswith("pcs.") for m in modules)},
           "late_modules": max(r["late_modules"] for r in each),
           "block_accesses": first["block_accesses"], "hit_ratio": first["hit_ratio"],
           "rss_after_import_bytes": statistics.median(r["rss_after_import_bytes"] for r in each),
           "decoded_trace_bytes": first["decoded_trace_bytes"], "each_run": each}
    for f in FIGURES:
        vals = [r[f] for r in each]
        out[f] = {"min": min(vals), "median": statistics.median(vals), "max": max(vals)}
    once = out["first_read_bytes"]["median"]
    out["target_less_first_read_bytes_per_id"] = {k: round((v - once) / n_ids, 1)
                                                  for k, v in out["target_bytes"].items()}
    return out


def _line(name: str, c: dict) -> str:
    def mb(f: str) -> str:
        return "/".join(f"{c[f][k] / 1e6:.1f}" for k in ("min", "median", "max"))

    def per(f: str) -> str:
        return "/".join(f"{c[f][k]:.1f}" for k in ("min", "median", "max"))

    mods = c["call_modules"]
    return (f"{name}: {c['runs']} runs, min/median/max: peak {mb('peak_bytes')} MB ({per('peak_bytes_per_id')} B per "
            f"distinct id, {per('peak_bytes_per_full_block')} per distinct full block); the modules the call imports "
            f"({mods['all']}, {mods['pcs']} of pcs), imported first and counted apart: {mb('call_import_bytes')} MB; "
            f"the call adds {mb('call_bytes')} MB; less the decoded trace ({c['decoded_trace_bytes'] / 1e6:.1f} MB): "
            f"{per('target_bytes_per_id')} B per distinct id (target <= 100); the first read of a trace in a process "
            f"(two requests, counted apart): {mb('first_read_bytes')} MB, the target's figure less it: "
            f"{per('target_less_first_read_bytes_per_id')} B" +
            (f"; {c['late_modules']} modules still imported by the call" if c["late_modules"] else ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicas", type=common.counts, default="1,10", help="copies of the trace, comma-separated")
    ap.add_argument("--formats", default="jsonl,parquet", help="jsonl, parquet or both, comma-separated")
    ap.add_argument("--runs", type=common.count, default=5, help="fresh processes per case (min/median/max)")
    ap.add_argument("--trace", type=Path, default=common.MOONCAKE_CONV)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--child-modules", help=argparse.SUPPRESS)
    ap.add_argument("--child-first-read", help=argparse.SUPPRESS)
    ap.add_argument("--modules", default="", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child_modules:
        return _child_modules(a.child_modules)
    if a.child:
        return _child(a.child, [m for m in a.modules.split(",") if m])
    if a.child_first_read:
        return _child_first_read(a.child_first_read, [m for m in a.modules.split(",") if m])
    common.need_trace(a.trace, BENCH)
    formats = common.choices(a.formats, FORMATS, "--formats", BENCH)
    cases = {}
    with tempfile.TemporaryDirectory() as tmp:
        for k in a.replicas:
            jsonl = _copies(a.trace, Path(tmp), k)
            n_ids, n_full = _distinct(jsonl)
            first_jsonl = _head(jsonl, Path(tmp) / "first.jsonl", 2)
            for fmt in formats:
                path, first = (jsonl, first_jsonl) if fmt == "jsonl" else (_parquet(jsonl), _parquet(first_jsonl))
                c = cases[f"{fmt}_x{k}"] = _case(path, n_ids, n_full, a.runs, first)
                print(_line(f"{fmt} x{k}", c), flush=True)
                if path != jsonl:
                    path.unlink()
                    first.unlink()
            first_jsonl.unlink()
            jsonl.unlink()
    common.emit({"bench": BENCH, "cases": cases, "pcs_threads": os.environ.get("PCS_THREADS", "auto"),
                 "machine": common.machine_info()})


def _copies(src: Path, tmp: Path, k: int) -> Path:
    """The trace replicated exactly ``k`` times (as many accesses as k copies hold)."""
    one = common.replicate_mooncake(src, tmp, 1, count="ids", name="one.jsonl")
    one.path.unlink()
    return common.replicate_mooncake(src, tmp, k * one.block_ids, count="ids", name=f"x{k}.jsonl").path


def _head(src: Path, out: Path, rows: int) -> Path:
    """The first ``rows`` non-blank lines of ``src`` written to ``out``."""
    lines: list[str] = []
    with open(src) as f:
        for line in f:
            if line.strip():
                lines.append(line)
                if len(lines) == rows:
                    break
    out.write_text("".join(lines))
    return out


def _parquet(jsonl: Path) -> Path:
    """``jsonl`` converted to pcs Parquet beside it (untimed, as bench_user.py converts)."""
    from pcs.trace import open_trace
    from pcs.trace.convert import convert

    out = jsonl.with_suffix(".parquet")
    convert(open_trace(jsonl), out)
    return out


if __name__ == "__main__":
    common.run(main, "bench_memory")
