"""One cache tier: residency, capacity, pins and statistics (the mechanism).

A tier holds up to ``capacity_blocks`` block slots. A slot is either

- *resident*: it holds a cached block, keyed by its block hash (§1), with a
  pin count (the number of running requests using it; vLLM ``KVCacheBlock``
  ``ref_cnt``). Pin count 0 means evictable; evictable blocks, and only
  those, are held by the tier's :class:`EvictionPolicy`, which orders them
  and picks victims;
- *reserved*: a slot a running request holds that is not (yet) a cached
  block -- a prompt block still being computed, a partial last block, output
  blocks (``reserved_blocks``).

Invariant (``_check``): ``len(resident) + reserved_blocks <= capacity_blocks``;
the policy holds exactly the resident blocks with pin count 0.

A fleet's shared lower tier also holds *leases* (:meth:`Tier.lease`, docs/semantics.md §17.1): a leased
block stays unpinned and in the policy, but is never a victim; every other tier has none, and then
no rule here changes.

Every method takes a batch of block hashes, so the Python call overhead is
per request, not per block. This is the reference the compiled twin
(``_lruhier.c``) is diffed against, so each method is one plain loop per rule,
without special-case fast branches (``docs/semantics.md §15``).
"""
from __future__ import annotations

from itertools import filterfalse, groupby
from typing import Iterable, Sequence

from pcs.cache.policies import EvictionPolicy
from pcs.cache.policyguard import as_index, broke, broke_count, guard, trusted
from pcs.counters import Counters
from pcs.errors import UserError, shown_repr
from pcs._dataclass import dataclass

__all__ = ["Tier", "TierStats"]


@dataclass(slots=True)
class TierStats(Counters):
    """Block counters of one tier (mutable; :meth:`merge` adds another's).

    Attributes:
        inserted_blocks: blocks that became resident (computed, restored or
            written into this tier).
        evicted_blocks: resident blocks chosen as victims.
        overflow_blocks: blocks offered to this (lower) tier that could not fit
            at all (passed on or dropped).
        peak_resident_blocks: largest number of resident blocks seen.
        peak_used_blocks: largest resident + reserved slots seen.
        refused_blocks: blocks offered to this (lower) tier that its admission
            policy refused (passed on or dropped; docs/semantics.md §8).
    """

    inserted_blocks: int = 0
    evicted_blocks: int = 0
    overflow_blocks: int = 0
    peak_resident_blocks: int = 0
    peak_used_blocks: int = 0
    refused_blocks: int = 0


