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


def _workers() -> list:
    return [t for t in threading.enumerate() if t.name == "pcs-beside"]


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
    made = []
    monkeypatch.setattr(beside, "Beside", lambda threaded: made.append(threaded))
    reqs = list(open_trace(str(MOONCAKE) if MOONCAKE.exists() else None).iter_batches())
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
