"""The hierarchy of a hybrid model: cache groups with their own hit rules over pools of pages.

Same calls as :class:`pcs.cache.Hierarchy` (``start`` / ``prefill_done`` /
``finish``, rules ``docs/semantics.md §3-§7``), with the model's KV
components as cache groups (:mod:`pcs.cache.groups`, §3.1):

- every block of a group takes ``group.pages`` pages of its pool; a page is a
  key in the pool's :class:`pcs.cache.Tier` (block hash for group 0's first
  page, ``hash | (g * 64 + i) << 64`` for page i of group g), so eviction,
  pins and demotion are the tiers' own;
- pools: one shared pool per tier level (vLLM's hybrid KV cache manager, one
  free queue for all groups) or one pool per group (SGLang's separate pools);
- lookup: the hit is the longest prefix every group accepts (fixed point,
  :func:`pcs.cache.groups.fixed_point`); a group reads only its needed blocks:
  those are pinned, or restored from a lower tier -- a sliding window restores
  only the window's blocks, a state group one state;
- a request reserves, per pool, slots for its restores, for the computed pages
  it keeps while running and for its running extra (output) pages; at the end
  of prefill, pages no group still needs (outside the window, older checkpoints)
  are unpinned or stored unpinned at once -- cached and evictable;
- a request that cannot get its slots is truncated as in §5: when its restores
  do not fit, the hit ends at the first block whose restore does not fit (and
  the fixed point is taken again below it); otherwise its computed pages are
  kept in chain order while they fit.

With one full-attention group of one page this is the reference hierarchy,
step for step (``tests/cache/test_hybrid_properties.py`` checks it).
"""
from __future__ import annotations

from typing import Sequence

from pcs.cache.groups import CacheGroup, fixed_point
from pcs.cache.hierarchy import WRITE_POLICIES, _first_repeat
from pcs.cache.residency import Residency
from pcs.cache.tier import Tier

__all__ = ["GroupHierarchy", "GroupAdmission", "page_key"]


def page_key(block_hash: int, group: int, page: int) -> int:
    """The key of page ``page`` of block ``block_hash`` in group ``group`` (the hash itself for (0, 0))."""
    return block_hash | (((group << 6) | page) << 64)


class GroupAdmission:
    """One running request's hold on a :class:`GroupHierarchy` (made by ``start``).

    Attributes (as :class:`pcs.cache.Admission`; pages are pool pages):
        prefix_hit_blocks: group 0's leading blocks resident in some tier (§3).
        hit_blocks: blocks every group accepts (the fixed point; fewer when truncated).
        hit_blocks_per_tier: per level, hit blocks attributed to the slowest level any of their needed
            pages came from (blocks no group reads count at level 0).
        last_hit_tier: level of hit block ``hit_blocks - 1`` (-1 without hit).
        restored_blocks_per_tier: per level, pages restored (index 0: 0).
        restored_bytes_per_tier: per level, bytes restored (pages x the pool's bytes per page there).
        truncated: the request could not get all its slots (§5).
        lost_blocks: hit blocks group 0 alone would give that the other groups' rules refused.
        hold, release, computed, transient: per group, page keys pinned until finish, pinned until
            prefill_done, computed and kept, computed and stored unpinned at prefill_done.
        reserved: per pool, reserved slots held.
    """

    __slots__ = ("prefix_hit_blocks", "hit_blocks", "hit_blocks_per_tier", "last_hit_tier",
                 "restored_blocks_per_tier", "restored_bytes_per_tier", "truncated", "lost_blocks", "hold",
                 "release", "computed", "transient", "reserved")


class _Demand:
    """What one candidate hit length needs: page lists per group, restores, extra pages per pool."""

    __slots__ = ("k", "where", "pin_now", "hold", "release", "restores", "computed", "transient", "extra")

    def __init__(self, k: int, groups: int, pools: int) -> None:
        self.k = k
        self.where = [0] * k
        self.pin_now: list[list[int]] = [[] for _ in range(pools)]
        self.hold: list[list[int]] = [[] for _ in range(groups)]
        self.release: list[list[int]] = [[] for _ in range(groups)]
        self.restores: list[tuple[int, int, int, int, int]] = []   # (block, level, pool, group, key)
        self.computed: list[tuple[int, int, int]] = []             # (block, group, key), block order
        self.transient: list[list[int]] = [[] for _ in range(groups)]
        self.extra = [0] * pools

    def need(self, pools: int, groups: Sequence[CacheGroup]) -> list[int]:
        out = list(self.extra)
        for r in self.restores:
            out[r[2]] += 1
        for _, g, _ in self.computed:
            out[groups[g].pool] += 1
        return out


