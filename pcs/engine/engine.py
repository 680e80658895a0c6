"""The replay event loop: requests through a :class:`pcs.cache.Hierarchy`, with time.

Two timings (``--timing``):

- ``sequential``: requests in trace order, each finished before the next
  starts; only the full prompt blocks occupy the cache. The classic
  trace-replay baseline (libCacheSim-style); TTFT = restore + prefill, no wait.
- ``modeled`` (default of ``pcs replay``): arrivals from the trace, FIFO
  admission. At admission a request pins its hits and reserves GPU slots for
  its restores, its new prompt blocks and ``extra_blocks`` -- the partial
  last block and ALL its output blocks at once (``ceil((prompt + output) /
  block_size) - cacheable``). Reserving the whole output up front is a
  choice: vLLM allocates output blocks step by step and preempts when it runs
  out; reserving at admission needs no preemption model, never
  over-commits, and gives an upper bound on the space running requests hold
  (docs/semantics.md §9). A request that cannot get its slots waits, and everyone behind it
  waits too (head-of-line FIFO, as vLLM's waiting queue). Each lower tier's
  link is a FIFO server: a restore starts when the link is free and takes
  ``LinkSpec.transfer_s(bytes, io_size_bytes=bytes per block)`` (setup +
  bytes / bandwidth). Then, serially (docs/semantics.md §10):
  TTFT = wait for KV space + restore + prefill of the missed tokens
  (``ComputeModel.prefill_s(new, cached)``); the computed blocks become
  cached at TTFT -- a request arriving earlier misses them (concurrency);
  completion = TTFT + output_tokens x ``decode_s_per_token(prompt + output // 2)``
  (decode step time at the mean context). Prefill and decode of different
  requests do not contend for compute (one instance per request's time line;
  only KV space and links are shared) -- a stated simplification.

Time is the trace's own clock (seconds); the wall clock is never read.
Events at equal times are processed in creation order, so runs are
deterministic.
"""
from __future__ import annotations

import heapq
from array import array
from collections import deque
from typing import Any, Sequence

import numpy as np

from pcs.cache.hierarchy import Hierarchy
from pcs.choices import TIMINGS  # modeled / sequential (docs/semantics.md §9)
from pcs.engine.ledger import ReplayLedger
from pcs.engine.chunks import LIST_COLUMNS, Chunk
from pcs.engine.series import Sampler
from pcs.engine.restores import link_restores
from pcs.engine.timing import TimeModel  # noqa: F401  (re-exported)
from pcs.errors import UnknownNameError, UserError
from pcs._dataclass import dataclass

__all__ = ["ReplayEngine", "EngineResult", "TimeModel", "TIMINGS"]


#: Per-request columns copied from the chunks as they are fed (the rest come from the admissions).
_INPUT_COLUMNS = ("request_id", "arrival_s", "prompt_tokens", "output_tokens", "prefill_no_cache_s")
_NAN = float("nan")


@dataclass(frozen=True, slots=True)
class EngineResult:
    """What one engine run produced.

    Attributes:
        ledger: the run's counters.
        columns: per-request columns (name -> ``array.array`` or a 1-D numpy array: the compiled step loop's), admission
            (= trace) order.
        sampler: the time-series samples (:class:`pcs.engine.series.Sampler`;
            the fast path's from :func:`pcs.engine.series.sequential_samples`).
        latency: the step scheduler's no-cache run's sorts and partitions of its latency summary
            (:class:`pcs.engine.runparts.LatencyParts`), made on the worker that closed it; else None.
    """

    ledger: ReplayLedger
    columns: dict
    sampler: Sampler | None = None
    latency: Any = None


