"""LFU with dynamic aging: evict the block with the smallest key ``K = uses + L`` (LFU-DA).

Plain LFU (``aging="none"``, L = 0): evict the least frequently used block; among equal
counts the one that reached that count first. This is libCacheSim's LFU
(``libCacheSim/cache/eviction/LFU.c``: frequency buckets, each a FIFO list; a
new block has count 1; a hit adds 1 and appends the block to the next
bucket; the victim is the first block of the lowest bucket; counts are not
kept after eviction).

Dynamic aging (``aging="dynamic"``, the default): LFU-DA of Arlitt, Cherkasova,
Dilley, Friedrich and Jin ("Evaluating Content Management Techniques for Web
Proxy Caches", HP Labs / ACM SIGMETRICS PER 2000), as Squid's
``heap_LFUDA``: an "inflation" L, set to the key of each victim, is added to
the key of every block when it is stored or used, ``K = uses + L``. A block
that was popular long ago keeps its old K while newly used blocks get
larger ones, so it ages out -- plain LFU keeps yesterday's system prompt
forever (cache pollution, the reason for aging).

Block-cache reading (docs/semantics.md §8): a pinned block leaves its
bucket and keeps its count; released as a hit (or touched) its count rises by
1 and its key is recomputed; released otherwise it returns with its key. A
block new to this tier released as reused (restored from a lower tier)
starts at 2 uses. On one tier, sequential, one block per request, ``aging="none"``
is libCacheSim's LFU exactly (``tests/cache/test_policies_libcachesim.py``).

Structures: key -> ``OrderedDict`` bucket, a lazy min-heap of bucket keys. O(log b) per key
for b distinct keys.
"""
from __future__ import annotations

import heapq
from collections import OrderedDict
from typing import Iterable, Sequence

from pcs.cache.policies.base import EvictionPolicy
from pcs.choices import close_tail
from pcs.errors import UserError, quoted

__all__ = ["LFUPolicy", "LFU_AGINGS", "check_aging"]

#: ``aging`` values: ``dynamic`` (LFU-DA) and ``none`` (plain LFU).
LFU_AGINGS = ("dynamic", "none")


def check_aging(aging: str) -> str:
    """``aging`` checked against :data:`LFU_AGINGS`, the one check of both LFU implementations.

    Raises:
        UserError: another value, listing the valid ones.
    """
    if aging not in LFU_AGINGS:
        raise UserError(f"lfu aging must be one of {', '.join(LFU_AGINGS)}, got {quoted(aging, show=repr)}"
                        f"{close_tail(aging, LFU_AGINGS)}")
    return aging


class LFUPolicy(EvictionPolicy):
    """Least frequently used, with dynamic aging (LFU-DA) by default.

    Args:
        capacity_blocks: tier capacity in blocks.
        aging: ``"dynamic"`` (K = uses + L, L = the last victim's K) or ``"none"`` (K = uses).
    Raises:
        UserError: unknown aging.

    >>> p = LFUPolicy(4, aging="none"); p.add([1, 2]); p.touch([1]); p.evict(1)
    [2]
    """

    name = "lfu"
    summary = "least frequently used with dynamic aging (LFU-DA); aging=none: plain LFU"
    source = ("Arlitt et al., HP Labs / PER 2000 (LFU-DA); libCacheSim libCacheSim/cache/eviction/LFU.c "
              "(aging=none)")

    def __init__(self, capacity_blocks: int, aging: str = "dynamic") -> None:
        super().__init__(capacity_blocks)
        self.aging = check_aging(aging)
        self.inflation = 0                      # L
        self._uses: dict[int, int] = {}         # every known block (held or pinned)
        self._key: dict[int, int] = {}          # held or pinned block -> K
        self._buckets: dict[int, OrderedDict] = {}
        self._heap: list[int] = []              # bucket keys, lazily cleaned
        self._in_heap: set[int] = set()
        self._held = 0

    def __len__(self) -> int:
        return self._held

    def __contains__(self, key: int) -> bool:
        k = self._key.get(key)
        return k is not None and key in self._buckets.get(k, ())

    def _put(self, k: int, key: int) -> None:
        b = self._buckets.get(key)
        if b is None:
            b = self._buckets[key] = OrderedDict()
            if key not in self._in_heap:
                self._in_heap.add(key)
                heapq.heappush(self._heap, key)
        b[k] = None
        self._key[k] = key
        self._held += 1

    def _take(self, k: int) -> None:
        key = self._key[k]
        b = self._buckets[key]
        del b[k]
        if not b:
            del self._buckets[key]
        self._held -= 1

    def add(self, keys: Sequence[int], reused: bool = False) -> None:
        uses, L = self._uses, self.inflation
        for k in keys:
            u = uses.get(k)
            if u is None:
                u = uses[k] = 2 if reused else 1
                self._put(k, u + L)
            elif reused:
                uses[k] = u + 1
                self._put(k, u + 1 + L)
            else:
                self._put(k, self._key[k])

    def remove(self, keys: Iterable[int]) -> None:
        for k in keys:
            self._take(k)

    def drop(self, keys: Sequence[int]) -> None:
        """:meth:`remove`, and the keys' use counts and priorities forgotten (stored again, a key starts over)."""
        self.remove(keys)
        uses, key = self._uses, self._key
        for k in keys:
            del uses[k], key[k]

    def touch(self, keys: Sequence[int]) -> None:
        uses, L = self._uses, self.inflation
        for k in keys:
            self._take(k)
            uses[k] += 1
            self._put(k, uses[k] + L)

    def evict(self, n: int) -> list[int] | None:
        if n > self._held:
            return None
        heap, buckets, out = self._heap, self._buckets, []
        for _ in range(n):
            while heap[0] not in buckets:
                self._in_heap.discard(heapq.heappop(heap))
            key = heap[0]
            k = buckets[key].popitem(last=False)[0]
            if not buckets[key]:
                del buckets[key]
            self._held -= 1
            del self._uses[k], self._key[k]
            if self.aging == "dynamic":
                self.inflation = key
            out.append(k)
        return out

    def order(self) -> list[int]:
        """Held keys, smallest K first, each bucket oldest first (the exact eviction order)."""
        return [k for key in sorted(self._buckets) for k in self._buckets[key]]

    def _check(self) -> None:
        held = [k for b in self._buckets.values() for k in b]
        assert len(held) == len(set(held)) == self._held
        assert all(self._key[k] == key for key, b in self._buckets.items() for k in b)
        assert self._uses.keys() == self._key.keys() and all(u >= 1 for u in self._uses.values())
        assert set(self._buckets) <= self._in_heap == set(self._heap) and len(self._heap) == len(self._in_heap)
