"""The step scheduler's counters during a run, and its summary after (``pcs replay`` JSON ``scheduler``).

Counted where (``docs/semantics.md §11``): steps and busy time as the loop
advances the clock; preemptions, restore decisions and cached decode blocks
as they happen; ``in_system_area_s`` is the integral over time of the
requests in the system (arrived, not finished) -- Little's law says it
equals the sum of their end-to-end latencies, which the tests check.
"""
from __future__ import annotations

from array import array
from dataclasses import field

import numpy as np

from pcs.engine.schedresult import LatencySummary, Percentiles, SchedulerSummary
from pcs.errors import UserError
from pcs.percentiles import linear_percentiles, sorted_finite, sorted_linear_percentiles
from pcs._dataclass import dataclass

__all__ = ["SchedulerCounters", "LatencyParts", "latency_parts", "RunParts", "run_parts", "PendingParts",
           "scheduler_summary", "sorted_pcts",
           "utilisation_bins", "end_times", "span_message", "SpanError"]

#: Bin widths the utilisation series may use, seconds (the first giving at most :data:`MAX_BINS` bins).
_NICE_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400)
MAX_BINS = 60
#: 1-second utilisation bins up to this run time (2 days), then COARSE_S-second ones (bounded memory).
FINE_LIMIT_S = 172_800
#: the coarse bin width, s: every _NICE_S width used past FINE_LIMIT_S (span / 1800 > MAX_BINS) is a multiple.
COARSE_S = 3600
#: the longest run the step scheduler accepts, s after the first arrival (366 days).
MAX_SPAN_S = 366 * 86_400


class SpanError(UserError):
    """The step scheduler's run reaches past :data:`MAX_SPAN_S` (:func:`span_message`); ``pcs.replay`` adds the
    trace's longest output to it (:func:`pcs.engine.api._blame_longest_output`)."""


def span_message(t1: float, busy_s: float) -> str:
    """Why the step scheduler stops at ``t1`` s after the first arrival, past :data:`MAX_SPAN_S`, the GPU busy
    for ``busy_s`` s of it: mostly busy (at least half), its steps are that slow -- the GPU's rates in the
    hardware table (``bf16_flops``, ``hbm_bps``; pcs/hardware.py) against the model -- not the trace's
    timestamps; else the gaps between arrivals, output lengths or restores over a slow link. The limit is named
    in days and seconds with its reason (the utilisation series' hourly bins are bounded), and the run's own
    time only as a share (a 4-digit "3.162e+07 s" read as below "31,622,400 s"). The compiled loop
    (pcs/engine/_stepsched.c ``add_busy``) words it in its own terms with ``t1`` and ``busy_s`` to 4 digits;
    :func:`pcs.engine.stepnative.span_limit` turns that into this line, so both use the 4-digit values."""
    t1, busy_s = float(f"{t1:.4g}"), float(f"{busy_s:.4g}")
    head = (f"the step scheduler's clock ran past {MAX_SPAN_S // 86_400} days ({MAX_SPAN_S:,} s) after the first "
            f"arrival, the longest run it models (its utilisation series keeps at most "
            f"{MAX_SPAN_S // COARSE_S:,} hourly bins): ")
    if busy_s >= 0.5 * t1:
        return head + (f"the GPU was busy for {100 * busy_s / t1:.0f} % of that time, so its steps are that slow: "
                       "check the GPU's rates (bf16_flops, hbm_bps in hardware_table) against the model, or use "
                       "compute_mode='infinite' / timing='sequential'")
    return head + ("check the trace's timestamps and output lengths, and the links' bandwidths (a slow link "
                   "makes restores that long), or use compute_mode='infinite' / timing='sequential'")


