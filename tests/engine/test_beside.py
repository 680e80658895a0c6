"""The no-cache baseline's step loop beside the run's (pcs.engine.beside, pcs/engine/_stepsched.c "the GIL").

The compiled step loop releases the GIL over feed and close, and pcs.engine.runner feeds and closes the no-cache
twin on a worker thread meanwhile. Each loop touches only its own state, so a replay gives exactly what it gives
with the two loops one after the other (the reference: every call inline, the order before threads).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pcs.engine import runner, stepnative
from pcs.engine.beside import Beside

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


@pytest.mark.parametrize("threaded", [False, True])
def test_settle_waits_and_drops_the_outcome(threaded):
    b = Beside(threaded)
    b.start(int, "not a number")
    b.settle()                     # no exception: the caller raises its own
    b.start(sum, [4, 5])
    assert b.join() == 9


def _replay(path, monkeypatch, threaded: bool | None, **kw):
    """pcs.replay with the no-cache loop on a worker thread (None: as chosen), or forced inline (False)."""
    from pcs import replay

    seen = []

    def spy(loop):
        b = runner.Beside(bool(getattr(loop, "releases_gil", False)) if threaded is None else threaded)
        seen.append(b.threaded)
        return b

    with monkeypatch.context() as m:
        m.setattr(runner, "_beside", spy)
        return replay(str(path), **kw), seen


def _same(a, b):
    assert json.dumps(a.summary.to_dict(), sort_keys=True) == json.dumps(b.summary.to_dict(), sort_keys=True)
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
@pytest.mark.skipif(not MOONCAKE.exists(), reason="the Mooncake trace (/work/shared) is not here")
def test_beside_equals_inline_on_mooncake(monkeypatch):
    kw = {"tiers": ["gpu=16384blocks", "cpu=65536blocks"], "policy": "lru"}
    (a, _), (b, _) = _replay(MOONCAKE, monkeypatch, False, **kw), _replay(MOONCAKE, monkeypatch, True, **kw)
    _same(a, b)
