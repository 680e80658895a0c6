"""The run's first compiled hierarchy built while the next-turn walk finishes (pcs.engine.loops.HierarchyAhead).

Once every batch is read, the trace's block hashes (a :class:`pcs.cache.native.NativeHierarchy`'s size hint) are
known; the calling thread then hands the last batches to the walk's worker and waits for it
(:meth:`pcs.engine.turns.TurnWalk.result`): the run's hierarchy is built in that wait (``meanwhile``) instead of
after the decode. The replay must be the one of building it after the decode (``HierarchyAhead.of`` returning
None), threaded and inline, and a build that fails is made again after the decode, its error in place.
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pcs import replay
from pcs.cache import native
from pcs.engine import decoded, loops, stepnative, turns
from pcs.errors import UserError
from pcs.trace import source
from pcs.trace.batches import as_batches
from test_beside import _same

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "traces" / "sample_chat.jsonl"
native_step = pytest.mark.skipif(stepnative._stepsched is None or native._lruhier is None,
                                 reason="the compiled step scheduler or hierarchy is not built")
#: GPU 300 + CPU 2,000 blocks
SMALL = {"tiers": ["gpu=300blocks", "cpu=2000blocks"], "policy": "lru"}


def _batch_counts() -> list[int]:
    """The sample's block hashes read after each batch, counted off ``as_batches`` (the reader)."""
    counts, total = [], 0
    for b in as_batches(str(SAMPLE)):
        total += len(b.block_hashes)
        counts.append(total)
    return counts


def _events(monkeypatch, mode: str, **kw):
    """pcs.replay of the sample read in 64 KiB batches under ``PCS_THREADS=mode``; the order of (a) each
    NativeHierarchy made (its tiers' count and the hint it got), (b) the start and end of the wait for the next-turn
    walk and (c) the end of the decode."""
    events = []
    real_init, real_decoded, real_result = native.NativeHierarchy.__init__, decoded.Decoded.__init__, turns.TurnWalk.result

    def spy_init(self, tiers, write_policy="back", expected_blocks=0):
        events.append(("hierarchy", len(tiers), expected_blocks))
        real_init(self, tiers, write_policy, expected_blocks)

    def spy_result(self, *a, **k):
        events.append("walk's result")
        try:
            return real_result(self, *a, **k)
        finally:
            events.append("walk joined")

    def spy_decoded(self, *a, **k):
        real_decoded(self, *a, **k)
        events.append(("decoded", self.num_block_hashes))

    with monkeypatch.context() as m:
        m.setattr(source, "CHUNK_BYTES", 1 << 16)
        m.setenv("PCS_THREADS", mode)
        m.setattr(native.NativeHierarchy, "__init__", spy_init)
        m.setattr(decoded.Decoded, "__init__", spy_decoded)
        m.setattr(turns.TurnWalk, "result", spy_result)
        return replay(str(SAMPLE), **kw), events


@native_step
@pytest.mark.parametrize("mode", ["on", "off"])
def test_built_while_the_walk_finishes(monkeypatch, mode):
    with monkeypatch.context() as m:
        m.setattr(source, "CHUNK_BYTES", 1 << 16)
        total = _batch_counts()[-1]
    got, events = _events(monkeypatch, mode, **SMALL)
    # the run's two-tier hierarchy with the trace's count, inside the wait for the walk; the decode's end; the
    # no-cache run's GPU tier (no hint: it has no shared table)
    assert events == ["walk's result", ("hierarchy", 2, total), "walk joined", ("decoded", total), ("hierarchy", 1, 0)]
    with monkeypatch.context() as m:
        m.setattr(loops.HierarchyAhead, "of", classmethod(lambda cls, *a: None))   # built after the decode
        want, before = _events(monkeypatch, mode, **SMALL)
    assert before == ["walk's result", "walk joined", ("decoded", total), ("hierarchy", 2, total), ("hierarchy", 1, 0)]
    _same(got, want)


@native_step
def test_without_the_walk_built_at_the_end_of_the_reads(monkeypatch):
    # decode blocks not cached: no next-turn walk, the hierarchy built once the reads are done, as before the loops
    from pcs.engine.schedconfig import SchedulerConfig

    with monkeypatch.context() as m:
        m.setattr(source, "CHUNK_BYTES", 1 << 16)
        total = _batch_counts()[-1]
    kw = dict(SMALL, scheduler=SchedulerConfig(cache_decode_blocks=False))
    got, events = _events(monkeypatch, "on", **kw)
    assert events == [("decoded", total), ("hierarchy", 2, total), ("hierarchy", 1, 0)]
    with monkeypatch.context() as m:
        m.setattr(loops.HierarchyAhead, "of", classmethod(lambda cls, *a: None))
        _same(got, _events(monkeypatch, "on", **kw)[0])


@native_step
def test_a_build_that_fails_is_made_again_after_the_decode(monkeypatch):
    calls = []
    real = native.NativeHierarchy.__init__

    def once(self, *a, **k):                 # the first build (during the decode) runs out of memory
        calls.append(len(calls))
        if len(calls) == 1:
            raise MemoryError
        real(self, *a, **k)

    want = _events(monkeypatch, "on", **SMALL)[0]
    monkeypatch.setattr(native.NativeHierarchy, "__init__", once)
    with monkeypatch.context() as m:
        m.setattr(source, "CHUNK_BYTES", 1 << 16)
        got = replay(str(SAMPLE), **SMALL)
    assert calls == [0, 1, 2]                # dropped, then the run's and the no-cache run's, as before
    _same(got, want)

    def refused(self, *a, **k):
        raise UserError("the hierarchy is refused")

    monkeypatch.setattr(native.NativeHierarchy, "__init__", refused)
    with monkeypatch.context() as m:
        m.setattr(source, "CHUNK_BYTES", 1 << 16)
        with pytest.raises(UserError, match="the hierarchy is refused"):
            replay(str(SAMPLE), **SMALL)
