"""Hostile input: progress on all long work, only on a terminal, off with -q.

Members: replay, compare, curve (reading and Belady per capacity), trace
stats, convert, synth, transform each report their work to a
pcs.cli.progress.Progress with a total where it is knowable; the bar is
redrawn at least once a second while work is under way; nothing is drawn when
stderr is not a terminal or with -q.
"""
import io
import time

import pytest

from helpers import SMALL_TRACE, invoke
from pcs.cli import progress

T = SMALL_TRACE


@pytest.fixture
def bars(monkeypatch):
    """Every Progress a command makes: (desc, total, quiet, units reported)."""
    made = []
    real_init, real_call = progress.Progress.__init__, progress.Progress.__call__

    def init(self, quiet, desc="replay", unit=" req", total=None):
        real_init(self, quiet, desc, unit, total)
        self.record = [desc, total() if callable(total) else total, quiet, 0]
        made.append(self.record)

    def call(self, n):
        self.record[3] += n
        real_call(self, n)

    monkeypatch.setattr(progress.Progress, "__init__", init)
    monkeypatch.setattr(progress.Progress, "__call__", call)
    return made


LONG = [  # (args, the total each bar must know: requests of the 8-request trace, or capacities)
    (["replay", T, "--tier", "gpu=5blocks"], {"replay": 8}),
    (["compare", T, "--policy", "lru", "--policy", "fifo", "--tier", "gpu=5blocks"], {"compare": 16}),
    (["curve", T, "--capacities", "1blocks,5blocks,9blocks"], {"reading": 8, "belady": 3}),
    (["trace", "stats", T], {"stats": 8}),
    (["trace", "convert", T, "o.parquet"], {"convert": 8}),
    (["trace", "transform", T, "o.jsonl", "--speed", "2"], {"reading": 8}),
    (["trace", "synth", "o.jsonl", "--requests", "30"], {"synth": 30}),
]


@pytest.mark.parametrize("args, totals", LONG, ids=[" ".join(map(str, a[:2])) for a, _ in LONG])
def test_every_long_command_reports_progress_with_a_total(tmp_path, monkeypatch, bars, args, totals):
    monkeypatch.chdir(tmp_path)
    r = invoke(*args)
    assert r.exit_code == 0, r.output
    seen = {desc: (total, done) for desc, total, quiet, done in bars}
    for desc, total in totals.items():
        assert desc in seen, (desc, bars)
        assert seen[desc][0] == total and seen[desc][1] == total, (desc, seen[desc])
    r = invoke(*args, "-q")
    assert r.exit_code == 0 and all(quiet for _, _, quiet, _ in bars[-len(totals):])


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_bar_only_on_a_terminal_and_never_with_quiet(monkeypatch):
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert progress.Progress(False, total=5).bar is None                # not a terminal: nothing drawn
    monkeypatch.setattr("sys.stderr", _Tty())
    assert progress.Progress(True, total=5).bar is None                 # -q
    p = progress.Progress(False, total=5)
    assert p.bar is not None and p.bar.total == 5
    p.close()


def test_a_costly_total_is_not_counted_unless_the_bar_shows(monkeypatch):
    calls = []
    monkeypatch.setattr("sys.stderr", io.StringIO())
    progress.Progress(False, total=lambda: calls.append(1) or 9).close()
    assert calls == []


def test_the_bar_is_redrawn_at_least_once_a_second(monkeypatch):
    assert progress.Progress.REFRESH_S <= 1.0
    monkeypatch.setattr("sys.stderr", _Tty())
    monkeypatch.setattr(progress.Progress, "DELAY_S", 0.0)
    monkeypatch.setattr(progress.Progress, "REFRESH_S", 0.05)
    p = progress.Progress(False, total=100)
    drawn = []
    monkeypatch.setattr(p.bar, "refresh", lambda *a, **k: drawn.append(time.monotonic()))
    time.sleep(0.5)                                                    # no work reported meanwhile
    p.close()
    assert len(drawn) >= 3


def test_estimated_requests():
    from pcs.trace import open_trace

    assert open_trace(T).estimated_requests() == 8
    assert open_trace(T.parent / "azure2023_conv_8.csv").estimated_requests() == 8      # header not counted
