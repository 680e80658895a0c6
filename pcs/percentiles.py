"""``numpy.percentile``'s default (linear) method on one partition, without loading numpy.ma.

``np.percentile`` passes its partition points through ``np.unique``, whose first call in a process imports
numpy.ma (~10-20 ms of a small replay's start-up, benchmarks/bench_startup.py); the replay summaries'
percentiles come from :func:`linear_percentiles` instead, the same numbers to the bit
(tests/test_percentiles.py diffs them against ``np.percentile``). :func:`sorted_linear_percentiles` reads the
same order statistics off an array already sorted (a column sorted once for a CDF serves its percentiles too).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from pcs.errors import UserError, shown_repr

__all__ = ["finite_percentiles", "linear_percentiles", "sorted_finite", "sorted_linear_percentiles"]


def linear_percentiles(values: np.ndarray, levels: Sequence[float], in_place: bool = True) -> list[float]:
    """``np.percentile(values, levels).tolist()``, numpy's default linear method, partitioning ``values`` in place.

    Args:
        values: float64, shape (n,), n >= 1; reordered in place (pass an array that may be reordered) unless
            ``in_place`` is False: then a copy is partitioned, made only when one is (not for a column of zeros).
        levels: percentiles in [0, 100].
    Returns:
        One float per level (Hyndman & Fan 1996 type 7, in numpy's order of operations:
        numpy/lib/_function_base_impl.py ``_quantile``, ``_get_indexes``, ``_lerp``): virtual index
        ``v = (n - 1) * (q / 100)``; ``a``, ``b`` the order statistics at ``floor(v)`` and ``floor(v) + 1``;
        ``a + (b - a) * g``, or ``b - (b - a) * (1 - g)`` when ``g = v - floor(v) >= 0.5``; when ``v >= n - 1``
        ``a = b`` = the largest value and ``g = v + 1``; a NaN at every level when a value is NaN (numpy's rule).
    Raises:
        UserError: no values.

    One partition at each ``floor(v)`` and at ``n - 1`` (NaN sorts last); the order statistic just above each
    ``floor(v)`` is then the smallest value between it and the next partition point (a ``min`` over that stretch,
    cheaper than a partition point of its own: a quarter fewer instructions on a 120,000-value column). When at
    least a quarter of the values are +0.0 and none has its sign bit set (:func:`_zero_block`), only the other
    values are partitioned: the order statistics below the zeros' count are +0.0, the same values.
    """
    virtual, low = _indexes(len(values), levels)
    n = len(values)
    zeros = _zero_block(values)
    if not zeros:
        stats = _windowed(values, low)
        if stats is None:
            stats = _order_stats(values if in_place else values.copy(), low)
        return _read(stats.__getitem__, n, virtual, low)
    rest = values[values != 0]          # the values after the zeros, in sorted order (NaN among them, last)
    if not len(rest):
        return _read(lambda i: 0.0, n, virtual, low)
    low_rest = [max(k - zeros, 0) for k in low if k + 1 >= zeros]
    stats = _windowed(rest, low_rest) or _order_stats(rest, low_rest)
    return _read(lambda i: 0.0 if i < zeros else stats[i - zeros], n, virtual, low)


def finite_percentiles(values: np.ndarray, levels: Sequence[float]) -> list[float] | None:
    """:func:`linear_percentiles` of the finite values of ``values`` (NaN and +-inf dropped), or None when none is.

    Args:
        values: float64, shape (n,); not modified.
        levels: percentiles in [0, 100] (the compiled selection takes 1 to 32 of them; more, or none, go to
            numpy's path).
    Returns:
        One float per level, the numbers :func:`_finite_reference` (numpy's path) gives, to the bit; None when no
        value is finite.
    Raises:
        UserError: a level outside [0, 100] or NaN, on either path (numpy's partition would read a clamped rank).

    The order statistics come from the compiled selection (``pcs.engine._lruscan.order_stats_f64``: the finite
    values copied and a multi-rank quickselect, one C call where numpy's path makes a mask, a copy, a zero count
    and a partition, ~10 numpy calls) when the ``lruscan`` twin is loaded and ``$PCS_NATIVE`` is not ``python``
    (:func:`_compiled_twin`, the rule of :func:`sorted_finite`) and :func:`_selectable` takes the arguments;
    then :func:`_read`'s arithmetic, the same as numpy's path. It returns nothing for a -0.0 among the finite
    values (its place among the +0.0s is numpy's to choose) nor without memory for its copy: numpy's path then."""
    levels = tuple(levels)
    if not all(0 <= x <= 100 for x in levels):
        raise UserError(f"percentile levels must lie in [0, 100], got {shown_repr(levels)}")
    select = _compiled_twin("order_stats_f64") if _selectable(values, levels) else None
    got = None
    if select is not None:
        try:
            got = select(values, levels)
        except MemoryError:
            got = None
    if got is None:
        return _finite_reference(values, levels)
    n, stats = got
    if not n:
        return None
    virtual, low = _indexes(n, levels)
    return _read(stats.__getitem__, n, virtual, low)


#: the most levels the compiled selection takes in one call (``ORDER_MAX_LEVELS`` in pcs/engine/_lruscan.c)
SELECT_MAX_LEVELS = 32


def _selectable(values, levels: tuple) -> bool:
    """Whether the compiled selection takes ``values`` and ``levels`` as they are: a C-contiguous native float64
    ndarray of fewer than :data:`WINDOW_FROM` values (from there numpy's path, windowed, is faster: 40,000 lognormal
    values 0.63 ms against 0.22, the selection's partition mispredicting its branches; below it 0.6-0.9x numpy's
    time), and 1 to :data:`SELECT_MAX_LEVELS` levels that are Python ints or floats (the ranks the C code works
    out in double precision are then :func:`_indexes`' own; a numpy float32 level would be ranked in its own
    precision there)."""
    return type(values) is np.ndarray and values.dtype == np.float64 and values.flags.c_contiguous \
        and values.dtype.isnative and len(values) < WINDOW_FROM and 1 <= len(levels) <= SELECT_MAX_LEVELS \
        and all(type(x) in (int, float) for x in levels)


def _finite_reference(values: np.ndarray, levels: Sequence[float]) -> list[float] | None:
    """:func:`finite_percentiles` by numpy (the reference): the finite values, a fresh copy, partitioned in place
    by :func:`linear_percentiles` (a plain copy when every value is finite: the masked one costs ~17 instructions
    a value, the mask's count and a copy ~3; the plain copy made by :func:`linear_percentiles` only when it
    partitions every value, not for a column mostly of zeros); None when none is finite."""
    finite = np.isfinite(values)
    if np.count_nonzero(finite) == len(values):
        return linear_percentiles(values, levels, in_place=False) if len(values) else None
    values = values[finite]
    if not len(values):
        return None
    return linear_percentiles(values, levels)


#: :func:`_windowed` from this many values: below it one partition of them all costs less than the windows' passes
#: and numpy calls (callgrind, a lognormal column's p50 / p90 / p99: 1.29 M against 1.54 M instructions at 20,000
#: values, 2.18 M against 1.92 M at 30,000, 6.4-6.8 M against 4.7-4.9 M at 120,310)
WINDOW_FROM = 32768
#: the sample :func:`_windowed` sorts: every ``WINDOW_STRIDE``-th value (a 30th of a sort of them all: at 12,000 values
#: a sample of 6,000 cost more than the windows saved)
WINDOW_STRIDE = 32


def _windowed(values: np.ndarray, low: Sequence[int]) -> dict | None:
    """:func:`_order_stats`'s order statistics (at ``len(values) - 1``, each of ``low`` and the index after each)
    without partitioning ``values``: the largest is ``values.max()``; for each ``k`` of ``low``, a sorted sample
    (every :data:`WINDOW_STRIDE`-th value) gives bounds ``lo <= hi`` around rank ``k`` (the sample's rank
    ``k m / n`` +- 4 standard errors of a sample quantile and 2), ``below`` = the values < ``lo`` counted, and the
    ``k``-th and ``k + 1``-th smallest are the ``(k - below)``-th and next of the window ``lo <= v <= hi`` (a few
    per cent of the values), partitioned -- a few vector passes over the values a level instead of numpy's
    introselect over all of them.

    The same values to the bit as :func:`_order_stats`: each is an element of ``values`` of the same rank, and
    elements of equal value have equal bits unless they are zeros of both signs -- a window that holds 0 is
    refused (None), as are fewer than :data:`WINDOW_FROM` values, a NaN (NaN sorts last: :func:`_read`'s rule)
    and a window that misses its rank (the sample was unlucky); the caller then partitions as before.
    Returns: index -> value (float64 scalars), or None."""
    n = len(values)
    if n < WINDOW_FROM:
        return None
    top = values.max()
    if top != top:                      # a NaN
        return None
    sample = np.sort(values[::WINDOW_STRIDE])
    m = len(sample)
    stats = {n - 1: top}
    for k in sorted(set(low)):
        if k >= n - 1 or k in stats and k + 1 in stats:
            continue
        p = (k + 0.5) / n
        r, margin = int(p * m), int(4.0 * math.sqrt(m * p * (1.0 - p))) + 2
        lo, hi = sample[max(r - margin, 0)], sample[min(r + margin, m - 1)]
        if lo <= 0.0 <= hi:
            return None
        under = values < lo
        below = int(np.count_nonzero(under))
        window = values[(values <= hi) & ~under]
        i = k - below
        if i < 0 or i + 1 >= len(window):
            return None
        window.partition([i, i + 1])
        stats[k], stats[k + 1] = window[i], window[i + 1]
    return stats


def _order_stats(values: np.ndarray, low: Sequence[int]) -> dict:
    """index -> value of ``values`` sorted (0-based, NaN last), for ``len(values) - 1``, each of ``low`` and the
    index after each (below ``len(values)``): one partition at ``low`` and the last index, reordering ``values``
    in place; the order statistic just after each partition point is the least value of the stretch up to the
    next one."""
    n = len(values)
    kth = sorted({n - 1, *low})
    values.partition(kth)
    stats = {k: values[k] for k in kth}
    for k, nxt in zip(kth, kth[1:]):    # values[k + 1 .. nxt] lie between the k-th and the nxt-th smallest
        stats.setdefault(k + 1, values[k + 1:nxt + 1].min())
    return stats


def _zero_block(values: np.ndarray) -> int:
    """How many of ``values`` are +0.0 when they are at least a quarter of them and no value has its sign bit
    set (no negative, no -0.0): the sorted values then begin with exactly that many +0.0, and the order
    statistics past them are those of the other values (a wait column is mostly zeros: a partition of its few
    positive values instead of all of them). Else 0: a negative or a -0.0 (equal to +0.0, its place among the
    zeros up to the partition) keeps the one partition of every value."""
    zeros = len(values) - int(np.count_nonzero(values != 0))
    if zeros * 4 < len(values) or bool(np.signbit(values).any()):
        return 0
    return zeros


def sorted_linear_percentiles(values: np.ndarray, levels: Sequence[float]) -> list[float]:
    """:func:`linear_percentiles` of an array already sorted ascending (NaN last, as ``np.sort`` puts it), read
    without moving a value: the same order statistics, the same arithmetic, the same numbers to the bit.

    Args:
        values: float64, shape (n,), n >= 1, sorted ascending (``np.sort`` order); not modified.
        levels: percentiles in [0, 100].
    Returns:
        One float per level, as :func:`linear_percentiles`.
    Raises:
        UserError: no values.
    """
    virtual, low = _indexes(len(values), levels)
    return _read(values.__getitem__, len(values), virtual, low)


def sorted_finite(values: np.ndarray) -> np.ndarray:
    """The finite values of ``values`` (any shape-(n,) numeric array), a fresh float64 array sorted ascending.

    Sorted by the compiled radix sort (``pcs.engine._lruscan.sort_f64``: ~9 ns a value against numpy's ~30 for
    the replay summary's TTFT columns) when the ``lruscan`` twin is loaded and ``$PCS_NATIVE`` is not ``python``
    (:func:`_compiled_sort`) and there are at least :data:`COMPILED_SORT_MIN` values; else, and for values holding
    a -0.0, by ``ndarray.sort`` (the reference). Either way the same array, bit for bit (tests/test_percentiles.py
    diffs them). The choice follows ``$PCS_NATIVE`` (the process's switch), not a replay's ``native=``: the sorts
    run on the summary's worker threads too, which do not see a call's argument; the values are numpy's either
    way."""
    out = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(out)
    # a fresh copy, sorted in place: a plain copy when every value is finite (the masked copy costs ~17
    # instructions a value, the mask's count and a plain copy ~3; pcs.engine.runparts._pcts does the same)
    out = out.copy() if np.count_nonzero(finite) == len(out) else out[finite]
    sort = _compiled_sort() if len(out) >= COMPILED_SORT_MIN else None
    if sort is None or not _sorted_by(sort, out):
        out.sort()
    return out


def _sorted_by(sort, out: np.ndarray) -> bool:
    """Whether the compiled ``sort`` sorted ``out`` (in place): False when it refused (a -0.0: its place among the
    +0.0s is numpy's to choose) or found no memory for its keys (16 bytes a value; nothing moved either way), for
    numpy's in-place sort, which needs none, to sort instead: the same outcome under either switch."""
    try:
        return sort(out)
    except MemoryError:
        return False


#: The fewest values :func:`sorted_finite` hands to the compiled radix sort: below it numpy's sort is as fast or
#: faster (the radix sort's fixed cost is its 96 KiB of digit counts; on the 2-core VM, medians of 200: 512 values
#: 12.1 us against numpy's 4.6, 1,024 16.7 against 13.2, 2,048 26.0 against 33.6, 4,096 45.4 against 83.2).
COMPILED_SORT_MIN = 2048


def _compiled_sort():
    """``pcs.engine._lruscan.sort_f64`` (sorts a fresh C-contiguous float64 array in place; False, nothing moved,
    when it holds a NaN or a -0.0), or None (:func:`_compiled_twin`)."""
    return _compiled_twin("sort_f64")


def _compiled_twin(name: str):
    """The function ``name`` of ``pcs.engine._lruscan``, or None: ``$PCS_NATIVE`` is ``python`` -- or a value no
    replay accepts, which the replay reports, not this --, or the extension is not loaded. It is used only once
    loaded (:func:`pcs._native.loaded`: a one-pass scan loads it, so every one-tier sequential and every two-tier
    replay), never imported here: the summary's sorts and percentiles run on worker threads too, and an import
    there would put the import on that thread's path (and keep the run's columns alive the longer)."""
    from pcs import _native

    try:
        if _native.default_mode() == "python":
            return None
    except UserError:
        return None
    lib = _native.loaded("lruscan")
    return None if lib is None else getattr(lib, name)


def _indexes(n: int, levels: Sequence[float]) -> tuple[list[float], list[int]]:
    """Each level's virtual index ``(n - 1) * (q / 100)`` and its floor (at most n - 1); UserError when n = 0."""
    if not n:
        raise UserError("linear_percentiles: no values")
    virtual = [(n - 1) * (q / 100) for q in levels]
    return virtual, [min(math.floor(v), n - 1) for v in virtual]


def _read(stat, n: int, virtual: list[float], low: list[int]) -> list[float]:
    """numpy's linear interpolation between the order statistics at ``low`` and ``low + 1``; ``stat(i)``: the
    ``i``-th smallest of the ``n`` values (0-based; NaN sorts last), asked for those and for ``n - 1``."""
    if math.isnan(stat(n - 1)):   # NaN sorts last
        return [float(stat(n - 1))] * len(virtual)
    out = []
    for v, lo in zip(virtual, low):
        # past the last index numpy takes the last value on both sides, its gamma counted from index -1
        i, j, g = (n - 1, n - 1, v + 1) if v >= n - 1 else (lo, lo + 1, v - lo)
        a, b = float(stat(i)), float(stat(j))
        diff = b - a
        out.append(b - diff * (1 - g) if g >= 0.5 else a + diff * g)
    return out
