"""Bounded views of a replay for plots: per-request distributions and the time-series sampler.

A replay's per-request table grows with the trace; the summary carries
these fixed-size views instead (docs/semantics.md §11), so the JSON and the
HTML report stay small whatever the trace length:

- ``ttft_cdf``: TTFT with the cache and without it (``prefill_no_cache_s``,
  the full prefill with no wait; and, under the step scheduler, the TTFT of
  the same trace scheduled on the same instance with no cache, the like-for-
  like figure) at :data:`CDF_LEVELS` quantile levels (0, 0.5 %, ..., 100 %;
  ``inverted_cdf``: each value is a request's own);
- ``restore_vs_recompute``: for requests that restored blocks, the restore
  time (queueing included) and the prefill the request's hits save
  (``prefill_no_cache_s - prefill_s``), at most :data:`MAX_POINTS` of them,
  evenly spaced in trace order.

:class:`Sampler` keeps the engine's state at boundaries ``t0 + k x step_s`` of
simulated time (``t0``: the first arrival): whenever more than
:data:`MAX_SAMPLES` boundaries would be needed, the step doubles and every
other sample is dropped (the kept ones lie on the new grid), so the series
has a fixed step and at most :data:`MAX_SAMPLES` samples whatever the trace
length; the step is :data:`BASE_STEP_S` x 2^k, the smallest that fits.
"""
from __future__ import annotations

import itertools
import math
import operator
from typing import Any, Mapping

import numpy as np

from pcs.engine.keptsetup import cdf_indexes
from pcs.percentiles import sorted_finite
from pcs.schema import field, result

__all__ = ["CDF_LEVELS", "MAX_POINTS", "MAX_SAMPLES", "BASE_STEP_S", "Sampler", "NoSampler", "TimeSeries", "TtftCdf",
           "RestoreScatter", "RequestDistributions", "request_distributions", "series_payload", "sequential_samples"]

#: Quantile levels of the TTFT CDFs: 201 levels, 0 to 1 in steps of 0.005.
CDF_LEVELS = np.linspace(0.0, 1.0, 201)
#: Most requests in the restore-vs-recompute scatter.
MAX_POINTS = 2000
#: Most samples of a time series.
MAX_SAMPLES = 512
#: The smallest sampling step, simulated seconds (steps are this x 2^k).
BASE_STEP_S = 0.001


@result
class TtftCdf:
    """TTFT with and without the cache at fixed quantile levels (docs/semantics.md §9, §10)."""

    quantiles: tuple[float, ...] = field("ratio", "quantile levels 0, 0.005, ..., 1 (empty without requests)")
    with_cache_s: tuple[float, ...] = field("s", "TTFT at each level (inverted CDF: a request's own value)")
    without_cache_s: tuple[float, ...] = field("s", "full prefill, no wait, at each level")
    without_cache_scheduled_s: tuple[float, ...] = field(
        "s", "TTFT of the same trace scheduled on the same instance with no cache, at each level (step "
             "scheduler only; empty otherwise): the like-for-like no-cache figure (docs/semantics.md §9)")


@result
class RestoreScatter:
    """Per request that restored blocks: restore time against the prefill its hits save (at most 2,000)."""

    requests: int = field("count", "requests that restored blocks")
    sampled: int = field("count", "of them listed here, evenly spaced in trace order")
    prefill_saved_s: tuple[float, ...] = field("s", "prefill_no_cache_s - prefill_s of each listed request")
    restore_s: tuple[float, ...] = field("s", "its restore time, link queueing included")


@result
class RequestDistributions:
    """Bounded views of the per-request table for plots (docs/semantics.md §11)."""

    ttft_cdf: TtftCdf = field("-", "TTFT with and without the cache")
    restore_vs_recompute: RestoreScatter = field("-", "restore time vs the prefill it saves, per request")


