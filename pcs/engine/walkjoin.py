"""The lean walk's sequential baseline, then the single-sequence walk and the no-cache step run, one after the other
on one worker (:class:`WalkJoin`). Split out beside :mod:`pcs.engine.scanjoin`, whose two-tier scan does the same
for two lru tiers; the threads' rule is :mod:`pcs.engine.runner`'s module docstring.

Why: a modeled run of two fifo / slru tiers sharing one table takes its baseline from the lean walk
(``pcs/engine/_seqpol.c``, :func:`pcs.engine.seqbase.policy_walk`) and, with no one-pass scan, its single-sequence
results from a scan of its own at 0 slots (:func:`pcs.engine.singles._singles`). Each on a worker of its own, and the
no-cache step loop on a third, they were three runnable threads beside the run's step loop on the 2-core machine:
the calling thread -- the call's critical path -- waited in the run queue behind its own workers. Queued on the
baseline's worker they run one after the other, each on what it ran on before (the same calls, the same inputs), and
end before the run's loop (docs/performance.md, "fifo and slru: the side work on one worker").
"""
from __future__ import annotations

import queue
import threading
from typing import Any, Callable

from pcs.beside import Beside
from pcs.errors import STOPS
from pcs.engine.engine import EngineResult
from pcs.engine.scanjoin import _ABORT, _Tail

__all__ = ["WalkJoin"]


class WalkJoin:
    """The baseline's call ``run(*args)`` begun on ``side``'s worker now; behind it on the same worker the
    single-sequence walk handed over by :meth:`then_singles` (it waits for :meth:`open`, as the scan worker's walk
    waits for its gate: its Python part, which holds the GIL, does not contend with the building of the loops) and
    then the no-cache run fed through :attr:`tail` (:class:`pcs.engine.scanjoin._Tail`, the interface
    :class:`pcs.engine.scanjoin._Queued` reads). Calling it waits for all three once and gives the baseline's
    :class:`EngineResult` (``finish()``); :attr:`singles` and :attr:`no_cache` are then the other two (None when
    none was handed over by the first call: the call waits for nothing more). An exception of any of the three is
    raised at every call (a stop signal that cut the wait, at that call only).

    ``side.opener`` opens the gate, hands over "no walk" and ends the tail's wait, so a stop or an error before the
    loops hand over their parts cannot leave the worker waiting (:meth:`pcs.beside.Beside.settle`).
    """

    def __init__(self, side: Beside, run: Callable[..., Any], args: tuple,
                 finish: Callable[[], EngineResult]) -> None:
        self._side, self._finish = side, finish
        self._gate, self._jobs, self.tail = threading.Event(), queue.SimpleQueue(), _Tail()
        self._base: EngineResult | None = None
        self._err: BaseException | None = None
        self.singles: Any = None
        self.no_cache: EngineResult | None = None
        side.opener = self._release
        side.start(_walk_then, run, args, self._jobs, self._gate, self.tail)

    def _release(self) -> None:
        """Let the worker through every wait it may be in (the gate, the walk's hand-over, the tail): a walk or a
        tail's end already handed over comes first and is run, what was not is taken as none."""
        self._gate.set()
        self._jobs.put(_ABORT)
        self.tail.abort()

    def open(self) -> None:
        """Let the single-sequence walk begin once the baseline is done (idempotent)."""
        self._gate.set()

    def then_singles(self, fn: Callable[..., Any] | None, *args: Any) -> None:
        """Hand over the single-sequence walk ``fn(*args)`` (None: there is none here); call once."""
        self._jobs.put(None if fn is None else (fn, args))

    def __call__(self) -> EngineResult:
        if self._base is None and self._err is None:
            self._release()     # what was not handed over by now will not be: the worker must not wait for it
            try:
                self.singles, self.no_cache = self._side.join()
                self._base = self._finish()
            except STOPS:
                raise                   # the wait was cut: the worker may still run (Beside.settle waits for it)
            except BaseException as exc:
                self._err = exc
        if self._err is not None:
            raise self._err
        return self._base


def _walk_then(run: Callable[..., Any], args: tuple, jobs: queue.SimpleQueue, gate: threading.Event,
               tail: _Tail) -> tuple:
    """On the worker: the baseline's call, then the single-sequence walk handed over (once ``gate`` is set), then the
    no-cache run (:meth:`pcs.engine.scanjoin._Tail.run`): ``(the walk's result or None, the no-cache result or
    None)``."""
    run(*args)
    job, singles = jobs.get(), None
    if job is not None and job is not _ABORT:
        gate.wait()
        singles = job[0](*job[1])
    return singles, tail.run()
