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

from pcs._heldimport import held_import
from pcs.errors import UnknownNameError, UserError, shown_repr
from pcs.sweep.result import SweepBest, SweepFrontPoint, SweepSummary
from pcs.sweep.store import misplaced_row, point_file_problem, unreadable_point

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


class _Varying:
    """Which ``option.*`` columns take more than one value over the replay rows, streamed: per column the first
    two distinct values (as ``repr``) and how many replay rows had it (a row without it counts as None), in the
    order the columns first appear in any file (as :func:`pcs.sweep.store.read_results` unifies them)."""

    def __init__(self) -> None:
        self.values: dict[str, set[str]] = {}
        self.count: dict[str, int] = {}
        self.rows = 0

    def add_columns(self, names: list[str]) -> None:
        for c in names:
            if c.startswith("option.") and c not in self.values:
                self.values[c], self.count[c] = set(), 0

    def add(self, row: dict[str, Any]) -> None:
        self.rows += 1
        for c, v in row.items():
            if c in self.values:
                self.count[c] += 1
                if len(self.values[c]) < 2:
                    self.values[c].add(repr(v))

    def columns(self) -> list[str]:
        none = {repr(None)}
        return [c for c, vals in self.values.items() if len(vals | (none if self.count[c] < self.rows else set())) > 1]


def _options(row: dict[str, Any], varying: list[str]) -> dict[str, Any]:
    return {c[len("option."):]: row.get(c) for c in varying}


def _costs(row: dict[str, Any]) -> dict[str, int]:
    return {m.group(1): int(v or 0) for c, v in row.items() if (m := _CAPACITY.match(c))}


class _Front:
    """The Pareto front kept while the rows stream by: rows wait in a batch of at most :data:`_CHUNK`; each full
    batch and the end fold the kept rows and the batch through :func:`pareto_front` (the one dominance rule) and
    keep its front. Dominance is transitive, so this is the front over all rows (equal points all kept); memory
    is the front plus one batch. A missing tier costs 0 bytes."""

    def __init__(self, sign: float) -> None:
        self.sign, self.kept, self.pending = sign, [], []

    def add(self, row: dict[str, Any], value: float) -> None:
        self.pending.append(((self.sign * value, _costs(row)), row))
        if len(self.pending) >= _CHUNK:
            self._fold()

    def front(self) -> list:
        """[((signed objective, {tier: bytes}), row)] of the front, in no set order."""
        self._fold()
        return self.kept

    def _fold(self) -> None:
        rows, self.pending = self.kept + self.pending, []
        tiers = sorted(set().union(*(k[0][1] for k in rows))) if rows else []
        obj = np.array([k[0][0] for k in rows], dtype=np.float64)
        costs = np.array([[k[0][1].get(t, 0) for t in tiers] for k in rows], dtype=np.int64).reshape(len(rows),
                                                                                                    len(tiers))
        self.kept = [k for k, on in zip(rows, pareto_front(obj, costs)) if on]


def _stream_rows(out: str | Path):
    """(column names of each file, its rows) for every point of ``out`` in point-id order, reading only the
    columns a summary uses (never ``result_json``): memory stays that of 64 files' few columns whatever the
    number of points (reading the directory whole took ~0.16 MB per point, benchmarks/bench_sweep_summary.py)."""
    pq = held_import("pyarrow.parquet")
    from concurrent.futures import ThreadPoolExecutor

    from pcs.outfile import arrow_file

    from pcs.trace.pathcheck import check_input_dir

    check_input_dir(out, "out")        # the path as given (Path('') is '.')
    out = Path(out)
    want = {"point_id", "kind", "single_sequence_hit_ratio", "deployment.gpu_tier_bytes", *(m for m, _ in METRICS)}

    def read(f: Path) -> tuple[list[str], list[dict[str, Any]]]:
        try:
            with arrow_file(f) as source:      # by its bytes: the folder's name need not be UTF-8
                pf = pq.ParquetFile(source)
                names = pf.schema_arrow.names
                problem = point_file_problem(f, names, pf.metadata.num_rows)
                if problem is None:
                    cols = [c for c in names
                            if c in want or c.startswith(("option.", "payload_lens.")) or _CAPACITY.match(c)]
                    rows = pf.read(columns=cols, use_threads=False).to_pylist()
                    problem = misplaced_row(f, rows[0].get("point_id"))
                    if problem is None:
                        return names, rows
        except (OSError, ValueError) as exc:   # ArrowInvalid is a ValueError
            problem = f"not a readable Parquet file ({shown_repr(str(exc).strip().splitlines()[0] if str(exc).strip() else exc)})"
        raise unreadable_point(f, problem)

    files = sorted(out.glob("*.parquet"))
    with ThreadPoolExecutor(max_workers=min(8, max(1, len(files)))) as pool:   # pyarrow releases the GIL
        for lo in range(0, len(files), 64):                                    # 64 files in flight at most
            yield from pool.map(read, files[lo:lo + 64])


