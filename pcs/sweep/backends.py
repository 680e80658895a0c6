"""Where the points run: this process, a local process pool, or Ray tasks.

Each backend calls :func:`pcs.sweep.worker.run_task` once per task and hands
each :class:`pcs.sweep.worker.Outcome` to ``on_done`` in the driver as it
arrives (in finishing order; the driver writes the row). The rows do not
depend on the backend: a task carries every input of its point, and the
trace is the same :class:`pcs.sweep.worker.LoadedTrace` everywhere.

- :func:`run_local`: ``jobs == 1`` runs in this process; more starts a
  ``spawn`` process pool (no fork of a process that may hold threads), each
  worker receiving the loaded traces once through the pool initializer.
- :func:`run_ray`: one Ray task per point (1 CPU each); each distinct trace
  is put into the object store once (``ray.put``) and passed to the tasks by
  reference, so a node fetches it once and its workers read it from shared
  memory (docs/sweep.md has the cluster picture and where it stops scaling).

An exception in the driver (``pcs.cli.common.Terminated`` on SIGTERM,
Ctrl-C's ``KeyboardInterrupt``) ends the pool or cancels the pending Ray
tasks before it propagates.
"""
from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, Iterator, Sequence

from pcs.errors import UserError
from pcs.extras import missing_extra
from pcs.sweep.worker import Outcome, init_worker, run_pooled, run_task

__all__ = ["run_local", "run_ray", "default_jobs", "RAY_LOCAL"]

#: ``--ray`` without an address: the Ray this process is connected to, else a new local one.
RAY_LOCAL = "local"


def default_jobs() -> int:
    """The CPUs this process may run on (``os.sched_getaffinity``, else ``os.cpu_count``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def run_local(tasks: Sequence[Any], traces: dict[tuple, Any], jobs: int, with_requests: bool,
              on_done: Callable[[Outcome], None]) -> None:
    """Run the tasks here (``jobs == 1``) or in a pool of ``jobs`` processes.

    Raises:
        UserError: ``jobs`` < 1; ``jobs`` > 1 from a script that is not a file (:func:`_check_main_importable`).
    """
    if jobs < 1:
        raise UserError(f"--jobs must be >= 1, got {jobs}")
    if jobs == 1 or len(tasks) <= 1:
        for t in tasks:
            on_done(run_task(t, traces.get(t.trace_key), with_requests))
        return
    import multiprocessing

    _check_main_importable()
    pool = None
    try:
        with _workers_start_ignoring_sigint():
            pool = multiprocessing.get_context("spawn").Pool(min(jobs, len(tasks)), initializer=init_worker,
                                                             initargs=(traces,))
        for outcome in pool.imap_unordered(run_pooled, [(t, with_requests) for t in tasks], chunksize=1):
            on_done(outcome)
        pool.close()
        pool.join()
    finally:
        if pool is not None:
            pool.terminate()


@contextlib.contextmanager
def _workers_start_ignoring_sigint() -> Iterator[None]:
    """Start the pool's workers with SIGINT ignored from their first instruction; a Ctrl-C while they start is
    raised once the pool exists (so the caller ends it), not while a worker is half-started.

    Ctrl-C reaches the whole process group. A worker still starting (a spawn worker imports multiprocessing and
    pcs, then unpickles its task, before the pool's initializer :func:`pcs.sweep.worker.init_worker` ignores
    SIGINT: about a second) printed a ``KeyboardInterrupt`` traceback under the driver's one line; and a
    driver interrupted while writing a worker's task left that worker an ``UnpicklingError`` traceback and
    no pool to end it. An ignored signal stays ignored across the fork and exec of a spawn start (a handler
    does not), and Python installs its SIGINT handler only where SIGINT is not ignored at start-up. So while
    the pool starts the driver notes a SIGINT instead of raising it, ignores SIGINT only around each worker's
    fork and exec (``multiprocessing.util.spawnv_passfds``, wrapped meanwhile: about a millisecond each, in
    which a Ctrl-C is lost; the next one stops the sweep), and raises ``KeyboardInterrupt`` after. No-op off
    the main thread (a signal handler can only be set there).
    """
    import signal
    import threading
    from multiprocessing import util

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    spawn, arrived = util.spawnv_passfds, []

    def note(signum: int, frame: Any) -> None:
        arrived.append(signum)

    def spawn_ignoring_sigint(*args: Any, **kwargs: Any) -> int:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            return spawn(*args, **kwargs)
        finally:
            signal.signal(signal.SIGINT, note)

    old = signal.signal(signal.SIGINT, note)
    util.spawnv_passfds = spawn_ignoring_sigint
    try:
        yield
    finally:
        util.spawnv_passfds = spawn
        signal.signal(signal.SIGINT, old)
    if arrived:
        raise KeyboardInterrupt


def _check_main_importable() -> None:
    """A ``spawn`` worker starts by importing the caller's ``__main__`` file; one read from stdin (``python -``)
    cannot be, and the pool would restart dying workers forever.

    Raises:
        UserError: ``__main__`` names a file that does not exist (``<stdin>``).
    """
    import sys

    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    if main_file is not None and not os.path.exists(main_file):
        raise UserError(f"jobs > 1 runs a process pool whose workers import the calling script, and "
                         f"{main_file} is not a file: save the script to a file (with an "
                         f"'if __name__ == \"__main__\":' guard) or use jobs=1")


def _connect(address: str | None, quiet: bool) -> bool:
    """Connect to Ray (its log lines off with ``quiet``); True when this call started it (the caller shuts it down)."""
    try:
        import ray
    except ImportError:
        raise UserError(missing_extra("--ray", "ray", "ray")) from None
    if ray.is_initialized():
        return False
    import logging

    logs = dict(logging_level=logging.ERROR, log_to_driver=False) if quiet else {}
    with _keep_stop_handlers():
        if address in (None, RAY_LOCAL):
            ray.init(include_dashboard=False, **logs)
        else:
            ray.init(address=address, **logs)
    return True


@contextlib.contextmanager
def _keep_stop_handlers() -> Iterator[None]:
    """The SIGTERM / SIGHUP handlers as they were before ``ray.init`` replaced them (main thread only): the
    CLI's handler unwinds the run, cancels the tasks and exits 128 + the signal with one line (Ray's printed
    its dump and exited 1)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    names = [n for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n)]
    old = {n: signal.getsignal(getattr(signal, n)) for n in names}
    try:
        yield
    finally:
        for n, h in old.items():
            if h is not None:
                signal.signal(getattr(signal, n), h)


