"""ARC: adaptive replacement between recency and frequency (Megiddo & Modha, "ARC: A Self-Tuning,
Low Overhead Replacement Cache", FAST'03).

Followed: the paper's Figure 4 and libCacheSim ``libCacheSim/cache/eviction/ARC.c`` (whose
order of steps this reproduces). Four LRU lists: T1 (blocks seen once
recently) and T2 (seen at least twice) hold blocks; B1 and B2 hold the keys
evicted from T1 and T2 (ghosts). ``p`` (target size of T1, blocks, a float)
starts at 0.

- A hit moves the block to the MRU end of T2.
- A miss on a key in B1: ``p = min(p + max(|B2| / |B1|, 1), C)``; in B2:
  ``p = max(p - max(|B1| / |B2|, 1), 0)`` (sizes before the key leaves its
  ghost list); the key leaves the ghost list and the block enters T2; an
  eviction for it is REPLACE.
- Any other miss: the block enters T1; an eviction for it is the paper's
  case IV: if ``|T1| + |B1| + 1 > C`` then (B1 not empty) B1's LRU key goes
  and REPLACE, or (B1 empty) T1's LRU block is evicted without a ghost;
  else, when ``|T1| + |B1| + |T2| + |B2| >= 2C``, B2's LRU key goes, and REPLACE.
- REPLACE: T1's LRU block goes to B1 if ``|T1| > 0`` and (``|T1| > p`` or
  ``|T1| == p`` and the miss was in B2), or T2 is empty; else T2's LRU block goes to B2.

Block-cache reading (docs/semantics.md §8): the ghost lookup and the
adaptation of ``p`` happen in ``expect``, before the evictions (as
libCacheSim's ``find`` precedes its ``evict``); the k-th of ``n`` evictions
is paired with the k-th of the last ``n`` expected keys (with one block per
request: the one). A pinned block leaves T1/T2 (it is not a candidate and
not counted in |T1|, |T2|); released as a hit, or new to this tier but
released as reused (restored from a lower tier, its second use), it enters
T2's MRU end; released otherwise it returns to its list's MRU end.
``touch`` is a hit. ``drop`` forgets a block without a ghost entry
(libCacheSim ``ARC_remove``). On one tier, sequential, one block per request
this is libCacheSim's ARC exactly (``tests/cache/test_policies_libcachesim.py``).

Structures: four ``OrderedDict`` (front = LRU). O(1) per key.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Iterable, Sequence

from pcs.cache.policies.base import EvictionPolicy

__all__ = ["ARCPolicy"]


class ARCPolicy(EvictionPolicy):
    """Adaptive Replacement Cache (FAST'03): T1/T2 with ghost lists B1/B2 and an adaptive target p.

    >>> p = ARCPolicy(4); p.add([1, 2]); p.touch([1]); p.evict(1)
    [2]
    """

    name = "arc"
    summary = "ARC (Megiddo & Modha FAST'03): recency T1 vs frequency T2, ghost lists adapt the split"
    source = "Megiddo & Modha, FAST'03; libCacheSim libCacheSim/cache/eviction/ARC.c"

    def __init__(self, capacity_blocks: int) -> None:
        super().__init__(capacity_blocks)
        self.p = 0.0
        self._t1: OrderedDict[int, None] = OrderedDict()
        self._t2: OrderedDict[int, None] = OrderedDict()
        self._b1: OrderedDict[int, None] = OrderedDict()
        self._b2: OrderedDict[int, None] = OrderedDict()
        self._pinned: dict[int, int] = {}      # pinned key -> list it left (1 or 2)
        self._ghost_hit: dict[int, int] = {}   # expected key found in B1 (1) or B2 (2)
        self._pending: list[int] = []          # per expected key: 0, 1 or 2 (where it was found)

    def __len__(self) -> int:
        return len(self._t1) + len(self._t2)

    def __contains__(self, key: int) -> bool:
        return key in self._t1 or key in self._t2

    def _ghost_lookup(self, k: int) -> int:
        """libCacheSim ``ARC_find`` on a ghost: adapt p, drop the ghost; 1 (B1), 2 (B2) or 0 (neither)."""
        b1, b2 = self._b1, self._b2
        if k in b1:
            self.p = min(self.p + max(len(b2) / len(b1), 1.0), float(self.capacity_blocks))
            del b1[k]
            return 1
        if k in b2:
            self.p = max(self.p - max(len(b1) / len(b2), 1.0), 0.0)
            del b2[k]
            return 2
        return 0

    def expect(self, keys: Sequence[int]) -> None:
        pending = []
        for k in keys:
            if k in self._t1 or k in self._t2 or k in self._pinned:
                continue
            where = self._ghost_lookup(k)
            if where:
                self._ghost_hit[k] = where
            pending.append(where)
        self._pending = pending

    def add(self, keys: Sequence[int], reused: bool = False) -> None:
        t1, t2, pinned, ghost_hit = self._t1, self._t2, self._pinned, self._ghost_hit
        for k in keys:
            was = pinned.pop(k, 0)
            if not was:
                if k in ghost_hit:
                    del ghost_hit[k]
                    was = 2
                elif self._ghost_lookup(k):     # not announced by expect
                    was = 2
            if reused or was == 2:
                t2[k] = None
            else:
                t1[k] = None

    def remove(self, keys: Iterable[int]) -> None:
        t1, t2, pinned = self._t1, self._t2, self._pinned
        for k in keys:
            if k in t1:
                del t1[k]
                pinned[k] = 1
            else:
                del t2[k]
                pinned[k] = 2

    def drop(self, keys: Sequence[int]) -> None:
        t1, t2 = self._t1, self._t2
        for k in keys:
            if k in t1:
                del t1[k]
            else:
                del t2[k]

    def touch(self, keys: Sequence[int]) -> None:
        t1, t2 = self._t1, self._t2
        for k in keys:
            if k in t1:
                del t1[k]
                t2[k] = None
            else:
                t2.move_to_end(k)

    def _replace(self, in_b2: bool) -> int:
        t1, t2 = self._t1, self._t2
        n1 = len(t1)
        if (n1 and (n1 > self.p or (n1 == self.p and in_b2))) or not t2:
            k = t1.popitem(last=False)[0]
            self._b1[k] = None
        else:
            k = t2.popitem(last=False)[0]
            self._b2[k] = None
        return k

    def _case_iv(self) -> int:
        c = self.capacity_blocks
        t1, b1 = self._t1, self._b1
        if len(t1) + len(b1) + 1 > c:
            if b1:
                b1.popitem(last=False)
                return self._replace(False)
            return t1.popitem(last=False)[0]
        if len(t1) + len(b1) + len(self._t2) + len(self._b2) >= 2 * c and self._b2:
            self._b2.popitem(last=False)
        return self._replace(False)

    def evict(self, n: int) -> list[int] | None:
        if n > len(self):
            return None
        flags = self._pending[-n:] if n else []
        flags = [0] * (n - len(flags)) + flags
        self._pending = []
        return [self._replace(f == 2) if f else self._case_iv() for f in flags]

    def order(self) -> list[int]:
        """Held keys: T1 then T2, each LRU first (the next victim depends on p)."""
        return list(self._t1) + list(self._t2)

    def _check(self) -> None:
        sets = [self._t1.keys(), self._t2.keys(), self._b1.keys(), self._b2.keys(), self._pinned.keys()]
        assert sum(map(len, sets)) == len(set().union(*sets)), "ARC lists overlap"
        assert 0.0 <= self.p <= self.capacity_blocks
