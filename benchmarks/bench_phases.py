"""Benchmark: CPU per phase of the default-like two-tier ``pcs.replay``, to see what the call does around its loops.

``pcs.replay(path, tiers=["gpu=16384blocks", "cpu=65536blocks"], policy="lru")`` (two tiers, modeled, step
scheduler) under ``cProfile`` with ``time.thread_time`` as its clock and the no-cache step loop forced onto the
calling thread (``pcs.beside.Beside(threaded=False)``), so every function's time is CPU of one thread. One
untimed warm-up call, then ``--calls`` profiled calls; per phase the minimum over the calls, in ms. The phases are
functions that exist in every recent tree (a missing one reads 0), so a copy of the script placed in the other
checkout's ``benchmarks/`` (its ``common.py`` puts that checkout first on ``sys.path``; this one's would import this
tree) runs there for an alternated comparison; the JSON line names the ``pcs`` it imported. The phases: the decode and
batch join (``Decoded._joined``, cumulative), the next-turn search (``_turns.walk``), the one-pass scan
(``_lruscan.lru_feed``), the chunks and prefill tables (``chunks._from_columns``, cumulative), the step loops
(``StepScheduler.feed``/``close``/``columns``), their input columns (``NativeStepEngine._feed_inputs``), the
summaries (``api._summarise``) and the whole call. cProfile adds about 1 us per Python call (about 20 k calls per
10x call), so phases are comparable between trees, not to unprofiled wall times.

Usage: python benchmarks/bench_phases.py TRACE [--calls 3]
Prints one line per phase, then the JSON line last.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

#: phase -> ((file suffix, function name), cumulative?) summed.
PHASES = {
    "decode_and_join": [(("decoded.py", "_joined"), True)],
    "next_turn_search": [(("~", "<built-in method pcs.engine._turns.walk>"), False)],
    "scan": [(("~", "<built-in method pcs.engine._lruscan.lru_feed>"), False)],
    "chunks_and_prefill_tables": [(("chunks.py", "_from_columns"), True)],
    "step_loops": [(("~", "<method 'feed' of 'pcs.engine._stepsched.StepScheduler' objects>"), False),
                   (("~", "<method 'close' of 'pcs.engine._stepsched.StepScheduler' objects>"), False),
                   (("~", "<method 'columns' of 'pcs.engine._stepsched.StepScheduler' objects>"), False)],
    "loop_input_columns": [(("stepnative.py", "_feed_inputs"), True)],
    "summaries": [(("api.py", "_summarise"), True)],
    "call": [(("api.py", "replay"), True)],
}


def _phase_ms(stats: dict) -> dict:
    out = {}
    for phase, parts in PHASES.items():
        total = 0.0
        for (suffix, name), cumulative in parts:
            for (f, _, fn), (_, _, tt, ct, _) in stats.items():
                if fn == name and f.endswith(suffix):
                    total += ct if cumulative else tt
        out[phase] = total * 1e3
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--calls", type=int, default=3)
    args = ap.parse_args()
    import pcs
    from pcs import beside

    init = beside.Beside.__init__
    beside.Beside.__init__ = lambda self, threaded: init(self, False)   # the no-cache loop on this thread
    call = lambda: pcs.replay(args.trace, tiers=["gpu=16384blocks", "cpu=65536blocks"], policy="lru")  # noqa: E731
    call()
    best: dict = {}
    for _ in range(args.calls):
        pr = cProfile.Profile(time.thread_time)
        pr.enable()
        call()
        pr.disable()
        for k, v in _phase_ms(pstats.Stats(pr).stats).items():
            best[k] = min(best.get(k, v), v)
    best["outside_loops_and_scan"] = best["call"] - best["step_loops"] - best["scan"]
    for k, v in best.items():
        print(f"{k:28s} {v:8.1f} ms CPU")
    common.emit({"bench": "phases", "trace": args.trace, "calls": args.calls, "pcs": pcs.__file__,
                 "cpu_ms": {k: round(v, 1) for k, v in best.items()}, "load_average": os.getloadavg()[0],
                 "machine": common.machine_info()})


if __name__ == "__main__":
    main()
