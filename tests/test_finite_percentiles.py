"""pcs.percentiles.finite_percentiles and its compiled selection (pcs.engine._lruscan.order_stats_f64): the
percentiles of a column's finite values, numpy's linear method, the same numbers to the bit as numpy's path."""
from __future__ import annotations

import math
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from pcs import percentiles
from pcs.engine.runparts import _pcts
from pcs.errors import UserError
from pcs.percentiles import finite_percentiles

_lruscan = pytest.importorskip("pcs.engine._lruscan")
_select = _lruscan.order_stats_f64


def _numpy_finite(values, levels):
    """The reference, worked out apart from pcs: ``np.percentile`` of the finite values, or None when none is."""
    finite = values[np.isfinite(values)]
    return np.percentile(finite, levels).tolist() if len(finite) else None


def _bits(xs):
    return None if xs is None else np.array(xs, dtype=np.float64).tobytes()


def _linear_ranks(m, levels):
    """The 0-based ranks numpy's linear method reads among m sorted values for ``levels``: floor((m - 1) q / 100)
    and the one after it (when there is one) for each level, and the last, m - 1."""
    low = {min(math.floor((m - 1) * (q / 100)), m - 1) for q in levels}
    return {m - 1} | low | {k + 1 for k in low if k + 1 < m}


@pytest.fixture(autouse=True)
def _compiled_loaded(monkeypatch):
    """The compiled twin loaded (a scan loads it; finite_percentiles never imports it) and ``$PCS_NATIVE`` unset."""
    from pcs import _native

    _native.module("lruscan")
    monkeypatch.delenv("PCS_NATIVE", raising=False)


def test_selection_by_hand():
    # [3, nan, 1, inf, 2]: finite [1, 2, 3], m = 3. p50: v = 2 x 0.5 = 1.0 -> rank 1 and 2; the last rank 2:
    # {1: 2.0, 2: 3.0}. p0: rank 0 and 1 -> {0: 1.0, 1: 2.0, 2: 3.0}
    values = np.array([3.0, np.nan, 1.0, np.inf, 2.0])
    assert _select(values, (50,)) == (3, {1: 2.0, 2: 3.0})
    assert _select(values, (0, 50)) == (3, {0: 1.0, 1: 2.0, 2: 3.0})
    assert values.tobytes() == np.array([3.0, np.nan, 1.0, np.inf, 2.0]).tobytes()     # not moved
    # p90 of [1, 2, 3]: v = 1.8 -> ranks 1, 2; 3 - (3 - 2) x (1 - 0.8) = 2.8 (up to the last bit)
    assert finite_percentiles(values, (90,)) == pytest.approx([2.8], abs=1e-12)
    # no finite value: (0, {}) and None; a -0.0 among them: None (numpy's path decides its place)
    assert _select(np.array([np.nan, -np.inf]), (50,)) == (0, {})
    assert _select(np.zeros(0), (50,)) == (0, {})
    assert finite_percentiles(np.array([np.nan]), (50,)) is None
    assert _select(np.array([1.0, -0.0, 2.0]), (50,)) is None


def test_zeros_before_the_other_values_and_negatives_among_them():
    # [0 x 7, 10, 5]: sorted [0 x 7, 5, 10], m = 9; p90 v = 7.2 -> ranks 7 (5.0) and 8 (10.0); p50 v = 4 -> 0.0
    values = np.array([0.0, 0.0, 10.0, 0.0, 0.0, 0.0, 5.0, 0.0, 0.0])
    assert _select(values, (50, 90)) == (9, {4: 0.0, 5: 0.0, 7: 5.0, 8: 10.0})
    # a negative value: the zeros lie after it; [-1, 0, 0, 4] p50 v = 1.5 -> ranks 1, 2 (0.0, 0.0); p0 -> -1.0
    assert _select(np.array([0.0, 4.0, -1.0, 0.0]), (0, 50)) == (4, {0: -1.0, 1: 0.0, 2: 0.0, 3: 4.0})
    assert np.signbit(_select(np.zeros(5), (50,))[1][2]) == np.False_       # +0.0, not -0.0


_LEVELS = st.lists(st.floats(0, 100) | st.sampled_from([0, 50, 90, 99, 100]), min_size=1, max_size=6)
_VALUES = arrays(np.float64, st.integers(0, 400), elements=st.one_of(
    st.floats(-1e12, 1e12), st.sampled_from([np.nan, np.inf, -np.inf, 0.0, 0.0, -0.0, 1.0, 1.0, 2.5, 5e-324])))


@settings(max_examples=600, deadline=None)
@given(_VALUES, _LEVELS)
def test_equal_to_numpy_percentile_of_the_finite_values(values, levels):
    # the numbers of numpy's path (pcs's previous rule) bit for bit, and np.percentile's: bit for bit without a
    # -0.0 (the compiled path), equal values with one (a zero's sign is then the partition's; numpy's path's)
    before = values.tobytes()
    got = finite_percentiles(values, levels)
    assert _bits(got) == _bits(percentiles._finite_reference(values, levels))
    want = _numpy_finite(values, levels)
    if np.any((values == 0) & np.signbit(values)):
        assert got == want
    else:
        assert _bits(got) == _bits(want)
    assert values.tobytes() == before


