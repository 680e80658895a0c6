"""A trace file decoded beside the caller's work while the caller makes the chunk pieces (Decoded(..., ahead=True)).

With the next-turn search on its worker (:class:`pcs.engine.turns.TurnWalk`) and the chunk pieces given, a block-id
JSONL file read by the compiled twin is read and checked on the calling thread and each chunk decoded on a thread of
its own (``decode_ahead``, :func:`pcs.trace.jsonfast.parse_chunks`); another trace file's batches are read, decoded
and checked on a reader worker (:func:`pcs.trace.batches.read_ahead`, one batch in flight); either way the calling
thread queues each batch's walk and makes its piece. The batches, the decode blocks and
the chunks must be those of the inline read, and a bad line must give the inline read's error, with no worker left.
"""
from __future__ import annotations

import json
import threading

import pytest

from helpers import DECODE_HAND, LinearCompute, beside_workers, check_decoded_hand
from pcs import _native
from pcs.blocks import BlockRules
from pcs.engine import turns
from pcs.engine.chunks import ChunkPieces
from pcs.engine.decoded import Decoded
from pcs.engine.timing import TimeModel
from pcs.errors import InputError
from pcs.trace import jsonfast, open_trace, source

needs_twins = pytest.mark.skipif(not (_native.built("turns") and _native.built("jsonrows")),
                                 reason="the compiled pcs.engine._turns or pcs.trace._jsonrows is not built")

HAND = DECODE_HAND


def _write(path, rows, bad_at: int | None = None) -> None:
    with open(path, "w") as f:
        for k, (ids, t, p, o) in enumerate(rows):
            f.write('{"timestamp": 1.0, "input_length": "x", "output_length": 1, "hash_ids": [1]}\n' if k == bad_at else
                    json.dumps({"timestamp": 1000 * t, "input_length": p, "output_length": o, "hash_ids": ids}) + "\n")


def _spied(monkeypatch) -> list:
    """Where the compiled JSONL decode of each chunk ran: the Python thread that decoded it in line
    (``native_decode``), or ``"own"`` for a chunk handed to a thread of its own (``_start``: ``decode_start``)."""
    threads: list = []
    real, real_start = jsonfast.native_decode, jsonfast._start

    def spy(*a, **k):
        threads.append(threading.current_thread())
        return real(*a, **k)

    def spy_start(*a):
        threads.append("own")
        return real_start(*a)

    monkeypatch.setattr(jsonfast, "native_decode", spy)
    monkeypatch.setattr(jsonfast, "_start", spy_start)
    return threads


@needs_twins
@pytest.mark.parametrize("ahead", [True, False])
def test_read_on_a_worker_gives_the_hand_worked_trace(tmp_path, monkeypatch, ahead):
    # 64-byte reads: one line a chunk, five chunks (each line is longer than 64 bytes), joined into one batch
    path = tmp_path / "t.jsonl"
    _write(path, HAND)
    monkeypatch.setattr(source, "CHUNK_BYTES", 64)
    threads = _spied(monkeypatch)
    rules, timing = BlockRules(), TimeModel(LinearCompute())
    before = set(threading.enumerate())
    src = Decoded(open_trace(path, block_size=4), turns.TurnWalk(True), ChunkPieces(rules, timing), ahead=ahead)
    assert not beside_workers(before)
    # ahead (threads wanted): each chunk decoded on a thread of its own (no Python thread, no GIL), read here
    me = threading.current_thread()
    assert threads == (["own"] * 5 if ahead else [me] * 5)
    check_decoded_hand(src, rules, timing)


@needs_twins
def test_in_memory_sources_are_not_read_ahead(monkeypatch):
    # a source in memory is Python work alone: read on the calling thread even when asked to read ahead
    from helpers import req

    reqs = [req(ids, t, prompt=p, out=o) for ids, t, p, o in HAND]
    seen: list = []
    real = Decoded.__init__.__globals__["as_batches"]

    def spy(*a, **k):
        for b in real(*a, **k):
            seen.append(threading.current_thread())
            yield b

    monkeypatch.setitem(Decoded.__init__.__globals__, "as_batches", spy)
    Decoded(reqs, turns.TurnWalk(True), None, ahead=True)
    assert seen == [threading.current_thread()]


@needs_twins
@pytest.mark.parametrize("bad_at", [1, 3])
def test_a_bad_line_read_ahead_raises_the_inline_error(tmp_path, monkeypatch, bad_at):
    # the second or the fourth line's input_length is a string: the same error (file, line, field) read ahead as inline, raised
    # at the batch where it occurred, and no worker is left
    path = tmp_path / "bad.jsonl"
    _write(path, HAND, bad_at)
    monkeypatch.setattr(source, "CHUNK_BYTES", 64)
    rules, timing = BlockRules(), TimeModel(LinearCompute())
    got = []
    for ahead in (False, True):
        before = set(threading.enumerate())
        with pytest.raises(InputError) as err:
            Decoded(open_trace(path, block_size=4), turns.TurnWalk(True), ChunkPieces(rules, timing), ahead=ahead)
        assert not beside_workers(before)
        got.append(str(err.value))
    assert got[0] == got[1] and f":{bad_at + 1}:" in got[0] and "input_length" in got[0]
