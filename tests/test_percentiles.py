"""``pcs.percentiles.linear_percentiles`` equals ``np.percentile``'s default (linear) method, bit for bit.

The replay summaries (pcs.engine.schedstats, pcs.engine.summary) take their percentiles from it instead of
``np.percentile`` (which loads numpy.ma at start-up); numpy is the independent reference here, and a few
cases are worked out by hand.
"""
from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from pcs.engine.runparts import _pcts
from pcs.errors import UserError
from pcs.percentiles import linear_percentiles, sorted_finite, sorted_linear_percentiles


def _numpy_percentile(values, levels):
    """``np.percentile`` (the reference), its RuntimeWarnings on inf / NaN values silenced: numpy's linear rule
    computes inf - inf there and warns, where its result (NaN) is the value compared."""
    with np.errstate(invalid="ignore"):
        return np.percentile(values, levels)


def test_hand_worked_cases():
    # [0, 10, 20] (any order): virtual index (3 - 1) * q / 100 = 1.0 for p50 -> the middle value 10; 1.8 for p90:
    # g = 0.8 >= 0.5, so 20 - (20 - 10) * (1 - 0.8) = 18 up to the last bit; 0 for p0 -> 0; 2 for p100 -> 20.
    p0, p50, p90, p100 = linear_percentiles(np.array([20.0, 0.0, 10.0]), (0, 50, 90, 100))
    assert (p0, p50, p100) == (0.0, 10.0, 20.0) and p90 == pytest.approx(18.0, abs=1e-12)
    # one value: every level is that value; a NaN anywhere: NaN at every level (numpy's rule)
    assert linear_percentiles(np.array([3.5]), (1, 50, 99)) == [3.5, 3.5, 3.5]
    assert all(math.isnan(v) for v in linear_percentiles(np.array([1.0, np.nan, 2.0]), (10, 90)))
    with pytest.raises(UserError, match="no values"):
        linear_percentiles(np.zeros(0), (50,))


def test_scheduler_percentiles_skip_non_finite_values():
    # the scheduler summary reports the finite values only: [inf, 1, 3, nan] -> [1, 3]: p50 = 1 + 2 * 0.5 = 2.0
    p = _pcts(np.array([np.inf, 1.0, 3.0, np.nan]))
    assert p.p50 == 2.0
    none = _pcts(np.array([np.inf, np.nan]))
    assert (none.p50, none.p90, none.p99) == (None, None, None)


_LEVELS = st.lists(st.floats(0, 100) | st.sampled_from([0, 50, 90, 99, 100]), min_size=1, max_size=5)
_VALUES = arrays(np.float64, st.integers(1, 300),
                 elements=st.floats(-1e12, 1e12) | st.sampled_from([np.nan, np.inf, -np.inf, 0.0]))


@settings(max_examples=400, deadline=None)
@given(_VALUES, _LEVELS)
def test_equal_to_numpy_percentile(values, levels):
    _assert_as_numpy(values, levels)


def _assert_as_numpy(values, levels) -> None:
    """linear_percentiles of ``values`` (float64, shape (n,)) at ``levels`` (%) equal numpy.percentile's (its
    default linear method), NaN where numpy gives NaN."""
    want = _numpy_percentile(values, levels).tolist()
    got = linear_percentiles(values.copy(), levels)
    assert np.array_equal(np.array(got), np.array(want), equal_nan=True), (got, want)


@pytest.mark.parametrize("n", [2, 3, 7, 100, 101, 1000])
def test_equal_to_numpy_with_ties_and_many_sizes(n):
    rng = np.random.default_rng(n)
    values = np.round(rng.exponential(0.2, n), 3)   # ties at 3 decimals
    assert linear_percentiles(values.copy(), (50, 90, 99)) == _numpy_percentile(values, [50, 90, 99]).tolist()
    p = _pcts(values.copy())
    assert (p.p50, p.p90, p.p99) == tuple(_numpy_percentile(values, [50, 90, 99]).tolist())


