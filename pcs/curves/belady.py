"""The offline optimum (Belady's MIN) for a prefix cache, per capacity.

Belady (1966, "A study of replacement algorithms for a virtual-storage
computer") evicts the block whose next use is farthest in the future; for
unit-size blocks and unit-cost misses this maximises hits (Mattson et al.
1970 proved MIN optimal). Adapted here to the replay rules of
docs/semantics.md §3-§6 so it is an upper bound for
every online policy replayed with ``timing="sequential"`` and one tier:

- lookup walks the request's cacheable blocks from the head and stops at the
  first non-resident one (``lead``); hits are ``min(cap, lead)`` blocks;
- the ``lead`` blocks are pinned before the ``n - lead`` new blocks are
  allocated; new blocks stay pinned until the request ends; a victim must be
  unpinned and have no resident child (a *leaf*), so the cache stays
  prefix-closed; when no victim exists the request caches only its head
  (``requests_truncated``);
- "next use" is the next access that can earn hit tokens: an access at a
  position >= the request's last-token cap earns nothing and is skipped
  (evicting before it and re-inserting at it is never worse). For chained
  ids a parent's next use is never later than its child's, so the farthest
  block among leaves is the farthest among all blocks (ties go to the
  deeper block): the prefix constraint costs MIN nothing.

With the default :class:`pcs.blocks.BlockRules` every hit block is worth
``block_size`` tokens, so this is the optimum; tests/curves/test_belady.py checks
it against an exhaustive search over eviction choices on tiny traces. (With
``cache_partial_blocks`` and no last-token cap a partial block is worth fewer
tokens and MIN is not proven optimal; exhaustive search on 400 tiny traces
found no counterexample.)

Cost per capacity: O(N log N) with a lazy max-heap keyed by next use;
pure Python (measured speed: docs/performance.md).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from pcs.curves.stackdist import FlatAccesses
from pcs.errors import UserError

__all__ = ["BeladyPlan", "BeladyOutcome", "plan_belady", "belady_hits"]


@dataclass(frozen=True, slots=True)
class BeladyPlan:
    """Per-access inputs of the MIN simulation, shared by all capacities.

    Attributes:
        dense: int64, shape (N,): block hashes remapped to 0..num_distinct-1.
        next_key: int64, shape (N,): ``r * stride + pos`` of the block's next
            hit-earning access after this one (r request index, pos position
            in it), or ``never`` when there is none.
        never: the key meaning "never used again" (larger than any key).
        num_distinct: number of distinct blocks.
        flat: the accesses planned.
    """

    dense: np.ndarray
    next_key: np.ndarray
    never: int
    num_distinct: int
    flat: FlatAccesses


@dataclass(frozen=True, slots=True)
class BeladyOutcome:
    """MIN at one capacity.

    Attributes:
        capacity_blocks: cache size in blocks.
        hit_tokens: token-weighted hits (sum over requests).
        hit_blocks: sum of ``min(cap, lead)`` over requests.
        block_misses: sum of ``n - lead`` (before the last-token cap).
        requests_truncated: requests that could not cache all new blocks.
    """

    capacity_blocks: int
    hit_tokens: int
    hit_blocks: int
    block_misses: int
    requests_truncated: int


def plan_belady(flat: FlatAccesses) -> BeladyPlan:
    """Remap ids and find every access's next hit-earning use (vectorised).

    Cost: one stable sort of the N accesses by id.
    """
    n = flat.num_accesses
    uniq, dense = np.unique(flat.block_hashes, return_inverse=True)
    dense = dense.astype(np.int64).reshape(-1)
    counts = np.diff(flat.req_offsets)
    stride = int(counts.max()) + 1 if n else 1
    req = np.repeat(np.arange(counts.shape[0], dtype=np.int64), counts)
    pos = np.arange(n, dtype=np.int64) - np.repeat(flat.req_offsets[:-1], counts)
    key = req * stride + pos
    never = int(counts.shape[0]) * stride
    order = np.argsort(dense, kind="stable")
    g, k_s = dense[order], key[order]
    val = np.where(flat.hit_weight_tokens[order] > 0, k_s, never)
    big = never + 1
    suffix_min = np.minimum.accumulate((g * big + val)[::-1])[::-1]
    nxt = np.full(n, never, dtype=np.int64)
    if n > 1:
        same = g[1:] == g[:-1]
        nxt[:-1] = np.where(same, suffix_min[1:] - g[:-1] * big, never)
    next_key = np.empty(n, dtype=np.int64)
    next_key[order] = nxt
    return BeladyPlan(dense, next_key, never, int(uniq.shape[0]), flat)


class _MinCache:
    """Resident set, pins, resident-child counts and a lazy heap of evictable leaves.

    A block is evictable iff resident, not pinned by the running request and
    without resident children; heap entries ``(-next_key, block)`` are pushed
    whenever a block may have become evictable and validated when popped.
    """

    def __init__(self, num_blocks: int, capacity_blocks: int):
        self.capacity = capacity_blocks
        self.resident = bytearray(num_blocks)
        self.children = [0] * num_blocks
        self.parent = [-1] * num_blocks
        self.key = [0] * num_blocks
        self.pin = [-1] * num_blocks  # index of the request that pins the block
        self.heap: list[tuple[int, int]] = []
        self.size = 0

    def victim(self, r: int) -> int:
        """Pop the evictable leaf with the farthest next use, or -1 when none."""
        heap, resident, children, pin, key = self.heap, self.resident, self.children, self.pin, self.key
        while heap:
            nk, y = heapq.heappop(heap)
            if resident[y] and not children[y] and pin[y] != r and key[y] == -nk:
                return y
        return -1

    def evict(self, v: int, r: int) -> None:
        self.resident[v] = 0
        self.size -= 1
        p = self.parent[v]
        if p >= 0:
            self.children[p] -= 1
            if not self.children[p] and self.pin[p] != r and self.resident[p]:
                heapq.heappush(self.heap, (-self.key[p], p))

    def insert(self, x: int, parent: int, r: int) -> None:
        self.resident[x] = 1
        self.size += 1
        self.pin[x] = r
        self.parent[x] = parent
        if parent >= 0:
            self.children[parent] += 1

    def finish(self, blocks: list[int], next_keys: list[int]) -> None:
        """Unpin a request's cached blocks with their new next-use keys."""
        for x, k in zip(blocks, next_keys):
            self.key[x] = k
        for x in blocks:
            if not self.children[x]:
                heapq.heappush(self.heap, (-self.key[x], x))

    def _check(self) -> None:
        """Invariants: size, capacity, child counts, prefix closure."""
        res = [x for x in range(len(self.resident)) if self.resident[x]]
        assert self.size == len(res) <= self.capacity
        counts = [0] * len(self.resident)
        for x in res:
            p = self.parent[x]
            if p >= 0:
                assert self.resident[p], "a resident block's parent is resident"
                counts[p] += 1
        assert all(counts[x] == self.children[x] for x in res)


