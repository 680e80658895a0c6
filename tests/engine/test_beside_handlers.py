"""Signal handlers a program installs itself, around a :class:`pcs.beside.Beside` (pcs/beside.py ``_HELD``,
``_take_done``, ``_serve``): a handler that returns instead of raising (a service's SIGTERM that only records a
shutdown request) leaves the call's result as it is; a handler of a non-stop signal that raises (a timeout's
SIGALRM) cuts a hand-over as Ctrl-C would, leaving no worker; a Beside dropped without ``close`` leaves no idle
worker once collected.

Each value here is the call's own (6 x 7, a sleep's return), not pcs's output: the failure each test guards
against was a result of None taken while the call still ran, a thread left waiting for good, or an exception
raised inside ``Thread.start`` that broke the threading module's bookkeeping.
"""
from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import time

import pytest

from pcs.beside import Beside

pytestmark = pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                                reason="signal handlers run in the main thread only")


def _workers() -> list:
    return [t for t in threading.enumerate() if t.name == "pcs-beside" and t.is_alive()]


def _slow_product(x: int, y: int, seconds: float) -> int:
    time.sleep(seconds)
    return x * y


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGALRM])
def test_a_handler_that_returns_leaves_the_result_of_the_call(signum):
    # the call sleeps 0.4 s; the signal comes at 0.05 s while join waits; the handler records it and returns.
    # join must give 6 x 7 = 42 after the call ended, not None at 0.05 s (the wait cut as if it had raised).
    came = []
    old = signal.signal(signum, lambda s, f: came.append((s, f.f_lineno > 0)))   # a frame, as Python gives
    b = Beside(True)
    try:
        b.start(_slow_product, 6, 7, 0.4)
        timer = threading.Timer(0.05, os.kill, (os.getpid(), signum))
        timer.start()
        t0 = time.monotonic()
        assert b.join() == 42
        assert time.monotonic() - t0 >= 0.3          # it waited for the call
        timer.join()
        assert came == [(int(signum), True)]          # the program's handler ran, once, given a frame
    finally:
        b.close()
        signal.signal(signum, old)
    assert _workers() == []


class _Timeout(Exception):
    pass


def test_a_raising_alarm_handler_in_thread_start_leaves_no_worker(monkeypatch):
    # SIGALRM comes just as the system has made the worker's thread, inside Thread.start, and its handler raises
    # (a timeout). Held like Ctrl-C: the hand-over completes, then the exception reaches the caller, and close()
    # ends the worker. Unheld, it raised out of Thread.start with the thread made: threading's except path and
    # the new thread both removed it from threading._limbo (a KeyError), and the thread lived on, never joined.
    def raise_timeout(s, f):
        raise _Timeout()

    real = threading._start_new_thread

    def made_then_alarm(*args):
        ident = real(*args)
        signal.raise_signal(signal.SIGALRM)          # the handler runs here, in the main thread
        return ident

    broken = []                                      # what the new thread's bootstrap raised, if anything
    monkeypatch.setattr(sys, "unraisablehook", lambda u: broken.append(u.exc_value))
    monkeypatch.setattr(threading, "excepthook", lambda a: broken.append(a.exc_value))
    old = signal.signal(signal.SIGALRM, raise_timeout)
    b = Beside(True)
    try:
        monkeypatch.setattr(threading, "_start_new_thread", made_then_alarm)
        with pytest.raises(_Timeout):
            b.start(int, 5)
        monkeypatch.setattr(threading, "_start_new_thread", real)
    finally:
        signal.signal(signal.SIGALRM, old)
    b.close()
    time.sleep(0.3)                                  # a thread broken at its start dies within ms: let it
    assert broken == []
    assert _workers() == []
    b.start(int, 9)                                  # the Beside still works, and so does threading
    assert b.join() == 9
    b.close()
    assert _workers() == []


def test_a_beside_dropped_without_close_leaves_no_idle_worker():
    # an exception between a kept worker's hand-over and the try that closes it drops the Beside unclosed:
    # once it is collected its idle worker must end (it waited on its lock for good before).
    b = Beside(True)
    b.spawn()
    b.start(int, 3)
    assert b.join() == 3
    assert len(_workers()) == 1
    del b
    gc.collect()
    deadline = time.monotonic() + 5
    while _workers() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _workers() == []


def _two_signals_then_product(x: int, y: int) -> int:
    # sent from the worker while the main thread waits in join: both are pending when it next looks
    os.kill(os.getpid(), signal.SIGUSR1)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.3)
    return x * y


def test_every_held_handler_runs_when_one_raises():
    # SIGUSR1's handler raises (a timeout), SIGTERM's records a shutdown request; both come while join waits.
    # The raise ends the call, and SIGTERM's handler must still have run (the interpreter runs every pending
    # handler; running only the first dropped the shutdown request).
    came = []

    def timeout(s, f):
        raise _Timeout()

    old1 = signal.signal(signal.SIGUSR1, timeout)
    old15 = signal.signal(signal.SIGTERM, lambda s, f: came.append(s))
    b = Beside(True)
    try:
        b.start(_two_signals_then_product, 6, 7)
        with pytest.raises(_Timeout):
            b.join()
        assert came == [int(signal.SIGTERM)]
    finally:
        b.close()
        signal.signal(signal.SIGUSR1, old1)
        signal.signal(signal.SIGTERM, old15)
    assert _workers() == []



def test_a_ctrl_c_while_the_handlers_are_put_back_leaves_every_handler_back(monkeypatch):
    # A hold (pcs.beside._signals_held) puts each handler back in turn; Python may run the handler put back first
    # before the next is (signal.signal runs a pending one first). A Ctrl-C there raised out of the restoring and
    # left SIGTERM's stand-in (a lambda recording into a list no one reads) in place for good: a service's own
    # SIGTERM handler never ran again. Forced here: SIGINT sent once, just after its handler is back.
    import _signal
    from pcs.beside import _signals_held

    shutdown = []
    service = lambda s, f: shutdown.append(s)   # noqa: E731 - a service's SIGTERM flag
    real, sent = _signal.signal, []

    def put_back_then_ctrl_c(s, handler):
        old = real(s, handler)
        if s == signal.SIGINT and handler is signal.default_int_handler and not sent:
            sent.append(s)
            signal.raise_signal(signal.SIGINT)
        return old

    old_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    old15 = signal.signal(signal.SIGTERM, service)
    try:
        monkeypatch.setattr(_signal, "signal", put_back_then_ctrl_c)
        with pytest.raises(KeyboardInterrupt):
            with _signals_held():
                pass
        monkeypatch.undo()
        assert sent == [signal.SIGINT]
        assert signal.getsignal(signal.SIGTERM) is service and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        signal.raise_signal(signal.SIGTERM)
        assert shutdown == [signal.SIGTERM]     # the service's handler runs again
    finally:
        monkeypatch.undo()
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old15)