def test_sorted_twin_hand_worked():
    # read off an array already sorted, nothing moved: [0, 10, 20] p50 = 10, p90 = 20 - 10 x 0.2 = 18, p100 = 20;
    # a NaN (np.sort puts it last) gives NaN at every level
    values = np.array([0.0, 10.0, 20.0])
    p0, p50, p90, p100 = sorted_linear_percentiles(values, (0, 50, 90, 100))
    assert (p0, p50, p100) == (0.0, 10.0, 20.0) and p90 == pytest.approx(18.0, abs=1e-12)
    assert values.tolist() == [0.0, 10.0, 20.0]
    assert all(math.isnan(v) for v in sorted_linear_percentiles(np.array([1.0, 2.0, np.nan]), (10, 90)))
    with pytest.raises(UserError, match="no values"):
        sorted_linear_percentiles(np.zeros(0), (50,))


def test_sorted_finite_keeps_the_finite_values_in_order():
    # [3, inf, nan, -1, 2, -inf] -> [-1, 2, 3], a fresh float64 copy (the int input is converted)
    values = np.array([3.0, np.inf, np.nan, -1.0, 2.0, -np.inf])
    assert sorted_finite(values).tolist() == [-1.0, 2.0, 3.0] and np.isinf(values[1])
    out = sorted_finite(np.array([5, 1, 3]))
    assert out.dtype == np.float64 and out.tolist() == [1.0, 3.0, 5.0]


@settings(max_examples=400, deadline=None)
@given(_VALUES, _LEVELS)
def test_sorted_twin_equal_to_numpy_percentile(values, levels):
    # np.sort's order (NaN last, -inf first, +inf before NaN) is the order the twin reads
    want = _numpy_percentile(values, levels).tolist()
    got = sorted_linear_percentiles(np.sort(values), levels)
    assert np.array_equal(np.array(got), np.array(want), equal_nan=True), (got, want)


def test_each_level_reads_the_next_order_statistic_off_its_stretch():
    # 0..9 shuffled, n = 10: p50 v = 9 x 0.5 = 4.5 -> the 4th and 5th smallest (0-based) 4 and 5, g = 0.5 >= 0.5:
    # 5 - (5 - 4) x 0.5 = 4.5; p90 v = 8.1 -> 8 and 9, g ~ 0.1: 8 + 1 x 0.1 = 8.1; p99 v = 8.91 -> 9 - 1 x 0.09 = 8.91.
    # Partitioned at 4, 8 and 9 only: the 5th smallest is the least of positions 5..8, the 9th the value at 9.
    values = np.array([9.0, 1.0, 8.0, 2.0, 7.0, 3.0, 6.0, 4.0, 5.0, 0.0])
    p50, p90, p99 = linear_percentiles(values, (50, 90, 99))
    assert p50 == 4.5 and p90 == pytest.approx(8.1, abs=1e-12) and p99 == pytest.approx(8.91, abs=1e-12)
    assert sorted(values.tolist()) == list(range(10))        # reordered in place, the same values
    # n = 11 (0..10): p50 v = 5 -> 5 (and 6, weight 0); p60 v = 6 -> 6: one level's next statistic is the other's
    assert linear_percentiles(np.array([10.0, 3, 7, 0, 5, 8, 1, 6, 9, 2, 4]), (50, 60)) == [5.0, 6.0]
    # ties: [2, 2, 2, 1, 3] sorted [1, 2, 2, 2, 3]: p50 v = 2 -> 2; p90 v = 3.6 -> 2 and 3, g ~ 0.6: 3 - 1 x 0.4 = 2.6
    p50, p90 = linear_percentiles(np.array([2.0, 2.0, 2.0, 1.0, 3.0]), (50, 90))
    assert p50 == 2.0 and p90 == pytest.approx(2.6, abs=1e-12)


