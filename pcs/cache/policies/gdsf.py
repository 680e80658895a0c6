"""GDSF, cost-aware: evict the leaf block with the smallest ``H = L + uses x cost / size``.

Greedy-Dual-Size-Frequency (Cherkasova, "Improving WWW Proxies Performance
with Greedy-Dual-Size-Frequency Caching Policy", HP Labs HPL-98-69, 1998;
as in libCacheSim ``libCacheSim/cache/eviction/cpp/GDSF.cpp``): each block
has a priority ``H = L + F x C / S`` -- F its uses while cached, C the cost of
a miss on it, S its size -- and the victim has the smallest H; the
"inflation" L becomes the victim's H (older priorities age).

Here (docs/semantics.md §8):

- C is the prefill seconds a hit on the block saves: the compute model's
  time to prefill one block after the ``depth`` blocks before it in its
  chain, ``prefill_s(block_size, depth x block_size)``
  (:func:`pcs.cache.policies.context.block_cost_from`; attention makes a deep
  block dearer to recompute); S is the block's bytes in the tier, the same
  for every block of a tier (docs/semantics.md §13), so H is kept in seconds
  (dividing every H of a tier by one S changes no choice);
- the position in the chain decides who may go: a hit on a block needs its
  whole prefix (the prefix rule, §3), so evicting a block whose child is
  still cached strands the child. Only leaves are victims -- blocks none of
  whose children is held by this policy -- as SGLang's ``RadixCache.evict``
  and Marconi (Pan et al., MLSys'25, FLOP-aware utility over radix-tree
  leaves) do; a parent becomes a candidate when its last child goes.
  Parent and depth come from the trace pre-pass (:class:`TraceOracle`,
  ``needs = ("chain",)``); without one every block is a leaf at depth 0.

A pinned block keeps F; released as a hit (or touched) F rises by 1 and H is
recomputed; a block new to this tier released as reused (restored from a
lower tier) starts at F = 2. Ties in H: the block that got its H first goes first.

Structures: H per held block, child counts, a lazy min-heap of leaves; O(log n) per key.
"""
from __future__ import annotations

import heapq
from functools import cached_property
from itertools import count
from typing import ClassVar, Iterable, Sequence

from pcs.cache.policies.base import EvictionPolicy
from pcs.cache.policies.context import PolicyContext

__all__ = ["GDSFPolicy"]


class GDSFPolicy(EvictionPolicy):
    """Cost-aware Greedy-Dual-Size-Frequency over the leaves of the cached prefix tree.

    Args:
        capacity_blocks: tier capacity in blocks.
        context: a :class:`PolicyContext` (parent, depth, per-block prefill
            seconds); None = every block a leaf costing 1 s.

    >>> p = GDSFPolicy(4); p.add([1, 2]); p.touch([1]); p.evict(1)
    [2]
    """

    name = "gdsf"
    summary = "cost-aware GDSF: prefill seconds saved per byte x uses, leaves of the prefix tree first"
    source = ("Cherkasova, HP Labs HPL-98-69 (1998); libCacheSim libCacheSim/cache/eviction/cpp/GDSF.cpp; "
              "leaves only as SGLang RadixCache.evict and Marconi (MLSys'25)")
    needs: ClassVar[tuple[str, ...]] = ("chain",)

    def __init__(self, capacity_blocks: int, context: PolicyContext | None = None) -> None:
        super().__init__(capacity_blocks)
        self.context = context if context is not None else PolicyContext()
        self._cost_of = self.context.block_cost_s
        self.inflation = 0.0                    # L, seconds
        self._uses: dict[int, int] = {}         # held or pinned -> F
        self._h: dict[int, tuple[float, int]] = {}   # held -> (H, tie stamp)
        self._children: dict[int, int] = {}     # block -> held children (entries > 0 only)
        self._heap: list[tuple[float, int, int]] = []
        self._stamp = count()

    @cached_property
    def _parent(self) -> dict:
        """block hash -> its parent (the trace pre-pass's dict, made on first use: a compiled twin never asks)."""
        oracle = self.context.oracle
        return oracle.parent if oracle is not None else {}

    @cached_property
    def _depth(self) -> dict:
        """block hash -> its depth (blocks), made on first use as :attr:`_parent`."""
        oracle = self.context.oracle
        return oracle.depth if oracle is not None else {}

    def __len__(self) -> int:
        return len(self._h)

    def __contains__(self, key: int) -> bool:
        return key in self._h

    def _cost(self, k: int) -> float:
        if self._cost_of is None:
            return 1.0
        return self._cost_of(self._depth.get(k, 0))

    def _hold(self, k: int) -> None:
        """Give ``k`` a fresh H, count it as its parent's held child, push it if it is a leaf."""
        entry = self._h[k] = (self.inflation + self._uses[k] * self._cost(k), next(self._stamp))
        p = self._parent.get(k)
        if p is not None:
            self._children[p] = self._children.get(p, 0) + 1
        if k not in self._children:
            heapq.heappush(self._heap, (*entry, k))

    def _unhold(self, k: int) -> None:
        del self._h[k]
        p = self._parent.get(k)
        if p is not None:
            c = self._children[p] - 1
            if c:
                self._children[p] = c
            else:
                del self._children[p]
                e = self._h.get(p)
                if e is not None:
                    heapq.heappush(self._heap, (*e, p))

    def add(self, keys: Sequence[int], reused: bool = False) -> None:
        uses = self._uses
        for k in keys:
            u = uses.get(k)
            uses[k] = (2 if reused else 1) if u is None else u + reused
            self._hold(k)

    def remove(self, keys: Iterable[int]) -> None:
        for k in keys:
            self._unhold(k)

    def drop(self, keys: Sequence[int]) -> None:
        """:meth:`remove`, and the keys' use counts forgotten (stored again, a key starts over)."""
        self.remove(keys)
        uses = self._uses
        for k in keys:
            del uses[k]

    def touch(self, keys: Sequence[int]) -> None:
        for k in keys:
            self._unhold(k)
            self._uses[k] += 1
            self._hold(k)

    def _pop_leaf(self) -> int:
        heap, h, children = self._heap, self._h, self._children
        while heap:
            hv, stamp, k = heapq.heappop(heap)
            if h.get(k) == (hv, stamp) and k not in children:
                return k
        return min(h, key=h.__getitem__)       # unreachable with a parent map without cycles

    def evict(self, n: int) -> list[int] | None:
        if n > len(self._h):
            return None
        out = []
        for _ in range(n):
            k = self._pop_leaf()
            self.inflation = self._h[k][0]
            self._unhold(k)
            del self._uses[k]
            out.append(k)
        return out

    def order(self) -> list[int]:
        """Held keys by H (smallest first; whether a block is a leaf is not considered)."""
        return sorted(self._h, key=self._h.__getitem__)

    def _check(self) -> None:
        assert self._h.keys() <= self._uses.keys()
        counts: dict[int, int] = {}
        for k in self._h:
            p = self._parent.get(k)
            if p is not None:
                counts[p] = counts.get(p, 0) + 1
        assert counts == self._children, "held-children counts"
