"""The step scheduler's event loop in C (``pcs.engine._stepsched``) behind :class:`StepEngine`'s interface.

:class:`NativeStepEngine` runs the rules of :mod:`pcs.engine.scheduler` (``docs/semantics.md §9``, §10) --
the Python reference -- in C for the configuration ``pcs replay`` runs by default: every tier on the
compiled all-LRU hierarchy (:class:`pcs.cache.native.NativeHierarchy`), either write policy, the
``layerwise`` restore policy, fallback on or off, decode blocks cached or not, any preemption bound,
event skipping on or off, plain prefill attention (``StepCost.attn_pair_s`` set) or the windowed, chunked or
linear terms of :func:`pcs.engine.chunkattn.chunk_terms`. Its per-request
columns, :class:`~pcs.engine.schedstats.SchedulerCounters`, ledger and time-series samples are
identical to :class:`~pcs.engine.scheduler.StepEngine`'s (``tests/engine/test_stepsched_native.py``).
Which loop runs is decided by the engine-selection table (:mod:`pcs.engine.select`, row
``compiled-step``; ``docs/semantics.md §15``); :func:`unsupported` says why a run cannot use it.
"""
from __future__ import annotations

import dataclasses
import re
from contextlib import contextmanager

import numpy as np

from pcs import _native
from pcs.engine.engine import EngineResult, ReplayEngine
from pcs.engine.scheduler import StepEngine, check_output_tokens
from pcs.engine.schedstats import SpanError
from pcs.engine.series import Sampler
from pcs.errors import UserError
from pcs.hardware import LinkSpec
from pcs.cache import native as _cache_native
from pcs.engine.chunkattn import chunk_terms
from pcs import beside
from pcs.engine.runparts import PendingParts

__all__ = ["NativeStepEngine", "unsupported", "loop_unsupported", "tiers_unsupported", "new_loop", "MAX_TIERS", "span_limit", "LEAN_COLUMNS"]

_stepsched = _native.module("stepsched")    # None when the optional extension did not compile

#: most tiers the compiled loop takes (fixed-size per-tier arrays in C).
MAX_TIERS = 8


@contextmanager
def span_limit():
    """Around every call that advances the C loop's clock (feed, close, clock_event, clock_advance): its
    366-day limit (``_stepsched.c`` add_busy, a plain ValueError naming the time reached and the busy time, to 4
    digits) becomes the :class:`UserError` the Python reference raises
    (:meth:`pcs.engine.schedstats.SchedulerCounters.add_busy`), worded once by
    :func:`pcs.engine.schedstats.span_message`, so both engines exit 2 with the same line. Any other ValueError
    is a bug and passes unchanged."""
    try:
        yield
    except ValueError as exc:
        found = None if isinstance(exc, UserError) else re.search(_SPAN_C, str(exc))
        if found is None:
            raise
        from pcs.engine.schedstats import span_message

        raise SpanError(span_message(float(found[1]), float(found[2] or 0.0))) from None


#: the C loop's span error (pcs/engine/_stepsched.c add_busy): the time reached and, when the GPU was mostly
#: busy, its busy time (both printed "%.4g"). A pattern's text, compiled by ``re`` when an error is read (its
#: compile is 1.2 M instructions, paid by every replay's start-up when compiled at import).
_SPAN_C = (r"step scheduler's run reaches (\S+) s after the first arrival(?:.*?the GPU computes for "
           r"(\S+) s of it)?")


#: the C loop's column order (pcs/engine/_stepsched.c: enum Q_*, then one hit_tokens column per tier; enum D_*).
_Q_COLS = ("hit_blocks", "missed_blocks", "hit_tokens", "restored_bytes", "preemptions", "recomputed_hit_blocks",
           "decode_blocks_cached")
_D_COLS = ("restore_s", "wait_link_s", "prefill_s", "wait_s", "ttft_s", "finish_s", "wait_compute_s",
           "exposed_restore_s", "prefill_steps_s", "e2e_s", "tpot_s")
