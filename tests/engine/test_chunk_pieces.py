"""The step loops' chunks made in the decode pass (pcs.engine.chunks.ChunkPieces, Decoded(source, turns, pieces)).

Each batch's rule columns and prefill table are made on the next-turn search's worker as the batch is read (or by the
caller once its reads are done), and the
pieces of a joined batch are joined into its chunk; the chunks must be the ones ``iter_chunks`` makes after the decode.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

from conftest import MOONCAKE_CONV as MOONCAKE  # noqa: E402  (../shared/traces or $PCS_SHARED_TRACES)
from helpers import LinearCompute, req, room_spy
from pcs import _native
from pcs.blocks import BlockRules
from pcs.engine import decoded, turns
from pcs.engine import chunks
from pcs.engine.chunks import ChunkPieces, iter_chunks
from pcs.engine.decoded import Decoded
from pcs.engine.timing import TimeModel
from pcs.trace.batches import as_batches

needs_turns = pytest.mark.skipif(not _native.built("turns"), reason="the compiled pcs.engine._turns is not built")


class _Batches:
    """A trace given as its batches (anything with iter_batches())."""

    def __init__(self, batches: list) -> None:
        self.batches = batches

    def iter_batches(self):
        return iter(self.batches)


def _workers(before: set) -> list:
    return [t for t in set(threading.enumerate()) - before if t.name == "pcs-beside"]


# bs 4, default rules (full blocks only, the last prompt token recomputed: docs/semantics.md §2, §4), prefill
# 0.001 s per new token, cached tokens free (LinearCompute). Batches of 2 requests, joined up to 3 requests:
# [r0 r1] stays alone (2 + 2 > 3), [r2 r3] + [r4] are joined (2 + 1 = 3): the second chunk is two pieces.
HAND_REQS = [req([1, 2, 3], 0.0, prompt=10, out=3), req([1, 2], 1.0, prompt=8, out=0),
             req([1, 5], 2.0, prompt=5, out=4), req([7], 3.0, prompt=3, out=2),
             req([1, 2, 3, 4, 6], 4.0, prompt=20, out=1)]
# cacheable = min(P // 4, ids); max hit = min(cacheable, (P - 1) // 4); extra = ceil((P + out) / 4) - cacheable
# r0 P 10: 2, 2, ceil(13/4) - 2 = 2; r1 P 8: 2, 1, 0; r2 P 5: 1, 1, ceil(9/4) - 1 = 2; r3 P 3: 0, 0, 2;
# r4 P 20: 5, 4, ceil(21/4) - 5 = 1. Prefill table row: (P - min(4h, P)) x 0.001 s for h = 0 .. max hit.
# The second joined batch's table is reserved at its first batch's 3 entries for 2 requests, extrapolated to the
# joined batch's 3 rows plus a quarter: 3 + ceil(3 x 1 x 5 / 8) = 5 (chunks._group_estimate); r4's 5 more make it
# grow (to max(2 x 5, 3 + 5) = 10).
HAND_CHUNKS = [([2, 2], [2, 1], [2, 0], [0, 3, 5], [0.010, 0.006, 0.002, 0.008, 0.004]),
               ([1, 0, 5], [1, 0, 4], [2, 2, 1], [0, 2, 3, 8],
                [0.005, 0.001, 0.003, 0.020, 0.016, 0.012, 0.008, 0.004])]


def _check_hand_chunks(src, rules, timing) -> None:
    assert [len(b) for b in src.batches] == [2, 3]
    chunks = list(src.made_chunks(rules, timing, False))
    assert [c.first_request_id for c in chunks] == [0, 2]
    for ch, (cacheable, cap, extra, pre_off, pre) in zip(chunks, HAND_CHUNKS):
        a = ch.arrays
        assert (a[3].tolist(), a[4].tolist(), ch.extra_blocks, a[8].tolist()) == (cacheable, cap, extra, pre_off)
        assert a[7].tolist() == pytest.approx(pre, rel=1e-12, abs=0) and ch.decode_s == []
        assert (ch.cacheable, ch.max_hit_blocks, ch.prefill_offsets) == (cacheable, cap, pre_off)
    assert src.made_chunks(rules, timing, False) is None      # handed over once


@needs_turns
@pytest.mark.parametrize("threaded", [True, False])
def test_pieces_joined_by_hand(monkeypatch, threaded):
    monkeypatch.setattr(decoded, "MERGE_REQUESTS", 3)
    rules, timing = BlockRules(), TimeModel(LinearCompute())
    before = set(threading.enumerate())
    src = Decoded(_Batches(list(as_batches(HAND_REQS, rows=2))), turns.TurnWalk(threaded), ChunkPieces(rules, timing))
    assert not _workers(before)
    _check_hand_chunks(src, rules, timing)


class _HeldWalk(turns.TurnWalk):
    """A threaded walk whose worker waits (before its first walk) until ``go`` is set."""

    def __init__(self, go: threading.Event) -> None:
        super().__init__(True)
        self.go = go

    def _walk(self, *args) -> None:
        assert self.go.wait(60), "the caller never made the pieces"   # a guard against a hang, not a timing
        super()._walk(*args)


class _Recorded(ChunkPieces):
    """ChunkPieces that records the thread of each piece and sets ``go`` once ``n`` are made."""

    def __init__(self, rules, timing, go: threading.Event, n: int) -> None:
        super().__init__(rules, timing)
        self.go, self.n, self.threads = go, n, []

    def add(self, *args) -> None:
        super().add(*args)
        self.threads.append(threading.current_thread())
        if len(self.threads) == self.n:
            self.go.set()


@needs_turns
def test_pieces_made_by_the_caller_while_the_worker_walks(monkeypatch):
    # the worker is held before its first walk, so every piece waits in the queue when the reads are done: the
    # caller makes them, in order -- the first joined batch's piece, then its chunk once the second joined batch
    # begins (the second's pieces are not made in the decode: ChunkPieces.groups_ahead) -- and the chunks are the
    # hand-worked ones above
    monkeypatch.setattr(decoded, "MERGE_REQUESTS", 3)
    rules, timing, go = BlockRules(), TimeModel(LinearCompute()), threading.Event()
    pieces = _Recorded(rules, timing, go, 2)
    src = Decoded(_Batches(list(as_batches(HAND_REQS, rows=2))), _HeldWalk(go), pieces)
    assert pieces.threads == [threading.current_thread()] * 2
    _check_hand_chunks(src, rules, timing)


@needs_turns
@pytest.mark.parametrize("threaded", [True, False])
def test_later_joined_batches_are_made_whole_when_taken(monkeypatch, threaded):
    # only the first joined batch ([r0 r1]) is made in pieces in the decode: one prefill table of its 2 rows; the
    # second ([r2 r3] + [r4]) is made whole when its chunk is taken (one table of 3 rows, not two of 2 and 1),
    # the hand-worked values either way
    monkeypatch.setattr(decoded, "MERGE_REQUESTS", 3)
    rows, tables = [], TimeModel.tables

    def spy(self, prompt, *a, **k):
        rows.append(len(prompt))
        return tables(self, prompt, *a, **k)

    monkeypatch.setattr(TimeModel, "tables", spy)
    rules, timing = BlockRules(), TimeModel(LinearCompute())
    src = Decoded(_Batches(list(as_batches(HAND_REQS, rows=2))), turns.TurnWalk(threaded), ChunkPieces(rules, timing))
    assert rows == [2]
    _check_hand_chunks(src, rules, timing)
    assert rows == [2, 3]


def test_group_reserve_by_hand(monkeypatch):
    # a joined batch's table is reserved once for its estimated entries (the first piece's per row over the joined
    # batch's rows, plus a quarter), at most RESERVE_ENTRIES and never below what the piece needs
    # (the first joined batch's rows: at most 32,768, decoded.FIRST_MERGE_REQUESTS)
    assert chunks._group_estimate(100, 10) == 100 + 100 * 32_758 * 5 // 40   # 10 per row, 32,758 rows more, x 1.25
    assert chunks._group_estimate(50_001, 1) == 1 << 22                        # one long request: the cap
    assert chunks._group_estimate(5_000_000, 1) == 5_000_000                   # past the cap: what it needs
    assert chunks._group_estimate(7, 1 << 15) == 7                             # a whole first batch: its own
    monkeypatch.setattr(decoded, "MERGE_REQUESTS", 3)
    assert chunks._group_estimate(3, 2) == 5                                   # 3 + ceil(3 x 1 x 5 / 8) under 3 rows
    # three batches of one request each (2 table entries: prompt 5, max hit 1) joined into one of 3: the first
    # reserves 2 + ceil(2 x 2 x 5 / 4) = 7 entries, so the next two (2 each) fit without a move
    moved = room_spy(monkeypatch)
    reqs = [req([1, 2], float(i), prompt=5, out=0) for i in range(3)]
    rules, timing = BlockRules(), TimeModel(LinearCompute())
    pieces = ChunkPieces(rules, timing)
    for i, b in enumerate(as_batches(reqs, rows=1)):
        pieces.add(b, False)
    assert moved == [False, False, False] and len(pieces._groups[0][1]) == 7


def test_made_only_for_what_was_asked():
    # another rule set, another time model or decode seconds: not the chunks made, so None (iter_chunks makes them)
    reqs = [req([1, 2], 0.0), req([1, 3], 1.0)]
    rules, timing = BlockRules(), TimeModel(LinearCompute())
    assert Decoded(reqs).made_chunks(rules, timing, False) is None                       # no pieces given
    if not _native.built("turns"):
        return
    make = lambda: Decoded(reqs, turns.TurnWalk(False), ChunkPieces(rules, timing))  # noqa: E731
    assert make().made_chunks(BlockRules(cache_partial_blocks=True), timing, False) is None
    assert make().made_chunks(rules, TimeModel(LinearCompute()), False) is None
    assert make().made_chunks(rules, timing, True) is None
    assert Decoded(reqs, None, ChunkPieces(rules, timing)).made_chunks(rules, timing, False) is None  # no walk


def _same_chunk(a, b) -> None:
    assert (a.first_request_id, a.block_size, len(a)) == (b.first_request_id, b.block_size, len(b))
    for x, y in zip(a.arrays, b.arrays):
        assert x.dtype == y.dtype and np.array_equal(x, y)
    for name in ("cacheable", "max_hit_blocks", "extra_blocks", "prefill_s", "prefill_offsets", "decode_s"):
        assert getattr(a, name) == getattr(b, name), name


@needs_turns
@pytest.mark.skipif(not MOONCAKE.exists(), reason="no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES")
@pytest.mark.parametrize("merge", [1 << 16, 5000])
def test_made_in_the_decode_equal_iter_chunks_on_mooncake(monkeypatch, merge):
    # 64 KiB chunks (about 46 batches) joined up to 65,536 requests (one chunk of 46 pieces) or 5,000 (3 chunks,
    # two of them joined on the worker during the decode): the chunks iter_chunks makes of the decoded trace,
    # array for array, under the compiled prefill table's compute model (a preset's ComputeModel)
    from pcs.compute import ComputeModel
    from pcs.trace import source

    monkeypatch.setattr(source, "CHUNK_BYTES", 1 << 16)
    monkeypatch.setattr(decoded, "MERGE_REQUESTS", merge)
    rules, timing = BlockRules(), TimeModel(ComputeModel("llama-2-70b", "h100-sxm", tp=8, block_size=512))
    before = set(threading.enumerate())
    src = Decoded(str(MOONCAKE), turns.TurnWalk(True), ChunkPieces(rules, timing))
    assert not _workers(before)
    made = list(src.made_chunks(rules, timing, False))
    want = list(iter_chunks(src, rules, TimeModel(timing.compute), False))
    assert len(made) == len(want) == len(src.batches) == (1 if merge > 12031 else 3)
    for a, b in zip(made, want):
        _same_chunk(a, b)