@dataclass(slots=True)
class SchedulerCounters:
    """Counters of one step-scheduler run (seconds on the trace clock).

    Attributes:
        steps: steps run (prefill steps and decode steps).
        prefill_steps: steps holding at least one prefill chunk.
        busy_s: sum of step times (stalls included).
        stall_s: time steps waited for layer-wise restores.
        busy_per_s: busy seconds per ``bin_s``-second bin from ``origin_s`` (``array('d')``: the compiled loop
            hands its bins over as one buffer, pcs/engine/_stepsched.c ``counters``).
        origin_s: the first arrival.
        end_s: when the last request finished.
        preemptions: preemptions (a request may count several).
        recompute_tokens: tokens prefilled again after preemptions (waste).
        restores_considered: admissions with lower-tier hits to restore.
        restores_losing: those whose restore (link queue included) took longer than the prefill it saved.
        restores_skipped: those recomputed instead (fallback).
        restore_timeouts: best-effort restores cut at their deadline.
        decode_blocks_cached: output blocks cached under the next turn's ids.
        requests_outgrown: requests admitted whole at first whose re-admission after a preemption was truncated
            (their prompt + output so far outgrew the GPU tier; docs/semantics.md §5).
        in_system_area_s: integral over time of the requests in the system, request-seconds.
        bin_s: width of the ``busy_per_s`` bins, s (1, or COARSE_S past FINE_LIMIT_S; see add_busy).
    """

    steps: int = 0
    prefill_steps: int = 0
    busy_s: float = 0.0
    stall_s: float = 0.0
    busy_per_s: array = field(default_factory=lambda: array("d"))
    origin_s: float = 0.0
    end_s: float = 0.0
    preemptions: int = 0
    recompute_tokens: int = 0
    restores_considered: int = 0
    restores_losing: int = 0
    restores_skipped: int = 0
    restore_timeouts: int = 0
    decode_blocks_cached: int = 0
    requests_outgrown: int = 0
    in_system_area_s: float = 0.0
    bin_s: int = 1

    def add_busy(self, start_s: float, seconds: float) -> None:
        """The instance was busy from ``start_s`` for ``seconds``.

        Memory is bounded: ``busy_per_s`` holds 1-second bins for the first :data:`FINE_LIMIT_S` seconds
        (``bin_s`` = 1); past that it is folded into :data:`COARSE_S`-second bins (``bin_s`` = 3600; every
        report width of a span that long is a multiple of it, so the report is the same sum). A run past
        :data:`MAX_SPAN_S` is refused. The scheduler's inline fast path (``pcs.engine.scheduler._elapse``)
        indexes 1-second bins and falls through to here when the index is past the list: once folded, the
        list holds at most MAX_SPAN_S / COARSE_S (8,784) bins < FINE_LIMIT_S, so it always falls through.

        Raises:
            UserError: the run reaches past :data:`MAX_SPAN_S` after the first arrival (a far timestamp, a
                huge output length, a slow GPU); one line naming the cause (:func:`span_message`).
        """
        self.busy_s += seconds
        t0 = start_s - self.origin_s
        t1 = t0 + seconds
        if not t1 <= MAX_SPAN_S:
            raise SpanError(span_message(t1, self.busy_s))
        if self.bin_s == 1 and t1 >= FINE_LIMIT_S:
            self._fold()
        w = self.bin_s
        t0, t1 = t0 / w, t1 / w
        bins = self.busy_per_s
        b0, b1 = int(t0), int(t1)
        if b1 >= len(bins):
            bins.extend([0.0] * (b1 + 1 - len(bins)))
        if b0 == b1:
            bins[b0] += seconds
            return
        bins[b0] += (b0 + 1 - t0) * w
        for b in range(b0 + 1, b1):
            bins[b] += w
        bins[b1] += (t1 - b1) * w

    def _fold(self) -> None:
        """1-second bins -> COARSE_S-second bins (sums of COARSE_S consecutive ones)."""
        fine = self.busy_per_s
        self.busy_per_s = array("d", [sum(fine[i:i + COARSE_S]) for i in range(0, len(fine), COARSE_S)])
        self.bin_s = COARSE_S


def utilisation_bins(busy_per_s, span_s: float, bin_s: int = 1) -> tuple[int, list]:
    """(bin width in seconds, busy share per bin) with at most :data:`MAX_BINS` bins over ``span_s``
    (more only past 60 days, at 1 day each); ``busy_per_s`` holds busy seconds per ``bin_s``-second bin
    (``array('d')``, read in place; or any sequence of floats)."""
    width = next((w for w in _NICE_S if span_s / w <= MAX_BINS), _NICE_S[-1])
    width = max(width, bin_s)                    # bin_s > 1 only when span_s > FINE_LIMIT_S: width >= 3600
    n = max(1, int(np.ceil(span_s / width))) if span_s > 0 else 1
    per = width // bin_s
    per_s = np.zeros(n * per)
    m = min(len(busy_per_s), len(per_s))
    if m and isinstance(busy_per_s, array) and busy_per_s.typecode == "d":
        per_s[:m] = np.frombuffer(busy_per_s, np.float64, m)   # the same doubles, no float object read
    elif m:
        per_s[:m] = np.fromiter(busy_per_s, np.float64, m)
    return width, [round(float(v), 6) for v in per_s.reshape(n, per).sum(axis=1) / width]


