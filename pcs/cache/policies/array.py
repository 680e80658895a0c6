"""The handle contract: an eviction policy written in Python that orders *handles*, dense ints, not block keys.

Why: a policy written against :class:`pcs.cache.policies.base.EvictionPolicy` gets each block key it
orders in a Python list, one call per batch, and does per-key Python work on each: a two-tier modeled
replay of the Mooncake trace makes 116,683 such calls with 2.2 M keys, which alone take most of the
time a replay may take at 1 M block accesses/s (docs/performance.md, "Python policies, hosted"). Here
the host names each stay of a block in the policy by a *handle*, keeps which handles are held in a
``bytearray`` the policy reads, and calls the policy once per decision:

- Handles are 0, 1, 2, ... per policy object, named by *runs*: a run ``(first, count, reused)``
  names the handles ``first`` .. ``first + count - 1``, evictable, in eviction order (the first goes
  first among them); runs come in the order their blocks became evictable, each the keys of one
  ``add(keys, reused)`` of the key contract, or of one ``touch(keys)`` (``reused`` True: an unpinned
  access renames its blocks). A handle names one stay and is never reused.
- ``flags[h]`` (:attr:`ArrayPolicy.flags`, written by the host only) is 1 while handle ``h`` is held:
  named, not pinned, dropped, renamed by a touch or taken as a victim; 0 beyond the last handle. A
  handle that goes changes nothing else: a policy's order of the other handles must not depend on
  when one went.
- :meth:`ArrayPolicy.victims` ``(n, runs)`` is the only call during a replay: it takes the runs named
  since the last call (in order) and answers ``n`` held handles, first victim first (a list, or a
  ``range``: the host reads its bounds, no int per victim); the host then clears their flags. ``n``
  never exceeds the held handles; it is 0 when the host only hands runs over (before
  :meth:`order_handles`, at the end of a replay). How the runs are cut into calls must not change the
  answers (``tests/cache/test_policies_array.py`` checks it).

Identity (opt-in: a class with ``identity = True``). ``ident`` (:attr:`ArrayPolicy.ident`, written by the host
only) holds a native int32 per handle: the *block number* of the handle's block, dense per policy object (0, 1,
2, ... in the order blocks are first named), the same across the block's stays -- a pin, a touch, being chosen as a
victim -- so ghost lists, use counts and visited bits live in lists, ``bytearray`` s or numpy arrays indexed by
it. ``drop`` ends a number (the key contract's drop forgets a block, :mod:`pcs.cache.policies.base`): a dropped
block that comes back is numbered anew, as a block the policy never saw. Read a run's numbers with
:meth:`ArrayPolicy.idents` (a tuple, no export of the buffer kept); like ``flags``, ``ident`` must not be
replaced, resized or exported across calls. Example: :mod:`pcs.cache.policies.array_lfu` (LFU and LFU-DA).

So a recency policy is a few C-level byte scans (``bytearray.find`` / ``count``) per decision
(:mod:`pcs.cache.policies.array_lru`); no key, and no int per block, crosses into Python. What the
contract cannot express: ``expect`` (the ghost lookup before the evictions for a miss: ARC, 2Q, S3-FIFO),
decisions that depend on when a block was pinned: such policies use :class:`EvictionPolicy`. Memory: the host
keeps five bytes per handle ever named (its flag and its entry), nine with identity, about that many per block
access per tier, and a key -> number entry per block it numbered; it never shrinks them.

Hosts. The compiled hierarchy (``pcs/cache/_pol_pyarr.c``) names the handles, keeps the flags and maps
handles to its entries in C, and calls ``victims`` directly. Everywhere else (the Python
:class:`pcs.cache.tier.Tier`, the contract test ``tests/cache/test_policies_contract.py``) an
:class:`ArrayPolicy` is an :class:`EvictionPolicy`: its key methods keep the key <-> handle map and the
flags in Python, queue the runs and hand them over at ``evict`` and ``order``.
"""
from __future__ import annotations

from abc import abstractmethod
from struct import pack, unpack_from
from typing import ClassVar, Iterable, Sequence