_COUNTERS = ("steps", "prefill_steps", "busy_s", "stall_s", "busy_per_s", "origin_s", "preemptions",
             "recompute_tokens", "restores_considered", "restores_losing", "restores_skipped", "decode_blocks_cached",
             "requests_outgrown", "in_system_area_s", "bin_s")
#: the columns a lean no-cache run keeps (:class:`NativeStepEngine`'s ``lean``): what the replay's summary reads of
#: it (``pcs.engine.loops._close_beside``, ``pcs.engine.runparts.latency_parts``)
LEAN_COLUMNS = ("ttft_s", "e2e_s", "tpot_s")
_LINK_FIELDS = ("restores", "restored_blocks", "restored_bytes", "restore_s", "transfer_s", "overhead_s",
                "full_prefill_s", "remaining_prefill_s", "slower_restores", "slower_blocks")


def _link_params(link) -> tuple[float, float, float] | None:
    """(setup_s, bandwidth_bps, iops or 0) of a :class:`pcs.hardware.LinkSpec`, (0, 0, 0) for None (instant),
    or None for a link the C loop does not model."""
    if link is None:
        return 0.0, 0.0, 0.0
    if type(link) is not LinkSpec or not link.bandwidth_bps > 0 or (link.iops is not None and not link.iops > 0):
        return None
    return float(link.setup_s), float(link.bandwidth_bps), float(link.iops or 0.0)


def unsupported(hierarchy, links, cost, config, no_cache: bool = False) -> str | None:
    """None when :class:`NativeStepEngine` can run this step-scheduler replay, else the reason it cannot.

    Args:
        hierarchy: the tiers; links: per tier a LinkSpec or None; cost: :class:`pcs.compute.StepCost`;
        config: the resolved :class:`pcs.engine.schedconfig.SchedulerConfig`.
    """
    if _stepsched is None:
        return f"the compiled {_native.TWINS['stepsched']} is not built"
    if type(hierarchy) is not _cache_native.NativeHierarchy:
        return "the tiers are not on the compiled all-lru hierarchy"
    return loop_unsupported(len(hierarchy.tiers), links, cost, config)


def tiers_unsupported(tiers: int) -> str | None:
    """Why the C loop cannot take ``tiers`` tiers (more than :data:`MAX_TIERS`), or None: the one statement of
    its fixed size, read by :func:`loop_unsupported` at set-up and by the engine-selection table
    (:mod:`pcs.engine.select` row ``compiled-step``), so ``auto`` does not pick the row for a run it falls back from."""
    return f"the C step loop takes at most {MAX_TIERS} tiers, got {tiers}" if tiers > MAX_TIERS else None


def loop_unsupported(tiers: int, links, cost, config) -> str | None:
    """None when the C loop models this run (whatever the hierarchy), else the reason it cannot: at most
    :data:`MAX_TIERS` tiers, ``layerwise`` restores, per-pair prefill attention or attention terms the C loop
    sums (:func:`pcs.engine.chunkattn.chunk_terms`), LinkSpec links."""
    why = tiers_unsupported(tiers)
    if why is not None:
        return why
    if config.restore_policy != "layerwise":
        return f"restore policy {config.restore_policy}, it needs layerwise"
    if config.cache_blocks_at != "prefill-done":
        return f"blocks cached at {config.cache_blocks_at}, the C loop caches at prefill done only"
    if cost.attn_pair_s is None and chunk_terms(cost) is None:
        return "the model's prefill attention is neither per (query, key) pair nor windowed, chunked or linear terms"
    if any(_link_params(lk) is None for lk in links):
        return "a link is not a LinkSpec with bandwidth > 0"
    return None


