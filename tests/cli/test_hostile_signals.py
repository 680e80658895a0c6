"""Hostile input: a long run killed with SIGTERM or SIGINT leaves no temp file and the old output intact.

Real processes (``python -m pcs``): a replay with ``--requests-out`` killed
mid-replay, and ``trace synth`` killed while its temporary file is being
written. SIGTERM ends with one line and exit 143 (128 + 15), Ctrl-C (SIGINT)
with ``pcs: interrupted`` and exit 130; the stdin spool goes too.
"""
import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.slow

#: The Python hierarchy, slru, three tiers: seconds of CPU on the long trace, so a kill when the command is ready
#: (:func:`_ready`) lands before it can write its output.
SLOW_REPLAY = ["--engine", "general", "--policy", "slru", "--tier", "gpu=2000blocks", "--tier", "cpu=8000blocks",
               "--tier", "ssd=20000blocks"]
SIGNALS = [(signal.SIGTERM, 143, "pcs: terminated by SIGTERM"), (signal.SIGINT, 130, "pcs: interrupted")]


def _start(args, cwd, **kw):
    def default_sigint():  # a test runner started in the background may ignore SIGINT; a user's shell does not
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    return subprocess.Popen([sys.executable, "-m", "pcs", *map(str, args)], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=default_sigint, **kw)


def _wait_for(pred, timeout=60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.01)
    return False


def _catches_sigterm(pid: int) -> bool:
    """Whether process ``pid`` has a SIGTERM handler in place: bit 15 - 1 of the ``SigCgt`` mask in Linux's
    /proc/PID/status (proc(5)). pcs installs it as a command starts (pcs.cli.group LazyGroup.invoke, in the
    same ``with`` as the one-line error handling), so from then on SIGTERM and Ctrl-C end in one line."""
    try:
        with open(f"/proc/{pid}/status") as f:
            masks = [line.split()[1] for line in f if line.startswith("SigCgt:")]
    except FileNotFoundError:  # the process has ended
        return False
    return bool(masks) and bool(int(masks[0], 16) >> (signal.SIGTERM - 1) & 1)


def _ready(proc) -> None:
    """Wait until ``proc`` is ready to be stopped (a readiness signal, not a sleep that a loaded machine
    outlasts or falls short of): its SIGTERM handler is in place; fail if it ended first."""
    assert _wait_for(lambda: _catches_sigterm(proc.pid) or proc.poll() is not None), "never ready"
    assert proc.poll() is None, proc.communicate()


needs_proc = pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc/PID/status (Linux)")


def _stop(proc, sig):
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, err.decode().strip().splitlines()


@pytest.fixture(scope="module")
def long_trace(tmp_path_factory):
    """20,000 synthetic requests: a few seconds of replay on the Python engine."""
    d = tmp_path_factory.mktemp("long")
    subprocess.run([sys.executable, "-m", "pcs", "trace", "synth", d / "long.jsonl", "--requests", "20000", "-q"],
                   check=True, capture_output=True)
    return d / "long.jsonl"


@needs_proc
@pytest.mark.parametrize("sig, code, line", SIGNALS, ids=["SIGTERM", "SIGINT"])
def test_killed_replay_keeps_the_old_output(tmp_path, long_trace, sig, code, line):
    (tmp_path / "rows.csv").write_text("the old output\n")
    proc = _start(["replay", long_trace, *SLOW_REPLAY, "--requests-out", "rows.csv"], tmp_path)
    _ready(proc)                          # the command has started; its replay takes seconds more
    rc, err = _stop(proc, sig)
    assert rc == code and err[-1:] == [line], f"exit {rc}:\n" + "\n".join(err)   # the whole stderr if not
    assert "Traceback" not in "\n".join(err)
    assert (tmp_path / "rows.csv").read_text() == "the old output\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.csv"]


@pytest.mark.parametrize("sig, code, line", SIGNALS, ids=["SIGTERM", "SIGINT"])
def test_killed_while_writing_removes_the_temp_file(tmp_path, sig, code, line):
    (tmp_path / "out.jsonl").write_text("the old output\n")
    proc = _start(["trace", "synth", "out.jsonl", "--requests", "2000000", "-q"], tmp_path)
    tmp_seen = _wait_for(lambda: any(p.name.endswith(".tmp") for p in tmp_path.iterdir()) or proc.poll() is not None)
    assert tmp_seen and proc.poll() is None, "the temporary file never appeared"
    time.sleep(0.3)
    rc, err = _stop(proc, sig)
    assert rc == code and err[-1:] == [line], f"exit {rc}:\n" + "\n".join(err)   # the whole stderr if not
    assert (tmp_path / "out.jsonl").read_text() == "the old output\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_killed_stdin_replay_removes_the_spool(tmp_path, long_trace):
    # The spool's appearance is the readiness signal: the command creates it, so the SIGTERM handler is in place
    # (pcs.cli.group LazyGroup.invoke installs it first), and the replay has seconds of work left, so the signal
    # lands mid-run -- while the spool is being created or filled, or the trace read (a fixed sleep instead let a
    # loaded machine send it at an unknown point). pcs.outfile.create_temporary names the spool before it exists.
    env = dict(os.environ, TMPDIR=str(tmp_path))
    with open(long_trace, "rb") as stdin:
        proc = _start(["replay", "-", *SLOW_REPLAY, "-q"], tmp_path, stdin=stdin, env=env)
        assert _wait_for(lambda: any(p.name.startswith("pcs-stdin-") for p in tmp_path.iterdir())
                         or proc.poll() is not None)
        assert proc.poll() is None, proc.communicate()
        rc, err = _stop(proc, signal.SIGTERM)
    assert rc == 143 and err[-1:] == ["pcs: terminated by SIGTERM"], f"exit {rc}:\n" + "\n".join(err)
    assert "Traceback" not in "\n".join(err)
    assert list(tmp_path.iterdir()) == []
