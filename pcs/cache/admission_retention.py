"""``retain:tokens=A-B,duration=S``: keep a token range (a system-prompt head) longer, any policy.

TensorRT-LLM's ``KvCacheRetentionConfig`` gives token ranges of a request
(``TokenRangeRetentionConfig(token_start, token_end, priority, duration_ms)``)
a retention priority: blocks of higher priority are evicted only after those
of lower priority, and the priority falls back to the default after the
duration. Here, as a rule for every request: a block holding prompt tokens in
``[A, B)`` (block at depth d holds tokens ``[d x bs, (d + 1) x bs)``; any
overlap counts) is *retained* for ``duration`` seconds after it was last
released or touched: while retained it is evicted only when no unretained
evictable block is left (oldest retention first); once the duration is over
it goes back to the tier's eviction policy as a block released then. It wraps
any eviction policy (:class:`RetainingPolicy`).

A pooled block that leaves the tier (the pool's victim, or dropped) leaves the
eviction policy's memory too (docs/semantics.md §8): a policy that keeps state
for a pinned block (FIFO's entry order, LFU's and GDSF's use counts, SIEVE's
and S3-FIFO's queue places, ARC's and 2Q's lists) forgets that block as
``drop`` forgets one, with no ghost entry; stored again, the block is new to
the policy. TensorRT-LLM keeps a free block in exactly one queue, the one of
its priority, and a block taken from that queue leaves no state in the
eviction policy (``cpp/tensorrt_llm/batch_manager/evictionPolicy.cpp``:
``addToFreeBlockQueue`` / ``removeFromFreeBlockQueue`` / ``getFreeBlock``).

Time is the trace's clock: the arrival of the request being admitted
(sequential timing: the request in turn; modeled: the latest admission).
Depth and arrivals come from the trace pre-pass
(:class:`pcs.cache.policies.context.TraceOracle`).
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Iterable, Sequence

from pcs.cache.admission import AdmissionPolicy
from pcs.cache.policies.base import EvictionPolicy
from pcs.errors import UserError, shown_repr

__all__ = ["RetentionAdmission", "RetainingPolicy"]


def _token_range(text: Any) -> tuple[int, int]:
    from pcs.units import ascii_int

    a, sep, b = str(text).partition("-")
    try:        # ASCII digits (docs/semantics.md §16): not the full-width or 1_000 that int() reads
        lo, hi = ascii_int(a), ascii_int(b)
    except ValueError:
        lo = hi = -1
    if not sep or lo < 0 or hi <= lo:
        raise UserError(f"admission retain: tokens must be A-B with 0 <= A < B, got {shown_repr(text)}")
    return lo, hi


def _duration_s(value: Any) -> float:
    """``duration=`` in seconds: a duration with a unit as every duration option takes it (``60s``, ``1min``,
    ``2 minutes``, ``500ms``: :func:`pcs.units.parse_duration`), or a plain number, which is seconds (the key's
    unit since it was added, ``duration=S``, and the Python API's rule for a plain time, docs/semantics.md §16).

    Raises:
        UserError: not a duration (the units' message: an unknown unit, a negative duration ...), or not > 0.
    """
    from pcs.cache.policies import number_option
    from pcs.units import parse_duration

    value = number_option(value, "float", "admission retain: duration: ")    # 99999999999999999999 is 1e20 s
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise UserError(f"admission retain: duration must be > 0 seconds (60s, 1min, or 60 for seconds), "
                        f"got {shown_repr(value)}")
    try:
        seconds = parse_duration(value)
    except UserError as exc:
        raise UserError(f"admission retain: duration={value}: {exc}") from None
    if not seconds > 0:
        raise UserError(f"admission retain: duration must be > 0 seconds (60s, 1min, or 60 for seconds), "
                        f"got {shown_repr(value)}")
    return seconds


class RetentionAdmission(AdmissionPolicy):
    """Retention of a token range for a duration (admits every block; wraps the tier's policy).

    Args:
        tokens: ``"A-B"``, prompt tokens [A, B) (default the first 4096).
        duration: how long a released block of the range stays retained (> 0): a duration with a unit
            (``"60s"``, ``"1min"``, ``"500ms"``, as every duration option), or a plain number of seconds.
        context: the trace context (depth, block size, arrivals, clock).
    Raises:
        UserError: a bad range or duration, or no trace context.
    """

    kind = "retain"
    first_option = "tokens"
    summary = "keep blocks of a token range (system prompt) until the others are gone, for a duration"
    source = "TensorRT-LLM KvCacheRetentionConfig / TokenRangeRetentionConfig"

    def __init__(self, tokens: str = "0-4096", duration: float | str = 60.0, context: Any = None) -> None:
        self.lo, self.hi = _token_range(tokens)
        duration = _duration_s(duration)
        if context is None or context.oracle is None:
            raise UserError("admission retain reads block positions and arrival times: it needs the trace "
                             "context (pcs.replay builds one)")
        self.duration_s = duration
        self.context = context

    def wrap(self, policy: EvictionPolicy) -> "RetainingPolicy":
        """``policy`` with this retention in front of it."""
        return RetainingPolicy(policy, self)

    def retained(self, key: int) -> bool:
        """Whether block ``key`` holds a token of the range."""
        oracle = self.context.oracle
        d = oracle.depth.get(key)
        return d is not None and d * oracle.block_size < self.hi and (d + 1) * oracle.block_size > self.lo

    def now_s(self) -> float:
        """The trace clock: arrival of the request being admitted (seconds)."""
        arr, now = self.context.oracle.arrival_s, self.context.clock.now
        return arr[now] if 0 <= now < len(arr) else 0.0

    def spec(self) -> str:
        return f"retain:tokens={self.lo}-{self.hi},duration={self.duration_s:g}"


class RetainingPolicy(EvictionPolicy):
    """An eviction policy behind a retention pool (see the module docstring)."""

    prefix_closed = False
    reuse_blind = False

    def __init__(self, inner: EvictionPolicy, retention: RetentionAdmission) -> None:
        super().__init__(inner.capacity_blocks)
        self.inner, self.retention = inner, retention
        self.name = inner.name
        self.context = retention.context
        self._held: OrderedDict[int, float] = OrderedDict()    # retained block -> expiry (s), oldest first
        self._seen: set[int] = set()    # blocks the inner policy saw pinned (remove) and has not got back

    def __len__(self) -> int:
        return len(self.inner) + len(self._held)

    def __contains__(self, key: int) -> bool:
        return key in self._held or key in self.inner

    def _split(self, keys: Sequence[int]) -> tuple[list[int], list[int]]:
        keep = [k for k in keys if self.retention.retained(k)]
        kept = set(keep)
        return keep, [k for k in keys if k not in kept]

    def expect(self, keys: Sequence[int]) -> None:
        self.inner.expect(keys)

    def add(self, keys: Sequence[int], reused: bool = False) -> None:
        keep, other = self._split(keys)
        until = self.retention.now_s() + self.retention.duration_s
        for k in keep:
            self._held[k] = until
        if other:
            self.inner.add(other, reused)
            self._seen.difference_update(other)

    def remove(self, keys: Iterable[int]) -> None:
        rest = [k for k in keys if self._held.pop(k, None) is None]
        if rest:
            self.inner.remove(rest)
            self._seen.update(rest)

    def drop(self, keys: Sequence[int]) -> None:
        held, rest, pooled = self._held, [], []
        for k in keys:
            (rest if held.pop(k, None) is None else pooled).append(k)
        if rest:
            self.inner.drop(rest)
        self._forget(pooled)

    def _forget(self, keys: list[int]) -> None:
        """Pooled ``keys`` left the tier: the inner policy forgets those it saw pinned, as ``drop`` forgets a
        key (given back, then dropped: the two calls of the policy contract, base.py)."""
        seen = [k for k in keys if k in self._seen]
        if seen:
            self.inner.add(seen, False)
            self.inner.drop(seen)
            self._seen.difference_update(seen)

    def touch(self, keys: Sequence[int]) -> None:
        held = self._held
        until = self.retention.now_s() + self.retention.duration_s
        rest = []
        for k in keys:
            if held.pop(k, None) is None:   # not retained here (expiries are floats, never None)
                rest.append(k)
            else:
                held[k] = until             # renewed, and now the newest
        if rest:
            self.inner.touch(rest)

    def _expire(self) -> None:
        now, held = self.retention.now_s(), self._held
        gone = [k for k, until in held.items() if until <= now]
        for k in gone:
            del held[k]
        if gone:
            self.inner.add(gone, False)
            self._seen.difference_update(gone)

    def evict(self, n: int) -> list[int] | None:
        if n > len(self):
            return None
        self._expire()
        m = min(n, len(self.inner))
        out = self.inner.evict(m) if m else []
        held = self._held
        pooled = [held.popitem(last=False)[0] for _ in range(n - m)]
        self._forget(pooled)
        return out + pooled

    def order(self) -> list[int]:
        return self.inner.order() + list(self._held)

    def _check(self) -> None:
        assert not any(k in self.inner for k in self._held)
        assert not any(k in self.inner for k in self._seen)
        self.inner._check()
