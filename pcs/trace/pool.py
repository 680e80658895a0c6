"""One reuse pool for the buffers the JSONL reader keeps between calls (docs/traces-formats.md, "Memory kept
between calls").

A :class:`Pool` keeps a few buffers past the reader that used them, so that the next reader writes pages already
mapped instead of taking a page fault every 4 KiB: the id arena of the compiled twin (:func:`pcs.trace.jsonfast.arena`,
at most one, of at most :data:`pcs.trace.jsonfast.KEPT_ARENA_IDS` ids) and the read buffers
(:func:`pcs.trace.source.iter_chunks` with ``keep``, at most two, of at most
:data:`pcs.trace.source.KEPT_SPARE_BYTES` bytes each). :func:`pcs.trace.release_buffers` empties both.

The items are the compiled twin's ``Arena`` and ``ReadBuffer`` (pcs/trace/_jsonrows.cpp), which carry their own
lease: ``take()`` leases one only when no reader holds it (a flag set by ``take``, cleared by ``give_back``) and no
view of its bytes is alive (an exact count of its buffer exports), so a buffer is never handed to two readers at
once -- not even to a second one while the first is paused between two chunks with no view of it alive -- and a
reader never writes bytes a batch or chunk of an earlier reader still reads.

Flow: a reader calls :meth:`Pool.take` (a kept item it now holds, or None: it makes a new one and leases it with
its ``take()``), uses it, and at its end hands every item it took to :meth:`Pool.keep`, which ends the lease and
keeps the newest within the bound. Thread-safe: one re-entrant lock a pool, held only over the list.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

__all__ = ["Pool"]


class Pool:
    """Buffers kept between readers: take one that nothing holds, keep the newest within a bound, release all.

    Args:
        most: the most items kept (the newest given back); >= 1.
        kept: whether an item given back may be kept (its size or fill within the documented bound).

    Items have ``take() -> bool`` (leased to the caller when free) and ``give_back()`` (the lease ended), as the
    compiled twin's ``Arena`` and ``ReadBuffer``.

    >>> class Box:
    ...     leased = False
    ...     def take(self):
    ...         free, self.leased = not self.leased, True
    ...         return free
    ...     def give_back(self):
    ...         self.leased = False
    >>> pool, box = Pool(1, lambda item: True), Box()
    >>> pool.take() is None, box.take(), pool.keep(box), pool.take() is box, pool.take() is None
    (True, True, None, True, True)
    >>> pool.release(), pool.release()
    (1, 0)
    """

    __slots__ = ("_items", "_lock", "_most", "_kept")

    def __init__(self, most: int, kept: Callable[[Any], bool]) -> None:
        assert most >= 1
        self._items: list = []
        # re-entrant: the collector may run inside a held lock (an allocation there) and finalize an abandoned
        # reader on this thread, whose `finally` gives its buffers back (keep): a plain Lock deadlocked there
        self._lock = threading.RLock()
        self._most, self._kept = most, kept

    def take(self, fits: Callable[[Any], bool] | None = None) -> Any:
        """A kept item that ``fits`` (None: any) and that its ``take()`` leases to the caller (no reader holds it,
        no view of it is alive), oldest first; None when there is none. The item stays in the pool, leased."""
        with self._lock:
            for item in self._items:
                if (fits is None or fits(item)) and item.take():
                    return item
        return None

    def keep(self, *items: Any) -> None:
        """End the caller's lease of each of ``items`` (``give_back()``) and keep, in the order given, those the
        bound takes (``kept``): the newest :attr:`most` kept in all, older ones dropped (their memory goes once
        nothing refers to them, after the lock is let go). A keep re-entered on the same thread (a reader finalized
        by the collector inside this one) is safe: at worst an item it keeps is not kept."""
        with self._lock:
            for item in items:
                item.give_back()
                self._items = [k for k in self._items if k is not item]
                if self._kept(item):
                    self._items.append(item)
            dropped = self._items[:-self._most]
            del self._items[:-self._most]
        del dropped                      # freed here, outside the lock

    def release(self) -> int:
        """Drop every kept item (a reader holding one still uses it; its memory goes once nothing refers to it).
        The number dropped."""
        with self._lock:
            dropped, self._items = self._items, []
        return len(dropped)              # freed on return, outside the lock

    def items(self) -> list:
        """The kept items, oldest first (a copy; for tests and checks)."""
        with self._lock:
            return list(self._items)

    @property
    def most(self) -> int:
        """The most items kept."""
        return self._most
