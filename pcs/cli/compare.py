"""``pcs compare``: one trace under several policies, tier sizes, admissions or routers, side by side.

Options -> :func:`pcs.engine.compare.compare` -> :func:`pcs.report.compare.render_compare`
-> :func:`pcs.cli.common.emit`. The variant loop and the curve rows live in
:mod:`pcs.engine.compare`; the table in :mod:`pcs.report.compare`.
"""
from __future__ import annotations

from typing import Any

import click

from pcs.cli.common import Progress, add_notes, command, emit, format_option, with_trace_notes
from pcs.cli.fleet import FLEET_NO_HTML, compare_fleet, fleet_options, wants_fleet
from pcs.cli.modelarg import is_config_path
from pcs.cli.params import parse_capacity_list
from pcs.cli.replay import open_trace_kwargs, replay_call_kwargs, replay_options
from pcs.cli.report import check_outputs, html_options, write_outputs
from pcs.errors import UserError

__all__ = ["compare"]


@command("compare", twins=True)
@(lambda f: replay_options(f, policy_multiple=True))
@click.option("--tiers", "tier_sets", multiple=True,
              help="A whole tier list to compare, comma-separated, repeatable: --tiers gpu=390GB,cpu=2TB "
                   "--tiers gpu=390GB,cpu=4TB (instead of --tier).")
@click.option("--curve-capacities", default=None, metavar="C1,C2,...",
              help="Also print hit-ratio curve rows at these one-tier capacities (5000blocks, or sizes such as 40GB: "
                   "the GPU tier's bytes per block; a hybrid model's block as pcs deploy counts it), sequential timing: "
                   "one column per compared policy (LRU from the one-pass curve, others replayed), Belady and "
                   "the single-sequence ceiling.")
@html_options
@fleet_options(multiple=True)
@format_option
def compare(fmt: str, tier_sets: tuple[str, ...], curve_capacities: str | None, html_path: str | None,
            plot_dir: str | None, **kw: Any) -> None:
    """Replay TRACE under several policies (--policy, repeatable), tier lists
    (--tiers), admissions (--admit) and/or routers (--router, with --instances),
    each repeatable, and print them side by side.

    \b
    Example:
      pcs compare trace.jsonl --policy lru --policy protected --tier gpu=390GB --tier cpu=2TB
      pcs compare trace.jsonl --tiers gpu=5000blocks --tiers gpu=20000blocks --timing sequential
      pcs compare trace.jsonl --policy lru --policy protected --curve-capacities 1000blocks,5000blocks,20000blocks
      pcs compare trace.jsonl --policy lru --policy s3fifo --admit none --admit cpu=reuse:2 --gap-oracle
    JSON: {"variants": [row, ...]} with row keys variant, policy, tiers and the metric keys
    (hit_ratio, single_sequence_hit_ratio, gap_*, restored_bytes, ttft_p50_s ...; admission with --admit;
    oracle_hit_ratio, gap_capacity, gap_policy with --gap-oracle); with
    --curve-capacities also "curve": [{capacity_blocks, <policy>_hit_ratio ..., belady_hit_ratio,
    ceiling_hit_ratio}, ...].
    """
    from pcs.engine.compare import compare as compare_api, refuse_one_admit_twice, refuse_one_policy_twice
    from pcs.report.compare import render_compare

    check_outputs(html_path, plot_dir, {"TRACE": kw["trace"]})
    if tier_sets and kw["tiers"]:
        raise UserError("give either --tier (one tier list) or --tiers (several to compare), not both")
    refuse_one_policy_twice(kw["policy"], "--policy")
    refuse_one_admit_twice(kw["admit"], "--admit")
    trace = open_trace_kwargs(kw)
    caps = _parse_capacities(curve_capacities, kw, trace.block_size) if curve_capacities else None
    sets = [[t for t in ts.split(",") if t.strip()] for ts in tier_sets] or None
    from pcs.cli.tiernames import check_tier_names

    for one in sets or ():
        check_tier_names(one, kw["link"], "--tiers")
    trace, replay_kwargs = replay_call_kwargs(kw, trace)
    if wants_fleet(kw):
        if sets or caps or kw["admit"] or kw["gap_oracle"]:
            raise UserError("--router compares routers on one tier list; --tiers, --curve-capacities, --admit and "
                             "--gap-oracle do not apply")
        if html_path or plot_dir:
            raise UserError(FLEET_NO_HTML)
        return compare_fleet(fmt, trace, dict(replay_kwargs, tiers=list(kw["tiers"]) or None), kw)
    runs = len(sets or [None]) * len(kw["policy"] or [None]) * len(kw["admit"] or [None])
    total = (lambda: (trace.estimated_requests() or 0) * runs or None)  # noqa: E731
    with Progress(kw["quiet"], desc="compare", total=total) as progress:
        res = compare_api(trace, policies=list(kw["policy"]) or None, tier_sets=sets, curve_capacities=caps,
                          admits=list(kw["admit"]) or None, progress=progress,
                          **dict(replay_kwargs, tiers=list(kw["tiers"]) or None))
    payload = res.to_dict()
    notes = with_trace_notes(payload, trace, fmt, kw["quiet"]) + _tier_notes(res, payload, fmt, kw["quiet"])
    if fmt == "json":
        add_tier_capacities(res, payload)
    write_outputs(html_path, plot_dir, [payload if fmt == "json" else _with_tier_capacities(res, payload)])
    emit(payload, fmt, lambda: "\n".join([render_compare(res)] + [f"note: {n}" for n in notes]), rows_key="variants")