@settings(max_examples=300, deadline=None)
@given(_VALUES, _LEVELS)
def test_selection_gives_the_order_statistics_numpy_sorts(values, levels):
    # each returned rank holds the value np.sort puts there (the finite values; refused only with a -0.0)
    finite = values[np.isfinite(values)]
    got = _select(values, levels)
    if np.any((finite == 0) & np.signbit(finite)):
        assert got is None
        return
    m, stats = got
    assert m == len(finite)
    ordered = np.sort(finite)
    assert {k: ordered[k].tobytes() for k in stats} == {k: np.float64(v).tobytes() for k, v in stats.items()}
    if m:
        assert set(stats) == _linear_ranks(m, levels)


@pytest.mark.parametrize("shape", ["sorted", "reversed", "equal", "organ", "two_values", "trend", "lognormal"])
@pytest.mark.parametrize("n", [17, 12_031, 70_000])
def test_hard_orders_and_the_long_path(shape, n):
    # orders a quickselect handles worst (sorted, reversed, all equal, organ pipe, two values, a noisy trend),
    # and 70,000 values (finite_percentiles then takes numpy's path, WINDOW_FROM): numpy's numbers, the input
    # unchanged
    rng = np.random.default_rng(n)
    values = {"sorted": np.arange(n, dtype=np.float64), "reversed": np.arange(n, 0, -1, dtype=np.float64),
              "equal": np.full(n, 2.5), "organ": np.concatenate([np.arange(n // 2), np.arange(n - n // 2, 0, -1)]),
              "two_values": rng.integers(0, 2, n).astype(np.float64),
              "trend": np.arange(n) + rng.normal(0, 50, n), "lognormal": rng.lognormal(0, 2, n)}[shape]
    values = np.ascontiguousarray(values, dtype=np.float64)
    before = values.tobytes()
    levels = (50, 90, 99)
    assert _bits(finite_percentiles(values, levels)) == _bits(np.percentile(values, levels).tolist())
    p = _pcts(values)
    assert _bits([p.p50, p.p90, p.p99]) == _bits(np.percentile(values, levels).tolist())
    assert values.tobytes() == before


@pytest.mark.parametrize("shape", ["lognormal", "organ", "with_nan_inf_and_zeros"])
@pytest.mark.parametrize("n", [65_536, 120_310])
def test_the_selection_without_the_gil_equals_np_sort(shape, n):
    # from 65,536 values the C selection releases the GIL (pcs asks it only below 32,768, a direct caller may
    # pass more): each rank it returns holds np.sort's value there, bit for bit, and the ranks are the ones the
    # linear method reads -- floor((m - 1) q / 100), the next one, and the last -- as in the test above
    rng = np.random.default_rng(n)
    values = {"lognormal": rng.lognormal(0, 2, n),
              "organ": np.concatenate([np.arange(n // 2), np.arange(n - n // 2, 0, -1)]).astype(np.float64),
              "with_nan_inf_and_zeros": np.where(rng.random(n) < 0.3, 0.0, rng.normal(0, 1, n))}[shape]
    if shape == "with_nan_inf_and_zeros":
        values[rng.integers(0, n, 500)] = np.nan
        values[rng.integers(0, n, 50)] = np.inf
    values = np.ascontiguousarray(values)
    before = values.tobytes()
    levels = (0, 50, 90, 99, 100)
    m, stats = _select(values, levels)
    finite = np.sort(values[np.isfinite(values)])
    assert m == len(finite)
    assert set(stats) == _linear_ranks(m, levels)
    assert _bits([stats[k] for k in sorted(stats)]) == _bits(finite[sorted(stats)].tolist())
    assert values.tobytes() == before


@pytest.fixture
def asked(monkeypatch):
    """The lengths of the arrays finite_percentiles hands to the compiled selection, in order (a spy on
    ``percentiles._compiled_twin``)."""
    lengths = []
    real = percentiles._compiled_twin

    def spy(name):
        fn = real(name)
        return None if fn is None else (lambda v, lv: lengths.append(len(v)) or fn(v, lv))

    monkeypatch.setattr(percentiles, "_compiled_twin", spy)
    return lengths


def test_the_compiled_path_is_taken_and_follows_pcs_native(monkeypatch, asked):
    # finite_percentiles asks the compiled selection when it is loaded, not under PCS_NATIVE=python, nor for an
    # array it cannot read as it is (float32, strided); the numbers are numpy's either way
    values = np.random.default_rng(3).uniform(0, 1, 1000)
    want = _bits(np.percentile(values, (50, 90, 99)).tolist())
    assert _bits(finite_percentiles(values, (50, 90, 99))) == want and asked == [1000]
    assert _bits(finite_percentiles(values.astype(np.float32), (50,))) == \
        _bits(np.percentile(values.astype(np.float32), (50,)).tolist()) and asked == [1000]
    assert _bits(finite_percentiles(values[::2], (50,))) == _bits(np.percentile(values[::2], (50,)).tolist())
    assert asked == [1000]
    monkeypatch.setenv("PCS_NATIVE", "python")
    assert _bits(finite_percentiles(values, (50, 90, 99))) == want and asked == [1000]


def test_the_compiled_path_only_below_the_windowed_size_and_for_plain_levels(asked):
    # from WINDOW_FROM (32,768) values numpy's windowed path is faster (40,000 lognormal values: 0.63 against
    # 0.22 ms), so the selection is asked below it only; levels that are numpy scalars go to numpy's path (a
    # float32 level ranked in double precision in C is not the rank Python asks for: a KeyError before)
    rng = np.random.default_rng(7)
    for n in (32_767, 32_768, 40_000):
        values = rng.lognormal(0, 1, n)
        assert _bits(finite_percentiles(values, (50, 90, 99))) == _bits(np.percentile(values, (50, 90, 99)).tolist())
    assert asked == [32_767]
    for n, level in ((1001, np.float32(33.3)), (12_031, np.float16(33.3)), (5000, np.float64(33.3))):
        values = rng.lognormal(0, 1, n)
        assert _bits(finite_percentiles(values, [level])) == _bits(percentiles._finite_reference(values, [level]))
    assert asked == [32_767]
    values = rng.lognormal(0, 1, 1001)
    assert _bits(finite_percentiles(values, [50, 90.0])) == _bits(np.percentile(values, (50, 90)).tolist())
    assert asked == [32_767, 1001]


@pytest.mark.parametrize("native", ["auto", "python"])
@pytest.mark.parametrize("n", [10, 40_000])
def test_levels_refused_and_many_levels_alike_on_both_paths(monkeypatch, asked, native, n):
    # a level outside [0, 100] (or NaN) is refused on either path -- numpy's partition alone would read a clamped
    # rank (101 -> the largest value) --; 33 levels (past the selection's 32) and none go to numpy's path
    monkeypatch.setenv("PCS_NATIVE", native)
    values = np.arange(float(n))
    for levels in ((101,), (-1,), (50, float("nan"))):
        with pytest.raises(UserError, match=r"\[0, 100\]"):
            finite_percentiles(values, levels)
    many = tuple(range(33))
    assert _bits(finite_percentiles(values, many)) == _bits(np.percentile(values, many).tolist())
    assert finite_percentiles(values, ()) == []
    assert asked == []


def test_levels_emptied_while_read_are_no_crash():
    # a level whose __float__ empties the caller's list: the C code reads its own tuple of the levels, so the
    # items stay alive (a segfault when it read the list's borrowed items)
    levels = []

    class Clearing:
        def __float__(self):
            levels.clear()
            return 50.0

    levels[:] = [Clearing(), 90.0, 99.0]
    values = np.arange(1001.0)
    # sorted 0..1000, m = 1001: p50 v = 500 -> ranks 500, 501; p90 v = 900 -> 900, 901; p99 v = 990 -> 990, 991
    assert _select(values, levels) == (1001, {k: float(k) for k in (500, 501, 900, 901, 990, 991, 1000)})


def test_no_memory_falls_back_to_numpy(monkeypatch):
    def no_room(values, levels):
        raise MemoryError

    monkeypatch.setattr(percentiles, "_compiled_twin", lambda name: no_room)
    values = np.random.default_rng(4).uniform(-1, 1, 3000)
    assert _bits(finite_percentiles(values, (50, 99))) == _bits(np.percentile(values, (50, 99)).tolist())


def test_refused_arguments():
    values = np.arange(10.0)
    for levels in ((), (101,), (-1,), (float("nan"),), tuple(range(33))):
        with pytest.raises(ValueError):
            _select(values, levels)
    with pytest.raises(TypeError):
        _select(values, ("50",))
    with pytest.raises(TypeError):
        _select(values.astype(np.float32), (50,))
    with pytest.raises((ValueError, BufferError)):
        _select(values[::2], (50,))
    frozen = values.copy()
    frozen.flags.writeable = False                  # read only: read, never written
    assert _select(frozen, (50,)) == (10, {4: 4.0, 5: 5.0, 9: 9.0})


def test_one_array_read_by_several_threads():
    # the caller's array is only read (into a private copy): threads selecting from one array agree
    values = np.random.default_rng(8).lognormal(0, 1, 80_000)
    want = _select(values, (50, 90, 99))
    out = []
    threads = [threading.Thread(target=lambda: out.append(_select(values, (50, 90, 99)))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == [want] * 4
