"""The eviction-policy interface: ordering and victim choice, nothing else.

Mechanism and policy are split as in vLLM's CPU offloading manager
(``vllm/v1/kv_offload/cpu/manager.py`` with ``cpu/policies/base.py``) and in
cachetools (``Cache.__setitem__`` calling ``popitem``): a
:class:`pcs.cache.tier.Tier` owns residency, capacity, pins and statistics; a
policy only orders the tier's *evictable* blocks and picks victims.

Differences from vLLM's ``CachePolicy``: the policy never sees pinned blocks
(the tier removes a block from its policy when the block's pin count goes
0 -> 1 and gives it back when it returns to 0), so ``evict`` needs no
``protected`` set and no ref-count test, and every call takes a batch of keys
so the per-block work is one C-level container operation.

Key order convention: every key sequence handed to a policy is in *eviction
order* -- the first key is the first to go among them. The engine releases a
request's blocks tail first (vLLM ``KVCacheManager.free`` frees blocks in
reverse order so the tail is evicted first), so keys arrive tail ... head.

Contract (checked by ``tests/cache/test_policies_contract.py`` for every registered
policy):

- ``add(keys, reused)``: keys not held become evictable; ``reused`` says the
  block was used again (a hit) since it entered the tier, False for a block
  just computed or written. Duplicate keys in one call: the later wins.
- ``remove(keys)``: held keys stop being evictable (they are pinned); a
  policy may remember them (FIFO keeps their place) for when they come back.
- ``drop(keys)``: held keys leave the tier without being chosen by ``evict``
  (a lower tier pushes out the first keys of a batch larger than itself,
  docs/semantics.md §7); the policy forgets them as it forgets its victims.
- ``remove`` and ``drop`` act on each key alone: a batch is the same as its
  keys in any grouping (the compiled hierarchy, hosting a Python policy,
  joins adjacent batches of one of them into one call: pcs/cache/_pol_py.c,
  docs/semantics.md §15).
- ``expect(keys)``: keys not in the tier are about to be stored in it (the
  misses of a request, the new keys of a lower-tier batch), called before the
  ``evict`` that makes room for them; policies with history (ghost lists of
  ARC, 2Q, S3-FIFO) look them up there, as libCacheSim's ``find`` does before
  its ``evict``. Default: nothing (a :class:`pcs.cache.tier.Tier` whose policy does not
  override it skips the call).
- ``touch(keys)``: held keys were accessed without being pinned (a lower
  tier serving a restore); at most reorders them.
- ``evict(n)``: returns exactly ``n`` victims in eviction order and forgets
  them, or returns None and changes nothing (all-or-nothing, as vLLM
  ``cpu/policies/arc.py``).
- ``order()``: all held keys in eviction order (for tests and reports).
- ``_check()``: asserts the structure's invariants (sortedcontainers style).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar, Iterable, Sequence
from pcs.errors import UserError

__all__ = ["EvictionPolicy", "OneByOnePolicy"]


class EvictionPolicy(ABC):
    """Orders the evictable blocks of one tier and chooses victims.

    Args:
        capacity_blocks: the tier's capacity in blocks (pinned included);
            policies with segments size them from it.
    Raises:
        UserError: negative capacity or a bad policy option.
    """

    #: registry name (``--policy NAME``).
    name: ClassVar[str] = ""
    #: one-line description for ``--help`` and error messages.
    summary: ClassVar[str] = ""
    #: where the rule comes from: paper and the reference implementation followed (``pcs policies``).
    source: ClassVar[str] = ""
    #: trace knowledge the policy reads from a :class:`pcs.cache.policies.context.PolicyContext`
    #: (its constructor then takes ``context``): ``"chain"`` (depth, parent, block cost) and/or
    #: ``"future"`` (next uses and the request clock: an offline oracle).
    needs: ClassVar[tuple[str, ...]] = ()
    #: True if, fed tail-first releases, the policy keeps a tier prefix-closed
    #: (a parent never evicted before its child); LRU does.
    prefix_closed: ClassVar[bool] = False
    #: True if ``add`` ignores ``reused`` (the order of the keys is all it keeps), so consecutive
    #: ``add`` calls with different flags may be merged into one call (LRU, FIFO).
    reuse_blind: ClassVar[bool] = False
    #: the interface the policy implements (``pcs policies``): ``"keys"`` this one (block keys, a call per batch),
    #: ``"array"`` the handle contract of :class:`pcs.cache.policies.array.ArrayPolicy` (a call per decision).
    contract: ClassVar[str] = "keys"

    def __init__(self, capacity_blocks: int) -> None:
        if capacity_blocks < 0:
            raise UserError(f"capacity must be >= 0 blocks, got {capacity_blocks}")
        self.capacity_blocks = int(capacity_blocks)

    @abstractmethod
    def __len__(self) -> int:
        """Number of evictable blocks held."""

    @abstractmethod
    def __contains__(self, key: int) -> bool:
        """Whether ``key`` is held (evictable)."""

    @abstractmethod
    def add(self, keys: Sequence[int], reused: bool = False) -> None:
        """Make ``keys`` (not held) evictable, given in eviction order."""

    @abstractmethod
    def remove(self, keys: Iterable[int]) -> None:
        """Stop holding ``keys`` (all held): they are pinned now."""

    def drop(self, keys: Sequence[int]) -> None:
        """Forget held ``keys`` that leave the tier without being chosen (see the module docstring).

        Default: :meth:`remove`, right for a policy whose ``remove`` keeps nothing of a key (LRU, SLRU).
        """
        self.remove(keys)

    def expect(self, keys: Sequence[int]) -> None:
        """``keys`` (not resident, chain order) are about to be stored; called before the evictions for them."""
        return None

    @abstractmethod
    def touch(self, keys: Sequence[int]) -> None:
        """Record an unpinned access to held ``keys`` (given in eviction order)."""

    @abstractmethod
    def evict(self, n: int) -> list[int] | None:
        """Remove and return ``n`` victims in eviction order, or None (no change)."""

    @abstractmethod
    def order(self) -> list[int]:
        """All held keys, first victim first."""

    @abstractmethod
    def _check(self) -> None:
        """Assert internal invariants."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(capacity_blocks={self.capacity_blocks}, held={len(self)})"


class OneByOnePolicy(EvictionPolicy):
    """A policy that chooses its victims one at a time (S3-FIFO, SIEVE, 2Q): ``evict(n)`` is ``n`` calls
    of :meth:`_evict_one`, all-or-nothing (refused, changing nothing, when fewer than ``n`` are held)."""

    @abstractmethod
    def _evict_one(self) -> int:
        """Remove and return the next victim; called only while at least one block is held."""

    def evict(self, n: int) -> list[int] | None:
        if n > len(self):
            return None
        return [self._evict_one() for _ in range(n)]
