"""Run one call on a worker thread beside the caller's work: the no-cache baseline's step loop beside the run's.

The compiled step loop (:mod:`pcs.engine.stepnative`) releases the GIL over its ``feed`` and ``close`` when it
calls no Python code (``pcs/engine/_stepsched.c``, "the GIL"), so the modeled run and its no-cache twin -- which
read the same chunks and share no state -- run on two cores at once. Each loop touches only its own state and
hierarchy, so the results are those of running the calls one after the other (``tests/engine/test_beside.py``).
An engine whose loop keeps the GIL is called at once on the caller's thread (a thread would only add switches).
"""
from __future__ import annotations

import threading
from typing import Any, Callable

__all__ = ["Beside"]


class Beside:
    """One call at a time on a worker thread (``threaded``) or inline; :meth:`join` gives its result.

    Args:
        threaded: run the calls on a worker thread (the engine's loop releases the GIL), else inline.
    """

    def __init__(self, threaded: bool) -> None:
        self.threaded = threaded
        self._thread: threading.Thread | None = None
        self._out: Any = None
        self._err: BaseException | None = None

    def start(self, fn: Callable[..., Any], *args: Any) -> None:
        """Begin ``fn(*args)``: on the worker thread when threaded, else now (an exception waits for join)."""
        def run() -> None:
            try:
                self._out = fn(*args)
            except BaseException as exc:   # handed to the caller at join
                self._err = exc

        if not self.threaded:
            run()
            return
        self._thread = threading.Thread(target=run, name="pcs-beside", daemon=True)
        self._thread.start()

    def settle(self) -> None:
        """Wait for the call and drop its result or exception: the caller is raising its own error (the one
        the user sees), and no call may outlive it."""
        try:
            self.join()
        except BaseException:   # the caller's own exception is the one raised
            pass

    def join(self) -> Any:
        """The call's result once it has finished; its exception is raised here."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        err, out = self._err, self._out
        self._err = self._out = None
        if err is not None:
            raise err
        return out
