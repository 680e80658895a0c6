"""Plain-text report of a fleet replay (``pcs replay --instances N``) and of a router comparison.

First the fleet gap split (docs/semantics.md §17): the reuse in the fleet's
traffic, what the routing captured, what the instances delivered; then one
row per instance (load, hit ratio, TTFT); then the router columns of
``pcs compare --router``.
"""
from __future__ import annotations

from typing import Any, Sequence

from pcs.report.table import render_table, shown_name, shown_relative_path
from pcs.units import format_bytes, format_count, format_counted, format_duration, format_percent, points_between

__all__ = ["render_fleet", "render_router_compare", "compare_title", "deployment_words"]


#: the fleet ceiling's label when it counts the next turns' decode blocks (FleetGap.ceiling_with_decode; the
#: compare table's "incl. next turns' decode blocks" row, pcs.report.compare.ROWS)
DECODE = ", incl. next turns' decode blocks"
#: the routing step's one name, with or without a shared tier (the per-instance sub-trace ceilings summed,
#: docs/semantics.md §17)
ROUTING_LABEL = "captured by routing (each instance's sub-trace ceiling, summed)"


def _pct(x: float | None) -> str | None:
    return None if x is None else format_percent(x)


def _s(x: float | None) -> str | None:
    return None if x is None else format_duration(x)


def _ratio(x: float | None) -> str | None:
    return None if x is None else f"{x:.2f}"


def _routing_rows(s: dict[str, Any]) -> list[list]:
    """With a shared tier, captured = the fleet ceiling (docs/semantics.md §17.1), so the router's split shows
    apart: the per-instance sub-trace ceilings summed, and what the shared tier's reads gave back."""
    sh = s.get("shared_tier")
    if sh is None:
        return []
    own, top = sh["routing_captured_hit_ratio"], s["gap"]["fleet_ceiling_hit_ratio"]
    return [[ROUTING_LABEL, format_percent(own),
             f"{points_between(own, top)} split across instances; the shared tier serves "
             f"{format_percent(sh['hit_ratio'])} of prompt tokens, own-sub-trace hits included"]]


def _gap_rows(s: dict[str, Any], timing: str | None = None) -> list[list]:
    g = s["gap"]
    ttft = "TTFT p50 / p99" + (" (no queue: --timing sequential)" if timing == "sequential" else "")
    return [
        [f"fleet ceiling (whole trace, one infinite cache{DECODE if g.get('ceiling_with_decode') else ''})",
         format_percent(g["fleet_ceiling_hit_ratio"]), ""],
        *_routing_rows(s),
        [ROUTING_LABEL if s.get("shared_tier") is None else
         "captured (shared tier: every instance reads every write)", format_percent(g["captured_hit_ratio"]),
         f"{points_between(g['captured_hit_ratio'], g['fleet_ceiling_hit_ratio'])} split across instances"],
        ["delivered (real hits)", format_percent(g["delivered_hit_ratio"]),
         f"{points_between(g['delivered_hit_ratio'], g['captured_hit_ratio'])} finite tiers, concurrency"],
        ["imbalance (max/mean requests, tokens, busy)",
         f"{s['imbalance_requests']:.2f} / {s['imbalance_prompt_tokens']:.2f} / "
         f"{_ratio(s['imbalance_busy_s']) or '-'}", ""],
        [ttft, f"{_s(s['ttft_p50_s']) or '-'} / {_s(s['ttft_p99_s']) or '-'}", ""],
    ]


def deployment_words(s: dict[str, Any]) -> str:
    """The model and deployment of a fleet summary dict as its header names them: :func:`_deployment` without
    the leading `` | ``, "" without a model."""
    return _deployment(s)[3:]


def _deployment(s: dict[str, Any]) -> str:
    """`` | model, KV dtype on TPx GPU (TP=n) | block B tokens | tiers gpu 398.05 GB, cpu 2.00 TB each`` as a
    replay's header names them (the tiers from an instance's replay; none under a shared tier); "" for a payload
    without them."""
    if not s.get("model"):
        return ""
    dtype = f", KV {s['kv_dtype']}" if s.get("kv_dtype") else ""
    out = f" | {shown_name(s['model'])}{dtype} on {s['tp']}x {shown_name(s['gpu'])} (TP={s['tp']}) | block {format_counted(s['block_size'], 'token')}"
    first = next((r for r in s.get("instance_summaries") or () if r), None)
    if first:
        out += " | tiers " + ", ".join(f"{t['name']} {format_bytes(t['capacity_bytes'])}" for t in first["tiers"]) \
               + " each"
    return out


