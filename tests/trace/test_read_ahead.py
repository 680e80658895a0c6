"""Read-ahead (pcs.trace.batches.as_batches(read_ahead=True)): a trace file's next batch decoded on a worker thread.

The worker alone advances the reader, one batch at a time and only once the caller took the previous one, so the
batches and a reader's error are those read in line, at most one batch is in flight, and a caller that stops early
leaves no thread. PCS_THREADS=off (pcs.beside.threads_wanted) reads in line.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

from pcs import beside
from pcs.errors import UserError
from pcs.trace import open_trace
from pcs.trace.batches import read_ahead, as_batches
from conftest import MOONCAKE_CONV as MOONCAKE  # noqa: E402  (../shared/traces or $PCS_SHARED_TRACES)
from test_batches import COLUMNS, joined


_BEFORE: set = set()


@pytest.fixture(autouse=True)
def _threads_before():
    """The threads alive when a test starts: a worker an earlier test's replay keeps (linger) is not the test's."""
    _BEFORE.clear()
    _BEFORE.update(threading.enumerate())
    yield


def _workers() -> list:
    """This test's pcs-beside workers still alive."""
    return [t for t in set(threading.enumerate()) - _BEFORE if t.name == "pcs-beside"]


class _Reader:
    """Yields 0, 1, ... n - 1 (stand-ins for batches), raising ``fail`` at item ``fail_at``; counts the items asked
    for and the threads that asked."""

    def __init__(self, n: int, fail_at: int | None = None) -> None:
        self.n, self.fail_at, self.asked, self.threads = n, fail_at, 0, set()

    def __iter__(self):
        for k in range(self.n):
            self.asked += 1
            self.threads.add(threading.current_thread().name)
            if k == self.fail_at:
                raise UserError(f"trace.jsonl:{k + 1}: field 'hash_ids': bad")
            yield k


@pytest.fixture(autouse=True)
def _threads_on(monkeypatch):
    monkeypatch.setenv("PCS_THREADS", "on")


def test_the_batches_come_in_order_one_in_flight():
    r = _Reader(6)
    got = []
    for k, b in enumerate(read_ahead(iter(r))):
        assert r.asked <= k + 2          # holding batch k, the worker was asked for k + 1 at most
        got.append(b)
    assert got == [0, 1, 2, 3, 4, 5] and r.threads == {"pcs-beside"}
    assert not _workers()


def test_a_reader_error_comes_at_its_batch():
    r = _Reader(6, fail_at=3)
    got = []
    with pytest.raises(UserError, match="trace.jsonl:4: field 'hash_ids': bad"):
        for b in read_ahead(iter(r)):
            got.append(b)
    assert got == [0, 1, 2] and not _workers()


def test_a_caller_that_stops_early_leaves_no_thread():
    r = _Reader(100)
    it = read_ahead(iter(r))
    assert next(it) == 0
    it.close()                            # waits for the batch in flight, drops it
    assert r.asked == 2 and not _workers()


def test_off_reads_in_line(monkeypatch):
    monkeypatch.setenv("PCS_THREADS", "off")
    r = _Reader(3)
    assert list(read_ahead(iter(r))) == [0, 1, 2] and r.threads == {threading.current_thread().name}


@pytest.mark.skipif(not MOONCAKE.exists(), reason="no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES")
def test_a_trace_fileread_ahead_equals_it_read_in_line():
    a, b = joined(as_batches(str(MOONCAKE))), joined(as_batches(open_trace(str(MOONCAKE)), read_ahead=True))
    assert len(a["sizes"]) > 1                                  # several batches: the worker read some
    for key in COLUMNS:
        assert np.array_equal(a[key], b[key]), key
    assert (a["first_ids"], a["sizes"], a["block_size"]) == (b["first_ids"], b["sizes"], b["block_size"])


def test_sources_in_memory_are_notread_ahead(monkeypatch):
    reqs = list(open_trace(str(MOONCAKE) if MOONCAKE.exists() else None).iter_batches())  # (decoding uses a worker)
    made = []
    monkeypatch.setattr(beside, "Beside", lambda threaded: made.append(threaded))
    assert len(list(as_batches(_InMemory(reqs), read_ahead=True))) == len(reqs)
    assert made == []


class _InMemory:
    """Batches held in memory (as pcs.engine.decoded.Decoded holds them): nothing to decode ahead."""

    def __init__(self, batches: list) -> None:
        self.batches = batches

    def iter_batches(self):
        return iter(self.batches)


