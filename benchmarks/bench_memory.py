"""Benchmark: peak memory of the default two-tier ``pcs.replay`` call, per distinct block.

Workload: the Mooncake FAST'25 conversation trace (../shared/traces) replicated
1x and 10x (:func:`common.replicate_mooncake`: ids remapped per copy, so copies
share no block), JSONL. Per case a fresh process imports pcs, notes its
resident set (``VmRSS``), runs ``pcs.replay(path)`` with every default
(llama-2-70b on 8 x h100-sxm, the GPU tier from the deployment + ``cpu=2TB``,
LRU, write-back, modeled timing, step scheduler) and prints its peak resident
set (``VmHWM``, :func:`common.vm_hwm_bytes`).

Two denominators, both printed:

- ``distinct_ids``: distinct hash ids of the trace (every block a request
  names, the last partial one included). This is the "distinct block" of the
  target "peak memory at most 100 B per distinct block plus the decoded trace
  batch in flight" (docs/performance.md, Summary) and of every peak-memory
  figure there since 2026-12-01 (1.83 M at 10x);
- ``distinct_full_blocks``: distinct ids among the full prompt blocks
  (:class:`pcs.blocks.BlockRules` defaults: what the cache can hold), fewer,
  so its bytes per block are higher.

Per case: ``peak_bytes`` (VmHWM of the whole process), ``call_bytes`` (VmHWM
minus the RSS after ``import pcs``: what the call adds), and each divided by
both denominators (``*_per_id``, ``*_per_full_block``, bytes). Memory does not
move with the machine's load; one run per case.

Usage: python benchmarks/bench_memory.py [--replicas 1,10] [--trace PATH]
The last line printed is one JSON object (``bench``, ``cases`` keyed ``x1``, ``x10``, ``machine``).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import common

BENCH = "bench_memory"


def _child(path: str) -> None:
    """Child mode: one default ``pcs.replay`` call; print its memory figures as the JSON line."""
    import pcs

    base = common.vm_rss_bytes()
    s = pcs.replay(path).summary
    common.emit({"rss_after_import_bytes": base, "peak_bytes": common.vm_hwm_bytes(),
                 "block_accesses": s.block_accesses, "hit_ratio": s.hit_ratio})


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


def _case(path: Path) -> dict:
    n_ids, n_full = _distinct(path)
    out = common.run_child(Path(__file__), ["--child", str(path)])
    call = out["peak_bytes"] - out["rss_after_import_bytes"]
    out.update(distinct_ids=n_ids, distinct_full_blocks=n_full, call_bytes=call)
    for key, v in (("peak", out["peak_bytes"]), ("call", call)):
        out[f"{key}_bytes_per_id"] = round(v / n_ids, 1)
        out[f"{key}_bytes_per_full_block"] = round(v / n_full, 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicas", type=common.counts, default="1,10", help="copies of the trace, comma-separated")
    ap.add_argument("--trace", type=Path, default=common.MOONCAKE_CONV)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return _child(a.child)
    common.need_trace(a.trace, BENCH)
    cases = {}
    with tempfile.TemporaryDirectory() as tmp:
        for k in a.replicas:
            path = _copies(a.trace, Path(tmp), k)
            c = cases[f"x{k}"] = _case(path)
            print(f"x{k}: peak {c['peak_bytes'] / 1e6:.1f} MB ({c['peak_bytes_per_id']} B per distinct id, "
                  f"{c['peak_bytes_per_full_block']} B per distinct full block); the call adds "
                  f"{c['call_bytes'] / 1e6:.1f} MB ({c['call_bytes_per_id']} / {c['call_bytes_per_full_block']} B)",
                  file=sys.stderr)
            path.unlink()
    common.emit({"bench": BENCH, "cases": cases, "machine": common.machine_info()})


def _copies(src: Path, tmp: Path, k: int) -> Path:
    """The trace replicated exactly ``k`` times (as many accesses as k copies hold)."""
    one = common.replicate_mooncake(src, tmp, 1, count="ids", name="one.jsonl")
    one.path.unlink()
    return common.replicate_mooncake(src, tmp, k * one.block_ids, count="ids", name=f"x{k}.jsonl").path


if __name__ == "__main__":
    common.run(main, "bench_memory")