class _Look:
    """Where each page of a request's blocks is, per group (memoised for one ``start``)."""

    __slots__ = ("head", "res", "groups", "memo")

    def __init__(self, h: "GroupHierarchy", head: Sequence[int]) -> None:
        self.head, self.groups = head, h.groups
        self.res = [[lvl[g.pool].resident for lvl in h.levels] for g in h.groups]
        self.memo: list[dict[int, int]] = [{} for _ in h.groups]

    def pages(self, g: int, i: int) -> list[tuple[int, int]]:
        """(key, level) of each page of block i of group g; level -1 when resident nowhere."""
        out = []
        res = self.res[g]
        for p in range(self.groups[g].pages):
            key = page_key(self.head[i], g, p)
            for j, r in enumerate(res):
                if key in r:
                    break
            else:
                j = -1
            out.append((key, j))
        return out

    def tier(self, g: int, i: int) -> int:
        """Slowest level holding a page of block i of group g, -1 when a page is missing."""
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
        """Leading blocks of group 0 resident in some tier (the prefix rule's walk, §3)."""
        i, n = 0, len(self.head)
        while i < n and self.tier(0, i) >= 0:
            i += 1
        return i


class _LevelView:
    """The pools of one level seen as one tier (split pools): name, sizes, counts for the engine."""

    __slots__ = ("name", "pools")

    def __init__(self, name: str, pools: list[Tier]) -> None:
        self.name, self.pools = name, pools

    capacity_blocks = property(lambda self: sum(t.capacity_blocks for t in self.pools))
    reserved_blocks = property(lambda self: sum(t.reserved_blocks for t in self.pools))
    resident = property(lambda self: _Sized(sum(len(t.resident) for t in self.pools)))
    policy = property(lambda self: _Sized(sum(len(t.policy) for t in self.pools), self.pools[0].policy.name))
    stats = property(lambda self: self.pools[0].stats)

    def __len__(self) -> int:
        return len(self.resident)

    def _check(self) -> None:
        for t in self.pools:
            t._check()


class _Sized:
    __slots__ = ("n", "name")

    def __init__(self, n: int, name: str = "") -> None:
        self.n, self.name = n, name

    def __len__(self) -> int:
        return self.n


