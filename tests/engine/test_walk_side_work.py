"""The lean walk's worker takes the replay's side work behind the baseline (pcs.engine.walkjoin.WalkJoin).

A modeled run of two fifo / slru tiers sharing one table takes its sequential baseline from the lean walk
(pcs/engine/_seqpol.c) on a worker; with threads, the single-sequence walk (the scan at 0 slots) and the no-cache
step loop, which ran on workers of their own beside it, now run on the same worker after it, in that order. The
replay must give what it gives inline (PCS_THREADS=off, the reference), an error of any of the three must be the one
raised, and an error or a stop at any point must leave no worker.
"""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from pcs import replay
from pcs.engine import _seqpol, fastpath, feed, loops, scanjoin, stepnative
from pcs.errors import UserError
from test_beside import _same

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "traces" / "sample_chat.jsonl"
from conftest import MOONCAKE_CONV as MOONCAKE  # noqa: E402  (../shared/traces or $PCS_SHARED_TRACES)

native = pytest.mark.skipif(stepnative._stepsched is None, reason="the compiled step scheduler is not built")
# two fifo tiers, write-back: one shared table, so the baseline is the lean walk (seqbase.policy_walk)
KW = {"tiers": ["gpu=300blocks", "cpu=2000blocks"], "policy": "fifo"}


def _workers() -> set:
    return {t for t in threading.enumerate() if t.name == "pcs-beside"}


def _traced(monkeypatch, mode: str, path=SAMPLE, **kw) -> tuple:
    """The replay under ``PCS_THREADS=mode`` and the events ``(what, thread)`` in order: the walk's start and end,
    the 0-slot scan's (the single-sequence walk), each no-cache feed and its close."""
    events: list = []
    lock = threading.Lock()
    walk, scan, feed_, close_beside = _seqpol.run, fastpath.scan, stepnative.NativeStepEngine.feed, loops._close_beside

    def note(what):
        with lock:
            events.append((what, threading.current_thread()))

    def spied_walk(*a):
        note("walk")
        out = walk(*a)
        note("walk done")
        return out

    def spied_scan(*a, **k):
        if a[1] != 0:
            return scan(*a, **k)
        note("singles")
        out = scan(*a, **k)
        note("singles done")
        return out

    def spied_feed(self, ch):
        if self.no_cache:
            note("no-cache feed")
        return feed_(self, ch)

    def spied_close(loop):
        note("no-cache close")
        return close_beside(loop)

    with monkeypatch.context() as m:
        m.setenv("PCS_THREADS", mode)
        m.setattr(_seqpol, "run", spied_walk)
        m.setattr(fastpath, "scan", spied_scan)
        m.setattr(stepnative.NativeStepEngine, "feed", spied_feed)
        m.setattr(scanjoin, "_close_beside", spied_close)   # handed over by name (loops._close_runs, scanjoin._Tail)
        m.setattr(loops, "_close_beside", spied_close)
        return replay(str(path), **(kw or KW)), events


@native
@pytest.mark.parametrize("policy", ["fifo", "slru"])
def test_the_side_work_runs_after_the_walk_on_its_worker(monkeypatch, policy):
    # sample_chat is one joined batch: one chunk, one no-cache feed, then its close. Inline: all on the calling
    # thread, the walk first (begun before the loops); threaded: the three on one worker, walk, singles, no-cache
    before = _workers()
    kw = dict(KW, policy=policy)
    (a, inline), (b, threaded) = _traced(monkeypatch, "off", **kw), _traced(monkeypatch, "on", **kw)
    me = threading.current_thread()
    order = ["walk", "walk done", "singles", "singles done", "no-cache feed", "no-cache close"]
    assert [w for w, _ in inline] == order and {t for _, t in inline} == {me}
    assert [w for w, _ in threaded] == order
    assert len({t for _, t in threaded}) == 1 and threaded[0][1] is not me
    assert a.summary.baseline_engine == b.summary.baseline_engine == "compiled-hierarchy"
    assert "lean walk" in b.summary.baseline_engine_reason
    _same(a, b)
    assert _workers() == before


@native
@pytest.mark.skipif(not MOONCAKE.exists(), reason="no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES")
@pytest.mark.parametrize("policy", ["fifo", "slru"])
def test_the_side_work_behind_the_walk_equals_inline_on_mooncake(monkeypatch, policy):
    # many chunks queued behind the walk while the run's loop is fed: the same summary and per-request table
    before = _workers()
    kw = {"tiers": ["gpu=2000blocks", "cpu=10000blocks"], "policy": policy}
    (a, inline), (b, threaded) = _traced(monkeypatch, "off", MOONCAKE, **kw), _traced(monkeypatch, "on", MOONCAKE,
                                                                                        **kw)
    assert [w for w, _ in threaded][:4] == ["walk", "walk done", "singles", "singles done"]
    assert [w for w, _ in threaded][-1] == "no-cache close"
    assert len({t for _, t in threaded}) == 1
    _same(a, b)
    assert _workers() == before


def _failing(monkeypatch, target, name, fn):
    """A threaded replay of KW with ``target.name`` replaced by ``fn``: its error must be raised, no worker left."""
    before = _workers()
    monkeypatch.setenv("PCS_THREADS", "on")
    monkeypatch.setattr(target, name, fn)
    with pytest.raises((UserError, MemoryError, KeyboardInterrupt)) as err:
        replay(str(SAMPLE), **KW)
    assert _workers() == before
    return err


@native
def test_an_error_of_the_walk_is_raised_and_leaves_no_worker(monkeypatch):
    def bad(*a):
        raise MemoryError

    _failing(monkeypatch, _seqpol, "run", bad)


@native
def test_an_error_of_the_singles_behind_the_walk_is_raised(monkeypatch):
    scan = fastpath.scan

    def bad(*a, **k):
        if a[1] == 0:
            raise UserError("trace.jsonl:3: field 'hash_ids': the walk failed")
        return scan(*a, **k)

    assert "the walk failed" in str(_failing(monkeypatch, fastpath, "scan", bad).value)


@native
def test_an_error_of_the_queued_no_cache_run_is_raised(monkeypatch):
    feed_ = stepnative.NativeStepEngine.feed

    def bad(self, ch):
        if self.no_cache:
            raise UserError("no-cache feed failed")
        return feed_(self, ch)

    assert "no-cache feed failed" in str(_failing(monkeypatch, stepnative.NativeStepEngine, "feed", bad).value)


@native
@pytest.mark.parametrize("where", ["_event_loops", "_feed"])
def test_a_stop_before_the_side_work_is_handed_over_leaves_no_worker(monkeypatch, where):
    # Ctrl-C while the loops are built (the worker not yet handed the no-cache engine) or fed (handed it, not its
    # end): the worker's waits are ended (the WalkJoin's opener), the stop propagates, no worker is left
    def stop(*a, **k):
        raise KeyboardInterrupt

    _failing(monkeypatch, feed, where, stop)
