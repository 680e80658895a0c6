"""A stop signal at named points of a real ``pcs replay`` ends it in one line, exit 130 / 143, no file left.

Each case runs the command in its own process as the console script does (:func:`pcs.cli.main.main`) under a
``sys.settrace`` hook that sends the process the signal at the first call of one named function once the command's
handlers are in place (:func:`pcs.cli.main.release_signals` has run): the point is the same on every machine and
every run, where a signal sent from outside lands wherever the process happens to be. A Python function's call is
where the interpreter itself runs a pending signal's handler (its first instruction checks), so each case is a
point a real Ctrl-C can hit.

The points: the command's own import and set-up, the hand-over to a worker and the wait for it, the step loop,
the output's writing and the result's printing -- and a dataclass field's ``__set_name__``, called for every field
as ``pcs replay`` imports its engine's result classes: Python 3.11 turns a ``KeyboardInterrupt`` raised there into
``RuntimeError: Error calling __set_name__ on 'Field' instance ...``, which ended the command as a bug (exit 1, a
traceback; one CI run of tests/cli/test_hostile_signals.py) before :func:`pcs.cli.common.unwind_on_signals` raised
the stop in its place.
"""
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow   # spawns pcs processes (13, ~1 s each)

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "traces" / "sample_chat.jsonl"
REPLAY = ["replay", str(TRACE), "--engine", "general", "--policy", "slru", "--tier", "gpu=20blocks",
          "--tier", "cpu=80blocks", "--requests-out", "rows.csv", "-q"]
OLD = "the old output\n"

#: Runs ``pcs ARGS...`` (argv[4:]) in this process as the console script does, sending itself signal argv[1] at the
#: first call of the function named argv[2] whose file name ends with argv[3], once release_signals has run (and,
#: for a name written ``NAME@AFTER``, once a function named AFTER has been called).
DRIVER = r"""
import signal, sys
sig, name, file_end, args = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
name, _, after = name.partition("@")
sys.argv = ["pcs", *args]
import pcs.cli.main
released = []

def tracer(frame, event, arg):
    code = frame.f_code
    if len(released) < 1 + bool(after):
        if code.co_name == ("release_signals" if not released else after):
            released.append(True)
    elif code.co_name == name and code.co_filename.endswith(file_end):
        sys.settrace(None)
        print("pcs-test: sent", file=sys.stderr, flush=True)
        signal.raise_signal(sig)
    return None

sys.settrace(tracer)
pcs.cli.main.main()
"""

#: (function name, its file's ending, whether the output is complete by then)
POINTS = [
    ("__set_name__", "dataclasses.py", False),     # a dataclass made while the engine is imported (the CI failure)
    ("get_command", "pcs/cli/group.py", False),    # the command's module about to be imported
    ("invoke", "pcs/cli/common.py", False),        # PcsCommand.invoke: settings, the command's files, its modules
    ("_spawn", "pcs/beside.py", False),            # a worker about to start (signals held)
    ("_take_done", "pcs/beside.py", False),        # the wait for a worker's call
    ("close", "pcs/engine/scheduler.py", False),   # the step loop's close
    ("_reserve_temporary", "pcs/outfile.py", False),   # the output's temporary file about to be made
    ("publish", "pcs/outfile.py", False),          # the temporary file, written, about to replace the output
    ("__init__@publish", "contextlib.py", True),   # the output replaced, its temporary file's removal (suppress)
    ("emit", "pcs/cli/common.py", True),           # the output is complete, the result not yet printed
]


