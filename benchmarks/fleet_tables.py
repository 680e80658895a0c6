"""The tables of docs/cluster.md: every router at 4 and 8 instances on Mooncake, without and with a shared tier.

Workload: the Mooncake FAST'25 conversation trace (../shared/traces; 12,031
requests, 288,500 block accesses), default deployment per instance
(llama-2-70b, 8 x h100-sxm TP=8, GPU tier from the deployment + cpu=2TB, LRU,
write-back, modeled timing, the step scheduler: ``pcs.fleet_replay`` defaults).

- router table: per router (``--routers``; session is refused on a trace without
  session ids and its row says so) and instance count: delivered, captured and
  fleet-ceiling hit ratios, imbalance (requests, prompt tokens, busy seconds),
  TTFT p50 / p99; at the largest count also ``prefix`` and ``cache-aware`` with
  a 10 s stale index;
- shared-tier table (``--shared``, default remote=20TB): round-robin and
  cache-aware, none / write-back / write-through: delivered, captured, served
  by the shared tier, routing alone captures, TB read / written, TTFT p50 / p99.

``--compute infinite`` runs every fleet with instant compute (docs/cluster.md's
second shared-tier table: ``--compute infinite --tables shared``).

Prints the markdown tables, then one JSON line (last) with every number. Each
table row prints exactly as docs/cluster.md shows it (same labels, digits:
TTFT under 1 s with 3 decimals, under 100 s with 2, above with thousands
separators), so the two diff clean (tests/cli/test_fleet_tables_doc.py checks
the formatting against the docs' rows).

    python benchmarks/fleet_tables.py [--instances 4,8] [--shared remote=20TB] [--compute step|infinite]
                                      [--tables routers,shared]
"""
from __future__ import annotations

import argparse
import time

import common

ROUTERS = ("round-robin", "random", "least-loaded", "session", "consistent-hash", "prefix", "cache-aware")


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def _s(x) -> str:
    """Seconds as docs/cluster.md prints them: 0.635, 10.27, 1,167."""
    if x is None:
        return "-"
    return f"{x:,.0f}" if x >= 100 else f"{x:.2f}" if x >= 1 else f"{x:.3f}"


def router_cells(d: dict) -> str:
    """One router-table row after its label, from the numbers of :func:`_router_row`."""
    busy = "-" if d["imbalance_busy"] is None else f"{d['imbalance_busy']:.2f}"
    return (f"| {_pct(d['delivered'])} | {_pct(d['captured'])} | {_pct(d['ceiling'])} | "
            f"{d['imbalance_requests']:.2f} | {d['imbalance_tokens']:.2f} | {busy} | "
            f"{_s(d['ttft_p50_s'])} | {_s(d['ttft_p99_s'])} |")


def _router_row(s) -> tuple[dict, str]:
    g = s.gap
    d = dict(delivered=g.delivered_hit_ratio, captured=g.captured_hit_ratio, ceiling=g.fleet_ceiling_hit_ratio,
             imbalance_requests=s.imbalance_requests, imbalance_tokens=s.imbalance_prompt_tokens,
             imbalance_busy=s.imbalance_busy_s, ttft_p50_s=s.ttft_p50_s, ttft_p99_s=s.ttft_p99_s)
    return d, router_cells(d)


def shared_cells(d: dict) -> str:
    """One shared-tier-table row after its instances, router and write-policy cells (:func:`_shared_row`)."""
    rw = "-" if d["read_tb"] is None else f"{d['read_tb']:.2f} / {d['written_tb']:.2f}"
    return (f"| {_pct(d['delivered'])} | {_pct(d['captured'])} | {_pct(d['shared_hit_ratio'])} | "
            f"{_pct(d['routing_captured'])} | {rw} | {_s(d['ttft_p50_s'])} / {_s(d['ttft_p99_s'])} |")


def _shared_row(s) -> tuple[dict, str]:
    g, sh = s.gap, s.shared_tier
    d = dict(delivered=g.delivered_hit_ratio, captured=g.captured_hit_ratio,
             shared_hit_ratio=sh.hit_ratio if sh else None,
             routing_captured=sh.routing_captured_hit_ratio if sh else g.captured_hit_ratio,
             read_tb=sh.read_bytes / 1e12 if sh else None, written_tb=sh.written_bytes / 1e12 if sh else None,
             ttft_p50_s=s.ttft_p50_s, ttft_p99_s=s.ttft_p99_s, lease_spared_blocks=sh.lease_spared_blocks if sh else 0)
    return d, shared_cells(d)