def _pcts(values: np.ndarray) -> Percentiles:
    """p50, p90, p99 (numpy's linear method, :func:`pcs.percentiles.linear_percentiles`) of the finite values; None
    each when there are none. The finite values are a fresh copy, so they are partitioned in place (a plain copy
    when every value is finite: the masked one costs ~17 instructions a value, the mask's count and a copy ~3;
    the plain copy made by :func:`pcs.percentiles.linear_percentiles` only when it partitions every value, not for
    a column mostly of zeros)."""
    finite = np.isfinite(values)
    if np.count_nonzero(finite) == len(values):
        return Percentiles(*linear_percentiles(values, (50, 90, 99), in_place=False)) if len(values) else \
            Percentiles(None, None, None)
    values = values[finite]
    if not len(values):
        return Percentiles(None, None, None)
    return Percentiles(*linear_percentiles(values, (50, 90, 99)))


def sorted_pcts(ordered: np.ndarray) -> Percentiles:
    """:func:`_pcts` of a column read off its finite values sorted ascending (:func:`pcs.percentiles.sorted_finite`,
    a sort the summary makes for the column's CDF anyway): the same order statistics, the same numbers to the bit
    (:func:`pcs.percentiles.sorted_linear_percentiles`), no partition of another copy."""
    if not len(ordered):
        return Percentiles(None, None, None)
    return Percentiles(*sorted_linear_percentiles(ordered, (50, 90, 99)))


@dataclass(frozen=True, slots=True)
class LatencyParts:
    """The parts of a run's :class:`pcs.engine.schedresult.LatencySummary` that sort or partition a whole column,
    made apart from the rest of the summary: the no-cache run's on the worker thread that closed its loop
    (:func:`pcs.engine.loops._close_beside`), while the calling thread closes the run's own loop. A part left
    None is made by :func:`_latency` itself.

    Attributes:
        ttft_ordered: the finite ``ttft_s`` sorted ascending (:func:`pcs.percentiles.sorted_finite`; float64, s),
            read for the TTFT percentiles (:func:`sorted_pcts`) and the TTFT CDF (``pcs.engine.series``).
        tpot_s, e2e_s: :func:`_pcts` of the ``tpot_s`` and ``e2e_s`` columns.
    """

    ttft_ordered: np.ndarray | None = None
    tpot_s: Percentiles | None = None
    e2e_s: Percentiles | None = None


def latency_parts(columns: dict) -> LatencyParts:
    """Every :class:`LatencyParts` of a step-scheduler run's per-request columns (``ttft_s``, ``tpot_s``,
    ``e2e_s``: float64 (requests,), s; ``array.array`` or numpy), after :func:`end_times`."""
    return LatencyParts(sorted_finite(_col(columns, "ttft_s")), *_tail_pcts(columns))


def _tail_pcts(columns: dict) -> tuple:
    """(:func:`_pcts` of ``tpot_s``, of ``e2e_s``): the run's (:func:`_rest_parts`) and the no-cache run's
    (:func:`latency_parts`), one rule."""
    return _pcts(_col(columns, "tpot_s")), _pcts(_col(columns, "e2e_s"))


#: the wait columns :func:`scheduler_summary` reads percentiles of (its ``wait_kv_s``, ``wait_compute_s``,
#: ``wait_link_s``)
_WAITS = ("wait_s", "wait_compute_s", "wait_link_s")