def test_scheduler_percentiles_leave_an_all_finite_column_as_it_was():
    # every value finite: a plain copy is partitioned, never the column; [3, 1, 2]: p50 v = 1 -> 2; p90 v = 1.8 ->
    # 3 - (3 - 2) x 0.2 = 2.8; p99 v = 1.98 -> 3 - 1 x 0.02 = 2.98
    column = np.array([3.0, 1.0, 2.0])
    p = _pcts(column)
    assert p.p50 == 2.0 and p.p90 == pytest.approx(2.8, abs=1e-12) and p.p99 == pytest.approx(2.98, abs=1e-12)
    assert column.tolist() == [3.0, 1.0, 2.0]


def test_a_mostly_zero_column_partitions_only_its_other_values(monkeypatch):
    # [0 x 7, 10, 5] sorted [0, 0, 0, 0, 0, 0, 0, 5, 10], n = 9: p50 v = 4 -> 0; p90 v = 7.2 -> 5 and 10, g ~ 0.2:
    # 5 + 5 x 0.2 = 6; p99 v = 7.92 -> g ~ 0.92 >= 0.5: 10 - 5 x 0.08 = 9.6. Seven zeros of nine (at least a
    # quarter, no sign bit set): only [10, 5] is partitioned.
    import pcs.percentiles as pct

    seen = []
    real = pct._order_stats
    monkeypatch.setattr(pct, "_order_stats", lambda values, low: seen.append(sorted(values.tolist())) or real(values, low))
    p50, p90, p99 = linear_percentiles(np.array([0.0, 0.0, 10.0, 0.0, 0.0, 0.0, 5.0, 0.0, 0.0]), (50, 90, 99))
    assert p50 == 0.0 and p90 == pytest.approx(6.0, abs=1e-12) and p99 == pytest.approx(9.6, abs=1e-12)
    assert seen == [[5.0, 10.0]]
    # every value zero: every level 0.0, nothing partitioned
    assert linear_percentiles(np.zeros(8), (50, 90, 99)) == [0.0, 0.0, 0.0] and seen == [[5.0, 10.0]]
    # a NaN among the other values sorts last: NaN at every level, as numpy gives
    assert all(math.isnan(v) for v in linear_percentiles(np.array([0.0, 0.0, 0.0, np.nan]), (10, 50)))


def test_a_sign_bit_keeps_the_partition_of_every_value():
    # -0.0 equals 0.0, so its place among the zeros is the partition's: not the zero block; nor with a negative
    from pcs.percentiles import _zero_block

    assert _zero_block(np.array([0.0, 0.0, 0.0, 1.0])) == 3
    assert _zero_block(np.array([0.0, -0.0, 0.0, 1.0])) == 0
    assert _zero_block(np.array([0.0, 0.0, 0.0, -1.0])) == 0
    assert _zero_block(np.array([0.0, 1.0, 2.0, 3.0, 4.0])) == 0        # one zero of five: below a quarter
    # [-1, 0, 0, 0] sorted: p50 v = 1.5 -> 0 and 0: 0.0; p0 -> -1.0
    assert linear_percentiles(np.array([0.0, 0.0, -1.0, 0.0]), (0, 50)) == [-1.0, 0.0]


_MOSTLY_ZERO = arrays(np.float64, st.integers(1, 300),
                      elements=st.sampled_from([0.0, 0.0, 0.0, -0.0, np.nan, np.inf]) | st.floats(-1e3, 1e12))


@settings(max_examples=400, deadline=None)
@given(_MOSTLY_ZERO, _LEVELS)
def test_mostly_zero_columns_equal_to_numpy_percentile(values, levels):
    _assert_as_numpy(values, levels)


def test_sorted_finite_of_an_all_finite_column_is_a_sorted_copy():
    # [3, 1, 2] all finite: [1, 2, 3], the column left as it was
    column = np.array([3.0, 1.0, 2.0])
    assert sorted_finite(column).tolist() == [1.0, 2.0, 3.0] and column.tolist() == [3.0, 1.0, 2.0]


def test_not_in_place_leaves_the_values_as_they_were():
    # [3, 1, 2, 0]: p50 v = 1.5 -> 1 and 2, g = 0.5: 2 - 1 x 0.5 = 1.5; the array keeps its order
    values = np.array([3.0, 1.0, 2.0, 0.0])
    assert linear_percentiles(values, (50,), in_place=False) == [1.5] and values.tolist() == [3.0, 1.0, 2.0, 0.0]


