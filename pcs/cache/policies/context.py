"""What policies that look at the trace get: chain positions, future uses, a request clock.

Two registered policies need more than the keys a tier hands them
(:attr:`EvictionPolicy.needs`):

- ``gdsf`` needs each block's position in its chain (``"chain"``): its depth
  (index in the request where the block first appears; with chained hashes a
  property of the block, docs/semantics.md §1), its parent (the block before
  it there) and the compute model's prefill seconds of a block at that depth;
- ``belady`` needs the future (``"future"``): for each block the requests and
  positions of its hit-earning uses (positions below the request's hit cap,
  docs/semantics.md §4), and the index of the request being admitted.

:func:`TraceOracle.build` reads the trace once before the replay (one pass
over the chunks the event loop will read, vectorised with numpy; the Python
policies' dicts are made on first use). A :class:`Clock` per hierarchy counts
admitted requests: the event loop admits requests in trace order (sequential timing, and modeled timing's
FIFO admission), so the k-th successful ``start`` is request k;
:func:`clocked` wraps a hierarchy whose policies read a clock.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import field
from typing import Any, Callable, Iterable

import numpy as np
from pcs.errors import UserError
from pcs._dataclass import dataclass

__all__ = ["Clock", "TraceOracle", "PolicyContext", "clocked", "NEVER", "POS_BITS"]

#: Bits of a use key that hold the position in the request: key = request << POS_BITS | position.
POS_BITS = 24
#: The use key of "never used again" (larger than every key).
NEVER = 1 << 62


class Clock:
    """The index of the request being (or last) admitted; -1 before the first."""

    __slots__ = ("now",)

    def __init__(self) -> None:
        self.now = -1


_U64 = np.zeros(0, np.uint64)
_I64 = np.zeros(0, np.int64)


@dataclass(slots=True)
class TraceOracle:
    """Per block hash: depth, parent and hit-earning uses, from one pass over a trace.

    The pass is vectorised (numpy) and keeps arrays; the per-block dicts the Python policies read are made
    from them on first use.

    Attributes:
        keys: uint64 (n,), every block hash, in order of first appearance.
        key_depth: int64 (n,), each one's index in the first request holding it (blocks).
        parent_keys: uint64, the block before each key of depth > 0 there (in the order of ``keys``).
        key_parent: int32 (n,), the index in ``keys`` of each key's parent, -1 at depth 0.
        use_keys: uint64 (u,), the blocks with a hit-earning access, in order of their first one.
        use_offsets: int64 (u + 1,): block ``use_keys[i]``'s use keys are ``use_values[use_offsets[i]:
            use_offsets[i + 1]]``, ascending.
        use_values: int64, use keys ``request << POS_BITS | position`` (empty unless built with ``future=True``).
        num_requests: requests read.
        arrival_s: arrival time of each request (seconds, trace order).
        block_size: tokens per block (0 before any request).
        packed: the compiled twins' data built from it, by policy name (:mod:`pcs.cache.native`).
    """

    keys: np.ndarray = field(default_factory=lambda: _U64)
    key_depth: np.ndarray = field(default_factory=lambda: _I64)
    parent_keys: np.ndarray = field(default_factory=lambda: _U64)
    key_parent: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    use_keys: np.ndarray = field(default_factory=lambda: _U64)
    use_offsets: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    use_values: np.ndarray = field(default_factory=lambda: _I64)
    num_requests: int = 0
    arrival_s: list = field(default_factory=list)
    block_size: int = 0
    packed: dict = field(default_factory=dict, repr=False, compare=False)
    _dicts: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def depth(self) -> dict:
        """block hash -> its depth (blocks), in order of first appearance."""
        d = self._dicts.get("depth")
        if d is None:
            d = self._dicts["depth"] = dict(zip(self.keys.tolist(), self.key_depth.tolist()))
        return d

    @property
    def parent(self) -> dict:
        """block hash -> the block before it where it first appears (absent at depth 0)."""
        d = self._dicts.get("parent")
        if d is None:
            d = self._dicts["parent"] = dict(zip(self.keys[self.key_depth > 0].tolist(), self.parent_keys.tolist()))
        return d

    @property
    def uses(self) -> dict:
        """block hash -> sorted use keys of its hit-earning accesses (empty unless built with ``future=True``)."""
        d = self._dicts.get("uses")
        if d is None:
            vals, off = self.use_values.tolist(), self.use_offsets.tolist()
            d = self._dicts["uses"] = {k: vals[off[i]:off[i + 1]] for i, k in enumerate(self.use_keys.tolist())}
        return d

    @classmethod
    def build(cls, chunks: Iterable[Any], future: bool = True, chain: bool = True) -> "TraceOracle":
        """From :class:`pcs.engine.chunks.Chunk` s (cacheable heads only, cut at a repeated hash
        as :meth:`pcs.cache.Hierarchy.start` cuts them); ``chain=False`` leaves ``keys``, ``key_depth``,
        ``parent_keys`` and ``key_parent`` empty (a replay whose only trace reader is ``belady``).

        Raises:
            UserError: a request with 2**24 or more cacheable blocks.
        """
        out = cls()
        parts = []
        for ch in chunks:
            out.arrival_s.extend(ch.arrival_s)
            out.block_size = ch.block_size
            parts.append(_heads(ch, out.num_requests))
            out.num_requests += len(ch.cacheable)
        if not parts:
            return out
        req, pos, h, cap = (np.concatenate(x) for x in zip(*parts))
        req, pos, h, cap, perm = _cut_repeats(req, pos, h, cap)
        if chain:
            _chains(out, pos, h, perm)
        if future:
            _future(out, req, pos, h, cap, perm)
        return out

    def next_use(self, block_hash: int, now: int) -> int:
        """The key of the first hit-earning use in a request after ``now`` (:data:`NEVER` if none)."""
        keys = self.uses.get(block_hash)
        if not keys:
            return NEVER
        i = bisect_right(keys, (now << POS_BITS) | ((1 << POS_BITS) - 1))
        return keys[i] if i < len(keys) else NEVER


def _heads(ch: Any, r0: int) -> tuple:
    """(request index int64, position int64, hash uint64, hit cap int64) of every block of the chunk's cacheable
    heads (``block_hashes[offsets[i]:offsets[i] + cacheable[i]]``), trace order; :func:`_cut_repeats` then cuts
    each before its first repeated hash. Raises UserError for a head of 2**24 blocks or more."""
    hashes = np.asarray(ch.block_hashes, dtype=np.uint64)
    off = np.asarray(ch.offsets, dtype=np.int64)[:-1]
    n = np.minimum(np.asarray(ch.cacheable, dtype=np.int64), len(hashes) - off).clip(0)   # as the slice takes them
    big = np.flatnonzero(np.asarray(ch.cacheable, dtype=np.int64) >= 1 << POS_BITS)
    if len(big):
        i = int(big[0])
        raise UserError(f"request {ch.first_request_id + i}: {ch.cacheable[i]} cacheable blocks, more than "
                         f"{(1 << POS_BITS) - 1}")
    row = np.repeat(np.arange(len(n), dtype=np.int64), n)
    pos = np.arange(len(row), dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
    h = hashes[off[row] + pos]
    return row + r0, pos, h, np.asarray(ch.max_hit_blocks, dtype=np.int64)[row]


def _cut_repeats(req: np.ndarray, pos: np.ndarray, h: np.ndarray, cap: np.ndarray) -> tuple:
    """The blocks of every head before the first hash repeated in it (as :meth:`pcs.cache.Hierarchy.start` cuts
    them), and ``perm``: int64, the stable argsort of their hashes (equal hashes in trace order), the one sort
    :func:`_chains` and :func:`_future` share. A stable sort puts two blocks of one head with one hash side by
    side (a head's blocks are consecutive in trace order), so a repeat is an equal (hash, request) neighbour."""
    perm = _stable_argsort(h)
    hs, rs = h[perm], req[perm]
    dup = np.flatnonzero((hs[1:] == hs[:-1]) & (rs[1:] == rs[:-1])) + 1
    if not len(dup):
        return req, pos, h, cap, perm
    cut = np.full(int(req[-1]) + 1, 1 << POS_BITS, np.int64)    # per request: the first position repeating a hash
    np.minimum.at(cut, rs[dup], pos[perm[dup]])
    keep = pos < cut[req]
    req, pos, h, cap = req[keep], pos[keep], h[keep], cap[keep]
    return req, pos, h, cap, _stable_argsort(h)


def _stable_argsort(h: np.ndarray) -> np.ndarray:
    """``np.argsort(h, kind="stable")`` (int64; equal hashes in index order), from numpy's unstable sort, which is
    several times faster on uint64: each run of equal hashes is then put in index order by one sort of the
    distinct int64 keys ``run x n + index`` (run: the run's rank among the sorted distinct hashes)."""
    n = len(h)
    perm = np.argsort(h)
    if n < 2:
        return perm.astype(np.int64)
    hs = h[perm]
    run = np.empty(n, np.int64)
    run[0] = 0
    np.cumsum(hs[1:] != hs[:-1], out=run[1:])
    key = run * n + perm
    key.sort()
    return key - run * n


def _groups(hs: np.ndarray) -> np.ndarray:
    """Start of each run of equal values in the sorted ``hs`` (int64)."""
    return np.flatnonzero(np.concatenate(([True], hs[1:] != hs[:-1]))) if len(hs) else np.zeros(0, np.int64)


def _chains(out: TraceOracle, pos: np.ndarray, h: np.ndarray, perm: np.ndarray) -> None:
    """Each block's depth and parent at its first appearance (``perm``: the stable argsort of ``h``)."""
    start = _groups(h[perm])
    first = perm[start]                              # first appearance of each hash, in hash order (stable sort)
    flag = np.zeros(len(h), np.int64)
    flag[start] = 1
    inv = np.empty(len(h), np.int64)                 # each access's hash: its index among the sorted distinct ones
    inv[perm] = np.cumsum(flag) - 1
    order = np.argsort(first)
    rank = np.empty(len(first), np.int32)            # sorted-unique index -> index in first-seen order
    rank[order] = np.arange(len(first), dtype=np.int32)
    first = first[order]
    out.keys, out.key_depth = h[first], pos[first]
    deep = out.key_depth > 0
    inner = first[deep]
    out.parent_keys = h[inner - 1]
    out.key_parent = np.full(len(first), -1, np.int32)
    out.key_parent[deep] = rank[inv[inner - 1]]


def _future(out: TraceOracle, req: np.ndarray, pos: np.ndarray, h: np.ndarray, cap: np.ndarray,
            perm: np.ndarray) -> None:
    """The use keys of the hit-earning accesses (position below the request's hit cap), by block: blocks in
    order of their first such use, each one's uses in trace order (``perm``: the stable argsort of ``h``)."""
    hp = perm[(pos < cap)[perm]]                     # the hit-earning accesses, by hash, then trace order
    start = _groups(h[hp])
    cnt = np.diff(np.append(start, len(hp)))
    first = hp[start]                                # each block's first hit-earning access
    order = np.argsort(first)
    lens, starts = cnt[order], start[order]
    ends = np.cumsum(lens)
    idx = np.arange(len(hp), dtype=np.int64) + np.repeat(starts - (ends - lens), lens)
    at = hp[idx]
    out.use_values = (req[at] << POS_BITS) | pos[at]
    out.use_keys = h[first[order]]
    out.use_offsets = np.zeros(len(first) + 1, np.int64)
    out.use_offsets[1:] = ends


@dataclass(slots=True)
class PolicyContext:
    """What a trace-aware policy of one hierarchy reads.

    Attributes:
        oracle: the trace pre-pass (None: no trace known, e.g. a unit test of the mechanism).
        block_cost_s: depth (blocks) -> prefill seconds of one block after ``depth`` cached blocks
            (the compute model's ``prefill_s(block_size, depth x block_size)``); None = 1 s each.
        clock: the request clock of the hierarchy the policy serves.
    """

    oracle: TraceOracle | None = None
    block_cost_s: Callable[[int], float] | None = None
    clock: Clock = field(default_factory=Clock)

    def fresh(self) -> "PolicyContext":
        """The same trace knowledge with a new clock (one per hierarchy)."""
        return PolicyContext(self.oracle, self.block_cost_s, Clock())


def block_cost_from(compute: Any, block_size: int) -> Callable[[int], float]:
    """``depth -> compute.prefill_s(block_size, depth x block_size)`` seconds, memoised per depth."""
    memo: dict[int, float] = {}

    def cost(depth: int) -> float:
        c = memo.get(depth)
        if c is None:
            c = memo[depth] = float(compute.prefill_s(block_size, depth * block_size))
        return c
    return cost


class _Clocked:
    """A hierarchy whose ``start`` sets the clock to the request it admits (see :func:`clocked`)."""

    def __init__(self, hierarchy: Any, clock: Clock) -> None:
        self._h, self._clock, self._admitted = hierarchy, clock, 0
        self.prefill_done, self.finish = hierarchy.prefill_done, hierarchy.finish

    def start(self, *args: Any, **kwargs: Any):
        self._clock.now = self._admitted
        adm = self._h.start(*args, **kwargs)
        if adm is not None:
            self._admitted += 1
        return adm

    def __getattr__(self, name: str) -> Any:
        return getattr(self._h, name)


def clocked(hierarchy: Any) -> Any:
    """``hierarchy`` itself, or wrapped so that its policies' shared :class:`Clock` follows admissions.

    Raises:
        UserError: the tiers' policies read different clocks.
    """
    clocks = {id(c): c for c in (getattr(getattr(t.policy, "context", None), "clock", None)
                                 for t in hierarchy.tiers) if c is not None}
    if not clocks:
        return hierarchy
    if len(clocks) > 1:
        raise UserError("the tiers of one hierarchy must share one policy clock (PolicyContext.fresh once per "
                         "hierarchy)")
    return _Clocked(hierarchy, next(iter(clocks.values())))