def belady_hits(plan: BeladyPlan, capacity_blocks: int, check: bool = False) -> BeladyOutcome:
    """Replay the trace under MIN with a cache of ``capacity_blocks`` blocks.

    ``check`` asserts the cache invariants after every request (tests).

    Raises:
        UserError: negative capacity.
    """
    if capacity_blocks < 0:
        raise UserError(f"capacity_blocks must be >= 0, got {capacity_blocks}")
    cache = _MinCache(plan.num_distinct, int(capacity_blocks))
    dense, nkey = plan.dense.tolist(), plan.next_key.tolist()
    weight, off = plan.flat.hit_weight_tokens.tolist(), plan.flat.req_offsets.tolist()
    resident = cache.resident
    hit_tokens = hit_blocks = misses = truncated = 0
    for r in range(len(off) - 1):
        a, b = off[r], off[r + 1]
        i = a
        while i < b and resident[dense[i]]:
            cache.pin[dense[i]] = r
            i += 1
        hit_blocks += sum(1 for j in range(a, i) if weight[j])
        hit_tokens += sum(weight[a:i])
        misses += b - i
        end = b
        for j in range(i, b):
            x = dense[j]
            if resident[x]:  # only for ids that are not chained hashes
                cache.pin[x] = r
                continue
            if cache.size >= cache.capacity:
                v = cache.victim(r)
                if v < 0:
                    truncated += 1
                    end = j
                    break
                cache.evict(v, r)
            cache.insert(x, dense[j - 1] if j > a else -1, r)
        cache.finish(dense[a:end], nkey[a:end])
        if check:
            cache._check()
    return BeladyOutcome(cache.capacity, hit_tokens, hit_blocks, misses, truncated)
