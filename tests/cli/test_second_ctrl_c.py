"""More Ctrl-Cs while the first one stops a command: still one line ``pcs: interrupted``, exit 130, no traceback,
no output file (docs/cli.md "Ctrl-C"; pcs.cli.common.unwind_on_signals, ignore_stop_signals).

A second Ctrl-C used to raise a second ``KeyboardInterrupt`` in the cleanups the first one runs, to print
"Exception ignored ..." when it landed in an atexit hook or a finaliser, and, late in the interpreter's
finalisation (where Python resets its handlers to the default action), to kill the process by SIGINT (exit -2,
after "pcs: interrupted" was printed). The signals are sent by the process to itself at fixed points, so the
timing is exact, not a race."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.helpers import ROOT

#: The first Ctrl-C pending while pcs starts (the command releases it: KeyboardInterrupt at the command's start),
#: a second one from the last atexit hook, during the shutdown after "pcs: interrupted" was printed.
TWICE = """
import atexit, os, signal, sys
atexit.register(os.kill, os.getpid(), signal.SIGINT)      # registered first: runs after pcs's own atexit hooks
sys.argv = ["pcs", "replay", {trace!r}, "--format", "json", "--requests-out", "req.parquet"]
import pcs.cli.main as m        # holds the stop signals (argv[0] is pcs) until the command's handlers are in place
os.kill(os.getpid(), signal.SIGINT)
m.main()
"""


def _default_sigint():   # a test runner started in the background may ignore SIGINT; a user's shell does not
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_a_second_ctrl_c_in_the_shutdown_changes_nothing(tmp_path):
    trace = str(ROOT / "traces" / "sample_chat.jsonl")
    r = subprocess.run([sys.executable, "-c", TWICE.format(trace=trace)], cwd=tmp_path, capture_output=True,
                       timeout=120, preexec_fn=_default_sigint,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert (r.returncode, r.stderr.decode(), r.stdout.decode()) == (130, "pcs: interrupted\n", "")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals: main thread only")
def test_a_second_ctrl_c_while_the_first_unwinds_raises_nothing():
    """In one process (a library caller's, a test runner's): the second Ctrl-C lands in a cleanup the first
    one's KeyboardInterrupt runs; the cleanup runs to its end, and the handler before the block is back after."""
    from pcs.cli.common import unwind_on_signals

    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    cleaned = []
    try:
        with pytest.raises(KeyboardInterrupt):
            with unwind_on_signals():
                try:
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(5)                      # the first lands here
                finally:
                    os.kill(os.getpid(), signal.SIGINT)
                    for _ in range(1000):              # ... and the second in the cleanup, between two bytecodes
                        pass
                    cleaned.append("done")
        assert cleaned == ["done"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before)
