"""The compiled admission policies' own cost: the sequential replay loop in C, with and without ``--admit``.

Workload: the Mooncake FAST'25 conversation trace (../shared/traces; the bundled sample where it is absent),
read once into memory and repeated ``--copies`` times (default 5: 1.44 M accesses); each variant replays it sequentially on :class:`pcs.cache.native.NativeHierarchy`
through ``NativeHierarchy.run_sequential`` (:func:`pcs.engine.seqbase.sequential_baseline`: one C call per
batch, no Python per request), two tiers gpu ``--gpu-blocks`` + cpu ``--cpu-blocks`` (default 1,000 + 4,000
blocks: both tiers evict), so the time is the hierarchy's, the policy's and the admission's. Variants: each
eviction policy of ``--policy`` (default lru, arc) plain, then with each admission of pcs/cache/_admission.c
and _retain.c (``cpu=reuse:2``, ``cpu=selective:2``, ``cpu=tinylfu``, ``gpu=retain:tokens=0-2048,duration=300``,
on every policy; the trace pre-pass retain, gdsf and belady read is built once outside the timing).

Measured: process CPU seconds (``time.process_time``), best of ``--repeat`` rounds, each round running every
variant once (alternated); block accesses per second; ``ratio`` = the variant's time / its plain policy's in
the same run. A variant the installed pcs cannot run compiled (an older build without admission) is reported
as skipped, so the plain variants can be timed on two builds (``PYTHONPATH=...``) with one script.
Prints one human line per variant, then ONE JSON line last.
Usage: python benchmarks/bench_admission.py [--repeat 5] [--copies 5] [--trace PATH] [--policy lru --policy arc]
"""
from __future__ import annotations

import argparse
import json
import os
import time

import common

#: (tier, admission) variants after the plain run of each policy.
ADMITS = (("cpu", "reuse:2"), ("cpu", "selective:2"), ("cpu", "tinylfu"), ("gpu", "retain:tokens=0-2048,duration=300"))


class _InMemory:
    """The trace's RequestBatches held in memory (read by ``iter_batches``)."""

    def __init__(self, batches) -> None:
        self.batches = batches

    def iter_batches(self):
        return iter(self.batches)


def _make(policy: str, admit: tuple | None, caps: tuple, ctx):
    """A fresh NativeHierarchy of gpu + cpu tiers, ``admit`` = (tier, kind) or None."""
    from pcs.cache import Tier, make_policy
    from pcs.cache.admission import apply_admission
    from pcs.cache.native import NativeHierarchy

    tiers = []
    for name, cap in zip(("gpu", "cpu"), caps):
        p, adm = make_policy(policy, cap, ctx.fresh()), None
        if admit and admit[0] == name:
            p, adm = apply_admission([admit[1]], p, ctx.fresh())
        tiers.append(Tier(name, cap, p, adm))
    return NativeHierarchy(tiers)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=common.count, default=5)
    ap.add_argument("--trace", default=str(common.MOONCAKE_CONV))
    ap.add_argument("--policy", action="append", default=[])
    ap.add_argument("--gpu-blocks", type=common.count, default=1000)
    ap.add_argument("--cpu-blocks", type=common.count, default=4000)
    ap.add_argument("--copies", type=common.count, default=5, help="the trace replayed this many times in a row")
    args = ap.parse_args()
    from pcs.cache.policies import POLICY_CHOICES

    common.choices(",".join(args.policy or ["lru"]), POLICY_CHOICES, "--policy", "bench_admission")
    common.need_trace(args.trace, "bench_admission")
    import pcs
    from pcs.blocks import BlockRules
    from pcs.cache.policies.context import PolicyContext, TraceOracle
    from pcs.engine.chunks import iter_chunks
    from pcs.engine.seqbase import sequential_baseline
    from pcs.trace import open_trace

    tr = open_trace(args.trace)
    batches = _InMemory(list(tr.iter_batches()) * args.copies)
    rules = BlockRules()
    policies = args.policy or ["lru", "arc"]
    ctx = PolicyContext(TraceOracle.build(iter_chunks(batches, rules), future="belady" in policies))
    accesses = sum(int(b.block_offsets[-1] - b.block_offsets[0]) for b in batches.batches)
    caps = (args.gpu_blocks, args.cpu_blocks)
    variants = []
    for p in policies:
        variants.append((p, p, None))
        variants += [(f"{p}+{t}={k}", p, (t, k)) for t, k in ADMITS]
    best = {v[0]: float("inf") for v in variants}
    hits: dict = {}
    skipped: dict = {}
    for _ in range(args.repeat):
        for label, policy, admit in variants:
            if label in skipped:
                continue
            try:
                h = _make(policy, admit, caps, ctx)
            except ValueError as e:
                skipped[label] = str(e)
                continue
            t = time.process_time()
            res = sequential_baseline(batches, h, rules)
            best[label] = min(best[label], time.process_time() - t)
            hits[label] = res.ledger.hit_tokens / max(res.ledger.prompt_tokens, 1)
    out = {"bench": "admission", "trace": args.trace, "block_accesses": accesses, "pcs": pcs.__file__,
           "gpu_blocks": caps[0], "cpu_blocks": caps[1], "loadavg": os.getloadavg()[0], "variants": {},
           "skipped": skipped}
    for label, policy, _ in variants:
        if label in skipped:
            print(f"{label}: skipped ({skipped[label][:80]})")
            continue
        ratio = best[label] / best[policy] if best.get(policy, float("inf")) < float("inf") else None
        out["variants"][label] = {"cpu_s": best[label], "accesses_per_s": accesses / best[label],
                                  "hit_ratio": hits[label], "ratio": ratio}
        print(f"{label}: {best[label]:.3f} s CPU, {accesses / best[label] / 1e6:.2f} M accesses/s, "
              f"hit ratio {hits[label]:.6f}" + (f", {ratio:.2f}x {policy}" if ratio else ""))
    out["loadavg_end"] = os.getloadavg()[0]
    print(json.dumps(out))


if __name__ == "__main__":
    common.run(main, "bench_admission")
