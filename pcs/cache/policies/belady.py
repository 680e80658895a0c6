"""Belady's MIN in the event loop: evict the block whose next hit-earning use is farthest away.

An offline oracle, not an online policy: it reads the future from a pre-pass
over the trace (:class:`pcs.cache.policies.context.TraceOracle`). A block's
key is its next use after the request being admitted (the request clock,
:func:`pcs.cache.policies.context.clocked`): ``request << 24 | position``
of its next access at a position below that request's hit cap
(docs/semantics.md §4; an access that cannot earn hit tokens is skipped, as
in :mod:`pcs.curves.belady`), :data:`NEVER` if none; the victim has the
largest key (ties: smallest hash). A key computed when the block was
stored or last touched goes stale only if that use passes without the block
being pinned or touched (an access behind a missing block, in a lower
tier); a victim candidate whose key lies at or before the clock is
re-keyed before it is chosen.

What it bounds (docs/semantics.md §8, §12): on ONE tier in sequential
timing with chained block hashes it is MIN (Belady 1966; Mattson et al.
1970) under the replay rules, and its hit tokens equal the one-pass curve's
:func:`pcs.curves.belady.belady_hits` at every capacity
(``tests/cache/test_policies_oracle.py``): no policy gets more hit tokens
there. On SEVERAL tiers each tier evicts by the same farthest-next-use rule;
the union of the tiers is a demand cache of the summed capacity, so the hit
tokens (any tier) are at most MIN's at the summed capacity, and the tests
check that no registered policy beats the oracle on their traces; in modeled
timing it is the same rule with the clock at the latest admission. It
is the "policy" end of the gap split (``oracle_hit_ratio``).

Structures: key per held block, a lazy max-heap; O(log n) per key.
"""
from __future__ import annotations

import heapq
from typing import ClassVar, Iterable, Sequence

from pcs.cache.policies.base import EvictionPolicy
from pcs.cache.policies.context import NEVER, POS_BITS, PolicyContext
from pcs.errors import UserError

__all__ = ["BeladyPolicy"]


class BeladyPolicy(EvictionPolicy):
    """Offline oracle: farthest next hit-earning use first (Belady's MIN).

    Args:
        capacity_blocks: tier capacity in blocks.
        context: a :class:`PolicyContext` whose ``oracle`` was built with
            ``future=True`` (``pcs.replay`` builds it when a tier uses ``belady``).
    Raises:
        UserError: no context or no trace oracle in it.
    """

    name = "belady"
    summary = "offline oracle (Belady's MIN): evict the block used farthest in the future; an upper bound"
    source = "Belady, IBM Systems Journal 1966; Mattson et al., IBM Systems Journal 1970; pcs/curves/belady.py"
    needs: ClassVar[tuple[str, ...]] = ("future",)

    def __init__(self, capacity_blocks: int, context: PolicyContext | None = None) -> None:
        super().__init__(capacity_blocks)
        if context is None or context.oracle is None:
            raise UserError("eviction policy belady reads the trace's future: it needs a PolicyContext with a "
                             "TraceOracle (pcs.replay builds one)")
        self.context = context
        self._next_use = context.oracle.next_use
        self._clock = context.clock
        self._key: dict[int, int] = {}
        self._heap: list[tuple[int, int]] = []

    def __len__(self) -> int:
        return len(self._key)

    def __contains__(self, key: int) -> bool:
        return key in self._key

    def add(self, keys: Sequence[int], reused: bool = False) -> None:
        now, nxt, key, heap = self._clock.now, self._next_use, self._key, self._heap
        for k in keys:
            u = key[k] = nxt(k, now)
            heapq.heappush(heap, (-u, k))

    touch = add

    def remove(self, keys: Iterable[int]) -> None:
        key = self._key
        for k in keys:
            del key[k]

    drop = remove

    def evict(self, n: int) -> list[int] | None:
        key, heap = self._key, self._heap
        if n > len(key):
            return None
        now, out = self._clock.now, []
        while len(out) < n:
            u, k = heapq.heappop(heap)
            if key.get(k) != -u:
                continue
            if -u != NEVER and (-u >> POS_BITS) <= now:      # that use has passed: re-key
                v = key[k] = self._next_use(k, now)
                heapq.heappush(heap, (-v, k))
                continue
            del key[k]
            out.append(k)
        return out

    def order(self) -> list[int]:
        """Held keys, farthest next use first (keys as last computed)."""
        return sorted(self._key, key=lambda k: (-self._key[k], k))

    def _check(self) -> None:
        entries = set(self._heap)
        assert all((-u, k) in entries for k, u in self._key.items())
