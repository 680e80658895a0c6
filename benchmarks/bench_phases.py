"""Benchmark: CPU per phase of the default-like two-tier ``pcs.replay``, to see what the call does around its loops.

``pcs.replay(path, tiers=["gpu=16384blocks", "cpu=65536blocks"], policy="lru")`` (two tiers, modeled, step
scheduler) under ``cProfile`` with ``time.thread_time`` as its clock and the no-cache step loop forced onto the
calling thread (``pcs.beside.Beside(threaded=False)``), so every function's time is CPU of one thread. One
untimed warm-up call, then ``--calls`` profiled calls; per phase the minimum over the calls, in ms. The phases are
functions that exist in every recent tree (a missing one reads 0), so a copy of the script placed in the other
checkout's ``benchmarks/`` (its ``common.py`` puts that checkout first on ``sys.path``; this one's would import this
tree) runs there for an alternated comparison; the JSON line names the ``pcs`` it imported. The phases: the decode and
batch join (``Decoded._joined``, cumulative; with the next-turn search walking each batch as it is read, that
search's calls inline), the next-turn search (``_turns.walk``), the one-pass scan
(``_lruscan.lru_feed``), the chunks and prefill tables (``chunks._from_columns``, cumulative; made in the decode:
``ChunkPieces.add`` and ``.take``, cumulative, ``add`` also inside the decode's figure, as the search), the step loops
(``StepScheduler.feed``/``close``/``columns``), their input columns (``NativeStepEngine._feed_inputs``), the
summaries (``api._summarise``) and the whole call. cProfile adds about 1 us per Python call (about 20 k calls per
10x call), so phases are comparable between trees, not to unprofiled wall times.

``--timeline``: instead of the profile, the critical path on the machine's cores: one more call with threads as a
user gets them (``PCS_THREADS`` as set), each phase wrapped to record its wall start and end and the thread it ran
on (:data:`TIMELINE`); printed as intervals and as one bar per thread (a letter per phase, ``.`` idle). The
wrappers add a few us per call (one per chunk fed), far below the phases.

Usage: python benchmarks/bench_phases.py TRACE [--calls 3] [--timeline]
Prints one line per phase (or the timeline), then the JSON line last.
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
    "chunks_and_prefill_tables": [(("chunks.py", "_from_columns"), True), (("chunks.py", "add"), True),
                                  (("chunks.py", "take"), True)],
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


#: --timeline: (module, attribute, phase letter, phase name) wrapped to record when and where each call ran.
TIMELINE = [("pcs.engine.decoded", "Decoded.__init__", "D", "decode and join"),
            ("pcs.trace.jsonfast", "native_decode", "j", "JSONL chunk decode"),
            ("pcs.engine.turns", "decode_blocks", "T", "next-turn search"),
            ("pcs.engine.turns", "TurnWalk._walk", "t", "next-turn search of a batch, as it is decoded"),
            ("pcs.engine.fastpath", "scan", "S", "one-pass scan"),
            ("pcs.engine.chunks", "_from_columns", "C", "chunk and prefill table"),
            ("pcs.engine.chunks", "ChunkPieces.add", "c", "a batch's chunk piece, made in the decode"),
            ("pcs.engine.stepnative", "NativeStepEngine.feed", "L", "step loop feed"),
            ("pcs.engine.stepnative", "NativeStepEngine.close", "E", "step loop close"),
            ("pcs.engine.seqbase", "baseline_from_scan", "B", "baseline from the scan"),
            ("pcs.engine.schedstats", "latency_parts", "P", "no-cache run's latency sorts, after its close"),
            ("pcs.engine.api", "_summarise", "U", "summaries")]


def _wrap_timeline(events: list) -> None:
    """Wrap every :data:`TIMELINE` function to append (phase, thread, start s, end s) to ``events``; a worker
    thread is named ``w:`` and the letter of the first phase it ran (the scan's, the no-cache loop's, ...)."""
    import functools
    import importlib
    import threading

    roles: dict = {}
    for mod, attr, letter, _ in TIMELINE:
        owner = importlib.import_module(mod)
        *path, name = attr.split(".")
        for part in path:
            owner = getattr(owner, part, None)
        real = getattr(owner, name, None)
        if real is None:          # a tree without this function or class (another checkout's): not drawn
            continue

        def timed(*a, _real=real, _letter=letter, **k):
            t0 = time.perf_counter()
            try:
                return _real(*a, **k)
            finally:   # a worker is named by its role: the first phase it ran
                th = threading.current_thread()
                who = th.name if th is threading.main_thread() else f"w:{roles.setdefault(th.ident, _letter)}"
                events.append((_letter, who, t0, time.perf_counter()))
        setattr(owner, name, functools.wraps(real)(timed))


def _print_timeline(events: list, t0: float, t1: float, width: int = 100) -> dict:
    """One bar per thread over the call (``width`` columns), and busy ms per (thread, phase); returns the latter."""
    threads = sorted({e[1] for e in events}, key=lambda t: (t != "MainThread", t))
    busy: dict = {}
    for th in threads:
        bar = ["."] * width
        for letter, who, a, b in sorted(events, key=lambda e: e[2] - e[3]):   # the longest first, inner ones on top
            if who != th:
                continue
            busy[f"{th}:{letter}"] = busy.get(f"{th}:{letter}", 0.0) + (b - a) * 1e3
            for col in range(int((a - t0) / (t1 - t0) * width), min(width, int((b - t0) / (t1 - t0) * width) + 1)):
                bar[col] = letter
        print(f"{th[:12]:12s} |{''.join(bar)}|")
    print(f"{'':12s}  0 ms{'':{width - 14}s}{(t1 - t0) * 1e3:8.1f} ms")
    print("  ".join(f"{letter} {name}" for _, _, letter, name in TIMELINE))
    for k, v in sorted(busy.items()):
        print(f"  {k:24s} {v:8.1f} ms")
    return busy


def timeline(trace: str) -> None:
    """``--timeline`` (module docstring): one warm-up call, then one call with every phase's wall interval."""
    import pcs

    call = lambda: pcs.replay(trace, tiers=["gpu=16384blocks", "cpu=65536blocks"], policy="lru")  # noqa: E731
    call()
    events: list = []
    _wrap_timeline(events)
    t0 = time.perf_counter()
    call()
    t1 = time.perf_counter()
    busy = _print_timeline(events, t0, t1)
    common.emit({"bench": "phases_timeline", "trace": trace, "pcs": pcs.__file__, "wall_ms": round((t1 - t0) * 1e3, 1),
                 "busy_ms": {k: round(v, 1) for k, v in busy.items()},
                 "threads": os.environ.get("PCS_THREADS", "auto"), "load_average": os.getloadavg()[0],
                 "machine": common.machine_info()})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--calls", type=common.count, default=3)
    ap.add_argument("--timeline", action="store_true", help="the phases' wall intervals per thread instead")
    args = ap.parse_args()
    common.need_trace(args.trace, "bench_phases")
    if args.timeline:
        return timeline(args.trace)
    import pcs
    from pcs import beside

    # every part on this thread: PCS_THREADS=off (pcs.beside.threads_wanted), which the read-ahead, the gated
    # workers and every Beside all read. Forcing Beside alone (this script did until 2026-12-04) left the parts
    # that read threads_wanted on workers waiting for a Beside that never started: a call with threads (a 10x
    # trace, or the 1x trace once auto took threads there) hung in a futex.
    os.environ["PCS_THREADS"] = "off"
    init = beside.Beside.__init__
    beside.Beside.__init__ = lambda self, threaded, *a, **k: init(self, False, *a, **k)   # side work on this thread
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
    common.run(main, "bench_phases")
