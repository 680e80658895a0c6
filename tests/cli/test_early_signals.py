"""A stop signal while pcs is still starting: one line and exit 130 / 143, no traceback, no file.

The console script (``pcs.cli.main:main``) holds SIGINT/SIGTERM/SIGHUP from its first line until the command's
handlers are in place (pcs.cli.group.LazyGroup.invoke). The signal is sent by the process to itself at the start
of ``import click`` -- the group's first import, inside the ~0.2 s window that used to end in Python's
``KeyboardInterrupt`` traceback (SIGINT) or a bare exit -15 (SIGTERM) -- so the timing is exact, not a race."""
from __future__ import annotations

import signal
import subprocess
import sys

import pytest

EARLY = """
import builtins, os, signal, sys
real = builtins.__import__
def imp(name, *a, **k):
    if name == "click":
        builtins.__import__ = real
        os.kill(os.getpid(), signal.{sig})
    return real(name, *a, **k)
builtins.__import__ = imp
from pcs.cli.main import main
sys.argv = ["pcs", "trace", "synth", "out.jsonl", "--requests", "3"]
main()
"""


@pytest.mark.parametrize("sig,rc,line", [("SIGINT", 130, "pcs: interrupted"),                    # 128 + 2
                                         ("SIGTERM", 143, "pcs: terminated by SIGTERM"),         # 128 + 15
                                         ("SIGHUP", 129, "pcs: terminated by SIGHUP")])          # 128 + 1
def test_a_signal_while_pcs_imports_is_one_line(tmp_path, sig, rc, line):
    def default_sigint():  # a test runner started in the background may ignore SIGINT; a user's shell does not
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    r = subprocess.run([sys.executable, "-c", EARLY.format(sig=sig)], cwd=tmp_path, capture_output=True,
                       timeout=120, preexec_fn=default_sigint)
    assert (r.returncode, r.stderr.decode(), r.stdout.decode()) == (rc, line + "\n", "")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_the_signals_are_released_for_the_command(tmp_path):
    """Held only while starting: the command itself runs with nothing blocked (SigBlk of /proc/self/status,
    proc(5), read by a command-free check: the group's release leaves the mask empty)."""
    code = ("import sys; from pcs.cli.main import main; sys.argv = ['pcs', 'budget', '--capacity-need', '1GB', "
            "'--capacity-have', '2GB', '--bandwidth-need', '1GB/s', '--bandwidth-have', '2GB/s', '-q'];\n"
            "import atexit\n"
            "atexit.register(lambda: print('SigBlk', [l.split()[1] for l in open('/proc/self/status') "
            "if l.startswith('SigBlk')][0], file=sys.stderr))\n"
            "main()")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "SigBlk 0000000000000000" in r.stderr.decode()


FIRST = """
import builtins, os, signal, sys
real = builtins.__import__
def imp(name, *a, **k):
    if name == "gc" and (a[0] if a else k.get("globals") or dict()).get("__name__") == "pcs.cli.main":
        builtins.__import__ = real
        os.kill(os.getpid(), signal.SIGINT)
    return real(name, *a, **k)
builtins.__import__ = imp
sys.argv = ["{arg0}", "trace", "synth", "out.jsonl", "--requests", "3"]
from pcs.cli.main import main
main()
"""


@pytest.mark.parametrize("arg0", ["pcs", "/usr/local/bin/pcs", "/site-packages/pcs/__main__.py"])
def test_a_sigint_at_the_first_import_of_the_entry_point_is_one_line(tmp_path, arg0):
    """The entry module holds the stop signals before its first import (``import gc``, where the signal is sent
    here) when the process is the pcs command (the console script, ``python -m pcs``): one line, exit 130."""
    def default_sigint():
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    r = subprocess.run([sys.executable, "-c", FIRST.format(arg0=arg0)], cwd=tmp_path, capture_output=True,
                       timeout=120, preexec_fn=default_sigint)
    assert (r.returncode, r.stderr.decode(), r.stdout.decode()) == (130, "pcs: interrupted\n", "")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_library_import_of_the_entry_point_holds_no_signal():
    """Imported by another program (argv[0] not pcs), the entry module leaves the signal mask alone: nothing
    would release it."""
    code = "import signal, sys; sys.argv[0] = 'other.py'; import pcs.cli.main; " \
           "print(signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "False", r.stderr
