"""The two-tier one-pass scan on a worker thread beside the step loops (pcs.engine.runner._two_tier_scan).

The compiled scan releases the GIL in lru_feed (pcs/engine/_lruscan.c) and reads only the decoded batches, the
decode blocks, the rules and two capacities; it writes only its own state. So a replay with the scan on a worker
gives exactly what it gives with every call inline (the reference: ``PCS_THREADS=off``, the order before threads),
a scan's exception is the one the user sees, and an error in the loops waits for the scan and leaves no thread.
The step loops' chunks are made the same way: on the next-turn search's worker while the trace is decoded, or by the
calling thread once its reads are done (pcs.engine.chunks.ChunkPieces), else the next chunk while the compiled step
loops run (pcs.engine.feed._feed with pcs.trace.batches.read_ahead). ``PCS_THREADS`` (pcs.beside.threads_wanted)
chooses: auto (threads with two CPUs or more), on, off.
"""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from pcs import replay
from pcs import beside
from pcs.engine import fastpath, feed, runner, scanjoin, stepnative
from pcs.errors import UserError
from test_beside import _same
from helpers import make_requests

ROOT = Path(__file__).resolve().parents[2]
from conftest import MOONCAKE_CONV as MOONCAKE  # noqa: E402  (../shared/traces or $PCS_SHARED_TRACES)

native = pytest.mark.skipif(stepnative._stepsched is None, reason="the compiled step scheduler is not built")
TWO = {"tiers": ["gpu=16384blocks", "cpu=65536blocks"], "policy": "lru"}


def _workers() -> set:
    return {t for t in threading.enumerate() if t.name == "pcs-beside"}


def _spied(monkeypatch, mode: str, path, **kw):
    """pcs.replay under ``PCS_THREADS=mode``; also whether the two-tier scan ran on a worker thread."""
    seen, orig = [], scanjoin._two_tier_scan

    def spy(*a):
        out = orig(*a)
        seen.append(a[-1]._thread is not None)    # the side's worker thread took the scan
        return out

    with monkeypatch.context() as m:
        m.setenv("PCS_THREADS", mode)
        m.setattr(scanjoin, "_two_tier_scan", spy)
        return replay(str(path) if isinstance(path, Path) else path, **kw), seen


