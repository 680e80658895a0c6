"""Plain-text report of a sweep (``pcs sweep``, ``pcs sweep summarize``): the run line, best points, the front."""
from __future__ import annotations

from typing import Any

from pcs.report.replay import CEILING_LABEL, CEILING_MEANING, REAL_LABEL, WHOLE_BLOCKS_NOTE, lens_text
from pcs.report.table import render_table
from pcs.sweep.result import SweepRun, SweepSummary
from pcs.units import format_bytes, format_counted, format_duration, format_percent

__all__ = ["render_summary", "render_run"]

#: column -> (label, formatter of its values)
_METRIC_LABELS = {"hit_ratio": ("hit ratio", format_percent), "envelope.ttft_p50_s": ("TTFT p50", format_duration),
                  "envelope.ttft_p99_s": ("TTFT p99", format_duration),
                  "envelope.wait_p99_s": ("wait p99", format_duration)}


def _opts(options: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in options.items()) or "-"


def render_summary(s: SweepSummary) -> str:
    """The best-point table and the Pareto front of a :class:`SweepSummary`."""
    if not s.replay_points:
        return f"pcs sweep summarize: {s.out}: {format_counted(s.points, 'point')}, none of kind replay (nothing to summarise)"
    label, fmt = _METRIC_LABELS[s.objective]
    best = render_table(["metric", "best", "point", "options"],
                        [[_METRIC_LABELS[b.metric][0], _METRIC_LABELS[b.metric][1](b.value) + _tie(b.tied),
                          b.point_id + _over(s, b.point_id), _opts(b.options)] for b in s.best],
                        title=f"Best points: {s.out} ({format_counted(s.replay_points, 'replay point')} of {s.points})",
                        notes=([TIE_NOTE] if any(b.tied for b in s.best) else []) + _over_note(s), text_columns=(3,))
    real = [] if s.objective == "hit_ratio" else [REAL_LABEL]
    front = render_table([label, *real, CEILING_LABEL, *s.tiers, "point", "options"],
                         [[fmt(p.objective), *([_pct(p.hit_ratio)] if real else []), _pct(p.single_sequence_hit_ratio),
                           *(format_bytes(p.capacity_bytes[t]) for t in s.tiers), p.point_id + _over(s, p.point_id),
                           _opts(p.options)] for p in s.front],
                         title=f"Pareto front: {label} ({s.direction}) against {' and '.join(s.tiers)} bytes "
                               f"({len(s.front)} of {format_counted(s.replay_points, 'point')})",
                         notes=[FRONT_NOTE + f"; options: those that vary; single-sequence = {CEILING_MEANING}",
                                *_over_note(s),
                                f"tier bytes: {WHOLE_BLOCKS_NOTE}"], text_columns=(len(real) + len(s.tiers) + 3,))
    lens = "" if s.payload_lens is None else "\n\n" + lens_text(
        {"payload_lens": s.payload_lens}, f"best hit-ratio point {s.payload_lens_point_id}")
    return f"{best}\n\n{front}{lens}"


#: The mark of a point whose GPU tier is larger than its deployment leaves for KV (SweepSummary.over_deployment).
OVER_MARK = " (!)"


def _over(s: SweepSummary, point_id: str) -> str:
    return OVER_MARK if point_id in s.over_deployment else ""


def _over_note(s: SweepSummary) -> list[str]:
    if not s.over_deployment:
        return []
    return [f"(!): {len(s.over_deployment):,} of {format_counted(s.replay_points, 'point')} {'gives' if len(s.over_deployment) == 1 else 'give'} a GPU tier larger than their "
            "deployment leaves for KV (the GPUs cannot hold it; each point's notes give the size it leaves): set "
            "tier.gpu = \"auto\" to size it from each deployment (docs/sweep.md)"]


#: Who is on the Pareto front (pcs.sweep.summary.pareto_front, one rule): ties are all on it.
FRONT_NOTE = ("on the front: no other point is at least as good with no more bytes on every tier and strictly "
              "better in one of them; points equal on both (a tie) are all listed")


#: How a best point is picked among points tied on the metric (pcs.sweep.summary._keep_best, one rule).
TIE_NOTE = ("tied: other points have exactly the same value; the one shown has the least bytes over all tiers, "
            "then the smaller point id")


def _tie(tied: int) -> str:
    """`` (tied with 1 other)`` / `` (tied with N others)`` after a best value; nothing without a tie."""
    return "" if not tied else f" (tied with {tied} other{'' if tied == 1 else 's'})"


def _pct(x: float | None) -> str:
    return "-" if x is None else format_percent(x)


def render_run(r: SweepRun, summary: SweepSummary | None) -> str:
    """The run line, then the summary of the whole results directory."""
    head = (f"pcs sweep: {r.plan} -> {r.out}: {format_counted(r.points, 'point')}, {r.ran} run ({r.backend}), "
            f"{r.skipped_points} already done, {r.failed} failed")
    return head if summary is None else f"{head}\n\n{render_summary(summary)}"
