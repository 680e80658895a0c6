"""Tiers in order (GPU first): lookup through all tiers, restore up, demote down.

One request's life in the cache, as vLLM's ``KVCacheManager`` with its
offloading connector, SGLang HiCache and LMCache do it (docs/semantics.md §3-§7):

1. :meth:`Hierarchy.start` -- lookup walks the request's cacheable blocks
   from the head through all tiers and stops at the first block resident in
   none (``prefix_hit_blocks``). ``hit_blocks = min(max_hit_blocks,
   prefix_hit_blocks)``; each hit counts once, at the highest tier holding it. GPU-resident lead blocks are pinned first (also
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

This is the reference every faster twin is diffed against (the compiled
all-LRU hierarchy, the lru-scan; ``docs/semantics.md §15``), so it is kept in
its plainest form: one loop per rule, no special-case fast branches.
"""
from __future__ import annotations

from itertools import chain
from typing import Sequence

from pcs.cache.tier import Tier
from pcs.choices import WRITE_POLICIES  # write-back / write-through (docs/semantics.md §7)
from pcs.errors import UnknownNameError, UserError

__all__ = ["Hierarchy", "Admission", "WRITE_POLICIES", "check_hierarchy_args"]


class Admission:
    """One running request's hold on the cache (mutable; made by :meth:`Hierarchy.start`).

    Attributes:
        prefix_hit_blocks: leading blocks resident in some tier at lookup (``docs/semantics.md §3``).
        hit_blocks: blocks counted as hits, ``min(max_hit_blocks, prefix_hit_blocks)``
            (fewer when truncated; §4, §5).
        hit_blocks_per_tier: hit blocks per tier (each counted at the highest
            tier holding it), len = number of tiers.
        last_hit_tier: tier index of hit block ``hit_blocks - 1`` (-1 if no hit).
        restored_blocks_per_tier: blocks restored to the GPU tier per tier
            (index 0 unused, always 0).
        truncated: the request could not get all its slots (§5).
        pinned_hashes: GPU blocks pinned at admission (hits, restored, resident
            beyond the cap), chain order.
        computed_hashes: blocks to compute that got a slot, chain order.
        reserved_blocks: reserved (not resident) slots this request holds.
        gpu_lead_blocks: leading hit blocks served by the GPU tier, before the
            first hit served by a lower tier (= hit_blocks when none is).
        cached_blocks: leading ``computed_hashes`` cached so far (0 until
            :meth:`Hierarchy.cache_computed` or :meth:`Hierarchy.prefill_done`).
    """

    __slots__ = ("prefix_hit_blocks", "hit_blocks", "hit_blocks_per_tier", "last_hit_tier",
                 "restored_blocks_per_tier", "truncated", "pinned_hashes", "computed_hashes", "reserved_blocks",
                 "gpu_lead_blocks", "cached_blocks")

    def __init__(self, prefix_hit_blocks, hit_blocks, hit_blocks_per_tier, last_hit_tier, restored_blocks_per_tier,
                 truncated, pinned_hashes, computed_hashes, reserved_blocks, gpu_lead_blocks=None):
        self.prefix_hit_blocks, self.hit_blocks = prefix_hit_blocks, hit_blocks
        self.hit_blocks_per_tier, self.last_hit_tier = hit_blocks_per_tier, last_hit_tier
        self.restored_blocks_per_tier, self.truncated = restored_blocks_per_tier, truncated
        self.pinned_hashes, self.computed_hashes, self.reserved_blocks = pinned_hashes, computed_hashes, reserved_blocks
        self.gpu_lead_blocks = hit_blocks if gpu_lead_blocks is None else gpu_lead_blocks
        self.cached_blocks = 0


def _first_repeat(block_hashes: Sequence[int]) -> int:
    """Index of the first block hash that repeats an earlier one (len(block_hashes) if none)."""
    if len(set(block_hashes)) == len(block_hashes):
        return len(block_hashes)
    seen: set[int] = set()
    for i, h in enumerate(block_hashes):
        if h in seen:
            return i
        seen.add(h)
    return len(block_hashes)


