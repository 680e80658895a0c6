"""Report of the trace commands: ``pcs trace stats`` (a table), ``convert`` and ``synth`` (one line each).

Statistics: requests, tokens (mean / p50 / p99 / max), blocks, reuse distance
(distinct blocks) and reuse time (s), the single-sequence hit ratio
(``docs/semantics.md`` §12; :mod:`pcs.trace.stats`).
"""
from __future__ import annotations

from typing import Any

from pcs.report.table import render_table, shown_relative_path
from pcs.report.traceshape import number as num, stats_shape_notes, stats_shape_rows
from pcs.units import format_count, format_counted, format_duration, format_percent

__all__ = ["render_stats", "render_convert", "render_synth"]

_STATS_ROWS = [
    ("requests", "requests", "count"), ("skipped lines", "skipped", "count"),
    ("time span", "time_span_s", "dur"), ("arrival rate (req/s)", "arrival_rate_rps", "f2"),
    ("prompt tokens mean / p50 / p99 / max", "prompt_tokens", "q"),
    ("output tokens mean / p50 / p99 / max", "output_tokens", "q"),
    ("blocks per request mean / p50 / p99 / max", "blocks_per_request", "q"),
    ("block accesses", "block_accesses", "count"), ("distinct blocks", "distinct_blocks", "count"),
    ("re-accessed block share", "reaccess_share", "pct"),
    ("single-sequence hit ratio (tokens)", "single_sequence_hit_ratio", "pct"),
    ("requests with any hit", "requests_with_hit_share", "pct"),
    ("reuse distance p50 / p90 / p99 (blocks)", "reuse_distance_blocks", "r"),
    ("reuse time p50 / p90 / p99", "reuse_time_s", "rt"),
]


def render_stats(st: dict[str, Any]) -> str:
    """The ``pcs trace stats`` table: one statistic per row.

    Args:
        st: :func:`pcs.trace.stats.trace_stats` (tokens, seconds, blocks,
            fractions; ``trace``, ``format``, ``block_size`` name the input).
    Returns:
        The table with its title and notes, no trailing newline.
    """
    from pcs.trace.api import named_skip_notes

    rows = []
    for label, key, kind in _STATS_ROWS:
        if key == "skipped" and st["format"] == "parquet":
            label = "skipped rows"        # Parquet's bad rows are skipped, not lines
        if kind == "q":
            val = " / ".join(num(st[f"{key}_{s}"]) for s in ("mean", "p50", "p99", "max"))
        elif kind == "r":
            val = " / ".join(num(st[f"{key}_{s}"]) for s in ("p50", "p90", "p99"))
        elif kind == "rt":
            val = " / ".join(format_duration(st[f"{key}_{s}"]) for s in ("p50", "p90", "p99"))
        elif kind == "dur":
            val = format_duration(st[key])
        elif kind == "pct":
            val = format_percent(st[key])
        elif kind == "f2":
            val = "-" if st[key] is None else f"{st[key]:.2f}"
        else:
            val = num(st[key])
        rows.append((label, val))
    rows += stats_shape_rows(st)
    notes = ["hit ratio: infinite cache, requests in order, full blocks only, last prompt token recomputed",
             "that single-sequence ratio is a ceiling, not the hit rate a finite cache reaches on this stream:"
             " pcs replay and pcs curve give the real one"]
    notes = ([st["header_note"]] if st.get("header_note") else []) + stats_shape_notes(st, notes)
    notes += named_skip_notes([s["message"] for s in st.get("skipped_lines") or ()], st["skipped"])
    return render_table(["statistic", "value"], rows,
                        title=f"{shown_relative_path(st['trace'])} ({st['format']}, {st['block_size']}-token blocks)",
                        notes=notes)


def render_convert(info: dict[str, Any]) -> str:
    """One line on what ``pcs trace convert`` wrote (:func:`pcs.trace.convert.convert`'s summary), then a note for
    each bad line it skipped and named (:func:`pcs.trace.api.named_skip_notes`), the columns of a CSV header read
    past (``header_note``) and a synthesised reuse."""
    from pcs.trace.api import named_skip_notes

    return (f"wrote {format_counted(info['requests'], 'request')}, "
            f"{format_counted(info['block_accesses'], 'block access', 'block accesses')} "
            f"({info['format']}, {info['block_size']}-token blocks) to {shown_relative_path(info['path'])}"
            + (f"; skipped {format_counted(info['skipped'], _bad_unit(info))}" if info["skipped"] else "")
            + "".join(f"\nnote: {n}" for n in named_skip_notes([s["message"] for s in info.get("skipped_lines") or ()],
                                                               info["skipped"]))
            + (f"\nnote: {info['header_note']}" if info.get("header_note") else "")
            + (f"\nnote: prefix reuse {info['reuse']}" if str(info.get("reuse", "")).startswith("synth") else ""))


def _bad_unit(info: dict[str, Any]) -> str:
    """What a convert summary's ``skipped`` counts: bad rows of a Parquet source, else bad lines."""
    return "bad row" if info.get("source_format") == "parquet" else "bad line"


def render_synth(info: dict[str, Any]) -> str:
    """One line on what ``pcs trace synth`` wrote (requests, block accesses, format, block size, seed, path), then
    the columns of ``--azure-csv``'s header read past (``header_note``)."""
    return (f"wrote {format_counted(info['requests'], 'request')}, "
            f"{format_counted(info['block_accesses'], 'block access', 'block accesses')} "
            f"({info['format']}, {info['block_size']}-token blocks, seed {info['seed']}) to {shown_relative_path(info['path'])}"
            + (f"\nnote: {info['header_note']}" if info.get("header_note") else ""))
