"""The compiled tier hierarchy (``pcs.cache._lruhier``) behind the :class:`pcs.cache.Hierarchy` interface.

:class:`NativeHierarchy` has the same ``start`` / ``prefill_done`` /
``finish`` calls, the same :class:`~pcs.cache.hierarchy.Admission` fields,
the same counters and end state as the Python hierarchy over
:class:`pcs.cache.tier.Tier` (rules: docs/semantics.md §3-§8), in C: one
open-addressing hash table per tier with intrusive lists. Each tier's
eviction policy is LRU (inline, the fastest) or one of the compiled twins of
:data:`COMPILED_POLICIES` (``pcs/cache/_pol_NAME.c``, one file per policy as
``pcs/cache/policies/NAME.py``; docs/semantics.md §8), given the sizes its
Python policy object worked out (:func:`policy_spec`), so option values
(``slru:protected_share=0.5``, ``s3fifo:small_share=0.2``) pass through.
Each tier's admission policies (``--admit``) run there too: ``reuse``,
``selective`` and ``tinylfu`` as the compiled gates of ``pcs/cache/_admission.c``
(:data:`COMPILED_ADMISSIONS`, :func:`gate_specs`), ``retain`` as the pool of
``pcs/cache/_retain.c`` in front of any compiled policy
(:data:`RETAIN_POLICIES`, :func:`retain_spec`); docs/semantics.md §8.
Block hashes must be ints in [0, 2**64) (the trace readers' uint64 hashes;
another value raises TypeError or OverflowError in ``start``), and ``start``
takes its arguments by position, as the engine passes them.
``tests/cache/test_replay_native.py``, ``tests/cache/test_native_policies.py`` and ``tests/cache/test_native_admission.py``
check both give identical admissions, summaries, per-request tables and end
states. Which hierarchy a replay runs on is decided by the engine-selection
table (:mod:`pcs.engine.select`, row ``compiled-hierarchy``), nowhere else.
"""
from __future__ import annotations

import os as _os
from collections.abc import Mapping
from typing import Any, Callable, Sequence

import numpy as _np

from pcs.cache import Tier
from pcs.cache.hierarchy import check_hierarchy_args
from pcs.cache.policies import get_policy
from pcs.cache.policies.context import TraceOracle
from pcs.cache.tier import TierStats

from pcs import _native
from pcs.errors import UserError
from pcs.cache.admission import CombinedAdmission, admission_kinds
from pcs.cache.admission_retention import RetainingPolicy

_lruhier = _native.module("lruhier")    # None when the optional extension did not compile

__all__ = ["NativeHierarchy", "CompiledHierarchy", "available", "policy_spec", "gate_specs", "retain_spec",
           "COMPILED_POLICIES", "COMPILED_DATA", "COMPILED_ADMISSIONS", "RETAIN_POLICIES", "MAX_BLOCKS",
           "MAX_TIERS", "size_unsupported"]

#: largest tier the compiled hierarchy takes (int32 entry indices); larger ones use Python.
MAX_BLOCKS = 1 << 30
#: most tiers the compiled hierarchy takes (pcs/cache/_lruhier.c: ``need 1..64 tiers``).
MAX_TIERS = 64


def size_unsupported(capacities: Sequence[tuple[str, int]]) -> str | None:
    """The compiled hierarchy's fixed sizes, the one statement of them (:func:`available` at set-up and the
    engine-selection table, :mod:`pcs.engine.select` rows ``compiled-hierarchy`` and ``compiled-step``, both read
    it): None when they hold, else the first one broken: at most :data:`MAX_TIERS` tiers, each at most
    :data:`MAX_BLOCKS` blocks.

    Args:
        capacities: ``(name, capacity in blocks)`` per tier, GPU first.
    """
    if len(capacities) > MAX_TIERS:
        return f"it takes at most {MAX_TIERS} tiers, got {len(capacities)}"
    big = [name for name, cap in capacities if cap > MAX_BLOCKS]
    if big:
        return f"tier {big[0]} has more than {MAX_BLOCKS:,} blocks"
    return None

