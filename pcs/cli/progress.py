"""Progress on long work: a tqdm bar on a terminal's stderr, off with ``-q``, redrawn at least once a second.

:class:`Progress` is what every long command (replay, compare, curve, trace
stats / convert / synth / transform) reports its work to; :func:`counted`
wraps a trace so reading it reports each batch's requests.
"""
from __future__ import annotations

import contextlib
import sys
import threading
import time
from typing import Any, Callable, Iterator

__all__ = ["Progress", "counted"]


class Progress:
    """A tqdm bar on stderr after ~2 s, called with the work done since the last call.

    Off with ``--quiet`` or when stderr is not a terminal (nothing on a
    non-terminal stderr). With a ``total`` the bar shows an ETA; the bar is
    redrawn at least once a second even while no work is reported (a
    background thread), so a long step never looks frozen.

    Args:
        quiet: the ``--quiet`` flag.
        desc: the bar's label.
        unit: the unit counted, e.g. ``" req"``.
        total: the total work when known (gives an ETA), else None; or a
            callable returning it, called only when the bar is shown (so a
            costly count, such as a file's lines, is skipped under ``-q``).
    """

    #: Seconds between redraws while work is under way.
    REFRESH_S = 0.5
    #: Seconds before the bar first shows (short runs print nothing).
    DELAY_S = 2.0

    def __init__(self, quiet: bool, desc: str = "replay", unit: str = " req",
                 total: int | Callable[[], int | None] | None = None) -> None:
        self.bar = None
        self._stop = threading.Event()
        if not quiet and sys.stderr.isatty():
            from tqdm import tqdm

            total = total() if callable(total) else total

            self._start = time.monotonic()
            self.bar = tqdm(total=total, unit=unit, delay=self.DELAY_S, file=sys.stderr, leave=False, desc=desc,
                            mininterval=self.REFRESH_S, dynamic_ncols=True)
            threading.Thread(target=self._redraw, name="pcs-progress", daemon=True).start()

    def _redraw(self) -> None:
        while not self._stop.wait(self.REFRESH_S):
            bar = self.bar
            if bar is not None and time.monotonic() - self._start >= self.DELAY_S:
                with contextlib.suppress(Exception):  # a bar closing under us: nothing to draw
                    bar.refresh()

    def __call__(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def stage(self, desc: str, total: int | None) -> None:
        """Start a new step on the same bar: its label and total (None = unknown), the count back to 0."""
        if self.bar is not None:
            self.bar.reset(total=total)
            self.bar.set_description_str(desc, refresh=False)

    def close(self) -> None:
        self._stop.set()
        if self.bar is not None:
            bar, self.bar = self.bar, None
            bar.close()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _CountedTrace:
    """A trace whose batches are reported to ``progress`` as they are read; every other attribute is the trace's."""

    def __init__(self, trace: Any, progress: Callable[[int], None]) -> None:
        self._trace, self._progress = trace, progress

    def __getattr__(self, name: str) -> Any:
        return getattr(self._trace, name)

    def iter_batches(self) -> Iterator[Any]:
        for b in self._trace.iter_batches():
            self._progress(len(b))
            yield b

    def __iter__(self) -> Iterator[Any]:
        for b in self.iter_batches():
            yield from b.requests()


def counted(trace: Any, progress: Callable[[int], None]) -> Any:
    """``trace`` (a :class:`pcs.trace.Trace`) reporting the requests of each batch read to ``progress``."""
    return _CountedTrace(trace, progress)