def new_loop(engine: StepEngine, resident, recompute_last_token: bool, no_cache: bool, skip: bool):
    """The C loop (``_stepsched.StepScheduler``) for a :class:`StepEngine` already set up (its hierarchy, links,
    block bytes, cost, config, sampler); ``resident``: tier index -> resident blocks now (for the samples).
    A prefill attention that is not per pair is given as :func:`pcs.engine.chunkattn.chunk_terms`."""
    params = [_link_params(lk) for lk in engine.links]
    cost, config = engine.cost, engine.config
    s = _stepsched.StepScheduler(
        engine.h, engine.sampler.take, resident, [p[0] for p in params], [p[1] for p in params],
        [p[2] for p in params], [float(b or 0) for b in engine.block_bytes],
        (cost.token_s, cost.attn_pair_s or 0.0, cost.kv_seq_s, cost.kv_token_s, cost.attn_seq_s, cost.attn_token_s,
         cost.weights_active_s, cost.weights_total_s), int(cost.layers), config.max_num_batched_tokens,
        config.max_num_seqs, config.max_preemptions, bool(config.restore_fallback), bool(recompute_last_token),
        bool(no_cache), bool(skip))
    if cost.attn_pair_s is None:
        s.set_chunk_attention(*chunk_terms(cost))
    return s


def _raw(values: np.ndarray, dtype=None) -> memoryview:
    """The bytes of ``values`` (as ``dtype``, C order) as a flat byte view, for ``array.frombytes``: one copy into
    the column instead of two (``.tobytes()`` made a bytes object first)."""
    return memoryview(np.ascontiguousarray(values, dtype)).cast("B")