@result
class TimeSeries:
    """The replay sampled at a fixed simulated-time step, at most 512 samples (docs/semantics.md §11).

    Columns hold one value per sample; per-tier and per-link columns are
    objects keyed by tier name (lower tiers only for links).
    """

    step_s: float = field("s", "sampling step: 0.001 s x 2^k, the smallest that keeps <= 512 samples")
    t_s: tuple[float, ...] = field("s", "sample times, seconds since the first arrival")
    hit_ratio: tuple[float | None, ...] = field("ratio", "hit tokens / prompt tokens of the requests admitted "
                                                          "since the previous sample (null: none)")
    hit_ratio_cumulative: tuple[float | None, ...] = field("ratio", "the same since the start")
    resident_bytes: dict[str, tuple[int, ...]] = field("bytes", "bytes of the blocks each tier holds")
    resident_bytes_by_component: dict[str, dict[str, tuple[int, ...]]] = field(
        "bytes", "the same per KV component, for tiers with more than one component whose blocks each hold "
                 "every component (not a hybrid model's tiers, which count pages of different groups: their "
                 "per-component series is hybrid.series)")
    restore_bps: dict[str, tuple[float, ...]] = field("bytes/s", "bytes restored over each link since the "
                                                                 "previous sample / step_s (counted at admission)")
    link_bandwidth_bps: dict[str, float | None] = field("bytes/s", "each link's bandwidth, all TP ranks together")
    waiting_requests: tuple[int, ...] = field("count", "requests arrived and not admitted (FIFO admission)")
    running_requests: tuple[int, ...] = field("count", "requests admitted and not finished (0 in sequential timing)")
    restore_backlog_s: dict[str, tuple[float, ...]] = field("s", "seconds of restores queued on each link")


def _last_boundary(t0: float, step_s: float, now_s: float) -> int:
    """The index of the last sampling boundary at or before ``now_s``: the largest k with ``t0 + k * step_s <=
    now_s``, that float expression (the one :class:`Sampler` stores as row times), not the quotient.

    ``int((now_s - t0) / step_s)`` is the first guess; float rounding may put it one off either way (e.g. t0 =
    14.264324267410204, now_s = t0 + 2.0 rounded to 16.264324267410203, step 1.0: the quotient is
    1.9999999999999991 -> 1, yet ``t0 + 2 * 1.0 == now_s``: boundary 2 is <= now_s), so it is walked to the largest
    k that holds (``t0 + k * step_s`` never decreases with k, so the walk ends there). Every count of boundaries
    (:meth:`Sampler.take`'s coarsening and rows, :meth:`Sampler.presize` through :func:`_fit`,
    :func:`sequential_samples`) uses it. Seconds; ``step_s > 0``; negative when ``now_s < t0``. The walk is short
    only while the quotient is well below 2**53 (past it ``k + 1`` is no new float): callers keep it below
    2 x max_samples (:func:`_fit`).
    """
    k = int((now_s - t0) / step_s)
    while t0 + (k + 1) * step_s <= now_s:   # a quotient rounded down by float error
        k += 1
    while t0 + k * step_s > now_s:          # or up
        k -= 1
    return k


def _fit(t0: float, step_s: float, max_samples: int, now_s: float) -> tuple[int, int]:
    """How many times ``step_s`` doubles so that at most ``max_samples`` boundaries ``t0 + k x step`` are <=
    ``now_s`` (the smallest such step from ``step_s`` up), and the last boundary's index at that step.

    The boundaries are counted by :func:`_last_boundary` (e.g. t0 = 14.264324267410204, now_s = t0 + 2.0 rounded
    to 16.264324267410203, from step 0.25 with 2 samples: 9, 5, 3 boundaries at steps 0.25, 0.5, 1 and 2 at step
    2: 3 doublings, last index 1).
    A quotient ``(now_s - t0) / step_s`` of at least 2 x max_samples doubles first without the count: boundary
    max_samples is then <= now_s however the quotient rounded (``max_samples x step_s`` in floats is below the
    exact ``now_s - t0``), so the count would double too; this keeps the count's walk short (a huge quotient: a
    clock far from t0 at a small step). Doubling keeps the even boundaries bit for bit (``k * (2 s) == (2 k) * s``
    in floats), so the rows kept by :meth:`Sampler._coarsen` lie on the new grid. Seconds; ``now_s >= t0``.
    pcs/engine/_stepsample.h (samp_last) is its C twin. Raises: OverflowError when ``now_s - t0`` is not finite
    (as ``int`` of the quotient did).
    """
    if not now_s - t0 < math.inf:
        raise OverflowError(f"a sample at {now_s!r} s, t0 {t0!r} s: not a finite time")
    doublings = 0
    while (now_s - t0) / step_s >= 2 * max_samples:
        step_s *= 2
        doublings += 1
    last = _last_boundary(t0, step_s, now_s)
    while last + 1 > max_samples:
        step_s *= 2
        doublings += 1
        last = _last_boundary(t0, step_s, now_s)
    return doublings, last


