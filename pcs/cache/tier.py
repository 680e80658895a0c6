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

    def count_evictable(self, block_hashes: Iterable[int]) -> int:
        """How many of the resident ``block_hashes`` have pin count 0."""
        res = self.resident
        return sum(1 for h in block_hashes if res[h] == 0)

    def pin(self, block_hashes: Sequence[int]) -> None:
        """Add one pin to each resident block (distinct hashes); a block going 0 -> 1 leaves the policy."""
        res = self.resident
        fresh = [h for h in block_hashes if res[h] == 0]
        for h in block_hashes:
            res[h] += 1
        if fresh:
            self.policy.remove(fresh)

    def unpin(self, block_hashes: Sequence[int], reused: bool) -> None:
        """Drop one pin from each block (distinct hashes), given in eviction order (tail first).

        Blocks whose count reaches 0 go to the policy in that order, marked
        ``reused`` (a hit) or not (just computed).
        """
        res = self.resident
        out = []
        for h in block_hashes:
            res[h] -= 1
            if res[h] == 0:
                out.append(h)
        if out:
            self.policy.add(out, reused)

    def reserve(self, n: int) -> list[int] | None:
        """Reserve ``n`` slots, evicting as needed; all-or-nothing (``docs/semantics.md §8``).

        Returns:
            the evicted block hashes in eviction order (possibly empty), or
            None when ``n`` slots cannot be had (nothing changes).
        """
        victims = self._evict(n - self.free_blocks)
        if victims is None:
            return None
        self.reserved_blocks += n
        self._note_peaks()
        return victims

    def release(self, n: int) -> None:
        """Give back ``n`` reserved slots."""
        assert 0 <= n <= self.reserved_blocks, (n, self.reserved_blocks)
        self.reserved_blocks -= n

    def fill(self, block_hashes: Sequence[int]) -> list[int]:
        """Turn one reserved slot per block (distinct hashes) into a resident block pinned once.

        A block already resident (another request cached it meanwhile) is
        pinned instead and its slot stays reserved.

        Returns:
            the hashes of the blocks that were already resident (their slots are still reserved).
        """
        res = self.resident
        shared = []
        for h in block_hashes:
            rc = res.get(h)
            if rc is None:
                res[h] = 1
                self.reserved_blocks -= 1
                self.stats.inserted_blocks += 1
            else:
                if rc == 0:
                    self.policy.remove([h])
                res[h] = rc + 1
                shared.append(h)
        assert self.reserved_blocks >= 0, "fill without a reserved slot"
        self._note_peaks()
        return shared

    def insert(self, block_hashes: Sequence[int], reused: bool = False) -> tuple[list[int], int]:
        """Store distinct blocks (eviction order) unpinned, evicting as needed; for lower tiers (§7).

        The result is what a flat policy fed the blocks one by one reaches: a
        block already resident is not written again but touched (it was in
        use above, so it is recent; this keeps an LRU hierarchy prefix-closed
        -- a demoted parent is never older below than its child); a new block
        is stored. The batch is the newest content: if it is larger than the
        unpinned room, its first blocks (the least recently used) are pushed
        out -- new ones never written, resident ones evicted -- after every
        older unpinned block.

        Returns:
            (hashes pushed out: victims then batch blocks that did not fit, in
            eviction order; number of blocks newly written).
        """
        cut, block_hashes = self._overflow(block_hashes)
        res = self.resident
        fresh = [h for h in block_hashes if h not in res]
        again = [h for h in block_hashes if res.get(h) == 0]
        if again:
            self.policy.remove(again)
        victims = self._evict(len(fresh) - self.free_blocks)
        assert victims is not None
        for h in fresh:
            res[h] = 0
        self._add_in_order(block_hashes, set(fresh), set(again), reused)
        self.stats.inserted_blocks += len(fresh)
        self._note_peaks()
        return victims + cut, len(fresh)

    def _overflow(self, block_hashes: Sequence[int]) -> tuple[list[int], Sequence[int]]:
        """Split off the oldest blocks of a batch larger than the unpinned room: (pushed out, kept).

        Pushed-out blocks resident here and unpinned are evicted (counted in
        ``evicted_blocks``); the others count as ``overflow_blocks``.
        """
        room = max(self.free_blocks + len(self.policy), 0)
        if len(block_hashes) <= room:
            return [], block_hashes
        cut = list(block_hashes[:len(block_hashes) - room])
        res = self.resident
        gone = [h for h in cut if res.get(h) == 0]
        if gone:
            self.policy.remove(gone)
            for h in gone:
                del res[h]
        self.stats.evicted_blocks += len(gone)
        self.stats.overflow_blocks += len(cut) - len(gone)
        return cut, block_hashes[len(block_hashes) - room:]

    def _evict(self, n: int) -> list[int] | None:
        """Evict ``n`` unpinned blocks (none when ``n`` <= 0); their hashes in eviction order, or None."""
        if n <= 0:
            return []
        victims = self.policy.evict(n)
        if victims is None:
            return None
        for h in victims:
            del self.resident[h]
        self.stats.evicted_blocks += n
        return victims

    def _note_peaks(self) -> None:
        """Raise the peak counters to the current resident and resident + reserved blocks."""
        st = self.stats
        st.peak_resident_blocks = max(st.peak_resident_blocks, len(self.resident))
        st.peak_used_blocks = max(st.peak_used_blocks, len(self.resident) + self.reserved_blocks)

    def _add_in_order(self, block_hashes: Sequence[int], fresh: set, again: set, reused: bool) -> None:
        """Give blocks back to the policy in order, in runs: stored (``reused``) or touched (True)."""
        run: list[int] = []
        flag = None
        for h in block_hashes:
            f = reused if h in fresh else (True if h in again else None)
            if f is None:
                continue
            if f is not flag and run:
                self.policy.add(run, flag)
                run = []
            flag = f
            run.append(h)
        if run:
            self.policy.add(run, flag)

    def touch(self, block_hashes: Sequence[int]) -> None:
        """Record an unpinned access to resident blocks (eviction order); pinned ones are skipped."""
        res = self.resident
        unpinned = [h for h in block_hashes if res[h] == 0]
        if unpinned:
            self.policy.touch(unpinned)

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
