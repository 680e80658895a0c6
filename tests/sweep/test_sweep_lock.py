"""One sweep per -o folder (pcs.sweep.lock): a second pcs sweep run on a folder another live process is running
refuses in one line naming the folder and the holder's pid, running no point; a lock file left by a killed
sweep is stale (the kernel dropped its flock) and is taken over."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.sweep.lock import LOCK_NAME, sweep_lock
from helpers import fresh_env

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "traces" / "formats" / "mooncake_conv_8.jsonl"


def _plan(tmp_path: Path) -> Path:
    plan = tmp_path / "p.toml"
    plan.write_text(f'kind = "replay"\n[fixed]\ntrace = "{SMALL}"\n[axes]\ntier = ["gpu=100blocks", "gpu=200blocks"]\n')
    return plan


def test_a_second_sweep_on_a_held_folder_refuses_and_runs_nothing(tmp_path):
    out = tmp_path / "out"
    with sweep_lock(out):               # this process holds it, as another pcs sweep would
        r = CliRunner().invoke(cli, ["sweep", "run", str(_plan(tmp_path)), "-o", str(out), "--jobs", "1", "-q"])
        assert r.exit_code == 2, r.output
        lines = [ln for ln in r.output.splitlines() if ln.strip()]
        assert lines == [f"pcs: error: -o {out} is being run by another pcs sweep (pid {os.getpid()}): wait for it "
                         "to finish, or give another -o"], r.output
        assert list(out.glob("*.parquet")) == []
    assert not (out / LOCK_NAME).exists()     # released and removed when the holder ends


def test_the_lock_is_released_and_the_sweep_runs_both_points(tmp_path):
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["sweep", "run", str(_plan(tmp_path)), "-o", str(out), "--jobs", "1", "-q"])
    assert r.exit_code == 0, r.output
    assert len(list(out.glob("*.parquet"))) == 2 and not (out / LOCK_NAME).exists()


def test_a_lock_left_by_a_killed_sweep_is_stale_and_taken_over(tmp_path):
    out = tmp_path / "out"
    code = ("import sys, time; from pcs.sweep.lock import sweep_lock\n"
            f"with sweep_lock({str(out)!r}):\n    print('held', flush=True); time.sleep(60)\n")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, env=fresh_env())
    try:
        assert child.stdout.readline().strip() == b"held"
        r = CliRunner().invoke(cli, ["sweep", "run", str(_plan(tmp_path)), "-o", str(out), "--jobs", "1", "-q"])
        assert r.exit_code == 2 and f"(pid {child.pid})" in r.output, r.output
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert (out / LOCK_NAME).exists()           # the killed holder left its file behind ...
    time.sleep(0.05)
    r = CliRunner().invoke(cli, ["sweep", "run", str(_plan(tmp_path)), "-o", str(out), "--jobs", "1", "-q"])
    assert r.exit_code == 0, r.output           # ... but no live lock: taken over, both points run
    assert len(list(out.glob("*.parquet"))) == 2


def test_a_symlink_at_the_lock_path_is_refused_and_its_target_untouched(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    (out / LOCK_NAME).symlink_to(victim)
    r = CliRunner().invoke(cli, ["sweep", "run", str(_plan(tmp_path)), "-o", str(out), "--jobs", "1", "-q"])
    assert r.exit_code == 2, r.output
    assert [ln for ln in r.output.splitlines() if ln.strip()] == [
        f"pcs: error: {out / LOCK_NAME}: the sweep lock is not a regular file (a symlink, folder or FIFO?): "
        "remove it and run again"], r.output
    assert victim.read_text() == "keep me\n"    # not truncated, no pid written through the link
    assert list(out.glob("*.parquet")) == []


def test_a_fifo_at_the_lock_path_is_refused_naming_it(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / LOCK_NAME)
    r = CliRunner().invoke(cli, ["sweep", "run", str(_plan(tmp_path)), "-o", str(out), "--jobs", "1", "-q"])
    assert r.exit_code == 2, r.output
    assert str(out / LOCK_NAME) in r.output and "not a regular file" in r.output, r.output
    assert "Invalid argument" not in r.output and "Traceback" not in r.output


def test_a_lock_taken_on_a_file_removed_meanwhile_is_retaken_on_the_file_the_path_names(tmp_path, monkeypatch):
    import fcntl
    out = tmp_path / "out"
    real = fcntl.flock
    calls = []

    def flock(fd, op):                 # the holder finishes between our open and our flock: removes its file
        calls.append(fd)
        if len(calls) == 1:
            (out / LOCK_NAME).unlink()
        return real(fd, op)

    monkeypatch.setattr(fcntl, "flock", flock)
    with sweep_lock(out):
        monkeypatch.setattr(fcntl, "flock", real)
        assert len(calls) == 2                    # the lock on the removed inode was dropped, the open retried
        fd = os.open(out / LOCK_NAME, os.O_RDWR)  # the file the path names now is the one held
        try:
            try:
                real(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = False
            except BlockingIOError:
                held = True
            assert held
        finally:
            os.close(fd)
