"""The summary's work moved off the calling thread, every value unchanged.

- The restore sample's points (pcs.engine.series._spread): the rounded ``np.linspace`` points, each once, as
  ``np.unique`` gave them, without ``np.unique`` (its masked-array check imports numpy.ma).
- The run's own sorts and partitions (pcs.engine.runparts.run_parts) made on a worker as the compiled loop
  closes (PendingParts, handed over as EngineResult.latency) and read by the summary; the gated kind
  (PendingParts.gated: the prefill_no_cache_s sort, then the parts once the columns are handed over) on one worker.
- The summary records' methods compiled and pcs.analysis.envelope imported on a worker during the first feed
  (pcs.engine.summary.warm_up), where each chunk's input columns are also copied beside the C feed.

Percentiles worked out by hand with numpy's linear method: level q of n sorted values reads v = (n - 1) q / 100.
"""
from __future__ import annotations

import dataclasses

import os

import numpy as np
import pytest

from helpers import ROOT, fresh_python
from pcs.engine.runparts import PendingParts, run_parts
from pcs.engine.series import _spread

TINY = ROOT / "traces" / "formats" / "mooncake_conv_8.jsonl"


def test_spread_by_hand():
    # linspace(0, 4, 4) = [0, 1.33, 2.67, 4] -> rounded [0, 1, 3, 4], all distinct
    assert _spread(5, 4).tolist() == [0, 1, 3, 4]
    # linspace(0, 2, 5) = [0, 0.5, 1, 1.5, 2] -> rounded half to even [0, 0, 1, 2, 2] -> each once [0, 1, 2]
    assert _spread(3, 5).tolist() == [0, 1, 2]
    # 2,000 points over 0 .. 2,000: step 2000 / 1999; point i rounds to i up to i = 999 (999.4997), then to i + 1
    # (1000.5003 -> 1001): index 1,000 is the one left out
    got = _spread(2001, 2000)
    assert len(got) == 2000 and 1000 not in got.tolist() and got[999] == 999 and got[1000] == 1001
    assert got.dtype == np.int64


def test_restore_sample_does_not_load_numpy_ma():
    # 2,001 restored requests (> MAX_POINTS = 2,000): 2,000 sampled, the 1,001st (index 1,000) left out
    code = (
        "import sys, numpy as np\n"
        "from pcs.engine.series import request_distributions\n"
        "n = 2001\n"
        "cols = {'ttft_s': np.ones(n), 'prefill_no_cache_s': np.full(n, 3.0), 'prefill_s': np.full(n, 1.0),\n"
        "        'restore_s': np.arange(1, n + 1, dtype=float), 'restored_bytes': np.ones(n, np.int64)}\n"
        "d = request_distributions(cols)\n"
        "r = d.restore_vs_recompute\n"
        "print(r.requests, r.sampled, 1001.0 in r.restore_s, r.prefill_saved_s[0], 'numpy.ma' in sys.modules)\n")
    out = fresh_python(code, ROOT)
    # restore_s of index 1,000 is 1,001: not sampled; saved = max(3 - 1, 0) = 2
    assert out.split() == ["2001", "2000", "False", "2.0", "False"]


def _columns():
    # ttft [0.3, 0.1, inf, 0.2]; tpot [nan, 1, 3, 2]; e2e [4, 2, 6, 8];
    # wait_s [0, 0, 4, 0]; wait_compute_s [1, 2, 3, 4]; wait_link_s [0, 0, 0, 0]
    return {"ttft_s": np.array([0.3, 0.1, np.inf, 0.2]), "tpot_s": np.array([np.nan, 1.0, 3.0, 2.0]),
            "e2e_s": np.array([4.0, 2.0, 6.0, 8.0]), "wait_s": np.array([0.0, 0.0, 4.0, 0.0]),
            "wait_compute_s": np.array([1.0, 2.0, 3.0, 4.0]), "wait_link_s": np.zeros(4)}


def _check_parts(parts, prefill):
    assert parts.latency.ttft_ordered.tolist() == [0.1, 0.2, 0.3]
    # tpot's finite [1, 2, 3]: p50 v = 1 -> 2; e2e [2, 4, 6, 8]: p50 v = 1.5 -> 5
    assert parts.latency.tpot_s.p50 == 2.0 and parts.latency.e2e_s.p50 == 5.0
    kv, comp, link = parts.waits
    # wait_s sorted [0, 0, 0, 4]: p50 v = 1.5 -> 0; p90 v = 2.7 -> 0 + 0.7 x 4 = 2.8; p99 v = 2.97 -> 3.88
    assert kv.p50 == 0.0 and kv.p90 == pytest.approx(2.8, abs=1e-12) and kv.p99 == pytest.approx(3.88, abs=1e-12)
    # wait_compute_s [1, 2, 3, 4]: p50 v = 1.5 -> 2.5; p90 v = 2.7 -> 3.7
    assert comp.p50 == 2.5 and comp.p90 == pytest.approx(3.7, abs=1e-12)
    assert (link.p50, link.p90, link.p99) == (0.0, 0.0, 0.0)
    assert parts.prefill_no_cache_ordered is prefill


