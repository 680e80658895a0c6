"""Report of one hit-ratio curve (``pcs curve``): the table and the plot.

Rows: capacity (blocks, and bytes with a model), LRU, Belady and ceiling hit
ratios and block misses; notes name the knee (smallest capacity reaching 50,
90, 99 % of the ceiling) and the sampling rate when SHARDS ran (rules:
``docs/semantics.md`` §14).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pcs._heldimport import held_import
from pcs.report.replay import WHOLE_BLOCKS_NOTE
from pcs.report.table import render_table, shortened_path, shown_name, shown_relative_path
from pcs.units import format_bytes, format_count, format_counted, format_percent, format_rate

__all__ = ["render_curve", "curve_figure", "sampled_note", "with_sampled_note", "lru_label"]


def sampled_note(payload: dict[str, Any]) -> str | None:
    """The note of a sampled curve (``sample_rate`` below 1: SHARDS, :mod:`pcs.curves.shards`) that its LRU values are
    estimates, else None (an exact curve). The table, the JSON's ``notes`` and the HTML page carry it alike."""
    rate = payload.get("sample_rate")
    if not isinstance(rate, (int, float)) or isinstance(rate, bool) or rate >= 1.0:
        return None
    return (f"SHARDS sample rate {format_rate(rate)}: LRU values are estimates (docs/curves.md gives the measured "
            "error); Belady is not computed when sampling")


#: the start and middle of every :func:`sampled_note` whatever its rate (:func:`with_sampled_note` drops stored ones)
_SAMPLED_NOTE = re.compile(r"SHARDS sample rate [^:]*: LRU values are estimates")


def lru_label(rate: Any, exact: str) -> str:
    """The LRU series' name in a plot or a chart: ``LRU (exact)`` for an exact curve, ``LRU, estimated (SHARDS sample
    rate R)`` for a sampled one (``rate`` below 1), so that every output marks an estimate as one."""
    if isinstance(rate, (int, float)) and not isinstance(rate, bool) and rate < 1.0:
        return f"LRU, estimated (SHARDS sample rate {format_rate(rate)})"
    return f"LRU ({exact})" if exact else "LRU"


def with_sampled_note(payload: dict[str, Any]) -> list[str]:
    """``payload["notes"]`` (none: an empty list) without any stored :func:`sampled_note` (a hand-edited rate's, or
    one pasted into an exact curve's notes), then the note built from ``sample_rate`` alone when the curve is
    sampled: one note, true to the rate, whatever the file's notes say (a curve JSON written before pcs put it
    there gets it too)."""
    notes = [str(n) for n in payload.get("notes") or () if not _SAMPLED_NOTE.match(str(n).strip())]
    note = sampled_note(payload)
    return notes if note is None else notes + [note]


def _rows(payload: dict[str, Any], has_bytes: bool) -> list[list[Any]]:
    rows = []
    for r in payload["rows"]:
        rows.append([format_count(r["capacity_blocks"])]
                    + ([format_bytes(r["capacity_bytes"])] if has_bytes else [])
                    + [format_percent(r["lru_hit_ratio"]), format_percent(r["belady_hit_ratio"]),
                       format_percent(r["ceiling_hit_ratio"]), format_count(r["lru_block_misses"]),
                       None if r["belady_block_misses"] is None else format_count(r["belady_block_misses"])])
    return rows


def _notes(payload: dict[str, Any], has_bytes: bool) -> list[str]:
    knees = []
    for entry in payload["knee"].values():
        c = entry["capacity_blocks"]
        where = "-" if c is None else format_count(c) + " blocks" + \
            (f" ({format_bytes(entry['capacity_bytes'])})" if has_bytes else "")
        knees.append(f"{entry['percent_of_ceiling']} % -> {where}")
    how = "exact for every capacity from one pass of stack depths" if payload["sample_rate"] >= 1.0 else \
        "estimated for every capacity from one pass of stack depths over a SHARDS sample"
    notes = ["token-weighted; LRU = `pcs replay --timing sequential --policy lru` with one tier of that size,"
             f" {how} (kernel {payload['kernel']})",
             "Belady = offline optimum (evicts the unpinned leaf used farthest in the future); ceiling ="
             " infinite cache (single-sequence)",
             "LRU knee (smallest capacity reaching this share of the ceiling): " + "; ".join(knees)]
    if has_bytes:
        notes += ["capacity in bytes uses stored (Reserved) bytes per block: a narrower KV dtype with scales in the"
                  " pages (fp8_per_token_head, nvfp4) adds fewer blocks than its payload ratio suggests; vLLM's fp8"
                  " (scales outside the pages) adds exactly that many, see pcs footprint", WHOLE_BLOCKS_NOTE]
    else:
        notes.append(f"capacities in blocks of {format_counted(payload['block_size'], 'token')}: the curve needs no model; --model "
                     "NAME adds each capacity's bytes (a column, and a GB axis with --plot: blocks x Reserved bytes "
                     "per block) and takes sizes such as 200GB in --capacities")
    return notes + with_sampled_note(payload)  # the trace's (synthetic reuse, skipped lines), then the sample's


