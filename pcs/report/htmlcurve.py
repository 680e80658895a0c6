"""The hit-rate curve and the oracle a replay page draws, from the replay's trace.

A replay summary does not carry a curve (computing one costs more than the
page may add), so the page of a replay computes what it draws here, from
the same trace and block rules (docs/semantics.md §14):

- the LRU curve at every capacity from one pass of stack depths
  (:func:`pcs.curves.api.lru_curve`), sampled at :data:`DENSE_POINTS`
  capacities for the line, plus the default grid and the run's capacities
  as rows, and the knees;
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

__all__ = ["DENSE_POINTS", "replay_curve"]

#: Capacities on the drawn LRU line (geometric from 1 block to past the largest useful or run capacity).
DENSE_POINTS = 160


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
        ``{"capacity_blocks", "hit_ratio"}`` or None. A hybrid model's run (``s["hybrid"]``) gives ``(None, None)``:
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
    dense = sorted({int(c) for c in np.rint(np.geomspace(1, top * 1.25, DENSE_POINTS))})
    res.update(trace=s["trace"], lru_dense=[[c, float(h)] for c, h in zip(dense, lru.hit_ratio(dense))],
               bytes_per_block=s["tiers"][0]["bytes_per_block"])
    if not oracle:
        return res, None
    from pcs.curves.belady import belady_hits, plan_belady

    hits = belady_hits(plan_belady(flat), total).hit_tokens
    ratio = hits / flat.prompt_tokens if flat.prompt_tokens else 0.0
    for row in res["rows"]:
        if row["capacity_blocks"] == total:
            row["belady_hit_ratio"] = ratio
    return res, {"capacity_blocks": total, "hit_ratio": float(ratio)}
