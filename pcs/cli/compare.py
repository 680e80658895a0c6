"""``pcs compare``: one trace under several policies or tier sizes, side by side.

Each variant is a full :func:`pcs.replay.api.replay`; the table has one
column per variant and one row per metric in :data:`METRICS`. More rows (for
example hit-ratio curve points) are added by appending to :data:`METRICS`: a
label, a JSON key and a function summary -> value.
"""
from __future__ import annotations

from typing import Any, Callable

import click

from pcs.cli.common import emit, format_option
from pcs.cli.replay import _Progress, replay_options, run_replay_kwargs
from pcs.report.table import render_table
from pcs.units import format_bytes, format_count, format_duration, format_percent

__all__ = ["compare", "METRICS", "variant_row"]


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
    ("gap: block rounding", "gap_block_rounding", lambda s: s["gap"]["block_rounding"], format_percent),
    ("gap: capacity and eviction", "gap_capacity_eviction", lambda s: s["gap"]["capacity_eviction"],
     format_percent),
    ("gap: concurrency", "gap_concurrency", lambda s: s["gap"]["concurrency"], format_percent),
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


@click.command("compare")
@(lambda f: replay_options(f, policy_multiple=True))
@click.option("--tiers", "tier_sets", multiple=True,
              help="A whole tier list to compare, comma-separated, repeatable: --tiers gpu=400GB,cpu=2TB "
                   "--tiers gpu=400GB,cpu=4TB (instead of --tier).")
@format_option
def compare(fmt: str, tier_sets: tuple[str, ...], **kw: Any) -> None:
    """Replay TRACE under several policies (--policy, repeatable) and/or tier lists
    (--tiers, repeatable) and print them side by side.

    \b
    Example:
      pcs compare trace.jsonl --policy lru --policy protected --tier gpu=400GB --tier cpu=2TB
      pcs compare trace.jsonl --tiers gpu=5000blocks --tiers gpu=20000blocks --timing sequential
    JSON: {"variants": [row, ...]} with row keys variant, policy, tiers and the metric keys
    (hit_ratio, single_sequence_hit_ratio, gap_*, restored_bytes, ttft_p50_s ...).
    """
    if tier_sets and kw["tiers"]:
        raise ValueError("give either --tier (one tier list) or --tiers (several to compare), not both")
    policies = list(kw["policy"]) or [None]
    sets = [[t for t in ts.split(",") if t.strip()] for ts in tier_sets] or [list(kw["tiers"]) or None]
    variants = []
    progress = _Progress(kw["quiet"])
    try:
        for tiers in sets:
            for pol in policies:
                label = " ".join(x for x in (pol or "lru", " ".join(tiers) if tiers and len(sets) > 1 else "") if x)
                s = run_replay_kwargs(kw, pol, tiers, progress).summary
                variants.append((label, pol, tiers, s))
    finally:
        progress.close()
    rows = [variant_row(label, pol, tiers, s) for label, pol, tiers, s in variants]
    first = variants[0][3]
    payload = {"trace": first["trace"], "model": first["model"], "timing": first["timing"], "variants": rows}

    def table() -> str:
        body = [[label] + [fmt_(r[key]) if r[key] is not None else "-" for r in rows]
                for label, key, _, fmt_ in METRICS]
        body.insert(0, ["tiers"] + [r["tiers"] for r in rows])
        return render_table(["metric"] + [r["variant"] for r in rows], body,
                            title=f"pcs compare: {first['trace']} | {first['model']} | {first['timing']} timing",
                            notes=[f"single-sequence = infinite cache, same block rules; gap terms sum to "
                                   "ideal - real"] + list(first.get("notes", ())))

    emit(payload, fmt, table, rows_key="variants")
