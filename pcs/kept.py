"""The memory pcs keeps between calls, and how to give it back (:func:`release_memory`).

To spare a later call page faults and the kernel's clearing of fresh pages, pcs keeps some memory after a call
ends (docs/traces-formats.md, "Memory kept between calls"; docs/performance.md, "Fresh pages a call" and "The
calling thread's page faults"):

- the trace readers' objects: the JSONL reader's id arena (at most 8 MiB of ids) and two read buffers (2 MiB
  each) (:func:`pcs.trace.release_buffers`);
- per compiled module, a pool of dead arrays' mappings (``pcs/_kept.h``): the id arenas of 128 KiB or more
  (``pcs.trace._jsonrows``, at most 128 MiB), the one-pass scan's zeroed arrays (``pcs.engine._lruscan``, at most
  128 MiB), the step loop's columns (``pcs.engine._stepsched``, at most 64 MiB), the hierarchy's entry and order
  arrays (``pcs.cache._lruhier``, at most 64 MiB), and that module's one kept direct map (at most 64 MiB).

Address space, resident only as far as the last calls wrote.
"""
from __future__ import annotations

__all__ = ["kept_bytes", "release_memory"]

#: compiled twins (:data:`pcs._native.TWINS` names) with a pool of kept mappings (``kept_bytes`` / ``kept_clear``)
POOLED = ("jsonrows", "lruscan", "stepsched", "lruhier")


def _modules() -> list:
    from pcs import _native

    return [m for m in (_native.module(name) for name in POOLED) if m is not None and hasattr(m, "kept_clear")]


def kept_bytes() -> int:
    """Bytes of mappings the compiled modules keep now for later calls (the pools and the kept direct map; the
    trace readers' kept objects are not counted). int; 0 when no compiled module is built. Never raises."""
    total = 0
    for m in _modules():
        total += m.kept_bytes() + (m.spare_bytes() if hasattr(m, "spare_bytes") else 0)
    return total


def release_memory() -> int:
    """Give back the memory pcs keeps between calls: the trace readers' kept objects
    (:func:`pcs.trace.release_buffers`), then every mapping the compiled modules keep (their pools and the kept
    direct map, :func:`kept_bytes`). A later call works as before and keeps memory again. Memory still in use --
    a result alive that views a read's ids, a call running on another thread -- is not touched: it goes to its pool
    when it is freed. Thread-safe; never raises.

    Returns:
        int: the bytes the compiled modules kept when it was called (:func:`kept_bytes`), now unmapped; the
        mappings of the readers' objects it frees are unmapped too, not counted (with calls running on other
        threads, what they give back meanwhile is unmapped too, or kept for them).
    """
    from pcs.trace import release_buffers

    freed = kept_bytes()
    release_buffers()            # the objects: their mappings then fall into the pools cleared below
    for m in _modules():
        m.kept_clear()
        if hasattr(m, "spare_clear"):
            m.spare_clear()
    return freed
