"""A Parquet trace of one read batch is read on the calling thread (Decoded(..., ahead=True), one_read_batch).

A reader worker would read its one batch while the calling thread, with nothing of it to work on, waits; so the read
(pyarrow's pieces and the checks) runs on the calling thread, the next-turn walk on the compiled search's walk thread
(``_turns.queue``: no Python worker, no walk on the calling thread) and the chunk pieces on the calling thread beside
it. A trace of more read batches keeps its reader worker. The batches, the
decode blocks, the chunks and a bad row's error must be those of the inline read, and no worker may be left, after
an error or Ctrl-C too. Expected values are worked out by hand from the rows written here (block size 4).
"""
from __future__ import annotations

import threading

import pytest

from helpers import DECODE_HAND, LinearCompute, beside_workers, check_decoded_hand, spy_compiled_turns
from pcs import _native
from pcs.blocks import BlockRules
from pcs.engine import chunks, decoded, turns
from pcs.engine.chunks import ChunkPieces
from pcs.engine.decoded import Decoded, one_read_batch
from pcs.engine.timing import TimeModel
from pcs.errors import InputError
from pcs.trace import open_trace, parquet

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
needs_twins = pytest.mark.skipif(not (_native.built("turns") and _native.built("jsonrows")),
                                 reason="the compiled pcs.engine._turns or pcs.trace._jsonrows is not built")

HAND = DECODE_HAND
META = {b"pcs.schema": b"pcs-trace/1", b"pcs.block_size": b"4", b"pcs.source_format": b"mooncake"}


def _write(path, rows) -> str:
    t = pa.table({"arrival_s": pa.array([r[1] for r in rows], pa.float64()),
                  "prompt_tokens": pa.array([r[2] for r in rows], pa.int64()),
                  "output_tokens": pa.array([r[3] for r in rows], pa.int64()),
                  "block_hashes": pa.array([r[0] for r in rows], pa.list_(pa.uint64()))})
    pq.write_table(t.replace_schema_metadata(META), path)
    return str(path)


def _where(monkeypatch) -> dict:
    """The threads that ran pyarrow's pieces (``read``), the walks (``walk``) and the chunk pieces (``piece``)."""
    seen: dict = {"read": set(), "walk": set(), "piece": set()}
    real_rb, real_walk, real_add = parquet._record_batches, turns.TurnWalk._walk, ChunkPieces.add

    def rb(*a, **k):
        for x in real_rb(*a, **k):
            seen["read"].add(threading.current_thread())
            yield x

    def walk(self, *a):
        seen["walk"].add(threading.current_thread())
        return real_walk(self, *a)

    def add(self, *a):
        seen["piece"].add(threading.current_thread())
        return real_add(self, *a)

    monkeypatch.setattr(parquet, "_record_batches", rb)
    monkeypatch.setattr(turns.TurnWalk, "_walk", walk)
    monkeypatch.setattr(ChunkPieces, "add", add)
    return seen


def _decode(path, ahead: bool = True) -> tuple:
    rules, timing = BlockRules(), TimeModel(LinearCompute())
    return Decoded(open_trace(path), turns.TurnWalk(True), ChunkPieces(rules, timing), ahead=ahead), rules, timing


def test_one_read_batch_is_the_footers_rows_against_a_read_batch(tmp_path, monkeypatch):
    path = _write(tmp_path / "t.parquet", HAND)
    assert one_read_batch(open_trace(path))                      # 5 rows <= READ_ROWS (16,384)
    monkeypatch.setattr(parquet, "READ_ROWS", 5)
    assert one_read_batch(open_trace(path))                      # exactly one batch
    monkeypatch.setattr(parquet, "READ_ROWS", 4)
    assert not one_read_batch(open_trace(path))                  # two batches
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_text('{"timestamp": 0, "input_length": 4, "output_length": 1, "hash_ids": [1]}\n')
    assert not one_read_batch(open_trace(jsonl)) and not one_read_batch(str(path)) and not one_read_batch(None)


