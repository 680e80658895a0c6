"""Report of capacity and bandwidth budgets and transfer arithmetic (``pcs budget``).

Budget rows: each workload's needs against the device, the utilisations
u_C = C_w/C_d and u_B = B_w/B_d, R = C/B (s), shortfalls and which budget
binds first (:mod:`pcs.analysis.budget`). Transfer rows: average restore
bandwidth, one transfer's time over a link, IOPS bandwidth.
"""
from __future__ import annotations

import math
from typing import Any

from pcs import units
from pcs.analysis.budget import RATIO_NOTE
from pcs.errors import UserError
from pcs.report.table import render_table, shown_name

__all__ = ["render_budget", "render_budget_table", "render_transfer_table", "budget_csv_rows", "budget_notes",
           "transfer_notes", "BUDGET_NOTES", "TRANSFER_NOTES"]


def render_budget_table(rows: list[dict[str, Any]], overall: dict[str, Any] | None) -> str:
    """One row per workload (and ``overall``, all together, when given).

    Args:
        rows: :meth:`pcs.analysis.budget.BudgetResult.as_dict` plus ``name``
            per workload (bytes, bytes/s, seconds, fractions).
        overall: the same for all workloads together, or None.
    """
    shown = rows + ([overall] if overall is not None else [])
    first = shown[0]
    title = (f"device: {exact(first['capacity_have_bytes'], 'bytes')} capacity, "
             f"{exact(first['bandwidth_have_bps'])} bandwidth, "
             f"R_d = C_d/B_d = {units.format_duration(first['R_d_s'])}")
    body = [[shown_name(r["name"]), exact(r["capacity_need_bytes"], "bytes"), units.format_percent(r["u_C"]),
             exact(r["bandwidth_need_bps"]), units.format_percent(r["u_B"]),
             units.format_duration(r["R_w_s"]), exact(r["capacity_shortfall_bytes"], "bytes"),
             exact(r["bandwidth_shortfall_bps"]),
             r["binding"] + (" (tie)" if r["binding_tie"] else ""), "yes" if r["fits"] else "NO"]
            for r in shown]
    return render_table(
        ["workload", "capacity need", "u_C", "bandwidth need", "u_B", "R_w = C_w/B_w", "capacity short",
         "bandwidth short", "binds first", "fits"], body, title=title,
        notes=list(BUDGET_NOTES))


#: The budget table's notes (text and JSON ``notes``).
BUDGET_NOTES = (
    "binds first = the budget that fills first if both needs grow by the same factor (the larger utilisation)",
    RATIO_NOTE,
    "a KV capacity need from a single-sequence hit ratio is a ceiling, not what a finite shared cache"
    " keeps (pcs replay); and halving payload bytes halves the reserved need only when the scales sit outside"
    " the pages (vLLM fp8; not fp8_per_token_head, nor whole blocks or fixed state: pcs footprint)")
#: The transfer table's notes (text and JSON ``notes``), each with the row it is about (:func:`transfer_notes`).
TRANSFER_NOTES = (
    "average bandwidth is not restore latency: one restore on the critical path still takes size/bandwidth",
    "IOPS x I/O size is reachable only if queue depth and concurrency allow it")
#: The key of the transfer row each of :data:`TRANSFER_NOTES` is about.
_NOTE_ROWS = ("restore_avg_bps", "iops_bps")


def transfer_notes(t: dict[str, Any]) -> list[str]:
    """The :data:`TRANSFER_NOTES` about a row ``t`` holds: the average-bandwidth note with --restores-per-s and
    --restore-size, the IOPS note with --iops and --io-size (none about a figure the user did not ask for)."""
    return [note for note, key in zip(TRANSFER_NOTES, _NOTE_ROWS) if key in t]


def budget_notes(rows: list[dict[str, Any]], transfers: dict[str, Any]) -> list[str]:
    """Every note the text of ``pcs budget`` prints, in its order (the JSON's ``notes``)."""
    return (list(BUDGET_NOTES) if rows else []) + transfer_notes(transfers)


