"""The no-cache step loop queued behind the two-tier scan on the scan's worker (pcs.engine.runner._Tail, _Queued).

With threads, the default two-tier call runs the one-pass scan on a worker beside the run's step loop; the no-cache
loop, which also ran on a worker of its own beside them, now runs on the scan's worker once the scan is done: its
chunks queued as the run's loop is fed, closed once the run's feeds are done. The replay must give what it gives
inline (PCS_THREADS=off, the reference), and an error or a stop at any point must leave no worker.
"""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from pcs import replay
from pcs.engine import feed, loops, scanjoin, stepnative
from pcs.errors import UserError
from test_beside import _same

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "traces" / "sample_chat.jsonl"
# two lru tiers, write-back: the baseline from the two-tier scan (runner._two_tier_scan applies)
KW = {"tiers": ["gpu=300blocks", "cpu=2000blocks"], "policy": "lru"}

native = pytest.mark.skipif(stepnative._stepsched is None, reason="the compiled step scheduler is not built")


def _workers() -> set:
    return {t for t in threading.enumerate() if t.name == "pcs-beside"}


def _traced(monkeypatch, mode: str) -> tuple:
    """The replay under ``PCS_THREADS=mode`` and the events ``(what, thread)`` in order: the scan's start and end,
    each no-cache feed and its close."""
    events: list = []
    lock = threading.Lock()
    scan_parts, feed, close_beside = scanjoin._scan_parts, stepnative.NativeStepEngine.feed, scanjoin._close_beside

    def note(what):
        with lock:
            events.append((what, threading.current_thread()))

    def spied_scan(*a):
        note("scan")
        out = scan_parts(*a)
        note("scan done")
        return out

    def spied_feed(self, ch):
        if self.no_cache:
            note("no-cache feed")
        return feed(self, ch)

    def spied_close(loop):
        note("no-cache close")
        return close_beside(loop)

    with monkeypatch.context() as m:
        m.setenv("PCS_THREADS", mode)
        m.setattr(scanjoin, "_scan_parts", spied_scan)
        m.setattr(stepnative.NativeStepEngine, "feed", spied_feed)
        # the close is handed over (pcs.engine.loops._close_runs) and run (pcs.engine.scanjoin._Tail) by name
        m.setattr(scanjoin, "_close_beside", spied_close)
        m.setattr(loops, "_close_beside", spied_close)
        return replay(str(SAMPLE), **KW), events


@native
def test_the_no_cache_loop_runs_after_the_scan_on_its_worker(monkeypatch):
    # sample_chat is one joined batch: one chunk, so one no-cache feed, then its close -- all on the scan's
    # worker (not the calling thread), after the scan's end; the same replay as inline
    before = _workers()
    (a, inline), (b, threaded) = _traced(monkeypatch, "off"), _traced(monkeypatch, "on")
    me = threading.current_thread()
    assert [w for w, _ in inline] == ["scan", "scan done", "no-cache feed", "no-cache close"]
    assert {t for _, t in inline} == {me}
    assert [w for w, _ in threaded] == ["scan", "scan done", "no-cache feed", "no-cache close"]
    assert len({t for _, t in threaded}) == 1 and threaded[0][1] is not me
    assert a.summary.baseline_engine == b.summary.baseline_engine == "lru-scan"
    _same(a, b)
    assert _workers() == before


@native
def test_an_error_in_the_queued_no_cache_run_is_raised_and_leaves_no_worker(monkeypatch):
    before = _workers()
    feed = stepnative.NativeStepEngine.feed

    def bad(self, ch):
        if self.no_cache:
            raise UserError("no-cache feed failed")
        return feed(self, ch)

    monkeypatch.setenv("PCS_THREADS", "on")
    monkeypatch.setattr(stepnative.NativeStepEngine, "feed", bad)
    with pytest.raises(UserError, match="no-cache feed failed"):
        replay(str(SAMPLE), **KW)
    assert _workers() == before


@native
@pytest.mark.parametrize("where", ["_event_loops", "_feed"])
def test_a_stop_before_the_tail_is_handed_its_end_leaves_no_worker(monkeypatch, where):
    # Ctrl-C while the loops are built (the scan's worker not yet handed the no-cache engine) or fed (handed the
    # engine, not its end): the worker's wait is ended (the opener's abort), the stop propagates, no worker is left
    before = _workers()

    def stop(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setenv("PCS_THREADS", "on")
    monkeypatch.setattr(feed, where, stop)
    with pytest.raises(KeyboardInterrupt):
        replay(str(SAMPLE), **KW)
    assert _workers() == before
