"""The next-turn walk's hand-over waits until the walk's worker runs (pcs.engine.turns.TurnWalk._hand_over).

A worker handed a call needs the GIL to start it; the caller, going on with Python work (the chunk pieces of the
batch it just handed over), kept the GIL until that work released it, so the walk began after the pieces instead
of beside them (docs/performance.md, "The 1x Parquet decode pass's wait"). The caller now waits, once a call is
handed to the worker, until that call runs. Inline (threads off) and without a thread (the system refused one)
nothing is waited for; a stop in the wait leaves no worker. The outcome is the hand trace of
tests/engine/test_turns.py's ``test_hand_trace_one_pass``: request 3's decode blocks [1, 2, 3, 4], 2 pairs.
"""
from __future__ import annotations

import sys
import threading

import pytest

from helpers import req
from pcs import _native, beside
from pcs.engine import turns
from pcs.trace.batches import as_batches

pytestmark = pytest.mark.skipif(not _native.built("turns"), reason="the compiled pcs.engine._turns is not built")

# bs 2, the hand trace of test_hand_trace_one_pass (its comment works the rule out)
REQS = [req([5, 6], 0, prompt=4, out=1, bs=2), req([6], 1, prompt=2, out=0, bs=2),
        req([5, 6, 7, 8], 2, prompt=8, out=0, bs=2), req([7, 8], 3, prompt=3, out=9, bs=2),
        req([7, 1, 2, 3, 4, 9], 4, prompt=12, out=0, bs=2)]


def _workers(before: set) -> list:
    return [t for t in set(threading.enumerate()) - before if t.name == "pcs-beside"]


def _check(dec) -> None:
    assert dec.hashes == {3: [1, 2, 3, 4]} and dec.pairs == 2 and dec.requests == 5


@pytest.fixture
def long_switch():
    """A switch interval of 10 s: a thread waiting for the GIL gets it only when its holder releases it, so a
    worker that ran before ``add`` returned was let run by ``add`` itself."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(10.0)
    yield
    sys.setswitchinterval(old)


def test_add_returns_once_the_worker_runs_the_walk(monkeypatch, long_switch):
    runs: list = []
    real = turns.TurnWalk._walk_all
    monkeypatch.setattr(turns.TurnWalk, "_walk_all", lambda self, b: (runs.append(threading.current_thread()),
                                                                       real(self, b)))
    before = set(threading.enumerate())
    walk = turns.TurnWalk(True)
    batches = list(as_batches(REQS, rows=2))          # 3 batches: 2 + 2 + 1 requests
    walk.add(batches[0])
    assert len(runs) == 1 and runs[0] is not threading.current_thread()     # begun before add returned
    for b in batches[1:]:
        walk.add(b)
    _check(walk.result())
    assert not _workers(before)


def test_inline_and_without_a_thread_nothing_is_waited_for(monkeypatch):
    # threads off: the walk runs in add; no thread to be had (the system refuses one): the call is deferred to
    # the join (Beside), and add must not wait for a worker that will never run it
    for threaded in (False, True):
        if threaded:
            monkeypatch.setattr(beside.Beside, "_spawn", lambda self: False)
        done: list = []

        def work():
            walk = turns.TurnWalk(threaded)
            for b in as_batches(REQS, rows=2):
                walk.add(b)
            done.append(walk.result())

        t = threading.Thread(target=work, daemon=True)
        t.start()
        t.join(10)
        assert not t.is_alive() and len(done) == 1
        _check(done[0])


class _StopInWait(threading.Event):
    """The hand-over's event: Ctrl-C lands in the caller's wait for the worker (the worker's call goes on)."""

    def wait(self, timeout=None):
        raise KeyboardInterrupt


def test_ctrl_c_in_the_wait_leaves_no_worker():
    before = set(threading.enumerate())
    walk = turns.TurnWalk(True)
    walk._begun = _StopInWait()
    with pytest.raises(KeyboardInterrupt):
        walk.add(next(iter(as_batches(REQS))))
    walk.close()                    # as Decoded does on every path: the call in flight waited for, the worker ended
    assert not _workers(before)
