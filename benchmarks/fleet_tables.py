"""The tables of docs/cluster.md: every router at 4 and 8 instances on Mooncake, without and with a shared tier.

Workload: the Mooncake FAST'25 conversation trace (../shared/traces; 12,031
requests, 288,500 block accesses), default deployment per instance
(llama-2-70b, 8 x h100-sxm TP=8, GPU tier from the deployment + cpu=2TB, LRU,
write-back, modeled timing, the step scheduler: ``pcs.fleet_replay`` defaults).

- router table: per router (``--routers``; session is skipped on a trace without
  session ids) and instance count: delivered, captured and fleet-ceiling hit
  ratios, imbalance (requests, prompt tokens, busy seconds), TTFT p50 / p99;
  at the largest count also ``prefix`` and ``cache-aware`` with a 10 s stale index;
- shared-tier table (``--shared``, default remote=20TB): round-robin and
  cache-aware, none / write-back / write-through, under the step scheduler:
  delivered, captured, served by the shared tier, routing alone captures,
  TB read / written, TTFT p50 / p99.

Prints the markdown tables, then one JSON line (last) with every number.

    python benchmarks/fleet_tables.py [--instances 4,8] [--shared remote=20TB]
"""
from __future__ import annotations

import argparse
import time

import common

ROUTERS = ("round-robin", "random", "least-loaded", "session", "consistent-hash", "prefix", "cache-aware")


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def _s(x) -> str:
    return "-" if x is None else (f"{x:,.0f}" if x >= 100 else f"{x:.3g}")


def _router_row(s) -> tuple[dict, str]:
    g = s.gap
    d = dict(delivered=g.delivered_hit_ratio, captured=g.captured_hit_ratio, ceiling=g.fleet_ceiling_hit_ratio,
             imbalance_requests=s.imbalance_requests, imbalance_tokens=s.imbalance_prompt_tokens,
             imbalance_busy=s.imbalance_busy_s, ttft_p50_s=s.ttft_p50_s, ttft_p99_s=s.ttft_p99_s)
    busy = "-" if d["imbalance_busy"] is None else f"{d['imbalance_busy']:.2f}"
    return d, (f"| {_pct(d['delivered'])} | {_pct(d['captured'])} | {_pct(d['ceiling'])} | "
               f"{d['imbalance_requests']:.2f} | {d['imbalance_tokens']:.2f} | {busy} | "
               f"{_s(d['ttft_p50_s'])} | {_s(d['ttft_p99_s'])} |")


def _shared_row(s) -> tuple[dict, str]:
    g, sh = s.gap, s.shared_tier
    d = dict(delivered=g.delivered_hit_ratio, captured=g.captured_hit_ratio,
             shared_hit_ratio=sh.hit_ratio if sh else None,
             routing_captured=sh.routing_captured_hit_ratio if sh else g.captured_hit_ratio,
             read_tb=sh.read_bytes / 1e12 if sh else None, written_tb=sh.written_bytes / 1e12 if sh else None,
             ttft_p50_s=s.ttft_p50_s, ttft_p99_s=s.ttft_p99_s, lease_spared_blocks=sh.lease_spared_blocks if sh else 0)
    rw = "-" if sh is None else f"{d['read_tb']:.2f} / {d['written_tb']:.2f}"
    return d, (f"| {_pct(d['delivered'])} | {_pct(d['captured'])} | {_pct(d['shared_hit_ratio'])} | "
               f"{_pct(d['routing_captured'])} | {rw} | {_s(d['ttft_p50_s'])} / {_s(d['ttft_p99_s'])} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--instances", default="4,8")
    ap.add_argument("--routers", default=",".join(ROUTERS))
    ap.add_argument("--shared", default="remote=20TB")
    args = ap.parse_args()
    if not common.MOONCAKE_CONV.exists():
        return common.skip("fleet_tables", f"{common.MOONCAKE_CONV} not found")
    from pcs.fleet import fleet_replay
    from pcs.trace import open_trace

    trace = open_trace(common.MOONCAKE_CONV)
    counts = [int(x) for x in args.instances.split(",")]
    out = {"bench": "fleet_tables", "trace": "mooncake-fast25 conversation", "routers": {}, "shared": {}}
    t0 = time.process_time()
    for n in counts:
        print(f"\n**{n} instances**\n\n| router | delivered | captured | fleet ceiling | imbalance req | "
              "imbalance tokens | imbalance busy | TTFT p50 (s) | TTFT p99 (s) |\n" + "|---" * 9 + "|")
        runs = [(r, r, 0.0) for r in args.routers.split(",")]
        if n == max(counts):
            runs += [("prefix, 10 s stale", "prefix", 10.0), ("cache-aware, 10 s stale", "cache-aware", 10.0)]
        for label, r, stale in runs:
            try:
                s = fleet_replay(trace, instances=n, router=r, router_stale_s=stale).summary
            except ValueError as exc:
                print(f"| {label} | n/a: {exc} | | | | | | | |")
                continue
            d, row = _router_row(s)
            out["routers"][f"{n},{label}"] = d
            print(f"| {label} {row}")
    print(f"\n**shared tier {args.shared}, step scheduler**\n\n| instances | router | shared tier | delivered | "
          "captured | served by the shared tier | routing alone captures | read / written (TB) | "
          "TTFT p50 / p99 (s) |\n|---|---|---|---|---|---|---|---|---|")
    for n in counts:
        for r in ("round-robin", "cache-aware"):
            for wp in (None, "back", "through"):
                kw = dict(shared_tier=args.shared, write_policy=wp) if wp else {}
                d, row = _shared_row(fleet_replay(trace, instances=n, router=r, **kw).summary)
                out["shared"][f"{n},{r},{wp or 'none'}"] = d
                print(f"| {n} | {r} | {('write-' + wp) if wp else 'none'} {row}")
    out["cpu_s"] = round(time.process_time() - t0, 1)
    out["machine"] = common.machine_info()
    common.emit(out)


if __name__ == "__main__":
    main()