#: Registered policy name -> the integer options its C twin takes, read from the Python policy object
#: (sizes in blocks as the Python policy truncates them, so both round alike).
COMPILED_POLICIES: dict[str, Callable[[Any], tuple[int, ...]]] = {
    "lru": lambda p: (),
    "fifo": lambda p: (),
    "slru": lambda p: (p.protected_max_blocks,),
    "sieve": lambda p: (),
    "2q": lambda p: (p.in_blocks, p.out_blocks),
    "s3fifo": lambda p: (p.small_blocks, p.main_blocks, p.ghost_blocks, p.threshold),
    "arc": lambda p: (p.capacity_blocks,),
    "lfu": lambda p: (1 if p.aging == "dynamic" else 0,),
    "gdsf": lambda p: (),
    "belady": lambda p: (),
}


#: The multiplier of the C tables' hash (``PCS_HMUL`` in pcs/_kernel_common.h ``key_hash``: Fibonacci hashing).
_HMUL = _np.uint64(0x9E3779B97F4A7C15)
#: This process's seed of :func:`key_index` (drawn once per process, as the C tables' own seed is): ids crafted
#: against the unseeded hash -- every one at home slot 0, a quadratic build and lookup -- spread like any ids.
INDEX_SEED = int.from_bytes(_os.urandom(8), "little")


def key_index(keys: _np.ndarray, seed: int | None = None) -> _np.ndarray:
    """The C twins' read-only index of distinct block hashes (``data_find`` in pcs/cache/_lruhier.h): int32
    slots (2**k >= 2 x len(keys), -1 empty) of an open-addressing table with linear probing, home slot
    ``key_hash_seeded(hash, seed) >> (64 - k)`` (pcs/_kernel_common.h: ``h ^= seed; (h ^ h >> 32) x HMUL``; ``seed``
    :data:`INDEX_SEED` unless given; the C side is handed the seed with the slots), slot -> index
    in ``keys``. Built by rounds (round r places, at the r-th probe of
    its sequence, each key whose earlier probes were all taken; of keys meeting in one free slot one stays, the
    others go on), so every key's earlier probes are taken: a lookup finds it before an empty slot. Which key
    takes a contested slot changes only where keys sit, never what a lookup returns.

    Args:
        keys: uint64 (n,), distinct.
        seed: the hash's seed, 0 to 2**64 - 1 (tests; default :data:`INDEX_SEED`).
    Returns:
        int32 (2**k,).
    """
    n = len(keys)
    bits = 4
    while (1 << bits) < 2 * (n + 1):
        bits += 1
    mask = (1 << bits) - 1
    slots = _np.full(1 << bits, -1, _np.int32)
    with _np.errstate(over="ignore"):
        k = keys.astype(_np.uint64) ^ _np.uint64(INDEX_SEED if seed is None else seed)
        home = (((k ^ (k >> _np.uint64(32))) * _HMUL) >> _np.uint64(64 - bits)).astype(_np.int64)
    todo = _np.arange(n, dtype=_np.int64)
    r = 0
    while len(todo):
        at = (home[todo] + r) & mask
        free = slots[at] < 0
        cand, where = todo[free], at[free]
        slots[where] = cand
        todo = _np.concatenate((todo[~free], cand[slots[where] != cand]))
        r += 1
    return slots


def _gdsf_data(policy: Any) -> tuple | None:
    """The trace data of ``pcs/cache/_pol_gdsf.c`` for a :class:`GDSFPolicy`: ``(keys uint64 (n,), slots int32
    (:func:`key_index`), parent int32 (n,) (the parent's index, -1 at depth 0), cost float64 (n,) seconds, cost0
    float64 (1,), seed uint64 (1,) (the index's))`` from its :class:`TraceOracle` (``keys``, ``key_depth``,
    ``key_parent``) and its cost function (cost of a block = the function at its depth; cost0 = at depth 0, for a block not in the trace);
    None without a trace (every block a leaf of 1 s). Built once per oracle and cost function (every tier and
    hierarchy of a replay shares the arrays)."""
    ctx = policy.context
    oracle, cost_of = ctx.oracle, ctx.block_cost_s
    if oracle is None:
        if cost_of is None:
            return None
        oracle = _EMPTY_ORACLE
    memo = oracle.packed.get("gdsf")
    if memo is not None and memo[0] is cost_of:
        return memo[1]
    keys, depth = oracle.keys, oracle.key_depth
    n = len(keys)
    top = int(depth.max()) if n else 0
    by_depth = _np.ones(top + 1) if cost_of is None else _np.array([float(cost_of(d)) for d in range(top + 1)])
    slots, seed = _index_of(oracle, "keys", keys)
    data = (keys, slots, oracle.key_parent, by_depth[depth], by_depth[:1].copy(), seed)
    oracle.packed["gdsf"] = (cost_of, data)
    return data


