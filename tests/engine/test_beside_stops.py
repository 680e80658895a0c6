"""No worker outlives a call that a stop signal (Ctrl-C, SIGTERM) cuts at any point, and a thread the system
cannot start makes the side work inline (pcs.beside.Beside; pcs.engine.runner._stop_side_work).

The interrupts are made deterministic by patching: the k-th call of a step (``Thread.start``, ``Beside.start``,
``Beside.join``) raises ``KeyboardInterrupt`` before or after doing its work, for every k a replay reaches; after
each, the set of live threads is the one before the call. Inline (``PCS_THREADS=off``) is the reference the
threaded runs equal (tests/engine/test_beside.py), so a worker that cannot start runs its call inline.
"""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from helpers import invoke
from pcs import beside as beside_mod
from pcs.beside import Beside
from pcs.engine import runner

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "traces" / "sample_chat.jsonl"
TIERS = ["gpu=300blocks", "cpu=900blocks"]


def _threads() -> set:
    return set(threading.enumerate())


def _replay():
    from pcs import replay
    return replay(str(SAMPLE), tiers=TIERS, policy="lru")


def _raise_at(k: int, real, after: bool):
    """A stand-in for ``real`` whose k-th call (0-based) raises KeyboardInterrupt, before its work or after it."""
    seen = [0]

    def step(*args, **kw):
        n = seen[0]
        seen[0] += 1
        if n == k and not after:
            raise KeyboardInterrupt
        out = real(*args, **kw)
        if n == k:
            raise KeyboardInterrupt
        return out
    step.seen = seen
    return step


def _thread_class(start):
    """pcs.beside's worker class with ``start`` in place of Thread.start (other threads untouched)."""
    return type("PatchedThread", (threading.Thread,), {"start": start})


def _patch(m, owner, name: str, fn) -> None:
    if owner is None:
        m.setattr(beside_mod, "_Thread", _thread_class(fn))
    else:
        m.setattr(owner, name, fn)


def _no_worker_left(before: set, where) -> None:
    """No worker is left waiting: a reader's or a step loop's worker (``linger=False``) whose call was in flight
    when the stop came ends with its call (pcs.beside's docstring), so each new one is joined (a guard of 60 s
    against a hang, not a timing: a worker parked for a call never ends); none may stay."""
    for t in _threads() - before:
        assert t.name == "pcs-beside", (where, t.name)
        t.join(60)
        assert not t.is_alive(), where


@pytest.mark.parametrize("after", [False, True])
def test_a_stop_in_thread_start_leaves_no_worker(monkeypatch, after):
    # after=True is the tester's leak: the OS thread runs, then start() raises (its wait for the thread cut)
    before = _threads()
    b = Beside(True)
    monkeypatch.setattr(beside_mod, "_Thread", _thread_class(_raise_at(0, threading.Thread.start, after)))
    with pytest.raises(KeyboardInterrupt):
        b.start(sum, [1, 2])
    monkeypatch.undo()
    assert _threads() == before and b._thread is None
    b.close()
    b.start(sum, [3, 4])           # the Beside still serves
    assert b.join() == 7
    b.close()
    assert _threads() == before