def _index(s: dict[str, Any]) -> str:
    """The header's cache-index part: the view and the index size per instance for a router that reads it
    (prefix, cache-aware), else that the router reads none (as the router comparison says it, :func:`_view`)."""
    from pcs.fleet.routers import parse_router

    try:
        reads = parse_router(s["router"], s["instances"]).uses_index
    except (ValueError, ImportError):      # a plug-in router not installed here: its index size, as before
        reads = True
    if not reads:
        return ", reads no cache index"
    stale = f", view {format_duration(s['router_stale_s'])} stale" if s["router_stale_s"] else ", exact view"
    return f"{stale} | index {format_counted(s['index_capacity_blocks'], 'block')} per instance"


def render_fleet(s: dict[str, Any], compute: str | None = None, timing: str | None = None) -> str:
    """The fleet summary dict (:meth:`pcs.fleet.FleetSummary.to_dict`) as text; ``compute`` = the run's
    ``--compute`` (``infinite`` adds :data:`pcs.report.replay.UNLIMITED` to the header, as a single run's);
    ``timing`` = its ``--timing`` (``sequential`` labels the TTFT row: no queue, as a replay's TTFT note)."""
    from pcs.report.replay import UNLIMITED

    title = (f"pcs replay: {shown_relative_path(s['trace'])}{_deployment(s)} | {s['instances']} "
             f"instance{'' if s['instances'] == 1 else 's'} | router {s['router']}"
             + _index(s)
             + (f" | {UNLIMITED}" if compute == "infinite" else ""))
    top = render_table(["fleet", "hit ratio", "lost (-) or gained (+) at this step"], _gap_rows(s, timing), title=title)
    rows = [[x["instance"], format_count(x["requests"]), format_count(x["prompt_tokens"]), _pct(x["hit_ratio"]),
             _pct(x["ceiling_hit_ratio"]), _s(x["busy_s"]), _s(x["ttft_p50_s"]), _s(x["ttft_p99_s"])]
            for x in s["per_instance"]]
    notes = [] if s.get("shared_tier") is None else [
        "sub-trace ceiling: the instance's own requests through one infinite cache, without the "
        "shared tier (its hit ratio may exceed it: the shared tier serves other instances' writes)"]
    if s.get("engines"):
        why = "instance_summaries[i].engine_reason" if s.get("shared_tier") is None else "shared_tier.engine_reason"
        notes.append(f"engine {', '.join(s['engines'])} (why: {why} in --format json)")
    per = render_table(["instance", "requests", "prompt tokens", "hit ratio",
                        "sub-trace ceiling", "busy", "TTFT p50",
                        "TTFT p99"], rows, notes=notes)
    sh = s.get("shared_tier")
    parts = [top, per] + ([] if sh is None else [_render_shared(sh)]) + _lens_tables(s)
    return "\n\n".join(parts)


def _lens_tables(s: dict[str, Any]) -> list[str]:
    """Lesson 2 per instance, in the replay report's words (:func:`pcs.report.replay.lens_text`): payload vs
    reserved bytes, restore bytes and TTFT beside another KV dtype, hits held; the note once, under the last."""
    from pcs.report.replay import lens_text

    runs = [(x["instance"], r) for x, r in zip(s["per_instance"], s.get("instance_summaries") or ())
            if r and r.get("payload_lens")]
    if len(runs) <= 1:
        return [lens_text(r, f"instance {i}") for i, r in runs]
    # one table (the first instance's), the others' ratios on one line: bytes per block are the same on every
    # instance, only the restore bytes and TTFT move with each one's traffic
    first, r0 = runs[0]
    rest = "; ".join(f"{i}: restores {_lens_ratio(r, 'restored_bytes')}, TTFT {_lens_ratio(r, 'ttft_mean_s')}"
                     for i, r in runs[1:])
    lens = r0["payload_lens"]
    return [lens_text(r0, f"instance {first}") + f"\nnote: bytes per block are alike on every instance; the other "
            f"instances, {lens['alt_dtype']}/{lens.get('layout') or lens['dtype']}: {rest} "
            "(JSON instance_summaries[i].payload_lens)"]


