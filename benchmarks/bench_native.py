"""How much slower pcs runs without its compiled twins: the figure behind the "not built" note.

pcs._native.missing_note (printed once per run when a twin is not built) and
setup.py's build message say the Python twins are "1.5-5x slower" (measured
here on 2 cores: curve 4.9x, sequential one tier 5.1x, modeled two tiers 1.6x);
this measures it on the Mooncake conversation trace (../shared/traces; the
bundled sample where it is absent), each case with the compiled twins and
with them marked not built (``pcs._native`` as an install without a compiler
sees it), median of ``--repeat`` wall-clock runs, results checked equal:

- ``curve``: ``pcs.curve(points=12, belady=False)`` (stack depths: stackdist);
- ``replay_sequential_one_tier``: ``pcs.replay`` of one LRU tier, sequential
  timing (the fast path's scan: lruscan);
- ``replay_modeled_two_tiers``: ``pcs.replay`` of gpu + cpu LRU tiers,
  modeled timing (the event loop on the all-LRU hierarchy: lruhier).

Prints a few human lines, then ONE JSON summary line last.
Usage: python benchmarks/bench_native.py [--repeat 3]
"""
from __future__ import annotations

import argparse

import common

from pcs import _native


def _cases(trace):
    import pcs

    return {
        "curve": lambda: [r.lru_hit_ratio for r in pcs.curve(trace, points=12, belady=False).rows],
        "replay_sequential_one_tier": lambda: pcs.replay(trace, tiers=["gpu=2000blocks"],
                                                          timing="sequential").summary.hit_ratio,
        "replay_modeled_two_tiers": lambda: pcs.replay(trace, tiers=["gpu=1000blocks", "cpu=4000blocks"]
                                                        ).summary.hit_ratio,
    }


def _set_built(built: dict) -> None:
    """Mark each twin built (its module) or not (None), as pcs._native caches the import."""
    _native._loaded.update(built)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=common.count, default=3)
    ns = ap.parse_args()
    if _native.missing():
        common.skip("bench_native", f"compiled twins not built: {_native.missing()}")
        return
    from pcs.trace import open_trace

    trace = open_trace(common.MOONCAKE_CONV if common.MOONCAKE_CONV.exists() else None)
    built = {t: _native.module(t) for t in _native.TWINS}
    out = {"bench": "bench_native", "machine": common.machine_info(), "repeat": ns.repeat, "trace": trace.name,
           "cases": {}}
    for name, fn in _cases(trace).items():
        times, results = {}, {}
        for mode in ("auto", "python"):
            _set_built(built if mode == "auto" else dict.fromkeys(built))
            times[mode], _, results[mode] = common.median_time(fn, repeat=ns.repeat)
        _set_built(built)
        assert results["auto"] == results["python"], (name, results)
        ratio = times["python"] / times["auto"]
        out["cases"][name] = {"compiled_s": times["auto"], "python_s": times["python"], "python_over_compiled": ratio}
        print(f"{name}: compiled {times['auto']:.3f} s, Python {times['python']:.3f} s ({ratio:.1f}x)")
    common.emit(out)


if __name__ == "__main__":
    common.run(main, "bench_native")