class NativeStepEngine(StepEngine):
    """:class:`pcs.engine.scheduler.StepEngine` with its loop in C; the same arguments (no ``check`` or
    ``log_steps``: those run on the reference).

    Raises:
        UserError: :func:`unsupported` gives a reason (the message says it).
    """

    #: the time series is kept in C (:meth:`_sample_here`) and pulled into the sampler at close
    _samples_here = False
    #: the worker copying the input columns beside the C feed (:meth:`_side_worker`), until :meth:`close`
    _side = None
    #: the trace's requests when known (the next-turn search counted them; 0: not known), reserved for the C loop's
    #: columns at the first feed (:meth:`feed`)
    _expect = 0
    #: a lean no-cache run (:meth:`__init__`'s ``lean``): only :data:`LEAN_COLUMNS` and the counters its summary reads
    _lean = False
    #: a lean no-cache run counts its GPU slots in the C loop (``_stepsched.c`` count_slots, "the no-cache run's
    #: slots": the hierarchy's rule for an empty chain, no call to it) when it can; False: it calls the hierarchy
    _count_slots = True
    #: whether this run counts its GPU slots in the C loop (:attr:`_count_slots`: True when its GPU tier was empty and
    #: the loop is on the hierarchy's C API)
    _slots_counted = False

    def __init__(self, hierarchy, links, block_bytes, cost, config, recompute_last_token: bool = True,
                 decode=None, no_cache: bool = False, skip: bool = True, lean: bool | None = None) -> None:
        """``lean`` (default: ``no_cache``): the no-cache run keeps only what the replay's summary reads of it --
        the columns :data:`LEAN_COLUMNS` (float64, s) and the counters ``busy_s``, ``origin_s``, ``end_s``,
        ``preemptions``; its other columns, input columns, ledger counts (but ``num_requests``), busy bins
        (``busy_per_s`` empty), ``in_system_area_s`` (0), ``peak_reserved_blocks`` and ``requests_outgrown`` are
        not made, its other counters are (``_stepsched.c``, "the lean no-cache run"). The kept values are the full run's
        (``tests/engine/test_stepsched_native.py``). ``lean=True`` without ``no_cache`` raises ValueError. A lean run
        on the compiled hierarchy's C API whose GPU tier is empty counts its GPU slots in the loop (every admission an
        empty chain: the hierarchy's slot rule for one, docs/semantics.md §5, no call to it; ``_stepsched.c``, "the
        no-cache run's slots"): the hierarchy is then left as it was given."""
        super().__init__(hierarchy, links, block_bytes, cost, config, recompute_last_token, decode, no_cache,
                         False, skip)
        why = unsupported(hierarchy, self.links, cost, config, no_cache)
        if why is not None:
            raise UserError(f"the compiled step scheduler cannot run this replay: {why}")
        self._s = new_loop(self, hierarchy._h.num_resident, recompute_last_token, no_cache, skip)
        self._expect = int(getattr(decode, "requests", 0) or 0)
        if no_cache if lean is None else lean:
            self._s.lean()          # ValueError unless no_cache
            self._lean = True
            if self._count_slots and self.decode is None:      # (a no-cache run's decode blocks: None)
                self._slots_counted = self._s.count_slots(hierarchy.tiers[0].capacity_blocks)

    def stop_with(self, run: StepEngine) -> None:
        """This loop -- a run's no-cache twin, fed and closed on a worker beside ``run`` -- stops (RuntimeError at its
        next signal check, which :class:`pcs.beside.Beside` drops for the caller's own stop) when ``run``'s loop
        raises a stop signal, and only then: not when another replay's loop of the process does (a count kept for
        the whole process stopped the replays other threads ran, ``_stepsched.c`` "check_signals"). Nothing when
        ``run`` is not a compiled step loop (a Python loop raises its signal on its own thread)."""
        if isinstance(run, NativeStepEngine):
            self._s.stop_with(run._s)

    def _grow_columns(self, m: int) -> None:
        """Nothing: the C loop keeps the per-request columns it writes (``columns()``, read at :meth:`close`), so the
        memoryviews :meth:`StepEngine._grow_columns` takes for the Python loop's stores are never made
        (:meth:`StepEngine.__init__` calls it with no rows: some twenty views a run; docs/performance.md, "The 1x
        call's Python glue"); ``_views`` stays empty."""

    @property
    def releases_gil(self) -> bool:
        """Whether the C loop releases the GIL over feed and close (the compiled hierarchy through its C API, no
        hosted Python policy, no hybrid hooks): another thread's loop then runs at the same time
        (:mod:`pcs.beside`)."""
        return bool(self._s.nogil)

    def _snapshot(self) -> tuple:
        """As :meth:`StepEngine._snapshot`, from the C loop's state (which the loop itself passes to
        ``Sampler.take`` at each boundary; resident counts from the C hierarchy, as ``len(tier.resident)``)."""
        return self._s.state()

    def _decode_arrays(self, first: int, m: int) -> tuple[np.ndarray, np.ndarray]:
        """(offsets int64 (m + 1,) or empty, ids uint64): the decode-block hashes of requests first .. first + m - 1."""
        if self.decode is None:
            return np.zeros(0, np.int64), np.zeros(0, np.uint64)
        return self.decode.arrays(first, m)

    def _feed_inputs(self, chunk) -> None:
        """As :meth:`ReplayEngine._feed_inputs`, from the chunk's numpy columns (no python lists) when it has
        them."""
        cols = chunk.arrays
        if cols is None:
            return super()._feed_inputs(chunk)
        arrival, prompt, output, cacheable, off, pre, pre_off = (cols[k] for k in (0, 1, 2, 3, 5, 7, 8))
        m = len(arrival)
        self.ledger.block_accesses += int(off[-1] - off[0])
        self.ledger.cacheable_blocks += int(cacheable.sum())
        c, i8 = self._cols, np.int64
        c["request_id"].frombytes(_raw(np.arange(chunk.first_request_id, chunk.first_request_id + m, dtype=i8)))
        c["arrival_s"].frombytes(_raw(arrival, np.float64))
        c["prompt_tokens"].frombytes(_raw(prompt, i8))
        c["output_tokens"].frombytes(_raw(output, i8))
        c["prefill_no_cache_s"].frombytes(_raw(pre[pre_off[:m]] if len(pre) else np.zeros(m)))

    def feed(self, chunk) -> None:
        """Replay the requests of ``chunk`` (in order, after all earlier chunks); raises UserError as
        :meth:`StepEngine.feed` (:func:`pcs.engine.scheduler.check_output_tokens`).

        The C loop holds the chunk's numpy columns (and the decode-block arrays) until each of its requests has
        been admitted once: it reads a request's row when the request reaches the queue's head
        (``_stepsched.c`` ``materialize``), so they must not be written to after the call."""
        m = len(chunk)
        cols = chunk.arrays
        if cols is None or len(cols[7]) != len(chunk.raw("prefill_s")):   # built from lists, or a decode-time table
            i8 = np.int64
            cols = chunk.arrays = (
                np.asarray(chunk.arrival_s, np.float64), np.asarray(chunk.prompt_tokens, i8),
                np.asarray(chunk.output_tokens, i8), np.asarray(chunk.cacheable, i8),
                np.asarray(chunk.max_hit_blocks, i8), np.asarray(chunk.offsets, i8),
                np.asarray(chunk.block_hashes, np.uint64), np.asarray(chunk.prefill_s, np.float64),
                np.asarray(chunk.prefill_offsets, i8) if len(chunk.prefill_s) else np.zeros(0, i8))
        check_output_tokens(cols[2])
        first = self._fed == 0
        if first:
            self._sample_here()
            if m > 1 and self._expect > m:      # a replay's chunks, not a fleet's one request a call
                self._s.reserve(self._expect)   # the C loop's columns sized once (``_stepsched.c`` col_target)
        side = self._side_worker(first)
        if self._lean:
            pass                    # no input column or ledger count is read of a lean run
        elif side is None:
            self._feed_inputs(chunk)
        else:                       # the previous chunk's inputs are in; this one's copied beside the C feed
            side.join()
            side.start(self._side_work, chunk, first)
        dec_off, dec_ids = self._decode_arrays(self._fed, m)
        with span_limit():
            self._s.feed(chunk.block_size, *cols, dec_off, dec_ids)
        self._fed += m

    def _side_worker(self, first: bool):
        """The worker (:class:`pcs.beside.Beside`, one call at a time, a thread per call) that copies each chunk's
        input columns (:meth:`_feed_inputs`) while this thread replays the chunk in C without the GIL, and at the
        first feed also makes the summary's first-use work (:func:`pcs.engine.summary.warm_up`); None -- all of it
        inline, or no warm-up -- for the no-cache run, a loop that keeps the GIL, or threads off. Chosen at the first
        feed; :meth:`close` waits for its last call."""
        if first and not self.no_cache and self.releases_gil:
            self._side = beside.Beside(True, linger=False) if beside.threads_wanted() else None
        return self._side

    def settle(self) -> None:
        """Wait for the side worker's call still running (:meth:`_side_worker`; its outcome dropped) and end it: a
        feed that raises (:func:`pcs.engine.feed._feed`, this loop or another, or the chunk maker) never reaches
        :meth:`close`, and the worker copying the previous chunk's inputs must not outlive the replay's error."""
        side, self._side = self._side, None
        if side is not None:
            side.close()

    def _side_work(self, chunk, first: bool) -> None:
        """On the side worker: ``chunk``'s input columns and ledger counts (:meth:`_feed_inputs`: nothing else reads
        them before :meth:`close`), then at the first feed the summary's warm-up, whose errors are dropped (it makes
        no value: the summary meets the same error itself)."""
        self._feed_inputs(chunk)
        if first:
            from pcs.engine.summary import warm_up

            try:
                warm_up()
            except Exception:  # noqa: BLE001 -- see the docstring
                pass

    def _sample_here(self) -> None:
        """Before the first feed (the sampler presized, no sample taken): let the C loop keep the time series with
        :meth:`pcs.engine.series.Sampler.take`'s rule (``pcs/engine/_stepsample.h``) when it runs without the GIL
        and the sampler is a plain :class:`~pcs.engine.series.Sampler` (not the no-cache run's
        :class:`~pcs.engine.series.NoSampler`): no Python call, no GIL round trip, per sample."""
        sp = self.sampler
        if type(sp) is Sampler and sp.t0 is None and not sp.rows:
            self._samples_here = self._s.sample_here(sp.step_s, sp.max_samples)

    def _pull_samples(self) -> None:
        """The samples the C loop kept (:meth:`_sample_here`) into the sampler, as its own calls would have left it,
        the end state's two samples included (``sample_end``: :meth:`ReplayEngine.close` takes them itself
        otherwise, through :meth:`pcs.engine.series.Sampler.take`, which makes every row a tuple): the rows stay
        the loop's records until something reads them (:meth:`pcs.engine.series.Sampler.set_block`). After the
        counters are read (:attr:`_finish_max_s`)."""
        if self._samples_here:
            if self._finish_max_s is not None:
                self._end_sampled = self._s.sample_end(self._finish_max_s)
            self.sampler.set_block(*self._s.sample_block())

    def close(self) -> EngineResult:
        """Run until every request has finished; return the ledger and columns (:class:`EngineResult`).

        When the loop releases the GIL and threads are wanted (:attr:`releases_gil`, :func:`pcs.beside.threads_wanted`)
        and this is not a no-cache run (whose parts :func:`pcs.engine.loops._close_beside` makes), the summary's
        sorts and partitions of this run's columns are made on one worker thread: the ``prefill_no_cache_s`` sort (an
        input column, final since the last feed) while the C loop closes, the rest as soon as the columns are final
        (:meth:`pcs.engine.runparts.PendingParts.gated`, handed over as ``EngineResult.latency``)."""
        if self._side is not None:      # the last chunk's input columns, before the columns are read
            side, self._side = self._side, None
            side.join()
        parts = self._parts_beside()
        try:
            with span_limit():
                end = self._s.close()
            res = self._closed(end)
            if parts is not None:
                parts.open(res.columns)
        except BaseException:
            if parts is not None:
                parts.settle()     # its worker let go (a gate still shut opened) and waited for
            raise
        return res if parts is None else dataclasses.replace(res, latency=parts)

    def _parts_beside(self):
        """The summary's parts of this run begun on a worker for :meth:`close`
        (:meth:`pcs.engine.runparts.PendingParts.gated`: the ``prefill_no_cache_s`` sort now, the rest once the
        columns are final), or None when this run's parts are not made beside."""
        if self.no_cache or not self.releases_gil:
            return None

        if not beside.threads_wanted() or not len(self._cols["prefill_no_cache_s"]):
            return None
        return PendingParts.gated(np.frombuffer(self._cols["prefill_no_cache_s"], np.float64))

    def _closed(self, end: float) -> EngineResult:
        """After the C loop's close (``end``: its clock, s): the samples, counters and columns into the engine's
        state, then :meth:`ReplayEngine.close`."""
        st, L, c = self.stats, self.ledger, self._cols
        got = self._s.counters()
        for name in _COUNTERS:
            setattr(st, name, got[name])
        st.end_s = end
        L.peak_reserved_blocks = got["peak_reserved_blocks"]
        L.tier_hit_blocks = got["tier_hit_blocks"]
        for lk, values in zip(L.links, got["links"]):
            for name, v in zip(_LINK_FIELDS, values):
                setattr(lk, name, v)
        self._finish_max_s = got["finish_max_s"]
        self._pull_samples()
        names = _Q_COLS + tuple(f"hit_tokens_{t.name}" for t in self.h.tiers) + _D_COLS + ("truncated",)
        codes, cols = self._s.columns()
        if self._lean:                  # the kept columns alone (None for the others), the number of requests
            self._cols = {name: np.frombuffer(col, code) for name, code, col in zip(names, codes, cols)
                          if col is not None}
            L.num_requests = len(self._cols["ttft_s"])
            return EngineResult(L, dict(self._cols), self.sampler)
        for name, code, col in zip(names, codes, cols):     # the loop's own bytes, no copy
            if code != c[name].typecode:
                raise AssertionError(f"column {name}: typecode {code}, the reference's {c[name].typecode}")
            c[name] = np.frombuffer(col, code)
        return ReplayEngine.close(self)

    def _last_event_s(self) -> float:
        """The latest finish, as :meth:`ReplayEngine._last_event_s` (Python's max) finds it, from the C loop."""
        return self._finish_max_s
