"""``pcs compare``: one trace under several policies or tier sizes, side by side.

Each variant is a full :func:`pcs.engine.api.replay`; the table has one
column per variant and one row per metric in :data:`METRICS`. More rows (for
example hit-ratio curve points) are added by appending to :data:`METRICS`: a
label, a JSON key and a function summary -> value.
"""
from __future__ import annotations

from typing import Any, Callable

import click

from pcs.blocks import BlockRules
from pcs.cli.common import Progress, command, emit, format_option
from pcs.cli.modelarg import is_config_path
from pcs.cli.params import parse_capacity_list
from pcs.cli.replay import open_trace_kwargs, replay_options, run_replay_kwargs
from pcs.report.table import render_table
from pcs.units import format_bytes, format_count, format_duration, format_percent, format_points

__all__ = ["compare", "METRICS", "variant_row"]


def _pts(x: float) -> str:
    return format_points(x)


def _link_sum(s: dict, key: str) -> float:
    return sum(lk[key] for lk in s["envelope"]["links"])


def _slower_share(s: dict) -> float | None:
    n = _link_sum(s, "restores")
    return _link_sum(s, "restores_slower_than_recompute") / n if n else None


#: (row label, JSON key, value of a summary, formatter for the table)
METRICS: list[tuple[str, str, Callable[[dict], Any], Callable[[Any], str]]] = [
    ("hit ratio (real)", "hit_ratio", lambda s: s["hit_ratio"], format_percent),
    ("single-sequence hit ratio", "single_sequence_hit_ratio", lambda s: s["single_sequence_hit_ratio"],
     format_percent),
    ("gap: block rounding", "gap_block_rounding", lambda s: s["gap"]["block_rounding"], _pts),
    ("gap: capacity and eviction", "gap_capacity_eviction", lambda s: s["gap"]["capacity_eviction"], _pts),
    ("gap: concurrency", "gap_concurrency", lambda s: s["gap"]["concurrency"], _pts),
    ("hits from lower tiers", "lower_tier_hit_ratio", lambda s: sum(list(s["hit_ratio_per_tier"].values())[1:]),
     format_percent),
    ("restored bytes", "restored_bytes", lambda s: s["bytes"]["restored"], format_bytes),
    ("written to lower tiers", "written_bytes", lambda s: sum(s["bytes"]["written_per_tier"].values()),
     format_bytes),
    ("restores slower than recompute", "share_slower", _slower_share, format_percent),
    ("TTFT p50", "ttft_p50_s", lambda s: s["envelope"]["ttft_p50_s"], format_duration),
    ("TTFT p99", "ttft_p99_s", lambda s: s["envelope"]["ttft_p99_s"], format_duration),
    ("wait p99", "wait_p99_s", lambda s: s["envelope"]["wait_p99_s"], format_duration),
    ("requests truncated", "requests_truncated", lambda s: s["requests_truncated"], format_count),
]


def variant_row(label: str, policy: str | None, tiers: list[str] | None, s: dict) -> dict[str, Any]:
    """One variant as a flat JSON/CSV row: label, policy, tiers, then every metric key."""
    row: dict[str, Any] = {"variant": label, "policy": policy or "lru",
                           "tiers": " ".join(f"{t['name']}={t['capacity_blocks']}blocks"
                                             for t in s["tiers"])}
    row.update({key: fn(s) for _, key, fn, _ in METRICS})
    return row


@command("compare", twins=True)
@(lambda f: replay_options(f, policy_multiple=True))
@click.option("--tiers", "tier_sets", multiple=True,
              help="A whole tier list to compare, comma-separated, repeatable: --tiers gpu=400GB,cpu=2TB "
                   "--tiers gpu=400GB,cpu=4TB (instead of --tier).")
@click.option("--curve-capacities", default=None, metavar="C1,C2,...",
              help="Also print hit-ratio curve rows at these one-tier capacities (5000blocks, or sizes such as 40GB: "
                   "the GPU tier's bytes per block), sequential timing: "
                   "one column per compared policy (LRU from the one-pass curve, others replayed), Belady and "
                   "the single-sequence ceiling.")