class Sampler:
    """Snapshots at fixed simulated-time boundaries, at most ``max_samples`` of them.

    The engine calls :meth:`take` when its clock reaches :attr:`next_s`
    (one float comparison per event on the hot path); ``snapshot()``
    returns the current state as a tuple. Between two calls nothing
    changed, so every boundary passed gets the same state (one snapshot).

    Attributes:
        step_s: the current step, seconds (``base_step_s`` x 2^k).
        t0: the first boundary (the clock at the first call), or None.
        next_s: the next boundary; ``-inf`` before the first call.
        rows: ``(boundary_s, *snapshot)`` tuples, one per boundary, ascending. Rows the compiled step loop kept
            (:meth:`set_block`) are made into these tuples when ``rows`` is first read; the summary reads them
            as columns without making them (:func:`series_payload`).
    """

    __slots__ = ("step_s", "t0", "next_s", "_rows", "_block", "_cols", "max_samples")

    def __init__(self, base_step_s: float = BASE_STEP_S, max_samples: int = MAX_SAMPLES) -> None:
        assert base_step_s > 0 and max_samples >= 2
        self.step_s = base_step_s
        self.max_samples = max_samples
        self.t0: float | None = None
        self.next_s = float("-inf")
        self._rows: list[tuple] = []
        self._block: tuple | None = None
        self._cols: list | None = None

    @property
    def rows(self) -> list[tuple]:
        """The rows (class docstring); those of :meth:`set_block` or :meth:`set_columns` made into tuples here,
        once."""
        if self._block is not None:
            self._rows, self._block = _block_rows(*self._block), None
        elif self._cols is not None:
            self._rows, self._cols = _column_rows(self._cols), None
        return self._rows

    @rows.setter
    def rows(self, rows: list[tuple]) -> None:
        self._rows, self._block, self._cols = rows, None, None

    def set_block(self, t0: float | None, step_s: float, next_s: float, rows: bytes, tiers: int) -> None:
        """The series the compiled step loop kept (``_stepsched.StepScheduler.sample_block``: its first boundary or
        None, step and next boundary, s; its rows as the bytes of :data:`SAMPLE_ROW` records; its tiers): the state
        :meth:`take`'s calls would have left, the rows kept as records until :attr:`rows` is read."""
        self.t0, self.step_s, self.next_s = t0, step_s, next_s
        self._rows, self._block, self._cols = [], (np.frombuffer(rows, SAMPLE_ROW), tiers), None

    def set_columns(self, t0: float, step_s: float, next_s: float, columns: list) -> None:
        """Rows handed over as columns (:func:`sequential_samples`): the first boundary, the step and the next
        boundary (s), and six columns in :func:`_row_columns`'s order -- boundaries (float64 array), admitted
        (int64 array), waiting (a tuple of ints), then per tier the resident blocks (a list of ints), the restored
        bytes and the link-free times (float64 arrays) -- kept so until :attr:`rows` is read
        (:func:`_column_rows`); :meth:`row_columns` returns them as they are."""
        self.t0, self.step_s, self.next_s = t0, step_s, next_s
        self._rows, self._block, self._cols = [], None, columns

    def row_columns(self, ntiers: int) -> list:
        """The rows as columns (:func:`_row_columns`'s shape and values), from the compiled loop's records or the
        columns handed over when :attr:`rows` has not been made of them (:func:`_block_columns`, :meth:`set_columns`:
        no tuple a row)."""
        if self._block is not None:
            return _block_columns(self._block[0], ntiers)
        if self._cols is not None:
            return self._cols
        return _row_columns(self.rows, ntiers)

    def take(self, now_s: float, snapshot) -> float:
        """Record every boundary <= ``now_s`` not yet recorded; returns the next boundary.

        Past ``max_samples`` boundaries <= ``now_s`` the step doubles (:meth:`_coarsen`) until at most
        ``max_samples`` are, counted by :func:`_fit` (the rule that also places the rows), so
        ``len(rows) <= max_samples`` after every call."""
        if self.t0 is None:
            self.t0 = now_s
        t0 = self.t0
        doublings, last = _fit(t0, self.step_s, self.max_samples, now_s)
        for _ in range(doublings):
            self._coarsen()
        step, rows = self.step_s, self.rows
        n = len(rows)
        if last >= n:
            state = snapshot()
            if last == n:                    # one boundary passed (most calls)
                rows.append((t0 + n * step, *state))
                n += 1
            else:
                rows.extend((t0 + k * step, *state) for k in range(n, last + 1))
                n = last + 1
        self.next_s = t0 + n * step
        return self.next_s

    def presize(self, first_s: float, last_s: float) -> None:
        """Start at the step that :meth:`take` reaches once called at ``first_s`` (its first call) and at
        ``last_s``: fewer calls, the same rows, when the first call is at ``first_s`` and some call is at or
        after ``last_s`` (the step only grows with the latest time taken; grid times ``t0 + k x step`` scale
        exactly by powers of two, so the rows kept on the coarser grid are the ones coarsening would keep;
        tests/engine/test_series.py). Seconds of simulated time; before the first :meth:`take` only."""
        assert self.t0 is None and not self.rows
        self.step_s *= 2 ** _fit(first_s, self.step_s, self.max_samples, last_s)[0]

    def _coarsen(self) -> None:
        """Double the step; keep the samples on the new grid (every other one)."""
        self.step_s *= 2
        self.rows = self.rows[::2]


