"""A fleet with a shared tier under the step scheduler: N step loops on one clock (docs/semantics.md §17.2).

Each instance is a :class:`pcs.engine.scheduler.StepEngine` (the Python
reference) over its own tiers plus the one shared tier
(:class:`pcs.cache.shared.SharedTierHierarchy`). An iteration of the step
loop is split in two halves (:meth:`StepEngine.clock_event`,
:meth:`StepEngine.clock_advance`):

- **begin** at the step's start ``s``: restores that landed, block
  boundaries, admissions (lookups, pins, restores planned, evictions and
  write-backs into the shared tier), the step's time (or a decode run, or
  idling to the next event);
- **end** at the step's end ``e``: prefills that completed cache their
  blocks (write-through into the shared tier), finished requests release
  theirs (leases end, §17.1).

The fleet always runs the earliest event of all instances, ordered by
``(time, half, instance)``: at one time, ends (0) before begins (1), then
the lower instance first. A request arriving at ``a`` is fed to its
instance after every end at or before ``a`` and every begin before ``a``
(a single replay's loop runs steps that start before the arrival, whole,
then queues it); an instance's begin at or after its next arrival waits for
that arrival. So a block instance A writes at ``t`` is seen by instance B's
lookups at ``t`` or later and never before, and each instance runs exactly
its single replay's sequence of loop halves: with a shared tier of 0 blocks
the fleet is the fleet without one
(``tests/fleet/test_shared_step.py::test_size_zero_shared_tier_is_the_fleet_without_it``).
"""
from __future__ import annotations

import heapq
from typing import Any, Callable

import numpy as np

from pcs.engine.chunks import Chunk, iter_chunks
from pcs.fleet.oneclock import Admissions, SharedRun, _build

__all__ = ["run_step_clock"]

_INF = float("inf")


class _Clock:
    """The fleet's event heap: ``(time_s, half, instance)``, one live entry per instance (``live``); ``seen``
    notes the first admissions each loop half made (the begin halves make them)."""

    def __init__(self, engines: list, seen: Admissions) -> None:
        self.engines, self.seen = engines, seen
        self.until = [_INF] * len(engines)      # each instance's next arrival not fed yet
        self.live: list = [None] * len(engines)
        self.heap: list = []

    def push(self, i: int) -> None:
        """Queue instance i's next event; a begin at or after its next arrival waits for that arrival."""
        ev = self.engines[i].clock_event()
        if ev is None or (ev[1] == 1 and ev[0] >= self.until[i]):
            self.live[i] = None
            return
        if ev != self.live[i]:
            self.live[i] = ev
            heapq.heappush(self.heap, (ev[0], ev[1], i))

    def run_before(self, t: float) -> None:
        """Every event before an arrival at ``t``: ends at or before ``t``, begins before ``t``, in order."""
        heap, live, engines, until = self.heap, self.live, self.engines, self.until
        while heap and (heap[0][0] < t or (heap[0][0] == t and heap[0][1] == 0)):
            w, half, i = heapq.heappop(heap)
            if live[i] != (w, half):
                continue                        # stale: the instance's next event changed since
            live[i] = None
            engines[i].clock_advance(until[i])
            self.seen.note(i, engines[i])
            self.push(i)


def step_parts(step: Any, sub_sources: list, rules: Any) -> list:
    """Per instance (StepSetup, resolved SchedulerConfig, decode blocks or None, rules), as a single replay of
    its sub-trace resolves them (:func:`pcs.engine.placement._resolve_step`; None for an idle instance)."""
    from pcs.engine.runner import _resolve_step

    return [_resolve_step(step, "modeled", s, rules) if s is not None else None for s in sub_sources]


def _engine(hierarchy: Any, setup: dict, part: tuple) -> Any:
    """One instance's step loop: the compiled one (:class:`pcs.engine.stepclocked.ClockedNativeStepEngine`)
    when it can run it and ``native`` allows, else the Python reference (:class:`pcs.engine.scheduler.StepEngine`)."""
    from pcs.engine.scheduler import StepEngine
    from pcs.engine.stepclocked import ClockedNativeStepEngine, clocked_unsupported

    step, cfg, decode, rules = part
    cls = StepEngine
    if clocked_unsupported(hierarchy, setup["links"], step.cost, cfg, setup.get("native")) is None:
        cls = ClockedNativeStepEngine
    return cls(hierarchy, setup["links"], setup["bpb"], step.cost, cfg, rules.recompute_last_token, decode)


