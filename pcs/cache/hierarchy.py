"""Tiers in order (GPU first): lookup through all tiers, restore up, demote down.

One request's life in the cache, as vLLM's ``KVCacheManager`` with its
offloading connector, SGLang HiCache and LMCache do it (docs/semantics.md §3-§7):

1. :meth:`Hierarchy.start` -- lookup walks the request's cacheable blocks
   from the head through all tiers and stops at the first block resident in
   none (``lead``). ``hits = min(cap, lead)``; each hit counts once, at the
   highest tier holding it. GPU-resident lead blocks are pinned first (also
   those beyond the last-token cap: recomputed for logits, used like hits);
   then slots are reserved for lower-tier hits (restored to the GPU tier over
   the link), for the new blocks and for ``extra_blocks`` (partial block and
   output, modeled timing). Reserving evicts unpinned GPU blocks; a victim is
   demoted to the next tier (write-back) or dropped (write-through, it was
   copied down when computed). A request needing more slots than the GPU tier
   could ever give it caches its head and is marked ``truncated``; with
   ``wait_if_full`` a request that cannot get its slots *now* gets None and
   nothing changes (it waits, FIFO).
2. :meth:`Hierarchy.prefill_done` -- the computed blocks become cached
   (pinned) in the GPU tier; with write-through they are also written to
   every lower tier.
3. :meth:`Hierarchy.finish` -- pins dropped tail first (vLLM frees a
   request's blocks in reverse order, ``kv_cache_manager.py``), so the tail is
   evicted before its parent; reserved slots are given back.

A lower-tier copy stays after a restore (a cache, as LMCache and HiCache keep
it) and is touched; a demoted block already held below is not written again,
only touched.
"""
from __future__ import annotations

from itertools import takewhile
from typing import Sequence

from pcs.cache.tier import Tier

__all__ = ["Hierarchy", "Admission", "WRITE_POLICIES", "check_hierarchy_args"]

#: ``back``: evicted blocks move down one tier; ``through``: computed blocks are
#: copied to every lower tier at once and evictions drop.
WRITE_POLICIES = ("back", "through")


class Admission:
    """One running request's hold on the cache (mutable; made by :meth:`Hierarchy.start`).

    Attributes:
        lead: leading blocks resident in some tier at lookup.
        hits: hit blocks, ``min(cap, lead)`` (fewer when truncated).
        tier_hits: hit blocks per tier, len = number of tiers.
        last_hit_tier: tier index of hit block ``hits - 1`` (-1 if no hit).
        restored: blocks restored per tier (index 0 unused, always 0).
        truncated: the request could not get all its slots.
        used: GPU keys pinned at admission (hits, restored, resident beyond
            the cap), chain order.
        new: computed keys that get a slot, chain order.
        reserved: reserved (not resident) slots this request holds.
    """

    __slots__ = ("lead", "hits", "tier_hits", "last_hit_tier", "restored", "truncated", "used", "new",
                 "reserved")

    def __init__(self, lead, hits, tier_hits, last_hit_tier, restored, truncated, used, new, reserved):
        self.lead, self.hits, self.tier_hits, self.last_hit_tier = lead, hits, tier_hits, last_hit_tier
        self.restored, self.truncated, self.used, self.new, self.reserved = restored, truncated, used, new, reserved


def _first_repeat(keys: Sequence[int]) -> int:
    """Index of the first key that repeats an earlier one (len(keys) if none)."""
    seen: set[int] = set()
    for i, k in enumerate(keys):
        if k in seen:
            return i
        seen.add(k)
    return len(keys)


def check_hierarchy_args(tiers: Sequence[Tier], write_policy: str) -> list[str]:
    """Validate a tier list and write policy; returns the tier names (GPU first).

    Raises:
        ValueError: no tier, duplicate tier names, or an unknown write policy
            (the message lists :data:`WRITE_POLICIES`).
    """
    if not tiers:
        raise ValueError("at least one tier is needed (the GPU tier)")
    names = [t.name for t in tiers]
    if len(set(names)) != len(names):
        raise ValueError(f"tier names must be distinct, got {names}")
    if write_policy not in WRITE_POLICIES:
        raise ValueError(f"unknown write policy {write_policy!r}; valid: {', '.join(WRITE_POLICIES)}")
    return names


