"""The ``pcs`` console script, ``pcs.cli.main:main``: small, so stop signals are held from its first line.

Importing the command group (click, :mod:`pcs.cli.common`, :mod:`pcs.cli.group`) takes about 0.2 s; a Ctrl-C or
SIGTERM in that time used to end in Python's ``KeyboardInterrupt`` traceback or a bare exit -15.
:func:`main` blocks SIGINT, SIGTERM and SIGHUP first (``pthread_sigmask``, POSIX), and the group releases
them once the command's handlers are in place (:meth:`pcs.cli.group.LazyGroup.invoke`), so a signal from
this module's first line on ends in one line and exit 130 / 128 + the signal, with no file left (nothing is
written before the command runs). A signal before that -- while the interpreter, its site start-up (``.pth``
files) or the console script's own import run, before any pcs code -- still ends in Python's own way (a
``KeyboardInterrupt`` traceback, or exit -15). It also holds the cyclic garbage collector off until the
command line is parsed, then freezes what start-up made (``gc.freeze``: the modules, classes and functions
pcs loaded are long-lived; later collections no longer walk them) and turns the collector back on
(:func:`release_gc`, called by :meth:`pcs.cli.common.PcsCommand.invoke`). Collecting through them cost
~4 % of a small replay's CPU (benchmarks/bench_startup.py ``breakdown``); re-enabling without the freeze
only moved that cost into the first collections of the command. ``cli``, ``COMMANDS``, ``SUMMARIES`` and ``LazyGroup``
are :mod:`pcs.cli.group`'s, loaded on first use.
"""
from __future__ import annotations

import _signal
import sys


def _held_at_import() -> bool:
    """Hold the stop signals now, before any other import (``_signal`` is the interpreter's own module: the
    ``signal`` module would import ``enum`` first), when this process is the ``pcs`` command (the console script,
    or ``python -m pcs``); never for a library or test import, nor in a worker process that multiprocessing's spawn
    start method made (it re-runs the parent's main module with the parent's ``sys.argv``), which never runs a
    command to release them: its parent's SIGTERM would then wait forever."""
    if "multiprocessing" in sys.modules:
        return False    # a spawned worker re-running the main module (sweep --jobs): no command will release them
    arg0 = sys.argv[0] if sys.argv else ""
    name = arg0.replace("\\", "/").rsplit("/", 1)[-1]
    if not (name in ("pcs", "pcs.exe") or arg0.replace("\\", "/").endswith("pcs/__main__.py")):
        return False
    if hasattr(_signal, "pthread_sigmask"):
        _signal.pthread_sigmask(_signal.SIG_BLOCK, {getattr(_signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP")
                                                    if hasattr(_signal, n)})
    return True


#: True when this process is the ``pcs`` command itself (the console script or ``python -m pcs``, by ``sys.argv[0]``:
#: :func:`_held_at_import`), which exits when its command is over: from then on it ignores stop signals
#: (:func:`pcs.cli.common.unwind_on_signals`); False for a program that calls :func:`main` and goes on, whose own
#: handlers are back once the command is over (children it starts later inherit them).
PROCESS = _held_at_import()

import gc  # noqa: E402  (after the signals are held)
import os  # noqa: E402
import signal  # noqa: E402
import threading  # noqa: E402
from typing import Any  # noqa: E402

# pcs calls no BLAS routine; OpenBLAS would start a thread per core when numpy loads (~20 ms of CPU at start-up,
# benchmarks/bench_startup.py). A user's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

#: The signals held while pcs starts: Ctrl-C and the stop signals of pcs.cli.common.STOP_SIGNALS.
HELD = frozenset(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))
_GROUP = ("cli", "COMMANDS", "SUMMARIES", "LazyGroup")
#: True while :func:`main` holds the garbage collector off (until :func:`release_gc`).
_gc_held = False
#: True once :func:`main` runs: this process is the ``pcs`` command, which after a stop signal ignores every
#: later one until it exits (:func:`pcs.cli.common.ignore_stop_signals`); False for a library or test import.
COMMAND = False


def _mask(how: int) -> None:
    if hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread():
        signal.pthread_sigmask(how, HELD)


def release_signals() -> None:
    """Unblock :data:`HELD` (a no-op when :func:`main` did not block them: tests, ``CliRunner``); a signal that
    arrived meanwhile is delivered now, to the command's handlers."""
    if hasattr(signal, "SIG_UNBLOCK"):
        _mask(signal.SIG_UNBLOCK)


def release_gc() -> None:
    """Freeze what start-up allocated (``gc.freeze``: never walked by later collections; a garbage cycle made
    during start-up is not freed before exit) and re-enable the garbage collector :func:`main` held off; a
    no-op when it did not hold it (tests, ``CliRunner``, a caller that disabled it itself)."""
    global _gc_held
    if _gc_held:
        _gc_held = False
        gc.freeze()
        gc.enable()


def main() -> None:
    """Console-script entry point: hold the stop signals and the garbage collector, load the group, run it; on the
    way out the collector is back on and, for a program that called it (not :data:`PROCESS`), the signals are
    released -- also after an option that ends before any command runs (``--version``, ``--help``), which
    released neither (a program's Ctrl-C and SIGTERM stayed blocked, and in every child it started)."""
    global _gc_held, COMMAND
    COMMAND = True
    if hasattr(signal, "SIG_BLOCK"):
        _mask(signal.SIG_BLOCK)
    if gc.isenabled():
        gc.disable()
        _gc_held = True
    from pcs.cli.group import cli

    try:
        cli(prog_name="pcs")
    finally:    # an option that ends before the command runs (--version, --help) released neither
        release_gc()
        if not PROCESS:     # a program that called main() goes on: its signals delivered again (the pcs process exits)
            release_signals()


def __getattr__(name: str) -> Any:
    if name in _GROUP:
        from pcs.cli import group

        return getattr(group, name)
    raise AttributeError(f"module 'pcs.cli.main' has no attribute {name!r}")
