"""``auto`` runs a small trace file's side work inline (pcs.beside: INLINE_BELOW_BYTES, small_trace, sized).

The rule, from pcs/beside.py's docstring: in ``auto`` mode (``PCS_THREADS`` unset) a replay of a trace file read as
text (not gzip) of fewer than ``INLINE_BELOW_BYTES`` bytes, or a Parquet file whose footer counted fewer than
``INLINE_BELOW_PARQUET_IDS`` block hashes, runs every side call on the calling thread;
at that size or more, on a process with two CPUs or more, on workers; ``on`` forces workers, ``off`` inline. The
expectations below are worked from that rule and the files' sizes, not from a run's output; the process is given
two CPUs (``os.sched_getaffinity`` patched) so ``auto`` means threads for a trace that is not small on any machine.
The machine's load plays no part (the same input on the same machine, the same decision).
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


def test_the_rule_reads_no_load(tmp_path, monkeypatch, two_cpus):
    """The same small file gives the same decision whatever the machine's load: the rule reads the file's size and
    the CPU count only (a 10-byte file under an 11-byte threshold is small: inline; opening /proc/loadavg or
    calling os.getloadavg would fail the test)."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"x" * 10)
    monkeypatch.setattr(beside, "INLINE_BELOW_BYTES", 11)
    monkeypatch.setattr(beside.os, "getloadavg", lambda: pytest.fail("load read"))
    real_open = open

    def guarded(f, *a, **k):
        assert "loadavg" not in str(f)
        return real_open(f, *a, **k)
    monkeypatch.setattr("builtins.open", guarded)
    assert not hasattr(beside, "core_free")
    with beside.sized(_File(path, "mooncake")) as inline:
        assert inline and not beside.threads_wanted()
        d = beside.threads_decision()
    assert (d["mode"], d["used"]) == ("auto", False) and "small trace" in d["reason"]