class NoSampler(Sampler):
    """A :class:`Sampler` that records nothing, for a loop whose time series nobody reads (the step
    scheduler's no-cache run: only its per-request columns and counters are used). :meth:`take` returns
    +inf, so a loop calls it once (at its first arrival) and never again; ``t0`` stays None, ``rows`` empty."""

    __slots__ = ()

    def take(self, now_s: float, snapshot) -> float:
        return float("inf")


def _quantiles(values: np.ndarray) -> list[float]:
    """``np.quantile(values, CDF_LEVELS, method="inverted_cdf")`` of the finite values, from one sort
    (:func:`_cdf_points` of :func:`pcs.percentiles.sorted_finite`). Equal: test_series.py."""
    return _cdf_points(sorted_finite(values))


def _cdf_points(ordered: np.ndarray) -> list[float]:
    """The CDF at :data:`CDF_LEVELS` read off finite values sorted ascending: level q -> the ceil(n q)-th smallest
    (1-based; the smallest at q = 0); [] when there are none. (One ``np.partition`` at these 201 indexes would be
    exact too, but numpy's multi-index partition costs more than the sort: ~150 against ~60 instructions a value.)"""
    n = len(ordered)
    if not n:
        return []
    return ordered[cdf_indexes(n)].tolist()     # the indexes kept per n (pcs.engine.keptsetup)


def _spread(n: int, k: int) -> np.ndarray:
    """``k`` indexes spread evenly over ``0 .. n - 1`` (int64, ascending, distinct): the rounded points of
    ``np.linspace(0, n - 1, k)``, each once -- what ``np.unique`` of them gives (they are ascending, so the
    repeats are neighbours), without ``np.unique``, whose masked-array check imports ``numpy.ma`` (~43 M
    instructions, the largest import of a replay's summary)."""
    at = np.rint(np.linspace(0, n - 1, k)).astype(np.int64)
    return at[np.concatenate(([True], at[1:] != at[:-1]))] if len(at) else at


