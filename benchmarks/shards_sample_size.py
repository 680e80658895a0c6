"""Not a speed figure: the SHARDS estimate's error against the size of its sample (docs/curves.md, "How small a
sample"), the measurement behind :data:`pcs.curves.api.MIN_SAMPLED_BLOCKS`.

For each trace, rate and seed: the sampled LRU curve (:func:`pcs.curves.api.lru_curve` with ``sample_rate``,
the chain heads exact as ``pcs curve`` keeps them) against the exact one at 29 capacities spaced geometrically
from 1 block to where the exact curve reaches its ceiling; the absolute error in percentage points of the hit
ratio (mean and worst over the capacities), the ceiling's error, and the sample's size: the distinct blocks the
hash sample kept beyond the heads (:attr:`pcs.curves.api.LruCurve.sampled_blocks`) and their accesses.

Usage: python benchmarks/shards_sample_size.py [--trace PATH ...] [--rates 0.1,0.01,...] [--seeds 8]
Prints one table row per trace and rate (min-max of the sample sizes over the seeds; mean over seeds of each
seed's mean error, the worst seed's mean, the worst capacity of any seed; the ceiling's mean and worst), then
ONE JSON line with every (trace, rate, seed) figure.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import count, emit, need_trace, run  # noqa: E402

BENCH = "shards_sample_size"
DEFAULT_RATES = "0.5,0.2,0.1,0.05,0.02,0.01,0.005,0.002,0.001,0.0005,0.0002,0.0001"


def _one(flat, exact, caps: np.ndarray, rate: float, seed: int) -> dict:
    """The errors of one sampled curve against ``exact`` (percentage points) and its sample's size."""
    from pcs.curves.api import lru_curve
    from pcs.curves.shards import sampled_lead_depths

    est = sampled_lead_depths(flat, rate, seed, 1)
    curve = lru_curve(flat, None, rate, seed, 1)
    err = np.abs(curve.hit_ratio(caps) - exact.hit_ratio(caps)) * 100
    top = 10**15         # past any depth: the ceiling
    return {"rate": rate, "seed": seed, "sampled_blocks": est.num_sampled_blocks,
            "sampled_accesses": int(np.count_nonzero(est.block_weight != 1.0)),
            "mean_pp": float(err.mean()), "worst_pp": float(err.max()),
            "ceiling_pp": float(abs(curve.hit_ratio(top) - exact.hit_ratio(top)) * 100)}


def _row(name: str, runs: list[dict]) -> str:
    """One markdown row: the rate, sample sizes (min-max) and the errors over the seeds."""
    blocks = [r["sampled_blocks"] or 0 for r in runs]
    acc = [r["sampled_accesses"] for r in runs]
    mean = [r["mean_pp"] for r in runs]
    return (f"| {name} | {runs[0]['rate']:g} | {min(blocks):,}-{max(blocks):,} | {min(acc):,}-{max(acc):,} | "
            f"{np.mean(mean):.2f} | {max(mean):.2f} | {max(r['worst_pp'] for r in runs):.2f} | "
            f"{np.mean([r['ceiling_pp'] for r in runs]):.2f} | {max(r['ceiling_pp'] for r in runs):.2f} |")


def rates(text: str) -> list[float]:
    """argparse ``type=``: comma-separated sampling rates, each in (0, 1) (1 is the exact curve: nothing to
    measure).

    Raises:
        argparse.ArgumentTypeError: a rate that is not a number or not in (0, 1) (one line, exit 2).
    """
    out = []
    for item in str(text).split(","):
        try:
            rate = float(item)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be rates in (0, 1), got {item.strip()!r}") from None
        if not 0.0 < rate < 1.0:
            raise argparse.ArgumentTypeError(f"must be rates in (0, 1), got {rate:g}")
        out.append(rate)
    return out


def main() -> None:
    from pcs.curves.api import load_accesses, lru_curve
    from pcs.trace import DEFAULT_TRACE

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", action="append", default=None, help="trace path (repeatable; default: the sample)")
    ap.add_argument("--rates", type=rates, default=rates(DEFAULT_RATES), help="comma-separated sampling rates "
                    "in (0, 1)")
    ap.add_argument("--seeds", type=count, default=8, help="seeds per rate (0 .. N-1)")
    args = ap.parse_args()
    print("| trace | rate | sampled blocks | sampled accesses | mean | worst seed mean | worst | ceiling mean | "
          "ceiling worst |\n|---|---|---|---|---|---|---|---|---|")
    out = []
    for path in args.trace or [str(DEFAULT_TRACE)]:
        flat, _ = load_accesses(str(need_trace(path, BENCH)))
        exact = lru_curve(flat)
        caps = np.unique(np.rint(np.geomspace(1, max(exact.max_useful_capacity_blocks, 1), 29)).astype(np.int64))
        for rate in args.rates:
            runs = [_one(flat, exact, caps, rate, seed) for seed in range(args.seeds)]
            print(_row(Path(path).name, runs), flush=True)
            out += [{"trace": str(path), **r} for r in runs]
    emit({"bench": BENCH, "runs": out})


if __name__ == "__main__":
    run(main, BENCH)