from pcs.cache.policies.base import EvictionPolicy
from pcs.cache.policyguard import as_index, broke_count, broke_handles
from pcs.units import a_or_an
from pcs.errors import UserError, shown_repr

__all__ = ["ArrayPolicy", "Run"]

#: a run of handles: (first handle, count, reused)
Run = tuple


class ArrayPolicy(EvictionPolicy):
    """An eviction policy on handles (see the module docstring); subclasses implement :meth:`victims` and
    :meth:`order_handles`, reading :attr:`flags`.

    The key methods (``add``, ``remove``, ``drop``, ``touch``, ``evict``, ``order``, ``in``, ``len``) keep a
    key <-> handle map and the flags and call them, so the object runs on any host of the key contract.
    """

    contract = "array"
    #: True: the host fills :attr:`ident` (block numbers, module docstring); False: it keeps no numbers (faster)
    identity: ClassVar[bool] = False

    def __init__(self, capacity_blocks: int) -> None:
        super().__init__(capacity_blocks)
        #: handle -> 1 while held, else 0 (written by the host; the policy only reads it)
        self.flags = bytearray()
        #: identity only: handle h's block number is the native int32 at bytes 4h .. 4h + 3 (written by the host)
        self.ident = bytearray()
        self._ids: dict = {}             # key -> its block number (identity; the key methods only)
        self._handle: dict = {}          # key -> its current handle (the key methods only)
        self._key: dict = {}             # handle -> key
        self._next = 0                   # the next handle to name
        self._runs: list[Run] = []       # queued for the next victims call
        self._gone = 0                   # block numbers ended by drop (the next number: len(_ids) + _gone)

    # -- the handle contract (what a host calls) --
    @abstractmethod
    def victims(self, n: int, runs: Sequence[Run]) -> Sequence[int]:
        """Take ``runs`` (see the module docstring); return ``n`` held handles (``n`` <= held), first victim
        first, as a list or a ``range``; the host clears their flags."""

    @abstractmethod
    def order_handles(self) -> list[int]:
        """All held handles, first victim first (as of the last :meth:`victims` call)."""

    def idents(self, first: int, count: int) -> tuple:
        """The block numbers of handles ``first`` .. ``first + count - 1`` (identity only; ints), read from
        :attr:`ident` without keeping an export of it.

        Args:
            first: the first handle (>= 0); count: how many handles (>= 0), e.g. a run's ``(first, count)``.
        Returns:
            a tuple of ``count`` ints (native int32 each: block numbers, 0, 1, 2, ... per policy object).
        Raises:
            struct.error: the handles run past :attr:`ident` (a handle not yet named, ``first`` or ``count``
                negative), or the class has no identity (``identity = False``: ``ident`` stays empty).
        """
        return unpack_from(f"{count}i", self.ident, 4 * first)

    def held(self) -> int:
        """The number of held handles (the host's check compares it with the tier's count)."""
        return self.flags.count(1)

    def _check(self) -> None:
        """Default: :meth:`order_handles` lists every held handle once (a policy adds its own invariants); runs
        the key methods queued are handed over first."""
        if self._runs:
            self._deliver(0)
        hs = self.order_handles()
        assert len(set(hs)) == len(hs) == self.held() and all(self.flags[h] for h in hs), "order != held handles"

    # -- the key contract, mapped onto handles --
    def __len__(self) -> int:
        return len(self._handle)

    def __contains__(self, key: int) -> bool:
        return key in self._handle

    def _name(self, keys: Sequence[int], reused: bool) -> None:
        """Give ``keys`` (distinct) the next handles: one run."""
        first = self._next
        self._next = first + len(keys)
        handle, key = self._handle, self._key
        for h, k in enumerate(keys, first):
            handle[k] = h
            key[h] = k
        try:
            self.flags += b"\x01" * len(keys)
        except BufferError:             # the compiled host's words (pcs/cache/_pol_pyarr.c pa_flag)
            raise UserError("flags could not be grown: do not hold a memoryview or np.frombuffer of flags across "
                            "calls") from None
        if self.identity:
            ids = self._ids
            nums = [ids.setdefault(k, len(ids) + self._gone) for k in keys]
            try:
                self.ident += pack(f"{len(nums)}i", *nums)
            except BufferError:
                raise UserError("ident could not be grown: do not hold a memoryview or np.frombuffer of ident "
                                "across calls") from None
        self._runs.append((first, len(keys), bool(reused)))

    def _unname(self, keys: Iterable[int]) -> list[int]:
        handle, key, flags = self._handle, self._key, self.flags
        hs = [handle.pop(k) for k in keys]
        for h in hs:
            del key[h]
            flags[h] = 0
        return hs

    def _deliver(self, n: int) -> Sequence[int]:
        runs, self._runs = self._runs, []
        flags, ident = self.flags, self.ident
        got = self.victims(n, runs)
        for what, was in (("flags", flags), ("ident", ident)):   # as the compiled host (_pol_pyarr.c pa_call) checks
            if getattr(self, what) is not was:
                raise UserError(f"{what} replaced by the policy (self.{what} is the host's bytearray, written by "
                                "the host only)")
        return got

    def add(self, keys: Sequence[int], reused: bool = False) -> None:
        if len(set(keys)) != len(keys):                 # duplicates: the later wins (base.py)
            keys = list(dict.fromkeys(reversed(keys)))[::-1]
        if keys:
            self._name(keys, reused)

    def remove(self, keys: Iterable[int]) -> None:
        self._unname(keys)

    def drop(self, keys: Sequence[int]) -> None:
        self._unname(keys)
        if self.identity:                               # the number ends: numbered anew when it comes back
            for k in keys:
                del self._ids[k]
            self._gone += len(keys)

    def touch(self, keys: Sequence[int]) -> None:
        if keys:
            self._unname(keys)
            self._name(keys, True)

    def evict(self, n: int) -> list[int] | None:
        if n > len(self._handle):                       # all-or-nothing: the policy is not asked
            return None
        hs = self._deliver(n)
        if hs is None:      # the compiled host's words (pcs/cache/_pol_pyarr.c pa_ask -> pyhost_broke_count)
            raise broke_count(self.name, "victims", n, None, "handle", "array.py")
        why = self._bad_handles(hs, n, "n")
        if why:
            raise broke_handles(self.name, f"victims({n})", why)
        hs = [as_index(h) for h in hs] if type(hs) is not range else hs
        keys = [self._key[h] for h in hs]
        self._unname(keys)
        return keys

    def order(self) -> list[int]:
        self._deliver(0)
        hs = self.order_handles()
        why = self._bad_handles(hs, self.held(), "the policy holds")
        if why:
            raise broke_handles(self.name, "order_handles()", why)
        return [self._key[as_index(h)] for h in hs]

    def _bad_handles(self, hs: object, n: int, whole: str) -> str | None:
        """Why ``hs``, an answer of :meth:`victims` or :meth:`order_handles`, is not ``n`` (``whole``: what ``n``
        is, for the message) distinct held handles in a list, tuple or range of ints (anything with ``__index__``
        but a bool, :func:`pcs.cache.policyguard.as_index`), or None. The compiled host (pcs/cache/_pol_pyarr.c)
        refuses the same answers."""
        if not isinstance(hs, (list, tuple, range)):
            return f"must return a list, tuple or range of handles (got {a_or_an(type(hs).__name__)})"
        for h in hs:
            if type(h) is bool:
                return f"returned a bool ({shown_repr(h)}), not an int handle"
            if as_index(h) is None:         # the rule of both hosts: a numpy int is a handle, a float is not
                return f"returned a non-int ({shown_repr(h)}, {a_or_an(type(h).__name__)}), not a handle"
            if not (0 <= h < self._next and self.flags[h]):
                return f"returned a handle the tier does not hold unpinned (handle {h})"
        if len(set(hs)) != len(hs):
            return "returned a handle twice"
        if len(hs) != n:
            return f"returned {'fewer' if len(hs) < n else 'more'} handles than {whole} ({len(hs)}, not {n})"
        return None
