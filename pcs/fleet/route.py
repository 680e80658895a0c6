"""The routing pass: each request of a trace, in arrival order, to one instance (docs/semantics.md §17).

For each request: retire the load that ended (:class:`pcs.fleet.index.LoadTracker`),
bring the router's view up to date (:meth:`CacheIndex.advance`), ask the
router, then record the choice: the request's cacheable blocks are stored in
the chosen instance's index and its load is added until ``arrival_s +
service_s``. The router never sees the future: only requests that arrived
before it, and (stale view) only events older than the delay. A router that
does not read the index (``uses_index`` False: round-robin, random,
least-loaded, session, consistent-hash) cannot be changed by it, so its
index is filled once after the pass, to the same end state
(:meth:`CacheIndex.load`; ``tests/fleet/test_routers.py::test_bulk_index_is_the_stored_one``).

With an exact view (``stale_s`` 0) the prefix, cache-aware and least-loaded
routers run in the compiled twin of the loop (``pcs/fleet/_route.c``, chosen
by ``native`` as every twin, :mod:`pcs._native`): the same choices and the same
end state of the index (``tests/fleet/test_route_twin.py``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pcs.blocks import BlockRules
from pcs.engine.chunks import rule_columns
from pcs.fleet.index import CacheIndex, LoadTracker
from pcs.fleet.routers import Request, Router
from pcs.trace.tree import session_keys

__all__ = ["route"]


def route(batch: Any, rules: BlockRules, router: Router, index: CacheIndex,
          service_s: np.ndarray, fast: bool = True, native: str | None = None) -> np.ndarray:
    """The instance of every request of ``batch``.

    Args:
        batch: :class:`pcs.trace.request.RequestBatch` of the whole trace (arrival order).
        rules: block rules (which ids may hit, which are stored).
        router: the routing rule; index: the router's cache index (updated in place).
        service_s: float64, shape (n,): seconds each request stays in flight (the router's estimate).
        fast: take :meth:`Router.assign_all` when the router has it (a choice that depends on the request
            alone: round-robin, random, consistent-hash); False = one :meth:`Router.choose` per request
            (the reference it is diffed against, ``tests/fleet/test_routers.py``).
        native: ``auto``, ``c`` or ``python`` (:func:`pcs._native.resolve`; None = ``$PCS_NATIVE``): the
            compiled loop for a router with :meth:`Router.native_rule` and an exact view.
    Returns:
        int64 array, shape (n,): 0-based instance per request.
    Raises:
        UserError: as the router raises (e.g. ``session`` without session ids); ``native="c"`` without the
            compiled twin.
    """
    counts = np.diff(batch.block_offsets)
    cacheable, hittable, _ = rule_columns(batch.prompt_tokens, counts, batch.output_tokens, batch.block_size, rules)
    whole = router.assign_all(batch, hittable) if fast and not router.uses_index else None
    if whole is not None:
        out = np.asarray(whole, dtype=np.int64)
    else:
        out = _route_compiled(batch, router, index, service_s, cacheable, hittable, native) if fast else None
        if out is None:
            out = _route_loop(batch, router, index, service_s, cacheable, hittable)
    if not router.uses_index:
        _load_index(batch, cacheable, out, index)
    return out


def _route_loop(batch: Any, router: Router, index: CacheIndex, service_s: np.ndarray, cacheable: np.ndarray,
                hittable: np.ndarray) -> np.ndarray:
    """One :meth:`Router.choose` per request in arrival order (module docstring); ``cacheable``, ``hittable``:
    int64 (n,), each request's cacheable and hittable leading blocks (:func:`pcs.engine.chunks.rule_columns`)."""
    n = len(batch)
    out = np.empty(n, dtype=np.int64)
    load = LoadTracker(router.instances)
    arrival = batch.arrival_s.tolist()
    prompt = batch.prompt_tokens.tolist()
    off = batch.block_offsets.tolist()
    track = router.uses_index          # the others never read the index: it is filled once, at the end
    blocks = track or router.uses_blocks
    ids = batch.block_hashes.tolist() if blocks else None
    hit, keep = hittable.tolist(), cacheable.tolist()
    keys = session_keys(batch)                 # Bailian: the root chat of each conversation; -1: none
    sessions = keys.tolist() if keys is not None else None
    ends = (batch.arrival_s + np.asarray(service_s, dtype=np.float64)).tolist()
    req = Request()
    req.blocks = ()
    for k in range(n):
        t, p = arrival[k], prompt[k]
        load.advance(t)
        req.position, req.arrival_s, req.prompt_tokens = k, t, p
        req.session_id = sessions[k] if sessions is not None else None
        if blocks:
            o = off[k]
            req.blocks = ids[o:o + hit[k]]
        if track:
            index.advance(t)
        i = router.choose(req, index, load)
        out[k] = i
        if track:
            index.store(i, ids[o:o + keep[k]], t)
        load.add(i, p, ends[k])
    return out


def _route_compiled(batch: Any, router: Router, index: CacheIndex, service_s: np.ndarray, cacheable: np.ndarray,
                    hittable: np.ndarray, native: str | None) -> np.ndarray | None:
    """:func:`_route_loop` in C (``pcs/fleet/_route.c``) when the router has a twin
    (:meth:`Router.native_rule`), the view is exact and ``native`` picks C; else None. The index ends as
    the loop leaves it (:meth:`CacheIndex.restore` of each instance's held ids, LRU first)."""
    from pcs import _native

    rule = router.native_rule()
    if rule is None or index.stale_s > 0 or _native.resolve(native, "route") != "c":
        return None
    out = np.empty(len(batch), dtype=np.int64)
    caps = np.asarray(index.capacity_blocks, dtype=np.int64)
    i64, f64 = (lambda a: np.ascontiguousarray(a, dtype=np.int64)), (lambda a: np.ascontiguousarray(a, np.float64))
    ends = batch.arrival_s + np.asarray(service_s, dtype=np.float64)     # as _route_loop: one rounding
    held = _native.module("route").route(
        rule[0], rule[1], rule[2], caps, f64(batch.arrival_s), i64(batch.prompt_tokens), i64(batch.block_offsets),
        np.ascontiguousarray(batch.block_hashes, dtype=np.uint64), i64(hittable), i64(cacheable), f64(ends), out)
    if router.uses_index:
        for i, ids in enumerate(held):
            index.restore(i, np.frombuffer(ids, dtype=np.uint64))
    return out


def _load_index(batch: Any, n: np.ndarray, out: np.ndarray, index: CacheIndex) -> None:
    """Each instance's index as :meth:`CacheIndex.store` of its requests' cacheable blocks (``n``: int64 (n,))
    would leave it (:meth:`CacheIndex.load`, vectorised)."""
    counts = np.diff(batch.block_offsets)
    pos = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(batch.block_offsets[:-1], counts)
    owner = np.where(pos < np.repeat(n, counts), np.repeat(out, counts), -1)    # -1: not cacheable
    for i in range(len(index.capacity_blocks)):
        index.load(i, batch.block_hashes[owner == i])
