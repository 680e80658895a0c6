"""First in, first out: evict the block that entered the tier first; hits never move it.

A block keeps the position it got when it entered the tier (its sequence
number), also across pins: while pinned it is not a candidate, and when
released it goes back to its old position rather than to the back. This is
the FIFO of libCacheSim (``libCacheSim/cache/eviction/FIFO.c``) with pinning
added.

Structures: ``_held`` dict key -> sequence number of the evictable blocks,
``_pinned`` the same of the pinned ones (the one place this policy remembers
pinned blocks, because FIFO order is defined by entry time), and ``_heap`` a
:mod:`heapq` min-heap of sequence numbers with ``_at`` dict sequence number ->
key for each number in it. Removal is lazy (the "mark removed" priority queue
of the :mod:`heapq` documentation): a pinned or dropped block keeps its number
in the heap, and ``evict`` skips a popped number whose key is not held under
it. A new block's number is the largest yet, so it is appended (the list
stays a heap); a released block whose number was popped while it was pinned
is pushed back. O(log n) per block, all in C-implemented containers.
"""
from __future__ import annotations

from heapq import heappop, heappush
from itertools import chain
from typing import Iterable, Sequence

from pcs.cache.policies.base import EvictionPolicy

__all__ = ["FIFOPolicy"]


class FIFOPolicy(EvictionPolicy):
    """First in, first out by time of entry into the tier.

    >>> p = FIFOPolicy(4); p.add([1, 2]); p.remove([1]); p.add([3]); p.add([1], reused=True)
    >>> p.evict(3)
    [1, 2, 3]
    """

    name = "fifo"
    summary = "first in, first out (hits do not move a block)"
    source = "libCacheSim libCacheSim/cache/eviction/FIFO.c"
    reuse_blind = True

    def __init__(self, capacity_blocks: int) -> None:
        super().__init__(capacity_blocks)
        self._held: dict[int, int] = {}
        self._pinned: dict[int, int] = {}
        self._heap: list[int] = []
        self._at: dict[int, int] = {}
        self._next = 0

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, key: int) -> bool:
        return key in self._held

    def add(self, keys: Sequence[int], reused: bool = False) -> None:
        held, pinned, heap, at = self._held, self._pinned, self._heap, self._at
        for k in keys:
            s = pinned.pop(k, None)
            if s is None:                   # new: the largest number yet, appended at the heap's end
                s = self._next
                self._next = s + 1
                heap.append(s)
                at[s] = k
            elif s not in at:               # back from a pin whose number was popped meanwhile
                heappush(heap, s)
                at[s] = k
            held[k] = s

    def remove(self, keys: Iterable[int]) -> None:
        held, pinned = self._held, self._pinned
        for k in keys:
            pinned[k] = held.pop(k)

    def drop(self, keys: Sequence[int]) -> None:
        """Forget held ``keys`` with their sequence numbers: stored again, a key is new (enters at the back)."""
        held = self._held
        for k in keys:
            del held[k]

    def touch(self, keys: Sequence[int]) -> None:
        return None

    def evict(self, n: int) -> list[int] | None:
        held = self._held
        if n > len(held):
            return None
        heap, at = self._heap, self._at
        victims: list[int] = []
        while len(victims) < n:
            s = heappop(heap)
            k = at.pop(s)
            if held.get(k) == s:            # else pinned (pushed back when released) or dropped: skipped
                del held[k]
                victims.append(k)
        return victims

    def order(self) -> list[int]:
        return sorted(self._held, key=self._held.__getitem__)

    def _check(self) -> None:
        held, at = self._held, self._at
        assert not (held.keys() & self._pinned.keys())
        assert all(at.get(s) == k for k, s in held.items())
        assert all(s < self._next for s in chain(held.values(), self._pinned.values()))
        assert len(self._heap) == len(at) and set(self._heap) == at.keys()
