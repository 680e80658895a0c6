"""The next-turn walk of a Parquet trace read on the calling thread takes the read's pieces as pyarrow decodes them.

A Parquet trace of one read batch is read on the calling thread (tests/engine/test_decoded_parquet_here.py); its
read is cut into pieces (pcs.trace.parquet._piece_rows) joined into the one batch. When the pieces are the batch's
rows (``on_error="raise"``, no ``sort``: decoded._pieces_are_rows) each piece goes to the walk as it is read, before
the next one is (queued for the compiled search's walk thread, ``_turns.queue``), and the batch is not walked again;
else the batch is walked once read, as before.
The batches, the decode blocks and a bad row's error must be those of the inline read, and no worker may be left.

Expected values are worked out by hand from the rows written here (block size 4): row 0 alone, then 6,000 pairs.
Pair k (rows 2k + 1 and 2k + 2): A = ids [10k+1, 10k+2], prompt 8, output 8 (f = 8 // 4 = 2 full blocks, id
10k+2 at position 1, p + o = 16); B = ids [10k+1 .. 10k+4], prompt 16, output 0: B holds A's id at position 1 and
16 >= 16, so B is A's next turn; A's decode blocks are positions 2 .. (16 - 1) // 4 - 1 = 2, as far as B's
cacheable min(16 // 4, 4) = 4 blocks reach: B's id there, 10k+3 (docs/semantics.md §9). No id appears in two
pairs, so no other request pairs: 6,000 pairs, request 2k + 1 gets [10k + 3]. 12,001 rows (<= READ_ROWS, 16,384: one
read batch) in one row group are read in pieces of max(PIECE_ROWS = 2,048, ceil(12,001 / 8)) = 2,048 rows: five of
2,048 and one of 1,761; pair 1,023 (rows 2,047 and 2,048) lies across the first two. The walk takes them
PIECES_A_HANDOVER = 3 at a time: pieces 1-3 once piece 3 is read, before piece 4 is.
"""
from __future__ import annotations

import threading

import pytest

from helpers import LinearCompute, spy_compiled_turns
from pcs import _native
from pcs.blocks import BlockRules
from pcs.engine import decoded, turns
from pcs.engine.chunks import ChunkPieces
from pcs.engine.decoded import Decoded
from pcs.engine.timing import TimeModel
from pcs.errors import InputError
from pcs.trace import open_trace, parquet

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
needs_twins = pytest.mark.skipif(not (_native.built("turns") and _native.built("jsonrows")),
                                 reason="the compiled pcs.engine._turns or pcs.trace._jsonrows is not built")

PAIRS = 6000
ROWS = 1 + 2 * PAIRS
PIECES = [2048] * 5 + [1761]
READ = [("read", n) for n in PIECES]
WALK = [("walk", n) for n in PIECES]
META = {b"pcs.schema": b"pcs-trace/1", b"pcs.block_size": b"4", b"pcs.source_format": b"mooncake"}


def _rows() -> list:
    """(ids, arrival s, prompt, output) of the module docstring's trace."""
    rows = [([999_999], 0.0, 4, 0)]
    for k in range(PAIRS):
        rows.append(([10 * k + 1, 10 * k + 2], 0.001 * (2 * k + 1), 8, 8))
        rows.append(([10 * k + 1, 10 * k + 2, 10 * k + 3, 10 * k + 4], 0.001 * (2 * k + 2), 16, 0))
    return rows


def _write(path, rows) -> str:
    t = pa.table({"arrival_s": pa.array([r[1] for r in rows], pa.float64()),
                  "prompt_tokens": pa.array([r[2] for r in rows], pa.int64()),
                  "output_tokens": pa.array([r[3] for r in rows], pa.int64()),
                  "block_hashes": pa.array([r[0] for r in rows], pa.list_(pa.uint64()))})
    pq.write_table(t.replace_schema_metadata(META), path, row_group_size=ROWS)
    return str(path)


def _workers(before: set) -> list:
    return [t for t in set(threading.enumerate()) - before if t.name == "pcs-beside"]


def _events(monkeypatch) -> list:
    """("read", rows) as pyarrow's pieces come, ("walk", rows, thread) as rows are handed to the walk."""
    ev: list = []
    real_rb, real_rows = parquet._record_batches, turns.TurnWalk.add_rows

    def rb(*a, **k):
        for x in real_rb(*a, **k):
            ev.append(("read", x.num_rows))
            yield x

    def add_rows(self, block_size, offsets, *a, **k):
        ev.append(("walk", len(offsets) - 1, threading.current_thread()))
        return real_rows(self, block_size, offsets, *a, **k)

    monkeypatch.setattr(parquet, "_record_batches", rb)
    monkeypatch.setattr(turns.TurnWalk, "add_rows", add_rows)
    return ev


