"""The compiled hybrid-model hierarchy (``pcs.cache._grouphier``) behind :class:`GroupHierarchy`'s interface.

:class:`NativeGroupHierarchy` runs the rules of :class:`pcs.cache.grouphier.GroupHierarchy` (the Python
reference: cache groups with their own hit rules, the fixed point, pins, reservations, restores, demotion or
write-through; ``docs/semantics.md §3.1``, §5-§7) and of :mod:`pcs.cache.groupstep` (the step scheduler's
``grow`` / ``abort`` / ``extend``) in C, for vLLM's shared pool (one pool per tier level, the default
``hybrid_kv_cache_manager``) with an LRU policy on every level and no admission policy. Its admissions'
fields, tier counters, end state and :class:`pcs.cache.residency.Residency` (pages per group, peaks, the
sampled series, per-request samples) are identical to the reference's
(``tests/cache/test_grouphier_native.py``). Block hashes must be ints in [0, 2**64) (the trace readers'
uint64 hashes; another value raises TypeError or OverflowError in ``start``), as for
:class:`pcs.cache.native.NativeHierarchy`. Which hierarchy a hybrid replay runs on is decided by the
engine-selection table (:mod:`pcs.engine.select`, row ``compiled-hybrid``; ``docs/semantics.md §15``).
"""
from __future__ import annotations

from array import array
from collections.abc import Mapping
from typing import Any, Sequence

from pcs import _native
from pcs.cache import native as _native_hier
from pcs.cache.groups import RULES, CacheGroup
from pcs.cache.hierarchy import check_distinct, check_write_policy
from pcs.cache.policies import get_policy
from pcs.cache.residency import KEY_SHIFT, Residency
from pcs.cache.tier import Tier, TierStats
from pcs.errors import UserError

__all__ = ["NativeGroupHierarchy", "available", "unsupported", "size_unsupported", "MAX_PAGES", "MAX_BLOCK_PAGES", "MAX_LEVELS", "MAX_GROUPS"]

_grouphier = _native.module("grouphier")    # None when the optional extension did not compile

#: largest pool the compiled hierarchy takes (int32 entry indices), pages.
MAX_PAGES = 1 << 30
#: most pages a group block has (pcs/cache/_grouphier.h: page entries of a block side by side, int32 indices).
MAX_BLOCK_PAGES = 1 << 12
#: most tier levels and cache groups (fixed-size arrays in C: MAXL, MAXG).
MAX_LEVELS = 8
MAX_GROUPS = 8
_MASK = (1 << KEY_SHIFT) - 1


def unsupported(tiers: Sequence[Tier], groups: Sequence[CacheGroup], pools: int) -> str | None:
    """None when :class:`NativeGroupHierarchy` can stand in for ``GroupHierarchy(tiers, ..., groups, pools)``,
    else the reason it cannot (the extension built, one pool per level, every policy ``lru`` with no admission
    policy, empty tiers, and the fixed sizes of :func:`size_unsupported`)."""
    if _grouphier is None:
        return f"the compiled {_native.TWINS['grouphier']} is not built"
    if pools != 1:
        return f"it needs one shared pool per tier (vLLM's manager), got {pools} pools per tier"
    other = [f"{t.name}:{t.policy.name}" for t in tiers if type(t.policy) is not get_policy("lru")
             or getattr(t, "admission", None) is not None]
    if other:
        return f"it needs every tier's policy lru without admission, got {', '.join(other)}"
    if any(len(t.resident) or t.reserved_blocks for t in tiers):
        return "it needs empty tiers"
    return size_unsupported([(t.name, t.capacity_blocks) for t in tiers], [g.pages for g in groups])


