"""Replay time of the Python reference hierarchy: two tiers, modeled timing, per eviction policy.

Workload: the Mooncake FAST'25 conversation trace (../shared/traces; 23,608
requests, 288,500 block accesses), read once into memory, replayed by the whole
``pcs.replay(trace, policy=P)`` with its defaults (llama-2-70b, 8 x h100-sxm,
tiers gpu=400GB cpu=2TB, write-back, modeled timing: the modeled run plus its
sequential baseline, both on the Python :class:`pcs.cache.Hierarchy` for
``slru``/``fifo``). ``lru-reference`` is the same with ``policy="lru"`` forced
onto the Python hierarchy (``engine="reference"``).

Measured: process CPU seconds (``time.process_time``: other jobs on the shared
machine do not count), best of ``--repeat``, and block accesses per second of
the whole call. Prints one human line per policy, then ONE JSON line last.
``--policy NAME`` (repeatable) times those registered policies instead (``arc``,
``s3fifo``, ``sieve``, ``lfu``, ``2q``, ``gdsf``, ...: all on the Python hierarchy).
``--compute infinite`` (or ``step``) passes ``compute_mode`` to ``pcs.replay``: ``infinite`` is the
event loop alone (no step scheduler), the loop trees from before the step scheduler run (an older
tree without the keyword runs without it: compare like with like).
Usage: python benchmarks/bench_policies.py [--repeat 3] [--trace PATH] [--policy NAME ...] [--compute MODE]
"""
from __future__ import annotations

import argparse
import json
import time

import common

#: (label, replay keyword arguments). ``slru`` is registered as ``protected`` on older trees.
RUNS = (("slru", {"policy": "slru"}), ("fifo", {"policy": "fifo"}),
        ("lru-reference", {"policy": "lru", "engine": "reference"}))
#: Older spellings tried when a name is refused (``protected``, engine ``general``).
FALLBACK = {"slru": "protected", "reference": "general"}


class InMemory:
    """The trace's RequestBatches held in memory (what ``pcs.replay`` reads via ``iter_batches``)."""

    def __init__(self, path) -> None:
        from pcs.trace import open_trace

        tr = open_trace(path)
        self.batches = list(tr.iter_batches())
        self.block_size = tr.block_size
        self.path = str(path)

    def iter_batches(self):
        return iter(self.batches)


def _replay(src, kwargs: dict):
    from pcs.engine.api import replay

    try:
        return replay(src, **kwargs)
    except TypeError:           # a tree from before compute_mode: its only mode is the event loop
        kwargs = {k: v for k, v in kwargs.items() if k != "compute_mode"}
        return _replay(src, kwargs)
    except ValueError:
        old = {k: FALLBACK.get(v, v) for k, v in kwargs.items()}
        return replay(src, **old)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--trace", default=str(common.MOONCAKE_CONV))
    ap.add_argument("--policy", action="append", default=[], help="time these policies instead (repeatable)")
    ap.add_argument("--compute", choices=("step", "infinite"), help="compute_mode (default: pcs.replay's)")
    args = ap.parse_args()
    runs = tuple((p, {"policy": p}) for p in args.policy) or RUNS
    if args.compute:
        runs = tuple((label, {**kw, "compute_mode": args.compute}) for label, kw in runs)
    import pcs

    src = InMemory(args.trace)
    accesses = sum(int(b.block_offsets[-1]) for b in src.batches)
    out = {"bench": "policies", "trace": args.trace, "block_accesses": accesses, "pcs": pcs.__file__,
           "compute": args.compute}
    for label, kwargs in runs:
        best, hit = float("inf"), None
        for _ in range(args.repeat):
            t = time.process_time()
            res = _replay(src, kwargs)
            best = min(best, time.process_time() - t)
            hit = res.summary.hit_ratio
        out[label] = {"replay_s": best, "accesses_per_s": accesses / best, "hit_ratio": hit}
        print(f"{label}: {best:.2f} s CPU, {accesses / best / 1e6:.3f} M accesses/s, hit ratio {hit:.6f}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