def request_distributions(columns: Mapping[str, Any], no_cache_ttft_s: Any = None,
                          ordered: Mapping[str, np.ndarray] | None = None) -> RequestDistributions:
    """The bounded distributions of a replay's per-request columns.

    Args:
        columns: name -> array-like, one value per request, of
            :data:`pcs.engine.summary.REQUEST_COLUMNS` (``ttft_s``,
            ``prefill_no_cache_s``, ``prefill_s``, ``restore_s``: float64
            seconds; ``restored_bytes``: int64); numpy arrays, ``array.array``
            or a pyarrow Table.
        no_cache_ttft_s: float64 (requests,), seconds: each request's TTFT in
            the step scheduler's no-cache run (NaN: none), or None (no such run).
        ordered: name -> :func:`pcs.percentiles.sorted_finite` of that column, for
            ``ttft_s``, ``prefill_no_cache_s`` and ``no_cache_ttft_s`` (of
            ``no_cache_ttft_s``) when the caller has sorted them already (one sort a
            column, shared with its percentiles); a missing key or None: sorted here.
    Returns:
        :class:`RequestDistributions`; ``quantiles`` empty when no request has a TTFT.
    """
    col = lambda name: np.asarray(columns[name], dtype=np.float64)  # noqa: E731
    ordered = ordered or {}
    with_cache, without = (_cdf_points(ordered[k]) if k in ordered else _quantiles(col(k))
                           for k in ("ttft_s", "prefill_no_cache_s"))
    scheduled = () if no_cache_ttft_s is None else tuple(
        _cdf_points(ordered["no_cache_ttft_s"]) if "no_cache_ttft_s" in ordered
        else _quantiles(np.asarray(no_cache_ttft_s, dtype=np.float64)))
    restored = np.flatnonzero(col("restore_s") > 0)      # first admissions that restored (restored_bytes also
    # counts re-admissions' restores, docs/semantics.md §11; restore_s is the first admission's)
    pick = restored
    if len(restored) > MAX_POINTS:
        pick = restored[_spread(len(restored), MAX_POINTS)]
    saved = np.maximum(col("prefill_no_cache_s")[pick] - col("prefill_s")[pick], 0.0)   # >= 0 up to rounding (§10)
    return RequestDistributions(
        TtftCdf(tuple(CDF_LEVELS.tolist()) if with_cache else (), tuple(with_cache), tuple(without), scheduled),
        RestoreScatter(int(len(restored)), int(len(pick)), tuple(saved.tolist()),   # Python floats, no per-value call
                       tuple(col("restore_s")[pick].tolist())))

def sequential_samples(arrival_s: np.ndarray, resident_after: np.ndarray) -> Sampler:
    """The samples the event loop takes in sequential timing over one tier, from per-request arrays.

    The fast path's twin of :class:`pcs.engine.engine.ReplayEngine`'s sampling
    (tests/engine/test_replay_fastpath.py checks the summaries equal): a
    boundary is taken at the first request arriving at or after it, with
    the state before that request -- ``i`` requests admitted, none waiting,
    ``resident_after[i - 1]`` blocks resident, nothing restored, the link free
    -- and the end state at the first boundary after the last arrival.

    Cost: O(requests) numpy work and one binary search per sample, all in
    numpy; no Python object a sample (the rows are handed over as columns,
    :meth:`Sampler.set_columns`). The step only depends on the latest time
    sampled, so the final step is worked out first (:func:`_final_step`: what
    :meth:`Sampler.take`'s calls at the first arrival, the last and the end
    boundary leave); sampling on that grid from the start gives the same rows
    (grid times ``t0 + k x step`` scale exactly by powers of two). Boundary k
    (``t0 + k x step``, the same float expression as :meth:`Sampler.take`) up
    to the last arrival holds the state before the first request arriving at
    or after it, found by a binary search in the running maximum of the
    arrivals (out-of-order traces included); the boundary after the last
    arrival holds the end state. tests/engine/test_series.py diffs it against
    the event loop's request-by-request sampling.

    Args:
        arrival_s: float64 (requests,), trace order.
        resident_after: int64 (requests,), resident blocks after each request.
    Returns:
        the :class:`Sampler` with its rows (empty without requests).
    """
    m = arrival_s.shape[0]
    if m == 0:
        return Sampler()
    t0, last = float(arrival_s[0]), max(float(arrival_s.max()), float(arrival_s[0]))
    step = _final_step(t0, last)
    k_last = _last_boundary(t0, step, last)  # the last boundary <= last, by take()'s rule
    bounds = t0 + np.arange(k_last + 2, dtype=np.float64) * step
    admitted = np.empty(k_last + 2, dtype=np.int64)
    admitted[0], admitted[-1] = 0, m
    # boundary k in 1..k_last: the first request j with max(arrival_s[:j + 1]) >= boundary
    admitted[1:-1] = np.searchsorted(np.maximum.accumulate(arrival_s), bounds[1:-1], side="left")
    resident = np.concatenate(([0], np.asarray(resident_after, dtype=np.int64)))[admitted]
    s = Sampler(base_step_s=step)
    zero = np.zeros(k_last + 2)
    s.set_columns(t0, step, t0 + (k_last + 2) * step,
                  [bounds, admitted, (0,) * (k_last + 2), [resident.tolist()], [zero], [zero]])
    return s