def summarize(out: str | Path, objective: str = "hit-ratio") -> SweepSummary:
    """Best replay points per metric and the Pareto front of a results directory, streamed file by file.

    Args:
        out: the results directory of ``pcs sweep``.
        objective: a key of :data:`OBJECTIVES`.
    Returns:
        :class:`pcs.sweep.result.SweepSummary` (an empty directory gives no points).
    Raises:
        PathError: ``out`` is missing, not a directory or not readable.
        UserError: an unknown objective; a ``*.parquet`` file in ``out`` that is not a readable point file (named: truncated, garbage,
            another table).
    """
    if objective not in OBJECTIVES:
        raise UnknownNameError("objective", objective, OBJECTIVES)
    column, direction = OBJECTIVES[objective]
    n_all, tiers, varying, front = 0, {}, _Varying(), _Front(-1.0 if direction == "max" else 1.0)
    best: dict[str, tuple] = {}
    over: list[str] = []
    for names, file_rows in _stream_rows(out):
        varying.add_columns(names)
        tiers.update((m.group(1), None) for c in names if (m := _CAPACITY.match(c)))
        for r in file_rows:
            n_all += 1
            if r.get("kind") != "replay":
                continue
            varying.add(r)
            if _over_deployment(r):
                over.append(r["point_id"])
            _keep_best(best, r)
            if r.get(column) is not None:
                front.add(r, r[column])
    cols = varying.columns()
    bests = tuple(SweepBest(m, d, float(best[m][1][m]), best[m][1]["point_id"], _options(best[m][1], cols),
                            best[m][2]) for m, d in METRICS if m in best)
    tier_names = tuple(tiers)
    kept = sorted(front.front(), key=lambda k: (sum(k[0][1].values()), k[0][0], k[1]["point_id"]))
    points = tuple(SweepFrontPoint(r["point_id"], float(r[column]), {t: int(c.get(t, 0)) for t in tier_names},
                                   _options(r, cols), r.get("hit_ratio"), r.get("single_sequence_hit_ratio"))
                   for (_, c), r in kept)
    lens_id, lens = _lens(best.get("hit_ratio", (None, None, 0))[1])
    return SweepSummary(str(out), n_all, varying.rows, column, direction, tier_names, bests, points, lens, lens_id,
                        tuple(sorted(over)))


def _over_deployment(r: dict[str, Any]) -> bool:
    """A point whose GPU tier (given with ``tier.gpu``) is larger than its deployment leaves for KV (the replay's
    note says so: docs/models.md); the GPUs cannot hold that run."""
    have, leaves = r.get("tiers.gpu.capacity_bytes"), r.get("deployment.gpu_tier_bytes")
    return have is not None and leaves is not None and have > leaves


def _keep_best(best: dict[str, tuple], r: dict[str, Any]) -> None:
    """Per metric ``(key, row, tied)``: the best row so far -- its value at the best end, then the fewest tier
    bytes, then the point id, so the pick does not hang on the order the rows are read -- and how many other rows
    have exactly its value (a tie the report names)."""
    total = sum(_costs(r).values())
    for m, d in METRICS:
        if r.get(m) is not None:
            key = ((-1.0 if d == "max" else 1.0) * r[m], total, r["point_id"])
            if m not in best or key[0] < best[m][0][0]:
                best[m] = (key, r, 0)
            elif key[0] == best[m][0][0]:
                best[m] = (min(key, best[m][0]), r if key < best[m][0] else best[m][1], best[m][2] + 1)


def _lens(row: dict[str, Any] | None) -> tuple[str | None, dict[str, Any] | None]:
    """(point id, payload lens) of the best hit-ratio point ``row``: its ``payload_lens.*`` columns (pairs stored
    as JSON text, :func:`pcs.sweep.worker.flatten`) as pcs replay's ``payload_lens`` object
    (:class:`pcs.engine.result.PayloadLens`'s keys); (None, None) without one."""
    if row is None:
        return None, None
    lens = {k[len("payload_lens."):]: json.loads(v) if isinstance(v, str) and v.startswith("[") else v
            for k, v in row.items() if k.startswith("payload_lens.")}    # a list is a JSON text cell (flatten)
    return (row["point_id"], lens) if lens else (None, None)
