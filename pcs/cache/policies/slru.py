"""Segmented LRU (``slru``; alias ``protected``): probation and protected segments, promotion on a second use.

A block enters the *probation* segment when it is first cached (computed, or
written to a lower tier). Used again (a hit: ``reused=True`` on release, or a
``touch``) it moves to the *protected* segment. Victims come from the
probation LRU end first; the protected segment is only evicted when probation
is empty. The protected segment is capped at ``protected_share`` x the tier's
capacity; overflow is demoted from the protected LRU end to the probation MRU
end (segmented LRU of Karedla, Love and Wherry, IEEE Computer 1994; the same
scheme is the main space of Caffeine's W-TinyLFU).

Why it matters here: a one-off scan of long prompts passes through probation
and pushes out other probation blocks, but cannot evict a reused shared prefix
sitting in protected (see ``tests/cache/test_policies_protected.py``).

Name: ``slru``, the field's name for it (libCacheSim
``libCacheSim/cache/eviction/SLRU.c``, ``-e slru``); ``protected``, this
project's first name for it, stays an alias in the registry
(:mod:`pcs.cache.policies`).

Default ``protected_share`` = 0.8: Caffeine ``BoundedLocalCache``
``PERCENT_MAIN_PROTECTED = 0.80d`` (80 % of the main space protected, as in
Einziger, Friedman and Manes, "TinyLFU: A Highly Efficient Cache Admission
Policy", ACM ToS 2017).

Structures: two ``OrderedDict`` (front = LRU). O(1) per key.
"""
from __future__ import annotations

import math
from collections import OrderedDict
from itertools import islice
from typing import Iterable, Sequence

from pcs.cache.policies.base import EvictionPolicy
from pcs.errors import UserError, shown_repr

__all__ = ["SLRUPolicy", "ProtectedPolicy", "DEFAULT_PROTECTED_SHARE"]

#: Share of the tier capacity the protected segment may fill (Caffeine
#: ``BoundedLocalCache.PERCENT_MAIN_PROTECTED``).
DEFAULT_PROTECTED_SHARE = 0.8

_MISSING = object()


def _pop_oldest(od: OrderedDict, n: int) -> list[int]:
    """Remove and return the (at most) ``n`` first keys of ``od``, front first (one slice, then a delete
    each: cheaper than ``n`` ``popitem`` calls)."""
    keys = list(islice(od, n))
    for k in keys:
        del od[k]
    return keys


class SLRUPolicy(EvictionPolicy):
    """Segmented LRU with a probation and a protected segment.

    Args:
        capacity_blocks: tier capacity in blocks.
        protected_share: fraction in [0, 1] of the capacity the protected
            segment may hold (floor of share x capacity blocks).
    Raises:
        UserError: share outside [0, 1].

    >>> p = SLRUPolicy(10); p.add([1, 2]); p.add([3], reused=True); p.evict(3)
    [1, 2, 3]
    """

    name = "slru"
    summary = "segmented LRU: probation + protected (80 % of capacity by default), promotion on reuse"
    source = "Karedla, Love and Wherry, IEEE Computer 1994; Caffeine BoundedLocalCache; libCacheSim SLRU.c"

    def __init__(self, capacity_blocks: int, protected_share: float = DEFAULT_PROTECTED_SHARE) -> None:
        super().__init__(capacity_blocks)
        if not (isinstance(protected_share, (int, float)) and 0.0 <= protected_share <= 1.0):
            raise UserError(f"protected share must be within [0, 1], got {shown_repr(protected_share)}")
        self.protected_share = float(protected_share)
        self.protected_max_blocks = math.floor(self.protected_share * self.capacity_blocks)
        self._probation: OrderedDict[int, None] = OrderedDict()
        self._protected: OrderedDict[int, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._probation) + len(self._protected)

    def __contains__(self, key: int) -> bool:
        return key in self._probation or key in self._protected

    def add(self, keys: Sequence[int], reused: bool = False) -> None:
        seg = self._protected if reused else self._probation
        for k in keys:
            seg[k] = None
        if reused:
            self._rebalance()

    def _rebalance(self) -> None:
        over = len(self._protected) - self.protected_max_blocks
        if over > 0:                        # protected's LRU end, oldest first, to probation's MRU end
            prob = self._probation
            for k in _pop_oldest(self._protected, over):
                prob[k] = None

    def remove(self, keys: Iterable[int]) -> None:
        prob, prot = self._probation, self._protected
        for k in keys:
            if prob.pop(k, _MISSING) is _MISSING:
                del prot[k]

    def touch(self, keys: Sequence[int]) -> None:
        prob, prot = self._probation, self._protected
        for k in keys:
            if prob.pop(k, _MISSING) is _MISSING:
                prot.move_to_end(k)
            else:
                prot[k] = None
        self._rebalance()

    def evict(self, n: int) -> list[int] | None:
        prob, prot = self._probation, self._protected
        if n > len(prob) + len(prot):
            return None
        victims = _pop_oldest(prob, n)
        if len(victims) < n:                # probation is empty now: the rest from protected
            victims += _pop_oldest(prot, n - len(victims))
        return victims

    def order(self) -> list[int]:
        return list(self._probation) + list(self._protected)

    def segments(self) -> tuple[list[int], list[int]]:
        """(probation, protected) keys, each LRU first."""
        return list(self._probation), list(self._protected)

    def _check(self) -> None:
        assert not (self._probation.keys() & self._protected.keys())
        assert len(self._protected) <= self.protected_max_blocks, (len(self._protected), self.protected_max_blocks)


#: The class's former name, kept so existing imports keep working.
ProtectedPolicy = SLRUPolicy
