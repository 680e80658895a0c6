"""``trace_stats`` in one streaming pass of the compiled kernel (pcs/trace/_statscan.c).

The kernel reads each request batch once and keeps, per distinct block hash, a
36 B record (previous access, first parent, children, conversation mark); the
caller keeps four per-request columns. Everything :func:`pcs.trace.stats.trace_stats`
reports comes from it (docs/semantics.md §1, §2, §12, §14):

- previous accesses, reuse distances (LRU stack distance minus one, Mattson
  et al. 1970) counted per distance, reuse times as runs of (request,
  previous request, count);
- the single-sequence walk of :func:`pcs.blocks.single_sequence_hits`;
- shared-prefix tokens, the prefix tree of :func:`pcs.trace.tree.prefix_tree_stats`
  and the inferred conversations of :func:`pcs.trace.tree.inferred_conversations_reference`.

Percentiles come from the counts through :func:`linear_percentile`, the
arithmetic of ``numpy.percentile``'s default (linear) method on the sorted
values, so the JSON is byte-identical to the numpy reference
(tests/trace/test_stats_kernel.py diffs the two on the samples, hypothesis
traces and the Mooncake trace).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from pcs import _native
from pcs.blocks import BlockRules, SingleSequenceResult
from pcs.errors import PickledAsIs, UserError

__all__ = ["linear_percentile", "scan_stats", "TooLarge"]


class TooLarge(PickledAsIs, ValueError):
    """More than 2**31 - 1 block accesses or requests: the kernel's 32-bit records cannot hold them."""


def linear_percentile(values: np.ndarray, counts: np.ndarray, q: float) -> float:
    """``numpy.percentile(np.repeat(values, counts), q)`` without the repeated array.

    Args:
        values: shape (k,), sorted ascending, distinct; int64 or float64.
        counts: int64 (k,), > 0: occurrences of each value.
        q: percentile in [0, 100].
    Returns:
        float: numpy's linear method (its default, Hyndman & Fan 1996 type 7):
        virtual index ``(n - 1) * q / 100``, the two order statistics around it,
        ``a + (b - a) * g`` or ``b - (b - a) * (1 - g)`` for ``g >= 0.5``, in
        numpy's order of operations.
    Raises:
        UserError: no values.
    """
    n = int(counts.sum())
    if n == 0:
        raise UserError("no values")
    v = (n - 1) * float(np.true_divide(q, 100))
    cum = np.cumsum(counts)
    if v >= n - 1:
        return float(values[-1])
    lo = math.floor(v)
    i = int(np.searchsorted(cum, lo, side="right"))
    j = int(np.searchsorted(cum, lo + 1, side="right"))
    a, b = values[i].item(), values[j].item()
    g = v - lo
    diff = b - a
    return float(b - diff * (1 - g)) if g >= 0.5 else float(a + diff * g)


