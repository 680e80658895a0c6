"""``pcs compare``: one trace under several policies or tier sizes, side by side.

Options -> :func:`pcs.engine.compare.compare` -> :func:`pcs.report.compare.render_compare`
-> :func:`pcs.cli.common.emit`. The variant loop and the curve rows live in
:mod:`pcs.engine.compare`; the table in :mod:`pcs.report.compare`.
"""
from __future__ import annotations

from typing import Any

import click

from pcs.cli.common import Progress, emit, format_option
from pcs.cli.replay import replay_call_kwargs, replay_options

__all__ = ["compare"]


@click.command("compare")
@(lambda f: replay_options(f, policy_multiple=True))
@click.option("--tiers", "tier_sets", multiple=True,
              help="A whole tier list to compare, comma-separated, repeatable: --tiers gpu=400GB,cpu=2TB "
                   "--tiers gpu=400GB,cpu=4TB (instead of --tier).")
@click.option("--curve-capacities", default=None, metavar="C1,C2,...",
              help="Also print hit-ratio curve rows at these one-tier capacities (blocks), sequential timing: "
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
      pcs compare trace.jsonl --policy lru --policy protected --curve-capacities 1000,5000,20000
    JSON: {"variants": [row, ...]} with row keys variant, policy, tiers and the metric keys
    (hit_ratio, single_sequence_hit_ratio, gap_*, restored_bytes, ttft_p50_s ...); with
    --curve-capacities also "curve": [{capacity_blocks, <policy>_hit_ratio ..., belady_hit_ratio,
    ceiling_hit_ratio}, ...].
    """
    from pcs.engine.compare import compare as compare_api
    from pcs.report.compare import render_compare

    if tier_sets and kw["tiers"]:
        raise ValueError("give either --tier (one tier list) or --tiers (several to compare), not both")
    caps = _parse_capacities(curve_capacities) if curve_capacities else None
    sets = [[t for t in ts.split(",") if t.strip()] for ts in tier_sets] or None
    trace, replay_kwargs = replay_call_kwargs(kw)
    progress = Progress(kw["quiet"])
    try:
        res = compare_api(trace, policies=list(kw["policy"]) or None, tier_sets=sets, curve_capacities=caps,
                          progress=progress, **dict(replay_kwargs, tiers=list(kw["tiers"]) or None))
    finally:
        progress.close()
    emit(res.to_dict(), fmt, lambda: render_compare(res), rows_key="variants")


def _parse_capacities(text: str) -> list[int]:
    try:
        caps = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--curve-capacities {text!r}: expected whole block counts such as 1000,5000") from None
    if not caps or min(caps) < 0:
        raise ValueError(f"--curve-capacities {text!r}: expected one or more block counts >= 0")
    return caps
