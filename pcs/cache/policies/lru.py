"""Least recently used: evict the block whose last release or access is oldest.

One ``OrderedDict`` (C-implemented doubly linked hash map) from key to None;
the front is the least recently used block. ``add`` appends (MRU),
``evict`` pops from the front, ``touch`` moves to the back. Every operation
is O(1) per key. Fed tail-first releases, LRU evicts a child before its
parent, so a tier stays prefix-closed (docs/semantics.md §6; vLLM's free
block queue behaves the same way, ``vllm/v1/core/block_pool.py``).
"""
from __future__ import annotations

from collections import OrderedDict
from itertools import islice
from typing import Iterable, Sequence

from pcs.cache.policies.base import EvictionPolicy

__all__ = ["LRUPolicy"]


class LRUPolicy(EvictionPolicy):
    """Least recently used (recency of release or access).

    >>> p = LRUPolicy(4); p.add([3, 2, 1]); p.touch([3]); p.evict(2)
    [2, 1]
    """

    name = "lru"
    summary = "least recently used"
    source = "vLLM vllm/v1/core/block_pool.py (free block queue); libCacheSim libCacheSim/cache/eviction/LRU.c"
    prefix_closed = True
    reuse_blind = True

    def __init__(self, capacity_blocks: int) -> None:
        super().__init__(capacity_blocks)
        self._od: OrderedDict[int, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._od)

    def __contains__(self, key: int) -> bool:
        return key in self._od

    def add(self, keys: Sequence[int], reused: bool = False) -> None:
        od = self._od
        for k in keys:
            od[k] = None

    def remove(self, keys: Iterable[int]) -> None:
        od = self._od
        for k in keys:
            del od[k]

    def touch(self, keys: Sequence[int]) -> None:
        move = self._od.move_to_end
        for k in keys:
            move(k)

    def evict(self, n: int) -> list[int] | None:
        od = self._od
        if n > len(od):
            return None
        victims = list(islice(od, n))       # the n oldest, then delete them (cheaper than n popitem calls)
        for k in victims:
            del od[k]
        return victims

    def order(self) -> list[int]:
        return list(self._od)

    def _check(self) -> None:
        assert all(v is None for v in self._od.values())
