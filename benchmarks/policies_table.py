"""The table of docs/policies.md: every eviction policy and admission variant on the Mooncake trace.

Workload: the Mooncake FAST'25 conversation trace (../shared/traces), read once
into memory; ``pcs.replay`` with its defaults (llama-2-70b, 8 x h100-sxm, TP 8,
write-back, modeled timing with ``compute_mode="infinite"``, the compute model
the table was first measured with, before the step scheduler) at three GPU/CPU tier sizes in blocks (512-token
blocks): 1000/4000, 2500/10000, 5000/20000 -- below, around and above the LRU
knee (``pcs curve``: 50 % of the ceiling at 7,890 blocks). Per size one run
with ``gap_oracle=True`` gives the Belady oracle on those tiers; the gap split
is then capacity = single-sequence - oracle (one figure per size) and policy =
oracle - real (per row).

Rows: every registered policy (``lfu`` with dynamic aging and plain), then LRU
with each admission variant. Prints the Markdown table, then ONE JSON line
(every hit ratio, the oracle and the seconds each replay took, process CPU).
Usage: python benchmarks/policies_table.py [--trace PATH]
"""
from __future__ import annotations

import argparse
import time

import common

SIZES = ((1000, 4000), (2500, 10000), (5000, 20000))
POLICIES = ("lru", "slru", "fifo", "arc", "s3fifo", "sieve", "lfu", "lfu:aging=none", "2q", "gdsf")
ADMISSIONS = ("cpu=reuse:2", "cpu=selective:2", "cpu=tinylfu", "gpu=retain:tokens=0-2048,duration=300")


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _pts(a: float, b: float) -> str:
    """``a - b`` as the difference of the printed percentages (docs/semantics.md §12, "Printed figures add up")."""
    from pcs.units import points_between

    return points_between(a, b)


class _InMemory:
    """The trace's RequestBatches held in memory (read once; ``pcs.replay`` iterates them per run)."""

    def __init__(self, batches, block_size: int, name: str) -> None:
        self.batches, self.block_size, self.name = batches, block_size, name

    def iter_batches(self):
        return iter(self.batches)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=str(common.MOONCAKE_CONV))
    args = ap.parse_args()
    common.need_trace(args.trace, "policies_table")
    import pcs
    from pcs.trace import open_trace

    tr = open_trace(args.trace)
    trace = _InMemory(list(tr.iter_batches()), tr.block_size, args.trace)
    rows = [(p, p, None) for p in POLICIES] + [(f"lru + {a}", "lru", a) for a in ADMISSIONS]
    out: dict = {"sizes": [f"gpu={g}blocks cpu={c}blocks" for g, c in SIZES], "rows": {}, "seconds": {}}
    oracle, ceiling = [], []
    for g, c in SIZES:
        s = pcs.replay(trace, tiers=[f"gpu={g}blocks", f"cpu={c}blocks"], gap_oracle=True,
                        compute_mode="infinite").summary
        oracle.append(s.oracle_hit_ratio)
        ceiling.append(s.single_sequence_hit_ratio)
    for label, pol, adm in rows:
        got = []
        for g, c in SIZES:
            t0 = time.process_time()
            s = pcs.replay(trace, tiers=[f"gpu={g}blocks", f"cpu={c}blocks"], policy=pol,
                           admit=[adm] if adm else None, compute_mode="infinite").summary
            out["seconds"][f"{label} {g}/{c}"] = time.process_time() - t0
            got.append(s.hit_ratio)
        out["rows"][label] = got
    head = " | ".join(f"gpu {g:,} / cpu {c:,}: hit (policy gap)" for g, c in SIZES)
    print(f"| policy | {head} |\n|---|" + "---|" * len(SIZES))
    for label, got in out["rows"].items():
        cells = " | ".join(f"{_pct(h)} ({_pts(o, h)})" for h, o in zip(got, oracle))
        print(f"| {label} | {cells} |")
    print("| **belady (oracle)** | " + " | ".join(f"**{_pct(o)}**" for o in oracle) + " |")
    print("| capacity gap: ceiling - oracle | " + " | ".join(f"{_pts(ss, o)} (ceiling {_pct(ss)})"
                                                             for ss, o in zip(ceiling, oracle)) + " |")
    out.update(oracle=oracle, ceiling=ceiling)
    common.emit({"bench": "policies_table", **out})


if __name__ == "__main__":
    common.run(main, "policies_table")
