"""Each TTFT column sorted once for its CDF and its percentiles; the no-cache run's on the worker that closed it.

The summary sorts ``ttft_s`` (and the step scheduler's no-cache run's ``ttft_s``) for the TTFT CDFs; the
scheduler's TTFT percentiles are read off those sorts (pcs.engine.runparts.sorted_pcts) instead of partitioning
another copy, and the no-cache run's sort and TPOT / end-to-end partitions (runparts.latency_parts) are made on
the worker thread that closed its loop (pcs.engine.runner._close_beside). Values here are worked out by hand with
numpy's linear method (Hyndman & Fan type 7): level q of n sorted values reads v = (n - 1) q / 100.
"""
from __future__ import annotations

import numpy as np
import pytest

from helpers import ROOT
from pcs.engine.runparts import LatencyParts, latency_parts, sorted_pcts
from pcs.engine.schedstats import SchedulerCounters, _latency

TINY = ROOT / "traces" / "formats" / "mooncake_conv_8.jsonl"


def test_sorted_pcts_by_hand():
    # [1, 2, 4, 8]: p50 v = 1.5 -> 4 - (4 - 2) x 0.5 = 3; p90 v = 2.7 -> 8 - 4 x 0.3 = 6.8; p99 v = 2.97 -> 7.88
    p = sorted_pcts(np.array([1.0, 2.0, 4.0, 8.0]))
    assert p.p50 == 3.0 and p.p90 == pytest.approx(6.8, abs=1e-12) and p.p99 == pytest.approx(7.88, abs=1e-12)
    none = sorted_pcts(np.zeros(0))
    assert (none.p50, none.p90, none.p99) == (None, None, None)


def _columns():
    # ttft [0.3, 0.1, inf, 0.2] (finite sorted: [0.1, 0.2, 0.3]); tpot [nan, 1, 3, 2]; e2e [4, 2, 6, 8]
    return {"ttft_s": np.array([0.3, 0.1, np.inf, 0.2]), "tpot_s": np.array([np.nan, 1.0, 3.0, 2.0]),
            "e2e_s": np.array([4.0, 2.0, 6.0, 8.0])}


def test_latency_parts_by_hand():
    parts = latency_parts(_columns())
    assert parts.ttft_ordered.tolist() == [0.1, 0.2, 0.3]
    # tpot's finite [1, 2, 3]: p50 v = 1 -> 2; p90 v = 1.8 -> 3 - 1 x 0.2 = 2.8
    assert parts.tpot_s.p50 == 2.0 and parts.tpot_s.p90 == pytest.approx(2.8, abs=1e-12)
    # e2e [2, 4, 6, 8]: p50 v = 1.5 -> 6 - 2 x 0.5 = 5; p99 v = 2.97 -> 8 - 2 x 0.03 = 7.94
    assert parts.e2e_s.p50 == 5.0 and parts.e2e_s.p99 == pytest.approx(7.94, abs=1e-12)


def test_latency_reads_its_parts_and_makes_the_missing_ones():
    stats = SchedulerCounters(busy_s=1.0, origin_s=0.0, end_s=2.0)
    cols = _columns()
    # TTFT from a stand-in sort [1, 2, 3] (p50 v = 1 -> 2.0, not the column's 0.2); TPOT and e2e made here
    made = _latency(cols, stats, 0.25, LatencyParts(np.array([1.0, 2.0, 3.0])))
    assert made.ttft_s.p50 == 2.0 and made.tpot_s.p50 == 2.0 and made.e2e_s.p50 == 5.0
    # the SLO reads the column itself: 0.1, 0.2 <= 0.25 of 4 requests; utilisation 1 s busy of 2
    assert (made.slo_met, made.slo_met_share, made.utilisation) == (2, 0.5, 0.5)
    whole = _latency(cols, stats, 0.25)
    assert whole.ttft_s.p50 == 0.2 and whole == _latency(cols, stats, 0.25, latency_parts(cols))


def test_the_no_cache_run_brings_its_parts_from_its_worker(monkeypatch):
    import pcs
    from pcs.engine import api, runner

    seen = {}
    real = runner.run_replay

    def keep(*a, **k):
        seen["out"] = out = real(*a, **k)
        return out

    monkeypatch.setenv("PCS_THREADS", "on")   # a tiny trace runs inline in auto mode: the worker on purpose
    api.run_replay = keep
    try:
        r = pcs.replay(TINY)           # default: modeled timing, the step scheduler and its no-cache run
    finally:
        api.run_replay = real
    no_cache = seen["out"].scheduler[2]
    assert no_cache.latency is not None
    ttft = np.frombuffer(no_cache.columns["ttft_s"], np.float64)
    assert no_cache.latency.ttft_ordered.tolist() == sorted(ttft[np.isfinite(ttft)].tolist())
    got = r.summary.scheduler.no_cache
    want = np.percentile(ttft[np.isfinite(ttft)], [50, 90, 99]).tolist()
    assert [got.ttft_s.p50, got.ttft_s.p90, got.ttft_s.p99] == want
    # the with-cache TTFT percentiles read off the summary's sort of the run's column: numpy's of that column
    with_cache = r.requests["ttft_s"].to_numpy()
    assert r.summary.scheduler.with_cache.ttft_s.p50 == float(np.percentile(with_cache, 50))
