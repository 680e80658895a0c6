"""Benchmark: pcs's one-tier LRU replay and one-pass curve beside libCacheSim's LRU.

The stream: per request of the Mooncake FAST'25 conversation trace, its full
prompt blocks (``n = input_length // 512``, :class:`pcs.blocks.BlockRules`)
head to tail, then tail to head, object size 1 (docs/semantics.md
§6). On it libCacheSim's LRU of C objects misses exactly the
blocks pcs computes before the last-token cap (sum over requests of
``n - lead``), which the script checks at every capacity.

In one process, at >= 3 capacities (each >= the largest request's ``n``):
- ``pcs.engine.api.replay(trace, tiers=["gpu=<C>blocks"], policy="lru",
  timing="sequential")`` -- what a user runs (its default ``engine="auto"``
  runs on the lru-scan engine, the one-pass LRU scan, where it applies), reading pcs's Parquet
  form of the trace (converted once, excluded, as libCacheSim's file) and,
  timed apart, the JSONL trace; the same with ``engine="reference"`` (the
  event-loop engine); and the event loop alone (``ReplayEngine.feed`` over
  pre-built chunks) to separate the cache from the rest of ``replay``;
- libCacheSim (PyPI ``libcachesim``): ``LRU(C).process_trace(TraceReader)``
  over the stream written once as an oracleGeneral binary file (24 B per
  request; writing it is excluded from the times and reported), with a hash
  table sized to C (``hashpower = max(16, ceil(log2(C + 1)))``; the table
  grows by itself, and the default 2^24 buckets cost ~0.15 s of page faults
  per cache); the default hashpower and a Python loop of ``cache.get`` with
  one reused ``Request`` are timed too;
- ``pcs.curves.api.curve(trace, capacities, belady=False)``: every
  capacity from one pass (from Parquet; from JSONL; and the core alone,
  ``lru_curve`` over accesses already flattened), against one libCacheSim run.
Each comparison: one warm-up of each side, then 5 pairs in alternating order;
the figures are medians. Throughputs count *logical* accesses (full prompt
blocks looked up), for libCacheSim too (its stream has two gets per access).

Optionally (``--min-accesses``, default 10 M, 0 = off): the trace replicated
(benchmarks/common.py: remapped ids, shifted timestamps) to that many
accesses for the curve and replay figures at scale (the middle capacity), and peak RSS (``VmHWM``) of replays and the
curve in fresh child processes: bytes per block held, and peak RSS at 1x,
4x and the full replica at a fixed capacity (flat in the number of requests?).

With ``--policies``: instead, the eviction policies libCacheSim also has
(ARC, S3-FIFO, SIEVE, LFU, 2Q; LRU and FIFO as controls) on the *flat block
stream* -- every cacheable block access of the trace, request after request,
head to tail, each as its own one-block request -- through ``pcs.replay(...,
timing="sequential", tiers=["gpu=<C>blocks"], policy=P)`` (one tier, the
event loop) beside libCacheSim's ``get`` loop, at four capacities >= 20 blocks:
the miss counts must be equal (docs/semantics.md §8); replay times are reported.

Usage: python benchmarks/compare_libcachesim.py [--trace PATH] [--capacities 246,2000,...]
       [--pairs 5] [--min-accesses 10000000] [--policies]
The last line printed is one JSON object (keys in benchmarks/README.md).
"""
from __future__ import annotations

import argparse
import functools
import inspect
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import common

