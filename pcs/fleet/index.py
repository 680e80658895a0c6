"""The router's view of each instance: a block index (exact or stale) and the load in flight.

Routers that look at caches (``prefix``, ``cache-aware``) read a
:class:`CacheIndex`; routers that balance load read a :class:`LoadTracker`.
Both are mechanism; the choice is the routers' (``pcs.fleet.routers``).

The index is the router's *model* of each instance's cache, the way
routers keep one (docs/semantics.md §17):

- each instance is an LRU set of block hashes of ``capacity_blocks`` slots
  (the instance's tiers together); routing a request there stores its
  cacheable blocks (docs/semantics.md §2) and touches those already held,
  evicting least-recently-stored ids past the capacity -- as SGLang's
  router keeps an approximate radix tree per worker from the requests it
  routes (``sgl-router`` cache_aware policy) and llm-d's approximate
  prefix-cache scorer keeps an LRU of the prefixes sent to each pod;
- every store and eviction is an event ``(time_s, instance, kind, id)`` in a
  time-ordered log; with ``stale_s > 0`` the router's view applies an event
  only once ``time_s + stale_s`` has passed -- KV events reach the router
  late (vLLM ``BlockStored`` / ``BlockRemoved`` published over ZMQ, read by
  llm-d's kv-cache indexer and Dynamo's KV router).

The lookup is the prefix rule (docs/semantics.md §3): leading blocks held,
stopping at the first miss.
"""
from __future__ import annotations

import heapq
from collections import OrderedDict, deque
from typing import Sequence
from pcs.errors import UserError, shown_repr

__all__ = ["CacheIndex", "LoadTracker"]

_STORE, _EVICT = 0, 1


class CacheIndex:
    """Per-instance LRU sets of block hashes, and the router's possibly stale view of them.

    Args:
        capacity_blocks: slots per instance (one int per instance, each >= 0).
        stale_s: seconds between a store/evict and the router seeing it (>= 0; 0 = exact).
    Raises:
        UserError: no instance, a negative capacity or delay.
    """

    def __init__(self, capacity_blocks: Sequence[int], stale_s: float = 0.0) -> None:
        if not capacity_blocks:
            raise UserError("a fleet needs at least one instance")
        if any(int(c) < 0 for c in capacity_blocks):
            raise UserError(f"index capacities must be >= 0 blocks, got {list(capacity_blocks)}")
        if not stale_s >= 0:
            raise UserError(f"router_stale_s= must be >= 0 seconds, got {shown_repr(stale_s)}")
        self.capacity_blocks = [int(c) for c in capacity_blocks]
        self.stale_s = float(stale_s)
        self._truth: list[OrderedDict] = [OrderedDict() for _ in capacity_blocks]
        self._view: list = self._truth if self.stale_s == 0 else [set() for _ in capacity_blocks]
        self._loaded: dict = {}        # instance -> (ids, ordered): a set load()/restore() left to build
        self._log: deque = deque()

    def advance(self, now_s: float) -> None:
        """Apply to the view every logged event older than ``now_s - stale_s`` (no-op when exact)."""
        log = self._log
        cut = now_s - self.stale_s
        view = self._view
        while log and log[0][0] <= cut:
            _, i, kind, b = log.popleft()
            if kind == _STORE:
                view[i].add(b)
            else:
                view[i].discard(b)

    def match(self, instance: int, blocks: Sequence[int]) -> int:
        """Leading ids of ``blocks`` in the router's view of ``instance`` (stop at the first miss)."""
        if self._loaded:
            self._settle(instance)
        held = self._view[instance]
        k = 0
        for b in blocks:
            if b not in held:
                break
            k += 1
        return k

    def store(self, instance: int, blocks: Sequence[int], now_s: float) -> None:
        """The instance computed or reused ``blocks`` at ``now_s``: store new ids, touch held ones, evict LRU."""
        if self._loaded:
            self._settle(instance)
        lru = self._truth[instance]
        cap = self.capacity_blocks[instance]
        logged = self.stale_s > 0
        for b in blocks:
            if b in lru:
                lru.move_to_end(b)
                continue
            if cap == 0:
                return
            lru[b] = None
            if logged:
                self._log.append((now_s, instance, _STORE, b))
            if len(lru) > cap:
                old, _ = lru.popitem(last=False)
                if logged:
                    self._log.append((now_s, instance, _EVICT, old))

    def load(self, instance: int, ids: "np.ndarray") -> None:
        """Set the instance's LRU set to its state after :meth:`store` of ``ids`` one by one into an empty
        one (uint64/int64 array, access order): an LRU set holds the ``capacity_blocks`` distinct ids used
        most recently, ordered by their last use.

        For routers that never read the index (their choice does not depend on it): no event is
        logged, so a stale view stays empty. The set is built when first read (:meth:`held_ids`,
        :meth:`store`, :meth:`match`); :meth:`held_blocks` only counts the distinct ids.
        """
        import numpy as np

        self._truth[instance].clear()       # in place: the exact view is the same list of sets
        self._loaded[instance] = (np.asarray(ids), False)

    def _settle(self, instance: int) -> None:
        """Build the LRU set :meth:`load` left pending (vectorised: the last use of each distinct id)."""
        ids, ordered = self._loaded.pop(instance, (None, False))
        if ids is None:
            return
        if ordered:                         # restore(): already the set, LRU first
            self._truth[instance].update(OrderedDict.fromkeys(ids.tolist()))
            return
        import numpy as np

        cap = self.capacity_blocks[instance]
        uniq, first_rev = np.unique(ids[::-1], return_index=True)   # first in reverse = last use
        order = uniq[np.argsort(len(ids) - 1 - first_rev, kind="stable")]
        keep = order[max(len(order) - cap, 0):] if cap else order[:0]
        self._truth[instance].update(OrderedDict.fromkeys(keep.tolist()))

    def restore(self, instance: int, held_ids: "np.ndarray") -> None:
        """Set the instance's LRU set to ``held_ids`` (uint64, shape (m,) with m <= its capacity, distinct,
        least recently used first) -- the state the compiled routing pass (``pcs/fleet/_route.c``) returns;
        no event is logged (an exact view reads the truth itself); the set is built when first read.

        Raises:
            UserError: more ids than the instance's capacity.
        """
        if len(held_ids) > self.capacity_blocks[instance]:
            raise UserError(f"{len(held_ids)} ids exceed instance {instance}'s {self.capacity_blocks[instance]} slots")
        self._truth[instance].clear()
        self._loaded[instance] = (held_ids, True)

    def held_ids(self, instance: int) -> list:
        """The ids the instance holds now (the truth, not the view), least recently used first."""
        self._settle(instance)
        return list(self._truth[instance])

    def held_blocks(self, instance: int) -> int:
        """Ids the instance holds now (the truth, not the view); never above its capacity."""
        ids, ordered = self._loaded.get(instance, (None, False))
        if ids is None:
            return len(self._truth[instance])
        return len(ids) if ordered else min(self.capacity_blocks[instance], _distinct(ids))