def _decode(trace, ahead: bool = True) -> Decoded:
    return Decoded(trace, turns.TurnWalk(True), ChunkPieces(BlockRules(), TimeModel(LinearCompute())), ahead=ahead)


def _check_hand_values(src) -> None:
    assert [len(b) for b in src.batches] == [ROWS]
    nt = src.next_turns
    assert nt.pairs == PAIRS and nt.requests == ROWS
    assert nt.index.tolist() == [2 * k + 1 for k in range(PAIRS)]
    assert nt.starts.tolist() == list(range(PAIRS + 1))
    assert nt.ids.tolist() == [10 * k + 3 for k in range(PAIRS)]


def test_the_pieces_are_the_rows_only_when_read_raising_and_unsorted(tmp_path):
    path = _write(tmp_path / "t.parquet", _rows()[:5])
    assert decoded._pieces_are_rows(open_trace(path))
    assert not decoded._pieces_are_rows(open_trace(path, on_error="skip"))     # a bad row would leave its batch
    assert not decoded._pieces_are_rows(open_trace(path, sort=True))           # rows move
    assert not decoded._pieces_are_rows(str(path))                             # no trace opened: no rule known


@needs_twins
def test_each_piece_is_handed_to_the_walk_as_it_is_read(tmp_path, monkeypatch):
    path = _write(tmp_path / "t.parquet", _rows())
    ev = _events(monkeypatch)
    before, me = set(threading.enumerate()), threading.current_thread()
    src = _decode(open_trace(path))
    assert not _workers(before)
    # pieces 1-3 handed to the walk before piece 4 is read, 4-6 once read; the joined batch not walked again
    assert [e[:2] for e in ev] == READ[:3] + WALK[:3] + READ[3:] + WALK[3:]
    assert {e[2] for e in ev if e[0] == "walk"} == {me}        # handed over here ...
    _check_hand_values(src)                                    # ... and the walk's values the inline ones


@needs_twins
@pytest.mark.parametrize("how", [dict(on_error="skip"), dict(sort=True)])
def test_a_trace_whose_pieces_may_not_be_its_rows_is_walked_as_a_batch(tmp_path, monkeypatch, how):
    path = _write(tmp_path / "t.parquet", _rows())
    ev = _events(monkeypatch)
    src = _decode(open_trace(path, **how))
    assert [e[:2] for e in ev] == READ + [("walk", ROWS)]
    _check_hand_values(src)


@needs_twins
def test_the_inline_read_gives_the_same_values(tmp_path, monkeypatch):
    path = _write(tmp_path / "t.parquet", _rows())
    ev = _events(monkeypatch)
    _check_hand_values(_decode(open_trace(path), ahead=False))
    assert [e[:2] for e in ev] == READ + [("walk", ROWS)]


@needs_twins
@pytest.mark.parametrize("at_once, order", [
    (1, READ[:1] + WALK[:1] + READ[1:2] + WALK[1:2] + READ[2:3] + WALK[2:3] + READ[3:4] + WALK[3:4] + READ[4:5] +
     WALK[4:5] + READ[5:] + WALK[5:]),
    (4, READ[:4] + WALK[:4] + READ[4:] + WALK[4:]),         # the last two handed once the read ends
])
def test_the_pieces_handed_at_once(tmp_path, monkeypatch, at_once, order):
    path = _write(tmp_path / "t.parquet", _rows())
    ev = _events(monkeypatch)
    monkeypatch.setattr(decoded, "PIECES_A_HANDOVER", at_once)
    src = _decode(open_trace(path))
    assert [e[:2] for e in ev] == order
    _check_hand_values(src)


@needs_twins
@pytest.mark.parametrize("row, field, value, problem", [
    (12001, "output_tokens", -1, "must be >= 0, got -1"),      # the last piece's last row
    (2, "prompt_tokens", -8, "must be >= 0, got -8"),          # the first piece, its walk handed over already
])
def test_a_bad_row_gives_the_inline_error_and_leaves_no_worker(tmp_path, monkeypatch, row, field, value, problem):
    rows = _rows()
    ids, ts, p, o = rows[row - 1]
    # a negative prompt with no id (ceil(-8 / 4) < 0 ids: the count rule comes after the token rule)
    rows[row - 1] = ([], ts, value, o) if field == "prompt_tokens" else (ids, ts, p, value)
    path = _write(tmp_path / "bad.parquet", rows)
    ev = _events(monkeypatch)
    got = []
    for ahead in (False, True):
        before = set(threading.enumerate())
        ev.clear()
        with pytest.raises(InputError) as err:
            _decode(open_trace(path), ahead)
        assert not _workers(before)
        got.append(str(err.value))
    assert [e[:2] for e in ev] == READ[:3] + WALK[:3] + READ[3:] + WALK[3:]       # walked, dropped
    assert got[0] == got[1] == f"{path}:{row}: field '{field}': {problem}"


