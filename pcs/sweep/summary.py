"""``pcs sweep summarize``: the best replay points per metric and the Pareto front against tier bytes.

Only replay points are summarised (their rows carry ``hit_ratio``, the
envelope's TTFT and wait percentiles and every tier's ``capacity_bytes``);
points of other kinds are counted and left out.

The Pareto front: the objective (``hit_ratio``, higher is better, or
``envelope.ttft_p99_s``, lower is better) against the capacity bytes of every
tier (``tiers.<name>.capacity_bytes``: the GPU tier, then host DRAM and any
further tier; a point without a tier has 0 bytes there). A point is on the
front when no other point is at least as good on the objective while using
no more bytes on every tier, and strictly better in one of them. Points
without an objective value (TTFT is null without requests) are left out.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from pcs.errors import UserError
from pcs.sweep.result import SweepBest, SweepFrontPoint, SweepSummary
from pcs.sweep.store import read_results

__all__ = ["summarize", "pareto_front", "METRICS", "OBJECTIVES"]

#: (column, best end) of the best-point table, in display order
METRICS: tuple[tuple[str, str], ...] = (("hit_ratio", "max"), ("envelope.ttft_p50_s", "min"),
                                        ("envelope.ttft_p99_s", "min"), ("envelope.wait_p99_s", "min"))
#: ``--objective`` name -> (column, best end)
OBJECTIVES: dict[str, tuple[str, str]] = {"hit-ratio": ("hit_ratio", "max"),
                                          "ttft-p99": ("envelope.ttft_p99_s", "min")}
_CAPACITY = re.compile(r"^tiers\.(.+)\.capacity_bytes$")
_CHUNK = 1024


def pareto_front(objective: np.ndarray, costs: np.ndarray) -> np.ndarray:
    """Which points no other point dominates, lower objective and lower costs being better.

    Args:
        objective: float64, shape (n,) (negate a maximised objective first).
        costs: int64 or float64, shape (n, m).
    Returns:
        bool, shape (n,): True on the front. Equal points are all on it.
    """
    n = objective.shape[0]
    keep = np.ones(n, dtype=bool)
    for lo in range(0, n, _CHUNK):
        o = objective[lo:lo + _CHUNK, None]                     # (k, 1): the points tested
        c = costs[lo:lo + _CHUNK, None, :]                      # (k, 1, m)
        no_worse = (objective[None, :] <= o) & np.all(costs[None, :, :] <= c, axis=2)
        better = (objective[None, :] < o) | np.any(costs[None, :, :] < c, axis=2)
        keep[lo:lo + _CHUNK] = ~np.any(no_worse & better, axis=1)
    return keep


def _varying(rows: list[dict[str, Any]], columns: list[str]) -> list[str]:
    """The option columns with more than one value across ``rows``."""
    return [c for c in columns if c.startswith("option.") and len({repr(r.get(c)) for r in rows}) > 1]


def _options(row: dict[str, Any], varying: list[str]) -> dict[str, Any]:
    return {c[len("option."):]: row.get(c) for c in varying}


def _best(rows, metric: str, direction: str, total: np.ndarray, varying: list[str]) -> SweepBest | None:
    have = [i for i, r in enumerate(rows) if r.get(metric) is not None]
    if not have:
        return None
    sign = -1.0 if direction == "max" else 1.0
    i = min(have, key=lambda j: (sign * rows[j][metric], int(total[j]), rows[j]["point_id"]))
    return SweepBest(metric, direction, float(rows[i][metric]), rows[i]["point_id"], _options(rows[i], varying))


def summarize(out: str | Path, objective: str = "hit-ratio") -> SweepSummary:
    """Best replay points per metric and the Pareto front of a results directory.

    Args:
        out: the results directory of ``pcs sweep``.
        objective: a key of :data:`OBJECTIVES`.
    Returns:
        :class:`pcs.sweep.result.SweepSummary` (an empty directory gives no points).
    Raises:
        ValueError: an unknown objective; rows that do not fit together.
        FileNotFoundError: ``out`` is not a directory.
    """
    if objective not in OBJECTIVES:
        raise UserError(f"unknown objective {objective!r}; valid: {', '.join(OBJECTIVES)}")
    table = read_results(out)
    column, direction = OBJECTIVES[objective]
    all_rows = table.to_pylist()
    rows = [r for r in all_rows if r.get("kind") == "replay"]
    tiers = tuple(m.group(1) for c in table.column_names if (m := _CAPACITY.match(c)))
    costs = np.array([[r.get(f"tiers.{t}.capacity_bytes") or 0 for t in tiers] for r in rows],
                     dtype=np.int64).reshape(len(rows), len(tiers))
    total = costs.sum(axis=1)
    varying = _varying(rows, table.column_names)
    best = tuple(b for m, d in METRICS if (b := _best(rows, m, d, total, varying)) is not None)
    idx = [i for i, r in enumerate(rows) if r.get(column) is not None]
    obj = np.array([rows[i][column] for i in idx], dtype=np.float64)
    on = pareto_front(-obj if direction == "max" else obj, costs[idx]) if idx else np.zeros(0, bool)
    front = sorted((i for i, keep in zip(idx, on) if keep),
                   key=lambda i: (int(total[i]), -rows[i][column] if direction == "max" else rows[i][column],
                                  rows[i]["point_id"]))
    points = tuple(SweepFrontPoint(rows[i]["point_id"], float(rows[i][column]),
                                   {t: int(c) for t, c in zip(tiers, costs[i])}, _options(rows[i], varying),
                                   rows[i].get("hit_ratio"), rows[i].get("single_sequence_hit_ratio"))
                   for i in front)
    lens_id, lens = _lens(rows, best)
    return SweepSummary(str(out), len(all_rows), len(rows), column, direction, tiers, best, points, lens, lens_id)


def _lens(rows: list[dict[str, Any]], best: tuple[SweepBest, ...]) -> tuple[str | None, dict[str, Any] | None]:
    """(point id, payload lens) of the best hit-ratio point: its ``payload_lens.*`` columns (pairs stored as JSON
    text, :func:`pcs.sweep.worker.flatten`) as pcs replay's ``payload_lens`` object (:class:`pcs.engine.result.PayloadLens`'s keys); (None, None) without one."""
    pid = next((b.point_id for b in best if b.metric == "hit_ratio"), None)
    row = next((r for r in rows if r["point_id"] == pid), None)
    if row is None:
        return None, None
    lens = {k[len("payload_lens."):]: json.loads(v) if isinstance(v, str) and v.startswith("[") else v
            for k, v in row.items() if k.startswith("payload_lens.")}    # a list is a JSON text cell (flatten)
    return (pid, lens) if lens else (None, None)