def test_run_parts_by_hand():
    prefill = np.array([0.5, 1.5])
    _check_parts(run_parts(_columns(), prefill), prefill)


@pytest.mark.parametrize("threads", ["on", "off"])
def test_pending_parts_are_run_parts(monkeypatch, threads):
    monkeypatch.setenv("PCS_THREADS", threads)
    cols = _columns()
    pending = PendingParts(cols, None)
    cols["ttft_s"] = np.zeros(4)          # the caller's dict changed after the start: the worker has its own
    got = pending.get()
    _check_parts(got, None)
    assert pending.get() is got           # waited for once


def test_gated_parts_sort_first_then_make_the_parts_of_the_columns_handed_over():
    import threading

    before = set(threading.enumerate())       # a worker an earlier test's replay keeps (linger) is not this one's
    prefill = np.array([1.5, np.inf, 0.5])     # its finite values sorted: [0.5, 1.5]
    pending = PendingParts.gated(prefill)
    cols = _columns()
    pending.open(cols)
    cols["ttft_s"] = np.zeros(4)               # changed after the hand-over: the worker has its own dict
    got = pending.get()
    _check_parts(got, got.prefill_no_cache_ordered)
    assert got.prefill_no_cache_ordered.tolist() == [0.5, 1.5] and pending.get() is got
    assert not [t for t in set(threading.enumerate()) - before if t.name == "pcs-beside"]   # its worker reaped


def _gated_by(monkeypatch, worker_first: bool):
    """A gated PendingParts of _columns() made with the worker taking every queued percentile (``worker_first``: get
    is called once the worker has ended) or none (its ttft_s sort held until get's thread has made all five); the
    parts and the thread names that made the five percentiles, in order."""
    import threading

    from pcs.engine import runparts

    real_pcts, real_sort = runparts._pcts, runparts.sorted_finite
    made, five = [], threading.Event()

    def pcts(values):
        made.append(threading.current_thread().name)
        if len(made) == 5:
            five.set()
        return real_pcts(values)

    def held_sort(values):
        if len(values) == 4 and not worker_first:      # the ttft_s sort (prefill has 2 values): after the five
            five.wait(10)
        return real_sort(values)

    monkeypatch.setattr(runparts, "_pcts", pcts)
    monkeypatch.setattr(runparts, "sorted_finite", held_sort)
    prefill = np.array([1.5, 0.5])
    pending = PendingParts.gated(prefill)
    pending.open(_columns())
    if worker_first:
        assert five.wait(10)                           # the worker made all five before get is called
    parts = pending.get()
    assert parts.prefill_no_cache_ordered.tolist() == [0.5, 1.5]
    return parts, made


@pytest.mark.parametrize("worker_first", [True, False])
def test_gated_parts_queued_percentiles_made_once_by_either_thread(monkeypatch, worker_first):
    # the same parts by hand (_check_parts) whichever thread made the percentiles: all five on the worker when get
    # comes late (the 1x call), all five on get's thread when it comes while the worker sorts; each made once
    import threading

    parts, made = _gated_by(monkeypatch, worker_first)
    _check_parts(parts, parts.prefill_no_cache_ordered)
    here = threading.current_thread().name
    assert len(made) == 5
    assert all((name != here) == worker_first for name in made)


def test_gated_parts_never_opened_are_let_go_by_settle():
    import threading

    before = set(threading.enumerate())
    pending = PendingParts.gated(np.array([2.0, 1.0]))
    pending.settle()                           # the run failed: no columns; the worker is let go and joined
    assert not [t for t in set(threading.enumerate()) - before if t.name == "pcs-beside"]


def _replay(threads: str):
    import pcs
    from pcs.engine import api, runner

    seen = {}
    real = runner.run_replay

    def keep(*a, **k):
        seen["out"] = out = real(*a, **k)
        return out

    old = os.environ.get("PCS_THREADS")
    os.environ["PCS_THREADS"] = threads
    api.run_replay = keep
    try:
        r = pcs.replay(TINY, tiers=["gpu=40blocks", "cpu=400blocks"], policy="lru")
    finally:
        api.run_replay = real
        if old is None:
            del os.environ["PCS_THREADS"]
        else:
            os.environ["PCS_THREADS"] = old
    return r, seen["out"]


