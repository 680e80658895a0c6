"""The ``pcs`` console script, ``pcs.cli.main:main``: small, so stop signals are held from its first line.

Importing the command group (click, :mod:`pcs.cli.common`, :mod:`pcs.cli.group`) takes about 0.2 s; a Ctrl-C or
SIGTERM in that time used to end in Python's ``KeyboardInterrupt`` traceback or a bare exit -15.
:func:`main` blocks SIGINT, SIGTERM and SIGHUP first (``pthread_sigmask``, POSIX), and the group releases
them once the command's handlers are in place (:meth:`pcs.cli.group.LazyGroup.invoke`), so a signal at any
moment after the interpreter has started ends in one line and exit 130 / 128 + the signal, with no file
left (nothing is written before the command runs). ``cli``, ``COMMANDS``, ``SUMMARIES`` and ``LazyGroup``
are :mod:`pcs.cli.group`'s, loaded on first use.
"""
from __future__ import annotations

import os
import signal
import threading
from typing import Any

# pcs calls no BLAS routine; OpenBLAS would start a thread per core when numpy loads (~20 ms of CPU at start-up,
# benchmarks/bench_startup.py). A user's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

#: The signals held while pcs starts: Ctrl-C and the stop signals of pcs.cli.common.STOP_SIGNALS.
HELD = frozenset(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))
_GROUP = ("cli", "COMMANDS", "SUMMARIES", "LazyGroup")


def _mask(how: int) -> None:
    if hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread():
        signal.pthread_sigmask(how, HELD)


def release_signals() -> None:
    """Unblock :data:`HELD` (a no-op when :func:`main` did not block them: tests, ``CliRunner``); a signal that
    arrived meanwhile is delivered now, to the command's handlers."""
    if hasattr(signal, "SIG_UNBLOCK"):
        _mask(signal.SIG_UNBLOCK)


def main() -> None:
    """Console-script entry point: hold the stop signals, load the group, run it."""
    if hasattr(signal, "SIG_BLOCK"):
        _mask(signal.SIG_BLOCK)
    from pcs.cli.group import cli

    cli(prog_name="pcs")


def __getattr__(name: str) -> Any:
    if name in _GROUP:
        from pcs.cli import group

        return getattr(group, name)
    raise AttributeError(f"module 'pcs.cli.main' has no attribute {name!r}")
