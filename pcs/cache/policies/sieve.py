"""SIEVE: one FIFO queue, a visited bit and a moving hand (Zhang et al., "SIEVE is Simpler than LRU", NSDI'24).

Followed: the paper's Algorithm 1 and libCacheSim ``libCacheSim/cache/eviction/Sieve.c``
(the authors' implementation). A new block enters at the head (newest) with
its visited bit clear; a hit sets the bit and moves nothing. To evict, the
hand starts where it stopped (at the tail, the oldest block, the first time
or after passing the head), clears the bits of visited blocks as it moves
toward the head, wrapping from the head back to the tail, and evicts the
first unvisited block; the hand stays at the block newer than the victim.

Block-cache reading (docs/semantics.md §8): a pinned block (``remove``)
keeps its place in the queue and its bit; the hand passes over it without
clearing the bit (a running request is using it). Released as a hit
(``add(reused=True)``) its bit is set, as libCacheSim's ``find`` does on a
hit; a block new to this tier released as reused (restored from a lower
tier, its second use) enters with the bit set. ``touch`` sets the bit.
``drop`` unlinks a block (libCacheSim ``Sieve_remove``: the hand moves to
the block newer than it). On one tier, sequential, one block per request
(the flat stream) this is libCacheSim's SIEVE exactly
(``tests/cache/test_policies_libcachesim.py``).

Structures: a doubly linked list in two dicts (``_older``, ``_newer``), a
visited set and a pinned set; O(1) per key amortised.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from pcs.cache.policies.base import OneByOnePolicy

__all__ = ["SievePolicy"]


class SievePolicy(OneByOnePolicy):
    """SIEVE (NSDI'24): FIFO order, a visited bit per block, a hand that sweeps from old to new.

    >>> p = SievePolicy(4); p.add([1, 2, 3]); p.touch([1]); p.evict(1)
    [2]
    """

    name = "sieve"
    summary = "SIEVE (Zhang et al. NSDI'24): FIFO with a visited bit and a sweeping hand"
    source = "Zhang et al., NSDI'24; libCacheSim libCacheSim/cache/eviction/Sieve.c"

    def __init__(self, capacity_blocks: int) -> None:
        super().__init__(capacity_blocks)
        self._older: dict[int, int | None] = {}
        self._newer: dict[int, int | None] = {}
        self._head: int | None = None      # newest
        self._tail: int | None = None      # oldest
        self._hand: int | None = None
        self._visited: set[int] = set()
        self._pinned: set[int] = set()

    def __len__(self) -> int:
        return len(self._older) - len(self._pinned)

    def __contains__(self, key: int) -> bool:
        return key in self._older and key not in self._pinned

    def _push(self, k: int) -> None:
        """Link ``k`` at the head (newest)."""
        head = self._head
        self._older[k] = head
        self._newer[k] = None
        if head is None:
            self._tail = k
        else:
            self._newer[head] = k
        self._head = k

    def _unlink(self, k: int) -> None:
        older, newer = self._older.pop(k), self._newer.pop(k)
        if older is None:
            self._tail = newer
        else:
            self._newer[older] = newer
        if newer is None:
            self._head = older
        else:
            self._older[newer] = older
        self._visited.discard(k)

    def add(self, keys: Sequence[int], reused: bool = False) -> None:
        pinned, visited, known = self._pinned, self._visited, self._older
        for k in keys:
            if k in known:
                pinned.discard(k)
            else:
                self._push(k)
            if reused:
                visited.add(k)

    def remove(self, keys: Iterable[int]) -> None:
        self._pinned.update(keys)

    def drop(self, keys: Sequence[int]) -> None:
        for k in keys:
            if k == self._hand:
                self._hand = self._newer[k]
            self._unlink(k)

    def touch(self, keys: Sequence[int]) -> None:
        self._visited.update(keys)

    def _evict_one(self) -> int:
        visited, pinned, newer = self._visited, self._pinned, self._newer
        k = self._hand if self._hand is not None else self._tail
        while k in visited or k in pinned:
            if k not in pinned:
                visited.discard(k)
            k = newer[k]
            if k is None:
                k = self._tail
        self._hand = newer[k]
        self._unlink(k)
        return k

    def order(self) -> list[int]:
        """Held keys from the hand toward the head, then from the tail up to the hand (visited ones included)."""
        out, k = [], self._tail
        while k is not None:
            out.append(k)
            k = self._newer[k]
        if self._hand is not None:
            i = out.index(self._hand)
            out = out[i:] + out[:i]
        return [k for k in out if k not in self._pinned]

    def _check(self) -> None:
        n, k, prev = 0, self._tail, None
        while k is not None:
            assert self._older[k] == prev
            prev, k, n = k, self._newer[k], n + 1
        assert prev == self._head and n == len(self._older) == len(self._newer)
        assert self._pinned <= self._older.keys() and self._visited <= self._older.keys()
        assert self._hand is None or self._hand in self._older