def test_the_run_brings_its_parts_from_a_worker_and_the_summary_is_the_same():
    on, out = _replay("on")
    off, out_off = _replay("off")
    if out.engines.get("engine") != "compiled-step":
        pytest.skip("the compiled step loop is not built")
    assert isinstance(out.result.latency, PendingParts) and out_off.result.latency is None
    parts = out.result.latency.get()
    ttft = np.frombuffer(out.result.columns["ttft_s"], np.float64)
    assert parts.latency.ttft_ordered.tolist() == sorted(ttft[np.isfinite(ttft)].tolist())
    pre = np.frombuffer(out.result.columns["prefill_no_cache_s"], np.float64)
    assert parts.prefill_no_cache_ordered.tolist() == sorted(pre.tolist())
    # the summary says what ran (PCS_THREADS on: worker threads; off: inline), and nothing else differs
    assert (on.summary.threads.mode, on.summary.threads.used) == ("on", True)
    assert (off.summary.threads.mode, off.summary.threads.used) == ("off", False)
    assert dataclasses.replace(on.summary, threads=None) == dataclasses.replace(off.summary, threads=None)
    # the input columns (request_id .. prefill_no_cache_s) were copied on the side worker with threads on
    assert on.requests.equals(off.requests)
    assert on.summary.block_accesses == off.summary.block_accesses > 0


def test_warm_up_compiles_the_records_and_leaves_the_envelope_deferred():
    code = (
        "import sys\n"
        "from pcs.engine import result, summary\n"
        "before = type(result.ReplaySummary.__dict__['__init__']).__name__\n"
        "summary.warm_up()\n"
        "after = type(result.ReplaySummary.__dict__['__init__']).__name__\n"
        "print(before, after, 'pcs.analysis.envelope' in sys.modules)\n")
    out = fresh_python(code, ROOT)
    assert out.split() == ["_Deferred", "function", "False"]   # the envelope: only for a link that restored


def test_latest_first_token_by_hand():
    from pcs.engine.summary import _latest_s

    # arrival + ttft: [0.5, inf, 2.25] -> the finite ones' max 2.25; a NaN likewise left out; all finite: the max
    assert _latest_s({"arrival_s": np.array([0.0, 1.0, 2.0]), "ttft_s": np.array([0.5, np.inf, 0.25])}) == 2.25
    assert _latest_s({"arrival_s": np.array([0.0, 1.0, 2.0]), "ttft_s": np.array([0.5, np.nan, 0.25])}) == 2.25
    assert _latest_s({"arrival_s": np.array([1.0, 2.0]), "ttft_s": np.array([0.5, 1.0])}) == 3.0
    # none finite, or no request: 0.0
    assert _latest_s({"arrival_s": np.array([0.0]), "ttft_s": np.array([np.inf])}) == 0.0
    assert _latest_s({"arrival_s": np.zeros(0), "ttft_s": np.zeros(0)}) == 0.0


def test_the_summary_makes_its_series_before_it_waits_for_the_run_parts(monkeypatch):
    # build_summary's ``then``: _summarise waits for the worker's sorts (api._run_parts) only after the tier rows,
    # the prefill sum and the time series are made; the summary is the one the wait-first order gave
    import pcs
    from pcs.engine import api, summary

    order = []
    real_series, real_parts = summary._series, api._run_parts
    monkeypatch.setattr(summary, "_series", lambda *a: (order.append("series"), real_series(*a))[1])
    monkeypatch.setattr(api, "_run_parts", lambda out: (order.append("wait"), real_parts(out))[1])
    monkeypatch.setenv("PCS_THREADS", "on")
    later = pcs.replay(TINY, tiers=["gpu=40blocks", "cpu=400blocks"], policy="lru")
    assert order == ["series", "wait"]

    real_build = summary.build_summary

    def wait_first(res, state, seq, single, ideal, ctx, then=None):
        then()                          # the order before: the sorts waited for, then every part of the summary
        return real_build(res, state, seq, single, ideal, ctx)

    monkeypatch.setattr(summary, "build_summary", wait_first)
    first = pcs.replay(TINY, tiers=["gpu=40blocks", "cpu=400blocks"], policy="lru")
    assert later.summary == first.summary and later.requests.equals(first.requests)
    assert later.summary.series is not None and later.summary.scheduler is not None
