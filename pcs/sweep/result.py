"""Typed results of ``pcs sweep``: the run (:class:`SweepRun`) and the summary (:class:`SweepSummary`).

``to_dict()`` gives the JSON of ``pcs sweep --format json`` and ``pcs sweep
summarize --format json`` (keys listed in docs/sweep.md).
"""
from __future__ import annotations

from typing import Any

from pcs.schema import field, result

__all__ = ["SweepRun", "SweepBest", "SweepFrontPoint", "SweepSummary"]


@result
class SweepRun:
    """What one ``pcs sweep PLAN -o OUT`` did."""

    plan: str = field("-", "the plan file")
    out: str = field("-", "the results directory (the Parquet dataset)")
    backend: str = field("-", "where the points ran: in-process, N processes, or ray")
    points: int = field("count", "points of the plan")
    skipped_points: int = field("count", "points already in OUT (not run again; --force reruns them); not a row's "
                                         "skipped, the bad trace lines its read skipped")
    ran: int = field("count", "points run and written now")
    failed: int = field("count", "points that raised (not written; a rerun tries them again)")
    errors: tuple[str, ...] = field("-", "one 'PLAN:LINE: point ID (OPTIONS): message' per failed point (the line "
                                         "of the value it refuses; PLAN alone when the error does not tell)")
    tracebacks: tuple[str, ...] = field("-", "tracebacks of the failures that are bugs in pcs (not the input's)",
                                        json=False, default=())


@result
class SweepBest:
    """The best replay point for one metric."""

    metric: str = field("-", "the dataset column (hit_ratio, envelope.ttft_p99_s ...)")
    direction: str = field("-", "max or min: which end is best")
    value: float = field("-", "the best value, in the column's unit (ratio for hit ratios, s for times)")
    point_id: str = field("-", "the point; among points tied on the value (equal floats): the least bytes over "
                                "all tiers, then the smaller id -- one pick whatever order the rows were written in")
    options: dict[str, Any] = field("-", "the point's values of the options that vary across the points")
    tied: int = field("count", "other replay points with exactly the same value (0: no tie)", default=0)


@result
class SweepFrontPoint:
    """A point on the Pareto front: no other point is as good on the objective with no more bytes on every tier."""

    point_id: str = field("-", "the point")
    objective: float = field("-", "its objective value (ratio for hit_ratio, s for TTFT)")
    capacity_bytes: dict[str, int] = field("bytes", "capacity of each tier by name (0 for a tier the point lacks)")
    options: dict[str, Any] = field("-", "the point's values of the options that vary across the points")
    hit_ratio: float | None = field("ratio", "its real hit ratio (token-weighted): what this finite cache reaches",
                                    default=None)
    single_sequence_hit_ratio: float | None = field(
        "ratio", "its single-sequence hit ratio: infinite cache, same block rules (lesson 1, docs/semantics.md §12)",
        default=None)


@result
class SweepSummary:
    """Best points per metric and the Pareto front of the replay points in a results directory."""

    out: str = field("-", "the results directory")
    points: int = field("count", "points in the directory (every kind)")
    replay_points: int = field("count", "replay points (the ones summarised)")
    objective: str = field("-", "the front's objective column: hit_ratio (max) or envelope.ttft_p99_s (min)")
    direction: str = field("-", "max or min")
    tiers: tuple[str, ...] = field("-", "the tiers whose capacity bytes are the front's costs, GPU first")
    best: tuple[SweepBest, ...] = field("-", "one entry per metric with a value in some point")
    front: tuple[SweepFrontPoint, ...] = field("-", "the Pareto front, least total bytes first")
    payload_lens: dict[str, Any] | None = field(
        "-", "the payload lens of the best hit-ratio point (lesson 2: its KV dtype beside another, hits held "
             "fixed), keys as pcs replay's payload_lens; null without replay points", default=None)
    payload_lens_point_id: str | None = field("-", "the point whose payload_lens this is", default=None)
    over_deployment: tuple[str, ...] = field(
        "-", "replay points whose GPU tier is larger than the deployment leaves for KV (tiers.gpu.capacity_bytes > "
             "deployment.gpu_tier_bytes: the GPUs cannot hold that run); marked in the text's best and front rows",
        default=())