class _ChunkLists:
    """The list columns of one :class:`Chunk` read once, as plain attributes, for the per-request loop.

    A Chunk's columns are properties (a numpy column becomes a list on first read), so each read is a
    Python call; the loop reads several per request. Same names as the Chunk's (``LIST_COLUMNS``,
    ``block_size``)."""

    __slots__ = LIST_COLUMNS + ("block_size",)

    def __init__(self, chunk: Chunk) -> None:
        for name in LIST_COLUMNS:
            setattr(self, name, getattr(chunk, name))
        self.block_size = chunk.block_size


def check_timing(timing: str) -> None:
    """The one check of a timing's name (docs/semantics.md §9), for the engine and :func:`pcs.replay`.

    Raises:
        UserError: ``timing`` is not one of :data:`TIMINGS` (the message lists them).
    """
    if timing not in TIMINGS:
        raise UnknownNameError("timing", timing, TIMINGS)


class ReplayEngine:
    """Feed chunks of requests through a hierarchy; collect a ledger and per-request rows.

    Args:
        hierarchy: the tiers.
        timing: ``"sequential"`` or ``"modeled"``.
        links: per tier, a link with ``transfer_s(num_bytes, io_size_bytes)``
            for restores from that tier (index 0 ignored), or None (instant).
        block_bytes: per tier, bytes per block (GPU: Reserved, lower:
            Serialized); None counts 0 bytes.
        check: call ``hierarchy._check()`` after every step (tests only; slow).
    Raises:
        UserError: unknown timing.
    """

    #: requests whose rows are buffered before they move into the typed columns (after a chunk; memory bound)
    flush_rows = 65536
    #: the end state's samples already taken (:meth:`close` then takes none: a compiled step loop that keeps its
    #: series takes them itself, :meth:`pcs.engine.stepnative.NativeStepEngine._pull_samples`)
    _end_sampled = False

    def __init__(self, hierarchy: Hierarchy, timing: str = "sequential", links: Sequence | None = None,
                 block_bytes: Sequence[int] | None = None, check: bool = False):
        check_timing(timing)
        t = len(hierarchy.tiers)
        self.h = hierarchy
        self.timing = timing
        self.links = list(links) if links is not None else [None] * t
        self.block_bytes = list(block_bytes) if block_bytes is not None else [0] * t
        if len(self.links) != t or len(self.block_bytes) != t:
            raise UserError(f"need one link and one bytes-per-block entry per tier ({t})")
        self.ledger = ReplayLedger(num_tiers=t)
        self.check = check
        names = [("request_id", "q"), ("arrival_s", "d"), ("prompt_tokens", "q"), ("output_tokens", "q"),
                 ("hit_blocks", "q"), ("missed_blocks", "q"), ("hit_tokens", "q")]
        names += [(f"hit_tokens_{tier.name}", "q") for tier in hierarchy.tiers]
        names += [("restored_bytes", "q"), ("restore_s", "d"), ("prefill_s", "d"), ("wait_s", "d"),
                  ("ttft_s", "d"), ("prefill_no_cache_s", "d"), ("finish_s", "d"), ("truncated", "b")]
        self._cols: dict[str, array] = {name: array(code) for name, code in names}
        # requests are admitted in trace order, so the input columns are copied a chunk at a time (feed);
        # the outcome of each request is buffered flat (one extend per request: no object kept per request
        # for the garbage collector to walk) and moved into the columns in bulk; per request, in order: the
        # other fixed columns, then one hit-token count per tier
        self._row_order = [n for n, _ in names if not n.startswith("hit_tokens_") and n not in _INPUT_COLUMNS] + \
            [f"hit_tokens_{tier.name}" for tier in hierarchy.tiers]
        self._rows: list = []
        self._extend = self._rows.extend
        #: GPU slots held by running requests (pinned + reserved; the peak is the ledger's), one call
        self._held = hierarchy.held_blocks
        self._start = hierarchy.start
        self._zeros = (0,) * (t - 1)
        self._link_free = [0.0] * t
        self._now = float("-inf")
        self._queue: deque = deque()
        self._events: list = []
        self._seq = 0
        self.sampler = Sampler()  # the time series (docs/semantics.md §11): state at fixed simulated-time steps
        self._next_sample = float("-inf")
        #: a hybrid hierarchy's clock (pcs.cache.grouphier.GroupHierarchy.tick); None for the others
        self._tick = getattr(hierarchy, "tick", None)

    # -- feeding ------------------------------------------------------------------------------
    def feed(self, chunk: Chunk) -> None:
        """Replay the requests of ``chunk`` (in order, after all earlier chunks)."""
        if not len(self._cols["arrival_s"]) and len(chunk.arrival_s):
            self._start_clocks(chunk.arrival_s[0])
        self._feed_inputs(chunk)
        if self.timing == "sequential":
            self._feed_sequential(_ChunkLists(chunk))
        else:
            self._feed_modeled(_ChunkLists(chunk))
        if len(self._rows) >= self.flush_rows * len(self._row_order):   # bounded buffer: this plus a chunk's rows
            self._flush()

    def _start_clocks(self, first_s: float) -> None:
        """Start the run's clocks at its first arrival ``first_s`` (seconds, trace clock): every link is free
        from then (docs/semantics.md §9, clock start), so a run shifted in time is the same run shifted; the
        step scheduler's clock starts there too (:meth:`pcs.engine.scheduler.StepEngine._start_clocks`)."""
        self._link_free[:] = [float(first_s)] * len(self._link_free)

    def _feed_inputs(self, chunk: Chunk) -> None:
        """Count the chunk's accesses and copy its input columns."""
        self.ledger.block_accesses += chunk.offsets[-1] - chunk.offsets[0]
        self.ledger.cacheable_blocks += sum(chunk.cacheable)
        c = self._cols
        m = len(chunk.arrival_s)
        c["request_id"].extend(range(chunk.first_request_id, chunk.first_request_id + m))
        c["arrival_s"].extend(chunk.arrival_s)
        c["prompt_tokens"].extend(chunk.prompt_tokens)
        c["output_tokens"].extend(chunk.output_tokens)
        pre = chunk.prefill_s
        c["prefill_no_cache_s"].extend([pre[o] for o in chunk.prefill_offsets[:m]] if pre else [0.0] * m)

    def _feed_sequential(self, ch: _ChunkLists) -> None:
        start, done, finish, account = self.h.start, self.h.prefill_done, self.h.finish, self._account
        off, hashes, n, cap = ch.offsets, ch.block_hashes, ch.cacheable, ch.max_hit_blocks
        check, tick = self.check, self._tick
        arrival = ch.arrival_s
        nxt = self._next_sample
        for i in range(len(arrival)):
            if arrival[i] >= nxt:  # a time-series boundary passed: sample before this request
                nxt = self._next_sample = self.sampler.take(arrival[i], self._snapshot)
            o = off[i]
            tick and tick(arrival[i])
            adm = start(hashes[o:o + n[i]], n[i], cap[i], 0, False)   # only the cacheable head is read
            check and self.h._check()
            account(ch, i, adm, 0.0, 0.0, _NAN)   # no finish time: nothing runs (docs/semantics.md §9)
            done(adm)
            finish(adm)
            check and self.h._check()

    def _feed_modeled(self, ch: _ChunkLists) -> None:
        q, ev, admit, tick = self._queue, self._events, self._admit, self._tick
        now, nxt = self._now, self._next_sample
        for i, a in enumerate(ch.arrival_s):
            if a < now:
                a = now  # a trace out of order: treat as arriving now
            if ev and ev[0][0] <= a:  # events due before this arrival
                self._advance(a)
                nxt = self._next_sample
            if a >= nxt:
                nxt = self._next_sample = self.sampler.take(a, self._snapshot)
            now = a
            if q:           # FIFO: behind the waiting requests
                q.append((ch, i, a))
            else:
                tick and tick(a)
                if not admit(ch, i, a, a):
                    q.append((ch, i, a))
        self._now = now

    def next_event_s(self) -> float:
        """Time of the next pending event (a prefill end or a finish), inf if none; modeled timing.

        With :meth:`advance`, lets several engines run on one clock (a fleet's shared tier,
        docs/semantics.md §17.1)."""
        return self._events[0][0] if self._events else float("inf")

    def advance(self, t: float) -> None:
        """Process every pending event at or before ``t`` (seconds), admitting waiting requests as space frees."""
        self._advance(t)

    def _advance(self, t: float) -> None:
        ev, q, h = self._events, self._queue, self.h
        pop, done, finish = heapq.heappop, h.prefill_done, h.finish
        tick, check = self._tick, self.check
        nxt = self._next_sample
        while ev and ev[0][0] <= t:
            when, _, kind, adm = pop(ev)
            if when >= nxt:  # a time-series boundary passed: sample the state before this event
                nxt = self._next_sample = self.sampler.take(when, self._snapshot)
            tick and tick(when)
            if kind == 0:
                done(adm)
            else:
                finish(adm)
                if q:
                    self._try_admit(when)
            check and h._check()

    def _try_admit(self, now: float) -> None:
        """Admit the waiting requests in FIFO order while the head gets its GPU slots (docs/semantics.md §9)."""
        q, admit = self._queue, self._admit
        self._tick and q and self._tick(now)
        while q:
            ch, i, a = q[0]
            if not admit(ch, i, a, now):
                return
            q.popleft()

    def _admit(self, ch: _ChunkLists, i: int, a: float, now: float) -> bool:
        """Admit request ``i`` of ``ch`` (arrived at ``a``) at ``now`` if it gets its GPU slots; its prefill end
        and its finish become events. False (nothing changed) when it must wait."""
        n = ch.cacheable[i]
        o = ch.offsets[i]
        adm = self._start(ch.block_hashes[o:o + n], n, ch.max_hit_blocks[i], ch.extra_blocks[i], True)  # the head
        if adm is None:
            return False
        self.check and self.h._check()
        dec = ch.decode_s[i] if ch.decode_s else 0.0
        ttft_end = self._account(ch, i, adm, now, now - a, dec)
        s = self._seq
        self._seq = s + 2
        ev = self._events
        heapq.heappush(ev, (ttft_end, s, 0, adm))
        heapq.heappush(ev, (ttft_end + dec, s + 1, 1, adm))
        return True

    def close(self) -> EngineResult:
        """Finish every running and waiting request; return the ledger and columns."""
        if self.timing == "modeled":
            self._advance(float("inf"))
            assert not self._queue, "a request could never be admitted"
        self._flush()
        if self.sampler.t0 is not None and not self._end_sampled:  # the end state, at the first boundary after the
            # last event (a compiled loop that keeps its series takes these two itself: _end_sampled)
            end = self._last_event_s()
            self.sampler.take(self.sampler.take(max(end, self.sampler.t0), self._snapshot), self._snapshot)
        c = self._cols
        L = self.ledger
        col = lambda name, dt: np.frombuffer(c[name], dtype=dt) if len(c[name]) else np.zeros(0, dt)  # noqa: E731
        hit_blocks = col("hit_blocks", np.int64)
        L.num_requests = len(hit_blocks)
        L.prompt_tokens = int(col("prompt_tokens", np.int64).sum())
        L.hit_tokens = int(col("hit_tokens", np.int64).sum())
        L.hit_blocks = int(hit_blocks.sum())
        L.block_misses = int(col("missed_blocks", np.int64).sum())
        L.computed_tokens = L.prompt_tokens - L.hit_tokens
        L.requests_with_hit = int((hit_blocks > 0).sum())
        L.requests_truncated = int(col("truncated", np.int8).sum())
        L.requests_waited = int((col("wait_s", np.float64) > 0).sum())
        L.tier_hit_tokens = [int(col(f"hit_tokens_{t.name}", np.int64).sum()) for t in self.h.tiers]
        return EngineResult(L, dict(c), self.sampler)

    def _last_event_s(self) -> float:
        """The time of the run's last event (s, trace clock): the latest finish (modeled) or arrival (sequential);
        called with at least one request."""
        return max(self._cols["finish_s" if self.timing == "modeled" else "arrival_s"])

    def _snapshot(self) -> tuple:
        """The state a time-series sample keeps (:class:`pcs.engine.series.Sampler`): requests admitted
        and waiting, resident blocks per tier, restored bytes per link so far, when each link is free."""
        return (len(self._cols["hit_blocks"]) + len(self._rows) // len(self._row_order), len(self._queue),
                [len(t.resident) for t in self.h.tiers], [lk.restored_bytes for lk in self.ledger.links],
                self._link_free[:])

    # -- accounting ---------------------------------------------------------------------------
    def _flush(self) -> None:
        """Move the buffered rows into the typed columns."""
        rows, width = self._rows, len(self._row_order)
        if rows:
            for k, name in enumerate(self._row_order):
                self._cols[name].extend(rows[k::width])
            rows.clear()   # the same list: ``_extend`` stays bound to it

    def _account(self, ch: _ChunkLists, i: int, adm, now: float, wait: float, decode_s: float) -> float:
        """Record one admitted request (``decode_s``: its decode seconds, NaN when nothing runs: sequential
        timing); return the time its prefill completes. A request with every hit in the GPU tier restores
        nothing (the common case, kept short); the others go through :meth:`_lower_hits`."""
        hits = adm.hit_blocks
        ht = hits * ch.block_size
        p = ch.prompt_tokens[i]
        if ht > p:
            ht = p
        L = self.ledger
        held = self._held()
        if held > L.peak_reserved_blocks:
            L.peak_reserved_blocks = held
        pre = ch.prefill_s
        if pre:
            base = ch.prefill_offsets[i]
            pf = pre[base + hits]
        else:
            base = 0
            pf = 0.0
        th = adm.hit_blocks_per_tier
        if hits == th[0]:   # every hit in the GPU tier: no restore
            L.tier_hit_blocks[0] += hits
            ttft_end = now + pf
            self._extend((hits, ch.cacheable[i] - adm.prefix_hit_blocks, ht, 0, 0.0, pf, wait, wait + pf,
                          ttft_end + decode_s, adm.truncated, ht) + self._zeros)
            return ttft_end
        tier_tokens, restore_s, restored_bytes = self._lower_hits(adm, ch.block_size, ht, now, pre, base)
        ttft_end = now + restore_s + pf
        self._extend((hits, ch.cacheable[i] - adm.prefix_hit_blocks, ht, restored_bytes, restore_s, pf, wait,
                      wait + restore_s + pf, ttft_end + decode_s, adm.truncated) + tier_tokens)
        return ttft_end

    def _lower_hits(self, adm, bs: int, ht: int, now: float, pre: list, base: int) -> tuple[tuple, float, int]:
        """A request with hits in lower tiers: its hit blocks per tier into the ledger, its hit tokens per
        tier (the partial last block counted in the tier of the last hit), and its restores, one FIFO
        link per lower tier (:func:`pcs.engine.restores.link_restores`); (tier tokens, seconds, bytes)."""
        th = adm.hit_blocks_per_tier
        last = adm.last_hit_tier
        partial = ht - adm.hit_blocks * bs
        tb = self.ledger.tier_hit_blocks
        for j, b in enumerate(th):
            tb[j] += b
        tier_tokens = tuple(b * bs + (partial if j == last else 0) for j, b in enumerate(th))
        restore_s, restored_bytes = link_restores(adm, now, self._link_free, self.ledger.links, self.links,
                                                  self.block_bytes, pre, base, self.timing == "modeled")
        return tier_tokens, restore_s, restored_bytes