def size_unsupported(capacities: Sequence[tuple[str, int]], group_pages: Sequence[int]) -> str | None:
    """The compiled twin's fixed sizes, the one statement of them (:func:`unsupported` at set-up and the
    engine-selection table, :mod:`pcs.engine.select` row ``compiled-hybrid``, both read it): None when they hold,
    else the first one broken, in this order: at most :data:`MAX_LEVELS` levels and :data:`MAX_GROUPS` cache
    groups; a group block of at most :data:`MAX_BLOCK_PAGES` pages; every level's pages times the slab (the most pages a group block has, rounded up to a power of two:
    ``pcs/cache/_grouphier.h`` keeps a block's page entries side by side, int32 indices) at most :data:`MAX_PAGES`.

    Args:
        capacities: ``(name, capacity in pages)`` per level, GPU first.
        group_pages: pages one block of each cache group takes (:attr:`pcs.cache.groups.CacheGroup.pages`).
    """
    if len(capacities) > MAX_LEVELS or len(group_pages) > MAX_GROUPS:
        return f"it takes at most {MAX_LEVELS} tiers and {MAX_GROUPS} cache groups"
    most = max(group_pages, default=1)
    if most > MAX_BLOCK_PAGES:
        return f"it takes at most {MAX_BLOCK_PAGES:,} pages a group block, got {most:,}"
    slab = 1 << (most - 1).bit_length()
    big = [name for name, cap in capacities if cap * slab > MAX_PAGES]
    if big:
        return (f"it needs tiers of at most {MAX_PAGES // slab:,} pages with group blocks of {most:,} "
                f"page{'s' if most != 1 else ''}, tier {big[0]} has more")
    return None


def available(tiers: Sequence[Tier], groups: Sequence[CacheGroup], pools: int) -> bool:
    """Whether :func:`unsupported` gives no reason."""
    return unsupported(tiers, groups, pools) is None


def _key(h: int, tag: int) -> int:
    return h | tag << KEY_SHIFT


class _Resident(Mapping):
    """Read-only view page key -> pin count of one level's resident pages (keys as ``page_key`` makes them)."""

    __slots__ = ("_h", "_j")

    def __init__(self, h, j: int) -> None:
        self._h, self._j = h, j

    def _map(self) -> dict[int, int]:
        return {_key(h, tag): pin for h, tag, pin in self._h.resident(self._j)}

    def __len__(self) -> int:
        return self._h.tier_info(self._j)[0]

    def __getitem__(self, key: int) -> int:
        return self._map()[key]

    def __contains__(self, key) -> bool:
        return key in self._map()

    def __iter__(self):
        return iter(self._map())


class _PolicyView:
    """The unpinned pages of one level (``Tier.policy``): the LRU policy's name and flags, the C list."""

    __slots__ = ("_h", "_j", "name", "summary", "prefix_closed", "reuse_blind", "protected_share")

    def __init__(self, h, j: int, policy: Any) -> None:
        self._h, self._j = h, j
        self.name, self.summary = policy.name, policy.summary
        self.prefix_closed, self.reuse_blind = policy.prefix_closed, policy.reuse_blind
        self.protected_share = None

    def __len__(self) -> int:
        return self._h.tier_info(self._j)[1]

    def order(self) -> list[int]:
        """Unpinned page keys, first victim first."""
        return [_key(h, tag) for h, tag in self._h.order(self._j)]


class _TierView(_native_hier._TierView):
    """One level of a :class:`NativeGroupHierarchy` with the read side of :class:`pcs.cache.tier.Tier` (the
    counters as :class:`pcs.cache.native.NativeHierarchy`'s tiers read them: ``tier_info``, ``check``;
    resident pages and the LRU order keyed as ``page_key`` makes them)."""

    __slots__ = ()

    def __init__(self, h, j: int, tier: Tier) -> None:
        self._h, self._j, self.name, self.capacity_blocks = h, j, tier.name, tier.capacity_blocks
        self.resident = _Resident(h, j)
        self.policy = _PolicyView(h, j, tier.policy)

    def __len__(self) -> int:
        return self._h.tier_info(self._j)[0]


