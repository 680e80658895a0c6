"""The envelope's TTFT and wait percentiles read off the scheduler's (pcs.engine.summary._p50_p99_of).

Under the step scheduler ``scheduler.with_cache.ttft_s`` and ``scheduler.wait_kv_s`` are the linear percentiles of
the finite values of the same columns as ``envelope.ttft_p*_s`` and ``envelope.wait_p*_s``; when every value is
finite the summary takes them instead of partitioning the column again. Values here are worked out by hand with
numpy's linear method (Hyndman & Fan type 7): level q of n sorted values reads v = (n - 1) q / 100.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from helpers import ROOT
from pcs.engine.schedresult import Percentiles
from pcs.engine.summary import _p50_p99_of

TINY = ROOT / "traces" / "formats" / "mooncake_conv_8.jsonl"


def test_finite_values_take_the_known_percentiles():
    # all finite: the scheduler's figures are the column's (here deliberately different numbers, to see which
    # ones come back)
    assert _p50_p99_of(np.array([4.0, 1.0, 3.0, 2.0]), Percentiles(7.0, 8.0, 9.0)) == (7.0, 9.0)


def test_without_known_percentiles_they_are_computed():
    # [1, 2, 3, 4]: p50 at v = 1.5 -> 2 + 0.5 x 1 = 2.5; p99 at v = 2.97 -> 4 - 1 x 0.03 = 3.97
    p50, p99 = _p50_p99_of(np.array([4.0, 1.0, 3.0, 2.0]), None)
    assert p50 == 2.5 and p99 == pytest.approx(3.97, abs=1e-12)


def test_a_nan_is_not_read_off_the_finite_percentiles():
    # the scheduler's percentiles leave the NaN out; the envelope's take it in (numpy's rule: NaN at every level)
    p50, p99 = _p50_p99_of(np.array([1.0, math.nan, 3.0]), Percentiles(2.0, 2.8, 2.98))
    assert math.isnan(p50) and math.isnan(p99)


def test_without_known_percentiles_they_are_read_off_the_sorted_column():
    # ``ordered`` (the column's finite values, sorted for its CDF) holds every value: read off it, here deliberately
    # other numbers [10, 20, 30, 40] to see which are read: p50 at v = 1.5 -> 20 + 0.5 x 10 = 25; p99 at v = 2.97
    # -> 40 - 10 x 0.03 = 39.7. The known percentiles still come first.
    ordered = np.array([10.0, 20.0, 30.0, 40.0])
    p50, p99 = _p50_p99_of(np.array([4.0, 1.0, 3.0, 2.0]), None, ordered)
    assert p50 == 25.0 and p99 == pytest.approx(39.7, abs=1e-12)
    assert _p50_p99_of(np.array([4.0, 1.0, 3.0, 2.0]), Percentiles(7.0, 8.0, 9.0), ordered) == (7.0, 9.0)


def test_a_sorted_column_missing_a_value_is_not_read():
    # [1, nan, 3]: its sorted finite values [1, 3] hold two of three values, so the envelope computes from the
    # column (NaN at every level, numpy's rule); [1, inf, 3] likewise: p50 = 3 (the middle value), p99 = inf
    p50, p99 = _p50_p99_of(np.array([1.0, math.nan, 3.0]), None, np.array([1.0, 3.0]))
    assert math.isnan(p50) and math.isnan(p99)
    p50, p99 = _p50_p99_of(np.array([1.0, -math.inf, 3.0]), None, np.array([1.0, 3.0]))
    assert p50 == 1.0 and p99 == pytest.approx(2.96, abs=1e-12)


def test_no_values_are_none():
    assert _p50_p99_of(np.zeros(0), Percentiles(None, None, None)) == (None, None)


def test_a_replay_envelope_equals_numpys_percentiles_of_its_columns():
    import pcs

    r = pcs.replay(TINY)            # default: modeled timing, the step scheduler (every request finishes)
    s = r.summary.to_dict()
    for col, key in (("ttft_s", "ttft"), ("wait_s", "wait"), ("prefill_no_cache_s", "ttft_no_cache_alone")):
        values = r.requests[col].to_numpy()
        assert np.isfinite(values).all()
        assert s["envelope"][f"{key}_p50_s"] == float(np.percentile(values, 50))
        assert s["envelope"][f"{key}_p99_s"] == float(np.percentile(values, 99))