def check_hierarchy_args(tiers: Sequence[Tier], write_policy: str) -> list[str]:
    """Validate a tier list and write policy; returns the tier names (GPU first).

    Raises:
        UserError: no tier, duplicate tier names, or an unknown write policy
            (the message lists :data:`WRITE_POLICIES`).
    """
    if not tiers:
        raise UserError("at least one tier is needed (the GPU tier)")
    names = [t.name for t in tiers]
    check_distinct(names, "tier names")
    check_write_policy(write_policy)
    return names


def check_write_policy(write_policy: str) -> None:
    """The one check of a write policy's name (docs/semantics.md §7), for every hierarchy and :func:`pcs.replay`.

    Raises:
        UserError: ``write_policy`` is not one of :data:`WRITE_POLICIES` (the message lists them).
    """
    if write_policy not in WRITE_POLICIES:
        raise UnknownNameError("write policy", write_policy, WRITE_POLICIES)


def check_distinct(names: Sequence[str], what: str) -> None:
    """The one check that a hierarchy's tier (or tier level) names are distinct; ``what`` names them in the
    message (``tier names``, ``tier level names``).

    Raises:
        UserError: a name given twice, listing ``names``.
    """
    if len(set(names)) != len(names):
        raise UserError(f"{what} must be distinct, got {names}")