def run_ray(tasks: Sequence[Any], traces: dict[tuple, Any], address: str | None, with_requests: bool,
            on_done: Callable[[Outcome], None], quiet: bool = False) -> None:
    """Run each task as a Ray task, the traces put into the object store once.

    Args:
        address: a Ray address (``auto``, ``ray://head:10001``, ``head:6379``)
            or :data:`RAY_LOCAL`; ignored when this process is already connected.
        quiet: no Ray log lines on stderr (when this call connects).
    Raises:
        UserError: Ray is not installed.
    """
    started = _connect(address, quiet)
    import ray

    pending: dict[Any, str] = {}
    try:
        refs = {key: ray.put(trace) for key, trace in traces.items()}
        remote = ray.remote(num_cpus=1)(run_task)
        pending = {remote.remote(t, refs.get(t.trace_key), with_requests): t.point_id for t in tasks}
        waiting = list(pending)
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=1)
            if waiting:  # take every other finished task too: one pass over the list per batch
                more, waiting = ray.wait(waiting, num_returns=len(waiting), timeout=0)
                ready += more
            for ref in ready:
                pending.pop(ref)
                on_done(ray.get(ref))
    except SystemError as e:            # a signal handler's exception raised inside Ray's C code arrives wrapped
        if isinstance(e.__cause__, BaseException) and not isinstance(e.__cause__, Exception):
            raise e.__cause__ from None  # Terminated (SIGTERM/SIGHUP) or KeyboardInterrupt: the CLI's one line
        raise
    finally:
        if started:                     # our own Ray: shutting it down ends its workers (a forced cancel of
            ray.shutdown()              # tasks finishing meanwhile trips a Ray check and aborts the process)
        else:
            for ref in pending:
                ray.cancel(ref)