class NativeGroupHierarchy(_native_hier.CompiledHierarchy):
    """:class:`pcs.cache.grouphier.GroupHierarchy` in C for one shared LRU pool per level (module docstring).

    Args: as :class:`~pcs.cache.grouphier.GroupHierarchy` (``tiers``: empty LRU tiers, one per level,
        GPU first; their names and capacities are read, the objects are not used after).
    Raises:
        UserError: as the reference (no level, an unknown write policy, no group, duplicate level
            names), or :func:`unsupported` gives a reason.
    """

    def __init__(self, tiers: Sequence[Tier], write_policy: str = "back", groups: Sequence[CacheGroup] = (),
                 pools: int = 1, page_bytes: Sequence[Sequence[int]] | None = None, step_s: float = 60.0) -> None:
        if not tiers:
            raise UserError("need at least one tier level")
        check_write_policy(write_policy)
        if not groups:
            raise UserError("need at least one cache group")
        names = [t.name.split("/")[0] for t in tiers]
        check_distinct(names, "tier level names")
        why = unsupported(tiers, groups, pools)
        if why is not None:
            raise UserError(f"the compiled hybrid hierarchy cannot run this replay: {why}")
        pb = [list(p) for p in page_bytes] if page_bytes is not None else [[0] for _ in tiers]
        self.groups, self.pools, self.page_bytes = tuple(groups), pools, pb
        self.write_policy, self.write_through = write_policy, write_policy == "through"
        self._names, self._step_s = names, float(step_s)
        h = _grouphier.Hierarchy([t.capacity_blocks for t in tiers], [p[0] for p in pb], self.write_through,
                                 [RULES.index(g.rule) for g in groups], [g.span_tokens for g in groups],
                                 [g.pages for g in groups], [int(g.align) for g in groups], groups[0].block_size,
                                 self._step_s, 10_000)
        self._bind(h, h.held_blocks)
        self.tiers = [_TierView(h, j, t) for j, t in enumerate(tiers)]
        self.tick, self.first_admission, self.restore_skipped = h.tick, h.first_admission, h.restore_skipped
        # run_sequential(hashes u64, offsets i64 (R+1,), cacheable i64 (R,), max_hit i64 (R,), hits i64 (R,),
        # lost i64 (R,), arrival f64 (R,) or None): R requests one after another as the sequential event loop
        # runs them (tick(arrival), start, prefill_done, finish each); hits[i], lost[i] = hit blocks and hit
        # blocks the hybrid rules refused; the sequential baseline's loop in C (pcs.engine.seqbase), without the
        # GIL when releases_gil
        self.run_sequential = h.run_sequential

    @property
    def releases_gil(self) -> bool:
        """Whether :attr:`run_sequential` runs without the GIL (``pcs/cache/_grouphier.c``): True unless the
        hierarchy follows a clock (:meth:`follow`, a Python call per request)."""
        return self._h.releases_gil

    def follow(self, clock) -> None:
        """Read simulated time (seconds) from ``clock()`` before each call; per-request residency samples only
        on :meth:`first_admission` (:meth:`pcs.cache.groupstep.GroupStepMixin.follow`)."""
        self._h.follow(clock)

    @property
    def residency(self) -> Residency:
        """A :class:`pcs.cache.residency.Residency` holding the C counters now (a snapshot)."""
        st = self._h.residency_state()
        ng = len(self.groups)
        r = Residency(self._names, [[p[0]] * ng for p in self.page_bytes], self._step_s)
        r.pages, r.group_peak_pages = st["pages"], st["group_peak_pages"]
        r.restored, r.written, r.dropped = st["restored"], st["written"], st["dropped"]
        r.peak_bytes, r.peak_pages, r.peak_t = st["peak_bytes"], st["peak_pages"], st["peak_t"]
        r.samples = st["samples"]
        cols = []
        for raw in st["request"]:
            col = array("q")
            col.frombytes(raw)
            cols.append(col)
        r.request_pages, r.request_lost = cols[:ng], cols[ng]
        r.peak_held_bytes, r.clock, r._next, r.auto_record = (st["peak_held_bytes"], st["clock"], st["next"],
                                                             bool(st["auto_record"]))
        r._last = (st["last_pages"], st["last_lost"])
        return r