def test_threads_wanted_reads_the_switch_and_the_cpus(monkeypatch):
    monkeypatch.setattr(beside.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    for mode, want in (("", False), ("auto", False), ("on", True), ("off", False), (" OFF ", False)):
        monkeypatch.setenv("PCS_THREADS", mode)
        assert beside.threads_wanted() is want, mode           # one CPU: auto runs inline
    monkeypatch.setattr(beside.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.delenv("PCS_THREADS")
    assert beside.threads_wanted() is True                      # two CPUs, unset: threads
    monkeypatch.setenv("PCS_THREADS", "2")
    with pytest.raises(UserError, match="PCS_THREADS='2' is not one of auto, on, off"):
        beside.threads_wanted()


@native
@pytest.mark.skipif(not MOONCAKE.exists(), reason="no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES")
def test_scan_beside_equals_inline_on_mooncake(monkeypatch):
    before = _workers()
    (a, sa), (b, sb) = _spied(monkeypatch, "off", MOONCAKE, **TWO), _spied(monkeypatch, "on", MOONCAKE, **TWO)
    assert (sa, sb) == ([False], [True])
    assert a.summary.baseline_engine == b.summary.baseline_engine == "lru-scan"
    _same(a, b)
    assert _workers() == before


@native
def test_scan_beside_equals_inline_when_the_ids_are_not_chained(monkeypatch):
    # [9, 5] finds 5 resident after the miss of 9: the scan's premise fails and the baseline stays on the
    # compiled hierarchy (tests/engine/test_seqbase.py), labelled at the join -- the same with the scan beside
    reqs = make_requests([([5], 4), ([9, 5], 8), ([5], 4)])
    kw = {"tiers": ["gpu=2blocks", "cpu=1blocks"]}
    (a, sa), (b, sb) = _spied(monkeypatch, "off", reqs, **kw), _spied(monkeypatch, "on", reqs, **kw)
    assert (sa, sb) == ([False], [True])
    assert a.summary.baseline_engine == b.summary.baseline_engine == "compiled-hierarchy"
    assert "not lru-scan: the block hashes are not chained" in b.summary.baseline_engine_reason
    _same(a, b)


def _fails_with(monkeypatch, owner, name: str, message: str, **kw) -> None:
    """``owner.name`` replaced by a call raising UserError(message): the replay (``kw`` added) raises it, no worker
    is left."""
    def bad(*a, **k):
        raise UserError(message)

    before = _workers()
    monkeypatch.setattr(owner, name, bad)
    with pytest.raises(UserError, match=message):
        _spied(monkeypatch, "on", ROOT / "traces" / "sample_chat.jsonl", tiers=["gpu=300blocks", "cpu=2000blocks"],
               **kw)
    assert _workers() == before


@native
def test_an_error_in_the_scan_is_the_one_raised(monkeypatch):
    _fails_with(monkeypatch, fastpath, "scan", "trace.jsonl:3: field 'hash_ids': the scan failed")


@native
def test_an_error_in_the_loops_waits_for_the_scan(monkeypatch):
    # the loops fail while the scan is on the worker: the replay waits for it (its outcome dropped), raises the
    # loops' error and leaves no worker thread
    done, scan = [], fastpath.scan

    def slow_scan(*a, **k):
        out = scan(*a, **k)
        done.append(True)
        return out

    def boom(*a, **k):
        raise RuntimeError("the loops failed")

    before = _workers()
    monkeypatch.setattr(fastpath, "scan", slow_scan)
    monkeypatch.setattr(feed, "_feed", boom)
    with pytest.raises(RuntimeError, match="the loops failed"):
        _spied(monkeypatch, "on", ROOT / "traces" / "sample_chat.jsonl", tiers=["gpu=300blocks", "cpu=2000blocks"])
    assert done == [True] and _workers() == before


@native
def test_off_runs_every_side_call_inline(monkeypatch):
    made = []
    orig = runner.Beside

    def spy(threaded):
        made.append(threaded)
        return orig(threaded)

    monkeypatch.setattr(runner, "Beside", spy)
    monkeypatch.setattr(scanjoin, "Beside", spy)
    res = _spied(monkeypatch, "off", ROOT / "traces" / "sample_chat.jsonl", tiers=["gpu=300blocks", "cpu=2000blocks"])
    assert res[1] == [False] and made and not any(made)     # the scan, its hybrid twin's side, the no-cache loop


@native
def test_chunks_are_made_ahead_only_for_loops_without_the_gil(monkeypatch):
    # the compiled step loop releases the GIL: its next chunk is made (or, made in the decode, joined) on a worker
    # while the loops run (runner._feed's read_ahead), and with decode blocks cached its chunks' pieces are made in
    # the decode pass, on the next-turn search's worker or, once the reads are done, the calling thread, whichever is
    # free (chunks.ChunkPieces.drain; runner._decoded_once); a decoded trace of one joined batch (the sample) has
    # one chunk, which a worker would make while the calling thread waits: made in line, no read-ahead; the
    # instant-compute event loop keeps the GIL, so its chunks are made in line (a worker would only take turns)
    from pcs.engine import chunks, decoded
    from pcs.engine.chunks import ChunkPieces
    from pcs.trace import source
    from pcs.engine.schedconfig import SchedulerConfig

    made, pieces, orig, add = [], [], feed.read_ahead, ChunkPieces.add

    def spy(chunks, **kw):
        made.append(True)
        return orig(chunks, **kw)

    def spy_add(self, *a):
        pieces.append(threading.current_thread().name)
        return add(self, *a)

    monkeypatch.setattr(feed, "read_ahead", spy)
    monkeypatch.setattr(ChunkPieces, "add", spy_add)
    kw = {"tiers": ["gpu=300blocks", "cpu=2000blocks"]}
    _spied(monkeypatch, "on", ROOT / "traces" / "sample_chat.jsonl", **kw)
    assert made == [] and pieces and set(pieces) <= {"pcs-beside", threading.main_thread().name}
    n = len(pieces)
    _spied(monkeypatch, "on", ROOT / "traces" / "sample_chat.jsonl",
           scheduler=SchedulerConfig(cache_decode_blocks=False), **kw)
    assert made == [True] and len(pieces) == n
    _spied(monkeypatch, "on", ROOT / "traces" / "sample_chat.jsonl", compute_mode="infinite", **kw)
    assert made == [True] and len(pieces) == n
    monkeypatch.setattr(source, "CHUNK_BYTES", 1 << 16)   # the 436 KiB sample read in 7 batches, none joined:
    monkeypatch.setattr(decoded, "MERGE_REQUESTS", 1)     # the first chunk made in the decode (its piece, then
    whole, from_columns = [], chunks._from_columns         # its chunk), the 6 others whole, each on the read-ahead
    monkeypatch.setattr(chunks, "_from_columns",           # worker while the loops run the one before
                        lambda *a: (whole.append(threading.current_thread().name), from_columns(*a))[1])
    pieces.clear()
    _spied(monkeypatch, "on", ROOT / "traces" / "sample_chat.jsonl", **kw)
    assert made == [True, True] and len(pieces) == 2 and whole == ["pcs-beside"] * 6


@native
def test_an_error_making_a_chunk_ahead_is_the_one_raised(monkeypatch):
    from pcs.engine import chunks
    from pcs.engine.schedconfig import SchedulerConfig

    _fails_with(monkeypatch, chunks, "_from_columns", "request 7: the chunk failed",
                scheduler=SchedulerConfig(cache_decode_blocks=False))


@native
def test_an_error_making_a_later_chunk_whole_is_the_one_raised(monkeypatch):
    # the sample in 7 batches, none joined: the chunks after the first are made whole on the read-ahead worker
    # (chunks.ChunkPieces.take, chunks._from_columns) while the loops run; its error is the one raised, no worker left
    from pcs.engine import chunks, decoded
    from pcs.trace import source

    monkeypatch.setattr(source, "CHUNK_BYTES", 1 << 16)
    monkeypatch.setattr(decoded, "MERGE_REQUESTS", 1)
    _fails_with(monkeypatch, chunks, "_from_columns", "request 7: the later chunk failed")


@native
def test_a_loops_side_worker_still_copying_is_ended_with_the_error(monkeypatch):
    # the step loop's own side worker (stepnative.NativeStepEngine._side_work: the previous chunk's input columns)
    # is still running when the next chunk fails to be made; the feed's error path waits for it and ends it
    # (NativeStepEngine.settle), so no worker outlives the replay -- it was left running (and this test failed
    # every time) while the slowed copy went on
    import time

    from pcs.engine import chunks, decoded
    from pcs.trace import source

    slow = stepnative.NativeStepEngine._side_work

    def slowed(self, chunk, first):
        time.sleep(0.3)
        return slow(self, chunk, first)

    monkeypatch.setattr(stepnative.NativeStepEngine, "_side_work", slowed)
    monkeypatch.setattr(source, "CHUNK_BYTES", 1 << 16)
    monkeypatch.setattr(decoded, "MERGE_REQUESTS", 1)
    _fails_with(monkeypatch, chunks, "_from_columns", "request 7: the later chunk failed")


@native
def test_an_error_making_a_chunk_in_the_decode_is_the_one_raised(monkeypatch):
    # the chunks made in the decode (chunks.ChunkPieces): the error raised at the walk's join (made on the worker)
    # or where the calling thread makes the piece
    from pcs.engine import chunks

    _fails_with(monkeypatch, chunks, "rule_columns", "request 7: the piece failed")


@native
def test_the_scan_waits_for_the_loops_to_be_built(monkeypatch):
    # the two-tier scan's worker starts with the replay but waits at its gate until the run's first feed
    # (runner._ScanJoin.open): its Python work then does not take the GIL from the calling thread building the
    # loops; the order is fixed whatever the machine's load: loops built, then the scan
    order, scan, loops = [], fastpath.scan, feed._event_loops

    def spy_scan(*a, **k):
        order.append("scan")
        return scan(*a, **k)

    def spy_loops(*a, **k):
        out = loops(*a, **k)
        order.append("loops")
        return out

    monkeypatch.setattr(fastpath, "scan", spy_scan)
    monkeypatch.setattr(feed, "_event_loops", spy_loops)
    before = _workers()
    (a, sa), (b, sb) = (_spied(monkeypatch, mode, ROOT / "traces" / "sample_chat.jsonl", **TWO) for mode in ("off", "on"))
    assert (sa, sb) == ([False], [True]) and order == ["scan", "loops", "loops", "scan"]   # inline: the scan first
    _same(a, b)
    assert _workers() == before


@native
def test_the_scans_results_are_made_on_its_worker(monkeypatch):
    # the baseline, the single-sequence and ideal results and the decode-aware ceiling are read off the two-tier
    # scan alone (runner._scan_parts): threaded, the scan's worker makes them once the scan is done, off the calling
    # thread; inline, the calling thread; the same replay either way
    from pcs.engine import seqbase

    where = []
    for owner, name in ((seqbase, "baseline_from_scan"), (fastpath, "single_results"), (fastpath, "decode_result")):
        def spy(*a, _real=getattr(owner, name), _name=name, **k):
            where.append((_name, threading.current_thread().name))
            return _real(*a, **k)

        monkeypatch.setattr(owner, name, spy)
    before = _workers()
    a, _ = _spied(monkeypatch, "off", ROOT / "traces" / "sample_chat.jsonl", **TWO)
    inline, where[:] = where[:], []
    b, _ = _spied(monkeypatch, "on", ROOT / "traces" / "sample_chat.jsonl", **TWO)
    names = ["baseline_from_scan", "single_results", "decode_result"]
    assert inline == [(n, threading.main_thread().name) for n in names]
    assert where == [(n, "pcs-beside") for n in names]
    _same(a, b)
    assert _workers() == before