def _final_step(t0: float, last_s: float, base_step_s: float = BASE_STEP_S, max_samples: int = MAX_SAMPLES) -> float:
    """The step a :class:`Sampler` (``base_step_s``, ``max_samples``) has after :meth:`Sampler.take` at ``t0`` (its
    first call), at ``last_s`` (>= ``t0``) and then at the boundary that call returns (the end state's): the
    arithmetic those three calls make, without their rows. The call at ``t0`` doubles nothing (one boundary);
    the one at ``last_s`` doubles as :func:`_fit` counts from ``base_step_s`` and leaves ``k + 1`` rows (``k``: the
    last boundary's index), so it returns ``t0 + (k + 1) x step``; the call there doubles as :func:`_fit` counts
    from that step. Doubling is exact in floats, so ``step x 2**d`` is the step ``d`` doublings make. Seconds.
    tests/engine/test_series.py checks it against the three calls on hypothesis' arrivals."""
    d, k = _fit(t0, base_step_s, max_samples, last_s)
    step = base_step_s * 2.0 ** d
    return step * 2.0 ** _fit(t0, step, max_samples, t0 + (k + 1) * step)[0]


def _per_step(cum: np.ndarray, admitted: np.ndarray) -> np.ndarray:
    """Sums of a per-request column over the requests admitted between consecutive samples (first: 0)."""
    at = cum[admitted]
    return _steps(at, at[0] if len(at) else 0)


def _steps(values: np.ndarray, first: Any) -> np.ndarray:
    """``np.diff(values, prepend=first)`` of a 1-D array (same dtype and shape): ``values[0] - first``, then each
    value less the one before -- the same subtractions, so the same values, without ``np.diff``'s wrapper (its
    prepend made an array, broadcast and concatenated: ~4 us a call, three a time series)."""
    out = np.empty_like(values)
    if len(values):
        out[0] = values[0] - first
        np.subtract(values[1:], values[:-1], out=out[1:])
    return out


