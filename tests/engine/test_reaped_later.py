"""Workers joined at the end of a :func:`pcs.beside.reaped_later` block (pcs/beside.py ``_returned``): inside the
block a worker told to return is not waited for (its end overlaps the caller's next work, :func:`pcs.replay`'s
summary), and the block's end joins every one of them -- also when a stop signal comes during those joins, and
when the block ends by an exception -- so none outlives it. Outside a block a worker is joined at once, as before.

The workers here end late on purpose (:class:`_LateEnd`: a thread that, its calls done, waits for an event before
it returns), so "not waited for" and "joined at the end" are what the threads' states say, not timings.
"""
from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time

import pytest

import pcs
from pcs import beside
from pcs.beside import Beside, reaped_later
from conftest import SAMPLE_EXACT
from tests.helpers import beside_workers

pytestmark = pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                                reason="signal handlers run in the main thread only")


class _LateEnd(beside._Worker):
    """A worker thread that, once its target has returned, waits for :attr:`let_end` (at most 10 s), then
    :attr:`stagger` s times the number of late workers started before it, to end."""

    let_end = threading.Event()
    stagger, started = 0.0, 0

    def run(self) -> None:
        cls = type(self)
        order, cls.started = cls.started, cls.started + 1
        super().run()
        cls.let_end.wait(10)
        time.sleep(order * cls.stagger)


@pytest.fixture
def late_end(monkeypatch):
    monkeypatch.setattr(beside, "_Thread", _LateEnd)
    _LateEnd.let_end, _LateEnd.stagger, _LateEnd.started = threading.Event(), 0.0, 0
    yield _LateEnd.let_end
    _LateEnd.let_end.set()


def _product(x: int, y: int) -> int:
    return x * y


def test_in_the_block_close_does_not_wait_for_the_workers_end_and_the_block_end_joins_it(late_end):
    before = set(threading.enumerate())
    with reaped_later():
        b = Beside(True)
        b.start(_product, 6, 7)
        assert b.join() == 42
        t0 = time.monotonic()
        b.close()
        assert time.monotonic() - t0 < 5             # not the 10 s the worker waits to end
        (worker,) = beside_workers(before)
        assert worker.is_alive()                      # told to return, not yet joined
        late_end.set()
    assert not worker.is_alive() and beside_workers(before) == []


def test_a_not_lingering_worker_is_joined_at_the_block_end_too(late_end):
    before = set(threading.enumerate())
    with reaped_later():
        b = Beside(True, linger=False)
        b.start(_product, 2, 3)
        assert b.join() == 6                          # the call's result; its worker left to end
        assert [t.is_alive() for t in beside_workers(before)] == [True]
        late_end.set()
    assert beside_workers(before) == []


def test_outside_a_block_close_joins_the_worker_at_once(late_end):
    before = set(threading.enumerate())
    b = Beside(True)
    b.start(_product, 6, 7)
    assert b.join() == 42
    threading.Timer(0.3, late_end.set).start()
    t0 = time.monotonic()
    b.close()
    assert time.monotonic() - t0 >= 0.2               # waited for the worker's end
    assert beside_workers(before) == []


def test_a_stop_signal_during_the_joins_at_the_block_end_leaves_no_worker(late_end):
    # two workers told to return inside the block, the second ending 0.5 s after the first; Ctrl-C comes while
    # the block's end joins the first; both are joined, then KeyboardInterrupt is raised (held in the joins:
    # pcs.beside._join_returning) -- not raised at the first, the second left running
    _LateEnd.stagger = 0.5
    before = set(threading.enumerate())
    sides = [Beside(True), Beside(True)]
    timer = threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT))
    with pytest.raises(KeyboardInterrupt):
        with reaped_later():
            for k, b in enumerate(sides):
                b.start(_product, k, 5)
                assert b.join() == 5 * k
                b.close()
            assert len(beside_workers(before)) == 2
            timer.start()
            threading.Timer(0.4, late_end.set).start()
    timer.join()
    assert beside_workers(before) == []


def test_an_exception_ending_the_block_still_joins_its_workers(late_end):
    before = set(threading.enumerate())
    with pytest.raises(ValueError, match="the block's own"):
        with reaped_later():
            b = Beside(True)
            b.start(_product, 1, 1)
            b.close()
            threading.Timer(0.1, late_end.set).start()
            raise ValueError("the block's own")
    assert beside_workers(before) == []


def _summary() -> dict:
    """The default two-tier LRU replay's summary of the committed sample, without its ``threads`` object (which
    says how the side work ran: the one field that differs between threads on and off)."""
    out = pcs.replay(SAMPLE_EXACT, tiers=["gpu=64blocks", "cpu=256blocks"], policy="lru")
    summary = dataclasses.asdict(out.summary)
    summary.pop("threads")
    return summary


@pytest.mark.parametrize("threads", ["on", "off"])
def test_a_replay_leaves_no_worker_and_its_summary_is_the_one_with_threads_off(monkeypatch, threads):
    # the replay's workers joined at its end (pcs.replay's reaped_later block): none alive once it returns, and
    # the summary is the one PCS_THREADS=off (every call inline, nothing deferred) gives
    monkeypatch.setenv("PCS_THREADS", "off")
    reference = _summary()
    monkeypatch.setenv("PCS_THREADS", threads)
    before = set(threading.enumerate())
    assert _summary() == reference
    assert beside_workers(before) == []


def test_a_replays_summary_does_not_wait_for_its_workers_ends(monkeypatch, late_end):
    # each worker of the replay, its calls done, waits until 1.0 s to end. Joined at once (no reaped_later block
    # around the run) the replay's first worker close waited until then, before the summary began; in the block
    # the summary begins before 1.0 s, and the replay returns only once the block's end has joined them all.
    from pcs.engine import api

    monkeypatch.setenv("PCS_THREADS", "on")
    real, began = api._summarise, []

    def summarise(*args, **kwargs):
        began.append(time.monotonic())
        return real(*args, **kwargs)

    monkeypatch.setattr(api, "_summarise", summarise)
    before = set(threading.enumerate())
    timer = threading.Timer(1.0, late_end.set)
    t0 = time.monotonic()
    timer.start()
    pcs.replay(SAMPLE_EXACT, tiers=["gpu=64blocks", "cpu=256blocks"], policy="lru")
    assert began[0] - t0 < 0.9 <= time.monotonic() - t0
    timer.join()
    assert beside_workers(before) == []
