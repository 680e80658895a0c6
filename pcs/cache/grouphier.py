"""The hierarchy of a hybrid model: cache groups with their own hit rules over pools of pages.

Same calls as :class:`pcs.cache.Hierarchy` (``start`` / ``prefill_done`` /
``finish``, rules ``docs/semantics.md §3-§7``), with the model's KV
components as cache groups (:mod:`pcs.cache.groups`, §3.1):

- every block of a group takes ``group.pages`` pages of its pool; a page is a
  key in the pool's :class:`pcs.cache.Tier` (block hash for group 0's first
  page, ``hash | (g << 16 | i) << 64`` for page i of group g), so eviction,
  pins and demotion are the tiers' own;
- pools: one shared pool per tier level (vLLM's hybrid KV cache manager, one
  free queue for all groups) or one pool per group (SGLang's separate pools);
- lookup: the hit is the longest prefix every group accepts (fixed point,
  :func:`pcs.cache.groups.fixed_point`); a group reads only its needed blocks:
  those are pinned, or restored from a lower tier -- a sliding window restores
  only the window's blocks, a state group one state;
- a request reserves, per pool, slots for its restores, for every page its
  prefill writes (those it keeps while running and those that slide out of a
  window or are older checkpoints: vLLM allocates every block a prefill writes)
  and for its running extra (output) pages -- a state group's running state always, output or not;
  at the end of prefill, pages no
  group still needs are unpinned or stored unpinned at once in their own slots
  -- cached and evictable;
- a request that cannot get its slots is truncated as in §5: when its restores
  do not fit, the hit ends at the first block whose restore does not fit (and
  the fixed point is taken again below it); otherwise its computed pages are
  kept in chain order while they fit.

With one full-attention group of one page this is the reference hierarchy,
step for step (``tests/cache/test_hybrid_properties.py`` checks it).
"""
from __future__ import annotations

from itertools import filterfalse
from typing import Sequence

from pcs.cache.groups import CacheGroup, fixed_point
from pcs.cache.groupstep import GroupStepMixin
from pcs.cache.hierarchy import _first_repeat, check_distinct, check_write_policy
from pcs.cache.residency import GROUP_SHIFT, KEY_SHIFT, PAGE_BITS, Residency, group_counts
from pcs.cache.tier import Tier, TierStats
from pcs.errors import UserError

__all__ = ["GroupHierarchy", "GroupAdmission", "page_key"]

_MASK = (1 << 64) - 1   # a page key's block hash


def page_key(block_hash: int, group: int, page: int) -> int:
    """The key of page ``page`` of block ``block_hash`` in group ``group`` (the hash itself for (0, 0))."""
    return block_hash | (((group << PAGE_BITS) | page) << KEY_SHIFT)


class GroupAdmission:
    """One running request's hold on a :class:`GroupHierarchy` (made by ``start``).

    Attributes (as :class:`pcs.cache.Admission`; pages are pool pages):
        prefix_hit_blocks: the leading blocks every group accepts before the last-token cap and truncation
            (the fixed point at the cap, plus group 0's resident blocks past the cap): the request's
            ``missed_blocks`` are ``cacheable - prefix_hit_blocks`` (docs/replay.md, "missed blocks"); with
            one full-attention group, its resident run (§3).
        hit_blocks: blocks every group accepts (the fixed point; fewer when truncated).
        hit_blocks_per_tier: per level, hit blocks attributed to the slowest level any of their needed
            pages came from (blocks no group reads count at level 0).
        last_hit_tier: level of hit block ``hit_blocks - 1`` (-1 without hit).
        restored_blocks_per_tier: per level, pages restored (index 0: 0).
        restored_bytes_per_tier: per level, bytes restored (pages x the pool's bytes per page there).
        truncated: the request could not get all its slots (§5).
        lost_blocks: hit blocks a full-attention group 0 alone would give that the other groups' rules
            refused (0 without a full-attention group).
        hold, release, computed, transient: per group, page keys pinned until finish, pinned until
            prefill_done, computed and kept, computed and stored unpinned at prefill_done.
        reserved: per pool, reserved slots held.
        gpu_lead_blocks: the longest hit every group accepts from GPU-resident pages alone, at most the
            blocks before the first hit block read from a lower tier (= hit_blocks without restores); the
            step scheduler's restore fallback keeps these hits (docs/semantics.md §9).
        live: per group, blocks the running request holds slots for (computed and kept, plus running extra;
            :meth:`GroupHierarchy.grow` adds up to the group's ``hold_blocks``).
        blocks: the request's blocks so far (its cacheable chain, then blocks cached by ``extend``).
        restores: the restored pages, ``(level, pool, group, key)``, chain order.
    """

    __slots__ = ("prefix_hit_blocks", "hit_blocks", "hit_blocks_per_tier", "last_hit_tier",
                 "restored_blocks_per_tier", "restored_bytes_per_tier", "truncated", "lost_blocks", "hold",
                 "release", "computed", "transient", "reserved", "gpu_lead_blocks", "live", "blocks",
                 "restores")


