"""The hit-rate curve and the oracle a replay page draws, from the replay's trace.

A replay summary does not carry a curve (computing one costs more than the
page may add), so the page of a replay computes what it draws here, from
the same trace and block rules (docs/semantics.md §14):

- the LRU curve at every capacity from one pass of stack depths
  (:func:`pcs.curves.api.lru_curve`), drawn as :func:`lru_line` (the line the
  matplotlib figure of ``pcs curve --plot FILE`` draws too), plus the default
  grid and the run's capacities as rows, and the knees;
- the oracle: Belady (offline-optimal eviction, :mod:`pcs.curves.belady`)
  with one tier of the run's total capacity in blocks, sequential -- an upper
  bound for any eviction policy with that many blocks (docs/semantics.md §14).
  Belady runs once, at that capacity only (it is one pure-Python pass per
  capacity; a ``pcs curve`` JSON given to ``pcs report`` adds its Belady line).

Cost on the Mooncake conversation trace (12,031 requests, 276,491 block
accesses): read 0.18 s, LRU pass 0.02 s, Belady plan 0.04 s and one Belady
pass 0.41 s of CPU (benchmarks/bench_html.py prints the whole page's cost).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pcs.blocks import BlockRules

__all__ = ["DENSE_POINTS", "curve_line", "exact_capacities", "lru_line", "replay_curve"]

#: Geometric capacities on the drawn LRU line, from 1 block to :data:`LINE_REACH` x the largest useful or run
#: capacity (:func:`lru_line`).
DENSE_POINTS = 400
#: How far past the largest capacity of interest the LRU line runs (the curve is flat there: the ceiling).
LINE_REACH = 1.5


def lru_line(lru: Any, top_blocks: int, exact: Any = ()) -> list[list]:
    """The LRU line every renderer draws (the page's charts, ``pcs curve --plot FILE``'s matplotlib figure):
    ``[[capacity_blocks, lru_hit_ratio], ...]`` at :data:`DENSE_POINTS` geometric capacities from 1 block to
    :data:`LINE_REACH` x ``top_blocks`` (rounded to whole blocks, each once), plus the ``exact`` capacities (the
    rows' and the knees' blocks): the curve is a step function of the capacity, so a knee or row drawn at its
    own capacity sits on the line, not between two samples of it.

    Args:
        lru: a :class:`pcs.curves.api.LruCurve` (``hit_ratio(capacities)``).
        top_blocks: the largest capacity of interest (blocks, >= 1).
        exact: capacities (blocks) the line must pass through; those < 1 are left out.
    Returns:
        the points in increasing capacity, hit ratios as floats in [0, 1]; an undefined (NaN) ratio is left out,
        so a trace with no prompt tokens (every ratio 0/0, docs/semantics.md §12) has none: nothing to draw.
    """
    caps = np.rint(np.geomspace(1, max(1, top_blocks) * LINE_REACH, DENSE_POINTS)).astype(np.int64)
    extra = np.asarray([int(c) for c in exact if c is not None and int(c) >= 1], dtype=np.int64)
    caps = np.unique(np.concatenate([caps, extra]))
    return [[int(c), float(h)] for c, h in zip(caps, lru.hit_ratio(caps)) if not np.isnan(h)]


def exact_capacities(curve: dict) -> list[int]:
    """The capacities (blocks) a ``pcs curve`` payload marks: its rows' and its knees'."""
    knees = [k.get("capacity_blocks") for k in (curve.get("knee") or {}).values()]
    return [r["capacity_blocks"] for r in curve.get("rows") or ()] + [k for k in knees if k]


def curve_line(result: Any) -> list[list]:
    """:func:`lru_line` of a :class:`pcs.curves.api.CurveResult` (``pcs curve``): up to past its largest useful or
    row capacity, through its rows and knees -- the line of its page and of its matplotlib figure alike."""
    top = max(result.lru.max_useful_capacity_blocks, max((r.capacity_blocks for r in result.rows), default=1), 1)
    return lru_line(result.lru, top, exact_capacities(result.to_dict()))


def replay_curve(trace: Any, s: dict, *, oracle: bool = True) -> tuple[dict | None, dict | None]:
    """The curve payload and the oracle of a replay summary ``s`` on ``trace``.

    Args:
        trace: what the replay read: a path, or an opened :class:`pcs.trace.Trace`
            (re-blocked traces included).
        s: the replay's JSON summary (``block_size``, ``cache_partial_blocks``,
            ``recompute_last_token``, ``tiers`` with ``capacity_blocks`` and
            ``bytes_per_block``).
        oracle: compute Belady at the run's total capacity.
    Returns:
        ``(curve, oracle)``: ``curve`` is a ``pcs curve`` payload (``rows``,
        ``knee``, ``ceiling_hit_ratio``, ``block_size``, ``trace``) plus
        ``lru_dense`` ([[capacity_blocks, lru_hit_ratio], ...]) and
        ``bytes_per_block`` (the GPU tier's, per TP group); ``oracle`` is
        ``{"capacity_blocks", "hit_ratio"}`` (``hit_ratio`` None when the trace has no prompt tokens: 0/0) or None. A hybrid model's run (``s["hybrid"]``) gives ``(None, None)``:
        the one-pass curve and Belady apply the all-full-attention rules and its tiers count pages, not blocks, so
        they would draw another model's curve with the run's pages as blocks (docs/hybrid.md "Not on hybrid
        models", as ``pcs curve --model`` refuses one and ``pcs compare --curve-capacities`` leaves them out).
    Raises:
        UserError / InputError: bad trace content; PathError: a trace path missing, a directory or unreadable.
    """
    if s.get("hybrid"):
        return None, None
    from pcs.curves.api import DEFAULT_POINTS, capacity_grid, curve, load_accesses, lru_curve

    rules = BlockRules(cache_partial_blocks=s["cache_partial_blocks"], recompute_last_token=s["recompute_last_token"])
    flat, _ = load_accesses(trace, s["block_size"] if isinstance(trace, str) else None, rules)
    lru = lru_curve(flat)
    caps = [t["capacity_blocks"] for t in s["tiers"]]
    total = sum(caps)
    top = max(lru.max_useful_capacity_blocks, total, 1)
    grid = sorted(set(capacity_grid(lru.max_useful_capacity_blocks, DEFAULT_POINTS)) | {caps[0], total})
    res = curve(flat, capacities=grid, belady=False).to_dict()
    res.update(trace=s["trace"], lru_dense=lru_line(lru, top, exact_capacities(res)),
               bytes_per_block=s["tiers"][0]["bytes_per_block"])
    if not oracle:
        return res, None
    from pcs.curves.belady import belady_hits, plan_belady

    hits = belady_hits(plan_belady(flat), total).hit_tokens
    ratio = hits / flat.prompt_tokens if flat.prompt_tokens else None     # 0/0: undefined (semantics §12)
    for row in res["rows"]:
        if row["capacity_blocks"] == total:
            row["belady_hit_ratio"] = ratio
    return res, {"capacity_blocks": total, "hit_ratio": None if ratio is None else float(ratio)}