def _index_of(oracle: Any, name: str, keys: _np.ndarray) -> tuple[_np.ndarray, _np.ndarray]:
    """``(slots, seed uint64 (1,))``: :func:`key_index` of ``keys`` and the seed it was built with, made once
    per oracle (the seed travels with the slots: an oracle made in another process reads right)."""
    got = oracle.packed.get(("index", name))
    if got is None:
        got = oracle.packed[("index", name)] = (key_index(keys, INDEX_SEED), _np.array([INDEX_SEED], _np.uint64))
    return got


def _belady_data(policy: Any) -> tuple:
    """The trace data of ``pcs/cache/_pol_belady.c`` for a :class:`BeladyPolicy`: ``(keys uint64 (n,), slots int32
    (:func:`key_index`), offsets int64 (n + 1,), uses int64 (m,), seed uint64 (1,) (the index's))``, the use keys
    ``request << 24 | position`` of key i being ``uses[offsets[i]:offsets[i + 1]]`` (ascending): its
    :class:`TraceOracle`'s arrays."""
    o = policy.context.oracle
    slots, seed = _index_of(o, "use_keys", o.use_keys)
    return o.use_keys, slots, o.use_offsets, o.use_values, seed


_EMPTY_ORACLE = TraceOracle()

#: Registered policy name -> the trace data its C twin loads (policies that read the trace).
COMPILED_DATA: dict[str, Callable[[Any], Any]] = {"gdsf": _gdsf_data, "belady": _belady_data}


#: Admission kind -> ``(kind, a, b)`` integer options of its compiled gate (``pcs/cache/_admission.c``), read
#: from the bound Python admission object: the threshold (``reuse``, ``selective``); the sketch's width bits
#: and its reset sample in additions (``tinylfu``, as :class:`pcs.cache.admission_tinylfu.CountMinSketch`
#: rounds them).
#: ``retain`` has no gate (None): it wraps the tier's policy (:func:`retain_spec`).
COMPILED_ADMISSIONS: dict[str, Callable[[Any], tuple[str, int, int]] | None] = {
    "reuse": lambda a: ("reuse", a.threshold, 0),
    "selective": lambda a: ("selective", a.threshold, 0),
    "tinylfu": lambda a: ("tinylfu", a.sketch.width.bit_length() - 1, a.sketch.sample),
    "retain": None,
}
#: The eviction policies the compiled ``retain`` pool may sit in front of: every compiled one. A policy that
#: remembers a pinned block (fifo, sieve, 2q, s3fifo keep it linked in place; arc, lfu, gdsf keep its list or
#: uses) forgets it when the pool holds and evicts or drops it (docs/semantics.md §8,
#: ``RetainingPolicy._forget``): ``PolOps.forget`` of its C twin, or its entry freed (pcs/cache/_retain.c).
RETAIN_POLICIES = tuple(COMPILED_POLICIES)


def gate_specs(admission: Any) -> list[tuple[str, int, int]] | None:
    """The compiled gates of one tier's admission policy (a :class:`pcs.cache.admission.CombinedAdmission`
    gives one per part; None: no admission, an empty list; ``retain`` parts: none, the policy carries them),
    or None when a part has no compiled twin."""
    if admission is None:
        return []
    parts = admission.parts if type(admission) is CombinedAdmission else [admission]
    kinds = admission_kinds()
    out = []
    for p in parts:
        kind = getattr(p, "kind", None)
        if kind not in COMPILED_ADMISSIONS or type(p) is not kinds[kind]:
            return None
        if kind == "retain":
            continue
        kind, a, b = COMPILED_ADMISSIONS[kind](p)
        out.append((kind, int(a), int(b)))
    return out


def _unwrap(policy: Any) -> tuple[Any, Any]:
    """(the eviction policy, its ``RetentionAdmission`` or None) of a tier's policy object."""
    if type(policy) is RetainingPolicy:
        return policy.inner, policy.retention
    return policy, None