class _Demand:
    """What one candidate hit length needs: page lists per group, restores, extra pages per pool."""

    __slots__ = ("k", "where", "pin_now", "hold", "release", "restores", "computed", "transient", "extra", "live")

    def __init__(self, k: int, groups: int, pools: int) -> None:
        self.k = k
        self.where: list[int] = []
        self.pin_now: list[list[int]] = [[] for _ in range(pools)]
        self.hold: list[list[int]] = [[] for _ in range(groups)]
        self.release: list[list[int]] = [[] for _ in range(groups)]
        self.restores: list[tuple[int, int, int, int]] = []   # (level, pool, group, key), block order
        self.computed: list[list[int]] = [[] for _ in range(groups)]
        self.transient: list[list[int]] = [[] for _ in range(groups)]
        self.extra = [0] * pools
        self.live = [0] * groups

    def need(self, groups: Sequence[CacheGroup]) -> list[int]:
        out = list(self.extra)
        for r in self.restores:
            out[r[1]] += 1
        for g, keys in enumerate(self.computed):
            out[groups[g].pool] += len(keys) + len(self.transient[g])
        return out


class _Look:
    """Where each page of a request's blocks is, per group (memoised for one ``start``)."""

    __slots__ = ("head", "res", "groups", "tags", "memo", "t0")

    def __init__(self, h: "GroupHierarchy", head: Sequence[int]) -> None:
        self.head, self.groups, self.res, self.tags = head, h.groups, h._res_by_group, h._tags
        self.memo: list[dict[int, int]] = [{} for _ in h.groups]
        self.t0: list[int] = []

    def pages(self, g: int, i: int) -> list[tuple[int, int]]:
        """(key, level) of each page of block i of group g; level -1 when resident nowhere."""
        out = []
        res = self.res[g]
        h = self.head[i]
        for tag in self.tags[g]:
            key = h | tag
            for j, r in enumerate(res):
                if key in r:
                    break
            else:
                j = -1
            out.append((key, j))
        return out

    def tier(self, g: int, i: int) -> int:
        """Slowest level holding a page of block i of group g, -1 when a page is missing."""
        if g == 0 and i < len(self.t0):
            return self.t0[i]
        memo = self.memo[g]
        t = memo.get(i)
        if t is None:
            levels = [j for _, j in self.pages(g, i)]
            t = -1 if -1 in levels else max(levels)
            memo[i] = t
        return t

    def present(self, g: int, i: int) -> bool:
        return self.tier(g, i) >= 0

    def lead(self) -> int:
        """Leading blocks of group 0 resident in some tier (the prefix rule's walk, §3); their levels in t0."""
        t0 = self.t0
        if len(self.tags[0]) == 1:
            res = self.res[0]
            for h in self.head:
                for j, r in enumerate(res):
                    if h in r:
                        break
                else:
                    break
                t0.append(j)
        else:
            for i in range(len(self.head)):
                t = self.tier(0, i)
                if t < 0:
                    break
                t0.append(t)
        return len(t0)