@pytest.mark.skipif(not MOONCAKE.exists(), reason="no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES")
@pytest.mark.parametrize("mode", ["on", "off"])
def test_a_bad_row_late_in_the_file_is_the_same_one_line_error(tmp_path, monkeypatch, mode):
    # the one-tier sequential replay reads ahead (the scan); line 11,000 of 12,031 is in a later batch than the
    # first, so with threads on the worker decodes it: the same file:line:field error, one line, exit 2
    from helpers import assert_one_line_error, invoke

    lines = MOONCAKE.read_bytes().splitlines(keepends=True)
    lines[10999] = b'{"timestamp": 1, "input_length": 10, "output_length": 1, "hash_ids": "x"}\n'
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"".join(lines))
    monkeypatch.setenv("PCS_THREADS", mode)
    r = invoke("replay", bad, "--tier", "gpu=1000blocks", "--timing", "sequential")
    assert_one_line_error(r, "bad.jsonl:11000", "hash_ids")


# -- no worker outlives a reader: full read, partial read, a bad line mid-file, Ctrl-C ---------------------------------
def _new_workers(before: set) -> list:
    return [t for t in set(threading.enumerate()) - before if t.name == "pcs-beside"]


@pytest.fixture
def small_chunks(monkeypatch):
    """The JSONL reader at 64 KiB chunks (the 3 MB Mooncake trace in about 46), threads on."""
    from pcs.trace import source

    monkeypatch.setattr(source, "CHUNK_BYTES", 1 << 16)


@pytest.mark.skipif(not MOONCAKE.exists(), reason="no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES")
def test_a_full_read_leaves_no_worker(small_chunks):
    before = set(threading.enumerate())
    batches = list(open_trace(str(MOONCAKE)).iter_batches())
    assert sum(len(b) for b in batches) == 12031 and not _new_workers(before)   # 12,031 lines, one request each


@pytest.mark.skipif(not MOONCAKE.exists(), reason="no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES")
@pytest.mark.parametrize("stop_after", [1, 2, 3])   # 1 and 3: the first of a pair held; 2: the second
def test_a_partial_read_never_closed_leaves_no_worker(small_chunks, stop_after):
    # the caller breaks and keeps the reader alive (as a traceback or a cycle would): nothing closes it, yet
    # no thread is left -- the worker was joined before the batch the caller holds was handed over
    before = set(threading.enumerate())
    reader = iter(open_trace(str(MOONCAKE)).iter_batches())
    for k, _ in enumerate(reader, 1):
        if k == stop_after:
            break
    assert not _new_workers(before)
    reader.close()


@pytest.mark.skipif(not MOONCAKE.exists(), reason="no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES")
def test_a_read_ahead_reader_dropped_part_way_ends_its_worker():
    # as_batches(read_ahead=True) has the next batch in flight while the caller holds one; dropped without close,
    # that worker ends once its batch is made (it never waits for another call)
    before = set(threading.enumerate())
    reader = as_batches(str(MOONCAKE), read_ahead=True)
    next(reader)
    for t in _new_workers(before):
        t.join(timeout=120)              # a liveness bound, not a speed check
    assert not _new_workers(before)
    reader.close()


@pytest.mark.skipif(not MOONCAKE.exists(), reason="no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES")
def test_a_bad_line_mid_file_names_it_and_leaves_no_worker(small_chunks, tmp_path, monkeypatch):
    # line 6,000 of 12,031 lies in chunk 24 or so of 46: the pair reader has decoded the chunks before it
    from pcs.errors import InputError

    lines = MOONCAKE.read_bytes().splitlines(keepends=True)
    lines[5999] = b'{"timestamp": 1, "input_length": 10, "output_length": 1, "hash_ids": "x"}\n'
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"".join(lines))
    got = {}
    for mode in ("off", "on"):
        monkeypatch.setenv("PCS_THREADS", mode)
        before, got[mode] = set(threading.enumerate()), []
        with pytest.raises(InputError, match="bad.jsonl:6000.*hash_ids"):
            for b in open_trace(str(bad)).iter_batches():
                got[mode].append(len(b))
        assert not _new_workers(before)
    # the batches before the bad line's chunk, as read in line: a 64 KiB chunk holds about 260 of the trace's
    # 252-byte lines (3,029,533 B / 12,031), so they end within 300 lines before line 6,000
    assert got["on"] == got["off"] and 5999 - 300 < sum(got["on"]) <= 5999


@pytest.mark.skipif(not MOONCAKE.exists(), reason="no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES")
@pytest.mark.parametrize("where", ["decode", "caller"])
def test_ctrl_c_while_reading_leaves_no_worker(small_chunks, monkeypatch, where):
    # Ctrl-C lands on the main thread: inside the decode of a chunk ("decode"), or in the caller's loop while it
    # holds a batch ("caller")
    from pcs.trace import jsonfast

    real, calls = jsonfast.native_decode, []

    def decode(spec, chunk, *arena):
        if threading.current_thread() is threading.main_thread():
            calls.append(1)
            if where == "decode" and len(calls) == 5:
                raise KeyboardInterrupt
        return real(spec, chunk, *arena)

    monkeypatch.setattr(jsonfast, "native_decode", decode)
    before = set(threading.enumerate())
    with pytest.raises(KeyboardInterrupt):
        for k, _ in enumerate(open_trace(str(MOONCAKE)).iter_batches()):
            if where == "caller" and k == 7:
                raise KeyboardInterrupt
    # this thread decodes every chunk in line (parse_chunks): the fifth decode raised, or, holding batch 7, it had
    # decoded chunks 0 to 7
    assert len(calls) == (5 if where == "decode" else 8) and not _new_workers(before)


