"""Ctrl-C on ``pcs sweep --jobs N``: one line ``pcs: interrupted``, exit 130, no worker's traceback, only whole
point files.

A terminal's Ctrl-C is SIGINT to the whole foreground process group: the driver and its spawn workers. A worker
still starting (importing multiprocessing and pcs, unpickling its task: about a second, before the pool's
initializer ignores SIGINT) printed a ``KeyboardInterrupt`` traceback under the driver's line, and a driver stopped
while it wrote a worker's task left that worker an ``UnpicklingError`` traceback (pcs/sweep/backends.py,
``_workers_start_ignoring_sigint``).
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLAN = ROOT / "traces" / "sweep_sample.toml"


def _square(x):
    """A worker's task: its SIGINT disposition (as Python set it up when the worker started) and x squared."""
    return signal.getsignal(signal.SIGINT) is signal.SIG_IGN, x * x


def test_workers_start_with_sigint_ignored():
    # no initializer here: what the worker reports is what it had from its first instruction on
    import multiprocessing

    from pcs.sweep.backends import _workers_start_ignoring_sigint

    before = signal.getsignal(signal.SIGINT)
    with _workers_start_ignoring_sigint():
        pool = multiprocessing.get_context("spawn").Pool(1)
    try:
        assert pool.map(_square, [3]) == [(True, 9)]
    finally:
        pool.terminate()
    assert signal.getsignal(signal.SIGINT) is before          # the driver's own handler is back


def test_a_ctrl_c_while_the_workers_start_is_raised_after():
    from pcs.sweep.backends import _workers_start_ignoring_sigint

    reached = []
    with pytest.raises(KeyboardInterrupt):
        with _workers_start_ignoring_sigint():
            os.kill(os.getpid(), signal.SIGINT)
            reached.append("after the signal")                 # not raised inside: the pool would have no owner
    assert reached == ["after the signal"]


def _sigint_bits(pid: str) -> tuple[bool, bool]:
    """(caught, ignored) of SIGINT in process ``pid``: bit SIGINT - 1 of ``SigCgt`` / ``SigIgn`` in Linux's
    /proc/PID/status (proc(5))."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    bit = 1 << (signal.SIGINT - 1)
    return bool(int(fields["SigCgt"], 16) & bit), bool(int(fields["SigIgn"], 16) & bit)


def _a_worker_has_started(pid: int) -> bool:
    """Whether a spawn worker of ``pid`` (its command line runs ``spawn_main``) has Python's SIGINT handler or
    ignores SIGINT, while ``pid`` itself is back on its own handler: before the fix a worker held Python's
    handler from its start-up until the pool's initializer (about a second of imports), the window where Ctrl-C
    printed its traceback; the driver ignores SIGINT only for the millisecond of each worker's fork and exec (a
    Ctrl-C then is lost, by design), and writes the worker its task after it, which takes the worker's imports."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        if _sigint_bits(str(pid))[1]:
            return False
    except (OSError, KeyError):
        return False
    for child in children:
        try:
            if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes() and any(_sigint_bits(child)):
                return True
        except (OSError, KeyError):
            continue
    return False


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc to see the workers start")
def test_ctrl_c_as_a_worker_starts_is_one_line_and_exit_130(tmp_path):
    out = tmp_path / "out"

    def default_sigint():  # a test runner started in the background may ignore SIGINT; a user's shell does not
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen([sys.executable, "-m", "pcs", "sweep", str(PLAN), "-o", str(out), "--jobs", "2"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=default_sigint)
    end = time.monotonic() + 60
    while not _a_worker_has_started(proc.pid) and proc.poll() is None and time.monotonic() < end:
        time.sleep(0.002)
    assert proc.poll() is None, proc.communicate()
    os.killpg(proc.pid, signal.SIGINT)                           # as Ctrl-C: the driver and its workers
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "Error" not in stderr, stderr
    assert stderr.rstrip().splitlines()[-1].startswith("pcs: interrupted"), stderr
    assert stdout == ""
    left = sorted(p.name for p in out.iterdir()) if out.exists() else []
    assert all(n.endswith(".parquet") for n in left), left     # whole point files only: no temporary file
