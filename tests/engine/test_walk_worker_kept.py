"""The next-turn walk's worker kept for the two-tier scan (pcs.engine.turns.TurnWalk.result(keep=True),
pcs.engine.decoded.Decoded.take_worker, pcs.engine.runner._run).

With threads, the walk's worker is idle once the trace is decoded; the replay hands it the two-tier scan (and the
no-cache run behind it) instead of starting a thread for them: one ``Thread.start`` fewer on the calling thread's
path (docs/performance.md, "The 1x call's fixed costs"). What must hold: the scan runs on the kept worker,
the outcome is the inline one (PCS_THREADS=off, the reference), and no worker outlives the call -- also when the
replay raises right after the decode, or when nobody takes the kept worker.
"""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

import pcs._native as nat
from pcs import replay
from pcs.beside import Beside
from pcs.engine import fastpath, runner, stepnative
from pcs.engine.turns import TurnWalk
from pcs.trace.batches import as_batches
from test_beside import _same

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "traces" / "sample_chat.jsonl"
KW = {"tiers": ["gpu=300blocks", "cpu=2000blocks"], "policy": "lru"}

native = pytest.mark.skipif(stepnative._stepsched is None, reason="the compiled step scheduler is not built")


def _workers() -> set:
    """The pcs-beside threads running or started and not yet run (``ident`` None: a worker's start does not wait for
    it to run, pcs.beside._Worker); not one that has ended."""
    return {t for t in threading.enumerate() if t.name == "pcs-beside" and (t.is_alive() or t.ident is None)}


@native
def test_the_scan_runs_on_the_walk_worker(monkeypatch):
    """PCS_THREADS=on: the walk's kept worker (``take_worker``) is the thread that runs the two-tier scan (the
    scan's ``scan`` call with the two capacities); the walks themselves ran on the compiled walk thread (batches
    without ``also``: no Python worker call); no pcs-beside thread is left after the call, and the summary is the
    inline one."""
    monkeypatch.setenv("PCS_THREADS", "off")
    ref = replay(SAMPLE, **KW)
    seen: dict = {}
    walk_all, scan, take = TurnWalk._walk_all, fastpath.scan, TurnWalk.take_worker

    def spied_walk_all(self, batches):
        seen["walk"] = threading.current_thread()
        return walk_all(self, batches)

    def spied_scan(*a, **k):
        seen.setdefault("scan", threading.current_thread())
        return scan(*a, **k)

    def spied_take(self):
        side = take(self)
        seen["kept"] = None if side is None else side._thread
        return side

    monkeypatch.setattr(TurnWalk, "_walk_all", spied_walk_all)
    monkeypatch.setattr(TurnWalk, "take_worker", spied_take)
    monkeypatch.setattr(fastpath, "scan", spied_scan)
    monkeypatch.setenv("PCS_THREADS", "on")
    before = _workers()
    got = replay(SAMPLE, **KW)
    assert "walk" not in seen
    assert seen["kept"] is not None and seen["scan"] is seen["kept"]
    assert seen["scan"] is not threading.main_thread()
    assert _workers() <= before
    _same(got, ref)


@native
def test_an_error_after_the_decode_leaves_no_worker(monkeypatch):
    """_resolve_step raising (the first step after the walk's worker is taken): the error is the one raised and
    the kept worker is ended with the call."""
    monkeypatch.setenv("PCS_THREADS", "on")

    def broken(*a, **k):
        raise RuntimeError("resolve failed")

    monkeypatch.setattr(runner, "_resolve_step", broken)
    before = _workers()
    with pytest.raises(RuntimeError, match="resolve failed"):
        replay(SAMPLE, **KW)
    assert _workers() <= before


@native
@pytest.mark.parametrize("error", [MemoryError, KeyboardInterrupt])
def test_an_error_in_the_walks_result_leaves_no_worker(monkeypatch, error):
    """The compiled walk's ``result`` raising after the last walk is joined (its documented MemoryError; a Ctrl-C
    landing there): the error is the one raised and no pcs-beside thread is left, call after call (a worker kept
    before the blocks were made would be taken by nobody)."""
    monkeypatch.setenv("PCS_THREADS", "on")
    real = nat.module

    class Broken:
        def __init__(self, mod):
            self._mod = mod

        def __getattr__(self, name):
            return getattr(self._mod, name)

        def result(self, state):
            raise error

    monkeypatch.setattr(nat, "module", lambda name, *a, **k:
                        Broken(real(name, *a, **k)) if name == "turns" else real(name, *a, **k))
    before = _workers()
    for _ in range(3):
        with pytest.raises(error):
            replay(SAMPLE, **KW)
        assert _workers() <= before


def _walked(threaded: bool, keep: bool) -> TurnWalk:
    walk = TurnWalk(threaded)
    for b in as_batches(SAMPLE):
        walk.add(b)
    walk.result(keep=keep)
    return walk


def test_take_worker_by_hand():
    """result(keep=True) on threads leaves the worker alive and idle: take_worker hands it over once (a second
    take gives None), close() then leaves it running, and closing the taken Beside ends it; it takes a call like
    any Beside. Without keep, or inline, there is nothing to take and no worker is left."""
    before = _workers()
    walk = _walked(True, True)
    side = walk.take_worker()
    assert isinstance(side, Beside) and side.threaded
    assert walk.take_worker() is None
    walk.close()
    assert len(_workers() - before) == 1
    side.start(np.add, 2, 3)
    assert side.join() == 5
    side.close()
    assert _workers() <= before
    for threaded, keep in [(True, False), (False, True), (False, False)]:
        walk = _walked(threaded, keep)
        assert walk.take_worker() is None
        assert _workers() <= before


def test_a_kept_worker_nobody_takes_is_ended_by_close():
    """result(keep=True) and no take_worker: close() (as Decoded's own ``finally`` does) ends the worker."""
    before = _workers()
    walk = _walked(True, True)
    assert len(_workers() - before) == 1
    walk.close()
    assert _workers() <= before
