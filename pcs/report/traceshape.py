"""Tables for the trace-shape views: stats rows for the prefix tree, KV events, chat import, transforms, re-blocking.

Renderers only: each takes the JSON payload its command emits and returns
the text table (``pcs.report.table.render_table``); nothing here computes.
"""
from __future__ import annotations

from pcs.report.table import render_table, shown_relative_path
from pcs.units import format_count, format_counted, format_duration, format_percent

__all__ = ["number", "stats_shape_rows", "stats_shape_notes", "render_events", "render_from_chat", "render_transform",
           "render_reblock"]

_SHAPE_ROWS = [
    ("prefix tree nodes / roots / leaves", ("prefix_tree_nodes", "prefix_tree_roots", "prefix_tree_leaves")),
    ("tree depth max / mean to a leaf (blocks)", ("prefix_tree_depth_max", "prefix_tree_leaf_depth_mean")),
    ("fan-out mean / max, branching nodes",
     ("prefix_tree_fanout_mean", "prefix_tree_fanout_max", "prefix_tree_branching_nodes")),
    ("conversations / turns mean / max", ("conversations", "conversation_turns_mean", "conversation_turns_max")),
]


def number(v: float | int | None) -> str:
    """A statistic of ``trace stats``: ``-`` for None, else :func:`pcs.units.format_count` (2 decimals for a
    fraction, rounded once: 24.25 -> ``24.25``, never rounded first to 24.2 and shown as ``24.20``)."""
    return "-" if v is None else format_count(v)


def stats_shape_rows(st: dict) -> list[tuple[str, str]]:
    """Rows for the prefix-tree keys of ``trace_stats`` and its reuse-distance histogram."""
    rows = [(label, " / ".join(number(st[k]) for k in keys)) for label, keys in _SHAPE_ROWS]
    rows.insert(3, ("prompt tokens under shared prefixes", format_percent(st["shared_prefix_token_share"])))
    for h in st["reuse_distance_histogram"]:
        span = f"{h['from_blocks']:,}" + ("" if h["to_blocks"] == h["from_blocks"] else f"-{h['to_blocks']:,}")
        rows.append((f"  reuse distance {span} blocks", f"{format_percent(h['share'])} ({h['count']:,})"))
    return rows


def stats_shape_notes(st: dict, notes: list[str]) -> list[str]:
    """``notes`` with the reuse source first when synthesised and the conversation rule last."""
    out = list(notes)
    if st.get("reuse") not in (None, "recorded", "hashed from token ids"):
        out.insert(0, f"prefix reuse {st['reuse']}")
    out.append("conversations: from parent/session ids where the trace has them, else a later turn contains the"
               " last full block an earlier request computed (docs/traces-formats.md)")
    return out


def render_events(st: dict) -> str:
    """``pcs trace events``: counters, lifetimes and one row per (rank, medium)."""
    def num(v):
        return "-" if v is None else f"{v:,}"

    rows = [("events", num(st["events"])), ("time span", format_duration(st["time_span_s"])),
            ("stored / removed / cleared events",
             f"{st['stored_events']:,} / {st['removed_events']:,} / {st['cleared_events']:,}")]
    rows += [(label, num(st[k])) for label, k in (
        ("blocks stored", "blocks_stored"), ("blocks removed (evicted)", "blocks_removed"),
        ("blocks dropped by a clear", "blocks_cleared"), ("re-stores (a dropped block stored again)", "restores"),
        ("stores of a block already held", "duplicate_stores"), ("removals of a block not held", "unknown_removals"))]
    rows.append(("lifetime of a removed block p50 / p90 / p99",
                 " / ".join(format_duration(st[f"removed_lifetime_s_p{q}"]) for q in (50, 90, 99))))
    for m in st["media"]:
        rows.append((f"rank {m['rank']} {m['medium']}: held / peak / distinct (blocks)",
                     f"{m['held_blocks']:,} / {m['peak_held_blocks']:,} / {m['distinct_blocks_stored']:,}"))
    when = "at the end" if st["at_s"] is None else f"at ts {st['at_s']:g} s"
    return render_table(["statistic", "value"], rows, title=f"{shown_relative_path(st['events_file'])} (vLLM KV events; held {when})",
                        notes=["held = stored and neither removed nor cleared since; a removal of a block not held "
                               "means it was stored before the capture began"])


def render_from_chat(info: dict) -> str:
    """``pcs trace from-chat``: one line."""
    return (f"wrote {format_counted(info['requests'], 'request')}, {format_counted(info['prompt_tokens'], 'prompt token')} "
            f"(token JSONL, template {info['template']}) to {shown_relative_path(info['path'])}")


def render_transform(info: dict) -> str:
    """``pcs trace transform``: what was applied and the shape before and after, then the read's notes
    (``info["notes"]``: synthetic reuse, bad lines skipped, :func:`pcs.cli.common.with_trace_notes`)."""
    keys = [("requests", "requests"), ("conversations", "conversations"), ("block accesses", "block_accesses"),
            ("distinct blocks", "distinct_blocks"), ("time span (s)", "time_span_s"),
            ("single-sequence hit ratio", "single_sequence_hit_ratio"),
            ("prompt tokens under shared prefixes", "shared_prefix_token_share"),
            ("prefix tree branching nodes", "prefix_tree_branching_nodes")]
    rows = []
    for label, k in keys:
        b, a = info["before"].get(k), info["after"].get(k)
        fmt = format_percent if "ratio" in k or "share" in k else number
        rows.append((label, fmt(b), fmt(a)))
    title = f"{shown_relative_path(info['path'])} <- {shown_relative_path(info['source'])} ({info['block_size']}-token blocks)"
    return render_table(["", "before", "after"], rows, title=title,
                        notes=[f"applied: {'; '.join(info['applied']) or 'nothing'}", *info.get("notes", ())])


def render_reblock(rows: list[dict], title: str, notes: list[str]) -> str:
    """The re-blocking interval: one row per bound with its hit ratios."""
    body = [(r["bound"], f"{r['block_size']:,}", format_percent(r["hit_ratio"]),
             format_percent(r["single_sequence_hit_ratio"])) for r in rows]
    return render_table(["bound", "block size", "hit ratio", "single-sequence"], body, title=title, notes=notes)
