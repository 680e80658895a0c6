"""Run one call at a time on a worker thread beside the caller's work (the no-cache step loop, the one-pass scan).

The compiled step loop (:mod:`pcs.engine.stepnative`) releases the GIL over its ``feed`` and ``close`` when it
calls no Python code (``pcs/engine/_stepsched.c``, "the GIL"), so the modeled run and its no-cache twin -- which
read the same chunks and share no state -- run on two cores at once. Each loop touches only its own state and
hierarchy, so the results are those of running the calls one after the other (``tests/engine/test_beside.py``).
An engine whose loop keeps the GIL is called at once on the caller's thread (a thread would only add switches).
One worker thread serves every call of a :class:`Beside` (started at the first call, ended by :meth:`close`):
a replay makes one call per chunk, and a thread per call cost a thread start (stack, clone) each time.
The same serves the two-tier one-pass scan (:func:`pcs.engine.scanjoin._two_tier_scan`; ``lru_feed`` releases the GIL,
``pcs/engine/_lruscan.c``), a compiled hierarchy's sequential baseline (:func:`pcs.engine.seqbase.begin_sequential`)
and the read-ahead of the next chunk or trace batch (:func:`pcs.trace.batches.read_ahead`). (Decoding two JSONL
chunks at once, one on a worker, was built and measured slower on the whole replay: docs/performance.md, "The
decode beside".)
A reader's worker (``linger=False``) ends after each call: a reader its caller drops part-way (a ``break``, an
error, Ctrl-C) leaves no idle thread behind, even when nothing ever closes it (a generator kept alive by a
traceback or a reference cycle); at most the one call in flight finishes, and its thread with it.

The switch: ``PCS_THREADS`` (:func:`threads_wanted`, docs/performance.md "The one-pass scan beside the step
loop") -- ``auto`` (unset: worker threads when the process may run on two CPUs or more, unless the replay's trace is
small, see below), ``on`` (worker threads, whatever the trace) or ``off`` (every call inline, on the caller's
thread). On one CPU (``taskset -c 0``) a worker only adds thread switches.

Small traces inline in ``auto`` (:func:`small_trace`, :func:`sized`): a replay of a trace file read as text (JSONL
or CSV, not gzip-compressed) of fewer than :data:`INLINE_BELOW_BYTES` bytes runs its side work inline: its worker
starts and hand-overs cost about what they move off the calling thread (docs/performance.md, "runner.py in
modules, small traces inline", and "The auto rule retuned quiet": on a quiet 2-core machine half the 1x Mooncake
trace, 1.5 MB, ran as fast either way, the whole 1x trace, 3 MB, faster on threads). The rule reads the trace's size and the CPU count only, never the machine's load, so the same
input on the same machine gives the same decision (and the same ``threads`` object in the JSON). The decision is
taken once per replay, so all its side work runs one way; either way gives the same outcome. The measure is the file's size, known
before the read. A Parquet file's bytes do not measure the trace (the 10x Mooncake replica is 2.1 MB as
Parquet, 34 MB as JSONL): its measure is the count of block hashes its footer gives when it is opened, small below
:data:`INLINE_BELOW_PARQUET_IDS`. A gzip file and a source in memory keep the threads ``auto`` gives.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import signal
import sys
import threading
import time
import weakref

import _signal
from typing import Any, Callable, Iterator

from pcs.choices import close_tail
from pcs.errors import STOPS, UserError, shown_repr

__all__ = ["Beside", "INLINE_BELOW_BYTES", "INLINE_BELOW_PARQUET_IDS", "THREADS_MODES", "check_threads_setting",
           "sized", "small_trace", "threads_wanted", "threads_decision"]

#: Values of ``$PCS_THREADS`` (module docstring).
THREADS_MODES = ("auto", "on", "off")
#: What else ``$PCS_THREADS`` accepts, each meaning one mode without doubt (``-1``, ``2`` ... stay refused).
THREADS_ALIASES = {"1": "on", "yes": "on", "true": "on", "0": "off", "no": "off", "false": "off"}


class _StartNotWaited(threading.Event):
    """A worker's ``Thread._started`` (:class:`_Worker`): its first ``wait`` -- ``Thread.start``'s wait until the new
    thread runs (the only caller of that wait in :mod:`threading`, 3.10-3.13) -- returns at once; any later one
    waits. The event is set by the new thread as before (``Thread._bootstrap_inner``), so ``is_set`` and
    ``is_alive`` read as for any thread."""

    _skip = True

    def wait(self, timeout: float | None = None) -> bool:
        if self._skip:
            self._skip = False
            return self.is_set()
        return super().wait(timeout)


class _Worker(threading.Thread):
    """A worker thread whose :meth:`start` returns once the system has made the thread, without waiting until it
    runs: :class:`Beside` hands it its call through its own locks (``go`` / ``done``), so nothing waits for the
    thread to run before that call's result is asked for. ``Thread.start``'s wait cost the caller 0.1-0.5 ms a
    start on the 2-core machine at load 2-3, up to 7 ms at load 4 (the new thread waiting for a core and the GIL),
    3-4 times a 1x replay and 7 times a 10x one, on its critical path (docs/performance.md, "The 1x call's calling
    thread, third pass"). :meth:`join` first waits for the thread to have run (``Thread.join`` refuses a thread not
    yet started), within the one deadline ``timeout`` gives, as ``Thread.join``'s contract: a worker not yet run
    by then is left alive (no ``RuntimeError``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._started = _StartNotWaited()
        self._start_made = False

    def start(self) -> None:
        super().start()
        self._start_made = True

    def join(self, timeout: float | None = None) -> None:
        """Wait until the thread has run and ended, or ``timeout`` seconds (one deadline for both waits) have
        passed; returns None either way (``is_alive`` tells).

        Raises:
            RuntimeError: the thread was never started, or it joins itself (as ``Thread.join``)."""
        if not self._start_made:
            return super().join(timeout)                # Thread.join's own error
        if timeout is None:
            threading.Event.wait(self._started)         # the plain wait: never the skipped one, whoever waited first
            return super().join()
        deadline = time.monotonic() + max(timeout, 0.0)
        if threading.Event.wait(self._started, max(timeout, 0.0)):
            super().join(max(deadline - time.monotonic(), 0.0))
        return None


#: The workers' thread class (a name of its own: tests refuse or cut its start without touching other threads).
_Thread = _Worker
#: The signals whose Python handler :func:`_signals_held` holds back while a worker starts or takes its call, as
#: plain ints: that function calls the interpreter's ``_signal`` module, the functions :mod:`signal` wraps, without
#: the wrappers' conversions to enums (for a callable handler a failed ``Handlers(handler)`` lookup, an exception
#: caught: a hold took 11 us with them, 2.4 us without; a replay holds signals about 40 times). The handlers set
#: and restored are the same objects either way, and a held handler is called with the int as before.
#: Besides the stop signals, the ones a Python program commonly handles (a timeout's ``SIGALRM``, as pytest-timeout
#: raises from; ``SIGUSR1`` / ``SIGUSR2``): a handler that raises inside a hand-over broke it as Ctrl-C did (a worker
#: left idle, or a wait for a call already taken that never ended). Not ``SIGPROF`` / ``SIGVTALRM``: profilers'
#: ticks, which raise nothing and would only be delayed. A signal whose handler is not a Python callable (the
#: default, ignored) is not touched, so holding these three more cost nothing measurable (4.70 us a hold with
#: three signals, 4.75 us with six, 2026-12-05).
_HELD = tuple(int(getattr(signal, n)) for n in ("SIGINT", "SIGTERM", "SIGHUP", "SIGALRM", "SIGUSR1", "SIGUSR2")
              if hasattr(signal, n))


#: A trace file read as text (JSONL, CSV; not gzip) of fewer bytes than this runs a replay's side work inline in
#: ``auto`` mode (module docstring, :func:`small_trace`). How it was chosen: the default two-tier call on Mooncake
#: replicas and prefixes, threads on / off alternated call by call in one process (40 rounds), on the 2-core VM
#: quiet (load 0.0-0.3, 2026-12-04 10:25-10:28 UTC, main 7e700cb; docs/performance.md, "The auto rule retuned
#: quiet"): the first half of the 1x trace (1.5 MB) ran as fast either way (JSONL 16.2 ms on threads, 16.1 ms
#: inline), the 1x trace (3.0 MB) ran faster on threads (22.4-28.2 ms against 25.3-36.8 ms inline, three runs),
#: and so did 2x (54.0 against 61.3 ms). The threshold lies between the two, so the 1x trace takes threads. An
#: earlier measurement at load 6-10 put the crossover at 1.5x-2x: threads cost CPU (36 against 30 ms at 1x), which
#: a loaded machine pays in wall time; the rule ignores the load, so its answer is repeatable.
INLINE_BELOW_BYTES = 2_000_000
#: A Parquet trace with fewer block hashes than this (its footer's count, ``Trace.parquet_block_hashes``) runs a
#: replay's side work inline in ``auto`` mode. Chosen from the same quiet alternated measurement of the Parquet
#: files (288,500 block hashes a copy): half a copy (144,250) 15.6 ms either way, the 1x copy 18.7-20.8 ms on threads
#: against 23.0-24.8 ms inline, 2x 49.3 against 58.1 ms; the threshold lies between half a copy and one.
INLINE_BELOW_PARQUET_IDS = 200_000
#: True while a replay of a small trace runs (:func:`sized`): ``auto`` then means inline.
_SMALL: contextvars.ContextVar[bool] = contextvars.ContextVar("pcs_small_trace", default=False)
#: The first bytes of a gzip file (pcs.trace.source detects gzip the same way).
_GZIP_MAGIC = b"\x1f\x8b"


def threads_wanted() -> bool:
    """Whether a replay runs its side work on worker threads: ``$PCS_THREADS`` (module docstring) ``on``, or
    ``auto`` / unset with at least two CPUs in the process's affinity mask (``os.sched_getaffinity``; where the
    platform has none, ``os.cpu_count()``), unless the replay running in this thread reads a small trace
    (:func:`sized`, :func:`small_trace`).

    ``1`` / ``yes`` / ``true`` mean ``on``, ``0`` / ``no`` / ``false`` mean ``off`` (:data:`THREADS_ALIASES`).

    Raises:
        UserError: ``PCS_THREADS`` is none of :data:`THREADS_MODES` and :data:`THREADS_ALIASES`.
    """
    mode = _mode()
    if mode != "auto":
        return mode == "on"
    if _SMALL.get():
        return False
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cpus >= 2


def threads_decision() -> dict[str, Any]:
    """What :func:`threads_wanted` says here and why, for a replay's summary (its ``threads`` object): called
    within the replay's :func:`sized` block it is the decision every side call of that replay was given.

    Returns:
        ``{"mode": "auto" | "on" | "off", "used": bool, "reason": str}``: the mode asked (``$PCS_THREADS``,
        aliases resolved; unset: ``auto``), whether the side work was handed to worker threads (a call whose
        engine keeps the GIL runs inline all the same), and the rule that decided it.
    Raises:
        UserError: ``PCS_THREADS`` is none of :data:`THREADS_MODES` and :data:`THREADS_ALIASES`.
    """
    mode, used = _mode(), threads_wanted()
    if mode != "auto":
        reason = f"PCS_THREADS={mode}: {'worker threads' if used else 'inline'} whatever the trace"
    elif _SMALL.get():
        reason = (f"auto: a small trace file (text under {INLINE_BELOW_BYTES / 1e6:g} MB, or Parquet under "
                  f"{INLINE_BELOW_PARQUET_IDS:,} block hashes): inline")
    elif not used:
        reason = "auto: one CPU: inline"
    else:
        reason = "auto: two CPUs or more: worker threads"
    return {"mode": mode, "used": used, "reason": reason}


def _mode() -> str:
    """``$PCS_THREADS`` as one of :data:`THREADS_MODES` (unset or blank: ``auto``; case and surrounding spaces do
    not matter): THE rule of the setting, read by every replay and checked by every command before it runs
    (:meth:`pcs.cli.common.PcsCommand.invoke`, :func:`check_threads_setting`).

    Raises:
        UserError: none of :data:`THREADS_MODES` and :data:`THREADS_ALIASES`: ``environment variable
            PCS_THREADS='bogus' is not one of auto, on, off (or 1, yes, true, 0, no, false): unset it or set one
            of those`` (the value as set).
    """
    raw = os.environ.get("PCS_THREADS", "auto")
    mode = raw.strip().lower() or "auto"
    mode = THREADS_ALIASES.get(mode, mode)
    if mode not in THREADS_MODES:
        raise UserError(f"environment variable PCS_THREADS={shown_repr(raw)} is not one of {', '.join(THREADS_MODES)} "
                        f"(or {', '.join(THREADS_ALIASES)}): unset it or set one of those"
                        f"{close_tail(mode, THREADS_MODES, THREADS_ALIASES)}")
    return mode


def check_threads_setting() -> None:
    """Refuse a bad ``$PCS_THREADS`` (:func:`_mode`'s rule) where no replay has read it yet: every command checks
    it before it runs, so a misspelt setting is reported whether or not the command would run a replay.

    Raises:
        UserError: as :func:`threads_wanted`.
    """
    _mode()


def small_trace(source: Any) -> bool:
    """Whether ``source`` is a small trace for the ``auto`` rule (module docstring): a trace opened from a file
    (an object with ``path`` and ``format``, :class:`pcs.trace.Trace`): a Parquet file whose footer counted fewer
    block hashes than :data:`INLINE_BELOW_PARQUET_IDS`, or a file of another format whose first bytes are not
    gzip's and whose size is below :data:`INLINE_BELOW_BYTES`. Anything else -- a source in memory, gzip, a
    Parquet file whose count is unknown, a file that cannot be looked at (the read names the problem) -- is not
    small. Reads the file's
    size and its first two bytes, nothing more; raises nothing."""
    path, fmt = getattr(source, "path", None), getattr(source, "format", None)
    if path is None or fmt is None:
        return False
    if fmt == "parquet":
        ids = getattr(source, "parquet_block_hashes", None)
        return isinstance(ids, int) and ids < INLINE_BELOW_PARQUET_IDS
    try:
        if os.stat(path).st_size >= INLINE_BELOW_BYTES:
            return False
        with open(path, "rb") as f:
            return f.read(2) != _GZIP_MAGIC
    except (OSError, TypeError, ValueError):
        return False


@contextlib.contextmanager
def sized(source: Any) -> Iterator[bool]:
    """For the block (in this thread), ``auto`` mode runs side work inline when ``source`` is small
    (:func:`small_trace`; looked at only in ``auto`` mode). Yields whether the block runs inline for that reason.
    Nested blocks keep an outer block's inline.

    Raises:
        UserError: ``PCS_THREADS`` is none of :data:`THREADS_MODES` and :data:`THREADS_ALIASES`.
    """
    small = _mode() == "auto" and small_trace(source)
    token = _SMALL.set(_SMALL.get() or small)
    try:
        yield small
    finally:
        _SMALL.reset(token)


@contextlib.contextmanager
def _signals_held() -> Iterator[list]:
    """Hold back Ctrl-C, the stop signals and the others of :data:`_HELD` (those with a Python handler) in the main
    thread for the block, then run the handler of each that came: a ``KeyboardInterrupt`` (or ``pcs.errors.Stopped``) raised inside
    ``Thread.start`` -- while it waits for the new thread, which then runs -- left a worker that nothing would
    end. In any other thread (no handler runs there) the block runs as it is. Yields the list of the held signals
    that came (empty until one does: a block that waits can poll it and stop waiting)."""
    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield came
        return
    old = {}
    try:
        for s in _HELD:
            if callable(_signal.getsignal(s)):
                old[s] = _signal.signal(s, lambda signum, frame: came.append(signum))
        yield came
    finally:
        _run_held(came, old, _restore(old))


def _restore(old: dict) -> BaseException | None:
    """Put back every handler :func:`_signals_held` replaced (``old``: signal -> handler), all of them even when a
    handler runs and raises meanwhile -- Python may run a handler put back first between two of the restores, and
    ``signal.signal`` runs a pending one before it changes a handler: a Ctrl-C that landed there left the later
    signals' stand-ins in place for good (a program's own SIGTERM handler replaced by one that records into a list
    nothing reads). Returns the first exception a handler raised meanwhile, else None."""
    first = None
    while True:
        try:
            for s, handler in old.items():
                _signal.signal(s, handler)
            return first
        except BaseException as exc:    # a signal that came after the hold: all put back again, then raised
            first = exc if first is None else first


def _run_held(came: list, handlers: dict, later: BaseException | None = None) -> None:
    """Run the handler of each held signal that came (:func:`_signals_held`), once each however often it came (as
    the interpreter runs a signal's handler), in the order they came, each given a frame as the interpreter gives
    one (a handler may read it). Every one runs even when an earlier one raises -- a timeout's SIGALRM that raises
    must not drop a service's SIGTERM that came with it and only records itself --, then the first exception is
    raised (a later one is dropped); ``later``, the exception of a handler that ran as the handlers were put back
    (:func:`_restore`: its signal came after these), only when none of these raised.

    Raises:
        BaseException: the first exception a handler raised, else ``later``."""
    first = None
    for s in dict.fromkeys(came):
        try:
            handlers[s](s, sys._getframe())
        except BaseException as exc:    # the first is raised once all have run
            first = exc if first is None else first
    first = later if first is None else first
    if first is not None:
        raise first


def _join_returning(worker: threading.Thread) -> None:
    """Join a worker that has nothing left to run but its return (its call finished, or it was handed none), with
    stop signals held (:func:`_signals_held`): a Ctrl-C that landed in the join raised there and left the worker
    alive after the interrupted run had stopped (2 of 160 interrupted replays in one process). The wait is short;
    a signal that came meanwhile is raised once the worker has ended.

    Raises:
        KeyboardInterrupt, pcs.errors.Stopped: a stop signal that came during the join (held, then run)."""
    with _signals_held():
        worker.join()


def _let_go(go: Any) -> None:
    """The finalizer of a :class:`Beside` collected without :meth:`Beside.close`: release its worker's ``go`` lock
    (held while the worker waits or runs) so the worker finds its Beside gone and returns. A lock already free (a
    call handed over that no worker took: a worker that never ran) is left as it is."""
    if go.locked():
        go.release()


class Beside:
    """One call at a time on a worker thread (``threaded``) or inline; :meth:`join` gives its result.

    Args:
        threaded: run the calls on a worker thread (the engine's loop releases the GIL), else inline.
        linger: keep the worker between calls (one thread for all the calls of a replay) until :meth:`close`;
            False: the worker ends after its call (joined by :meth:`join`), so no idle worker outlives a caller
            that is dropped without :meth:`close` (a reader stopped part-way; module docstring).
    Use :meth:`close` when done (it waits for a call still running and ends the worker thread).
    """

    def __init__(self, threaded: bool, linger: bool = True) -> None:
        self.threaded, self.linger = threaded, linger
        self._thread: threading.Thread | None = None
        self._call: tuple | None = None
        self._busy = False
        self._go: Any = None                   # the worker's locks (_spawn): released, a call is ready (or, with
        self._done: Any = None                 # no call, the worker ends); released, the call has finished
        self._out: Any = None
        self._err: BaseException | None = None
        self._deferred = False                 # a threaded call no thread could be started for: run at join
        self._dropped: Any = None              # the finalizer that ends an idle worker of a Beside never closed
        #: called once before :meth:`settle` waits: a call its caller holds behind a gate it opens later
        #: (pcs.engine.runner's scan) is let go, so a stop that comes before the gate opens cannot hang the wait
        self.opener: Callable[[], Any] | None = None

    def _run(self, fn: Callable[..., Any], args: tuple, inline: bool = False) -> None:
        """``fn(*args)``: its result or exception kept for :meth:`join`; ``inline`` (on the caller's thread): a stop
        signal (Ctrl-C, SIGTERM: :data:`pcs.errors.STOPS`) raised at once instead -- kept, it waited for the
        caller's next work (a whole step loop's close) to reach the join, and that work, its signal already taken,
        ran to its end."""
        try:
            self._out = fn(*args)
        except STOPS as exc:
            if inline:
                raise
            self._err = exc
        except BaseException as exc:   # handed to the caller at join
            self._err = exc

    @staticmethod
    def _serve(ref: Any, go: Any, done: Any) -> None:
        """The worker: run each call handed over by :meth:`start` until :meth:`close` hands over none (or, not
        lingering, after the first call, or once its Beside is gone). ``go`` / ``done`` are this worker's own
        (plain locks: waiting on one allocates nothing, so a process short of memory cannot kill the worker before
        its call). ``ref`` is a weak reference to the Beside: an idle worker holds none of its own, so a Beside
        dropped without :meth:`close` -- an exception (a signal's handler) raised between the hand-over of a kept
        worker and the ``try`` that closes it -- is collected, and its finalizer (:meth:`_spawn`) lets the worker
        return instead of waiting for good."""
        while True:
            go.acquire()
            me = ref()
            if me is None:
                return                  # the Beside was collected: no call can come
            call, me._call = me._call, None
            if call is None:
                return
            me._run(*call)
            done.release()
            if not me.linger or me._thread is not threading.current_thread():
                return                  # (close() detached this worker while its call ran: _end)
            del me                      # idle: no reference to the Beside held

    def _spawn(self) -> bool:
        """Start a worker (its own ``go`` / ``done`` locks, both held: nothing to run, nothing done); False when
        the system cannot start a thread (``RuntimeError``: "can't start new thread", "can't allocate lock"):
        the calls then run inline, which gives the same results (``PCS_THREADS=off`` is the reference). Any other
        exception (a stop signal) leaves no worker: one that did start is handed no call, so it returns."""
        try:
            go, done = threading.Lock(), threading.Lock()
            go.acquire()
            done.acquire()
            worker = _Thread(target=Beside._serve, args=(weakref.ref(self), go, done), name="pcs-beside",
                             daemon=True)
        except RuntimeError:
            return False
        try:
            worker.start()
        except BaseException as exc:
            go.release()                # a worker that runs finds no call and returns
            if worker.is_alive():
                _join_returning(worker)
            if isinstance(exc, RuntimeError):
                return False
            raise
        self._thread, self._go, self._done = worker, go, done
        self._dropped = weakref.finalize(self, _let_go, go)    # collected unclosed: the idle worker returns (_serve)
        return True

    def spawn(self) -> None:
        """Start the worker now, idle (threaded, none yet), so that a later :meth:`start` hands its call to a thread
        already running instead of starting one (:meth:`pcs.engine.turns.TurnWalk.result` with ``keep``); no
        worker when none can be started (:meth:`start` then runs its call inline, as ever)."""
        if self.threaded and self._thread is None:
            with _signals_held():
                self._spawn()

    def start(self, fn: Callable[..., Any], *args: Any) -> None:
        """Begin ``fn(*args)``: on the worker thread when threaded, else now (an exception waits for join).
        Starting the worker and handing it the call happen with stop signals held (:func:`_signals_held`), so
        Ctrl-C cannot land between them: either the call is handed over or no worker is left waiting for one.

        Raises:
            RuntimeError: the previous call was not joined.
        """
        if self._busy:
            raise RuntimeError("Beside.start: the previous call was not joined")
        if self.threaded:
            with _signals_held():
                if self._thread is not None or self._spawn():
                    self._call, self._busy = (fn, args), True
                    self._go.release()
                    return
            # no thread could be started: the call runs inline at join, where a threaded call's result is
            # taken -- not now: the caller may hold it behind a gate it opens only later (pcs.engine.runner)
            self._call, self._busy, self._deferred = (fn, args), True, True
            return
        self._run(fn, args, inline=True)

    def settle(self) -> None:
        """Wait for the call and drop its result or exception: the caller is raising its own error (the one
        the user sees), and no call may outlive it.

        Raises:
            KeyboardInterrupt, pcs.errors.Stopped: Ctrl-C or a stop signal that arrives here (its handler
                runs in this thread): settle also runs on the way out of a finished run (:meth:`close`), so
                dropping it would let the command finish as if no signal had come.
        """
        opener, self.opener = self.opener, None
        if opener is not None:
            opener()
        if self._deferred:             # never begun: dropped, nothing to wait for
            self._call, self._busy, self._deferred = None, False, False
            return
        try:
            self.join()
        except STOPS:
            raise
        except BaseException:   # the caller's own exception is the one raised
            pass

    def join(self) -> Any:
        """The call's result once it has finished; its exception is raised here."""
        if self._deferred:
            call, self._call, self._busy, self._deferred = self._call, None, False, False
            self._run(*call, inline=True)
        elif self._busy:
            self._take_done()
            if not self.linger:          # the worker returns after its call: reap it
                self._reap()
        err, out = self._err, self._out
        self._err = self._out = None
        if err is not None:
            raise err
        return out

    def _reap(self) -> None:
        """Join the worker of a finished call (not lingering: it returns after its call) and forget it
        (:func:`_join_returning`).

        Raises:
            KeyboardInterrupt, pcs.errors.Stopped: a stop signal that came during the join (held, then run)."""
        worker, self._thread = self._thread, None
        self._dropped.detach()          # the worker returned after its call: nothing to end when collected
        _join_returning(worker)

    def _take_done(self) -> None:
        """Wait for the running call to end and mark it taken (``_busy`` False), with no stop signal between the
        two: a signal that lands just after the wait returned (before the mark) would leave the call marked as
        running with its end already taken, and the next wait (:meth:`close`) would block for good. A held signal
        (:data:`_HELD`) that comes while the call still runs has its handler run within 50 ms: one that raises
        (Ctrl-C) ends the wait, the call left marked as running (a later :meth:`settle` waits for it again); one
        that returns (a handler that records the signal) lets the wait go on.

        Raises:
            KeyboardInterrupt, pcs.errors.Stopped: a stop signal that came during the wait (held, then run); any
                exception a held signal's Python handler raises, the same way."""
        while True:
            with _signals_held() as came:
                while not self._done.acquire(timeout=0.05):
                    if came:
                        break
                else:
                    self._busy = False
                    return
            # the held handlers ran as the block ended and none raised (a handler that only records the signal,
            # as a service's SIGTERM flag): the call still runs, so wait for it again -- returning here gave the
            # caller a result not yet made (a replay raised "the trace has no requests" or gave other numbers)

    def close(self) -> None:
        """Wait for a call still running (its outcome dropped) and end the worker thread; the Beside can be used
        again (a new worker starts at the next call). The worker ends even when a stop signal raises in the wait
        (:meth:`settle` lets it through): it is told to return, then joined."""
        try:
            self.settle()
        finally:
            self._end()

    def _end(self) -> None:
        """End the worker: a call still in flight (a stop signal cut the wait for it) finishes first, its outcome
        dropped; then the worker is handed no call, returns and is joined."""
        worker, go = self._thread, self._go
        if worker is None:
            return
        self._thread = None             # detached: a worker whose call ends now returns (_serve), even if a
        if self._busy:                  # second stop signal cuts this wait too
            self._take_done()
        self._err = self._out = None
        self._dropped.detach()          # go released once, here (not again when the Beside is collected)
        go.release()                    # no call: a waiting worker returns
        _join_returning(worker)