class Hierarchy:
    """An ordered list of tiers (index 0 = GPU) with a write policy.

    Args:
        tiers: the tiers, fastest first; at least one.
        write_policy: ``"back"`` (default) or ``"through"``.
    Raises:
        UserError: no tier, duplicate tier names, or an unknown write policy.

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
        self._observers = [t.admission.observe for t in self.tiers if getattr(t, "admission", None) is not None]
        #: (tier index, its ``resident`` dict) per tier, GPU first: what :meth:`_lookup` walks (the dicts are the
        #: tiers' own, read only here).
        self._residents = [(j, t.resident) for j, t in enumerate(self.tiers)]

    # -- step 1 ---------------------------------------------------------------------------------
    def start(self, block_hashes: Sequence[int], cacheable_blocks: int, max_hit_blocks: int, extra_blocks: int = 0,
              wait_if_full: bool = False) -> Admission | None:
        """Look up, pin, reserve and restore for one request (see module docstring).

        Args:
            block_hashes: the request's block hashes (python ints), chain order.
            cacheable_blocks: blocks that may be cached (``BlockRules.cacheable_blocks``, §2).
            max_hit_blocks: most blocks that may count as hits
                (``BlockRules.max_hit_blocks``, §4), <= ``cacheable_blocks``.
            extra_blocks: further slots to hold while running (not cached).
            wait_if_full: return None instead of evicting less than needed
                when the slots are not available now.
        Returns:
            an :class:`Admission`, or None (only with ``wait_if_full``; no change).

        A block hash repeated within one request (impossible with chained
        hashes) ends its cacheable chain before the repeat, so every hash of
        one request's lists is distinct (the tiers' batch operations rely on it).
        """
        head = block_hashes[:cacheable_blocks]
        if len(set(head)) < len(head):
            head = head[:_first_repeat(head)]
        cap = min(max_hit_blocks, len(head))
        where, pinned, restores, beyond = self._lookup(head, cap)
        lead = len(where)
        hits = min(cap, lead)
        computed = beyond + head[lead:]
        need = sum(map(len, restores)) + len(computed) + extra_blocks
        gpu = self.tiers[0]
        # the slots the request gets (§5): ``need``, or fewer when the GPU tier cannot give them; none (wait)
        # with ``wait_if_full`` when the slots it could ever get are not available now
        res = gpu.resident      # available: free plus evictable slots, less those its pins take out of the policy
        avail = gpu.capacity_blocks - len(res) - gpu.reserved_blocks + len(gpu.policy) - \
            list(map(res.__getitem__, pinned)).count(0)
        budget = need if need <= avail else avail
        if budget < need and wait_if_full and avail < min(need, gpu.capacity_blocks - len(pinned)):
            return None
        if budget < need:
            hits, restores, computed = self._truncate(where, hits, restores, computed, budget)
        for observe in self._observers:         # admission policies count uses and hits (§8)
            observe(head, hits)
        if pinned:
            gpu.pin(pinned)
        victims = gpu.reserve(budget, chain(*restores, computed))
        assert victims is not None
        restored, filled = self._restore(restores) if any(restores) else ([0] * len(self.tiers), 0)
        if victims:
            self._evicted(victims, 0)
        tier_hits = list(map(where[:hits].count, range(len(self.tiers))))
        # pinned now: every hit (GPU-resident or restored) and the GPU-resident lead blocks beyond the hits
        pinned = head[:hits]
        if lead > hits:
            pinned += [h for h, j in zip(head[hits:lead], where[hits:]) if j == 0]
        gpu_lead = hits if tier_hits[0] == hits else list(map(bool, where)).index(True)    # the first from below
        return Admission(lead, hits, tier_hits, where[hits - 1] if hits else -1, restored, budget < need, pinned,
                         computed, budget - filled, gpu_lead)

    def _lookup(self, head: Sequence[int], cap: int) -> tuple[list, list, list, list]:
        """The prefix rule (§3): walk the leading blocks resident in some tier, each at the highest tier
        holding it.

        Returns:
            (tier index per leading block; GPU-resident leading blocks; per lower tier, its leading
            blocks before ``cap`` (to restore); lower-tier leading blocks from ``cap`` on (to compute)),
            block hashes in chain order.
        """
        residents = self._residents
        where: list[int] = []
        pinned: list[int] = []
        restores: list[list[int]] = [[] for _ in residents[1:]]
        beyond: list[int] = []
        for i, h in enumerate(head):
            for j, res in residents:
                if h in res:
                    break
            else:
                break
            where.append(j)
            if j == 0:
                pinned.append(h)
            elif i < cap:
                restores[j - 1].append(h)
            else:
                beyond.append(h)
        return where, pinned, restores, beyond

    def _truncate(self, where: list, hits: int, restores: list, computed: list, budget: int) -> tuple:
        """A request that gets only ``budget`` slots (§5): restores first, in chain order; hits end at the
        first restore cut. Returns (hits, restores kept per lower tier, computed blocks kept)."""
        n_restore = sum(map(len, restores))
        if n_restore <= budget:
            return hits, restores, computed[:budget - n_restore]
        kept: list[list[int]] = [[] for _ in restores]
        pos = [0] * len(restores)
        for i in range(hits):
            j = where[i]
            if j == 0:
                continue
            if sum(pos) == budget:
                return i, kept, []
            kept[j - 1].append(restores[j - 1][pos[j - 1]])
            pos[j - 1] += 1
        return hits, kept, []

    def _restore(self, restores: list) -> tuple[list, int]:
        """Fill the GPU slots of restored blocks, touch their lower copies (§7).

        Returns:
            (restored blocks per tier, slots filled).
        """
        gpu = self.tiers[0]
        restored = [0] * len(self.tiers)
        filled = 0
        for j, hashes in enumerate(restores, start=1):
            if hashes:
                restored[j] = len(hashes)
                filled += len(hashes) - len(gpu.fill(hashes))
                self.tiers[j].touch(hashes[::-1])
        return restored, filled

    def _evicted(self, victims: list[int], index: int) -> None:
        """Victims of tier ``index``: demote down (write-back) or drop (write-through), §7."""
        if self.write_through or not victims:      # write-through: a copy was written below when computed
            return
        for j in range(index + 1, len(self.tiers)):
            victims, written = self.tiers[j].insert(victims)
            self.written_blocks[j] += written
            if not victims:
                return
        self.dropped_blocks += len(victims)

    # -- steps 2 and 3 ----------------------------------------------------------------------------
    def prefill_done(self, adm: Admission) -> None:
        """The request's computed blocks become cached (pinned) in the GPU tier (write-through: also below);
        those :meth:`cache_computed` cached before stay as they are."""
        computed = adm.computed_hashes
        if adm.cached_blocks:
            computed = computed[adm.cached_blocks:]
        adm.cached_blocks = len(adm.computed_hashes)
        if not computed:
            return
        shared = self.tiers[0].fill(computed)
        adm.reserved_blocks -= len(computed) - len(shared)
        if self.write_through:
            self._write_down(computed)

    def cache_computed(self, adm: Admission, n: int) -> None:
        """The first ``n`` computed blocks (fewer if it has fewer) are cached now, before the prefill is done:
        as :meth:`prefill_done` for those not cached yet (the step scheduler's ``cache_blocks_at`` other than
        ``prefill-done``, docs/semantics.md §9; vLLM v1 ``KVCacheManager.allocate_slots`` caches the full blocks
        of each scheduled chunk). ``n`` at or below :attr:`Admission.cached_blocks` changes nothing."""
        n = min(n, len(adm.computed_hashes))
        if n <= adm.cached_blocks:
            return
        blocks = adm.computed_hashes[adm.cached_blocks:n]
        adm.cached_blocks = n
        shared = self.tiers[0].fill(blocks)
        adm.reserved_blocks -= len(blocks) - len(shared)
        if self.write_through:
            self._write_down(blocks)

    def finish(self, adm: Admission) -> None:
        """Drop the request's pins tail first (§6) and give back its reserved slots."""
        gpu = self.tiers[0]
        if adm.computed_hashes and adm.pinned_hashes and gpu.policy.reuse_blind:
            # the two releases differ only in the ``reused`` flag, which this policy ignores: one release
            gpu.unpin((adm.pinned_hashes + adm.computed_hashes)[::-1], False)
        else:
            if adm.computed_hashes:
                gpu.unpin(adm.computed_hashes[::-1], False)
            if adm.pinned_hashes:
                gpu.unpin(adm.pinned_hashes[::-1], True)
        gpu.release(adm.reserved_blocks)
        adm.reserved_blocks = 0

    # -- a running request's space (the step scheduler, docs/semantics.md §9) ----------------------
    def held_blocks(self) -> int:
        """GPU slots held by running requests: pinned blocks plus reserved slots."""
        gpu = self.tiers[0]
        return gpu.num_pinned + gpu.reserved_blocks

    def grow(self, adm: Admission, n: int) -> bool:
        """Reserve ``n`` more GPU slots for a running request (its output fills blocks as it decodes).

        Evicts unpinned GPU blocks as :meth:`start` does (victims demoted or
        dropped, §7). Returns False, changing nothing, when fewer than ``n``
        slots are obtainable (the caller preempts).
        """
        gpu = self.tiers[0]
        if n > gpu.available_blocks:
            return False
        victims = gpu.reserve(n)
        self._evicted(victims, 0)
        adm.reserved_blocks += n
        return True

    def abort(self, adm: Admission) -> None:
        """Release a request preempted before :meth:`prefill_done`: its computed blocks are not cached, but
        for those :meth:`cache_computed` cached already, which stay cached (unpinned, as vLLM keeps the
        hashed blocks of a preempted request in its prefix cache).

        The pins of those and of its hits are dropped tail first (as :meth:`finish`) and
        every reserved slot, those of the blocks it had not computed, given back.
        """
        gpu = self.tiers[0]
        if adm.cached_blocks:
            gpu.unpin(adm.computed_hashes[adm.cached_blocks - 1::-1], False)
        gpu.unpin(adm.pinned_hashes[::-1], True)
        gpu.release(adm.reserved_blocks)
        adm.reserved_blocks = 0
        adm.computed_hashes = []
        adm.cached_blocks = 0

    def extend(self, adm: Admission, block_hashes: Sequence[int]) -> None:
        """Cache blocks a running request filled while decoding (after :meth:`prefill_done`).

        Each of the distinct ``block_hashes`` takes one of the request's
        reserved slots (a block already resident is pinned instead, as in
        :meth:`prefill_done`); they stay pinned until :meth:`finish`, which
        releases them first (they are the tail). Write-through copies them down.
        """
        if not block_hashes:
            return
        hashes = list(block_hashes)
        shared = self.tiers[0].fill(hashes)
        adm.reserved_blocks -= len(hashes) - len(shared)
        adm.computed_hashes = list(adm.computed_hashes) + hashes
        if self.write_through:
            self._write_down(hashes)

    def _write_down(self, computed: list) -> None:
        """Write-through: computed blocks copied to every lower tier (§7)."""
        down = computed[::-1]
        for j in range(1, len(self.tiers)):
            pushed, written = self.tiers[j].insert(down)
            self.written_blocks[j] += written
            if j == len(self.tiers) - 1:
                self.dropped_blocks += len(pushed)

    def _check(self) -> None:
        """Assert every tier's invariants; lower tiers hold no pins and no reserved slots."""
        for i, t in enumerate(self.tiers):
            t._check()
            if i:
                assert t.num_pinned == 0 and t.reserved_blocks == 0, t
