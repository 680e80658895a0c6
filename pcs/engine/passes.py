"""The passes over a trace that do not depend on the tiers, made once for the runs of one replay.

A hybrid model's replay runs twice over the same trace with the same rules,
compute model and step scheduler (``docs/semantics.md §3.1``, §12): the run
with the hybrid rules and the comparison line with every layer as full
attention. Neither's tiers change the decoded trace, the single-sequence and
ideal results (§12), the next-turn search of the step scheduler
(:mod:`pcs.engine.turns`), the decode-aware single-sequence result
(:mod:`pcs.engine.decodescan`) nor the chunks the engines are fed
(:mod:`pcs.engine.chunks`): :class:`SharedPasses` keeps each one the first run
makes and hands it to the second, which then gives the same result as
computing it again (the JSON of a hybrid replay is unchanged:
``tests/engine/test_passes.py``).

Threads: the comparison line may run on a worker thread while the hybrid run runs on the caller's
(:func:`pcs.engine.api._full_attention_line`), so a pass is made by the first run that asks for it, under a lock
of its own, and the other run waits for it (each is made once, whichever run comes first: the same value).

Memory: the decoded trace (:class:`pcs.engine.decoded.Decoded`) and the
chunks (per request a dozen 8-byte columns, the block hashes shared with the
decoded batches) while the replay runs.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

from pcs.engine.decoded import Decoded

__all__ = ["SharedPasses"]


class SharedPasses:
    """The tier-independent passes of one replay (module docstring).

    Args:
        source: anything :func:`pcs.trace.batches.as_batches` reads; decoded at once.
    Attributes:
        source: the :class:`pcs.engine.decoded.Decoded` trace every run reads.
    Raises:
        UserError: as :class:`pcs.engine.decoded.Decoded` (bad trace content: its subclass InputError).
    """

    def __init__(self, source: Any) -> None:
        self.source = source if isinstance(source, Decoded) else Decoded(source)
        self._made: dict = {}
        self._lock = threading.Lock()       # guards _made and _making
        self._making: dict = {}             # key -> the lock held while its value is made

    def get(self, key: tuple, make: Callable[[], Any]) -> Any:
        """The value kept under ``key`` (a tuple naming the pass and what it depends on beyond the trace),
        made by ``make()`` the first time (another thread asking meanwhile waits for it; ``make``'s exception
        is raised in the thread that called it, and the next caller makes it again)."""
        with self._lock:
            if key in self._made:
                return self._made[key]
            making = self._making.setdefault(key, threading.Lock())
        with making:
            with self._lock:
                if key in self._made:
                    return self._made[key]
            value = make()
            with self._lock:
                return self._made.setdefault(key, value)

    def has(self, key: tuple) -> bool:
        """Whether a value is kept under ``key``."""
        with self._lock:
            return key in self._made

    def put(self, key: tuple, value: Any) -> Any:
        """Keep ``value`` under ``key`` (the first one kept stays) and return the one kept."""
        with self._lock:
            return self._made.setdefault(key, value)