def label(router: str, instances: int) -> str:
    """A router's row label: its name, with the key length of a bare ``consistent-hash`` (``(k=4)``)."""
    from pcs.fleet.routers import parse_router

    k = parse_router(router, instances).options.get("k") if ":" not in router else None
    return router if k is None else f"{router} (k={k})"


def refusal(exc: ValueError) -> str:
    """A refused router's row text: the refusal's first clause (what is missing, not the advice after ';')."""
    return f"n/a: {str(exc).split(';')[0]}"


def _router_table(trace, n: int, routers: list[str], stale_rows: bool, kw: dict, out: dict) -> None:
    """Print the router table of ``n`` instances (docs/cluster.md "**N instances**") and keep its numbers."""
    from pcs.fleet import fleet_replay

    print(f"\n**{n} instances**\n\n| router | delivered | captured | fleet ceiling | imbalance req | "
          "imbalance tokens | imbalance busy | TTFT p50 (s) | TTFT p99 (s) |\n" + "|---" * 9 + "|")
    runs = [(r, label(r, n), r, 0.0) for r in routers]
    if stale_rows:
        runs += [(f"{r}, 10 s stale",) * 2 + (r, 10.0) for r in ("prefix", "cache-aware")]
    for key, text, r, stale in runs:
        try:
            s = fleet_replay(trace, instances=n, router=r, router_stale_s=stale, **kw).summary
        except ValueError as exc:
            print(f"| {text} | {refusal(exc)} | | | | | | | |")
            continue
        d, row = _router_row(s)
        out["routers"][f"{n},{key}"] = d
        print(f"| {text} {row}")


def _shared_table(trace, counts: list[int], shared: str, kw: dict, out: dict) -> None:
    """Print the shared-tier table (round-robin and cache-aware, none / write-back / write-through)."""
    from pcs.fleet import fleet_replay

    compute = "`--compute infinite`" if kw.get("compute_mode") == "infinite" else "step scheduler (the default)"
    print(f"\n**Mooncake, {compute}, shared tier {shared}**\n\n| instances | router | shared tier | delivered | "
          "captured | served by the shared tier | routing alone captures | read / written (TB) | "
          "TTFT p50 / p99 (s) |\n|---|---|---|---|---|---|---|---|---|")
    for n in counts:
        for r in ("round-robin", "cache-aware"):
            for wp in (None, "back", "through"):
                more = dict(shared_tier=shared, write_policy=wp) if wp else {}
                d, row = _shared_row(fleet_replay(trace, instances=n, router=r, **kw, **more).summary)
                out["shared"][f"{n},{r},{wp or 'none'}"] = d
                print(f"| {n} | {r} | {('write-' + wp) if wp else 'none'} {row}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--instances", type=common.counts, default="4,8")
    ap.add_argument("--routers", default=",".join(ROUTERS))
    ap.add_argument("--shared", default="remote=20TB")
    ap.add_argument("--compute", choices=("step", "infinite"), default="step")
    ap.add_argument("--tables", default="routers,shared", help="routers, shared or both (comma-separated)")
    args = ap.parse_args()
    from pcs.fleet.routers import router_names

    tables = common.choices(args.tables, ("routers", "shared"), "--tables", "fleet_tables")
    routers = [r.strip() for r in args.routers.split(",") if r.strip()]
    common.choices(",".join(r.split(":")[0] for r in routers), router_names(), "--routers", "fleet_tables")
    name, eq, size = args.shared.partition("=")
    if not eq or not name.strip():
        common.fail("fleet_tables", f"--shared {args.shared!r}: expected NAME=SIZE, e.g. remote=20TB")
    common.size_or_fail(size, "--shared", "fleet_tables")
    common.need_trace(common.MOONCAKE_CONV, "fleet_tables")
    from pcs.trace import open_trace

    trace = open_trace(common.MOONCAKE_CONV)
    counts = args.instances
    kw = {} if args.compute == "step" else {"compute_mode": args.compute}
    out = {"bench": "fleet_tables", "trace": "mooncake-fast25 conversation", "routers": {}, "shared": {}}
    if args.compute != "step":
        out["compute"] = args.compute
    t0 = time.process_time()
    for n in counts if "routers" in tables else ():
        _router_table(trace, n, routers, n == max(counts), kw, out)
    if "shared" in tables:
        _shared_table(trace, counts, args.shared, kw, out)
    out["cpu_s"] = round(time.process_time() - t0, 1)
    out["machine"] = common.machine_info()
    common.emit(out)


if __name__ == "__main__":
    common.run(main, "fleet_tables")