@needs_twins
def test_a_one_batch_trace_is_read_here_walked_on_the_compiled_walk_thread(tmp_path, monkeypatch):
    path = _write(tmp_path / "t.parquet", HAND)
    seen = _where(monkeypatch)
    calls = spy_compiled_turns(monkeypatch)
    before, me = set(threading.enumerate()), threading.current_thread()
    src, rules, timing = _decode(path)
    assert not beside_workers(before)
    assert seen["read"] == {me} and seen["piece"] == {me}
    # the 5 rows (one piece) queued from here for the compiled walk thread, waited for once read: no walk on this
    # thread (no _turns.walk) nor on a Python worker (no TurnWalk._walk)
    assert [(name, t is me) for name, t, _ in calls] == [("new", True), ("queue", True), ("drain", True),
                                                         ("result", True)]
    first, bs, hashes, _, prompt, _ = calls[1][2]
    assert (first, bs, hashes.tolist(), prompt.tolist()) == (0, 4, [1, 2, 3, 1, 2, 1, 5, 7, 1, 2, 3, 4, 6],
                                                             [10, 8, 5, 3, 20])
    assert calls[2][2] == (False,) and seen["walk"] == set()
    check_decoded_hand(src, rules, timing)


@needs_twins
def test_a_trace_of_more_read_batches_keeps_its_reader_worker(tmp_path, monkeypatch):
    # read batches of 2 rows: 3 batches, read on a reader worker; the joined batch and its values are the same
    path = _write(tmp_path / "t.parquet", HAND)
    monkeypatch.setattr(parquet, "READ_ROWS", 2)
    seen = _where(monkeypatch)
    before, me = set(threading.enumerate()), threading.current_thread()
    src, rules, timing = _decode(path)
    assert not beside_workers(before)
    assert len(seen["read"]) == 1 and me not in seen["read"]
    check_decoded_hand(src, rules, timing)


@needs_twins
@pytest.mark.parametrize("bad_row", [1, 5])
def test_a_bad_row_gives_the_inline_error_and_leaves_no_worker(tmp_path, bad_row):
    # output_tokens -1 in row 1 or in the last row (5): the inline read's error (file, row, field), read here
    rows = [r if k != bad_row - 1 else (r[0], r[1], r[2], -1) for k, r in enumerate(HAND)]
    path = _write(tmp_path / "bad.parquet", rows)
    got = []
    for ahead in (False, True):
        before = set(threading.enumerate())
        with pytest.raises(InputError) as err:
            _decode(path, ahead)
        assert not beside_workers(before)
        got.append(str(err.value))
    assert got[0] == got[1] == f"{path}:{bad_row}: field 'output_tokens': must be >= 0, got -1"


@needs_twins
@pytest.mark.parametrize("where", ["read", "piece"])
def test_ctrl_c_on_the_calling_thread_leaves_no_worker(tmp_path, monkeypatch, where):
    # Ctrl-C lands on the calling thread in the read's checks (before any walk) or while it makes the chunk
    # piece (the batch's one piece queued for the compiled walk thread): KeyboardInterrupt comes out, no Python
    # worker is left, the queue is drained dropping what it holds (_turns.drain with drop) and the walk's outcome
    # is never read (no _turns.result); a later decode then gives the values worked out by hand
    path = _write(tmp_path / "t.parquet", HAND)
    me = threading.current_thread()

    def stop(real):
        def f(*a, **k):
            if threading.current_thread() is me:
                raise KeyboardInterrupt
            return real(*a, **k)
        return f

    if where == "read":
        monkeypatch.setattr(parquet, "_checked", stop(parquet._checked))
    else:
        monkeypatch.setattr(ChunkPieces, "add", stop(ChunkPieces.add))
    calls = spy_compiled_turns(monkeypatch)
    before = set(threading.enumerate())
    with pytest.raises(KeyboardInterrupt):
        _decode(path)
    assert not beside_workers(before)
    # the read's case: nothing queued nor drained; the piece's: its 5 rows queued, then drained dropping
    assert [(n, len(a[4]) if n == "queue" else a) for n, _, a in calls[1:]] == \
        ([] if where == "read" else [("queue", 5), ("drain", (True,))])
    assert calls[0][0] == "new"
    monkeypatch.undo()
    check_decoded_hand(*_decode(path))


@needs_twins
def test_replay_threads_on_and_off_agree(tmp_path, monkeypatch):
    # the whole two-tier call with threads on (the read here, the walk on a worker) and off (all inline): the same
    # summary, the read on the calling thread both ways, no worker left
    import pcs

    path = _write(tmp_path / "t.parquet", HAND)
    kw = dict(tiers=["gpu=16blocks", "cpu=64blocks"], policy="lru")
    out = {}
    for mode in ("on", "off"):
        monkeypatch.setenv("PCS_THREADS", mode)
        seen = _where(monkeypatch)
        before = set(threading.enumerate())
        r = pcs.replay(path, **kw)
        assert not beside_workers(before)
        assert seen["read"] == {threading.current_thread()}
        out[mode] = r.summary.to_dict()
        assert out[mode].pop("threads")["used"] is (mode == "on")
    assert out["on"] == out["off"]