def retain_spec(policy: Any) -> tuple[Any, float, Any] | None:
    """``(retained block keys uint64 (n,), duration s, arrival s float64 (requests,))`` for the compiled pool of
    a tier's ``retain`` (``RetainingPolicy``), from its trace pre-pass: the blocks whose depth d (blocks) gives
    tokens [d x bs, (d + 1) x bs) overlapping the range (``RetentionAdmission.retained``); None without one.

    Raises:
        UserError: a retain that cannot run compiled (several on one tier, a policy not in
            :data:`RETAIN_POLICIES`).
    """
    inner, retention = _unwrap(policy)
    if retention is None:
        return None
    if _unwrap(inner)[1] is not None or inner.name not in RETAIN_POLICIES:
        raise UserError(f"retain runs compiled as one retain per tier in front of {', '.join(RETAIN_POLICIES)}")
    oracle = retention.context.oracle
    keys, depth, bs = oracle.keys, oracle.key_depth, oracle.block_size     # TraceOracle.depth's arrays
    keep = (depth * bs < retention.hi) & ((depth + 1) * bs > retention.lo)
    return (_np.ascontiguousarray(keys[keep]), float(retention.duration_s),
            _np.asarray(oracle.arrival_s, dtype=_np.float64))


def _retain_ok(policy: Any) -> bool:
    inner, retention = _unwrap(policy)
    return retention is None or (_unwrap(inner)[1] is None and inner.name in RETAIN_POLICIES
                                 and type(inner) is get_policy(inner.name)
                                 and retention.context is not None and retention.context.oracle is not None)


def policy_spec(policy: Any) -> tuple | None:
    """``(name, integer options)`` -- ``(name, options, trace data)`` for a policy that reads the trace
    (:data:`COMPILED_DATA`) -- for the C twin of an (empty) eviction policy object (behind a ``retain``
    wrapper: its inner policy's); for any other :class:`EvictionPolicy` (a plug-in, a subclass, a policy
    without a twin) the hosted spec of :func:`hosted_spec`; None for an object that is not one."""
    policy = _unwrap(policy)[0]
    name = getattr(policy, "name", None)
    opts = COMPILED_POLICIES.get(name)
    if opts is None or type(policy) is not get_policy(name):
        return hosted_spec(policy)
    spec = (name, tuple(int(v) for v in opts(policy)))
    data = COMPILED_DATA.get(name)
    return spec if data is None else spec + (data(policy),)


def hosted_spec(policy: Any) -> tuple | None:
    """``("py", (), (policy, expects, clock, PolicyError))``: the Python ``policy`` object hosted by the compiled
    hierarchy (``pcs/cache/_pol_py.c``: the mechanism in C calls its batched methods, the calls
    :class:`pcs.cache.tier.Tier` makes; docs/semantics.md §15); ``expects``: it overrides ``expect`` (else the
    call is skipped, as ``Tier._expects``); ``clock``: its :class:`PolicyContext` clock (set to the request
    clock before each call), or None. An :class:`pcs.cache.policies.array.ArrayPolicy` (the handle contract) gives
    ``("pyarr", (), (policy, clock, PolicyError))`` instead (``pcs/cache/_pol_pyarr.c``). None when ``policy`` is
    not an :class:`EvictionPolicy`."""
    from pcs.cache.policies import EvictionPolicy
    from pcs.cache.policies.array import ArrayPolicy
    from pcs.cache.policyguard import GuardedPolicy
    from pcs.errors import PolicyError

    if isinstance(policy, GuardedPolicy):     # the Python tier's guard: _pol_py.c checks the policy itself
        policy = policy.inner
    if not isinstance(policy, EvictionPolicy):
        return None
    clock = getattr(getattr(policy, "context", None), "clock", None)
    if isinstance(policy, ArrayPolicy):       # the handle contract: pcs/cache/_pol_pyarr.c
        return "pyarr", (), (policy, clock, PolicyError)
    return "py", (), (policy, type(policy).expect is not EvictionPolicy.expect, clock, PolicyError)


def available(tiers: Sequence[Tier]) -> bool:
    """Whether the compiled hierarchy can stand in for ``Hierarchy(tiers)``: extension built, every tier's
    policy with a compiled twin (:data:`COMPILED_POLICIES`) or another :class:`EvictionPolicy` (hosted:
    :func:`hosted_spec`), its admission policies with compiled twins
    (:data:`COMPILED_ADMISSIONS`), every tier empty, and the fixed sizes of :func:`size_unsupported`."""
    return _lruhier is not None and size_unsupported([(t.name, t.capacity_blocks) for t in tiers]) is None and all(
        policy_spec(t.policy) is not None and gate_specs(getattr(t, "admission", None)) is not None
        and _retain_ok(t.policy) and not len(t.resident) and not t.reserved_blocks for t in tiers)


