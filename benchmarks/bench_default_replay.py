"""Benchmark: the whole default ``pcs.replay`` (two tiers, modeled, LRU, step scheduler) beside libCacheSim's LRU.

What a user waits for: ``pcs.engine.api.replay(path)`` with every default
(llama-2-70b on 8 x H100, the GPU tier sized from the deployment, ``cpu=2TB``,
LRU, write-back, modeled timing, ``compute_mode="step"``) on the Mooncake
FAST'25 conversation trace, JSONL, read inside the timed call -- at 1x and at
10x (benchmarks/common.py: copies with remapped ids and shifted times).
Beside it, in the same run with alternated order (:func:`common.alternating_pairs`):
libCacheSim's ``LRU(C).process_trace`` over the flat block stream of the same
trace (:func:`common.flat_lru_stream`, written once as an oracleGeneral file,
excluded) with C = the default run's GPU tier in blocks. Throughputs count the
same logical accesses on both sides: full prompt blocks looked up
(``flat_lru_stream(...).accesses``); the replay's own ``block_accesses``
(every hash id) is printed too. Without libcachesim installed, pcs alone is
timed (``libcachesim_s`` null).

Usage: python benchmarks/bench_default_replay.py [--replicas 1,10] [--pairs 3] [--policy lru] [--trace PATH]
[--engine auto|compiled-hierarchy] [--parquet] (compiled-hierarchy: the Python step-scheduler loop, for a
before/after pair; --parquet: from pcs Parquet). ``libcachesim_cpu_s`` and ``cpu_ratio_to_libcachesim`` (median
libCacheSim CPU seconds / median pcs CPU seconds) are the steadier ratio on a loaded machine.
The last line printed is one JSON object: per replica, ``pcs_replay_s``
(median), ``libcachesim_s``, ``pcs_m_accesses_per_s``, ``libcachesim_m_accesses_per_s``,
``ratio_to_libcachesim`` (median of pair ratios libCacheSim time / pcs time,
>1 = pcs faster), ``pcs_replay_cpu_s`` / ``pcs_m_accesses_per_cpu_s`` (process CPU
seconds, steadier than wall time on a shared machine), ``engine``, ``baseline_engine``, and the summary's
``hit_ratio`` (a number that must not move between versions).
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import common
from compare_libcachesim import hashpower_for, write_oracle_general

BENCH = "bench_default_replay"


_CPU: list = []   # process CPU seconds of each timed pcs.replay (the machine is shared: wall time drifts)


_PARQUET = [False]   # --parquet: replay from pcs Parquet instead of the JSONL
_ENGINE = ["auto"]   # --engine: "compiled-hierarchy" times the Python step-scheduler loop (the figure before the compiled step loop)


def _pcs(path: Path, policy: str):
    from pcs.engine.api import replay

    t0 = time.process_time()
    s = replay(str(path), policy=policy, engine=_ENGINE[0]).summary
    _CPU.append(time.process_time() - t0)
    return s


_LCS_CPU: list = []   # process CPU seconds of each timed libCacheSim run (the same clock as _CPU)


def _lcs(oracle: Path, c: int, accesses: int) -> int:
    import libcachesim as lcs

    t0 = time.process_time()
    cache = lcs.LRU(c, hashpower=hashpower_for(c))
    miss_ratio, _ = cache.process_trace(lcs.TraceReader(str(oracle), lcs.TraceType.ORACLE_GENERAL_TRACE))
    _LCS_CPU.append(time.process_time() - t0)
    return round(miss_ratio * 2 * accesses)


def _one(path: Path, tmp: Path, pairs: int, policy: str, has_lcs: bool) -> dict:
    from pcs.trace import open_trace

    fs = common.flat_lru_stream(open_trace(str(path)))
    if _PARQUET[0]:                             # time the replay from pcs Parquet (converted once, untimed)
        from pcs.trace.convert import convert

        parquet = tmp / f"{path.stem}.parquet"
        convert(open_trace(str(path)), parquet)
        path = parquet
    s = _pcs(path, policy)                      # warm-up, and the GPU tier's size
    _CPU.clear()
    _LCS_CPU.clear()
    c = int(s.tiers[0].capacity_blocks)
    if has_lcs:
        oracle = tmp / f"{path.stem}.oracleGeneral.bin"
        write_oracle_general(fs, oracle)
        r = common.alternating_pairs(lambda: _pcs(path, policy), lambda: _lcs(oracle, c, fs.accesses), pairs,
                                     warmup=0)
        t_pcs, t_lcs, ratio = r["a_median_s"], r["b_median_s"], r["ratio_median"]
        s = r["a_out"]
    else:
        t_pcs, _, s = common.median_time(lambda: _pcs(path, policy), pairs, warmup=0)
        t_lcs = ratio = None
    row = {"trace": str(path), "requests": fs.requests, "accesses": fs.accesses, "block_accesses": s.block_accesses,
           "gpu_blocks": c, "engine": s.engine, "baseline_engine": s.baseline_engine, "hit_ratio": s.hit_ratio,
           "pcs_replay_s": t_pcs, "pcs_replay_cpu_s": statistics.median(_CPU), "libcachesim_s": t_lcs, "ratio_to_libcachesim": ratio,
           "pcs_m_accesses_per_s": fs.accesses / t_pcs / 1e6,
           "pcs_m_accesses_per_cpu_s": fs.accesses / statistics.median(_CPU) / 1e6,
           "libcachesim_cpu_s": statistics.median(_LCS_CPU) if _LCS_CPU else None,
           "cpu_ratio_to_libcachesim": statistics.median(_LCS_CPU) / statistics.median(_CPU) if _LCS_CPU else None,
           "libcachesim_m_accesses_per_s": fs.accesses / t_lcs / 1e6 if t_lcs else None}
    print(f"{path.name}: {fs.accesses:,} accesses, pcs.replay {t_pcs:.2f} s = {row['pcs_m_accesses_per_s']:.3f} M/s "
          f"(CPU {row['pcs_replay_cpu_s']:.2f} s = {row['pcs_m_accesses_per_cpu_s']:.3f} M/s) "
          f"({s.engine}; baseline {s.baseline_engine}); libCacheSim LRU({c}) "
          f"{row['libcachesim_m_accesses_per_s'] or 0:.2f} M/s; ratio {ratio or 0:.4f} "
          f"(CPU seconds: {row['cpu_ratio_to_libcachesim'] or 0:.4f}); hit ratio {s.hit_ratio}")
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicas", type=common.counts, default="1,10", help="comma list of trace copies (default 1,10)")
    ap.add_argument("--pairs", type=common.count, default=3)
    ap.add_argument("--policy", default="lru")
    ap.add_argument("--trace", type=Path, default=common.MOONCAKE_CONV, help="Mooncake JSONL (default: ../shared)")
    ap.add_argument("--engine", default="auto", help="replay(engine=...): auto (default) or e.g. compiled-hierarchy")
    ap.add_argument("--parquet", action="store_true", help="replay from pcs Parquet (converted once, untimed)")
    args = ap.parse_args()
    common.need_trace(args.trace, "bench_default_replay")
    _ENGINE[0] = args.engine
    _PARQUET[0] = args.parquet
    src = args.trace
    try:
        import libcachesim  # noqa: F401
        has_lcs = True
    except ImportError:
        has_lcs = False
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for k in args.replicas:
            path = src
            if k > 1:   # exactly k copies: replicate_mooncake sizes by accesses, so ask for k x one copy's
                one = common.replicate_mooncake(src, tmp, 0, name="x1.jsonl").cacheable_accesses
                path = common.replicate_mooncake(src, tmp, k * one, name=f"x{k}.jsonl").path
            rows.append(dict(_one(Path(path), tmp, args.pairs, args.policy, has_lcs), replicas=k))
    common.emit({"bench": BENCH, "policy": args.policy, "engine_requested": args.engine, "parquet": args.parquet, "pairs": args.pairs, "rows": rows,
                 "machine": common.machine_info()})


if __name__ == "__main__":
    common.run(main, "bench_default_replay")