class _LevelView:
    """The pools of one level seen as one tier (split pools): name, sizes, counts for the engine."""

    __slots__ = ("name", "pools")

    def __init__(self, name: str, pools: list[Tier]) -> None:
        self.name, self.pools = name, pools

    capacity_blocks = property(lambda self: sum(t.capacity_blocks for t in self.pools))
    reserved_blocks = property(lambda self: sum(t.reserved_blocks for t in self.pools))
    resident = property(lambda self: _Sized(sum(len(t.resident) for t in self.pools)))
    policy = property(lambda self: _Sized(sum(len(t.policy) for t in self.pools), self.pools[0].policy.name))
    stats = property(lambda self: _merged_stats(self.pools))

    def __len__(self) -> int:
        return len(self.resident)

    def _check(self) -> None:
        for t in self.pools:
            t._check()


def _merged_stats(pools: list[Tier]) -> TierStats:
    """The pools' counters added (peaks: the largest pool's; a level's peak is in :class:`Residency`)."""
    out = TierStats()
    for t in pools:
        out.merge(t.stats)
    return out


class _Sized:
    __slots__ = ("n", "name")

    def __init__(self, n: int, name: str = "") -> None:
        self.n, self.name = n, name

    def __len__(self) -> int:
        return self.n


class GroupHierarchy(GroupStepMixin):
    """Tier levels (GPU first) of pools of pages, with cache groups and a write policy.

    Args:
        tiers: the pools, level-major: pool p of level j is ``tiers[j * pools + p]``; a level's
            name is its first pool's name up to a ``/``.
        write_policy: ``"back"`` or ``"through"``.
        groups: the cache groups, full rule first (:class:`pcs.cache.groups.CacheGroup`); their
            ``pool`` < ``pools``.
        pools: pools per level (1: shared, vLLM; one per group: SGLang).
        page_bytes: ``page_bytes[j][p]``: bytes of a page of pool p at level j (restored bytes, residency).
        step_s: the residency series' sampling step, simulated seconds.
    Raises:
        UserError: no level, a tier count that is not levels x pools, duplicate level names, an unknown
            write policy, no group, or a group's pool out of range.
    """

    def __init__(self, tiers: Sequence[Tier], write_policy: str = "back", groups: Sequence[CacheGroup] = (),
                 pools: int = 1, page_bytes: Sequence[Sequence[int]] | None = None, step_s: float = 60.0) -> None:
        if not tiers or len(tiers) % pools:
            raise UserError(f"need levels x {pools} pools, got {len(tiers)} tiers")
        check_write_policy(write_policy)
        if not groups or any(not 0 <= g.pool < pools for g in groups):
            raise UserError("need at least one cache group, each in a pool 0 .. pools - 1")
        self.levels = [list(tiers[j:j + pools]) for j in range(0, len(tiers), pools)]
        names = [lvl[0].name.split("/")[0] for lvl in self.levels]
        check_distinct(names, "tier level names")
        self.tiers = [lvl[0] if pools == 1 else _LevelView(nm, lvl) for nm, lvl in zip(names, self.levels)]
        self.groups, self.pools = tuple(groups), pools
        self.write_through, self.write_policy = write_policy == "through", write_policy
        self.written_blocks = [0] * len(self.levels)
        self.dropped_blocks = 0
        pb = page_bytes if page_bytes is not None else [[0] * pools for _ in self.levels]
        self.page_bytes = [list(p) for p in pb]
        self.residency = Residency(names, [[pb[j][g.pool] for g in self.groups] for j in range(len(self.levels))],
                                   step_s)
        self._full0 = self.groups[0].rule == "full"
        self._res_by_group = [[lvl[g.pool].resident for lvl in self.levels] for g in self.groups]
        self._tags = [[page_key(0, gi, p) for p in range(g.pages)] for gi, g in enumerate(self.groups)]

    def tick(self, t: float) -> None:
        """Simulated time reaches ``t`` (before the steps at ``t``): residency samples (:class:`Residency`)."""
        self.residency.tick(t)

    # -- step 1 ---------------------------------------------------------------------------------
    def start(self, block_hashes: Sequence[int], cacheable_blocks: int, max_hit_blocks: int, extra_blocks: int = 0,
              wait_if_full: bool = False) -> GroupAdmission | None:
        """Look up (fixed point), pin, reserve and restore for one request (module docstring).

        Args and return as :meth:`pcs.cache.Hierarchy.start` (None only with ``wait_if_full``: no change).
        """
        self._now()
        head = block_hashes[:cacheable_blocks]
        head = head[:_first_repeat(head)]
        look = _Look(self, head)
        cap = min(max_hit_blocks, len(head))
        lead = look.lead()
        full_lead = lead if self._full0 else None
        k = fixed_point(self.groups, cap, look.present, full_lead)
        lost = min(cap, lead) - k if self._full0 else 0   # what full attention alone would have hit
        usable = k + max(0, lead - cap)   # prefix_hit_blocks: accepted, the capped resident blocks included
        lead = max(lead, k)    # a window / chunk / state group 0 may hit past its contiguous blocks
        truncated = False
        while True:
            d = self._demand(look, k, lead, len(head), extra_blocks)
            need = d.need(self.groups)
            budgets = self._budgets(d, need, wait_if_full and not truncated)
            if budgets is None:
                return None
            if budgets == need:
                break
            truncated = True
            cut = self._restore_cut(d, budgets, head)
            if cut is None:
                self._cut_computed(d, budgets, head)
                break
            k = fixed_point(self.groups, cut, look.present, full_lead)
        gpu_lead = self._gpu_lead(d, look, full_lead) if d.restores else d.k
        adm = self._apply(d, budgets, usable, truncated)
        adm.lost_blocks, adm.gpu_lead_blocks, adm.live, adm.blocks = lost, gpu_lead, d.live, len(head)
        held = sum((len(t.resident) - len(t.policy) + t.reserved_blocks) * b
                   for t, b in zip(self.levels[0], self.page_bytes[0]))
        self.residency.admitted(lost, held)
        self.residency.note()
        return adm

    def _gpu_lead(self, d: _Demand, look: _Look, full_lead: int | None) -> int:
        """The longest hit every group accepts from GPU pages alone, below the first block read from a lower
        tier (the fixed point again, over the lookup's levels)."""
        first = next((i for i, t in enumerate(d.where[:d.k]) if t), d.k)
        return fixed_point(self.groups, first, lambda g, i: look.tier(g, i) == 0,
                           first if full_lead is not None else None)

    def _demand(self, look: _Look, k: int, lead: int, n: int, extra: int) -> _Demand:
        """Pages a hit of k blocks needs: reads (pin or restore), kept and transient computed pages, extra."""
        d = _Demand(k, len(self.groups), self.pools)
        head = look.head
        for g, grp in enumerate(self.groups):
            keep = grp.keep_from(n)
            if g == 0 and self._full0:
                self._demand_full(d, look, k, lead, n)
            else:
                for i in range(grp.need_from(k), k):
                    self._read(d, look, g, i, keep)
                tags, a = self.tags_of(g), k
                blocks = grp.writes(a, n)
                if grp.rule != "state":   # every block: slices
                    d.transient[g] = [h | t for h in head[a:max(a, keep)] for t in tags]
                    d.computed[g] = [h | t for h in head[max(a, keep):n] for t in tags]
                else:
                    d.transient[g] = [head[i] | t for i in blocks if i < keep for t in tags]
                    d.computed[g] = [head[i] | t for i in blocks if i >= keep for t in tags]
            held, kept = grp.hold_blocks, n - min(keep, n)
            run = extra if held is None else min(extra, max(0, held - kept))
            if grp.rule == "state":   # the running state: from admission, output or not (§3.1)
                run = held
            d.extra[grp.pool] += run * grp.pages
            d.live[g] = kept + run
        if len(self.groups) > 1 and d.restores:
            pos = {h: i for i, h in enumerate(head)}
            d.restores.sort(key=lambda r: pos[r[3] & _MASK])
        return d

    def _demand_full(self, d: _Demand, look: _Look, k: int, lead: int, n: int) -> None:
        """Group 0 of the full rule: every hit block read, the resident blocks beyond the hit pinned (GPU) or
        recomputed (lower tiers), the rest computed (as :meth:`pcs.cache.Hierarchy.start`)."""
        head, t0, tags = look.head, look.t0, self.tags_of(0)
        pool = self.groups[0].pool
        if len(tags) == 1 and not any(t0[:lead]):   # every resident block on the GPU
            d.where = [0] * k
            d.pin_now[pool] += head[:lead]
            d.hold[0] = list(head[:lead])
            d.computed[0] = list(head[lead:n])
            return
        d.where = [0] * k
        beyond: list[int] = []
        if len(tags) == 1:   # one page per block: its key is the hash, its level t0
            where, pin, hold = d.where, d.pin_now[pool], d.hold[0]
            for i in range(lead):
                t, h = t0[i], head[i]
                if i < k:
                    where[i] = t
                elif t:
                    beyond.append(h)
                    continue
                hold.append(h)
                if t == 0:
                    pin.append(h)
                else:
                    d.restores.append((t, pool, 0, h))
        else:
            for i in range(k):
                self._read(d, look, 0, i, 0)
            for i in range(k, lead):
                for key, t in look.pages(0, i):
                    if t == 0:
                        d.pin_now[pool].append(key)
                        d.hold[0].append(key)
                    else:
                        beyond.append(key)
        d.computed[0] = beyond + [h | t for h in head[lead:n] for t in tags]

    def tags_of(self, g: int) -> list[int]:
        """The key tags of group g's pages (``page_key(h, g, p) == h | tags[p]``)."""
        return self._tags[g]

    def _read(self, d: _Demand, look: _Look, g: int, i: int, keep: int) -> None:
        """Block i of group g is read by the hit: pin its GPU pages, restore the others."""
        pool = self.groups[g].pool
        where = d.where
        if len(where) <= i:
            where += [0] * (i + 1 - len(where))
        for key, t in look.pages(g, i):
            if t > where[i]:
                where[i] = t
            (d.hold if i >= keep else d.release)[g].append(key)
            if t == 0:
                d.pin_now[pool].append(key)
            else:
                d.restores.append((t, pool, g, key))

    def _budgets(self, d: _Demand, need: list[int], wait_if_full: bool) -> list[int] | None:
        """GPU slots per pool: the need, or fewer when the pool cannot give them (§5); None to wait."""
        out = []
        for p, pool in enumerate(self.levels[0]):
            avail = pool.available_blocks - pool.count_evictable(d.pin_now[p])
            if need[p] <= avail:
                out.append(need[p])
            elif wait_if_full and avail < min(need[p], pool.capacity_blocks - len(d.pin_now[p])):
                return None
            else:
                out.append(avail)
        return out

    def _restore_cut(self, d: _Demand, budgets: list[int], head: Sequence[int]) -> int | None:
        """The first hit block whose restore does not fit its pool's budget (restores first, chain order)."""
        used = [0] * self.pools
        pos = None
        for _, p, _, key in d.restores:
            if used[p] == budgets[p]:
                pos = pos or {h: i for i, h in enumerate(head)}
                return pos[key & _MASK]
            used[p] += 1
        return None

    def _cut_computed(self, d: _Demand, budgets: list[int], head: Sequence[int]) -> None:
        """Keep the computed pages, kept and transient alike (both take a slot while the prefill writes
        them), in chain order while they fit; no extra pages (§5)."""
        left = list(budgets)
        for r in d.restores:
            left[r[1]] -= 1
        pos = {h: i for i, h in enumerate(head)}
        items = sorted((pos[key & _MASK], g, key, kind) for kind, lists in enumerate((d.computed, d.transient))
                       for g, keys in enumerate(lists) for key in keys)
        kept: list[list[int]] = [[] for _ in self.groups]
        passing: list[list[int]] = [[] for _ in self.groups]
        for _, g, key, kind in items:
            p = self.groups[g].pool
            if left[p] == 0:
                break
            left[p] -= 1
            (passing if kind else kept)[g].append(key)
        d.computed, d.transient = kept, passing
        d.extra = [0] * self.pools

    def _apply(self, d: _Demand, budgets: list[int], usable: int, truncated: bool) -> GroupAdmission:
        """Pin, reserve, restore and demote the victims; the admission."""
        gpu = self.levels[0]
        for p, pool in enumerate(gpu):
            pool.pin(d.pin_now[p])
        victims = [self._reserve(p, b, self._incoming(d, p)) for p, b in enumerate(budgets)]
        restored, restored_bytes, filled = self._restore(d)
        for p, v in enumerate(victims):
            self._evicted(v, 0, p)
        a = GroupAdmission()
        a.prefix_hit_blocks, a.hit_blocks, a.truncated = usable, d.k, truncated
        where = d.where[:d.k] + [0] * (d.k - len(d.where))   # blocks no group reads: level 0
        a.hit_blocks_per_tier = [where.count(j) for j in range(len(self.levels))]
        a.last_hit_tier = where[-1] if d.k else -1
        a.restored_blocks_per_tier, a.restored_bytes_per_tier = restored, restored_bytes
        a.hold, a.release, a.transient, a.computed = d.hold, d.release, d.transient, d.computed
        a.reserved = [b - f for b, f in zip(budgets, filled)]
        a.restores = d.restores
        return a

    def _restore(self, d: _Demand) -> tuple[list[int], list[int], list[int]]:
        """Fill the GPU slots of restored pages, touch their lower copies (§7).

        Returns:
            (pages restored per level, bytes restored per level, slots filled per pool).
        """
        nl = len(self.levels)
        lists: dict[tuple[int, int], list[int]] = {}
        for t, p, g, key in d.restores:
            lists.setdefault((t, p), []).append(key)
            self.residency.restored[t][g] += 1   # few: restores are hits from lower tiers
        restored, nbytes, filled = [0] * nl, [0] * nl, [0] * self.pools
        for (t, p), keys in sorted(lists.items()):
            restored[t] += len(keys)
            nbytes[t] += len(keys) * self.page_bytes[t][p]
            filled[p] += len(keys) - len(self._fill(p, keys))
            self.levels[t][p].touch(keys[::-1])
        return restored, nbytes, filled

    # -- residency bookkeeping around the tiers' own operations ------------------------------------
    def _fill(self, p: int, keys: list[int], g: int | None = None) -> list[int]:
        """``Tier.fill`` into GPU pool p, counting pages per group (``g``: every key is of group g)."""
        shared = self.levels[0][p].fill(keys)
        if g is not None:
            self.residency.pages[0][g] += len(keys) - len(shared)
            return shared
        self.residency.added(0, keys)
        self.residency.removed(0, shared)
        return shared

    def _incoming(self, d: _Demand, p: int) -> list[int]:
        """The pages pool p's reserved slots are for, told to its policy before it chooses victims
        (``Tier.reserve``'s ``incoming``, ``EvictionPolicy.expect``: ARC's and 2Q's ghost lists), as
        :meth:`pcs.cache.Hierarchy.start` tells them: the restored pages level by level (block order), then
        the computed pages, group by group (block order). With one full-attention group of one page these are
        the reference's keys in its order (``tests/cache/test_hybrid_properties.py``); without them ARC and 2Q
        looked their ghosts up only when the pages were added, after the evictions, and chose other victims."""
        keys = [r[3] for t in range(1, len(self.levels)) for r in d.restores if r[0] == t and r[1] == p]
        for g, computed in enumerate(d.computed):
            if self.groups[g].pool == p:
                keys += computed
        return keys

    def _reserve(self, p: int, n: int, incoming: Sequence[int] = ()) -> list[int]:
        victims = self.levels[0][p].reserve(n, incoming)
        assert victims is not None
        self.residency.removed(0, victims)
        return victims

    def _insert(self, j: int, p: int, keys: list[int], g: int | None = None) -> tuple[list[int], int]:
        """``Tier.insert`` into pool p of level j, counting pages per group in and out.

        What the tier does (:meth:`pcs.cache.Tier.insert`): the batch's first ``ncut`` keys are pushed
        out when it exceeds the unpinned room (those resident unpinned are evicted), every other key
        not resident is stored, and victims (never batch keys) make room; so the pages counted in are
        the kept keys not resident before, and out the victims and the evicted cut keys. ``g``: every
        key is of group g; then, with nothing cut, the pages counted in are the tier's ``written``
        (no admission policy runs on cache groups), without a pass over the batch.
        """
        tier = self.levels[j][p]
        res = tier.resident
        ncut = max(0, len(keys) - max(tier.free_blocks + len(tier.policy), 0))
        if g is not None and not ncut:
            pushed, written = tier.insert(keys)
            res_ = self.residency
            res_.removed(j, pushed)
            res_.pages[j][g] += written
            if j:
                res_.written[j][g] += written
            return pushed, written
        gone = [k for k in keys[:ncut] if res.get(k) == 0] if ncut else ()
        new = list(filterfalse(res.__contains__, keys[ncut:] if ncut else keys))
        pushed, written = tier.insert(keys)
        res_ = self.residency
        res_.removed(j, pushed[:len(pushed) - ncut] if ncut else pushed)
        res_.removed(j, gone)
        res_.added(j, new, j > 0)
        return pushed, written

    def _evicted(self, victims: list[int], index: int, p: int) -> None:
        """Victims of pool p at level ``index``: demote down (write-back) or drop (write-through), §7."""
        if self.write_through or not victims:
            return
        for j in range(index + 1, len(self.levels)):
            victims, written = self._insert(j, p, victims)
            self.written_blocks[j] += written
            if not victims:
                return
        self._dropped(victims)

    def _dropped(self, keys: list[int]) -> None:
        self.dropped_blocks += len(keys)
        if keys:
            d = self.residency.dropped
            self.residency.dropped = [a + b for a, b in zip(d, group_counts(keys, len(d)))]

    # -- steps 2 and 3 ----------------------------------------------------------------------------
    def prefill_done(self, adm: GroupAdmission) -> None:
        """Computed pages become cached: kept ones pinned, the others unpinned at once (evictable)."""
        self._now()
        for g, keys in enumerate(adm.computed):
            if keys:
                p = self.groups[g].pool
                adm.reserved[p] -= len(keys) - len(self._fill(p, keys, g))
        if self.write_through:
            self._write_through(adm)
        for g, keys in enumerate(adm.release):
            if keys:
                self.levels[0][self.groups[g].pool].unpin(keys[::-1], True)
        for g, keys in enumerate(adm.transient):
            if keys:
                p = self.groups[g].pool
                self.levels[0][p].release(len(keys))   # their slots, reserved at start, take them now
                adm.reserved[p] -= len(keys)
                pushed, _ = self._insert(0, p, keys[::-1], g)
                self._evicted(pushed, 0, p)
        self.residency.note()

    def _write_through(self, adm: GroupAdmission) -> None:
        """Copy every computed page to every lower level at once (§7)."""
        for p in range(self.pools):
            down = [k for g, grp in enumerate(self.groups) if grp.pool == p
                    for k in adm.computed[g] + adm.transient[g]][::-1]
            if not down:
                continue
            for j in range(1, len(self.levels)):
                pushed, written = self._insert(j, p, down)
                self.written_blocks[j] += written
                if j == len(self.levels) - 1:
                    self._dropped(pushed)

    def finish(self, adm: GroupAdmission) -> None:
        """Drop the request's pins, group by group, tail first (§6); give back its reserved slots."""
        self._unpin_and_release(adm, ((adm.computed, False), (adm.hold, True)))

    def _unpin_and_release(self, adm: GroupAdmission, pins: Sequence[tuple[list[list[int]], bool]]) -> None:
        """Unpin, group by group, each ``(per-group blocks, reused)`` of ``pins`` in that order, each list tail
        first (docs/semantics.md §6); then give the request's reserved GPU slots back to every pool."""
        self._now()
        gpu = self.levels[0]
        for g, grp in enumerate(self.groups):
            for blocks, reused in pins:
                gpu[grp.pool].unpin(blocks[g][::-1], reused)
        for p, n in enumerate(adm.reserved):
            gpu[p].release(n)
            adm.reserved[p] = 0

    def _check(self) -> None:
        """Assert every pool's invariants, no pins or reservations below the GPU, and the page counters."""
        for j, lvl in enumerate(self.levels):
            counts = [0] * len(self.groups)
            for t in lvl:
                t._check()
                if j:
                    assert t.num_pinned == 0 and t.reserved_blocks == 0, t
                for k in t.resident:
                    counts[k >> GROUP_SHIFT] += 1
            assert counts == self.residency.pages[j], (j, counts, self.residency.pages[j])
