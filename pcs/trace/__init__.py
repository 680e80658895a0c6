"""Trace ingestion: streaming readers, chained block hashing, stats, synthesis, conversion.

Public API (consumed by replay and curves):

- :class:`Request`, :class:`RequestBatch`: one request / a columnar run of them;
- :func:`open_trace` -> :class:`Trace` (re-iterable, ``iter_batches()``);
- :data:`DEFAULT_TRACE`: the bundled sample trace;
- :func:`trace_stats`: the numbers behind ``pcs trace stats``;
- :func:`release_buffers`: drop the memory the trace readers keep for the next call.
"""
from __future__ import annotations

from pcs.trace.api import DEFAULT_TRACE, FORMATS, Trace, detect_format, open_trace
from pcs.trace.request import Request, RequestBatch, num_blocks_for

__all__ = ["DEFAULT_TRACE", "FORMATS", "Request", "RequestBatch", "Trace", "detect_format",
           "num_blocks_for", "open_trace", "release_buffers", "trace_stats"]


def release_buffers() -> int:
    """Drop what the trace readers keep after a call for the next one (docs/traces-formats.md, "Memory kept
    between calls"): the JSONL reader's id arena of the compiled twin (at most 8 MiB,
    :data:`pcs.trace.jsonfast.KEPT_ARENA_IDS` ids) and its two read buffers (2 MiB each,
    :data:`pcs.trace.source.KEPT_SPARE_BYTES`), then the mappings of dead id arenas the compiled twin keeps (the
    Parquet and JSONL readers' arenas of 128 KiB or more, at most 128 MiB: pcs/trace/_jsonrows.cpp ``arena_alloc``).
    An object's memory goes once no batch or chunk still views it (at once after a call: pcs keeps none); the next
    call makes new ones. A reader holding one still uses it (its lease, :mod:`pcs.trace.pool`). Thread-safe; never
    raises.

    Returns:
        The number of objects dropped (0 to 3) plus the number of mappings unmapped.
    """
    from pcs import _native
    from pcs.trace import jsonfast, source

    dropped = jsonfast.release_arenas() + source.release_spares()
    twin = _native.module("jsonrows")
    return dropped + (twin.kept_clear() if twin is not None and hasattr(twin, "kept_clear") else 0)


def __getattr__(name: str):
    if name == "trace_stats":  # lazy: stats pulls in pcs.blocks and more numpy work
        from pcs.trace.stats import trace_stats

        return trace_stats
    raise AttributeError(name)