def _distinct(ids: "np.ndarray") -> int:
    """Distinct values of an integer array: a bitmap when they are small (ids numbered from 0, as Mooncake's),
    else :func:`numpy.unique`."""
    import numpy as np

    if len(ids) == 0:
        return 0
    if ids.dtype.kind == "i" and int(ids.min()) < 0:
        return len(np.unique(ids))
    top = int(ids.max())
    if top < 8 * len(ids) + 65536:
        seen = np.zeros(top + 1, dtype=bool)
        seen[ids] = True
        return int(np.count_nonzero(seen))
    return len(np.unique(ids))


class LoadTracker:
    """Requests and prompt tokens in flight per instance, as the router counts them.

    A request is in flight on its instance from its arrival until
    ``arrival_s + service_s`` (the router's estimate: prefill from scratch
    plus its decode steps, no queueing; :func:`pcs.fleet.fleet.service_times`).
    Routers count outstanding requests this way (SGLang router: running
    requests per worker; Dynamo: active blocks per worker).

    Args:
        instances: number of instances (>= 1).
    """

    def __init__(self, instances: int) -> None:
        self.requests = [0] * instances
        self.tokens = [0] * instances
        self._ends: list = []

    def advance(self, now_s: float) -> None:
        """Retire every request whose estimated end is at or before ``now_s``."""
        ends = self._ends
        while ends and ends[0][0] <= now_s:
            _, i, tokens = heapq.heappop(ends)
            self.requests[i] -= 1
            self.tokens[i] -= tokens

    def add(self, instance: int, tokens: int, end_s: float) -> None:
        """A request of ``tokens`` prompt tokens was routed to ``instance`` and ends at ``end_s`` (s)."""
        self.requests[instance] += 1
        self.tokens[instance] += tokens
        heapq.heappush(self._ends, (end_s, instance, tokens))