def add_tier_capacities(res: Any, payload: dict[str, Any]) -> None:
    """Each variant's ``tier_capacities``: its tiers as the text table's tiers row gives them, ``199.98 GB = 1,192
    blk`` -- ``{name: {"capacity_blocks": int, "capacity_bytes": int}}``, GPU first, from the variant's tier
    summaries (``capacity_bytes`` = blocks x the tier's bytes per block; a hybrid model's in pages); a variant
    without a summary gets none (docs/json.md, pcs compare)."""
    for row, v in zip(payload["variants"], res.variants):
        if v.summary is not None:
            row["tier_capacities"] = {t.name: {"capacity_blocks": t.capacity_blocks,
                                               "capacity_bytes": t.capacity_bytes} for t in v.summary.tiers}


def _with_tier_capacities(res: Any, payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` with each variant's ``tier_capacities`` (:func:`add_tier_capacities`), for the HTML page's tier
    rows (bytes beside blocks, as the text table and the JSON), leaving the table's and CSV's rows as they are."""
    page = dict(payload, variants=[dict(v) for v in payload["variants"]])
    add_tier_capacities(res, page)
    return page


def _tier_notes(res: Any, payload: dict[str, Any], fmt: str, quiet: bool) -> tuple[str, ...]:
    """:func:`tier_notes` added to ``payload["notes"]`` and, outside the table format and without ``-q``, printed
    on stderr, as :func:`pcs.cli.common.with_trace_notes` does."""
    return add_notes(payload, tier_notes(res), fmt, quiet)


def tier_notes(res: Any) -> tuple[str, ...]:
    """The variants' lower tiers that never received a block (:func:`pcs.report.tiercheck.tier_config_notes`),
    each note once, led by the variants it concerns when not all: the notes ``pcs compare`` adds after the trace's,
    and a sweep's compare point too (:func:`pcs.sweep.worker._payload`)."""
    from pcs.report.tiercheck import tier_config_notes

    by_note: dict[str, list[str]] = {}
    for v in res.variants:
        for note in tier_config_notes(v.summary.to_dict()) if v.summary is not None else ():
            by_note.setdefault(note, []).append(v.variant)
    return tuple(n if len(vs) == len(res.variants) else f"{', '.join(vs)}: {n}" for n, vs in by_note.items())


def _parse_capacities(text: str, kw: dict[str, Any], block_size: int) -> list[str]:
    """``--curve-capacities``: the items as written (``40GB``, ``5000blocks``), checked before the trace is read
    (:func:`pcs.cli.params.parse_capacity_list`: a bad item, a size under one block, one capacity twice); a size
    goes on as a size, so its rows are the runs ``pcs replay --tier gpu=40GB`` makes (a hybrid model cuts its bytes
    into pages, not whole-model blocks: :func:`pcs.engine.compare.compare`)."""
    parse_capacity_list(text, "--curve-capacities", lambda: _gpu_block_bytes(kw, block_size))
    return [item for item in (s.strip() for s in text.split(",")) if item]


def _gpu_block_bytes(kw: dict[str, Any], block_size: int) -> int:
    """Bytes per block of the GPU tier the replays use: the Reserved layout per TP group (docs/semantics.md §13),
    for a hybrid model the pages one block takes x the page bytes, padding included (§13.1): the block
    ``pcs deploy`` counts (:func:`pcs.model.capacity.gpu_block_bytes`) and ``--tier gpu=Nblocks`` holds. Used here
    only to refuse one capacity twice; a size row replays the size itself (``gpu=40GB``), as
    ``pcs replay --tier gpu=40GB`` does."""
    from pcs.engine.api import DEFAULTS
    from pcs.model import get_model, load_hf_config
    from pcs.model.capacity import gpu_block_bytes

    name = kw["model"] or DEFAULTS["model"]
    spec = load_hf_config(name) if is_config_path(name) else get_model(name)
    spec = spec.with_dtype(kw["dtype"]) if kw["dtype"] else spec
    return gpu_block_bytes(spec.with_tp(kw["tp"] or DEFAULTS["tp"]), block_size)[1]
