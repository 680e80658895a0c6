"""The run's first compiled hierarchy built while the trace is still read (pcs.engine.loops.HierarchyAhead).

A :class:`pcs.cache.native.NativeHierarchy` sizes its shared table's slots for ``min(expected_blocks, GPU + CPU
capacity + 1)`` blocks (pcs/cache/_lruhier.c ``sh_open``), so once the batches read so far hold more block hashes
than the tiers hold blocks, the whole trace's count would give the same table: the run's hierarchy is built then, on
the calling thread while the reader and the next-turn walk run (:class:`pcs.engine.decoded.Decoded`'s ``seen``),
instead of after the decode. The replay must be the one of building it after the decode (``HierarchyAhead.of``
returning None), threaded and inline, and a build that fails is made again after the decode, its error in place.
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pcs import replay
from pcs.cache import native
from pcs.cache.native import hint_saturated
from pcs.engine import decoded, loops, stepnative
from pcs.errors import UserError
from pcs.trace import source
from pcs.trace.batches import as_batches
from test_beside import _same

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "traces" / "sample_chat.jsonl"
native_step = pytest.mark.skipif(stepnative._stepsched is None or native._lruhier is None,
                                 reason="the compiled step scheduler or hierarchy is not built")
#: GPU 300 + CPU 2,000 blocks: the shared table is sized for min(expected, 2,301) blocks
SMALL = {"tiers": ["gpu=300blocks", "cpu=2000blocks"], "policy": "lru"}


def test_hint_saturated_by_hand():
    # GPU 2 + CPU 3 blocks: slots for min(expected, 2 + 3 + 1 = 6) blocks; 5 gives a smaller table, 6 and up the same
    tiers = [SimpleNamespace(capacity_blocks=2), SimpleNamespace(capacity_blocks=3)]
    assert [hint_saturated(tiers, n) for n in (0, 5, 6, 7, 10 ** 6)] == [False, False, True, True, True]
    assert hint_saturated([SimpleNamespace(capacity_blocks=0)], 1) and not hint_saturated([], 0)


def _batch_counts() -> list[int]:
    """The sample's block hashes read after each batch of 64 KiB reads, counted off ``as_batches`` (the reader)."""
    counts, total = [], 0
    for b in as_batches(str(SAMPLE)):
        total += len(b.block_hashes)
        counts.append(total)
    return counts


def _events(monkeypatch, mode: str, **kw):
    """pcs.replay of the sample read in 64 KiB batches under ``PCS_THREADS=mode``; the order of (a) each
    NativeHierarchy made (its tiers' count and the hint it got) and (b) the end of the decode."""
    events = []
    real_init, real_decoded = native.NativeHierarchy.__init__, decoded.Decoded.__init__

    def spy_init(self, tiers, write_policy="back", expected_blocks=0):
        events.append(("hierarchy", len(tiers), expected_blocks))
        real_init(self, tiers, write_policy, expected_blocks)

    def spy_decoded(self, *a, **k):
        real_decoded(self, *a, **k)
        events.append(("decoded", self.num_block_hashes))

    with monkeypatch.context() as m:
        m.setattr(source, "CHUNK_BYTES", 1 << 16)
        m.setenv("PCS_THREADS", mode)
        m.setattr(native.NativeHierarchy, "__init__", spy_init)
        m.setattr(decoded.Decoded, "__init__", spy_decoded)
        return replay(str(SAMPLE), **kw), events


@native_step
@pytest.mark.parametrize("mode", ["on", "off"])
def test_built_during_the_decode_once_the_batches_size_it(monkeypatch, mode):
    with monkeypatch.context() as m:
        m.setattr(source, "CHUNK_BYTES", 1 << 16)
        counts = _batch_counts()
    first = next(c for c in counts if c > 2300)           # the first batch whose count sizes the table
    assert len(counts) > 2 and first < counts[-1]          # built before the last batch: during the decode
    got, events = _events(monkeypatch, mode, **SMALL)
    # the run's two-tier hierarchy with the count read so far, the decode's end, the no-cache run's GPU tier (no
    # hint: it has no shared table)
    assert events == [("hierarchy", 2, first), ("decoded", counts[-1]), ("hierarchy", 1, 0)]
    with monkeypatch.context() as m:
        m.setattr(loops.HierarchyAhead, "of", classmethod(lambda cls, *a: None))   # built after the decode
        want, before = _events(monkeypatch, mode, **SMALL)
    assert before == [("decoded", counts[-1]), ("hierarchy", 2, counts[-1]), ("hierarchy", 1, 0)]
    _same(got, want)


@native_step
def test_too_few_hashes_build_it_after_the_decode(monkeypatch):
    # GPU 30,000 + CPU 100,000 blocks: the sample holds fewer hashes, so only the whole count sizes the table
    with monkeypatch.context() as m:
        m.setattr(source, "CHUNK_BYTES", 1 << 16)
        total = _batch_counts()[-1]
    assert total <= 130_000
    _, events = _events(monkeypatch, "on", tiers=["gpu=30000blocks", "cpu=100000blocks"], policy="lru")
    assert events == [("decoded", total), ("hierarchy", 2, total), ("hierarchy", 1, 0)]


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