class _Resident(Mapping):
    """Read-only view block hash -> pin count of one native tier's resident blocks."""

    __slots__ = ("_h", "_j")

    def __init__(self, h, j: int) -> None:
        self._h, self._j = h, j

    def __len__(self) -> int:
        return self._h.num_resident(self._j)

    def __getitem__(self, block_hash: int) -> int:
        rc = self._h.pin_count(self._j, block_hash) if isinstance(block_hash, int) else None
        if rc is None:
            raise KeyError(block_hash)
        return rc

    def __contains__(self, block_hash) -> bool:
        return isinstance(block_hash, int) and self._h.pin_count(self._j, block_hash) is not None

    def __iter__(self):
        return iter(self._h.resident(self._j))


class _PolicyView:
    """The evictable blocks of one native tier (what ``Tier.policy`` is for the Python tiers): the name,
    description and flags of the tier's Python policy, the held blocks of the C one."""

    __slots__ = ("_h", "_j", "name", "summary", "prefix_closed", "reuse_blind", "protected_share")

    def __init__(self, h, j: int, policy: Any) -> None:
        self._h, self._j = h, j
        self.name, self.summary = policy.name, policy.summary
        self.prefix_closed, self.reuse_blind = policy.prefix_closed, policy.reuse_blind
        self.protected_share = getattr(policy, "protected_share", None)     # slru's option (the summary's JSON)

    def __len__(self) -> int:
        return self._h.num_held(self._j)

    def __contains__(self, block_hash) -> bool:
        return self._h.pin_count(self._j, block_hash) == 0 if isinstance(block_hash, int) else False

    def order(self) -> list[int]:
        """Evictable block hashes, first victim first (the Python policy's ``order()``)."""
        return self._h.order(self._j)


class _TierView:
    """One tier of a :class:`NativeHierarchy` with the read side of :class:`pcs.cache.tier.Tier`."""

    __slots__ = ("_h", "_j", "name", "capacity_blocks", "resident", "policy", "admission")

    def __init__(self, h, j: int, name: str, capacity_blocks: int, policy: Any, admission: Any = None) -> None:
        self._h, self._j, self.name, self.capacity_blocks = h, j, name, capacity_blocks
        self.resident = _Resident(h, j)
        self.policy = _PolicyView(h, j, policy)
        #: the Python admission policy the tier was given (its ``spec()`` for the summary; its state unused)
        self.admission = admission

    def __repr__(self) -> str:
        return (f"NativeTier({self.name!r}, capacity_blocks={self.capacity_blocks}, resident={len(self.resident)}, "
                f"pinned={self.num_pinned}, reserved={self.reserved_blocks}, policy={self.policy.name})")

    def __len__(self) -> int:
        return self._h.num_resident(self._j)

    def __contains__(self, block_hash) -> bool:
        return block_hash in self.resident

    @property
    def reserved_blocks(self) -> int:
        return self._h.tier_info(self._j)[2]

    @property
    def stats(self) -> TierStats:
        """A snapshot of the tier's counters."""
        return TierStats(*self._h.tier_info(self._j)[3:])

    @property
    def num_pinned(self) -> int:
        res, held = self._h.tier_info(self._j)[:2]
        return res - held

    @property
    def free_blocks(self) -> int:
        res, _, reserved = self._h.tier_info(self._j)[:3]
        return self.capacity_blocks - res - reserved

    @property
    def available_blocks(self) -> int:
        res, held, reserved = self._h.tier_info(self._j)[:3]
        return self.capacity_blocks - res - reserved + held

    def _check(self) -> None:
        self._h.check()


class CompiledHierarchy:
    """What the compiled hierarchies share (:class:`NativeHierarchy`,
    :class:`pcs.cache.nativegroups.NativeGroupHierarchy`): the C object ``_h``, its calls bound as attributes (no Python frame per call), the written and dropped
    counters and ``_check``. Mechanism only; the tier (level) views are each subclass's own."""

    def _bind(self, h: Any, held_blocks: Callable[[], int]) -> None:
        """Keep the C hierarchy ``h`` and bind its calls: ``start``, ``prefill_done``, ``finish`` and the step
        scheduler's ``grow``, ``abort``, ``extend``, ``held_blocks`` (GPU slots held by running requests)."""
        self._h = h
        self.start, self.prefill_done, self.finish = h.start, h.prefill_done, h.finish
        self.grow, self.abort, self.extend = h.grow, h.abort, h.extend   # the step scheduler's calls
        self.held_blocks = held_blocks

    @property
    def written_blocks(self) -> list[int]:
        """Blocks (pages, in the hybrid hierarchy) written into each tier (demoted or written through)."""
        return self._h.written_blocks

    @property
    def dropped_blocks(self) -> int:
        """Blocks (pages, in the hybrid hierarchy) pushed out of the last tier."""
        return self._h.dropped_blocks

    def _check(self) -> None:
        """Assert the C structures' invariants: every tier's capacity, pins, hash table, and that the policy's
        lists hold the unpinned blocks (the hybrid hierarchy: also its residency page counters)."""
        self._h.check()


