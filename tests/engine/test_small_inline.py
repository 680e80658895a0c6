"""``auto`` runs a small trace file's side work inline (pcs.beside: INLINE_BELOW_BYTES, small_trace, sized).

The rule, from pcs/beside.py's docstring: in ``auto`` mode (``PCS_THREADS`` unset) a replay of a trace file read as
text (not gzip) of fewer than ``INLINE_BELOW_BYTES`` bytes, or a Parquet file whose footer counted fewer than
``INLINE_BELOW_PARQUET_IDS`` block hashes, runs every side call on the calling thread;
at that size or more, on a process with two CPUs or more, on workers; ``on`` forces workers, ``off`` inline. The
expectations below are worked from that rule and the files' sizes, not from a run's output; the process is given
two CPUs (``os.sched_getaffinity`` patched) so ``auto`` means threads for a trace that is not small on any machine,
and both CPUs busy (``core_free`` patched False) unless a test says otherwise: a small trace keeps its workers when a
core is free at the replay's start (``core_free``: fewer runnable threads than CPUs).
"""
from __future__ import annotations

import gzip
import json
import threading
from pathlib import Path

import pytest

from pcs import beside
from pcs.engine import stepnative

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "traces" / "sample_chat.jsonl"
native = pytest.mark.skipif(stepnative._stepsched is None, reason="the compiled step scheduler is not built")


@pytest.fixture
def two_cpus(monkeypatch):
    monkeypatch.delenv("PCS_THREADS", raising=False)
    monkeypatch.setattr(beside.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(beside, "core_free", lambda: False)


class _File:
    """What pcs.trace.Trace offers the rule: a path and a format."""

    def __init__(self, path, fmt: str) -> None:
        self.path, self.format = Path(path), fmt


def test_small_is_below_the_threshold_in_bytes(tmp_path, monkeypatch):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"x" * 1000)
    monkeypatch.setattr(beside, "INLINE_BELOW_BYTES", 1001)
    assert beside.small_trace(_File(path, "mooncake"))              # 1000 < 1001
    monkeypatch.setattr(beside, "INLINE_BELOW_BYTES", 1000)
    assert not beside.small_trace(_File(path, "mooncake"))          # 1000 is not below 1000


def test_parquet_gzip_memory_and_missing_files_are_not_small(tmp_path, monkeypatch):
    monkeypatch.setattr(beside, "INLINE_BELOW_BYTES", 10**9)
    gz = tmp_path / "t.jsonl.gz"
    gz.write_bytes(gzip.compress(b"{}\n"))
    pq = tmp_path / "t.parquet"
    pq.write_bytes(b"PAR1" + b"\0" * 8 + b"PAR1")
    assert not beside.small_trace(_File(gz, "mooncake"))           # gzip: its bytes do not measure the trace
    assert not beside.small_trace(_File(pq, "parquet"))            # Parquet of no known count: not small
    assert not beside.small_trace([object()])                       # in memory: no file
    assert not beside.small_trace(None)
    assert not beside.small_trace(_File(tmp_path / "gone.jsonl", "mooncake"))   # the read names the problem


def test_parquet_is_small_below_its_footer_count(tmp_path, monkeypatch):
    pq = _File(tmp_path / "t.parquet", "parquet")                   # never read: the count decides
    monkeypatch.setattr(beside, "INLINE_BELOW_PARQUET_IDS", 1000)
    monkeypatch.setattr(beside, "INLINE_BELOW_BYTES", 10**9)         # bytes are not Parquet's measure
    pq.parquet_block_hashes = 999
    assert beside.small_trace(pq)                                   # 999 < 1000
    pq.parquet_block_hashes = 1000
    assert not beside.small_trace(pq)                               # 1000 is not below 1000
    pq.parquet_block_hashes = None
    assert not beside.small_trace(pq)                               # unknown count: threads


def test_a_parquet_traces_count_is_its_footers(tmp_path, monkeypatch):
    import pcs
    from pcs.trace.convert import convert

    src = tmp_path / "two.jsonl"                                      # 2 requests of 3 and 2 block hashes
    src.write_text('{"timestamp": 0, "input_length": 1536, "output_length": 1, "hash_ids": [1, 2, 3]}\n'
                   '{"timestamp": 1, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]}\n')
    convert(pcs.open_trace(src), tmp_path / "two.parquet")
    trace = pcs.open_trace(tmp_path / "two.parquet")
    assert trace.parquet_block_hashes == 5
    monkeypatch.setattr(beside, "INLINE_BELOW_PARQUET_IDS", 6)
    assert beside.small_trace(trace)                                # 5 < 6
    monkeypatch.setattr(beside, "INLINE_BELOW_PARQUET_IDS", 5)
    assert not beside.small_trace(trace)


def test_sized_makes_auto_inline_for_the_block_only(tmp_path, monkeypatch, two_cpus):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"x" * 10)
    small, big = _File(path, "mooncake"), _File(path, "mooncake")
    monkeypatch.setattr(beside, "INLINE_BELOW_BYTES", 11)
    assert beside.threads_wanted()                                  # auto, two CPUs, no replay running
    with beside.sized(small) as is_small:
        assert is_small and not beside.threads_wanted()
        monkeypatch.setattr(beside, "INLINE_BELOW_BYTES", 10)
        with beside.sized(big) as inner:                            # a nested run keeps the outer one's inline
            assert not inner and not beside.threads_wanted()
    assert beside.threads_wanted()                                  # restored after the block
    with beside.sized(big) as is_small:
        assert not is_small and beside.threads_wanted()
    seen = []
    worker = threading.Thread(target=lambda: seen.append(beside.threads_wanted()))
    monkeypatch.setattr(beside, "INLINE_BELOW_BYTES", 11)
    with beside.sized(small):
        worker.start()                                              # another thread: not inside the block
        worker.join()
    assert seen == [True]