def exact(value: float | None, kind: str = "bps") -> str:
    """A size (``kind`` "bytes") or rate ("bps", bytes/s) of the budget tables, one rule for every one of them,
    operands included: the fewest decimals, 2 at least (:func:`pcs.units.format_bytes`,
    :func:`pcs.units.format_bandwidth`), whose text read back is the value to the byte (rounded to a whole byte,
    resp. byte/s), so a figure is told from its neighbours and never printed as another: 1,000,000 IOPS x 4,096 B
    = 4.096 GB/s, 1,000,001 x 4,096 = 4,096,004,096 B/s = 4.096004096 GB/s (not 4.10 GB/s, which is
    4,100,000,000), a restore of 4,096,001 B 4.096001 MB; 80 GB stays 80.00 GB. None, inf and what cannot be read
    back print as the plain formatter prints them. A per-second count (restores/s, IOPS) is :func:`exact_count`.

    >>> exact(4_096_000_000.0), exact(4_096_004_096.0), exact(1e9), exact(1e9 / 3), exact(4_096_001, "bytes")
    ('4.096 GB/s', '4.096004096 GB/s', '1.00 GB/s', '333.333333 MB/s', '4.096001 MB')
    """
    fmt, parse = (units.format_bytes, units.parse_bytes) if kind == "bytes" else \
        (units.format_bandwidth, units.parse_bandwidth)
    if value is None or not math.isfinite(value):
        return fmt(value)
    want = round(value)
    for digits in range(2, 16):
        text = fmt(value, digits)
        try:
            if round(parse(text.replace(" ", "").replace(",", ""))) == want:
                return text
        except UserError:       # a text the parser refuses (a negative figure): as the plain formatter prints it
            break
    return fmt(value)


def exact_count(value: float | None) -> str:
    """A per-second count of the budget tables (restores/s, IOPS), by :func:`exact`'s rule for operands: a whole
    number with thousands separators, else the fewest decimals, 2 at least (:func:`pcs.units.format_count`), whose
    text read back is the value itself (``0.333333333333`` stays so, not ``0.33``, beside the product it makes:
    333.333333 MB/s). None and inf print as :func:`pcs.units.format_count` prints them.

    >>> exact_count(2.5), exact_count(0.333333333333), exact_count(1_000_001.0)
    ('2.50', '0.333333333333', '1,000,001')
    """
    if value is None or not math.isfinite(value) or float(value).is_integer():
        return units.format_count(value)
    for digits in range(2, 18):
        text = f"{value:,.{digits}f}"
        if float(text.replace(",", "")) == value:
            return text
    return f"{value:,.17f}"


def render_transfer_table(t: dict[str, Any]) -> str:
    """The transfer arithmetic block (``restore_avg_bps``, ``transfer_s``, ``iops_bps`` ... when present)."""
    rows = []
    if "restore_avg_bps" in t:
        rows.append([f"average bandwidth: {exact_count(t['restores_per_s'])}/s x "
                     f"{exact(t['restore_size_bytes'], 'bytes')}", exact(t["restore_avg_bps"])])
    if "transfer_s" in t:
        setup = f" + setup {units.format_duration(t['setup_s'])}" if t["setup_s"] else ""
        rows.append([f"one transfer: {exact(t['transfer_size_bytes'], 'bytes')} over "
                     f"{exact(t['link_bandwidth_bps'])} ({t['link']}){setup}",
                     units.format_duration(t["transfer_s"])])
    if "iops_bps" in t:
        rows.append([f"IOPS bandwidth: {exact_count(t['iops'])} IOPS x {units.format_count(t['io_size_bytes'])} B",
                     exact(t["iops_bps"])])
    return render_table(["transfer arithmetic", "value"], rows, notes=transfer_notes(t))


def render_budget(rows: list[dict[str, Any]], overall: dict[str, Any] | None, transfers: dict[str, Any]) -> str:
    """The whole ``pcs budget`` table: workloads (all together as a last row when several), then transfers."""
    parts = []
    if rows:
        parts.append(render_budget_table(rows, overall if len(rows) > 1 else None))
    if transfers:
        parts.append(render_transfer_table(transfers))
    return "\n\n".join(parts)


def budget_csv_rows(rows: list[dict[str, Any]], overall: dict[str, Any] | None,
                    transfers: dict[str, Any]) -> list[dict[str, Any]]:
    """CSV rows: one per workload plus all together when several; the transfers alone when no workload."""
    csv_rows = rows + ([overall] if overall is not None and len(rows) > 1 else [])
    return csv_rows or [transfers]