def _one(ch: Chunk, r: int) -> Chunk:
    """Row ``r`` of a chunk as a chunk of its own (offsets from 0; its numpy columns sliced when the chunk
    has them, for the compiled loop)."""
    o0, o1 = ch.offsets[r], ch.offsets[r + 1]
    pre, p0, p1 = ch.prefill_s, ch.prefill_offsets[r], ch.prefill_offsets[r + 1]
    arrays = ch.arrays
    if arrays is not None and len(arrays[7]) == len(pre):
        a = arrays
        arrays = (a[0][r:r + 1], a[1][r:r + 1], a[2][r:r + 1], a[3][r:r + 1], a[4][r:r + 1], a[5][r:r + 2] - o0,
                  a[6][o0:o1], a[7][p0:p1], a[8][r:r + 2] - p0 if len(a[8]) else a[8])
    else:
        arrays = None
    return Chunk(ch.first_request_id + r, ch.block_size, ch.arrival_s[r:r + 1], ch.prompt_tokens[r:r + 1],
                 ch.output_tokens[r:r + 1], ch.cacheable[r:r + 1], ch.max_hit_blocks[r:r + 1],
                 ch.extra_blocks[r:r + 1], [0, o1 - o0], ch.block_hashes[o0:o1], pre[p0:p1] if pre else pre,
                 [0, p1 - p0] if pre else ch.prefill_offsets[r:r + 2], ch.decode_s[r:r + 1] if ch.decode_s else
                 ch.decode_s, arrays)


def _arrivals(arrival_s: np.ndarray, assignment: np.ndarray, instances: int) -> tuple[list, list]:
    """(each request's arrival as its instance's loop takes it -- an arrival before the instance's previous
    one counts as that one, :meth:`StepEngine.feed` --, the arrival of the instance's next request or inf),
    float seconds, lists of shape (n,), trace order."""
    at = np.asarray(arrival_s, dtype=np.float64).copy()
    then = np.full(len(at), _INF)
    for i in range(instances):
        rows = np.flatnonzero(assignment == i)
        if len(rows):
            at[rows] = np.maximum.accumulate(at[rows])
            then[rows[:-1]] = at[rows[1:]]
    return at.tolist(), then.tolist()


def run_step_clock(source: Any, rules: Any, time_model: Any, arrival_s: np.ndarray, assignment: np.ndarray,
                   instances: int, setup: dict, step: Any, sub_sources: list,
                   progress: Callable[[int], None] | None = None, parts: list | None = None) -> SharedRun:
    """Replay ``source`` (trace order) with request k on instance ``assignment[k]`` under the step scheduler,
    every instance's lowest tier the shared one, all on one clock (module docstring).

    Args:
        source: the whole trace (re-iterable); rules: block rules; time_model: :class:`pcs.engine.timing.TimeModel`.
        arrival_s: float64, shape (requests,): the trace's arrival times (trace order), seconds.
        assignment: int64, shape (requests,): the instance of each request (trace order), in [0, instances).
        setup: :func:`pcs.fleet.oneclock.shared_setup`'s dict; step: :class:`pcs.engine.runner.StepSetup`.
        sub_sources: per instance its sub-trace (decode blocks are found per instance), None when idle.
        progress: called with requests done, every 4,096.
        parts: :func:`step_parts` of ``sub_sources`` when the caller has them (None: resolved here).
    Returns:
        :class:`pcs.fleet.oneclock.SharedRun` (``busy_s``: each instance's busy seconds, None when idle).
    """
    hierarchies, shared = _build(setup, instances)
    parts = parts if parts is not None else step_parts(step, sub_sources, rules)
    engines = [_engine(h, setup, p) if p is not None else None for h, p in zip(hierarchies, parts)]
    clock = _Clock(engines, Admissions(assignment, instances))
    assign = assignment.tolist()
    at, then = _arrivals(arrival_s, assignment, instances)
    done = 0
    for ch in iter_chunks(source, rules, time_model, False):
        for r in range(len(ch.arrival_s)):
            k = ch.first_request_id + r
            i = assign[k]
            clock.run_before(at[k])
            engines[i].feed(_one(ch, r))
            clock.until[i] = then[k]
            clock.push(i)
            done += 1
            if progress is not None and done % 4096 == 0:
                progress(4096)
    clock.run_before(_INF)
    if progress is not None and done % 4096:
        progress(done % 4096)
    assert all(e is None or e.clock_event() is None for e in engines), "an instance could not finish"
    results = [e.close() if e is not None else None for e in engines]
    busy = [e.stats.busy_s if e is not None else None for e in engines]
    return SharedRun(results, hierarchies, shared, setup, busy, clock.seen.result())
