"""A run with no LRU scan (fifo, slru: the sequential baseline on the compiled hierarchy) walks its single-sequence
results on the idle scan worker, behind the loops' first-feed gate (pcs.engine.runner._early_singles): the same
replay as with every call inline (``PCS_THREADS=off``, the order before), an error of the walk is the one raised,
and no worker outlives the call."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from pcs import replay
from pcs.engine import fastpath, stepnative
from pcs.errors import UserError
from test_beside import _same

ROOT = Path(__file__).resolve().parents[2]
from conftest import MOONCAKE_CONV as MOONCAKE  # noqa: E402  (../shared/traces or $PCS_SHARED_TRACES)

native = pytest.mark.skipif(stepnative._stepsched is None, reason="the compiled step scheduler is not built")


def _workers() -> set:
    return {t for t in threading.enumerate() if t.name == "pcs-beside"}


def _run(monkeypatch, mode: str, path, **kw):
    """pcs.replay under ``PCS_THREADS=mode``; the thread name of each 0-slot scan (the single-sequence walk)."""
    where, orig = [], fastpath.scan

    def spy(*a, **k):
        if a[1] == 0:
            where.append(threading.current_thread().name)
        return orig(*a, **k)

    with monkeypatch.context() as m:
        m.setenv("PCS_THREADS", mode)
        m.setattr(fastpath, "scan", spy)
        return replay(str(path), **kw), where


@native
@pytest.mark.skipif(not MOONCAKE.exists(), reason="no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES")
@pytest.mark.parametrize("policy", ["fifo", "slru"])
def test_singles_beside_equal_inline_on_mooncake(monkeypatch, policy):
    before = _workers()
    kw = {"tiers": ["gpu=2000blocks", "cpu=10000blocks"], "policy": policy}
    (a, wa), (b, wb) = _run(monkeypatch, "off", MOONCAKE, **kw), _run(monkeypatch, "on", MOONCAKE, **kw)
    assert (wa, wb) == (["MainThread"], ["pcs-beside"])
    assert a.summary.baseline_engine == b.summary.baseline_engine == "compiled-hierarchy"
    _same(a, b)
    assert _workers() == before


@native
def test_an_error_in_the_walk_is_the_one_raised(monkeypatch):
    def bad(*a, **k):
        raise UserError("trace.jsonl:3: field 'hash_ids': the walk failed")

    before = _workers()
    monkeypatch.setattr(fastpath, "scan", bad)
    with pytest.raises(UserError, match="the walk failed"):
        _run(monkeypatch, "on", ROOT / "traces" / "sample_chat.jsonl", tiers=["gpu=300blocks", "cpu=2000blocks"],
             policy="fifo")
    assert _workers() == before
