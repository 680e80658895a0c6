"""LFU with dynamic aging on the handle contract with identity (:mod:`pcs.cache.policies.array`): a use count per
block number, not per key.

The rule of :class:`pcs.cache.policies.lfu.LFUPolicy` (LFU-DA, Arlitt et al. 2000; ``aging="none"``: libCacheSim
``LFU.c``): a block's key is ``K = uses + L``, the victim has the smallest K, among equal K the one put there
first; ``L`` (dynamic aging) is the last victim's K. Read on handles:

- every put names a handle (an add or a touch; a pinned block coming back is a new handle too), and handles are
  named in put order, so "put first among equal K" is "smaller handle": the victims of one call are the held
  handles with the smallest ``(K, handle)``; their K never changes once named, so buckets (K -> handles, in handle
  order, read from an index) and a heap of the bucket keys order them, stale (unheld) handles skipped;
- a run's handle gets its K from its block number ``b`` (:attr:`ArrayPolicy.ident`): ``uses[b] == 0`` (a block
  not known: new, dropped -- numbered anew by the host -- or a victim, forgotten here) starts at 1 use, 2 if
  reused; a known block reused (a hit, a touch) counts one more; a known block released without reuse (back
  from a pin) keeps its K;
- runs are taken at the next call, before its victims: ``L`` changes only at victims, so each K is the one the
  key policy computed at its ``add``.

Structures: lists indexed by block number (uses, last K), a dict of bucket lists (handles and their block
numbers) with a read index, a heap of bucket keys. Per handle named: a few Python operations; per victim: one. Checked call by call and hosted against
``lfu`` (``tests/cache/test_policies_array_ident.py``).
"""
from __future__ import annotations

import heapq
from itertools import compress
from typing import Sequence

from pcs.cache.policies.array import ArrayPolicy, Run
from pcs.cache.policies.lfu import LFUPolicy, check_aging

__all__ = ["ArrayLFU"]


class ArrayLFU(ArrayPolicy):
    """Least frequently used with dynamic aging (LFU-DA) by default, on handles with identity; arguments
    (``capacity_blocks``, ``aging``) and errors (:class:`UserError` for an unknown aging) as :class:`LFUPolicy`.

    >>> p = ArrayLFU(4); p.add([1, 2, 3]); p.touch([3]); p.touch([1]); p.evict(2)
    [2, 3]
    """

    name, summary = "lfu_array", "LFU-DA (Python, handle contract with identity)"
    source, prefix_closed, reuse_blind = LFUPolicy.source, False, False
    identity = True

    def __init__(self, capacity_blocks: int, aging: str = "dynamic") -> None:
        super().__init__(capacity_blocks)
        self.aging, self.inflation = check_aging(aging), 0
        self._uses: list[int] = []             # block number -> uses (0: not known)
        self._k: list[int] = []                # block number -> the K of its last put
        self._buckets: dict[int, list[int]] = {}   # K -> handles put with it, in handle order
        self._nums: dict[int, list[int]] = {}      # K -> the block numbers of those handles
        self._at: dict[int, int] = {}          # K -> index of its first handle not yet passed
        self._heap: list[int] = []             # the keys of _buckets (each once)

    def _take(self, runs: Sequence[Run]) -> None:
        """Give each run's handles their K (module docstring) and put the held ones in their buckets."""
        lo, end = runs[0][0], runs[-1][0] + runs[-1][1]
        nums, flags, uses, ks, buckets, L = self.idents(lo, end - lo), self.flags, self._uses, self._k, \
            self._buckets, self.inflation
        if len(uses) <= max(nums, default=-1):
            grow = [0] * (max(nums) + 1 - len(uses) + 1024)
            uses += grow
            ks += grow
        for first, count, reused in runs:
            for h in range(first, first + count):
                b = nums[h - lo]
                u = uses[b]
                if not u or reused:
                    u = uses[b] = u + 1 if u else 1 + reused
                    k = ks[b] = u + L
                else:
                    k = ks[b]
                if flags[h]:
                    bucket = buckets.get(k)
                    if bucket is None:
                        buckets[k] = [h]
                        self._nums[k] = [b]
                        self._at[k] = 0
                        heapq.heappush(self._heap, k)
                    else:
                        bucket.append(h)
                        self._nums[k].append(b)

    def victims(self, n: int, runs: Sequence[Run]) -> list[int]:
        if runs:
            self._take(runs)
        out: list[int] = []
        heap, buckets, at, flags, uses = self._heap, self._buckets, self._at, self.flags, self._uses
        while len(out) < n:
            k = heap[0]
            bucket, nums, i = buckets[k], self._nums[k], at[k]
            size, taken = len(bucket), len(out)
            while i < size and len(out) < n:
                h = bucket[i]
                if flags[h]:
                    out.append(h)
                    uses[nums[i]] = 0                  # a victim is forgotten (LFUPolicy.evict)
                i += 1
            if self.aging == "dynamic" and len(out) > taken:
                self.inflation = k
            if i == size:
                heapq.heappop(heap)
                del buckets[k], self._nums[k], at[k]
            else:
                at[k] = i
        return out

    def order_handles(self) -> list[int]:
        flags, out = self.flags, []
        for k in sorted(self._buckets):
            bucket = self._buckets[k][self._at[k]:]
            out += compress(bucket, [flags[h] for h in bucket])
        return out

    def _check(self) -> None:
        super()._check()
        assert sorted(self._heap) == sorted(self._buckets) == sorted(self._at) == sorted(self._nums), \
            "heap != bucket keys"
        assert all(b == sorted(b) for b in self._buckets.values()), "a bucket out of handle order"