@dataclass(frozen=True, slots=True)
class RunParts:
    """The sorts and partitions of a step-scheduler run's own summary, made on a worker thread once its columns
    are final (:class:`PendingParts`, started by :meth:`pcs.engine.stepnative.NativeStepEngine.close`) while the
    calling thread goes on to the summary; every value is what :func:`scheduler_summary` and
    :func:`pcs.engine.summary.ordered_columns` would compute themselves (the same functions on the same columns).

    Attributes:
        latency: the run's :class:`LatencyParts` (:func:`latency_parts`).
        waits: :func:`_pcts` of the ``wait_s``, ``wait_compute_s`` and ``wait_link_s`` columns (the summary's
            ``wait_kv_s``, ``wait_compute_s``, ``wait_link_s``).
        prefill_no_cache_ordered: :func:`pcs.percentiles.sorted_finite` of ``prefill_no_cache_s`` (float64, s), or
            None (sorted by the summary).
    """

    latency: LatencyParts
    waits: tuple
    prefill_no_cache_ordered: np.ndarray | None = None


def run_parts(columns: dict, prefill_no_cache_ordered: np.ndarray | None = None) -> RunParts:
    """:class:`RunParts` of a step-scheduler run's final per-request columns (name -> ``array.array`` or numpy:
    ``ttft_s``, ``tpot_s``, ``e2e_s`` and the wait columns, float64 (requests,), s): the ``ttft_s`` sort and
    :func:`_rest_parts`, as :meth:`PendingParts.get` joins them when the two are made on two threads."""
    return _joined(sorted_finite(_col(columns, "ttft_s")), _rest_parts(columns), prefill_no_cache_ordered)


class PendingParts:
    """:func:`run_parts` being made on a worker thread (:class:`pcs.beside.Beside`, inline when threads are off);
    :meth:`get` waits for them (once) and returns them, or raises what the worker raised. The worker is handed
    its own dict of the columns it reads, so a caller that adds columns to the run's dict meanwhile does not
    touch it. Not joined (a run whose summary is never made), the worker ends by itself after its call.
    :meth:`gated` begins one before the run's columns are final (:meth:`open` hands them over).

    Split (the gated kind): the worker sorts ``ttft_s`` (:func:`pcs.percentiles.sorted_finite`, the largest part:
    ~5 ms of 7 at 120,000 requests) while the thread that calls :meth:`get` -- which would only wait for it -- makes
    the percentiles of ``tpot_s``, ``e2e_s`` and the wait columns (:func:`_pcts`, :func:`_rest_parts`): the same
    functions on the same columns, so the same :class:`RunParts`."""

    __slots__ = ("_side", "_value", "_done", "_gate", "_cols", "_split")

    def __init__(self, columns: dict | None, prefill_no_cache_ordered: np.ndarray | None = None) -> None:
        from pcs.beside import Beside, threads_wanted

        self._side = Beside(threads_wanted(), linger=False)
        self._value, self._done, self._gate, self._split = None, False, None, False
        if columns is not None:
            self._side.start(run_parts, _read_columns(columns), prefill_no_cache_ordered)

    @classmethod
    def gated(cls, prefill_no_cache_s: np.ndarray) -> "PendingParts":
        """Parts begun on a worker thread while the run still closes: the worker sorts ``prefill_no_cache_s``
        (float64 (requests,), s; final since the last feed: :func:`pcs.percentiles.sorted_finite`), then waits
        until :meth:`open` hands it the final columns and makes :func:`run_parts` of them with that sort -- one
        thread start for both, where a worker of its own for each waited twice for a thread to begin on the
        caller's critical path. Threaded whatever ``$PCS_THREADS`` says (the caller asks for it only with threads:
        inline, the wait could never end); :meth:`open` or :meth:`settle` must follow."""
        import threading

        from pcs.beside import Beside

        self = cls(None)
        self._side, self._split = Beside(True, linger=False), True
        self._gate, self._cols = threading.Lock(), None
        self._gate.acquire()
        try:
            self._side.start(self._gated_parts, prefill_no_cache_s)
        except BaseException:   # a stop signal in the start, the call perhaps handed over: no worker left waiting
            self.settle()
            raise
        return self

    def _gated_parts(self, prefill_no_cache_s: np.ndarray) -> tuple | None:
        """On the worker (:meth:`gated`): the sort, then, once the gate opens, the ``ttft_s`` sort: (that sort,
        the ``prefill_no_cache_s`` one); None when it opened with no columns (the run failed, :meth:`settle`).
        :meth:`get` makes the rest of :func:`run_parts` (:func:`_rest_parts`)."""
        ordered = sorted_finite(prefill_no_cache_s)
        self._gate.acquire()
        return None if self._cols is None else (sorted_finite(_col(self._cols, "ttft_s")), ordered)

    def open(self, columns: dict) -> None:
        """The run's final columns (:meth:`gated`): the worker goes on to :func:`run_parts` of its own dict of them."""
        self._cols = _read_columns(columns)
        self._gate.release()

    def get(self) -> RunParts:
        """The :class:`RunParts`, once the worker has made them."""
        if not self._done:
            if self._split:     # this thread's share while the worker sorts ttft_s; then the worker's
                rest = _rest_parts(self._cols)
                ttft, pre = self._side.join()
                self._value = _joined(ttft, rest, pre)
            else:
                self._value = self._side.join()
            self._done = True
        return self._value

    def settle(self) -> None:
        """Wait for the worker and drop its outcome (:meth:`pcs.beside.Beside.settle`): the replay is raising its own
        error, and no worker may outlive it (a gated worker still waiting for its columns is let go first)."""
        gate, self._gate = self._gate, None
        if gate is not None:
            try:
                gate.release()      # a worker still waiting for its columns gets none (None: dropped)
            except RuntimeError:    # open already released it
                pass
        if not self._done:
            self._side.settle()
            self._done = True