def render_curve(payload: dict[str, Any]) -> str:
    """The ``pcs curve`` table.

    Args:
        payload: the curve JSON (:meth:`pcs.curves.api.CurveResult.to_dict`
            plus ``trace`` and ``dtype``): ``rows`` (``capacity_blocks``,
            ``capacity_bytes`` when ``block_bytes`` is set, ``*_hit_ratio``
            as fractions, ``*_block_misses`` as counts), ``knee``,
            ``requests``, ``block_accesses`` and ``cacheable_blocks`` (blocks), ``block_size`` (tokens),
            ``kernel``, ``sample_rate``.
    Returns:
        The table with its title and notes, no trailing newline.
    """
    has_bytes = payload.get("block_bytes") is not None
    headers = ["capacity (blocks)"] + (["capacity"] if has_bytes else []) + \
        ["LRU", "Belady", "ceiling", "LRU block misses", "Belady block misses"]
    # the title names the trace; what was counted goes in the first note, so the title fits 100 columns (it was
    # 123-161 with the counts and the model in it)
    head = "Hit ratio by capacity: "       # a long path is cut to fit 100 columns (the JSON keeps it whole)
    title = head + shortened_path(shown_relative_path(payload['trace']), 100 - len(head))
    counted = (f"{format_counted(payload['requests'], 'request')}, "
               f"{format_counted(payload['block_accesses'], 'block access', 'block accesses')}, "
               f"{format_count(payload['cacheable_blocks'])} cacheable, "
               f"block {format_counted(payload['block_size'], 'token')}"
               + (f"; {shown_name(payload['model'])} {format_bytes(payload['block_bytes'])}/block reserved" if has_bytes else ""))
    return render_table(headers, _rows(payload, has_bytes), title=title,
                        notes=[counted, *_notes(payload, has_bytes)])


def _bytes_axis(ax: Any, block_bytes: int, model_name: str) -> None:
    """The capacity in decimal bytes on a second x axis on top, ticked where the blocks axis below is (its
    powers of 10 in view), each label the bytes of that block count as the text report prints them
    (``16.78 GB``: a space before the unit), so each pair lines up; no minor ticks."""
    NullLocator = held_import("matplotlib.ticker").NullLocator

    lo, hi = ax.get_xlim()
    blocks = [t for t in ax.get_xticks() if lo <= t <= hi]
    top = ax.secondary_xaxis("top", functions=(lambda b: b * block_bytes, lambda n: n / block_bytes))
    top.set_xticks([b * block_bytes for b in blocks], [format_bytes(b * block_bytes) for b in blocks])
    top.xaxis.set_minor_locator(NullLocator())
    top.set_xlabel(f"capacity (decimal bytes; {model_name}, {format_bytes(block_bytes)} per block, Reserved)")


def curve_figure(result: Any, model_name: str | None, trace: str | None = None) -> Any:
    """The curves as a matplotlib figure: LRU at every capacity, Belady points, the ceiling.

    The title names the trace and its size; with a model (``result.block_bytes``)
    a second x axis on top gives the capacity in decimal bytes (Reserved bytes per block), ticked over the
    blocks axis's ticks.

    Args:
        result: a :class:`pcs.curves.api.CurveResult` (``lru`` curve,
            ``rows``, ``ceiling_hit_ratio``, ``block_bytes``, ``trace``, ``requests``, ``block_size``).
        model_name: named on the x axis when bytes were asked for, else None.
        trace: the trace's name for the title (default: the result's).
    Returns:
        A ``matplotlib.figure.Figure`` (Agg backend); the caller saves and closes it. A trace with no prompt
        tokens (every ratio None: 0/0) gets empty axes saying so.
    Raises:
        ImportError: matplotlib is not installed (the ``plot`` extra).
    """
    matplotlib = held_import("matplotlib")
    matplotlib.use("Agg")
    plt = held_import("matplotlib.pyplot")

    from pcs.report.htmlcurve import curve_line

    line = curve_line(result)       # the page's LRU line too: one line for both renderers
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot([c for c, _ in line], [100 * h for _, h in line], label=lru_label(result.sample_rate, "every capacity"))
    bel = [(r.capacity_blocks, r.belady_hit_ratio) for r in result.rows if r.belady_hit_ratio is not None]
    if bel:
        ax.plot([c for c, _ in bel], [b * 100 for _, b in bel], "o--", label="Belady (offline optimum)")
    if result.ceiling_hit_ratio is not None:
        ax.axhline(result.ceiling_hit_ratio * 100, color="grey", ls=":", label="ceiling (infinite cache)")
    else:       # no prompt tokens: every ratio is 0/0, undefined (docs/semantics.md §12): no line, and why
        ax.text(0.5, 0.5, "no prompt tokens: every hit ratio is undefined (0/0)", ha="center", va="center",
                transform=ax.transAxes)
    ax.set_xscale("log")
    ax.set_xlabel(f"capacity (blocks of {format_counted(result.block_size, 'token')}, log scale)")
    bb = result.block_bytes
    if model_name and bb:
        _bytes_axis(ax, bb, shown_relative_path(model_name))   # shown_relative_path: a lone surrogate is no glyph (matplotlib refuses it)
    trace = trace or result.trace
    ax.set_title(f"Hit ratio by capacity: {shown_relative_path(Path(str(trace)).name)} ({format_counted(result.requests, 'request')}, "
                 f"block {result.block_size} tokens)", fontsize=10)
    ax.set_ylabel("hit ratio (% of prompt tokens)")
    ax.set_ylim(bottom=0)
    if result.ceiling_hit_ratio is not None:
        ax.legend(loc="upper left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