def series_payload(sampler: Sampler, prompt_tokens: np.ndarray, hit_tokens: np.ndarray, finish_s: np.ndarray,
                   tiers: list[dict]) -> TimeSeries:
    """The summary's ``series`` object from the engine's samples (docs/replay.md; docs/semantics.md §11).

    Args:
        sampler: the engine's :class:`Sampler`; each row is ``(boundary_s,
            admitted_requests, waiting_requests, resident_blocks per tier,
            restored_bytes per tier (cumulative; 0 for the GPU), the time each
            tier's link is busy until (seconds)[, running_requests])``; the
            last field only from the step scheduler (else running is derived
            from ``finish_s``).
        prompt_tokens, hit_tokens: per-request columns in admission order,
            ``np.ndarray[np.int64]``, shape (requests,).
        finish_s: per-request finish times, ``np.ndarray[np.float64]``, shape
            (requests,); NaN in sequential timing (nothing runs between samples);
            read only when the rows carry no running count.
        tiers: per tier, ``{"name", "bytes_per_block", "bytes_per_block_by_component",
            "link_bandwidth_bps"[, "blocks_unit"]}`` (as in the summary's tier rows). A tier gets
            ``resident_bytes_by_component`` when its blocks hold more than one component and it counts
            model blocks (each holds every component's bytes per block); not a hybrid run's tier
            (``blocks_unit`` "page"): its pages belong to different groups, so pages x a component's
            bytes per block is no component's bytes -- its per-component series is ``hybrid.series``,
            counted per group (``pcs.engine.hybridsummary``, docs/semantics.md §13.1).
    Returns:
        :class:`TimeSeries` (``running_requests``: admitted and finishing at or
        after the boundary); empty columns when nothing was sampled.
    """
    t0 = sampler.t0 or 0.0
    cols = sampler.row_columns(len(tiers))
    bounds = _array(cols[0], np.float64)
    admitted = _array(cols[1], np.int64)
    cum_p, cum_h = _cumulative(prompt_tokens), _cumulative(hit_tokens)
    step_p, step_h = _per_step(cum_p, admitted), _per_step(cum_h, admitted)
    if len(cols) > 6:  # the step scheduler counts its running requests (preempted ones wait again)
        running = _array(cols[6], np.int64)
    else:              # else admitted and not finished by the boundary (finish_s unread above)
        done = np.sort(finish_s[np.isfinite(finish_s)])
        running = admitted - np.searchsorted(done, bounds, side="left") if len(done) else np.zeros_like(admitted)
    lower = range(1, len(tiers))
    resident, busy = cols[3], [_array(b, np.float64) - bounds for b in cols[5]]
    return TimeSeries(
        step_s=sampler.step_s, t_s=tuple((bounds - t0).tolist()), hit_ratio=_ratios(step_h, step_p),
        hit_ratio_cumulative=_ratios(cum_h[admitted], cum_p[admitted]),
        resident_bytes={t["name"]: _times(resident[j], t["bytes_per_block"]) for j, t in enumerate(tiers)},
        resident_bytes_by_component={
            t["name"]: {c: _times(resident[j], b) for c, b in t["bytes_per_block_by_component"].items()}
            for j, t in enumerate(tiers)
            if len(t["bytes_per_block_by_component"]) > 1 and t.get("blocks_unit", "block") != "page"},
        restore_bps={tiers[j]["name"]: tuple((_steps(_array(cols[4][j], np.float64), 0.0)
                                              / sampler.step_s).tolist()) for j in lower},
        link_bandwidth_bps={tiers[j]["name"]: tiers[j]["link_bandwidth_bps"] for j in lower},
        waiting_requests=tuple(cols[2]), running_requests=tuple(running.tolist()),
        restore_backlog_s={tiers[j]["name"]: tuple(np.where(busy[j] > 0.0, busy[j], 0.0).tolist()) for j in lower})


#: One row of the compiled step loop's series (``pcs/engine/_stepsample.h`` SampRow, 224 bytes, every field 8 bytes,
#: native byte order): the boundary (s), requests admitted, waiting and running, then per tier (8 slots, the loop's
#: tiers first) resident blocks, restored bytes so far and the time its link is free until (s).
SAMPLE_ROW = np.dtype([("t", "f8"), ("adm", "i8"), ("wait", "i8"), ("run", "i8"), ("res", "i8", 8), ("nb", "i8", 8),
                       ("lf", "f8", 8)])


def _block_rows(block: np.ndarray, tiers: int) -> list[tuple]:
    """:data:`SAMPLE_ROW` records as :class:`Sampler` rows: ``(boundary_s, admitted, waiting, [resident],
    [restored bytes], [link free], running)``, Python floats and ints, the per-tier lists ``tiers`` long."""
    return list(zip(block["t"].tolist(), block["adm"].tolist(), block["wait"].tolist(),
                    block["res"][:, :tiers].tolist(), block["nb"][:, :tiers].tolist(),
                    block["lf"][:, :tiers].tolist(), block["run"].tolist()))