def _lens_ratio(r: dict[str, Any], key: str) -> str:
    run, alt = r["payload_lens"][key]
    return f"x{alt / run:.3f}" if run else "-"


def _render_shared(sh: dict[str, Any]) -> str:
    """The shared tier (docs/semantics.md §17.1): its totals, then each instance's hit tokens by tier."""
    rows = [["capacity", f"{format_counted(sh['capacity_blocks'], 'block')} = {format_bytes(sh['capacity_bytes'])}"],
            ["policy / write policy / link per instance", f"{sh['policy']} / {sh['write_policy']} / {sh['link']}"],
            ["prompt tokens served by it (its hit ratio)", format_percent(sh["hit_ratio"])],
            ["read (restored) / written", f"{format_bytes(sh['read_bytes'])} / {format_bytes(sh['written_bytes'])}"],
            ["peak resident", f"{format_counted(sh['peak_resident_blocks'], 'block')} = "
                              f"{format_bytes(sh['peak_resident_bytes'])}"],
            ["evicted / lease-spared blocks", f"{format_count(sh['evicted_blocks'])} / "
                                              f"{format_count(sh['lease_spared_blocks'])}"],
            ["captured by routing alone (no shared tier)", format_percent(sh["routing_captured_hit_ratio"])]]
    top = render_table(["shared tier " + sh["name"], ""], rows)
    per = sh["per_instance"]
    names = per[0]["tiers"] if per else []
    body = [[p["instance"]] + [format_count(x) for x in p["hit_tokens"]] + [format_bytes(p["shared_read_bytes"])]
            for p in per]
    return f"{top}\n\n" + render_table(["instance"] + [f"hit tokens {n}" for n in names] + ["read from shared"],
                                          body)


_COMPARE_ROWS = (("hit ratio (delivered)", "hit_ratio", _pct), ("captured by routing", "captured_hit_ratio", _pct),
                 ("fleet ceiling", "fleet_ceiling_hit_ratio", _pct),
                 ("imbalance requests", "imbalance_requests", _ratio),
                 ("imbalance tokens", "imbalance_prompt_tokens", _ratio),
                 ("imbalance busy", "imbalance_busy_s", _ratio),
                 ("TTFT p50", "ttft_p50_s", _s), ("TTFT p99", "ttft_p99_s", _s))


_SHARED_ROWS = (("hit ratio (delivered)", "hit_ratio", _pct),
                ("captured (shared tier: every instance reads every write)", "captured_hit_ratio", _pct),
                ("captured by routing alone (no shared tier)", "routing_captured_hit_ratio", _pct),
                ("hit ratio served by the shared tier", "shared_tier_hit_ratio", _pct)) + _COMPARE_ROWS[2:]


def _view(rows: Sequence[dict[str, Any]]) -> str:
    """The routers' view: exact, or stale for the routers that read the cache index (the others are given an
    exact view: :func:`pcs.fleet.routers.stale_view_applies`), naming them when some routers do not."""
    stale = [r for r in rows if r["router_stale_s"]]
    if not stale:
        return "exact view"
    text = f"view {format_duration(stale[0]['router_stale_s'])} stale"
    if len(stale) == len(rows):
        return text
    return f"{text} for {', '.join(r['router'] for r in stale)} (the others read no cache index)"


def compare_title(trace: str, rows: Sequence[dict[str, Any]], deployment: str = "") -> str:
    """The router comparison's header: trace, the model and deployment (``deployment``, as the fleet replay's
    header names them), instances, the routers' view (:func:`_view`) and the shared tier when there is one (the
    same for every row)."""
    r = rows[0]
    stale = _view(rows)
    shared = f" | shared tier {r['shared_tier']}" if r.get("shared_tier") else ""
    dep = f" | {deployment}" if deployment else ""
    return f"pcs compare: {trace}{dep} | {format_counted(r['instances'], 'instance')} | {stale}{shared}"


def render_router_compare(rows: Sequence[dict[str, Any]], title: str) -> str:
    """Router comparison rows (:class:`pcs.fleet.compare.RouterRow` dicts) as one column per router; with a
    shared tier its rows are named as the fleet replay names them (:func:`render_fleet`)."""
    spec = _SHARED_ROWS if rows and rows[0].get("shared_tier") else _COMPARE_ROWS
    body = [[label] + [fmt(r[key]) for r in rows] for label, key, fmt in spec]
    return render_table(["metric"] + [r["router"] for r in rows], body, title=title)
