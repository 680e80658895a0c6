"""A hierarchy whose lowest tier is shared by a fleet's instances: restores from it hold a lease.

Every instance of a fleet with ``--shared-tier`` has its own hierarchy (its
GPU tier and private lower tiers) whose *last* tier is one
:class:`pcs.cache.tier.Tier` object that all the instances' hierarchies hold
(docs/semantics.md §17.1). Writes into it are the hierarchy's own (§7:
write-back demotes what the instance's lowest private tier evicts,
write-through copies every computed block), reads are restores over the
instance's own link to it. The one addition is the lease: the blocks a
request restores from the shared tier are leased from its admission until
its prefill ends (the restore has ended by then, §9), and a leased block is
never a victim (:meth:`pcs.cache.tier.Tier.lease`), as Mooncake's master
grants a lease on every read (``GrantLease`` with ``default_kv_lease_ttl``,
``mooncake-store/src/master_service.cpp``) and does not evict an object
under lease.
"""
from __future__ import annotations

from typing import Sequence

from pcs.cache.hierarchy import Admission, Hierarchy
from pcs.cache.tier import Tier
from pcs.errors import UserError

__all__ = ["SharedTierHierarchy"]


class SharedTierHierarchy(Hierarchy):
    """:class:`pcs.cache.hierarchy.Hierarchy` whose last tier is shared; restores from it are leased.

    Args:
        tiers: the instance's tiers, GPU first, the shared tier last (at least two).
        write_policy: ``back`` or ``through`` (§7), for the shared tier as for the others.
    Raises:
        UserError: fewer than two tiers; as :class:`Hierarchy`.
    """

    def __init__(self, tiers: Sequence[Tier], write_policy: str = "back") -> None:
        if len(tiers) < 2:
            raise UserError("a shared tier needs a GPU tier above it")
        super().__init__(tiers, write_policy)
        self.shared = self.tiers[-1]
        self._pending: list[int] = []
        self._leased: dict[int, list[int]] = {}     # id(admission) -> its leased shared blocks

    def start(self, block_hashes: Sequence[int], cacheable_blocks: int, max_hit_blocks: int, extra_blocks: int = 0,
              wait_if_full: bool = False) -> Admission | None:
        """As :meth:`Hierarchy.start`; the blocks restored from the shared tier stay leased until
        :meth:`prefill_done` (or :meth:`finish` / :meth:`abort` when that never comes)."""
        self._pending = []
        adm = super().start(block_hashes, cacheable_blocks, max_hit_blocks, extra_blocks, wait_if_full)
        if adm is not None and self._pending:
            self._leased[id(adm)] = self._pending
        self._pending = []
        return adm

    def _restore(self, restores: list) -> tuple[list, int]:
        """As :meth:`Hierarchy._restore`, then a lease on each block read from the shared tier (taken
        before the admission's demotions, so no demotion of its own pushes one out)."""
        out = super()._restore(restores)
        mine = restores[-1] if restores else []
        if mine:
            self.shared.lease(mine)
            self._pending = list(mine)
        return out

    def _release(self, adm: Admission) -> None:
        held = self._leased.pop(id(adm), None)
        if held:
            self.shared.release_lease(held)

    def prefill_done(self, adm: Admission) -> None:
        """As :meth:`Hierarchy.prefill_done`; the request's leases on the shared tier end (its restore is over)."""
        self._release(adm)
        super().prefill_done(adm)

    def finish(self, adm: Admission) -> None:
        """As :meth:`Hierarchy.finish` (leases still held, if any, end)."""
        self._release(adm)
        super().finish(adm)

    def abort(self, adm: Admission) -> None:
        """As :meth:`Hierarchy.abort` (leases still held, if any, end)."""
        self._release(adm)
        super().abort(adm)

    def leases_held(self) -> int:
        """Admissions of this hierarchy holding leases on the shared tier now."""
        return len(self._leased)
