"""One cache tier: residency, capacity, pins and statistics (the mechanism).

A tier holds up to ``capacity_blocks`` block slots. A slot is either

- *resident*: it holds a cached block, keyed by the block's hash id, with a
  pin count (the number of running requests using it; vLLM ``KVCacheBlock``
  ``ref_cnt``). Pin count 0 means evictable; evictable blocks, and only
  those, are held by the tier's :class:`EvictionPolicy`, which orders them
  and picks victims;
- *reserved*: a slot a running request holds that is not (yet) a cached
  block -- a prompt block still being computed, a partial last block, output
  blocks (``reserved_blocks``).

Invariant (``_check``): ``len(resident) + reserved_blocks <= capacity_blocks``;
the policy holds exactly the resident blocks with pin count 0.

Per-block work is a dict operation or two; every method takes a batch of keys
so the Python call overhead is per request, not per block.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from itertools import filterfalse
from typing import Iterable, Sequence

from pcs.cache.policies import EvictionPolicy

__all__ = ["Tier", "TierStats"]


@dataclass(slots=True)
class TierStats:
    """Block counters of one tier (mutable; :meth:`merge` adds another's).

    Attributes:
        inserted_blocks: blocks that became resident (computed, restored or
            written into this tier).
        evicted_blocks: resident blocks chosen as victims.
        overflow_blocks: blocks offered to this (lower) tier that could not fit
            at all (passed on or dropped).
        peak_resident_blocks: largest number of resident blocks seen.
        peak_used_blocks: largest resident + reserved slots seen.
    """

    inserted_blocks: int = 0
    evicted_blocks: int = 0
    overflow_blocks: int = 0
    peak_resident_blocks: int = 0
    peak_used_blocks: int = 0

    def merge(self, other: "TierStats") -> "TierStats":
        """Add ``other``'s counters (peaks take the max); returns self."""
        for f in fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            setattr(self, f.name, max(a, b) if f.name.startswith("peak_") else a + b)
        return self


class Tier:
    """A fixed-capacity block store with pin counts and a pluggable eviction policy.

    Args:
        name: tier name (``gpu``, ``cpu``, ``ssd`` ...).
        capacity_blocks: slots, >= 0.
        policy: an :class:`EvictionPolicy` instance (empty).
    Raises:
        ValueError: negative capacity.
    """

    __slots__ = ("name", "capacity_blocks", "policy", "resident", "reserved_blocks", "stats")

    def __init__(self, name: str, capacity_blocks: int, policy: EvictionPolicy) -> None:
        if capacity_blocks < 0:
            raise ValueError(f"tier {name!r}: capacity must be >= 0 blocks, got {capacity_blocks}")
        self.name = name
        self.capacity_blocks = int(capacity_blocks)
        self.policy = policy
        #: key -> pin count of every resident block (read it, do not write it).
        self.resident: dict[int, int] = {}
        self.reserved_blocks = 0
        self.stats = TierStats()

    def __repr__(self) -> str:
        return (f"Tier({self.name!r}, capacity_blocks={self.capacity_blocks}, resident={len(self.resident)}, "
                f"pinned={self.num_pinned}, reserved={self.reserved_blocks}, policy={self.policy.name})")

    def __contains__(self, key: int) -> bool:
        return key in self.resident

    def __len__(self) -> int:
        return len(self.resident)

    @property
    def num_pinned(self) -> int:
        """Resident blocks with a pin count > 0."""
        return len(self.resident) - len(self.policy)

    @property
    def free_blocks(self) -> int:
        """Slots neither resident nor reserved."""
        return self.capacity_blocks - len(self.resident) - self.reserved_blocks

    @property
    def available_blocks(self) -> int:
        """Slots obtainable now: free plus evictable."""
        return self.capacity_blocks - len(self.resident) - self.reserved_blocks + len(self.policy)

    def count_evictable(self, keys: Iterable[int]) -> int:
        """How many of the resident ``keys`` have pin count 0."""
        return list(map(self.resident.__getitem__, keys)).count(0)

    def pin(self, keys: Sequence[int], evictable: int | None = None) -> None:
        """Add one pin to each resident key (distinct keys); 0 -> 1 leaves the policy.

        ``evictable``: ``count_evictable(keys)`` if the caller already knows it.
        """
        res = self.resident
        if evictable is None:
            evictable = self.count_evictable(keys)
        if evictable == len(keys):              # the usual case: none pinned yet
            for k in keys:
                res[k] = 1
            self.policy.remove(keys)
            return
        fresh = []
        for k in keys:
            rc = res[k]
            if not rc:
                fresh.append(k)
            res[k] = rc + 1
        if fresh:
            self.policy.remove(fresh)

    def unpin(self, keys: Sequence[int], reused: bool) -> None:
        """Drop one pin from each key (distinct keys), given in eviction order (tail first).

        Keys whose count reaches 0 go to the policy in that order, marked
        ``reused`` (a hit) or not (just computed).
        """
        res = self.resident
        vals = list(map(res.__getitem__, keys))
        ones = vals.count(1)
        if ones == len(vals):                   # the usual case: only this request held them
            for k in keys:
                res[k] = 0
            self.policy.add(keys, reused)
            return
        if ones and vals[:ones].count(1) == ones:
            # next usual case (concurrent requests): the tail was this request's alone, the head is
            # shared; the keys reaching 0 are exactly the first ``ones``, the rest stay pinned
            for k, rc in zip(keys[ones:], vals[ones:]):
                res[k] = rc - 1
            keys = keys[:ones]
            for k in keys:
                res[k] = 0
            self.policy.add(keys, reused)
            return
        out = []
        for k, rc in zip(keys, vals):
            rc -= 1
            res[k] = rc
            if not rc:
                out.append(k)
        if out:
            self.policy.add(out, reused)

    def reserve(self, n: int) -> list[int] | None:
        """Reserve ``n`` slots, evicting as needed; all-or-nothing.

        Returns:
            the evicted keys in eviction order (possibly empty), or None when
            ``n`` slots cannot be had (nothing changes).
        """
        res = self.resident
        reserved = self.reserved_blocks
        need = n - (self.capacity_blocks - len(res) - reserved)
        victims: list[int] = []
        if need > 0:
            victims = self.policy.evict(need)
            if victims is None:
                return None
            for k in victims:
                del res[k]
            self.stats.evicted_blocks += need
        self.reserved_blocks = reserved = reserved + n
        used = len(res) + reserved
        if used > self.stats.peak_used_blocks:
            self.stats.peak_used_blocks = used
        return victims

    def release(self, n: int) -> None:
        """Give back ``n`` reserved slots."""
        assert 0 <= n <= self.reserved_blocks, (n, self.reserved_blocks)
        self.reserved_blocks -= n

    def fill(self, keys: Sequence[int]) -> list[int]:
        """Turn one reserved slot per key (distinct keys) into a resident block pinned once.

        A key already resident (another request cached it meanwhile) is pinned
        instead and its slot stays reserved.

        Returns:
            the keys that were already resident (their slots are still reserved).
        """
        res = self.resident
        shared = []
        before = len(res)
        if not any(map(res.__contains__, keys)):  # the usual case: none cached meanwhile
            for k in keys:
                res[k] = 1
            keys = ()
        for k in keys:
            rc = res.get(k)
            if rc is None:
                res[k] = 1
            else:
                if not rc:
                    self.policy.remove((k,))
                res[k] = rc + 1
                shared.append(k)
        added = len(res) - before
        self.reserved_blocks -= added
        assert self.reserved_blocks >= 0, "fill without a reserved slot"
        st = self.stats
        st.inserted_blocks += added
        if len(res) > st.peak_resident_blocks:
            st.peak_resident_blocks = len(res)
        return shared

    def insert(self, keys: Sequence[int], reused: bool = False) -> tuple[list[int], int]:
        """Store distinct ``keys`` (eviction order) unpinned, evicting as needed; for lower tiers.

        The result is what a flat policy fed the keys one by one reaches: a
        key already resident is not written again but touched (it was in use
        above, so it is recent; this keeps an LRU hierarchy prefix-closed -- a
        demoted parent is never older below than its child); a new key is
        stored. The batch is the newest content: if it is larger than the
        unpinned room, its first keys (the least recently used) are pushed out
        -- new ones never written, resident ones evicted -- after every older
        unpinned block.

        Returns:
            (keys pushed out: victims then batch keys that did not fit, in
            eviction order; number of keys newly written).
        """
        res = self.resident
        pol = self.policy
        held = len(pol)
        free = self.capacity_blocks - len(res) - self.reserved_blocks
        room = free + held
        cut_keys: list[int] = []
        if len(keys) > room:
            cut = len(keys) - max(room, 0)
            cut_keys, keys = list(keys[:cut]), keys[cut:]
            gone = [k for k in cut_keys if res.get(k) == 0]
            if gone:
                pol.remove(gone)
                for k in gone:
                    del res[k]
                self.stats.evicted_blocks += len(gone)
            self.stats.overflow_blocks += len(cut_keys) - len(gone)
            held = len(pol)
            free = self.capacity_blocks - len(res) - self.reserved_blocks
        fresh = list(filterfalse(res.__contains__, keys))
        if len(fresh) == len(keys):
            again = []
        elif len(res) == held:          # no pins (a lower tier): every resident key is unpinned
            again = list(filter(res.__contains__, keys))
        else:
            again = [k for k in keys if res.get(k) == 0]
        if again:
            pol.remove(again)
        need = len(fresh) - free
        victims: list[int] = []
        st = self.stats
        if need > 0:
            victims = pol.evict(need)
            assert victims is not None
            for k in victims:
                del res[k]
            st.evicted_blocks += need
        for k in fresh:
            res[k] = 0
        if again:
            if len(fresh) + len(again) == len(keys) and (reused or pol.reuse_blind):
                pol.add(keys, reused)   # one run: every key stored or touched, flags equal or ignored
            else:
                self._add_in_order(keys, set(fresh), set(again), reused)
        else:
            pol.add(fresh, reused)
        st.inserted_blocks += len(fresh)
        size = len(res)
        if size > st.peak_resident_blocks:
            st.peak_resident_blocks = size
        size += self.reserved_blocks
        if size > st.peak_used_blocks:
            st.peak_used_blocks = size
        if cut_keys:
            victims.extend(cut_keys)
        return victims, len(fresh)

    def _add_in_order(self, keys: list[int], fresh: set, again: set, reused: bool) -> None:
        """Give ``keys`` back to the policy in order, in runs: stored (``reused``) or touched (True)."""
        run: list[int] = []
        flag = None
        for k in keys:
            f = reused if k in fresh else (True if k in again else None)
            if f is None:
                continue
            if f is not flag and run:
                self.policy.add(run, flag)
                run = []
            flag = f
            run.append(k)
        if run:
            self.policy.add(run, flag)

    def touch(self, keys: Sequence[int]) -> None:
        """Record an unpinned access to resident keys (eviction order); pinned ones are skipped."""
        res = self.resident
        keys = [k for k in keys if res[k] == 0]
        if keys:
            self.policy.touch(keys)

    def _check(self) -> None:
        """Assert: capacity respected, pin counts >= 0, policy holds exactly the unpinned blocks."""
        res = self.resident
        assert self.reserved_blocks >= 0
        assert len(res) + self.reserved_blocks <= self.capacity_blocks, (len(res), self.reserved_blocks,
                                                                         self.capacity_blocks)
        assert all(rc >= 0 for rc in res.values())
        unpinned = {k for k, rc in res.items() if rc == 0}
        held = self.policy.order()
        assert len(held) == len(set(held)) == len(self.policy), "policy holds a key twice"
        assert set(held) == unpinned, (sorted(set(held) ^ unpinned)[:10])
        self.policy._check()