@format_option
def compare(fmt: str, tier_sets: tuple[str, ...], curve_capacities: str | None, **kw: Any) -> None:
    """Replay TRACE under several policies (--policy, repeatable) and/or tier lists
    (--tiers, repeatable) and print them side by side.

    \b
    Example:
      pcs compare trace.jsonl --policy lru --policy protected --tier gpu=400GB --tier cpu=2TB
      pcs compare trace.jsonl --tiers gpu=5000blocks --tiers gpu=20000blocks --timing sequential
      pcs compare trace.jsonl --policy lru --policy protected --curve-capacities 1000blocks,5000blocks,20000blocks
    JSON: {"variants": [row, ...]} with row keys variant, policy, tiers and the metric keys
    (hit_ratio, single_sequence_hit_ratio, gap_*, restored_bytes, ttft_p50_s ...); with
    --curve-capacities also "curve": [{capacity_blocks, <policy>_hit_ratio ..., belady_hit_ratio,
    ceiling_hit_ratio}, ...].
    """
    if tier_sets and kw["tiers"]:
        raise ValueError("give either --tier (one tier list) or --tiers (several to compare), not both")
    policies = list(kw["policy"]) or [None]
    trace = open_trace_kwargs(kw)
    caps = _parse_capacities(curve_capacities, kw, trace.block_size) if curve_capacities else None
    sets = [[t for t in ts.split(",") if t.strip()] for ts in tier_sets] or [list(kw["tiers"]) or None]
    variants = []
    runs = len(sets) * len(policies)
    total = (lambda: (trace.estimated_requests() or 0) * runs or None)  # noqa: E731
    with Progress(kw["quiet"], desc="compare", total=total) as progress:
        for tiers in sets:
            for pol in policies:
                label = " ".join(x for x in (pol or "lru", " ".join(tiers) if tiers and len(sets) > 1 else "") if x)
                s = run_replay_kwargs(kw, pol, tiers, progress, trace).summary
                variants.append((label, pol, tiers, s))
    rows = [variant_row(label, pol, tiers, s) for label, pol, tiers, s in variants]
    first = variants[0][3]
    payload = {"trace": first["trace"], "model": first["model"], "timing": first["timing"], "variants": rows}
    curve_rows = _curve_rows(kw, policies, caps, trace) if caps is not None else None
    if curve_rows is not None:
        payload["curve"] = curve_rows

    def table() -> str:
        text = _variants_table(rows, first)
        if curve_rows is not None:
            text += "\n\n" + _curve_table(curve_rows, first)
        return text

    emit(payload, fmt, table, rows_key="variants")


def _variants_table(rows: list[dict[str, Any]], first: dict) -> str:
    body = [[label] + [fmt_(r[key]) if r[key] is not None else "-" for r in rows]
            for label, key, _, fmt_ in METRICS]
    body.insert(0, ["tiers"] + [r["tiers"] for r in rows])
    return render_table(["metric"] + [r["variant"] for r in rows], body,
                        title=f"pcs compare: {first['trace']} | {first['model']} | {first['timing']} timing",
                        notes=["single-sequence = infinite cache, same block rules; gap terms sum to "
                               "ideal - real"] + list(first.get("notes", ())))


def _parse_capacities(text: str, kw: dict[str, Any], block_size: int) -> list[int]:
    """``--curve-capacities``: block counts, or sizes divided by the GPU tier's bytes per block."""
    return parse_capacity_list(text, "--curve-capacities", lambda: _gpu_block_bytes(kw, block_size))


def _gpu_block_bytes(kw: dict[str, Any], block_size: int) -> int:
    """Bytes per block of the GPU tier the replays use: the Reserved layout per TP group (docs/semantics.md §13)."""
    from pcs.engine.api import DEFAULTS
    from pcs.model import get_model, group_block_bytes, load_hf_config

    name = kw["model"] or DEFAULTS["model"]
    spec = load_hf_config(name) if is_config_path(name) else get_model(name)
    spec = spec.with_dtype(kw["dtype"]) if kw["dtype"] else spec
    return group_block_bytes(spec.with_tp(kw["tp"] or DEFAULTS["tp"]), block_size, "reserved").total_bytes


def _curve_rows(kw: dict[str, Any], policies: list[str | None], caps: list[int], trace: Any) -> list[dict[str, Any]]:
    """Hit ratio per capacity (one tier, sequential) for each compared policy, Belady and the ceiling.

    LRU comes from the exact one-pass curve (:func:`pcs.curves.api.curve`,
    equal to the sequential one-tier LRU replay); other policies are replayed
    once per capacity with the same block rules.
    """
    from pcs.curves.api import curve

    rules = BlockRules(cache_partial_blocks=kw["cache_partial_blocks"],
                       recompute_last_token=not kw["no_recompute_last_token"])
    res = curve(trace, capacities=caps, rules=rules)
    rows = [{"capacity_blocks": r["capacity_blocks"]} for r in res.rows]
    for pol in dict.fromkeys(p or "lru" for p in policies):
        if pol == "lru":
            values = [r["lru_hit_ratio"] for r in res.rows]
        else:
            seq = dict(kw, timing="sequential", tier_policy=(), link=(), engine="auto")
            values = [run_replay_kwargs(seq, pol, [f"gpu={c}blocks"], trace=trace).summary["hit_ratio"] for c in caps]
        for row, v in zip(rows, values):
            row[f"{pol}_hit_ratio"] = v
    for row, r in zip(rows, res.rows):
        row["belady_hit_ratio"] = r["belady_hit_ratio"]
        row["ceiling_hit_ratio"] = r["ceiling_hit_ratio"]
    return rows


def _curve_table(rows: list[dict[str, Any]], first: dict) -> str:
    keys = [k for k in rows[0] if k != "capacity_blocks"]
    body = [[format_count(r["capacity_blocks"])] + [format_percent(r[k]) for k in keys] for r in rows]
    return render_table(["capacity (blocks)"] + [k.removesuffix("_hit_ratio") for k in keys], body,
                        title="Hit ratio by capacity: one tier, sequential timing",
                        notes=["lru from the exact one-pass curve; other policies replayed per capacity; belady = "
                               "offline optimum; ceiling = single-sequence (infinite cache)"])