def _column_rows(cols: list) -> list[tuple]:
    """The rows of columns handed over by :meth:`Sampler.set_columns`: ``(boundary_s, admitted, waiting,
    [resident per tier], [restored bytes per tier], [link free per tier])``, Python floats and ints, as the event
    loop's sampling makes them (restored bytes as ints: the fast path's are all 0)."""
    per_tier = lambda k, conv: list(map(list, zip(*(conv(c) for c in cols[k]))))  # noqa: E731
    return list(zip(cols[0].tolist(), cols[1].tolist(), cols[2], per_tier(3, list),
                    per_tier(4, lambda c: np.asarray(c).astype(np.int64).tolist()),
                    per_tier(5, lambda c: np.asarray(c, np.float64).tolist())))


def _block_columns(block: np.ndarray, ntiers: int) -> list:
    """:func:`_row_columns` of :func:`_block_rows` of ``block``, read off the records' fields: the boundaries,
    admitted and running as float64 / int64 arrays (what :func:`_array` makes of their tuples), waiting as a tuple
    of ints, per tier the resident blocks as a list of ints (:func:`_times` multiplies Python ints) and the restored
    bytes (as float64: int64 to float64 rounds as Python's ``float(int)`` does) and link-free times as arrays."""
    if not len(block):
        return _row_columns([], ntiers)
    res, nb, lf = (block[k][:, :ntiers].T for k in ("res", "nb", "lf"))
    return [block["t"].copy(), block["adm"].copy(), tuple(block["wait"].tolist()), res.tolist(),
            list(nb.astype(np.float64)), list(lf.copy()), block["run"].copy()]


def _row_columns(rows: list[tuple], ntiers: int) -> list:
    """A :class:`Sampler`'s rows as columns, in one transposition (no Python loop per sample): per field a tuple
    of its values, the per-tier fields (3: resident blocks, 4: restored bytes, 5: link busy until) as one tuple
    per tier; with no rows, six empty columns (the per-tier ones: ``ntiers`` empty tuples)."""
    if not rows:
        return [(), (), (), [()] * ntiers, [()] * ntiers, [()] * ntiers]
    cols = list(zip(*rows))
    for k in (3, 4, 5):
        cols[k] = list(zip(*cols[k]))
    return cols


def _array(values: tuple, dtype: type) -> np.ndarray:
    """A tuple of Python numbers (one sampler field) as a ``dtype`` array, shape (len(values),): what
    ``np.asarray(values, dtype=dtype)`` gives (each number converted by the dtype's own rule), read as an iterator
    of known length (``np.fromiter``: no look at each value's type and nesting first, a fifth of the instructions)."""
    if isinstance(values, np.ndarray):     # a column of the compiled loop's records (_block_columns): as it is
        return values
    return np.fromiter(values, dtype, len(values))


def _cumulative(column: np.ndarray) -> np.ndarray:
    """0 then the running sums of an int64 column (shape (n + 1,), int64): ``np.concatenate(([0],
    np.cumsum(column)))``, summed into its place (no second copy)."""
    out = np.empty(len(column) + 1, dtype=np.int64)
    out[0] = 0
    np.cumsum(column, dtype=np.int64, out=out[1:])
    return out


def _ratios(h: np.ndarray, p: np.ndarray) -> tuple:
    """``h / p`` elementwise as Python floats, None where ``p`` is 0: ``float(h) / float(p)`` (the int64 values
    made float64 and divided, as Python does), per element."""
    q = np.divide(h.astype(np.float64), p.astype(np.float64), out=np.zeros(len(p)), where=p != 0).tolist()
    for i in np.flatnonzero(p == 0).tolist():
        q[i] = None
    return tuple(q)


def _times(values: tuple, factor: int) -> tuple:
    """Each of ``values`` (Python ints) times ``factor``, as Python ints (no int64 bound), no Python frame each."""
    return tuple(map(operator.mul, values, itertools.repeat(factor, len(values))))
