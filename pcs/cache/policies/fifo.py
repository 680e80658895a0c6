"""First in, first out: evict the block that entered the tier first; hits never move it.

A block keeps the position it got when it entered the tier (its sequence
number), also across pins: while pinned it is not a candidate, and when
released it goes back to its old position rather than to the back. This is
the FIFO of libCacheSim (``libCacheSim/cache/eviction/FIFO.c``) with pinning
added.

Structures: ``_seq`` dict key -> sequence number for every block in the tier
(held or pinned; the one place this policy remembers pinned blocks, because
FIFO order is defined by entry time), and ``_order`` a
:class:`sortedcontainers.SortedDict` sequence number -> key of the evictable
ones. O(log n) per key; FIFO is a baseline, not the hot path.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from sortedcontainers import SortedDict

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
        self._seq: dict[int, int] = {}
        self._order: SortedDict = SortedDict()
        self._next = 0

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, key: int) -> bool:
        s = self._seq.get(key)
        return s is not None and s in self._order

    def add(self, keys: Sequence[int], reused: bool = False) -> None:
        seq, order = self._seq, self._order
        for k in keys:
            s = seq.get(k)
            if s is None:
                s = seq[k] = self._next
                self._next += 1
            order[s] = k

    def remove(self, keys: Iterable[int]) -> None:
        seq, order = self._seq, self._order
        for k in keys:
            del order[seq[k]]

    def drop(self, keys: Sequence[int]) -> None:
        """Forget held ``keys`` with their sequence numbers: stored again, a key is new (enters at the back)."""
        seq, order = self._seq, self._order
        for k in keys:
            del order[seq.pop(k)]

    def touch(self, keys: Sequence[int]) -> None:
        return None

    def evict(self, n: int) -> list[int] | None:
        order = self._order
        if n > len(order):
            return None
        victims = [order.popitem(0)[1] for _ in range(n)]
        seq = self._seq
        for k in victims:
            del seq[k]
        return victims

    def order(self) -> list[int]:
        return list(self._order.values())

    def _check(self) -> None:
        for s, k in self._order.items():
            assert self._seq[k] == s, (k, s)
        assert all(s < self._next for s in self._seq.values())
