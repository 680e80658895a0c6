"""The no-cache baseline's step loop beside the run's (pcs.beside, pcs/engine/_stepsched.c "the GIL").

The compiled step loop releases the GIL over feed and close, and pcs.engine.runner feeds and closes the no-cache
twin on a worker thread meanwhile. Each loop touches only its own state, so a replay gives exactly what it gives
with the two loops one after the other (the reference: every call inline, the order before threads). A hybrid
model's sequential baseline (pcs/cache/_grouphier.c run_sequential, which releases the GIL), and a compiled
hierarchy's (pcs/cache/_lruhier.c, no hosted Python policy), run the same way on a worker thread beside the run's
loops (pcs.engine.seqbase.begin_sequential), checked against it run inline first.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pcs.engine import feed, scanjoin, stepnative
from pcs.beside import Beside

ROOT = Path(__file__).resolve().parents[2]
from conftest import MOONCAKE_CONV as MOONCAKE  # noqa: E402  (../shared/traces or $PCS_SHARED_TRACES)

native = pytest.mark.skipif(stepnative._stepsched is None, reason="the compiled step scheduler is not built")


@pytest.mark.parametrize("threaded", [False, True])
def test_beside_gives_the_result_and_raises_at_join(threaded):
    b = Beside(threaded)
    b.start(lambda x, y: x * y, 6, 7)
    assert b.join() == 42
    b.start(int, "not a number")
    with pytest.raises(ValueError):
        b.join()
    b.start(sum, [1, 2, 3])        # usable again after an error
    assert b.join() == 6
    b.close()


@pytest.mark.parametrize("threaded", [False, True])
def test_settle_waits_and_drops_the_outcome(threaded):
    b = Beside(threaded)
    b.start(int, "not a number")
    b.settle()                     # no exception: the caller raises its own
    b.start(sum, [4, 5])
    assert b.join() == 9
    b.close()


def test_settle_lets_a_stop_through(monkeypatch):
    # Ctrl-C or SIGTERM (pcs.cli.common.Terminated, a pcs.errors.Stopped) whose handler runs inside settle --
    # on the way out of a finished run, close() settles -- ends the command; dropped, the run went on to exit 0
    from pcs.cli.common import Terminated

    b = Beside(False)
    b.start(sum, [1, 2])

    def signal_lands_here():
        raise Terminated(15)

    monkeypatch.setattr(b, "join", signal_lands_here)
    with pytest.raises(Terminated):
        b.settle()
    monkeypatch.undo()
    with pytest.raises(KeyboardInterrupt):    # inline: Ctrl-C inside the call itself, raised at once (kept for
        b.start(lambda: (_ for _ in ()).throw(KeyboardInterrupt()))   # the join, it waited for the caller's next work)
    b.close()                                  # nothing left to wait for or raise


def _replay(path, monkeypatch, threaded: bool | None, **kw):
    """pcs.replay with the no-cache loop on a worker thread (None: as chosen), or forced inline (False)."""
    from pcs import replay

    seen = []

    def spy(loop):
        b = Beside(bool(getattr(loop, "releases_gil", False)) if threaded is None else threaded)
        seen.append(b.threaded)
        return b

    with monkeypatch.context() as m:
        m.setenv("PCS_THREADS", "on")          # the side work on workers whatever the trace's size (pcs.beside)
        m.setattr(scanjoin, "_beside", spy)
        return replay(str(path), **kw), seen


def _same(a, b):
    """Two replays give the same summary and per-request table; only ``threads`` (what ran: worker threads or
    inline, pcs.beside.threads_decision) may differ."""
    da, db = ({k: v for k, v in r.summary.to_dict().items() if k != "threads"} for r in (a, b))
    assert json.dumps(da, sort_keys=True) == json.dumps(db, sort_keys=True)
    ta, tb = a.requests, b.requests
    assert ta.column_names == tb.column_names
    for name in ta.column_names:
        x, y = ta[name].to_numpy(zero_copy_only=False), tb[name].to_numpy(zero_copy_only=False)
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name


@native
def test_the_default_replay_runs_the_no_cache_loop_beside(monkeypatch):
    # the default configuration: all-LRU compiled hierarchy, compiled step loop -- its loop releases the GIL
    res, seen = _replay(ROOT / "traces" / "sample_chat.jsonl", monkeypatch, None)
    assert res.summary.engine == "compiled-step"
    assert seen == [True]


@native
@pytest.mark.parametrize("kw", [{}, {"tiers": ["gpu=300blocks", "cpu=2000blocks"], "write_policy": "through"},
                                {"tiers": ["gpu=300blocks", "cpu=2000blocks"], "policy": "slru"}])
def test_beside_equals_inline_on_a_sample(monkeypatch, kw):
    path = ROOT / "traces" / "sample_chat.jsonl"
    (a, sa), (b, sb) = _replay(path, monkeypatch, False, **kw), _replay(path, monkeypatch, True, **kw)
    assert sa == [False] and sb == [True]
    _same(a, b)


@native
@pytest.mark.skipif(not MOONCAKE.exists(), reason="no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES")
def test_beside_equals_inline_on_mooncake(monkeypatch):
    kw = {"tiers": ["gpu=16384blocks", "cpu=65536blocks"], "policy": "lru"}
    (a, _), (b, _) = _replay(MOONCAKE, monkeypatch, False, **kw), _replay(MOONCAKE, monkeypatch, True, **kw)
    _same(a, b)


@native
def test_a_python_policy_keeps_the_gil(monkeypatch):
    # a hosted Python policy (the key contract, pcs/cache/_pol_py.c, or handles, _pol_pyarr.c) runs Python inside
    # the hierarchy's calls, so the loop must keep the GIL and run the no-cache twin inline (releasing it there
    # crashed the interpreter: the handle host was missing from _lruhier.c's nogil test)
    from pcs.cache import policies as reg
    from pcs.cache.policies.array_lru import ArrayLRU
    from pcs.cache.policies.lru import LRUPolicy

    for name, base in (("t_py_lru_array", ArrayLRU), ("t_py_lru_keys", LRUPolicy)):
        monkeypatch.setitem(reg._POLICIES, name, type(name, (base,), {"name": name}))
    path = ROOT / "traces" / "sample_chat.jsonl"
    for name in ("t_py_lru_array", "t_py_lru_keys"):
        res, seen = _replay(path, monkeypatch, None, policy=name)
        assert res.summary.engine == "compiled-step" and seen == [False], name
        lru = _replay(path, monkeypatch, None, policy="lru")[0]     # both are LRU: the compiled one's numbers
        assert res.summary.hit_ratio == lru.summary.hit_ratio
        for col in lru.requests.column_names:
            assert res.requests[col].to_numpy().tobytes() == lru.requests[col].to_numpy().tobytes(), (name, col)


def test_close_ends_the_worker_and_the_beside_serves_again():
    b = Beside(True)
    b.start(sum, [1, 2])
    assert b.join() == 3
    worker = b._thread
    assert worker is not None and worker.is_alive()      # one worker serves every call until close
    b.start(sum, [4])
    assert b.join() == 4 and b._thread is worker
    b.close()
    assert not worker.is_alive() and b._thread is None
    b.start(sum, [5, 6])                                  # a new worker at the next call
    assert b.join() == 11
    b.close()


def test_a_second_start_before_join_is_refused():
    b = Beside(True)
    b.start(sum, [1])
    with pytest.raises(RuntimeError):
        b.start(sum, [2])
    b.close()


@native
def test_a_replay_leaves_no_worker_thread(monkeypatch):
    import threading

    before = set(threading.enumerate())
    res, seen = _replay(ROOT / "traces" / "sample_chat.jsonl", monkeypatch, None)
    assert seen == [True] and res.summary.engine == "compiled-step"
    assert not [t for t in set(threading.enumerate()) - before if t.name == "pcs-beside"]


def _hybrid_replay(path, monkeypatch, threaded: bool, **kw):
    """pcs.replay (a hybrid model, or any run whose sequential baseline is placed on a compiled hierarchy) with its
    sequential baseline (pcs.engine.seqbase.begin_sequential) on a worker thread (threaded) or forced inline; also
    whether a worker ran it."""
    from pcs import replay
    from pcs.engine import seqbase

    begin, seen = seqbase.begin_sequential, []

    def spy(source, hierarchy, rules, beside, **kw):
        side = beside if threaded else Beside(False)
        out = begin(source, hierarchy, rules, side, **kw)
        seen.append(side._thread is not None)     # a worker thread took the call
        return out

    with monkeypatch.context() as m:
        m.setenv("PCS_THREADS", "on")          # the side work on workers whatever the trace's size (pcs.beside)
        m.setattr(seqbase, "begin_sequential", spy)
        return replay(str(path), **kw), seen


@pytest.mark.skipif(not MOONCAKE.exists(), reason="no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES")
@pytest.mark.parametrize("kw", [{"model": "gemma-3-27b", "tiers": ["gpu=40GB", "cpu=2TB"]},
                                {"model": "gpt-oss-120b", "tiers": ["gpu=100GB", "cpu=2TB"], "compute_mode": "infinite"}])
def test_hybrid_baseline_beside_equals_inline_on_mooncake(monkeypatch, kw):
    # the default hybrid replay (compiled-hybrid) runs its sequential baseline, which releases the GIL
    # (pcs/cache/_grouphier.c run_sequential), on a worker thread while the step loop (or the modeled event loop)
    # runs: the same summary and per-request columns as the baseline run first, inline
    import threading

    before = set(threading.enumerate())
    (a, sa), (b, sb) = _hybrid_replay(MOONCAKE, monkeypatch, False, **kw), _hybrid_replay(MOONCAKE, monkeypatch, True,
                                                                                          **kw)
    assert sa == [False] and sb == [True]
    assert a.summary.engine == b.summary.engine == "compiled-hybrid"
    _same(a, b)
    assert not [t for t in set(threading.enumerate()) - before if t.name == "pcs-beside"]


@pytest.mark.parametrize("trace", ["sample", "mooncake"])
@pytest.mark.parametrize("kw", [{"policy": "fifo"}, {"policy": "slru", "compute_mode": "infinite"},
                                {"policy": "fifo", "tiers": ["gpu=300blocks", "cpu=2000blocks", "disk=8000blocks"],
                                 "write_policy": "through"}])
def test_compiled_hierarchy_baseline_beside_equals_inline(monkeypatch, trace, kw):
    # a two- or three-tier fifo / slru replay places its sequential baseline on compiled-hierarchy, whose
    # run_sequential releases the GIL (pcs/cache/_lruhier.c): it runs on a worker thread while the step loop (or
    # the modeled event loop) runs, with the same summary and per-request columns as the baseline run first, inline
    import threading

    path = ROOT / "traces" / "sample_chat.jsonl" if trace == "sample" else MOONCAKE
    if not path.exists():
        pytest.skip("no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES")
    before = set(threading.enumerate())
    (a, sa), (b, sb) = _hybrid_replay(path, monkeypatch, False, **kw), _hybrid_replay(path, monkeypatch, True, **kw)
    assert sa == [False] and sb == [True]
    assert a.summary.baseline_engine == b.summary.baseline_engine == "compiled-hierarchy"
    _same(a, b)
    assert not [t for t in set(threading.enumerate()) - before if t.name == "pcs-beside"]


def test_an_error_in_the_loops_waits_for_the_hybrid_baseline(monkeypatch):
    # the run's loops raise while the baseline runs on the worker: run_replay waits for it (its outcome dropped),
    # raises the loops' error and leaves no worker thread
    import threading

    def boom(*a, **k):
        raise RuntimeError("the loops failed")

    before = set(threading.enumerate())
    with monkeypatch.context() as m:
        m.setattr(feed, "_feed", boom)
        with pytest.raises(RuntimeError, match="the loops failed"):
            _hybrid_replay(ROOT / "traces" / "sample_chat.jsonl", m, True, model="gemma-3-27b")
    assert not [t for t in set(threading.enumerate()) - before if t.name == "pcs-beside"]
    seen = _hybrid_replay(ROOT / "traces" / "sample_chat.jsonl", monkeypatch, True, model="gemma-3-27b")[1]
    assert seen == [True]      # the replay above took the same path: its baseline was on the worker


def test_a_stop_while_the_worker_starts_leaves_nothing_to_join(monkeypatch):
    # SIGTERM's handler raises in whatever the main thread runs; when that is Thread.start's wait for the
    # new thread, start() must not keep the thread object: close() then has no worker to join and the stop
    # is what propagates (a killed sweep exits 143, not "cannot join thread before it is started").
    import threading

    from pcs.cli.common import Terminated

    def interrupted(self):
        raise Terminated(15)

    b = Beside(True)
    monkeypatch.setattr(threading.Thread, "start", interrupted)
    with pytest.raises(Terminated):
        b.start(int, 1)
    monkeypatch.undo()
    b.close()                      # nothing started: nothing to join, no RuntimeError
    b.start(int, 2)                # and the Beside still works
    assert b.join() == 2
    b.close()