@pytest.mark.parametrize("mode, small, want", [("on", True, True), ("off", False, False), ("1", True, True),
                                               ("0", False, False)])
def test_on_and_off_win_over_the_size(tmp_path, monkeypatch, two_cpus, mode, small, want):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"x" * 10)
    monkeypatch.setattr(beside, "INLINE_BELOW_BYTES", 11 if small else 10)
    monkeypatch.setenv("PCS_THREADS", mode)
    with beside.sized(_File(path, "mooncake")) as is_small:
        assert beside.threads_wanted() is want and not is_small    # the size is looked at in auto mode alone


def test_a_bad_switch_is_refused_by_sized(monkeypatch):
    monkeypatch.setenv("PCS_THREADS", "2")
    with pytest.raises(beside.UserError, match="PCS_THREADS"):
        with beside.sized(None):
            pass


def _replay_counting_workers(monkeypatch, threshold: int):
    """pcs.replay of the sample (default two tiers, the step scheduler) under ``auto`` with the threshold given;
    also how many pcs.beside worker threads it started."""
    import pcs

    started = []

    class Counted(threading.Thread):
        def start(self):
            started.append(self.name)
            super().start()

    with monkeypatch.context() as m:
        m.setattr(beside, "INLINE_BELOW_BYTES", threshold)
        m.setattr(beside, "_Thread", Counted)
        r = pcs.replay(str(SAMPLE), tiers=["gpu=300blocks", "cpu=2000blocks"], policy="lru")
    return r, started


@native
def test_auto_runs_a_small_file_inline_and_a_larger_one_on_workers(monkeypatch, two_cpus):
    size = SAMPLE.stat().st_size
    inline, none = _replay_counting_workers(monkeypatch, size + 1)        # below the threshold: small
    threaded, some = _replay_counting_workers(monkeypatch, size)          # at it: not small, threads
    assert none == []
    assert some and set(some) == {"pcs-beside"}
    assert (inline.summary.threads.mode, inline.summary.threads.used) == ("auto", False)
    assert "small trace file" in inline.summary.threads.reason
    assert (threaded.summary.threads.mode, threaded.summary.threads.used) == ("auto", True)
    without = lambda r: {k: v for k, v in r.summary.to_dict().items() if k != "threads"}  # noqa: E731
    assert json.dumps(without(inline), sort_keys=True, default=str) == \
        json.dumps(without(threaded), sort_keys=True, default=str)
    assert inline.requests.equals(threaded.requests)


@pytest.mark.parametrize("loadavg, cpus, free", [
    (b"6.06 3.50 2.27 1/148 29477\n", {0, 1}, True),      # the caller alone runnable: one CPU free
    (b"0.10 0.20 0.30 2/148 29477\n", {0, 1}, False),     # the caller and one more: both CPUs busy
    (b"0.10 0.20 0.30 10/148 29477\n", {0, 1}, False),
    (b"0.10 0.20 0.30 3/148 29477\n", {0, 1, 2, 3}, True),
    (b"0.00 0.00 0.00 1/148 29477\n", {0}, False),        # one CPU: never a core for a worker
])
def test_core_free_counts_the_runnable_threads_against_the_cpus(tmp_path, monkeypatch, loadavg, cpus, free):
    f = tmp_path / "loadavg"
    f.write_bytes(loadavg)
    monkeypatch.setattr(beside, "_LOADAVG", str(f))
    monkeypatch.setattr(beside.os, "sched_getaffinity", lambda pid: cpus, raising=False)
    assert beside.core_free() is free


@pytest.mark.parametrize("avg, free", [(0.5, True), (1.0, False), (1.7, False)])
def test_core_free_falls_back_to_the_load_average(tmp_path, monkeypatch, avg, free):
    monkeypatch.setattr(beside, "_LOADAVG", str(tmp_path / "none"))            # no /proc/loadavg
    monkeypatch.setattr(beside.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(beside.os, "getloadavg", lambda: (avg, 0.0, 0.0))
    assert beside.core_free() is free                                          # below 2 - 1 = 1.0: free


def test_a_small_trace_keeps_its_workers_when_a_core_is_free(tmp_path, monkeypatch, two_cpus):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"x" * 10)
    monkeypatch.setattr(beside, "INLINE_BELOW_BYTES", 11)                        # small
    monkeypatch.setattr(beside, "core_free", lambda: True)
    with beside.sized(_File(path, "mooncake")) as inline:
        assert not inline and beside.threads_wanted()


@native
def test_auto_runs_a_small_file_on_workers_when_a_core_is_free(monkeypatch, two_cpus):
    monkeypatch.setattr(beside, "core_free", lambda: True)
    size = SAMPLE.stat().st_size
    threaded, some = _replay_counting_workers(monkeypatch, size + 1)          # small, but a core is free
    assert some and set(some) == {"pcs-beside"}
