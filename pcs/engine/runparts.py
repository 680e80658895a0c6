"""The sorts and percentiles of a step-scheduler run's latency summary, made apart from the rest of it.

The parts of :func:`pcs.engine.schedstats.scheduler_summary` that sort or partition a whole per-request column
(the TTFT sort, the TPOT / end-to-end / wait percentiles): :class:`LatencyParts` and :class:`RunParts` hold them,
:func:`latency_parts` and :func:`run_parts` make them, :class:`PendingParts` makes them on a worker thread while
the caller goes on (:class:`pcs.beside.Beside`). Every value is what the summary would compute itself from the same
columns, with the same functions (:func:`_pcts`, :func:`sorted_pcts`). Split out of pcs/engine/schedstats.py (the
run's counters and its summary), no behaviour changed.
"""
from __future__ import annotations

import threading
from collections import deque

import numpy as np

from pcs import beside
from pcs.engine.schedresult import Percentiles
from pcs.percentiles import finite_percentiles, sorted_finite, sorted_linear_percentiles
from pcs._dataclass import dataclass

__all__ = ["LatencyParts", "latency_parts", "RunParts", "run_parts", "PendingParts", "sorted_pcts"]


def _pcts(values: np.ndarray) -> Percentiles:
    """p50, p90, p99 (numpy's linear method) of the finite values (:func:`pcs.percentiles.finite_percentiles`: the
    compiled selection, or numpy's partition of a fresh copy); None each when there are none."""
    got = finite_percentiles(values, _LEVELS)
    return Percentiles(None, None, None) if got is None else Percentiles(*got)


#: the levels of :func:`_pcts`
_LEVELS = (50, 90, 99)


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
    ~5 ms of 7 at 120,000 requests), then makes the percentiles of ``tpot_s``, ``e2e_s`` and the wait columns
    (:func:`_pcts`) one by one, taking each from a queue the thread that calls :meth:`get` takes from too: that
    thread makes those still queued when it gets there -- all of them when it comes while the worker sorts (10x,
    50x), none when the worker is done before it comes (1x Mooncake: the worker ended 0.4 ms of this thread's work
    ahead of it; docs/performance.md, "The 1x call's Python glue") -- and then waits for the worker's. Each column's
    percentiles are made once, by whichever thread takes it, with the same function on the same column: the same
    :class:`RunParts` whoever made what."""

    __slots__ = ("_side", "_value", "_done", "_gate", "_cols", "_split", "_todo", "_made")

    def __init__(self, columns: dict | None, prefill_no_cache_ordered: np.ndarray | None = None,
                 threaded: bool | None = None) -> None:
        """``threaded``: the worker's mode (:class:`pcs.beside.Beside`); None: as
        :func:`pcs.beside.threads_wanted` says."""
        self._side = beside.Beside(beside.threads_wanted() if threaded is None else threaded, linger=False)
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
        self = cls(None, threaded=True)     # one Beside, made threaded (no second threads_wanted())
        self._split = True
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
        if self._cols is None:
            return None
        ttft = sorted_finite(_col(self._cols, "ttft_s"))
        self._make_queued()
        return ttft, ordered

    def open(self, columns: dict) -> None:
        """The run's final columns (:meth:`gated`): the worker goes on to :func:`run_parts` of its own dict of them
        (its ``ttft_s`` sort, then the percentiles :meth:`get` has not taken)."""
        self._cols = _read_columns(columns)
        self._todo, self._made = deque(_REST), {}
        self._gate.release()

    def _make_queued(self) -> None:
        """The percentiles (:func:`_pcts`) of each column still queued (:data:`_REST`), taken one at a time
        (``deque.popleft``: one thread takes each), into ``_made``; called by the worker and by :meth:`get`."""
        todo, made, cols = self._todo, self._made, self._cols
        while True:
            try:
                name = todo.popleft()
            except IndexError:
                return
            made[name] = _pcts(_col(cols, name))

    def get(self) -> RunParts:
        """The :class:`RunParts`, once the worker has made them."""
        if not self._done:
            if self._split:     # the percentiles the worker has not taken, made here; then the worker's
                self._make_queued()
                ttft, pre = self._side.join()
                made = self._made
                rest = (made["tpot_s"], made["e2e_s"], tuple(made[name] for name in _WAITS))
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


#: the columns of :func:`_rest_parts`, in its order: a gated :class:`PendingParts`'s queue (:meth:`PendingParts.get`)
_REST = ("tpot_s", "e2e_s") + _WAITS


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