# -- the one-tier sequential scan: one read-ahead worker for every batch, ended on every path ----------------------
def _spawns(monkeypatch) -> list:
    """The ``linger`` of every pcs-beside worker started from now on (pcs.beside.Beside._spawn), in order."""
    spawned = []
    real = beside.Beside._spawn
    monkeypatch.setattr(beside.Beside, "_spawn", lambda self: (spawned.append(self.linger), real(self))[1])
    return spawned


def _stop_at_the_second_batch(monkeypatch) -> list:
    """The one-tier scan's batch step (pcs.engine.fastpath._fed) made to raise a UserError at its second batch;
    returns the list its calls are counted in."""
    from pcs.engine import fastpath

    real, calls = fastpath._fed, []

    def fed(*args):
        calls.append(1)
        if len(calls) == 2:
            raise UserError("stopped at the second batch")
        return real(*args)

    monkeypatch.setattr(fastpath, "_fed", fed)
    return calls


@pytest.mark.skipif(not MOONCAKE.exists(), reason="no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES")
def test_the_one_tier_scan_reads_ahead_on_one_worker(monkeypatch):
    # 12,031 requests are 3 batches of at most 4,096: one worker makes the three (and finds the end), where a
    # worker a batch took 4 thread starts; none is left once the replay returns
    import pcs

    spawned = _spawns(monkeypatch)
    r = pcs.replay(str(MOONCAKE), tiers=["gpu=16384blocks"], policy="lru", timing="sequential")
    assert r.summary.engine == "lru-scan" and r.summary.requests == 12031
    assert spawned == [True] and not _workers()


@pytest.mark.skipif(not MOONCAKE.exists(), reason="no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES")
def test_a_scan_stopped_after_its_first_batch_leaves_no_worker(monkeypatch):
    # the scan raises while the worker has the second batch in flight and would wait for a third call: the reader
    # is closed on the way out (not when the traceback that holds it is dropped), so no worker is left while the
    # error is still held
    import pcs

    _stop_at_the_second_batch(monkeypatch)
    with pytest.raises(UserError, match="second batch") as held:
        pcs.replay(str(MOONCAKE), tiers=["gpu=16384blocks"], policy="lru", timing="sequential")
    assert held.value is not None and not _workers()


# -- the same two facts on a committed sample: traces/sample_exact.jsonl as Parquet, read in 256-row batches -------
@pytest.fixture
def sample_in_four_batches(tmp_path, monkeypatch):
    """traces/sample_exact.jsonl (1,000 requests, block ids) converted to Parquet in ``tmp_path``, streamed in
    256-row batches (pcs.trace.parquet.STREAM_ROWS, 4,096 by default): 256 + 256 + 256 + 232 rows, four batches."""
    from conftest import SAMPLE_EXACT
    from pcs.trace import parquet
    from pcs.trace.convert import convert

    out = tmp_path / "sample_exact.parquet"
    convert(str(SAMPLE_EXACT), str(out))
    monkeypatch.setattr(parquet, "STREAM_ROWS", 256)
    return out


def test_the_one_tier_scan_reads_ahead_on_one_worker_on_the_sample(sample_in_four_batches, monkeypatch):
    # four batches: one lingering worker makes the four and finds the end, where a worker a batch took 5 thread
    # starts; none is left once the replay returns
    import pcs

    spawned = _spawns(monkeypatch)
    r = pcs.replay(str(sample_in_four_batches), tiers=["gpu=16384blocks"], policy="lru", timing="sequential")
    assert r.summary.engine == "lru-scan" and r.summary.requests == 1000
    assert spawned == [True] and not _workers()


def test_a_scan_stopped_after_its_first_batch_leaves_no_worker_on_the_sample(sample_in_four_batches, monkeypatch):
    # the scan raises at the second of four batches, the third in flight on the one worker: the reader is closed on
    # the way out, so that worker has ended while the error is still held
    import pcs

    spawned = _spawns(monkeypatch)
    calls = _stop_at_the_second_batch(monkeypatch)
    with pytest.raises(UserError, match="second batch") as held:
        pcs.replay(str(sample_in_four_batches), tiers=["gpu=16384blocks"], policy="lru", timing="sequential")
    assert held.value is not None and len(calls) == 2
    assert spawned == [True] and not _workers()