BENCH = "compare_libcachesim"
#: libCacheSim oracleGeneral record: clock_time u32, obj_id u64, obj_size u32, next_access_vtime i64 (packed).
ORACLE_DTYPE = np.dtype([("clock", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
TARGETS = {"throughput_ratio": 1.0, "curve_ratio": 10.0, "bytes_per_block_held": 300}
#: which count ``accesses`` is (every script's JSON says): cacheable (full-block) accesses, the replay JSON's
#: ``cacheable_blocks`` -- not ``block_accesses`` (every hash id a request names, the last partial block included)
ACCESSES_COUNTED = "cacheable_blocks"


def write_oracle_general(fs: common.FlatStream, path: Path) -> float:
    """Write the stream as libCacheSim oracleGeneral binary; return the seconds it took."""
    t0 = time.perf_counter()
    rec = np.zeros(fs.ids.shape[0], dtype=ORACLE_DTYPE)
    rec["clock"], rec["id"], rec["size"], rec["next"] = fs.clock_s, fs.ids, 1, -1
    rec.tofile(path)
    return time.perf_counter() - t0


def hashpower_for(capacity_blocks: int) -> int:
    """Initial libCacheSim hash-table power for an LRU of C unit objects (it grows when fuller)."""
    return max(16, math.ceil(math.log2(capacity_blocks + 1)))


class Sides:
    """The timed callables; each returns the block misses it measured.

    pcs reads ``pcs_path`` (its Parquet form of the trace, converted once,
    like libCacheSim's oracleGeneral file) unless another path is given.
    """

    def __init__(self, trace_path: Path, pcs_path: Path, oracle_path: Path, fs: common.FlatStream) -> None:
        self.trace_path, self.pcs_path, self.oracle_path, self.fs = trace_path, pcs_path, oracle_path, fs

    @functools.cached_property
    def chunks(self) -> list:
        """The trace as engine chunks, built once (outside the timed engine runs)."""
        from pcs.blocks import BlockRules
        from pcs.engine.chunks import iter_chunks
        from pcs.trace import open_trace

        return list(iter_chunks(open_trace(self.pcs_path), BlockRules()))

    @functools.cached_property
    def ids_list(self) -> list:
        """The stream as python ints, built once (outside the timed get loop)."""
        return self.fs.ids.tolist()

    def pcs_api(self, c: int, path: Path | None = None, engine: str | None = None) -> tuple[int, int]:
        """``pcs.engine.api.replay`` as a user calls it (``engine`` None = its default)."""
        from pcs.engine.api import replay
        from pcs.trace import open_trace

        kw = {"engine": engine} if engine else {}
        s = replay(open_trace(path or self.pcs_path), tiers=[f"gpu={c}blocks"], policy="lru",
                   timing="sequential", **kw).summary
        return s.block_misses, s.requests_truncated

    def pcs_engine(self, c: int) -> int:
        """The Python ReplayEngine over Python tiers (key ``pcs_engine``, printed "Python ReplayEngine loop"): not the
        compiled engine loop docs/performance.md calls "engine loop" (4.9-5.4 M accesses/s)."""
        from pcs.cache import Hierarchy, Tier, make_policy
        from pcs.engine.engine import ReplayEngine

        e = ReplayEngine(Hierarchy([Tier("gpu", c, make_policy("lru", c))]), "sequential")
        for ch in self.chunks:
            e.feed(ch)
        return e.close().ledger.block_misses

    def lcs_trace(self, c: int, hashpower: int | None = None) -> int:
        import libcachesim as lcs

        cache = lcs.LRU(c, hashpower=hashpower or hashpower_for(c))
        reader = lcs.TraceReader(str(self.oracle_path), lcs.TraceType.ORACLE_GENERAL_TRACE)
        miss_ratio, _ = cache.process_trace(reader)
        return round(miss_ratio * self.fs.ids.shape[0])

    def lcs_get_loop(self, c: int) -> int:
        import libcachesim as lcs

        cache = lcs.LRU(c)
        req = lcs.Request()
        req.obj_size = 1
        get = cache.get
        misses = 0
        for k in self.ids_list:
            req.obj_id = k
            if not get(req):
                misses += 1
        return misses

    def curve(self, caps: list[int], path: Path | None = None) -> list[int]:
        from pcs.curves.api import curve
        from pcs.trace import open_trace

        r = curve(open_trace(path or self.pcs_path), capacities=caps, belady=False)
        return [row.lru_block_misses for row in r.rows]


def default_capacities(trace_path: Path, max_request_blocks: int, k: int = 4) -> list[int]:
    """``k`` capacities geometric from the largest request's ``n`` to where LRU reaches the ceiling."""
    from pcs.curves.api import load_accesses, lru_curve

    top = max(lru_curve(load_accesses(str(trace_path))[0]).max_useful_capacity_blocks, max_request_blocks + 1)
    return sorted({int(round(x)) for x in np.geomspace(max_request_blocks, top, k)})


def replay_takes_engine() -> bool:
    """Whether ``replay`` has ``engine=`` (``auto`` may take the lru-scan engine, ``reference`` never)."""
    from pcs.engine.api import replay

    return "engine" in inspect.signature(replay).parameters


def per_capacity(sides: Sides, caps: list[int], pairs: int) -> tuple[list[dict], bool]:
    """Misses of every path at each capacity, and the timed pairs (pcs / libCacheSim time ratios)."""
    acc = sides.fs.accesses
    curve_misses = dict(zip(caps, sides.curve(caps)))
    rows, agree = [], True
    for c in caps:
        api = common.alternating_pairs(lambda: sides.pcs_api(c), lambda: sides.lcs_trace(c), pairs)
        eng = common.alternating_pairs(lambda: sides.pcs_engine(c), lambda: sides.lcs_trace(c), pairs)
        t_json, _, (m_json, _) = common.median_time(lambda: sides.pcs_api(c, sides.trace_path), 3)
        gen = replay_takes_engine()
        t_gen, _, (m_gen, _) = (common.median_time(lambda: sides.pcs_api(c, engine="reference"), 3) if gen
                                else (api["a_median_s"], None, api["a_out"]))  # no choice: default = the reference event loop
        t_def, _, m_def = common.median_time(lambda: sides.lcs_trace(c, 24), 3)
        t_loop, _, m_loop = common.median_time(lambda: sides.lcs_get_loop(c), 3)
        (m_api, truncated), m_lcs = api["a_out"], api["b_out"]
        misses = {"pcs_replay": m_api, "pcs_replay_jsonl": m_json, "pcs_replay_reference": m_gen,
                  "pcs_engine": eng["a_out"],
                  "pcs_curve": curve_misses[c], "libcachesim_process_trace": m_lcs,
                  "libcachesim_default_hashpower": m_def, "libcachesim_get_loop": m_loop}
        ok = len(set(misses.values())) == 1 and truncated == 0
        agree &= ok
        # pairs time pcs (a) against libCacheSim (b): b / a is pcs's throughput over libCacheSim's
        row = {"capacity_blocks": c, "block_misses": misses, "agree": ok, "requests_truncated": truncated,
               "libcachesim_hashpower": hashpower_for(c),
               "pcs_replay_s": api["a_median_s"], "pcs_replay_jsonl_s": t_json, "pcs_replay_reference_s": t_gen,
               "pcs_engine_s": eng["a_median_s"],
               "libcachesim_s": api["b_median_s"], "libcachesim_default_hashpower_s": t_def,
               "libcachesim_get_loop_s": t_loop,
               "throughput_ratio": api["ratio_median"], "engine_throughput_ratio": eng["ratio_median"],
               "pair_ratios": [round(r, 4) for r in api["ratio_b_over_a"]]}
        for k in ("pcs_replay", "pcs_replay_jsonl", "pcs_replay_reference", "pcs_engine", "libcachesim", "libcachesim_default_hashpower",
                  "libcachesim_get_loop"):
            row[f"{k}_accesses_per_s"] = acc / row[f"{k}_s"]
        rows.append(row)
        m = lambda k: row[f"{k}_accesses_per_s"] / 1e6  # noqa: E731
        print(f"C={c:>7,}: misses {m_api:,} {'agree' if ok else 'DISAGREE ' + str(misses)}; M accesses/s: pcs "
              f"replay {m('pcs_replay'):.2f} (JSONL {m('pcs_replay_jsonl'):.2f}, reference engine "
              f"{m('pcs_replay_reference'):.2f}), Python ReplayEngine loop {m('pcs_engine'):.2f}; "
              f"libCacheSim {m('libcachesim'):.2f} (default hashpower {m('libcachesim_default_hashpower'):.2f}, "
              f"get loop {m('libcachesim_get_loop'):.2f}); ratio {row['throughput_ratio']:.3f}")
    return rows, agree


def curve_pairs(sides: Sides, caps: list[int], c: int, pairs: int, tag: str = "base") -> dict:
    """The one-pass curve (all ``caps``) against one libCacheSim run at ``c``.

    Three pcs figures: ``curve()`` from Parquet (paired with libCacheSim),
    from JSONL, and the core alone (``lru_curve`` over accesses already
    flattened in memory: kernel + histograms + reading off ``caps``).
    """
    from pcs.curves.api import load_accesses, lru_curve
    from pcs.trace import open_trace

    r = common.alternating_pairs(lambda: sides.curve(caps), lambda: sides.lcs_trace(c), pairs)
    t_json, _, m_json = common.median_time(lambda: sides.curve(caps, sides.trace_path), pairs)
    flat, _ = load_accesses(open_trace(sides.pcs_path))
    t_core, _, m_core = common.median_time(lambda: lru_curve(flat).block_misses(np.array(caps)).tolist(), pairs)
    acc = sides.fs.accesses
    i = caps.index(c)
    misses = {r["a_out"][i], m_json[i], int(m_core[i]), r["b_out"]}
    res = {"capacity_blocks": c, "capacities": len(caps), "curve_s": r["a_median_s"], "curve_jsonl_s": t_json,
           "curve_core_s": t_core, "libcachesim_s": r["b_median_s"], "curve_accesses_per_s": acc / r["a_median_s"],
           "curve_jsonl_accesses_per_s": acc / t_json, "curve_core_accesses_per_s": acc / t_core,
           "libcachesim_accesses_per_s": acc / r["b_median_s"], "curve_ratio": r["ratio_median"],
           "curve_jsonl_ratio": r["b_median_s"] / t_json, "curve_core_ratio": r["b_median_s"] / t_core,
           "misses_agree": len(misses) == 1, "pair_ratios": [round(x, 4) for x in r["ratio_b_over_a"]]}
    mps = lambda k: res[f"{k}_accesses_per_s"] / 1e6  # noqa: E731
    print(f"{tag}: curve ({len(caps)} capacities, one pass), M accesses/s: {mps('curve'):.2f} from Parquet, "
          f"{mps('curve_jsonl'):.2f} from JSONL, {mps('curve_core'):.2f} core; one libCacheSim run at C={c:,}: "
          f"{mps('libcachesim'):.2f} -> {res['curve_ratio']:.2f}x (JSONL {res['curve_jsonl_ratio']:.2f}x, core "
          f"{res['curve_core_ratio']:.2f}x); misses agree: {res['misses_agree']}")
    return res


def prepare(trace_path: Path, tmp: Path, tag: str) -> tuple[Sides, dict]:
    """Flat stream, libCacheSim's oracleGeneral file and pcs's Parquet file of one trace (untimed)."""
    from pcs.trace import open_trace
    from pcs.trace.convert import convert

    fs = common.flat_lru_stream(open_trace(trace_path))
    oracle, parquet = tmp / f"{tag}.oracleGeneral.bin", tmp / f"{tag}.parquet"
    t_oracle = write_oracle_general(fs, oracle)
    t0 = time.perf_counter()
    convert(open_trace(trace_path), parquet)
    info = {"libcachesim_file_write_s": t_oracle, "pcs_parquet_convert_s": time.perf_counter() - t0,
            "oracle_general_bytes": oracle.stat().st_size, "parquet_bytes": parquet.stat().st_size}
    return Sides(trace_path, parquet, oracle, fs), info


# -- memory: child processes -------------------------------------------------------------------
def _child(mode: str, path: str, c: int) -> None:
    """Run one replay or curve in this fresh process; print peak RSS above the post-import baseline."""
    from pcs.blocks import BlockRules
    from pcs.cache import Hierarchy, Tier, make_policy
    from pcs.engine.api import replay
    from pcs.curves.api import curve
    from pcs.engine.engine import ReplayEngine
    from pcs.engine.chunks import iter_chunks
    from pcs.trace import open_trace

    tr = open_trace(path)
    base = common.vm_rss_bytes()
    t0 = time.perf_counter()
    out: dict = {"mode": mode, "capacity_blocks": c}
    if mode in ("replay-api", "replay-reference"):
        kw = {"engine": "reference"} if mode == "replay-reference" else {}
        s = replay(tr, tiers=[f"gpu={c}blocks"], policy="lru", timing="sequential", **kw).summary
        out.update(requests=s.requests, accesses=s.cacheable_blocks, block_misses=s.block_misses,
                   blocks_held=s.tiers[0].resident_blocks_peak)
    elif mode == "replay-engine":
        gpu = Tier("gpu", c, make_policy("lru", c))
        e = ReplayEngine(Hierarchy([gpu]), "sequential")
        for ch in iter_chunks(tr, BlockRules()):
            e.feed(ch)
        L = e.close().ledger
        out.update(requests=L.num_requests, accesses=L.cacheable_blocks, block_misses=L.block_misses,
                   blocks_held=gpu.stats.peak_resident_blocks)
    elif mode == "curve":
        r = curve(tr, capacities=[c], belady=False)
        out.update(requests=r.requests, accesses=r.cacheable_blocks,
                   block_misses=r.rows[0].lru_block_misses, blocks_held=r.distinct_cacheable_blocks)
    else:
        raise ValueError(f"unknown child mode {mode!r}; valid: replay-api, replay-reference, replay-engine, curve")
    out["seconds"] = time.perf_counter() - t0
    out["baseline_rss_bytes"], out["peak_rss_bytes"] = base, common.vm_hwm_bytes()
    out["bytes_per_block_held"] = (out["peak_rss_bytes"] - base) / max(out["blocks_held"], 1)
    print(json.dumps(out))


def memory(traces: dict[str, Path], c_fixed: int, big: Path) -> dict:
    """Peak RSS of replays at ``c_fixed`` on each trace (flatness) and bytes per block held on ``big``."""
    me = Path(__file__)
    res: dict = {"fixed_capacity_blocks": c_fixed, "flat": []}
    modes = ("replay-engine", "replay-api") + (("replay-reference",) if replay_takes_engine() else ())
    for name, path in traces.items():
        for mode in modes:
            r = common.run_child(me, ["--child", mode, str(path), str(c_fixed)])
            r["trace"] = name
            res["flat"].append(r)
            print(f"{mode:14s} {name:>4s} C={c_fixed:,}: {r['requests']:>9,} requests, peak RSS "
                  f"{r['peak_rss_bytes'] / 1e6:7.1f} MB (baseline {r['baseline_rss_bytes'] / 1e6:.1f} MB), "
                  f"{r['seconds']:.1f} s")
    huge = 1 << 40
    for mode in modes + ("curve",):
        r = common.run_child(me, ["--child", mode, str(big), str(huge)])
        res[mode.replace("-", "_") + "_all_held"] = r
        print(f"{mode:14s} all held: {r['blocks_held']:,} blocks, {r['accesses']:,} accesses, peak RSS "
              f"{r['peak_rss_bytes'] / 1e6:.1f} MB -> {r['bytes_per_block_held']:.0f} B per block held")
    return res


# -- main --------------------------------------------------------------------------------------
def replicated(src: Path, tmp: Path, min_accesses: int, caps: list[int], c: int, pairs: int,
               base_misses: int) -> tuple[dict, Sides, common.Replica]:
    """Curve vs one libCacheSim run on the trace replicated to >= ``min_accesses``."""
    rep = common.replicate_mooncake(src, tmp, min_accesses)
    sides, info = prepare(rep.path, tmp, "replicated")
    res = curve_pairs(sides, caps, c, pairs, f"replicated x{rep.copies}")
    rp = common.alternating_pairs(lambda: sides.pcs_api(c), lambda: sides.lcs_trace(c), pairs)
    acc = sides.fs.accesses
    res.update(info, replica=rep.to_dict(), accesses=acc,
               misses_equal_copies_times_base=rp["b_out"] == rep.copies * base_misses,
               replay_s=rp["a_median_s"], replay_accesses_per_s=acc / rp["a_median_s"],
               replay_libcachesim_s=rp["b_median_s"], replay_ratio=rp["ratio_median"],
               replay_misses_agree=rp["a_out"] == (rp["b_out"], 0),
               replay_pair_ratios=[round(x, 4) for x in rp["ratio_b_over_a"]])
    print(f"replicated x{rep.copies}: pcs replay {res['replay_accesses_per_s'] / 1e6:.2f} M accesses/s vs libCacheSim "
          f"{acc / rp['b_median_s'] / 1e6:.2f} -> {res['replay_ratio']:.2f}x; misses agree: {res['replay_misses_agree']}")
    print(f"  (replicated x{rep.copies}: {sides.fs.accesses:,} accesses; libCacheSim misses = copies x base: "
          f"{res['misses_equal_copies_times_base']})")
    return res, sides, rep


def measure(trace: Path, caps: list[int] | None, pairs: int, min_accesses: int) -> dict:
    """Every figure of the summary line (see the module docstring)."""
    with tempfile.TemporaryDirectory(prefix="pcs-bench-") as tmp_name:
        tmp = Path(tmp_name)
        sides, files = prepare(trace, tmp, "base")
        fs = sides.fs
        caps = caps or default_capacities(trace, fs.max_request_blocks)
        if len(caps) < 3 or min(caps) < fs.max_request_blocks:
            sys.exit(f"need >= 3 capacities, each >= the largest request ({fs.max_request_blocks} blocks): {caps}")
        print(f"{trace}: {fs.requests:,} requests, {fs.accesses:,} cacheable (full-block) accesses, "
              f"{fs.distinct_blocks:,} distinct, largest request {fs.max_request_blocks} blocks; capacities {caps}")
        out: dict = {"bench": BENCH, "trace": str(trace), "requests": fs.requests, "accesses": fs.accesses,
                     "accesses_counted": ACCESSES_COUNTED,
                     "libcachesim_gets": int(fs.ids.shape[0]), "distinct_cacheable_blocks": fs.distinct_blocks,
                     "max_request_blocks": fs.max_request_blocks, "capacities": caps, "pairs": pairs, **files}
        rows, agree = per_capacity(sides, caps, pairs)
        c_mid = caps[len(caps) // 2]
        cur = curve_pairs(sides, caps, c_mid, pairs)
        med = lambda key: float(np.median([r[key] for r in rows]))  # noqa: E731
        out.update(
            miss_ratio_agrees=agree and cur["misses_agree"],
            pcs_accesses_per_s=med("pcs_replay_accesses_per_s"),
            libcachesim_accesses_per_s=med("libcachesim_accesses_per_s"),
            throughput_ratio=med("throughput_ratio"),
            pcs_jsonl_accesses_per_s=med("pcs_replay_jsonl_accesses_per_s"),
            pcs_reference_engine_accesses_per_s=med("pcs_replay_reference_accesses_per_s"),
            pcs_engine_accesses_per_s=med("pcs_engine_accesses_per_s"),
            engine_throughput_ratio=med("engine_throughput_ratio"),
            libcachesim_default_hashpower_accesses_per_s=med("libcachesim_default_hashpower_accesses_per_s"),
            libcachesim_get_loop_accesses_per_s=med("libcachesim_get_loop_accesses_per_s"),
            libcachesim_path="LRU(C, hashpower=max(16, ceil(log2(C+1)))).process_trace(TraceReader(oracleGeneral))",
            curve_accesses_per_s=cur["curve_accesses_per_s"], curve_ratio=cur["curve_ratio"],
            curve_core_ratio=cur["curve_core_ratio"], curve=cur, rows=rows)
        out["throughput_ratio_vs_get_loop"] = out["pcs_accesses_per_s"] / out["libcachesim_get_loop_accesses_per_s"]
        if min_accesses > 0:
            base_m = next(r for r in rows if r["capacity_blocks"] == c_mid)["block_misses"]["pcs_replay"]
            rc, _, rep = replicated(trace, tmp, min_accesses, caps, c_mid, pairs, base_m)
            out.update(curve_replicated=rc, curve_replicated_accesses_per_s=rc["curve_accesses_per_s"],
                       curve_replicated_ratio=rc["curve_ratio"], curve_replicated_core_ratio=rc["curve_core_ratio"],
                       replay_replicated_accesses_per_s=rc["replay_accesses_per_s"],
                       replay_replicated_ratio=rc["replay_ratio"])
            out["miss_ratio_agrees"] &= rc["misses_agree"] and rc["replay_misses_agree"]
            x4 = common.replicate_mooncake(trace, tmp, 4 * fs.accesses, name="x4.jsonl")
            mem = memory({"x1": trace, f"x{x4.copies}": x4.path, f"x{rep.copies}": rep.path}, c_mid, rep.path)
            out.update(memory=mem, peak_rss_bytes=max(r["peak_rss_bytes"] for r in mem["flat"]),
                       bytes_per_block_held=mem["replay_engine_all_held"]["bytes_per_block_held"],
                       bytes_per_block_held_api=mem["replay_api_all_held"]["bytes_per_block_held"],
                       curve_bytes_per_distinct_block=mem["curve_all_held"]["bytes_per_block_held"])
            if "replay_reference_all_held" in mem:
                out["bytes_per_block_held_reference"] = mem["replay_reference_all_held"]["bytes_per_block_held"]
    return out


#: pcs policy spec -> libCacheSim class (default parameters on both sides)
POLICY_PAIRS = {"arc": "ARC", "s3fifo": "S3FIFO", "sieve": "Sieve", "lfu:aging=none": "LFU", "2q": "TwoQ",
                "lru": "LRU", "fifo": "FIFO"}


class _OneBlockRequests:
    """Every cacheable block access of a trace as a one-block request (a ``pcs.replay`` source)."""

    def __init__(self, keys: np.ndarray, block_size: int) -> None:
        from pcs.trace.request import RequestBatch

        n = keys.shape[0]
        self.block_size, self.name = block_size, "flat block stream"
        self._batch = RequestBatch(0, block_size, np.zeros(n), np.full(n, block_size, np.int64),
                                   np.zeros(n, np.int64), np.arange(n + 1, dtype=np.int64), keys)

    def iter_batches(self):
        return iter([self._batch])


def flat_block_keys(trace_path: Path) -> tuple[np.ndarray, int]:
    """The cacheable block hashes of every request, head to tail, request after request (uint64)."""
    from pcs.blocks import BlockRules
    from pcs.engine.chunks import iter_chunks
    from pcs.trace import open_trace

    tr = open_trace(trace_path)
    keys: list[int] = []
    for ch in iter_chunks(tr, BlockRules()):
        for i, n in enumerate(ch.cacheable):
            keys += ch.block_hashes[ch.offsets[i]:ch.offsets[i] + n]
    return np.array(keys, dtype=np.uint64), tr.block_size


def policy_comparison(trace_path: Path, caps: list[int] | None) -> dict:
    """Miss counts of pcs's policies (through pcs.replay) and libCacheSim's on the flat block stream."""
    import libcachesim as lcs

    from pcs.engine.api import replay

    keys, bs = flat_block_keys(trace_path)
    distinct = int(np.unique(keys).size)
    caps = caps or [max(20, distinct // d) for d in (64, 16, 4, 2)]
    src, ids = _OneBlockRequests(keys, bs), keys.tolist()
    rows = []
    for spec, cls in POLICY_PAIRS.items():
        for c in caps:
            t0 = time.perf_counter()
            s = replay(src, tiers=[f"gpu={c}blocks"], policy=spec, timing="sequential", model="llama-3.1-8b",
                       tp=1).summary
            t_pcs = time.perf_counter() - t0
            cache, req = getattr(lcs, cls)(c), lcs.Request()
            req.obj_size = 1
            t0 = time.perf_counter()
            m_lcs = 0
            for k in ids:
                req.obj_id = k
                m_lcs += not cache.get(req)
            rows.append({"policy": spec, "libcachesim": cls, "capacity_blocks": c, "pcs_misses": s.block_misses,
                         "libcachesim_misses": m_lcs, "equal": s.block_misses == m_lcs, "pcs_replay_s": t_pcs,
                         "libcachesim_get_loop_s": time.perf_counter() - t0, "pcs_engine": s.engine})
            print(f"{spec:15s} C={c:7d}: pcs {s.block_misses:8d}  libCacheSim {m_lcs:8d}  "
                  f"{'equal' if rows[-1]['equal'] else 'DIFFERENT'}  ({t_pcs:.2f} s)")
    return {"bench": BENCH + "_policies", "trace": str(trace_path), "accesses": int(keys.shape[0]),
            "accesses_counted": ACCESSES_COUNTED,
            "distinct_cacheable_blocks": distinct, "capacities": caps, "rows": rows,
            "all_equal": all(r["equal"] for r in rows), "machine": common.machine_info()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=common.MOONCAKE_CONV)
    ap.add_argument("--capacities", type=common.counts, help="comma-separated blocks (default: 4 from the largest request up)")
    ap.add_argument("--pairs", type=common.count, default=5)
    ap.add_argument("--min-accesses", type=int, default=10_000_000, help="replicated trace size; 0 = skip")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--policies", action="store_true", help="compare the policies on the flat block stream")
    a = ap.parse_args()
    if a.child:
        return _child(a.child[0], a.child[1], int(a.child[2]))
    common.need_trace(a.trace, BENCH)     # the arguments first: a bad one is refused with or without libcachesim
    try:
        import libcachesim  # noqa: F401
    except ImportError:
        return common.skip(BENCH, "libcachesim not installed (pip install -e '.[bench]')")
    caps = a.capacities
    if a.policies:
        return common.emit(policy_comparison(a.trace, caps))
    out = measure(a.trace, caps, a.pairs, a.min_accesses)
    curve_ratio = out.get("curve_replicated_ratio", out["curve_ratio"])
    out["targets"] = TARGETS
    out["targets_met"] = {
        "throughput_ratio": out["throughput_ratio"] >= TARGETS["throughput_ratio"],
        "curve_ratio": curve_ratio >= TARGETS["curve_ratio"],
        "bytes_per_block_held": (out["bytes_per_block_held"] <= TARGETS["bytes_per_block_held"]
                                 if "bytes_per_block_held" in out else None)}
    out["machine"] = common.machine_info()
    common.emit(out)


if __name__ == "__main__":
    common.run(main, "compare_libcachesim")
