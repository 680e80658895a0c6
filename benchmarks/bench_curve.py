"""Benchmark: the one-pass LRU curve against per-capacity replays.

Replicates a real trace (default: the Mooncake FAST'25 conversation trace in
../shared/traces) with remapped ids until it has >= 10 M cacheable block
accesses; replica k's requests are interleaved round-robin with the others
(k independent user populations) and its ids are ``dense_id + k * D``
scrambled by an odd 64-bit multiplier (a bijection, so no collisions).

Measures, on the replicated trace:
- flatten (numpy: cacheable blocks, hit-token weights);
- the compiled stack-depth kernel alone, and the whole one-pass curve
  (kernel + lead depths + weighted histogram) -> accesses/s;
- the pure-Python kernel (on the unreplicated trace; it is ~15x slower);
and the wall time of one pass for 50 capacities beside 50 separate
``pcs.engine.api.replay(..., timing="sequential", policy="lru")`` runs on
the unreplicated trace, plus one such replay on the replicated trace (its
x50 is stated as an estimate, not run).

Usage: python benchmarks/bench_curve.py [--trace PATH] [--min-accesses N]
       [--capacities 50] [--skip-replays]
The last line printed is one JSON object with every figure.
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from pcs.blocks import BlockRules
from pcs.curves import stackdist
from pcs.curves.api import capacity_grid, lru_curve
from pcs.trace import open_trace

ROOT = Path(__file__).resolve().parents[1]
import common  # noqa: E402
from common import MOONCAKE_CONV  # noqa: E402
DEFAULT = MOONCAKE_CONV  # benchmarks/common.py: PCS_MOONCAKE_TRACE or ../shared
SCRAMBLE = np.uint64(0x9E3779B97F4A7C15)


def columns(path):
    batches = list(open_trace(path).iter_batches())
    p = np.concatenate([b.prompt_tokens for b in batches])
    counts = np.concatenate([np.diff(b.block_offsets) for b in batches])
    hashes = np.concatenate([b.block_hashes for b in batches])
    return p, np.concatenate(([0], np.cumsum(counts))).astype(np.int64), hashes, batches[0].block_size


def replicate(p, off, hashes, k):
    """k interleaved copies with disjoint ids: row i*k + j is request i of copy j."""
    _, dense = np.unique(hashes, return_inverse=True)
    d = int(dense.max()) + 1
    counts = np.diff(off)
    src = np.repeat(np.arange(len(p)), k)
    copy = np.tile(np.arange(k, dtype=np.uint64), len(p))
    new_counts = counts[src]
    new_off = np.concatenate(([0], np.cumsum(new_counts))).astype(np.int64)
    within = np.arange(new_off[-1], dtype=np.int64) - np.repeat(new_off[:-1], new_counts)
    pick = np.repeat(off[:-1][src], new_counts) + within
    ids = (dense.reshape(-1)[pick].astype(np.uint64) + np.repeat(copy, new_counts) * np.uint64(d)) * SCRAMBLE
    return p[src], new_off, ids


def grid(max_blocks: int, count: int) -> list[int]:
    """Exactly ``count`` distinct capacities (geometric; more points until dedup leaves enough)."""
    points = count
    while len(capacity_grid(max_blocks, points)) < min(count, max_blocks) and points < 100 * count:
        points += 1
    return capacity_grid(max_blocks, points)


def best_of(fn, repeat):
    """Best-of-``repeat`` wall-clock seconds (:func:`common.best_of` with ``time.perf_counter``) and the result."""
    return common.best_of(fn, repeat, time.perf_counter)


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=str(DEFAULT))
    ap.add_argument("--min-accesses", type=common.count, default=10_000_000)
    ap.add_argument("--capacities", type=common.count, default=50)
    ap.add_argument("--repeat", type=common.count, default=3)
    ap.add_argument("--skip-replays", action="store_true")
    a = ap.parse_args()
    common.need_trace(a.trace, "bench_curve")
    return a


def _kernels(a, cols, res: dict):
    """Flatten, kernels and the one-pass curve on the trace replicated to ``--min-accesses``; figures into ``res``.

    Returns the replicated columns (prompt tokens, offsets, ids), the LRU curve, its capacities and the
    one-pass seconds (curve + evaluation at every capacity)."""
    p, off, hashes, bs = cols
    base = stackdist.flatten_columns(p, off, hashes, bs)
    k = -(-a.min_accesses // base.num_accesses)
    rp, roff, rids = replicate(p, off, hashes, k)
    t_flat, flat = best_of(lambda: stackdist.flatten_columns(rp, roff, rids, bs, BlockRules()), a.repeat)
    n = flat.num_accesses
    res.update(replicas=k, requests=flat.num_requests, accesses=n, base_accesses=base.num_accesses)
    print(f"trace {a.trace}: {base.num_accesses:,} cacheable accesses x {k} replicas = {n:,} accesses")

    t_kernel, _ = best_of(lambda: stackdist.stack_depths(flat.block_hashes, flat.req_offsets, "c"), a.repeat)
    t_curve, lru = best_of(lambda: lru_curve(flat, kernel="c"), a.repeat)
    caps = grid(lru.max_useful_capacity_blocks, a.capacities)
    t_eval, _ = best_of(lambda: lru.hit_ratio(np.array(caps)), a.repeat)
    t_py, _ = best_of(lambda: stackdist.stack_depths(base.block_hashes, base.req_offsets, "python"), 1)
    t_c_base, _ = best_of(lambda: stackdist.stack_depths(base.block_hashes, base.req_offsets, "c"), a.repeat)
    res.update(
        flatten_s=t_flat, kernel_c_s=t_kernel, one_pass_curve_s=t_curve,
        kernel_c_accesses_per_s=n / t_kernel, one_pass_curve_accesses_per_s=n / t_curve,
        end_to_end_accesses_per_s=n / (t_flat + t_curve),
        kernel_python_accesses_per_s=base.num_accesses / t_py,
        kernel_c_accesses_per_s_unreplicated=base.num_accesses / t_c_base,
        one_pass_50_capacities_s=t_curve + t_eval, distinct_cacheable_blocks=lru.num_distinct,
    )
    print(f"flatten (numpy)              {t_flat:7.3f} s")
    print(f"stack depths, C kernel       {t_kernel:7.3f} s  {n / t_kernel / 1e6:6.1f} M accesses/s")
    print(f"one-pass curve (all C)       {t_curve:7.3f} s  {n / t_curve / 1e6:6.1f} M accesses/s")
    print(f"flatten + one-pass curve     {t_flat + t_curve:7.3f} s  {n / (t_flat + t_curve) / 1e6:6.1f} M accesses/s")
    print(f"Python kernel (1 replica)    {t_py:7.3f} s  {base.num_accesses / t_py / 1e6:6.2f} M accesses/s")
    print(f"C kernel (1 replica)         {t_c_base:7.3f} s  {base.num_accesses / t_c_base / 1e6:6.1f} M accesses/s")
    return (rp, roff, rids), lru, caps, t_curve + t_eval


def one_replay(trace, c):
    """The general event-loop engine: one full replay per capacity (its summary)."""
    from pcs.engine.api import replay

    return replay(trace, tiers=[f"gpu={c}blocks"], policy="lru", timing="sequential", engine="reference").summary


class Rows:
    """Replicated columns (prompt tokens, offsets, ids) as Request-like rows for the engine."""

    def __init__(self, replicated, bs):
        self.replicated, self.bs = replicated, bs

    def __iter__(self):
        from pcs.trace.request import RequestBatch

        rp, roff, rids = self.replicated
        z = np.zeros(len(rp))
        yield from RequestBatch(0, self.bs, z, rp, z.astype(np.int64), roff, rids).requests()


def _unreplicated_replays(a, cols, res: dict) -> None:
    """One pass (flatten included) for the capacity grid beside one engine replay per capacity, unreplicated."""
    p, off, hashes, bs = cols
    base_lru = lru_curve(stackdist.flatten_columns(p, off, hashes, bs))
    base_caps = grid(base_lru.max_useful_capacity_blocks, a.capacities)
    t0 = time.perf_counter()
    base_flat = stackdist.flatten_columns(p, off, hashes, bs)
    one = lru_curve(base_flat)
    one.hit_ratio(np.array(base_caps))
    t_one = time.perf_counter() - t0
    t0 = time.perf_counter()
    for c in base_caps:
        s = one_replay(a.trace, c)
        assert s.hit_tokens == one.hit_tokens(c), c
    t_reps = time.perf_counter() - t0
    res.update(unreplicated_capacities=len(base_caps), unreplicated_one_pass_s=t_one,
               unreplicated_replays_s=t_reps)
    print(f"{len(base_caps)} capacities, unreplicated: one pass {t_one:.3f} s (incl. flatten) vs "
          f"{len(base_caps)} engine replays {t_reps:.1f} s (x{t_reps / t_one:.0f}); hit tokens equal at all")


def _replicated_replay(rows: Rows, lru, caps, t_one_pass: float, res: dict) -> None:
    """One engine replay of the replicated trace at the middle capacity (x the grid size: an estimate)."""
    c = caps[len(caps) // 2]
    t0 = time.perf_counter()
    s = one_replay(rows, c)
    t_rep = time.perf_counter() - t0
    assert s.hit_tokens == lru.hit_tokens(c)
    res.update(replicated_one_replay_s=t_rep, replicated_50_replays_estimate_s=t_rep * len(caps))
    print(f"{len(caps)} capacities, replicated: one pass {t_one_pass:.2f} s vs one engine replay "
          f"{t_rep:.1f} s (x{len(caps)} = ~{t_rep * len(caps):.0f} s, estimated); hit tokens equal")


def main() -> None:
    a = _args()
    res: dict = {"trace": a.trace, "python": platform.python_version(), "kernel_built": stackdist.available_kernel()}
    cols = columns(a.trace)
    replicated, lru, caps, t_one_pass = _kernels(a, cols, res)
    if not a.skip_replays:
        _unreplicated_replays(a, cols, res)
        _replicated_replay(Rows(replicated, cols[3]), lru, caps, t_one_pass, res)
    print(json.dumps(res, sort_keys=True))


if __name__ == "__main__":
    common.run(main, "bench_curve")