class GroupHierarchy:
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
        ValueError: no level, a tier count that is not levels x pools, duplicate level names, an unknown
            write policy, no group, or a group's pool out of range.
    """

    def __init__(self, tiers: Sequence[Tier], write_policy: str = "back", groups: Sequence[CacheGroup] = (),
                 pools: int = 1, page_bytes: Sequence[Sequence[int]] | None = None, step_s: float = 60.0) -> None:
        if not tiers or len(tiers) % pools:
            raise ValueError(f"need levels x {pools} pools, got {len(tiers)} tiers")
        if write_policy not in WRITE_POLICIES:
            raise ValueError(f"unknown write policy {write_policy!r}; valid: {', '.join(WRITE_POLICIES)}")
        if not groups or any(not 0 <= g.pool < pools for g in groups):
            raise ValueError("need at least one cache group, each in a pool 0 .. pools - 1")
        self.levels = [list(tiers[j:j + pools]) for j in range(0, len(tiers), pools)]
        names = [lvl[0].name.split("/")[0] for lvl in self.levels]
        if len(set(names)) != len(names):
            raise ValueError(f"tier level names must be distinct, got {names}")
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

    def tick(self, t: float) -> None:
        """Simulated time reaches ``t`` (before the steps at ``t``): residency samples (:class:`Residency`)."""
        self.residency.tick(t)

    # -- step 1 ---------------------------------------------------------------------------------
    def start(self, block_hashes: Sequence[int], cacheable_blocks: int, max_hit_blocks: int, extra_blocks: int = 0,
              wait_if_full: bool = False) -> GroupAdmission | None:
        """Look up (fixed point), pin, reserve and restore for one request (module docstring).

        Args and return as :meth:`pcs.cache.Hierarchy.start` (None only with ``wait_if_full``: no change).
        """
        head = block_hashes[:cacheable_blocks]
        head = head[:_first_repeat(head)]
        look = _Look(self, head)
        cap = min(max_hit_blocks, len(head))
        lead = look.lead()
        full_lead = lead if self._full0 else None
        k = fixed_point(self.groups, cap, look.present, full_lead)
        lost = min(cap, lead) - k
        truncated = False
        while True:
            d = self._demand(look, k, lead, len(head), extra_blocks)
            budgets = self._budgets(d, wait_if_full and not truncated)
            if budgets is None:
                return None
            if budgets == d.need(self.pools, self.groups):
                break
            truncated = True
            cut = self._restore_cut(d, budgets)
            if cut is None:
                self._cut_computed(d, budgets)
                break
            k = fixed_point(self.groups, cut, look.present, full_lead)
        adm = self._apply(d, budgets, lead, truncated)
        adm.lost_blocks = lost
        self.residency.admitted()
        self.residency.note()
        return adm

    def _demand(self, look: _Look, k: int, lead: int, n: int, extra: int) -> _Demand:
        """Pages a hit of k blocks needs: reads (pin or restore), kept and transient computed pages, extra."""
        d = _Demand(k, len(self.groups), self.pools)
        for g, grp in enumerate(self.groups):
            keep = grp.keep_from(n)
            for i in range(grp.need_from(k), k):
                self._read(d, look, g, i, keep)
            first = k
            if g == 0 and self._full0:
                first = lead
                for i in range(k, lead):   # group 0 beyond the hit: GPU pages pinned, others recomputed
                    for key, t in look.pages(0, i):
                        if t == 0:
                            d.pin_now[grp.pool].append(key)
                            d.hold[0].append(key)
                        else:
                            d.computed.append((i, 0, key))
            for i in grp.writes(first, n):
                keys = [page_key(look.head[i], g, p) for p in range(grp.pages)]
                if i >= keep:
                    d.computed.extend((i, g, key) for key in keys)
                else:
                    d.transient[g].extend(keys)
            held = grp.hold_blocks
            d.extra[grp.pool] += (extra if held is None else min(extra, max(0, held - (n - min(keep, n))))) \
                * grp.pages
        d.restores.sort(key=lambda r: r[0])
        d.computed.sort(key=lambda c: c[0])
        return d

    def _read(self, d: _Demand, look: _Look, g: int, i: int, keep: int) -> None:
        """Block i of group g is read by the hit: pin its GPU pages, restore the others."""
        pool = self.groups[g].pool
        for key, t in look.pages(g, i):
            if t > d.where[i]:
                d.where[i] = t
            (d.hold if i >= keep else d.release)[g].append(key)
            if t == 0:
                d.pin_now[pool].append(key)
            else:
                d.restores.append((i, t, pool, g, key))

    def _budgets(self, d: _Demand, wait_if_full: bool) -> list[int] | None:
        """GPU slots per pool: the need, or fewer when the pool cannot give them (§5); None to wait."""
        need = d.need(self.pools, self.groups)
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

    def _restore_cut(self, d: _Demand, budgets: list[int]) -> int | None:
        """The first hit block whose restore does not fit its pool's budget (restores first, chain order)."""
        used = [0] * self.pools
        for i, _, p, _, _ in d.restores:
            if used[p] == budgets[p]:
                return i
            used[p] += 1
        return None

    def _cut_computed(self, d: _Demand, budgets: list[int]) -> None:
        """Keep the computed pages, in chain order, while they fit; no extra pages (§5)."""
        left = list(budgets)
        for r in d.restores:
            left[r[2]] -= 1
        for c, (_, g, _) in enumerate(d.computed):
            p = self.groups[g].pool
            if left[p] == 0:
                del d.computed[c:]
                break
            left[p] -= 1
        d.extra = [0] * self.pools

    def _apply(self, d: _Demand, budgets: list[int], lead: int, truncated: bool) -> GroupAdmission:
        """Pin, reserve, restore and demote the victims; the admission."""
        gpu = self.levels[0]
        for p, pool in enumerate(gpu):
            pool.pin(d.pin_now[p])
        victims = [self._reserve(p, b) for p, b in enumerate(budgets)]
        restored, restored_bytes, filled = self._restore(d)
        for p, v in enumerate(victims):
            self._evicted(v, 0, p)
        a = GroupAdmission()
        a.prefix_hit_blocks, a.hit_blocks, a.truncated = lead, d.k, truncated
        a.hit_blocks_per_tier = [d.where.count(j) for j in range(len(self.levels))]
        a.last_hit_tier = d.where[-1] if d.k else -1
        a.restored_blocks_per_tier, a.restored_bytes_per_tier = restored, restored_bytes
        a.hold, a.release, a.transient = d.hold, d.release, d.transient
        a.computed = [[] for _ in self.groups]
        for _, g, key in d.computed:
            a.computed[g].append(key)
        a.reserved = [b - f for b, f in zip(budgets, filled)]
        return a

    def _restore(self, d: _Demand) -> tuple[list[int], list[int], list[int]]:
        """Fill the GPU slots of restored pages, touch their lower copies (§7).

        Returns:
            (pages restored per level, bytes restored per level, slots filled per pool).
        """
        nl = len(self.levels)
        lists: dict[tuple[int, int], list[int]] = {}
        for _, t, p, g, key in d.restores:
            lists.setdefault((t, p), []).append(key)
            self.residency.restored[t][g] += 1
        restored, nbytes, filled = [0] * nl, [0] * nl, [0] * self.pools
        for (t, p), keys in sorted(lists.items()):
            restored[t] += len(keys)
            nbytes[t] += len(keys) * self.page_bytes[t][p]
            filled[p] += len(keys) - len(self._fill(p, keys))
            self.levels[t][p].touch(keys[::-1])
        return restored, nbytes, filled

    # -- residency bookkeeping around the tiers' own operations ------------------------------------
    def _fill(self, p: int, keys: list[int]) -> list[int]:
        shared = self.levels[0][p].fill(keys)
        cnt = self.residency.pages[0]
        for k in keys:
            cnt[k >> 70] += 1
        for k in shared:
            cnt[k >> 70] -= 1
        return shared

    def _reserve(self, p: int, n: int) -> list[int]:
        victims = self.levels[0][p].reserve(n)
        assert victims is not None
        self.residency.removed(0, victims)
        return victims

    def _insert(self, j: int, p: int, keys: list[int]) -> tuple[list[int], int]:
        """``Tier.insert`` into pool p of level j, counting pages per group in and out."""
        tier = self.levels[j][p]
        res = tier.resident
        ncut = max(0, len(keys) - max(tier.free_blocks + len(tier.policy), 0))   # Tier._overflow's cut
        was = [k in res for k in keys]
        pushed, written = tier.insert(keys)
        self.residency.removed(j, pushed[:len(pushed) - ncut])
        cnt, wr = self.residency.pages[j], self.residency.written[j]
        for k, w in zip(keys, was):
            if (k in res) != w:
                cnt[k >> 70] += -1 if w else 1
                if not w and j:
                    wr[k >> 70] += 1
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
        for k in keys:
            self.residency.dropped[k >> 70] += 1

    # -- steps 2 and 3 ----------------------------------------------------------------------------
    def prefill_done(self, adm: GroupAdmission) -> None:
        """Computed pages become cached: kept ones pinned, the others unpinned at once (evictable)."""
        for g, keys in enumerate(adm.computed):
            if keys:
                p = self.groups[g].pool
                adm.reserved[p] -= len(keys) - len(self._fill(p, keys))
        if self.write_through:
            self._write_through(adm)
        for g, keys in enumerate(adm.release):
            if keys:
                self.levels[0][self.groups[g].pool].unpin(keys[::-1], True)
        for g, keys in enumerate(adm.transient):
            if keys:
                p = self.groups[g].pool
                pushed, _ = self._insert(0, p, keys[::-1])
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
        gpu = self.levels[0]
        for g, grp in enumerate(self.groups):
            gpu[grp.pool].unpin(adm.computed[g][::-1], False)
            gpu[grp.pool].unpin(adm.hold[g][::-1], True)
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
                    counts[k >> 70] += 1
            assert counts == self.residency.pages[j], (j, counts, self.residency.pages[j])