class Hierarchy:
    """An ordered list of tiers (index 0 = GPU) with a write policy.

    Args:
        tiers: the tiers, fastest first; at least one.
        write_policy: ``"back"`` (default) or ``"through"``.
    Raises:
        ValueError: no tier, duplicate tier names, or an unknown write policy.

    Counters: ``written_blocks[j]`` blocks written into tier j (demoted or
    written through), ``dropped_blocks`` blocks pushed out of the last tier
    (evicted there, or not fitting); evictions of every tier are in its
    ``stats.evicted_blocks``.
    """

    def __init__(self, tiers: Sequence[Tier], write_policy: str = "back") -> None:
        check_hierarchy_args(tiers, write_policy)
        self.tiers = list(tiers)
        self.write_through = write_policy == "through"
        self.write_policy = write_policy
        self.written_blocks = [0] * len(self.tiers)
        self.dropped_blocks = 0

    # -- step 1 ---------------------------------------------------------------------------------
    def start(self, keys: Sequence[int], n: int, cap: int, extra_blocks: int = 0,
              wait_if_full: bool = False) -> Admission | None:
        """Look up, pin, reserve and restore for one request (see module docstring).

        Args:
            keys: the request's block ids (python ints), chain order.
            n: cacheable blocks (``BlockRules.cacheable_blocks``).
            cap: most blocks that may count as hits (``BlockRules.max_hit_blocks``), <= n.
            extra_blocks: further slots to hold while running (not cached).
            wait_if_full: return None instead of evicting less than needed
                when the slots are not available now.
        Returns:
            an :class:`Admission`, or None (only with ``wait_if_full``; no change).

        An id repeated within one request (impossible with chained hashes)
        ends its cacheable chain before the repeat, so every key of one
        request's lists is distinct (the tiers' batch operations rely on it).
        """
        head = keys[:n] if n < len(keys) else keys
        if n > 1 and len(set(head)) < n:
            n = _first_repeat(head)
            head = head[:n]
            cap = min(cap, n)
        lead, hits, used, restores, new, n_restore, tier_hits, last, where = self._lookup(head, n, cap)
        gpu = self.tiers[0]
        need = n_restore + len(new) + extra_blocks
        evictable = gpu.count_evictable(used) if used else 0
        avail = gpu.available_blocks - evictable
        budget = need
        if need > avail:
            limit = gpu.capacity_blocks - len(used)
            if wait_if_full and avail < min(need, limit):
                return None
            budget = min(need, avail)
        truncated = budget < need
        if truncated:
            if n_restore > budget:
                if where is None:
                    where = [0] * len(used) + [1] * n_restore    # fast path: GPU run, then restores
                hits, restores, tier_hits = self._cut_restores(where, restores, budget, hits)
                last = where[hits - 1] if hits else 0
                n_restore = budget
            new = new[:max(0, budget - n_restore)]
        if used:
            gpu.pin(used, evictable)
        victims = gpu.reserve(budget)
        assert victims is not None
        restored, filled, used = self._restore(head, lead, used, restores, where) if n_restore else \
            ([0] * len(self.tiers), 0, used)
        if victims:
            self._evicted(victims, 0)
        return Admission(lead, hits, tier_hits, last if hits else -1, restored, truncated, used, new,
                         budget - filled)

    def _lookup(self, head: list, n: int, cap: int) -> tuple:
        """(lead, hits, used, restores, new, n_restore, tier_hits, last_hit_tier, where) of one chain.

        ``used``: GPU-resident lead blocks; ``restores``: per lower tier, its
        hit blocks (positions < cap); ``new``: blocks to compute (lower-tier
        blocks beyond the cap, then everything after the lead); ``where``:
        tier per lead position, None on the fast paths.
        """
        res0 = self.tiers[0].resident
        ntiers = len(self.tiers)
        g = len(list(takewhile(res0.__contains__, head)))
        if g == n or ntiers == 1:
            hits = min(cap, g)
            return g, hits, head[:g], [], head[g:], 0, [hits] + [0] * (ntiers - 1), 0, None
        run = list(takewhile(self.tiers[1].resident.__contains__, head[g:]))
        p = g + len(run)
        if (p == n or self._in_no_tier(head[p])) and not any(map(res0.__contains__, run)):
            # the usual case: a GPU run, then a run in tier 1, then a block in no tier
            hits = min(cap, p)
            k = min(len(run), max(0, cap - g))
            tier_hits = [min(hits, g), hits - min(hits, g)] + [0] * (ntiers - 2)
            return (p, hits, head[:g], [run[:k]] + [[] for _ in range(ntiers - 2)], run[k:] + head[p:], k,
                    tier_hits, 0 if hits <= g else 1, None)
        lead, used, restores, new, where = self._lookup_lower(head, g, cap)
        hits = min(cap, lead)
        tier_hits = [where[:hits].count(j) for j in range(ntiers)]
        return (lead, hits, used, restores, new, sum(map(len, restores)), tier_hits,
                where[hits - 1] if hits else 0, where)

    def _in_no_tier(self, key: int) -> bool:
        """Whether ``key`` is resident in no tier."""
        for t in self.tiers:
            if key in t.resident:
                return False
        return True

    def _restore(self, head: list, lead: int, used: list, restores: list, where) -> tuple[list, int, list]:
        """Fill the GPU slots of restored blocks, touch their lower copies.

        Returns:
            (restored blocks per tier, slots filled, every pinned GPU key of the lead in chain order).
        """
        gpu = self.tiers[0]
        restored = [0] * len(self.tiers)
        filled = 0
        for j, rkeys in enumerate(restores, start=1):
            if rkeys:
                restored[j] = len(rkeys)
                filled += len(rkeys) - len(gpu.fill(rkeys))
                self.tiers[j].touch(rkeys[::-1])
        if where is None:       # GPU run then restored run: chain order
            return restored, filled, used + restores[0]
        res0 = gpu.resident
        return restored, filled, [k for k in head[:lead] if res0.get(k)]

    def _lookup_lower(self, head, g, cap):
        """Slow path of lookup: continue below the GPU tier from position ``g``."""
        res0 = self.tiers[0].resident
        lowers = [t.resident for t in self.tiers[1:]]
        where = [0] * g
        used = list(head[:g])
        restores: list[list[int]] = [[] for _ in lowers]
        beyond: list[int] = []
        lead = len(head)
        for i in range(g, len(head)):
            k = head[i]
            if k in res0:
                where.append(0)
                used.append(k)
                continue
            for j, res in enumerate(lowers, start=1):
                if k in res:
                    where.append(j)
                    (restores[j - 1] if i < cap else beyond).append(k)
                    break
            else:
                lead = i
                break
        return lead, used, restores, beyond + list(head[lead:]), where

    def _cut_restores(self, where, restores, budget, hits):
        """Keep only the first ``budget`` restores (chain order); hits end at the first one cut."""
        kept = [[] for _ in restores]
        seen = 0
        pos = [0] * len(restores)
        for i in range(hits):
            j = where[i]
            if j == 0:
                continue
            if seen == budget:
                hits = i
                break
            kept[j - 1].append(restores[j - 1][pos[j - 1]])
            pos[j - 1] += 1
            seen += 1
        tier_hits = [where[:hits].count(j) for j in range(len(self.tiers))]
        return hits, kept, tier_hits

    def _evicted(self, victims: list[int], index: int) -> None:
        """Victims of tier ``index``: demote down (write-back) or drop (write-through)."""
        if self.write_through:      # a copy was written below when computed: discard
            return
        for j in range(index + 1, len(self.tiers)):
            victims, written = self.tiers[j].insert(victims)
            self.written_blocks[j] += written
            if not victims:
                return
        self.dropped_blocks += len(victims)

    # -- steps 2 and 3 ----------------------------------------------------------------------------
    def prefill_done(self, adm: Admission) -> None:
        """The request's computed blocks become cached (pinned) in the GPU tier."""
        new = adm.new
        if not new:
            return
        shared = self.tiers[0].fill(new)
        adm.reserved -= len(new) - len(shared)
        if self.write_through:
            down = new[::-1]
            for j in range(1, len(self.tiers)):
                pushed, written = self.tiers[j].insert(down)
                self.written_blocks[j] += written
                if j == len(self.tiers) - 1:
                    self.dropped_blocks += len(pushed)

    def finish(self, adm: Admission) -> None:
        """Drop the request's pins tail first and give back its reserved slots."""
        gpu = self.tiers[0]
        if gpu.policy.reuse_blind and adm.new and adm.used:   # the flags differ only: one call
            keys = [*adm.used, *adm.new]
            keys.reverse()
            gpu.unpin(keys, False)
        else:
            if adm.new:
                gpu.unpin(adm.new[::-1], False)
            if adm.used:
                gpu.unpin(adm.used[::-1], True)
        gpu.release(adm.reserved)
        adm.reserved = 0

    def _check(self) -> None:
        """Assert every tier's invariants; lower tiers hold no pins and no reserved slots."""
        for i, t in enumerate(self.tiers):
            t._check()
            if i:
                assert t.num_pinned == 0 and t.reserved_blocks == 0, t
