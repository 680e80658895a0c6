"""The sequential baseline of a modeled run through a compiled hierarchy, with no Python loop per request.

The gap split (``docs/semantics.md §12``) needs the hit ratio of the same
tiers replayed sequentially: requests in trace order, each started, prefilled
and finished before the next (:class:`pcs.engine.engine.ReplayEngine`,
timing ``sequential``). When the engine-selection table places that baseline
on ``compiled-hierarchy`` (every tier ``lru``) or ``compiled-hybrid`` (a
hybrid model's cache groups, ``§3.1``), the same three calls run inside the
hierarchy's ``run_sequential``: one C call per decoded batch, the same
admissions (``pcs/cache/_lruhier.c`` ``seq_one``, ``pcs/cache/_grouphier.c``
``seq_one``). The rules per request are the engine's: the cacheable head and
the hit cap from :func:`pcs.engine.chunks.rule_columns` (§2, §4); hit tokens
``min(hits x block_size, prompt)`` (§11); a hybrid request's tokens the rules
refused ``lost x block_size`` (§12, ``hybrid_lost_tokens``).
``tests/engine/test_seqbase.py`` diffs both against the event loop.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pcs.blocks import BlockRules
from pcs.engine.chunks import rule_columns
from pcs.engine.engine import EngineResult
from pcs.engine.ledger import ReplayLedger
from pcs.trace.batches import as_batches

__all__ = ["sequential_baseline", "baseline_from_scan"]


def sequential_baseline(source: Any, hierarchy: Any, rules: BlockRules) -> EngineResult:
    """Replay ``source`` sequentially through ``hierarchy`` (a fresh compiled hierarchy).

    Args:
        source: anything :func:`pcs.trace.batches.as_batches` reads (in a replay: the decoded trace).
        hierarchy: empty tiers with ``run_sequential``: :class:`pcs.cache.native.NativeHierarchy`, or
            :class:`pcs.cache.nativegroups.NativeGroupHierarchy` (it has ``groups``; its clock follows the
            arrivals, seconds, as the event loop ticks it).
        rules: block rules of the run.
    Returns:
        :class:`EngineResult` with a ledger holding what the hit counts give: requests, prompt / hit /
        computed tokens, hit blocks, requests with a hit, block accesses and cacheable blocks (the summary
        reads a baseline's ``hit_ratio`` only); per-tier hits, misses, truncations, links and peaks stay 0.
        Its columns: none, or for cache groups ``hybrid_lost_tokens`` (int64, one per request, trace order).
    Raises:
        ValueError: as :func:`pcs.trace.batches.as_batches`; :class:`pcs.errors.PolicyError` (a ValueError) when a
            hosted Python policy raises.
    """
    L = ReplayLedger(num_tiers=len(hierarchy.tiers))
    hybrid = hasattr(hierarchy, "groups")
    lost_tokens = []
    for b in as_batches(source):
        bs = int(b.block_size)
        off = np.asarray(b.block_offsets, np.int64)
        off = off - off[0]
        prompt = np.asarray(b.prompt_tokens, np.int64)
        n, cap, _ = rule_columns(prompt, np.diff(off), np.asarray(b.output_tokens, np.int64), bs, rules)
        hits = np.empty(prompt.shape[0], np.int64)
        keys = np.ascontiguousarray(b.block_hashes, np.uint64)
        if hybrid:
            lost = np.empty(prompt.shape[0], np.int64)
            hierarchy.run_sequential(keys, off, n, cap, hits, lost, np.ascontiguousarray(b.arrival_s, np.float64))
            lost_tokens.append(lost * bs)
        else:
            hierarchy.run_sequential(keys, off, n, cap, hits)
        _count(L, prompt, hits, bs, int(off[-1]), n)
    if not hybrid:
        hierarchy.sync()    # a hosted Python policy's last queued calls (pcs/cache/_pol_py.c)
    L.computed_tokens = L.prompt_tokens - L.hit_tokens
    cols = {"hybrid_lost_tokens": np.concatenate(lost_tokens) if lost_tokens else np.zeros(0, np.int64)}
    return EngineResult(L, cols if hybrid else {})


def _count(L: ReplayLedger, prompt: np.ndarray, hits: np.ndarray, bs: int, accesses: int, n: np.ndarray) -> None:
    """Add requests with ``prompt`` tokens and ``hits`` hit blocks (int64 (R,)) to ``L``; hit tokens
    ``min(hits x block_size, prompt)`` (§11)."""
    L.num_requests += int(prompt.shape[0])
    L.prompt_tokens += int(prompt.sum())
    L.hit_tokens += int(np.minimum(hits * bs, prompt).sum())
    L.hit_blocks += int(hits.sum())
    L.requests_with_hit += int((hits > 0).sum())
    L.block_accesses += accesses
    L.cacheable_blocks += int(n.sum())


def baseline_from_scan(sc: Any, num_tiers: int) -> EngineResult:
    """The same :class:`EngineResult` as :func:`sequential_baseline` from a scan that ran the two tiers
    (:func:`pcs.engine.fastpath.scan` with ``lower_blocks``; ``sc.baseline_hits`` not None): per request the
    hit blocks the compiled hierarchy's ``run_sequential`` gives (tests/engine/test_seqbase.py)."""
    L = ReplayLedger(num_tiers=num_tiers)
    _count(L, sc.prompt_tokens, sc.baseline_hits, sc.block_size, int(sc.num_blocks.sum()), sc.cacheable_blocks)
    L.computed_tokens = L.prompt_tokens - L.hit_tokens
    return EngineResult(L, {})