def test_a_long_column_is_read_off_windows_not_partitioned(monkeypatch):
    # 0..39,999 shuffled (n = 40,000 >= WINDOW_FROM): p50 v = 39,999 x 0.5 = 19,999.5 -> 19,999 and 20,000, g = 0.5:
    # 20,000 - 1 x 0.5 = 19,999.5; p90 v = 35,999.1 -> 35,999 + 1 x 0.1; p99 v = 39,599.01 -> 39,599 + 1 x 0.01;
    # p100 the largest, 39,999. No partition of the whole column (_order_stats refused here) and the column keeps
    # its order.
    import pcs.percentiles as pct

    def refused(values, low):
        raise AssertionError("partitioned every value")

    monkeypatch.setattr(pct, "_order_stats", refused)
    values = np.random.default_rng(5).permutation(40_000).astype(np.float64)
    before = values.copy()
    p50, p90, p99, p100 = linear_percentiles(values, (50, 90, 99, 100))
    assert p50 == 19999.5 and p100 == 39999.0
    assert p90 == pytest.approx(35999.1, abs=1e-9) and p99 == pytest.approx(39599.01, abs=1e-9)
    assert np.array_equal(values, before)


def test_windows_refused_where_the_bits_could_differ():
    # a window holding 0 (zeros of both signs compare equal: which one a partition puts at a rank is its own
    # business), a NaN, too few values: None, the caller partitions as before
    from pcs.percentiles import WINDOW_FROM, _windowed

    n = WINDOW_FROM
    assert _windowed(np.arange(n, dtype=np.float64) - n / 2, [n // 2]) is None      # p50 at 0
    with_nan = np.arange(n, dtype=np.float64)
    with_nan[7] = np.nan
    assert _windowed(with_nan, [n // 2]) is None
    assert _windowed(np.arange(n - 1, dtype=np.float64), [n // 2]) is None
    stats = _windowed(np.arange(n, dtype=np.float64)[::-1].copy(), [n // 2, n - 2])
    assert stats == {n - 1: n - 1.0, n // 2: n // 2, n // 2 + 1: n // 2 + 1, n - 2: n - 2.0}


def _long_columns():
    """Long columns (>= WINDOW_FROM values) shaped like a replay's: in arrival order, rising (queueing), falling,
    lognormal, ties at 3 decimals, a sawtooth whose period is the sample's stride, zeros and negatives of both
    signs, non-finite values."""
    from pcs.percentiles import WINDOW_FROM

    rng = np.random.default_rng(28)
    n = 120_310
    logn = rng.lognormal(0.0, 2.0, n)
    saw = np.tile(np.arange(32, dtype=np.float64), n // 32 + 1)[:n]   # WINDOW_STRIDE: every sample the same value
    signed = rng.normal(0.0, 1.0, n)
    signed[::3] = 0.0
    signed[::7] = -0.0
    holes = logn.copy()
    holes[::1000] = np.inf
    holes[5] = -np.inf
    return {"lognormal": logn, "rising": np.cumsum(logn), "falling": np.cumsum(logn)[::-1].copy(),
            "ties": np.round(rng.exponential(0.2, n), 3), "sawtooth": saw, "signed": signed, "holes": holes,
            "nan": np.where(np.arange(n) == 77, np.nan, logn), "short": logn[:WINDOW_FROM - 1],
            "at_limit": logn[:WINDOW_FROM]}


@pytest.mark.parametrize("name", sorted(_long_columns()))
def test_long_columns_equal_to_numpy_percentile_and_to_the_partition_bit_for_bit(name, monkeypatch):
    import pcs.percentiles as pct

    values = _long_columns()[name]
    finite = values[np.isfinite(values)]
    for levels in ((50, 90, 99), (0, 1, 25, 50, 75, 99.9, 100), (33.3,)):
        _assert_as_numpy(values, list(levels))
        got = np.array(linear_percentiles(values.copy(), levels))
        p = _pcts(values.copy())
        with monkeypatch.context() as m:        # the partition of every value, as before the windows
            m.setattr(pct, "_windowed", lambda values, low: None)
            want = np.array(linear_percentiles(values.copy(), levels))
            q = _pcts(values.copy())
        assert got.tobytes() == want.tobytes()
        assert (p.p50, p.p90, p.p99) == tuple(_numpy_percentile(finite, [50, 90, 99]).tolist())
        assert np.array([p.p50, p.p90, p.p99]).tobytes() == np.array([q.p50, q.p90, q.p99]).tobytes()


_sort_f64 = pytest.importorskip("pcs.engine._lruscan").sort_f64


def test_compiled_sort_by_hand():
    # the keys order as the values: -inf, a negative, another, +0.0, the smallest subnormal, 3, +inf
    values = np.array([3.0, -1.0, np.inf, -np.inf, 0.0, 5e-324, -2.5])
    assert _sort_f64(values) is True
    assert values.tolist() == [-np.inf, -2.5, -1.0, 0.0, 5e-324, 3.0, np.inf]
    # one value, none: nothing to move; a -0.0 or a NaN: refused, nothing moved (numpy sorts those)
    for one in ([7.0], []):
        v = np.array(one)
        assert _sort_f64(v) is True and v.tolist() == one
    for refused in ([1.0, -0.0, 0.0], [2.0, np.nan, 1.0], [-0.0], [np.nan]):
        v = np.array(refused)
        assert _sort_f64(v) is False and v.tobytes() == np.array(refused).tobytes()


_SORTABLE = arrays(np.float64, st.integers(0, 3000), elements=st.one_of(
    st.floats(allow_nan=False).filter(lambda x: not (x == 0.0 and math.copysign(1.0, x) < 0)),
    st.sampled_from([0.0, 1.0, 0.25, -3.0, 5e-324, -5e-324, np.inf, -np.inf, 2.0 ** 1023, -(2.0 ** -1022)])))


@settings(max_examples=300, deadline=None)
@given(_SORTABLE)
def test_compiled_sort_equals_numpy_sort(values):
    # the radix sort of the bits gives numpy's sort bit for bit (no NaN, no -0.0: the values it takes)
    mine = values.copy()
    assert _sort_f64(mine) is True and mine.tobytes() == np.sort(values).tobytes()


def test_compiled_sort_on_replay_sized_columns():
    # 12,031 and 120,310 values of TTFT-like shape (a few distinct magnitudes, repeats): numpy's sort, bit for bit
    rng = np.random.default_rng(5)
    for n in (12_031, 120_310):
        values = np.round(rng.lognormal(-1.0, 1.5, n), int(rng.integers(3, 9)))
        mine = values.copy()
        assert _sort_f64(mine) is True and mine.tobytes() == np.sort(values).tobytes()


def test_sorted_finite_twins_agree(monkeypatch):
    # sorted_finite sorts with the compiled sort by default and with numpy under PCS_NATIVE=python; the same
    # array either way, a -0.0 among the values included (the compiled sort refuses it: numpy sorts)
    from pcs import _native, percentiles

    _native.module("lruscan")     # loaded (a scan loads it): sorted_finite never imports it itself
    rng = np.random.default_rng(9)
    cases = [rng.uniform(-5, 5, 5000), np.concatenate([rng.uniform(0, 1, 3000), [-0.0, 0.0, np.nan, np.inf]])]
    got = {}
    for mode in ("auto", "python"):
        monkeypatch.setenv("PCS_NATIVE", mode)
        assert (percentiles._compiled_sort() is None) == (mode == "python")
        got[mode] = [sorted_finite(c).tobytes() for c in cases]
    assert got["auto"] == got["python"] == [np.sort(c[np.isfinite(c)]).tobytes() for c in cases]
    monkeypatch.setenv("PCS_NATIVE", "bogus")     # a replay refuses it; the sort falls back to numpy quietly
    assert percentiles._compiled_sort() is None and sorted_finite(cases[0]).tobytes() == got["python"][0]


def test_compiled_sort_refuses_buffers_that_are_not_native_float64():
    # only native float64 items are sorted; any other writable contiguous buffer whose length is a multiple of 8
    # bytes (float32, big-endian float64, int64, complex128) is refused with a TypeError and left as it was (the
    # first version sorted them as float64 bits: float32 [4, 3, 2, 1] became [2, 1, 4, 3])
    for values in (np.array([4.0, 3.0, 2.0, 1.0], np.float32), np.array([3.0, 1.0, 2.0], ">f8"),
                   np.array([3, 1, 2], np.int64), np.array([1 + 2j, 0j])):
        before = values.tobytes()
        with pytest.raises(TypeError, match="native float64"):
            _sort_f64(values)
        assert values.tobytes() == before
    little = np.array([3.0, 1.0, 2.0], "<f8")     # native on this machine when little-endian
    if sys.byteorder == "little":
        assert _sort_f64(little) is True and little.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises((TypeError, ValueError)):       # numpy refuses the export: not C-contiguous / read-only
        _sort_f64(np.arange(4.0)[::2])          # strided
    frozen = np.arange(4.0)
    frozen.flags.writeable = False
    with pytest.raises((TypeError, ValueError)):
        _sort_f64(frozen)


def test_compiled_sort_of_one_array_by_several_threads_does_not_crash():
    # four threads sorting one shared array at once: the values written back may be any thread's (as with numpy's
    # sort), but no key leaves its private buffer (the first version read digits from the shared array after
    # counting them and wrote out of bounds: SIGSEGV in 3 of 3 runs); run in a child so a crash fails the test
    code = ("import threading, numpy as np; from pcs.engine._lruscan import sort_f64 as s; "
            "a = np.random.default_rng(3).lognormal(0, 2, 2_000_000); "
            "t = [threading.Thread(target=lambda: [s(a) for _ in range(3)]) for _ in range(4)]; "
            "[x.start() for x in t]; [x.join() for x in t]; print(np.isfinite(a).all())")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "True", (out.returncode, out.stderr[-500:])


def test_short_columns_are_sorted_by_numpy(monkeypatch):
    # below COMPILED_SORT_MIN values numpy's sort is the faster one (the radix sort's fixed cost): the compiled sort
    # is not asked; at the bound it is
    from pcs import percentiles

    asked = []
    monkeypatch.setattr(percentiles, "_compiled_sort", lambda: (lambda a: asked.append(len(a)) or False))
    n = percentiles.COMPILED_SORT_MIN
    for size in (2, n - 1, n):
        values = np.random.default_rng(size).uniform(-1, 1, size)
        assert sorted_finite(values).tobytes() == np.sort(values).tobytes()
    assert asked == [n]


def test_no_memory_for_the_compiled_sort_falls_back_to_numpy(monkeypatch):
    # the compiled sort needs 16 bytes a value for its keys; when it has none it moves nothing and raises
    # MemoryError, and sorted_finite sorts with numpy in place, as under PCS_NATIVE=python (was: MemoryError)
    from pcs import percentiles

    def no_room(a):
        raise MemoryError

    monkeypatch.setattr(percentiles, "_compiled_sort", lambda: no_room)
    values = np.random.default_rng(4).uniform(-1, 1, 3000)
    assert sorted_finite(values).tobytes() == np.sort(values).tobytes()


def test_compiled_sort_of_an_unaligned_buffer():
    # a float64 view starting at an odd byte: read and written byte-wise (memcpy), numpy's order bit for bit
    values = np.random.default_rng(6).uniform(-9, 9, 5000)
    for offset in (1, 3, 4):
        raw = np.zeros(8 * len(values) + 8, np.uint8)
        view = raw[offset:offset + 8 * len(values)].view(np.float64)
        view[:] = values
        assert _sort_f64(view) is True and view.tobytes() == np.sort(values).tobytes()