def test_close_ends_the_worker_when_the_call_raised_a_stop():
    # settle() re-raises a stop that came out of the call (Ctrl-C landing in it): the worker still ends
    before = _threads()
    b = Beside(True)

    def ctrl_c():
        raise KeyboardInterrupt

    b.start(ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        b.close()
    assert _threads() == before and b._thread is None


def test_close_ends_the_worker_when_the_wait_is_cut(monkeypatch):
    # the stop lands in close()'s wait for the call (join): the call finishes, the worker ends, the Beside serves
    before = _threads()
    b = Beside(True)
    gate = threading.Event()
    b.start(gate.wait)
    monkeypatch.setattr(b, "join", lambda: (gate.set(), (_ for _ in ()).throw(KeyboardInterrupt()))[1])
    with pytest.raises(KeyboardInterrupt):
        b.close()
    monkeypatch.undo()
    assert _threads() == before and b._thread is None and not b._busy
    b.start(sum, [5])
    assert b.join() == 5
    b.close()


def test_stop_side_work_closes_both_when_the_first_raises():
    before = _threads()
    scan_side, seq_side = Beside(True), Beside(True)

    def ctrl_c():
        raise KeyboardInterrupt

    scan_side.start(ctrl_c)
    seq_side.start(sum, [1])
    with pytest.raises(KeyboardInterrupt):
        runner._stop_side_work(scan_side, seq_side)
    assert _threads() == before and scan_side._thread is None and seq_side._thread is None


@pytest.mark.parametrize("where", ["Thread.start", "Beside.start", "Beside.join"])
@pytest.mark.parametrize("after", [False, True])
def test_a_replay_cut_at_every_step_leaves_no_thread(monkeypatch, where, after):
    # PCS_THREADS=on: the scan, the read-aheads and the no-cache loop on workers. The k-th call of the step
    # raises, for every k the replay reaches (counted on a whole run first); each cut run leaves the threads
    # of before, and a replay after them all gives the numbers of one never cut.
    monkeypatch.setenv("PCS_THREADS", "on")
    owner, name = {"Thread.start": (None, "start"), "Beside.start": (Beside, "start"),
                   "Beside.join": (Beside, "join")}[where]
    real = threading.Thread.start if owner is None else getattr(owner, name)
    good = _replay().summary.to_dict()
    counter = _raise_at(-1, real, after)
    with monkeypatch.context() as m:
        _patch(m, owner, name, counter)
        _replay()
    calls = counter.seen[0]
    assert calls > 0
    before = _threads()
    for k in range(calls):
        with monkeypatch.context() as m:
            _patch(m, owner, name, _raise_at(k, real, after))
            with pytest.raises(KeyboardInterrupt):
                _replay()
        _no_worker_left(before, (where, after, k))
    assert _threads() == before
    again = _replay().summary.to_dict()
    for d in (good, again):
        d.pop("elapsed_s", None)
    assert again == good


@pytest.mark.parametrize("message", ["can't start new thread", "can't allocate lock"])
def test_a_thread_that_cannot_start_runs_the_call_inline(monkeypatch, message):
    def refused(self):
        raise RuntimeError(message)

    before = _threads()
    monkeypatch.setattr(beside_mod, "_Thread", _thread_class(refused))
    b = Beside(True)
    b.start(sum, [1, 2])
    assert b._thread is None and b.join() == 3
    b.close()
    assert _threads() == before


def test_no_lock_for_a_worker_runs_the_call_inline(monkeypatch):
    def no_lock():
        raise RuntimeError("can't allocate lock")

    b = Beside(True)
    monkeypatch.setattr(beside_mod.threading, "Lock", no_lock)
    b.start(sum, [4, 5])
    monkeypatch.undo()
    assert b._thread is None and b.join() == 9
    b.close()


def test_the_cli_without_threads_prints_what_it_prints_inline(monkeypatch, tmp_path):
    # every thread start refused (ulimit -v): the replay runs its side work inline, exit 0, the numbers of
    # PCS_THREADS=off, byte for byte (the JSON less its timing, the per-request table)
    outs = []
    for mode in ("off", "on"):
        rows = tmp_path / f"rows_{mode}.csv"
        with monkeypatch.context() as m:
            m.setenv("PCS_THREADS", mode)
            if mode == "on":
                m.setattr(beside_mod, "_Thread", _thread_class(lambda self: (_ for _ in ()).throw(
                    RuntimeError("can't start new thread"))))
            r = invoke("replay", SAMPLE, "-q", "--format", "json", "--tier", TIERS[0], "--tier", TIERS[1],
                       "--requests-out", rows)
        assert r.exit_code == 0, r.output
        got = json.loads(r.output)
        got.pop("elapsed_s", None)
        outs.append((got.pop("threads"), got, rows.read_bytes()))
    # the JSON says what was asked: off inline; on handed to workers, which the system refused (run inline)
    assert [t["mode"] for t, _, _ in outs] == ["off", "on"]
    assert outs[0][1:] == outs[1][1:]


@pytest.mark.parametrize("value, wanted", [("1", True), ("yes", True), ("true", True), ("on", True),
                                           ("0", False), ("no", False), ("false", False), ("off", False)])
def test_pcs_threads_takes_what_users_type(monkeypatch, value, wanted):
    monkeypatch.setenv("PCS_THREADS", value)
    assert beside_mod.threads_wanted() is wanted


@pytest.mark.parametrize("value", ["-1", "2", "maybe"])
def test_pcs_threads_refuses_the_rest(monkeypatch, value):
    from pcs.errors import UserError

    monkeypatch.setenv("PCS_THREADS", value)
    with pytest.raises(UserError, match="PCS_THREADS"):
        beside_mod.threads_wanted()


def test_a_stop_just_after_the_wait_for_the_call_returned_leaves_nothing_to_wait_for():
    # Ctrl-C landing between the wait for the worker's "done" and the mark that the call was taken left the call
    # marked as running with its end already taken: close() then waited for a second end that never comes (a
    # hang after a KeyboardInterrupt in a loop of pcs.replay calls). The signal is sent right after the wait returns.
    import signal
    import threading

    from pcs.beside import Beside

    b = Beside(True, linger=True)
    b.start(sum, [1, 2])
    real = b._done

    class SignalAfterWait:
        def acquire(self, *args, **kwargs):
            got = real.acquire(*args, **kwargs)
            if got:
                signal.raise_signal(signal.SIGINT)
            return got

    b._done = SignalAfterWait()
    try:
        b.join()
    except KeyboardInterrupt:
        pass
    b._done = real
    closer = threading.Thread(target=b.close, daemon=True)
    closer.start()
    closer.join(10)
    assert not closer.is_alive() and b._thread is None


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals: main thread only")
@pytest.mark.parametrize("linger", [False, True])
def test_a_stop_in_the_reap_of_a_finished_worker_leaves_no_worker_alive(monkeypatch, linger):
    """A reader's worker (``linger=False``) returns after its call and is reaped in Beside.join; a lingering one
    returns when close() hands it no call and is joined there. A Ctrl-C landing in that join raised there and left
    the worker alive after the KeyboardInterrupt (2 of 160 interrupted replays in one process). The signal is sent
    inside the join, and the worker's end is slowed (0.3 s after its loop returns), so the window is certain: the
    KeyboardInterrupt still comes, once the worker has ended."""
    import signal
    import time

    class SlowToEnd(threading.Thread):
        def run(self):
            super().run()
            time.sleep(0.3)               # its call is done; the thread has not ended yet

        def join(self, timeout=None):
            signal.raise_signal(signal.SIGINT)    # Ctrl-C, its handler run in the join
            return super().join(timeout)

    monkeypatch.setattr(beside_mod, "_Thread", SlowToEnd)
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        b = Beside(True, linger=linger)
        b.start(sum, [1, 2])
        worker = b._thread
        with pytest.raises(KeyboardInterrupt):
            if linger:
                assert b.join() == 3      # a lingering worker is not joined here
            b.close() if linger else b.join()
        assert not worker.is_alive() and b._thread is None
    finally:
        signal.signal(signal.SIGINT, old)
