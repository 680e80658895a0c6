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
over the chunks the event loop will read; 40-60 B per access in Python
dicts). A :class:`Clock` per hierarchy counts admitted requests: the event
loop admits requests in trace order (sequential timing, and modeled timing's
FIFO admission), so the k-th successful ``start`` is request k;
:func:`clocked` wraps a hierarchy whose policies read a clock.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

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


@dataclass(slots=True)
class TraceOracle:
    """Per block hash: depth, parent and hit-earning uses, from one pass over a trace.

    Attributes:
        depth: block hash -> index of the block in the first request holding it (blocks).
        parent: block hash -> the block before it there (absent at depth 0).
        uses: block hash -> sorted use keys ``request << POS_BITS | position`` of
            its hit-earning accesses (empty unless built with ``future=True``).
        num_requests: requests read.
        arrival_s: arrival time of each request (seconds, trace order).
        block_size: tokens per block (0 before any request).
        packed: the compiled twins' arrays built from it, by policy name (:mod:`pcs.cache.native`).
    """

    depth: dict = field(default_factory=dict)
    parent: dict = field(default_factory=dict)
    uses: dict = field(default_factory=dict)
    num_requests: int = 0
    arrival_s: list = field(default_factory=list)
    block_size: int = 0
    packed: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def build(cls, chunks: Iterable[Any], future: bool = True) -> "TraceOracle":
        """From :class:`pcs.engine.chunks.Chunk` s (cacheable heads only, cut at a repeated hash
        as :meth:`pcs.cache.Hierarchy.start` cuts them).

        Raises:
            ValueError: a request with 2**24 or more cacheable blocks.
        """
        out = cls()
        depth, parent, uses = out.depth, out.parent, out.uses
        r = 0
        for ch in chunks:
            out.arrival_s.extend(ch.arrival_s)
            out.block_size = ch.block_size
            hashes, off = ch.block_hashes, ch.offsets
            for i, (n, cap) in enumerate(zip(ch.cacheable, ch.max_hit_blocks)):
                if n >= 1 << POS_BITS:
                    raise ValueError(f"request {ch.first_request_id + i}: {n} cacheable blocks, more than "
                                     f"{(1 << POS_BITS) - 1}")
                head = hashes[off[i]:off[i] + n]
                seen: set = set()
                prev = None
                for pos, h in enumerate(head):
                    if h in seen:
                        break
                    seen.add(h)
                    if h not in depth:
                        depth[h] = pos
                        if prev is not None:
                            parent[h] = prev
                    if future and pos < cap:
                        uses.setdefault(h, []).append(r << POS_BITS | pos)
                    prev = h
                r += 1
        out.num_requests = r
        return out

    def next_use(self, block_hash: int, now: int) -> int:
        """The key of the first hit-earning use in a request after ``now`` (:data:`NEVER` if none)."""
        keys = self.uses.get(block_hash)
        if not keys:
            return NEVER
        i = bisect_right(keys, (now << POS_BITS) | ((1 << POS_BITS) - 1))
        return keys[i] if i < len(keys) else NEVER


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
        ValueError: the tiers' policies read different clocks.
    """
    clocks = {id(c): c for c in (getattr(getattr(t.policy, "context", None), "clock", None)
                                 for t in hierarchy.tiers) if c is not None}
    if not clocks:
        return hierarchy
    if len(clocks) > 1:
        raise ValueError("the tiers of one hierarchy must share one policy clock (PolicyContext.fresh once per "
                         "hierarchy)")
    return _Clocked(hierarchy, next(iter(clocks.values())))
