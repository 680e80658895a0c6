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

from pcs.engine.runparts import _WAITS, LatencyParts, _col, _pcts, sorted_pcts
from pcs.engine.schedresult import LatencySummary, SchedulerSummary
from pcs.errors import UserError
from pcs._dataclass import dataclass

__all__ = ["SchedulerCounters", "scheduler_summary", "utilisation_bins", "end_times", "span_message", "SpanError"]

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
        waits: the wait columns' percentiles made already (:attr:`pcs.engine.runparts.RunParts.waits`), or None: made here.
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
