"""A pcs.beside worker's start returns before the new thread runs (pcs.beside._Worker): the caller does not wait for
the thread to be scheduled (Thread.start's wait: 0.1-0.5 ms a start on a quiet 2-core machine, several ms on a busy
one, three times a 1x replay); the call it is handed runs once it does, and its join waits for it.

The thread is held before it counts as started (``Thread._bootstrap_inner`` sets its ident first) until a timer opens
the gate 1 s later: a start that waited for the thread would take that second.
"""
from __future__ import annotations

import threading
import time

from pcs import beside as beside_mod
from pcs.beside import Beside

HOLD_S = 1.0


def _held_class(gate: threading.Event):
    """pcs.beside's worker class, its new thread held at its first step until ``gate`` is set."""

    class Held(beside_mod._Thread):
        def _set_ident(self):
            gate.wait()
            super()._set_ident()

    return Held


def _workers() -> set:
    return {t for t in threading.enumerate() if t.name == "pcs-beside"}


def test_start_returns_before_the_thread_runs_and_join_waits_for_it():
    gate, ran = threading.Event(), []
    t = _held_class(gate)(target=ran.append, args=(1,), name="pcs-beside", daemon=True)
    opener = threading.Timer(HOLD_S, gate.set)
    opener.start()
    t0 = time.perf_counter()
    t.start()
    took = time.perf_counter() - t0
    assert took < HOLD_S / 2, took               # not the hold: no wait for the thread to run
    assert not ran and not t.is_alive()          # held: not yet started
    t.join()                                     # waits for it to run (Thread.join alone refuses a thread not started)
    assert ran == [1] and not t.is_alive()
    assert time.perf_counter() - t0 >= HOLD_S * 0.9
    opener.join()


def test_a_call_handed_to_a_worker_not_yet_running_runs_and_nothing_is_left(monkeypatch):
    before = _workers()
    gate = threading.Event()
    monkeypatch.setattr(beside_mod, "_Thread", _held_class(gate))
    opener = threading.Timer(HOLD_S, gate.set)
    b = Beside(True, linger=False)
    opener.start()
    t0 = time.perf_counter()
    b.start(sum, [1, 2])
    assert time.perf_counter() - t0 < HOLD_S / 2
    assert b.join() == 3                         # the call ran once the worker did; the worker reaped
    assert _workers() == before
    lingering = Beside(True)                     # a lingering worker: two calls, then closed
    lingering.start(sum, [3])
    assert lingering.join() == 3
    lingering.start(sum, [4, 5])
    assert lingering.join() == 9
    lingering.close()
    assert _workers() == before
    opener.join()


def test_join_with_a_timeout_keeps_one_deadline_and_leaves_a_worker_not_yet_run_alive():
    # Thread.join's contract: join(timeout) returns by the deadline, the thread alive if not done. Held until the
    # gate opens (never here), join(0.1) returned after raising RuntimeError ("cannot join thread before it is
    # started"); now it returns. Then the gate opens 0.5 s in and the call blocks: join(1.0) waited 0.5 s for the
    # start, then 1.0 s more (1.5 s); one deadline: 1.0 s.
    gate, release = threading.Event(), threading.Event()
    t = _held_class(gate)(target=release.wait, name="pcs-beside", daemon=True)
    t.start()
    t.join(timeout=0.1)
    assert not release.is_set()                  # returned, nothing raised
    opener = threading.Timer(0.5, gate.set)
    opener.start()
    t0 = time.perf_counter()
    t.join(timeout=1.0)
    took = time.perf_counter() - t0
    assert t.is_alive() and 0.9 <= took < 1.45, took   # two deadlines took >= 1.5 s
    release.set()
    t.join()
    assert not t.is_alive()
    opener.join()
    never = beside_mod._Thread(target=int)
    try:
        never.join(0.01)
        raise AssertionError("joined a thread never started")
    except RuntimeError:
        pass                                     # as Thread.join