class Tier:
    """A fixed-capacity block store with pin counts and a pluggable eviction policy.

    Args:
        name: tier name (``gpu``, ``cpu``, ``ssd`` ...).
        capacity_blocks: slots, >= 0.
        policy: an :class:`EvictionPolicy` instance (empty); one that is not pcs's own is guarded
            (:func:`pcs.cache.policyguard.guard`); the ``evict`` answers of one that is not a built-in
            (:func:`pcs.cache.policyguard.trusted`) are checked (:meth:`_claim`).
        admission: a :class:`pcs.cache.admission.AdmissionPolicy` deciding which
            offered blocks :meth:`insert` writes (None: all).
    Raises:
        UserError: negative capacity.
        pcs.errors.PolicyError: (from the methods) the policy raised or broke its contract.
    """

    __slots__ = ("name", "capacity_blocks", "policy", "resident", "reserved_blocks", "stats", "admission", "leases",
                 "lease_spared_blocks", "_expects", "_trusted")

    def __init__(self, name: str, capacity_blocks: int, policy: EvictionPolicy, admission=None) -> None:
        if capacity_blocks < 0:
            raise UserError(f"tier {shown_repr(name)}: capacity must be >= 0 blocks, got {capacity_blocks}")
        self.name = name
        self.capacity_blocks = int(capacity_blocks)
        self.policy = guard(policy)
        #: whether the policy reads :meth:`EvictionPolicy.expect` (policies with history: arc, 2q, s3fifo);
        #: the call, a no-op for the others, is skipped for them (checked once, here).
        self._expects = type(policy).expect is not EvictionPolicy.expect
        #: whether the policy is a built-in, whose ``evict`` answers are taken unchecked (:meth:`_evict`; known once, here).
        self._trusted = trusted(policy)
        #: block hash -> pin count of every resident block (read it, do not write it).
        self.resident: dict[int, int] = {}
        self.reserved_blocks = 0
        self.stats = TierStats()
        self.admission = admission
        #: block hash -> leases held on it (restores in flight from a shared tier, docs/semantics.md §17.1):
        #: a leased block is never a victim; empty for every tier but a fleet's shared tier.
        self.leases: dict[int, int] = {}
        #: times a leased block came up as a victim and was passed over (given back as used).
        self.lease_spared_blocks = 0
        if admission is not None and hasattr(admission, "bind"):
            admission.bind(self.capacity_blocks)

    def __repr__(self) -> str:
        return (f"Tier({self.name!r}, capacity_blocks={self.capacity_blocks}, resident={len(self.resident)}, "
                f"pinned={self.num_pinned}, reserved={self.reserved_blocks}, policy={self.policy.name})")

    def __contains__(self, block_hash: int) -> bool:
        return block_hash in self.resident

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
        return list(map(self.resident.__getitem__, block_hashes)).count(0)

    def _unpinned(self, block_hashes: Iterable[int]) -> list[int]:
        """The resident ``block_hashes`` with pin count 0 (the evictable ones), in the order given."""
        return list(filterfalse(self.resident.__getitem__, block_hashes))

    def pin(self, block_hashes: Sequence[int]) -> None:
        """Add one pin to each resident block (distinct hashes); a block going 0 -> 1 leaves the policy."""
        res = self.resident
        fresh = []
        for h in block_hashes:
            c = res[h]
            res[h] = c + 1
            if not c:
                fresh.append(h)
        if fresh:
            self.policy.remove(fresh)

    def unpin(self, block_hashes: Sequence[int], reused: bool) -> None:
        """Drop one pin from each block (distinct hashes), given in eviction order (tail first).

        Blocks whose count reaches 0 go to the policy in that order, marked
        ``reused`` (a hit) or not (just computed).
        """
        res = self.resident
        out = []                                # those now at 0, in the order given
        for h in block_hashes:
            c = res[h] - 1
            res[h] = c
            if not c:
                out.append(h)
        if out:
            self.policy.add(out, reused)

    def reserve(self, n: int, incoming: Iterable[int] = ()) -> list[int] | None:
        """Reserve ``n`` slots, evicting as needed; all-or-nothing (``docs/semantics.md §8``).

        ``incoming``: the block hashes some of the slots are for (not resident
        here, chain order), told to the policy (``EvictionPolicy.expect``)
        before it chooses victims; not told when the slots cannot be had.
        Listed only for a policy that reads it (so any iterable, read once).

        Returns:
            the evicted block hashes in eviction order (possibly empty), or
            None when ``n`` slots cannot be had (nothing changes).
        """
        free = self.capacity_blocks - len(self.resident) - self.reserved_blocks
        if n > free + len(self.policy):         # more than available_blocks
            return None
        if self._expects:
            incoming = list(incoming)
            if incoming:
                self.policy.expect(incoming)
        victims = self._evict(n - free) if n > free else []
        self.reserved_blocks += n
        # resident + reserved grew by n - len(victims) and stays <= capacity (checked above); resident did not grow
        used = self.capacity_blocks - free + n - len(victims)
        if used > self.stats.peak_used_blocks:
            self.stats.peak_used_blocks = used
        return victims

    def release(self, n: int) -> None:
        """Give back ``n`` reserved slots."""
        if not 0 <= n <= self.reserved_blocks:
            raise RuntimeError(f"tier {self.name!r}: release of {n} slots with {self.reserved_blocks} reserved")
        self.reserved_blocks -= n

    def fill(self, block_hashes: Sequence[int]) -> list[int]:
        """Turn one reserved slot per block (distinct hashes) into a resident block pinned once.

        A block already resident (another request cached it meanwhile) is
        pinned instead and its slot stays reserved.

        Returns:
            the hashes of the blocks that were already resident (their slots are still reserved).
        """
        res = self.resident
        shared = list(filter(res.__contains__, block_hashes))
        new = list(filterfalse(res.__contains__, block_hashes)) if shared else block_hashes
        for h in new:
            res[h] = 1
        if shared:
            self.pin(shared)
        added = len(new)
        self.reserved_blocks -= added
        if self.reserved_blocks < 0:
            raise RuntimeError(f"tier {self.name!r}: fill without a reserved slot")
        st = self.stats
        st.inserted_blocks += added
        if len(res) > st.peak_resident_blocks:     # resident + reserved did not change: only this peak can rise
            st.peak_resident_blocks = len(res)
        return shared

    def insert(self, block_hashes: Sequence[int], reused: bool = False) -> tuple[list[int], int]:
        """Store distinct blocks (eviction order) unpinned, evicting as needed; for lower tiers (§7).

        The batch is the newest content and is taken as a whole, not fed to
        the policy one by one: its blocks already resident are set aside
        first (unpinned ones leave the policy), so the room for its new blocks
        comes from the older unpinned blocks outside the batch; then, in batch
        order, new blocks are stored and the resident ones given back as
        reused (a touch: it was in use above, so it is recent; this keeps an
        LRU hierarchy prefix-closed -- a demoted parent is never older below
        than its child). A batch larger than the unpinned room loses its first
        blocks (the least recently used) -- new ones are never written,
        resident ones are evicted (the policy drops them) -- after every older
        unpinned block. (Fed one by one, a policy that does not reorder on a
        touch, FIFO, would instead evict a resident block of the batch and
        store it again at the back: ``tests/engine/test_exact_sample.py``,
        ``OTHER_READINGS``, shows the two differ.)

        With an admission policy (docs/semantics.md §8), new blocks it refuses
        are not written and are pushed out with the others (after them); a
        dueling one (TinyLFU) takes a victim's slot only if it wins.

        Returns:
            (hashes pushed out: victims then batch blocks that did not fit or
            were refused, in eviction order; number of blocks newly written).
        """
        refused: list[int] = []
        if self.admission is not None:
            block_hashes, refused = self._admit(block_hashes)
        cut: list[int] = []
        res = self.resident
        room = self.capacity_blocks - len(res) - self.reserved_blocks + len(self.policy)   # free plus evictable
        if len(block_hashes) > room or self.leases:
            cut, block_hashes = self._overflow(block_hashes, room)
        fresh = list(filterfalse(res.__contains__, block_hashes))
        again = self._unpinned(filter(res.__contains__, block_hashes)) if len(fresh) < len(block_hashes) else []
        if again:
            self.policy.remove(again)
        if fresh and self._expects:
            self.policy.expect(fresh)
        won: list[int] = []
        if fresh and self.admission is not None and hasattr(self.admission, "duel"):
            fresh, won, block_hashes = self._duel_batch(fresh, block_hashes, refused)
        free = self.capacity_blocks - len(res) - self.reserved_blocks
        victims = self._evict(len(fresh) - free) if len(fresh) > free else []
        for h in fresh:
            res[h] = 0
        if again:
            self._add_in_runs(block_hashes, fresh, again, reused)
        elif fresh:                 # nothing touched: the stored blocks, in batch order, are the one run
            self.policy.add(fresh, reused)
        st = self.stats
        st.inserted_blocks += len(fresh)
        if len(res) > st.peak_resident_blocks or len(res) + self.reserved_blocks > st.peak_used_blocks:
            self._note_peaks()
        if won or cut or refused:
            victims = won + victims + cut + refused
        return victims, len(fresh)

    def _duel_batch(self, fresh: list[int], block_hashes: list[int],
                    refused: list[int]) -> tuple[list[int], list[int], list[int]]:
        """The dueling admission's verdict on ``fresh`` (:meth:`_duel`): (fresh blocks still stored, victims
        whose slots the winners take, the batch without the losers); losers are appended to ``refused``."""
        fresh, won, lost = self._duel(fresh)
        if lost:
            gone = set(lost)
            block_hashes = [h for h in block_hashes if h not in gone]
            refused += lost
        return fresh, won, block_hashes

    def _admit(self, block_hashes: Sequence[int]) -> tuple[list[int], list[int]]:
        """Split a batch by the admission policy: (resident or admitted blocks, refused new blocks)."""
        res = self.resident
        fresh = [h for h in block_hashes if h not in res]
        if not fresh:
            return list(block_hashes), []
        refused = {h for h, ok in zip(fresh, self.admission.admit(fresh)) if not ok}
        if not refused:
            return list(block_hashes), []
        self.stats.refused_blocks += len(refused)
        return [h for h in block_hashes if h not in refused], [h for h in block_hashes if h in refused]

    def _duel(self, fresh: list[int]) -> tuple[list[int], list[int], list[int]]:
        """TinyLFU-style admission: each new block that needs room duels one victim (docs/semantics.md §8).

        The first ``len(fresh) - free`` blocks of the batch duel, one victim each, in order; a
        victim that wins is given back to the policy as reused. Returns (blocks to write,
        victims evicted, blocks refused).
        """
        need = len(fresh) - self.free_blocks
        if need <= 0:
            return fresh, [], []
        duel, res = self.admission.duel, self.resident
        keep, won, lost = fresh[need:], [], []
        for h in fresh[:need]:
            v = self._claim(self.policy.evict(1), 1, True)
            if v is not None and duel(h, v[0]):
                won.append(v[0])
                keep.append(h)
            else:
                if v is not None:
                    res[v[0]] = 0
                    self.policy.add(v, True)
                lost.append(h)
        self.stats.evicted_blocks += len(won)
        self.stats.refused_blocks += len(lost)
        order = {h: i for i, h in enumerate(fresh)}
        return sorted(keep, key=order.__getitem__), won, lost

    def _overflow(self, block_hashes: Sequence[int], room: int) -> tuple[list[int], Sequence[int]]:
        """Split off the oldest blocks of a batch larger than the unpinned ``room`` (free plus evictable
        slots): (pushed out, kept).

        Pushed-out blocks resident here and unpinned are evicted (counted in
        ``evicted_blocks``); the others count as ``overflow_blocks``.
        """
        n = max(len(block_hashes) - max(room, 0), 0)
        leases = self.leases
        if leases:
            n = self._lease_cut(block_hashes, n)
        if not n:
            return [], block_hashes
        res = self.resident
        cut = list(block_hashes[:n])
        gone = [h for h in cut if res.get(h) == 0 and h not in leases]
        if gone:
            self.policy.drop(gone)
            for h in gone:
                del res[h]
        self.stats.evicted_blocks += len(gone)
        self.stats.overflow_blocks += len(cut) - len(gone)
        return cut, block_hashes[n:]

    def _lease_cut(self, block_hashes: Sequence[int], n: int) -> int:
        """How many leading blocks of an insert batch to push out when leased blocks cannot make room
        (docs/semantics.md §17.1): ``n`` (the cut without leases) while the unleased unpinned blocks outside
        the batch can take the new blocks' evictions; else more, each extra one counted in
        ``lease_spared_blocks``. A cut block that is not leased is dropped or not written (one slot less
        needed); a leased one stays (no change)."""
        res, pol, leases = self.resident, self.policy, self.leases
        gone = sum(1 for h in block_hashes[:n] if res.get(h) == 0 and h not in leases)
        kept = block_hashes[n:]
        again = {h for h in kept if res.get(h) == 0}
        fresh = sum(1 for h in kept if h not in res)
        leased = sum(1 for h in leases if h in pol and h not in again)
        deficit = fresh - (self.free_blocks + gone) - (len(pol) - gone - len(again) - leased)
        while deficit > 0 and n < len(block_hashes):
            deficit -= block_hashes[n] not in leases
            n += 1
            self.lease_spared_blocks += 1
        return n

    def _evict(self, n: int) -> list[int]:
        """Evict ``n`` unpinned blocks (none when ``n`` <= 0; the caller made sure the tier holds ``n``); their
        hashes in eviction order.

        Raises:
            pcs.errors.PolicyError: the policy's answer broke the contract (:meth:`_claim`).
            RuntimeError: fewer than ``n`` unleased unpinned blocks (a bug of the caller).
        """
        if n <= 0:
            return []
        if self.leases:
            victims = self._evict_around_leases(n)
        elif self._trusted:         # a built-in policy: its answer is taken out of ``resident`` unchecked
            victims = self.policy.evict(n)
            res = self.resident
            for h in victims:
                del res[h]
        else:
            victims = self._claim(self.policy.evict(n), n)
        if victims is None:
            raise RuntimeError(f"tier {self.name!r}: asked to evict {n} blocks, fewer are unleased and unpinned")
        self.stats.evicted_blocks += len(victims)
        return victims

    def _claim(self, got: list[int] | None, n: int, may_fail: bool = False) -> list[int] | None:
        """Take the policy's answer to ``evict(n)`` out of ``resident`` after checking it: exactly ``n`` distinct
        blocks the tier holds unpinned, or None (only when ``may_fail`` and the policy holds fewer than ``n``).
        The one check of every ``evict`` answer, O(``n``) (the contract of ``pcs/cache/policies/base.py``, as
        ``pcs/cache/_pol_py.c`` checks it); :meth:`_evict` skips it for a built-in policy
        (:func:`pcs.cache.policyguard.trusted`). Returns the victims as ints (a numpy int answered is one;
        :func:`pcs.cache.policyguard.as_index`).

        Raises:
            pcs.errors.PolicyError: the answer broke the contract (its message names the policy).
        """
        if got is None:
            if may_fail and len(self.policy) < n:
                return None
            raise broke_count(self.policy.name, "evict", n, None)
        if len(got) != n:
            raise broke_count(self.policy.name, "evict", n, len(got))
        pop = self.resident.pop
        keys = []
        for h in got:
            k = as_index(h)         # the rule of both hosts: a numpy int is a key, a bool or a float is not
            if k is None:
                raise broke(self.policy.name, "evict(n) returned a bool or a non-int, not a block", h, n, "answer")
            if pop(k, 1):           # 0: held unpinned; a pin count, or 1 for a block not held (or given twice)
                raise broke(self.policy.name, "evict(n) returned a block the tier does not hold unpinned (or twice)",
                            h, n)
            keys.append(k)
        return keys

    def _evict_around_leases(self, n: int) -> list[int] | None:
        """``n`` victims in eviction order, passing over leased blocks (docs/semantics.md §17.1): a leased block
        the policy offers is given back to it as used (it is being read); None if fewer than ``n`` unleased
        blocks are held (nothing changes)."""
        leases = self.leases
        if len(self.policy) - sum(1 for h in leases if h in self.policy) < n:
            return None
        victims: list[int] = []
        spared: list[int] = []
        res = self.resident
        while len(victims) < n:
            for h in self._claim(self.policy.evict(n - len(victims)), n - len(victims)):
                (spared if h in leases else victims).append(h)
        for h in spared:
            res[h] = 0
        if spared:
            self.policy.add(spared, True)
            self.lease_spared_blocks += len(spared)
        return victims

    def lease(self, block_hashes: Sequence[int]) -> None:
        """Take one lease on each resident block (docs/semantics.md §17.1): it is not evicted until released."""
        leases = self.leases
        for h in block_hashes:
            leases[h] = leases.get(h, 0) + 1

    def release_lease(self, block_hashes: Sequence[int]) -> None:
        """Drop one lease from each block (leased by :meth:`lease`)."""
        leases = self.leases
        for h in block_hashes:
            c = leases[h] - 1
            if c:
                leases[h] = c
            else:
                del leases[h]

    def _note_peaks(self) -> None:
        """Raise the peak counters to the current resident and resident + reserved blocks."""
        st, size = self.stats, len(self.resident)
        if size > st.peak_resident_blocks:
            st.peak_resident_blocks = size
        if size + self.reserved_blocks > st.peak_used_blocks:
            st.peak_used_blocks = size + self.reserved_blocks
            if st.peak_used_blocks > self.capacity_blocks:      # an explicit check: asserts go under python -O
                raise RuntimeError(f"tier {self.name!r}: {size} resident + {self.reserved_blocks} reserved blocks "
                                   f"exceed its capacity of {self.capacity_blocks}")

    def _add_in_runs(self, block_hashes: Sequence[int], fresh: list, again: list, reused: bool) -> None:
        """Give the unpinned blocks of an insert that touched resident ones (``again``) back to the policy
        in order, in runs of one flag: stored (``fresh``: ``reused``) or touched (``again``: True); pinned
        blocks are skipped.

        All the unpinned blocks are one run when ``reused`` (every flag is True) or when the policy
        ignores the flag (``EvictionPolicy.reuse_blind``: lru, fifo)."""
        # every block stored or touched (none pinned, as always on a lower tier): the whole batch
        unpinned = block_hashes if len(fresh) + len(again) == len(block_hashes) else self._unpinned(block_hashes)
        if reused or self.policy.reuse_blind:
            self.policy.add(unpinned, reused)
            return
        for touched, run in groupby(unpinned, set(again).__contains__):
            self.policy.add(list(run), touched)

    def touch(self, block_hashes: Sequence[int]) -> None:
        """Record an unpinned access to resident blocks (eviction order); pinned ones are skipped."""
        unpinned = list(filterfalse(self.resident.__getitem__, block_hashes))      # pin count 0
        if unpinned:
            self.policy.touch(unpinned)

    def _check(self) -> None:
        """Assert: capacity respected, pin counts >= 0, policy holds exactly the unpinned blocks."""
        res = self.resident
        assert self.reserved_blocks >= 0
        assert len(res) + self.reserved_blocks <= self.capacity_blocks, (len(res), self.reserved_blocks,
                                                                         self.capacity_blocks)
        assert all(rc >= 0 for rc in res.values())
        assert all(h in res and c > 0 for h, c in self.leases.items()), "a leased block left the tier"
        unpinned = {k for k, rc in res.items() if rc == 0}
        held = self.policy.order()
        assert all(as_index(k) is not None for k in held), "order() holds a bool or a non-int"
        assert len(held) == len(set(held)) == len(self.policy), "policy holds a block twice"
        assert set(held) == unpinned, (sorted(set(held) ^ unpinned)[:10])
        self.policy._check()