class NativeHierarchy(CompiledHierarchy):
    """:class:`pcs.cache.Hierarchy` in C (``pcs.cache._lruhier``): policies with compiled twins run in C, any other
    :class:`EvictionPolicy` object is hosted (:func:`hosted_spec`: its batched methods called from C).

    Calls: ``start``, ``prefill_done``, ``finish``, and for the step scheduler
    ``grow``, ``abort``, ``extend``, ``held_blocks`` (same semantics as the Python hierarchy's).

    Args:
        tiers: empty :class:`pcs.cache.tier.Tier` objects, GPU first, each with a policy of
            :data:`COMPILED_POLICIES` and admission policies of :data:`COMPILED_ADMISSIONS` (their names,
            capacities, policy and admission options are read; the objects are not used after).
        write_policy: ``"back"`` (default) or ``"through"``.
        expected_blocks: the number of distinct block ids of the trace to be replayed, or an upper bound on it
            (the replay passes the trace's block hashes), when the caller knows it (0: not known). Two tiers sharing one
            table (both plain LRU, or both fifo / slru: pcs/cache/_lruhier_polshare.h) size its slots once for
            ``min(expected_blocks, GPU + CPU capacity)`` blocks instead of doubling them from 16 as blocks come;
            no number depends on it (only where blocks lie in the table).
    Raises:
        UserError: no tier, duplicate names, unknown write policy, a policy or admission policy without
            a compiled twin, a non-empty tier, or the extension is not built.
    """

    def __init__(self, tiers: Sequence[Tier], write_policy: str = "back", expected_blocks: int = 0) -> None:
        names = check_hierarchy_args(tiers, write_policy)
        if not available(tiers):
            raise UserError(f"the native hierarchy needs the compiled pcs.cache._lruhier and at most {MAX_TIERS} "
                             f"empty tiers of at most {MAX_BLOCKS:,} blocks with eviction policies (compiled: {', '.join(COMPILED_POLICIES)}; "
                             "others hosted) and admission "
                             f"policies {', '.join(COMPILED_ADMISSIONS)} (one retain per tier in front of a compiled "
                             "policy); got "
                             f"{', '.join(f'{t.name}:{t.policy.name}' for t in tiers)}")
        admissions = [getattr(t, "admission", None) for t in tiers]
        h = _lruhier.Hierarchy(names, [t.capacity_blocks for t in tiers], write_policy == "through",
                               [policy_spec(t.policy) for t in tiers], [gate_specs(a) for a in admissions],
                               [retain_spec(t.policy) for t in tiers], expected_blocks=max(int(expected_blocks), 0))
        self._bind(h, h.gpu_held)           # held: pinned + reserved GPU slots
        self.write_policy = write_policy
        self.write_through = write_policy == "through"
        self.tiers = [_TierView(h, j, t.name, t.capacity_blocks, t.policy, a)
                      for j, (t, a) in enumerate(zip(tiers, admissions))]
        self.start_ids = h.start_ids        # start with the keys as a uint64 buffer (the compiled step loop's)
        # run_sequential(hashes u64, offsets i64 (R+1,), cacheable i64 (R,), max_hit i64 (R,), out i64 (R,)):
        # R requests one after another (start, prefill_done, finish each), out[i] = hit blocks; the
        # sequential baseline's loop in C (pcs.engine.seqbase), without the GIL when releases_gil
        self.run_sequential = h.run_sequential
        # sync(): a hosted Python policy gets the calls still queued for it (pcs/cache/_pol_py.c hands them over
        # when it must decide); called at the end of a run (pcs.engine.runner, seqbase), so an error it raises
        # there surfaces too (pcs.errors.PolicyError, naming the policy and the method)
        self.sync = h.sync

    @property
    def releases_gil(self) -> bool:
        """Whether :attr:`run_sequential` runs without the GIL (``pcs/cache/_lruhier.c``): True unless a tier hosts
        a Python policy (:func:`hosted_spec`: its methods are Python calls)."""
        return self._h.releases_gil