@needs_twins
def test_a_null_in_a_later_piece_is_the_inline_error(tmp_path):
    # a negative prompt in row 2 (piece 1) and a null output in row 5,000 (piece 3): the inline read raises the
    # null, found as its piece is read, before the batch's value checks; so does the read with the pieces walked
    rows = _rows()
    rows[1] = ([], rows[1][1], -8, rows[1][3])
    path = tmp_path / "null.parquet"
    t = pa.table({"arrival_s": pa.array([r[1] for r in rows], pa.float64()),
                  "prompt_tokens": pa.array([r[2] for r in rows], pa.int64()),
                  "output_tokens": pa.array([None if i == 4999 else r[3] for i, r in enumerate(rows)], pa.int64()),
                  "block_hashes": pa.array([r[0] for r in rows], pa.list_(pa.uint64()))})
    pq.write_table(t.replace_schema_metadata(META), path, row_group_size=ROWS)
    got = []
    for ahead in (False, True):
        before = set(threading.enumerate())
        with pytest.raises(InputError) as err:
            _decode(open_trace(path), ahead)
        assert not _workers(before)
        got.append(str(err.value))
    assert got[0] == got[1] == f"{path}:5000: field 'output_tokens': null value"


@needs_twins
def test_ctrl_c_in_a_later_piece_leaves_no_worker(tmp_path, monkeypatch):
    # Ctrl-C while pyarrow reads the fifth piece, the first three queued for the compiled walk thread (requests
    # 0, 2,048 and 4,096 on): no Python worker is left, the queue is drained dropping what it holds (_turns.drain
    # with drop), the walk's outcome never read (no _turns.result); a later decode gives the hand-worked values
    path = _write(tmp_path / "t.parquet", _rows())
    real_rb = parquet._record_batches

    def rb(*a, **k):
        for i, x in enumerate(real_rb(*a, **k)):
            if i == 4:
                raise KeyboardInterrupt
            yield x

    monkeypatch.setattr(parquet, "_record_batches", rb)
    calls = spy_compiled_turns(monkeypatch)
    before = set(threading.enumerate())
    with pytest.raises(KeyboardInterrupt):
        _decode(open_trace(path))
    assert not _workers(before)
    assert [(n, (a[0], len(a[4])) if n == "queue" else a) for n, _, a in calls[1:]] == \
        [("queue", (0, 2048)), ("queue", (2048, 2048)), ("queue", (4096, 2048)), ("drain", (True,))]
    assert calls[0][0] == "new"
    monkeypatch.undo()
    _check_hand_values(_decode(open_trace(path)))


def test_pieces_covering_part_of_a_batch_are_refused():
    # a reader whose batches are not its pieces: 3 rows walked as pieces, then a batch of 5 rows
    class Walk:
        def __init__(self):
            self.rows, self.batches = [], []

        def add_rows(self, bs, off, h, p, o):
            self.rows.append(len(p))

        def add(self, b, also=None):
            self.batches.append(len(b))

    w = Walk()
    by = decoded._PiecesWalked(w)
    by.batch([0] * 2)                            # no piece came: the batch is walked
    by.piece(4, [0, 0, 0, 0], [], [1, 1, 1], [0, 0, 0])
    by.batch([0] * 3)                            # its rows came as that piece: not walked again
    assert (w.rows, w.batches) == ([3], [2])
    by.piece(4, [0, 0, 0, 0], [], [1, 1, 1], [0, 0, 0])
    with pytest.raises(RuntimeError, match="the pieces walked hold 8 rows, the batches 10"):
        by.batch([0] * 5)


@needs_twins
def test_replay_threads_on_and_off_agree(tmp_path, monkeypatch):
    import pcs

    path = _write(tmp_path / "t.parquet", _rows())
    out = {}
    for mode in ("on", "off"):
        monkeypatch.setenv("PCS_THREADS", mode)
        before = set(threading.enumerate())
        r = pcs.replay(path, tiers=["gpu=16blocks", "cpu=64blocks"], policy="lru")
        assert not _workers(before)
        out[mode] = r.summary.to_dict()
        assert out[mode].pop("threads")["used"] is (mode == "on")
    assert out["on"] == out["off"]