def _stopped_at(tmp_path, sig, name, file_end):
    (tmp_path / "rows.csv").write_text(OLD)
    env = dict(os.environ, PCS_THREADS="on", PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", DRIVER, str(int(sig)), name, file_end, *REPLAY], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stderr.strip().splitlines()


@pytest.mark.parametrize("name, file_end, complete", POINTS, ids=[p[0] for p in POINTS])
def test_a_ctrl_c_at_each_point_ends_in_one_line(tmp_path, name, file_end, complete):
    rc, err = _stopped_at(tmp_path, signal.SIGINT, name, file_end)
    assert err[:1] == ["pcs-test: sent"], "\n".join(err)                 # the point was reached
    line = "pcs: interrupted" + ("; complete before it: rows.csv (no other output was written)" if complete else "")
    assert (rc, err[1:]) == (130, [line]), f"exit {rc}:\n" + "\n".join(err)   # the whole stderr if not
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.csv"]
    assert ((tmp_path / "rows.csv").read_text() != OLD) is complete     # whole: the new rows, or the old file


def test_a_sigterm_where_python_wraps_the_stop_ends_in_one_line(tmp_path):
    rc, err = _stopped_at(tmp_path, signal.SIGTERM, "__set_name__", "dataclasses.py")
    assert (rc, err) == (143, ["pcs-test: sent", "pcs: terminated by SIGTERM"]), f"exit {rc}:\n" + "\n".join(err)
    assert [p.name for p in tmp_path.iterdir()] == ["rows.csv"] and (tmp_path / "rows.csv").read_text() == OLD


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_once_the_command_is_over_changes_nothing(tmp_path, sig):
    # remove_temporary's call after the command's block (pcs.cli.group LazyGroup.invoke's finally): the outputs are
    # whole, the result printed. Python's own handlers were back there: SIGTERM killed the process (exit -15),
    # Ctrl-C ended in click's "Aborted!" (exit 1). Now the command's process ignores both until it exits.
    rc, err = _stopped_at(tmp_path, sig, "remove_temporary", "pcs/outfile.py")
    assert (rc, err) == (0, ["pcs-test: sent"]), f"exit {rc}:\n" + "\n".join(err)
    assert [p.name for p in tmp_path.iterdir()] == ["rows.csv"] and (tmp_path / "rows.csv").read_text() != OLD


#: A program (not the pcs process: its argv[0] is its own) that runs `pcs footprint` in-process twice through
#: pcs.cli.main.main (click's SystemExit caught), then prints its handlers and a child's fate under SIGTERM.
PROGRAM = r"""
import signal, subprocess, sys
import pcs.cli.main
before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGHUP))
for _ in range(2):
    sys.argv = ["my-service", "footprint", "--model", "llama-2-70b", "--tokens", "1024", "-q"]
    try:
        pcs.cli.main.main()
    except SystemExit as e:
        assert e.code in (0, None), e.code
after = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGHUP))
print(after == before, signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)
child = subprocess.Popen(["sleep", "5"])
child.send_signal(signal.SIGTERM)
print(child.wait())
"""


def test_a_program_that_ran_a_command_gets_its_handlers_back(tmp_path):
    # A program's handlers after the command are the ones it had (Python's defaults; SIGINT is SIG_IGN already in a
    # background job of a non-interactive shell, as CI runs): a review found them ignored for the rest of the
    # program, and in every child it started later
    # (an ignored signal stays ignored across exec: the child's SIGTERM did nothing, so `sleep 5` ran out -> 0;
    # killed by it -> -15).
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", PROGRAM], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[-3:] == ["True", "True", "-15"]     # after the two tables


EAGER = r"""
import gc, signal, subprocess, sys
import pcs.cli.main
sys.argv = ["my-service", sys.argv[1]]
try:
    pcs.cli.main.main()
except SystemExit as e:
    assert e.code in (0, None), e.code
print(sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])), gc.isenabled())
child = subprocess.Popen(["sleep", "5"])
child.send_signal(signal.SIGTERM)
print(child.wait())
"""


@pytest.mark.parametrize("option", ["--version", "--help"])
def test_a_program_gets_its_signals_and_collector_back_after_an_eager_option(tmp_path, option):
    # main() blocks SIGINT/SIGTERM/SIGHUP and holds the garbage collector off until the command's handlers are in
    # place; a top-level --version or --help ends before that, and left a program with its stop signals blocked
    # (and every child it started: sleep ignored SIGTERM and ran out, exit 0) and its collector off. Now nothing is
    # blocked after it ([] ), the collector is on (True), the child dies by SIGTERM (-15).
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", EAGER, option], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-2:] == ["[] True", "-15"]