def _rest_parts(columns: dict) -> tuple:
    """The parts of :func:`run_parts` of ``columns`` besides the ``ttft_s`` sort: (:func:`_pcts` of ``tpot_s``, of
    ``e2e_s``, the tuple of :func:`_pcts` of each of :data:`_WAITS`): the one rule of those percentiles, whichever
    thread makes them (:func:`run_parts`, :meth:`PendingParts.get`)."""
    return (*_tail_pcts(columns), tuple(_pcts(_col(columns, name)) for name in _WAITS))


def _joined(ttft_ordered: np.ndarray, rest: tuple, prefill_no_cache_ordered: np.ndarray | None) -> RunParts:
    """:class:`RunParts` of the ``ttft_s`` sort, :func:`_rest_parts` and the ``prefill_no_cache_s`` sort (or None)."""
    tpot, e2e, waits = rest
    return RunParts(LatencyParts(ttft_ordered, tpot, e2e), waits, prefill_no_cache_ordered)


def _read_columns(columns: dict) -> dict:
    """The columns :func:`run_parts` reads, in a dict of their own."""
    return {name: columns[name] for name in ("ttft_s", "tpot_s", "e2e_s") + _WAITS}


def _col(columns: dict, name: str) -> np.ndarray:
    col = columns[name]
    if isinstance(col, np.ndarray):
        return col
    dtype = {"q": np.int64, "d": np.float64, "b": np.int8}[col.typecode]
    return np.frombuffer(col, dtype=dtype) if len(col) else np.zeros(0, dtype)


def _latency(columns: dict, stats: SchedulerCounters, slo_s: float | None,
             parts: LatencyParts | None = None) -> LatencySummary:
    """TTFT, TPOT, end-to-end percentiles, utilisation and goodput of one run; ``parts``: those percentiles' sorts
    and partitions made already (:class:`LatencyParts`), or None (made here)."""
    p = parts if parts is not None else LatencyParts()
    ttft = _col(columns, "ttft_s")
    span = stats.end_s - stats.origin_s
    met = int((ttft <= slo_s).sum()) if slo_s is not None else None
    util = stats.busy_s / span if span > 0 else None
    if util is not None and 1.0 < util < 1.0 + 1e-9:    # steps back to back: the two float sums differ in the last bit
        util = 1.0
    return LatencySummary(
        ttft_s=_pcts(ttft) if p.ttft_ordered is None else sorted_pcts(p.ttft_ordered),
        tpot_s=_pcts(_col(columns, "tpot_s")) if p.tpot_s is None else p.tpot_s,
        e2e_s=_pcts(_col(columns, "e2e_s")) if p.e2e_s is None else p.e2e_s,
        makespan_s=span, busy_s=stats.busy_s, utilisation=util,
        preemptions=stats.preemptions, slo_met=met,
        slo_met_share=met / len(ttft) if met is not None and len(ttft) else None,
        goodput_rps=met / span if met is not None and span > 0 else None)


