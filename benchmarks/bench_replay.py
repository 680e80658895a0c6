"""Replay throughput: block accesses per second of the engine, and peak memory.

Workload: the Mooncake FAST'25 conversation trace (../shared/traces), replicated
``--copies`` times (copy k adds k x the trace's id span, max id - min id + 1 --
182,790 for Mooncake -- to every id, :func:`common.id_span`, and k x (span + 3 s)
to every timestamp), so the copies share nothing and arrive one after the other;
copies whose ids would pass 2^64 - 1 are refused. A "block access" is one hash id of one request
(the trace has 288,500), partial last blocks included.

Measured (one core, process CPU seconds, best of ``--repeat``):
- ``two_tier_lru_modeled``: gpu=400GB cpu=2TB of llama-3.1-70b (2,384 + 11,920
  blocks), LRU, write-back, modeled timing -- the engine loop over pre-built
  chunks (``engine_accesses_per_s``) and including building the chunks from
  numpy columns with the compute-model tables (``with_chunks_accesses_per_s``);
- ``two_tier_lru_modeled_step``: the same tiers and chunks through the step
  scheduler (``--compute step``; the compiled loop
  :class:`pcs.engine.stepnative.NativeStepEngine` = engine ``compiled-step``, and
  ``python_loop_*`` the Python :class:`pcs.engine.scheduler.StepEngine`,
  vLLM's H100 batch limits, decode blocks of the next turns found beforehand):
  engine seconds and accesses per second (target >= 1 M), steps, and the
  no-cache twin's seconds (the "without cache" latencies of ``pcs replay``);
- ``one_tier_lru_sequential``: one LRU tier of 20,000 blocks, sequential --
  the engine loop over pre-built chunks, and the whole ``pcs.replay(...,
  timing="sequential")`` (summary, table, single-sequence passes) with
  ``engine="reference"`` (the event loop over the Python hierarchy, one run)
  and ``engine="lru-scan"`` (:mod:`pcs.engine.fastpath`); the two summaries
  must be equal but for the engine's name (``fast_equals_general``);
- ``api_replay_s``: the whole ``pcs.replay(...)`` (modeled run + sequential
  baseline for the gap + two single-sequence passes) on the replicated trace;
- peak RSS of the process.

Prints a few human lines, then ONE JSON summary line last.
Usage: python benchmarks/bench_replay.py [--copies 11] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import common  # noqa: E402
from common import MOONCAKE_CONV  # noqa: E402
TRACE = MOONCAKE_CONV  # benchmarks/common.py: PCS_MOONCAKE_TRACE or ../shared

from pcs.blocks import BlockRules  # noqa: E402
from pcs.cache import Tier, make_policy  # noqa: E402
from pcs.cache.native import available as native_available  # noqa: E402
from pcs.engine import select  # noqa: E402
from pcs.engine.engine import ReplayEngine, TimeModel  # noqa: E402
from pcs.engine.chunks import CHUNK_REQUESTS, _from_columns  # noqa: E402
from pcs.schema import to_dict  # noqa: E402
from pcs.trace import RequestBatch, open_trace  # noqa: E402


class Replicated:
    """The trace ``copies`` times as RequestBatches (what ``iter_chunks`` and the api read).

    Copy k adds k x :func:`common.id_span` (the trace's id span, max - min + 1) to every id, so copies share
    no block; ``UserError`` when the last copy would pass 2^64 - 1.
    """

    def __init__(self, path: Path, copies: int) -> None:
        b = list(open_trace(path).iter_batches())
        cat = lambda name: np.concatenate([getattr(x, name) for x in b])  # noqa: E731
        self.arrival, self.prompt, self.output = cat("arrival_s"), cat("prompt_tokens"), cat("output_tokens")
        counts = np.concatenate([np.diff(x.block_offsets) for x in b])
        self.hashes = cat("block_hashes")
        self.counts = counts
        self.copies = copies
        lo, hi = (int(self.hashes.min()), int(self.hashes.max())) if len(self.hashes) else (0, 0)
        self.id_span = common.id_span(lo, hi, copies)
        self.block_size = b[0].block_size
        self.span = float(self.arrival.max() - self.arrival.min()) + 3.0
        self.path = f"{path.name} x{copies}"

    def iter_batches(self):
        n = len(self.prompt)
        rid = 0
        for k in range(self.copies):
            for s in range(0, n, CHUNK_REQUESTS):
                e = min(n, s + CHUNK_REQUESTS)
                counts = self.counts[s:e]
                off = np.zeros(e - s + 1, dtype=np.int64)
                np.cumsum(counts, out=off[1:])
                lo = int(self.counts[:s].sum())
                hs = self.hashes[lo:lo + int(off[-1])] + np.uint64(k * self.id_span)
                yield RequestBatch(rid, self.block_size, self.arrival[s:e] + k * self.span, self.prompt[s:e],
                                   self.output[s:e], off, hs)
                rid += e - s

    def __iter__(self):
        for b in self.iter_batches():
            yield from b.requests()


def _chunks(src: Replicated, time_model):
    rules = BlockRules()
    return [_from_columns(b.first_request_id, b.block_size, b.arrival_s, b.prompt_tokens, b.output_tokens,
                          b.block_offsets, b.block_hashes, rules, time_model) for b in src.iter_batches()]


def _engine(caps, timing, bpb, links, native=True):
    """The event loop over LRU tiers: the compiled hierarchy (what ``pcs replay`` uses for all-LRU
    tiers) or, with ``native=False``, the Python :class:`pcs.cache.Hierarchy` (rows of the engine table)."""
    tiers = [Tier(n, c, make_policy("lru", c)) for n, c in zip(("gpu", "cpu"), caps)]
    row = select.get_row("compiled-hierarchy" if native else "reference")
    return ReplayEngine(row.load()(tiers, "back"), timing, links=links, block_bytes=bpb)


def _step_bench(src, chunks, caps, links, bpb, tm, repeat: int, accesses: int) -> dict:
    """The step scheduler over the pre-built chunks (C hierarchy), and its no-cache twin."""
    from pcs.engine.scheduler import StepEngine
    from pcs.engine.schedconfig import SchedulerConfig
    from pcs.engine.turns import decode_blocks
    from pcs.hardware import get_gpu

    cost = tm.compute.step_cost()
    dec = decode_blocks(src)
    cfg = SchedulerConfig().resolved(get_gpu("h100-sxm"), cost.token_s, dec.detected)

    from pcs.engine.stepnative import NativeStepEngine

    def go(no_cache=False, cls=NativeStepEngine):
        n = 1 if no_cache else len(caps)
        h = _engine(caps[:n], "modeled", bpb[:n], links[:n]).h
        e = cls(h, links[:n], bpb[:n], cost, cfg, True, dec, no_cache=no_cache)
        for ch in chunks:
            e.feed(ch)
        e.result = e.close()
        return e

    step_s, eng = common.best_of(go, repeat)                           # compiled loop (engine compiled-step)
    py_s, py_eng = common.best_of(lambda: go(cls=StepEngine), repeat)   # the Python reference loop
    assert py_eng.stats == eng.stats and py_eng.result.ledger == eng.result.ledger
    nc_s, _ = common.best_of(lambda: go(True), 1)
    st = eng.stats
    return {"engine_s": step_s, "engine_accesses_per_s": accesses / step_s,
            "python_loop_s": py_s, "python_loop_accesses_per_s": accesses / py_s, "steps": st.steps,
            "prefill_steps": st.prefill_steps, "preemptions": st.preemptions,
            "utilisation": st.busy_s / (st.end_s - st.origin_s), "hit_ratio": eng.ledger.hit_ratio,
            "decode_blocks": dec.pairs, "no_cache_s": nc_s, "target_accesses_per_s": 1_000_000,
            "meets_target": accesses / step_s >= 1_000_000}


def _run(chs, caps, timing, links, bpb, native=True):
    """The event loop (:func:`_engine`) fed the pre-built chunks ``chs``; its result."""
    e = _engine(caps, timing, bpb, links, native)
    for ch in chs:
        e.feed(ch)
    return e.close()


def _workload(copies: int):
    """The replicated trace, its access count, the two tiers of llama-3.1-70b (blocks, bytes per block, links)
    and the time model of 8 x H100."""
    from pcs.compute import ComputeModel
    from pcs.engine.api import _resolve_link
    from pcs.hardware import get_gpu
    from pcs.model import block_bytes, get_model

    src = Replicated(TRACE, copies)
    model = get_model("llama-3.1-70b")
    bpb = [block_bytes(model, 512, "reserved").total_bytes, block_bytes(model, 512, "serialized").total_bytes]
    caps = [400 * 10**9 // bpb[0], 2 * 10**12 // bpb[1]]
    links = [None, _resolve_link("cpu", None, 8)]
    tm = TimeModel(ComputeModel(model, get_gpu("h100-sxm"), tp=8, block_size=512))
    return src, int(src.counts.sum()) * copies, caps, bpb, links, tm


def _modeled_bench(chunks, chunk_s, caps, links, bpb, repeat: int, accesses: int) -> dict:
    """Two LRU tiers, modeled: the compiled hierarchy's event loop beside the Python hierarchy's (same hit ratio)."""
    modeled_s, res = common.best_of(lambda: _run(chunks, caps, "modeled", links, bpb), repeat)
    py_s, py_res = common.best_of(lambda: _run(chunks, caps, "modeled", links, bpb, native=False), repeat)
    assert py_res.ledger.hit_ratio == res.ledger.hit_ratio
    return {"engine_s": modeled_s, "engine_accesses_per_s": accesses / modeled_s,
            "with_chunks_accesses_per_s": accesses / (modeled_s + chunk_s),
            "chunk_build_s": chunk_s, "hit_ratio": res.ledger.hit_ratio,
            "native_hierarchy": bool(native_available([Tier("gpu", 1, make_policy("lru", 1))])),
            "python_hierarchy_s": py_s, "python_hierarchy_accesses_per_s": accesses / py_s}


def _sequential_bench(src, chunks, bpb, repeat: int, accesses: int) -> dict:
    """One LRU tier of 20,000 blocks, sequential: the event loop, and pcs.replay on the reference and lru-scan."""
    from pcs.engine.api import replay

    seq_s, res1 = common.best_of(lambda: _run(chunks, [20000], "sequential", [None], [bpb[0]]), repeat)
    one = dict(model="llama-3.1-70b", tiers=["gpu=20000blocks"], timing="sequential")
    gen_s, gen = common.best_of(lambda: replay(src, engine="reference", **one), 1)
    fast_s, fast = common.best_of(lambda: replay(src, engine="lru-scan", **one), repeat)
    numbers = lambda r: {k: v for k, v in to_dict(r.summary).items() if k not in select.SUMMARY_KEYS}  # noqa: E731
    return {"engine_s": seq_s, "engine_accesses_per_s": accesses / seq_s,
            "capacity_blocks": 20000, "hit_ratio": res1.ledger.hit_ratio,
            "api_general_s": gen_s, "api_general_accesses_per_s": accesses / gen_s,
            "api_fast_s": fast_s, "api_fast_accesses_per_s": accesses / fast_s,
            "fast_equals_general": numbers(fast) == numbers(gen)}


def _print_lines(out: dict) -> None:
    """The human lines before the JSON summary."""
    accesses, mod, step, seq = (out["block_accesses"], out["two_tier_lru_modeled"], out["two_tier_lru_modeled_step"],
                                out["one_tier_lru_sequential"])
    print(f"{accesses:,} block accesses, {out['requests']:,} requests")
    print(f"two-tier LRU modeled: engine {mod['engine_accesses_per_s'] / 1e6:.2f} M accesses/s "
          f"({mod['with_chunks_accesses_per_s'] / 1e6:.2f} M/s with chunk building); "
          f"Python hierarchy {mod['python_hierarchy_accesses_per_s'] / 1e6:.2f} M/s")
    print(f"two-tier LRU modeled, step scheduler: engine {step['engine_accesses_per_s'] / 1e6:.2f} M accesses/s "
          f"(Python loop {step['python_loop_accesses_per_s'] / 1e6:.2f} M/s) "
          f"({step['steps']:,} steps, utilisation {step['utilisation']:.3f}); no-cache twin {step['no_cache_s']:.2f} s")
    print(f"one-tier LRU sequential: {seq['engine_accesses_per_s'] / 1e6:.2f} M accesses/s (engine loop); pcs.replay "
          f"general {seq['api_general_accesses_per_s'] / 1e6:.2f} M/s, "
          f"fast {seq['api_fast_accesses_per_s'] / 1e6:.2f} M/s")
    print(f"pcs.replay end to end: {out['api_replay_s']:.2f} s; peak RSS {out['peak_rss_bytes'] / 1e6:.0f} MB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=common.count, default=11)
    ap.add_argument("--repeat", type=common.count, default=3)
    args = ap.parse_args()
    common.need_trace(TRACE, "bench_replay")
    from pcs.engine.api import replay

    src, accesses, caps, bpb, links, tm = _workload(args.copies)
    chunk_s, chunks = common.best_of(lambda: _chunks(src, tm), args.repeat)
    modeled = _modeled_bench(chunks, chunk_s, caps, links, bpb, args.repeat, accesses)
    step = _step_bench(src, chunks, caps, links, bpb, tm, args.repeat, accesses)
    sequential = _sequential_bench(src, chunks, bpb, args.repeat, accesses)
    api_s, full = common.best_of(lambda: replay(src, model="llama-3.1-70b", tiers=["gpu=400GB", "cpu=2TB"]), 1)
    out = {
        "bench": "replay", "trace": src.path, "copies": args.copies, "requests": len(src.prompt) * args.copies,
        "block_accesses": accesses, "python": sys.version.split()[0],
        "two_tier_lru_modeled": modeled, "two_tier_lru_modeled_step": step, "one_tier_lru_sequential": sequential,
        "api_replay_s": api_s, "api_accesses_per_s": accesses / api_s, "api_hit_ratio": full.summary.hit_ratio,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "target_accesses_per_s": 2_000_000, "meets_target": modeled["engine_accesses_per_s"] >= 2_000_000,
    }
    _print_lines(out)
    print(json.dumps(out))


if __name__ == "__main__":
    common.run(main, "bench_replay")