def _rule_columns(prompt: np.ndarray, num: np.ndarray, bs: int, rules: BlockRules) -> tuple:
    """(n cacheable, hit cap, full blocks), int64 (R,): :meth:`BlockRules.columns` and the full blocks."""
    n, cap = rules.columns(prompt, num, bs)
    return n, cap, np.minimum(prompt // bs, num)


def _feed(state, ext, b, rules: BlockRules) -> tuple[np.ndarray, np.ndarray]:
    """Run one batch through the kernel; (k per request, runs int64 (3, K))."""
    prompt = np.ascontiguousarray(b.prompt_tokens, dtype=np.int64)
    offs = np.asarray(b.block_offsets, dtype=np.int64)
    offs = np.ascontiguousarray(offs - offs[0])
    num = np.diff(offs)
    n, cap, full = (np.ascontiguousarray(c, dtype=np.int64) for c in _rule_columns(prompt, num, int(b.block_size), rules))
    keys = np.ascontiguousarray(b.block_hashes, dtype=np.uint64)
    k = np.empty(prompt.shape[0], np.int64)
    runs = np.empty((3, max(1, keys.shape[0])), np.int64)
    rc, nruns = ext.stats_feed(state, keys, offs, prompt, n, cap, full, int(b.block_size), k, runs[0], runs[1],
                               runs[2])
    if rc:
        raise TooLarge("more than 2**31 - 1 block accesses or requests")
    return k, runs[:, :nruns].copy()


def scan_stats(batches, rules: BlockRules = BlockRules(), expected_ids: int = 0) -> dict[str, Any]:
    """Stream ``batches`` (:class:`pcs.trace.RequestBatch`, in order) through the kernel once.

    Args:
        batches: iterable of request batches.
        rules: block rules of the single-sequence walk.
        expected_ids: a size hint for the id table (block hashes of the trace; 0 = none).
    Returns:
        dict: ``block_size``; per-request columns ``arrival_s`` float64, ``prompt_tokens``,
        ``output_tokens``, ``num_blocks`` int64 (R,); ``session_id``, ``parent_id`` (int64 (R,) or None);
        ``single`` (:class:`pcs.blocks.SingleSequenceResult`); ``accesses``, ``distinct``,
        ``reaccesses``, ``shared_tokens`` (ints); ``dist_values``, ``dist_counts`` (int64, distances in
        blocks with their counts); ``time_values`` (float64 s, sorted), ``time_counts`` (int64);
        ``turns`` (int64, requests per inferred conversation); ``tree`` (dict of ints).
    Raises:
        TooLarge: over 2**31 - 1 block accesses or requests.
        UserError: the kernel is not built; inconsistent batch columns.
    """
    ext = _native.module("statscan")
    if ext is None:
        raise UserError("the compiled pcs.trace._statscan is not built")
    state = ext.stats_new(int(expected_ids))
    cols: list[tuple] = []
    ks, runs = [], []
    bs = None
    for b in batches:
        bs = int(b.block_size)
        k, r = _feed(state, ext, b, rules)
        ks.append(k)
        runs.append(r)
        cols.append((np.asarray(b.arrival_s, np.float64), np.asarray(b.prompt_tokens, np.int64),
                     np.asarray(b.output_tokens, np.int64), np.diff(np.asarray(b.block_offsets, np.int64)),
                     b.session_id, b.parent_id))
    out = ext.stats_result(state)
    del state
    return _assemble(out, cols, ks, runs, bs)


def _optional(parts: list) -> np.ndarray | None:
    if not parts or any(p is None for p in parts):
        return None
    return np.concatenate([np.asarray(p, np.int64) for p in parts])


def _assemble(out: dict, cols: list, ks: list, runs: list, bs: int | None) -> dict[str, Any]:
    """The kernel's totals and the batches' columns as :func:`scan_stats` returns them."""
    cat = [np.concatenate([c[i] for c in cols]) if cols else np.zeros(0, dt)
           for i, dt in enumerate((np.float64, np.int64, np.int64, np.int64))]
    arrival, prompt, output, num = cat
    k = np.concatenate(ks) if ks else np.zeros(0, np.int64)
    tokens = np.minimum(k * (bs or 0), prompt)
    single = SingleSequenceResult(int(tokens.sum()), int(prompt.sum()), int(k.sum()), int((k > 0).sum()),
                                  int(prompt.shape[0]))
    dist = np.frombuffer(out["dist_counts"], dtype=np.int64)
    dv = np.flatnonzero(dist)
    r = np.concatenate(runs, axis=1) if runs else np.zeros((3, 0), np.int64)
    tv, inv = np.unique(arrival[r[0]] - arrival[r[1]], return_inverse=True)
    tc = np.bincount(inv, weights=r[2], minlength=tv.size).astype(np.int64)  # exact: counts < 2**53
    return {"block_size": bs, "arrival_s": arrival, "prompt_tokens": prompt, "output_tokens": output,
            "num_blocks": num, "session_id": _optional([c[4] for c in cols]),
            "parent_id": _optional([c[5] for c in cols]), "single": single, "accesses": out["accesses"],
            "distinct": out["distinct"], "reaccesses": out["reaccesses"], "shared_tokens": out["shared_tokens"],
            "dist_values": dv.astype(np.int64), "dist_counts": dist[dv], "time_values": tv, "time_counts": tc,
            "turns": np.frombuffer(out["turns"], dtype=np.int64).copy(), "tree": out["tree"]}