def scheduler_summary(columns: dict, stats: SchedulerCounters, config, no_cache=None,
                      parts: tuple = (None, None), waits: tuple | None = None) -> SchedulerSummary:
    """The ``scheduler`` object of the replay summary (fields and units: :mod:`pcs.engine.schedresult`).

    Args:
        columns: per-request columns of the run (:data:`pcs.engine.scheduler.STEP_COLUMNS` included).
        stats: the run's :class:`SchedulerCounters`.
        config: the resolved :class:`pcs.engine.schedconfig.SchedulerConfig`.
        no_cache: (columns, counters) of the same trace with no cache, or None.
        parts: the run's and the no-cache run's :class:`LatencyParts` made already (the TTFT columns sorted
            once for the summary's CDFs and read here; the no-cache run's on its worker), None each: made here.
        waits: the wait columns' percentiles made already (:attr:`RunParts.waits`), or None: made here.
    """
    w = waits if waits is not None else tuple(_pcts(_col(columns, name)) for name in _WAITS)
    span = stats.end_s - stats.origin_s
    width, series = utilisation_bins(stats.busy_per_s, span, stats.bin_s)
    considered = stats.restores_considered
    preempted = _col(columns, "preemptions")
    return SchedulerSummary(
        max_num_batched_tokens=config.max_num_batched_tokens, max_num_seqs=config.max_num_seqs,
        restore_policy=config.restore_policy, restore_fallback=config.restore_fallback,
        restore_timeout_s=config.restore_timeout_s, restore_timeout_per_token_s=config.restore_timeout_per_token_s,
        cache_decode_blocks=config.cache_decode_blocks, max_preemptions=config.max_preemptions,
        cache_blocks_at=config.cache_blocks_at,
        ttft_slo_s=config.ttft_slo_s, steps=stats.steps, prefill_steps=stats.prefill_steps, stall_s=stats.stall_s,
        with_cache=_latency(columns, stats, config.ttft_slo_s, parts[0]),
        no_cache=None if no_cache is None else _latency(no_cache[0], no_cache[1], config.ttft_slo_s, parts[1]),
        utilisation_bin_s=width, utilisation_over_time=tuple(series),
        mean_in_system=stats.in_system_area_s / span if span > 0 else None,
        requests_preempted=int((preempted > 0).sum()), max_preemptions_of_a_request=int(preempted.max(initial=0)),
        preempted_recompute_tokens=stats.recompute_tokens, restores_considered=considered,
        restores_losing=stats.restores_losing,
        share_losing=stats.restores_losing / considered if considered else None,
        restores_skipped=stats.restores_skipped, restore_timeouts=stats.restore_timeouts,
        decode_blocks_cached=stats.decode_blocks_cached, wait_kv_s=w[0], wait_compute_s=w[1], wait_link_s=w[2],
        exposed_restore_s_total=float(_col(columns, "exposed_restore_s").sum()))


def end_times(columns: dict) -> None:
    """Per-request latencies from the times the step scheduler wrote at each finish, in place, after the run.

    At a finish :class:`pcs.engine.scheduler.StepEngine` writes ``ttft_s`` = the time of the first token
    (trace clock, s) and ``finish_s``; here, per request (float64 columns, shape (n,), s; the same float
    operations in the same order as one request at a time)::

        arrival   = the running maximum of arrival_s (an out-of-order arrival is taken as arriving then)
        ttft_s    = first token - arrival
        e2e_s     = finish_s - arrival
        tpot_s    = (finish_s - first token) / (output_tokens - 1)     (NaN for one output token)
        wait_compute_s = ttft_s - wait_s - exposed_restore_s - prefill_steps_s   (0 up to 1e-9: float noise)

    ``docs/semantics.md §9`` (TTFT, finish), §11 (where each is counted).
    """
    if not len(columns["ttft_s"]):
        return
    arrival = np.maximum.accumulate(_col(columns, "arrival_s"))
    first = _col(columns, "ttft_s")
    finish = _col(columns, "finish_s")
    out = _col(columns, "output_tokens")
    _col(columns, "e2e_s")[:] = finish - arrival
    tpot = _col(columns, "tpot_s")
    tpot[:] = np.nan
    np.divide(finish - first, (out - 1).astype(np.float64), out=tpot, where=out > 1)
    first -= arrival                                             # ttft_s, in place
    rest = first - _col(columns, "wait_s") - _col(columns, "exposed_restore_s") - _col(columns, "prefill_steps_s")
    _col(columns, "wait_compute_s")[:] = np.where(rest > 1e-9, rest, 0.0)
