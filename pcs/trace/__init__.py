"""Trace ingestion: streaming readers, chained block hashing, stats, synthesis, conversion.

Public API (consumed by replay and curves):

- :class:`Request`, :class:`RequestBatch`: one request / a columnar run of them;
- :func:`open_trace` -> :class:`Trace` (re-iterable, ``iter_batches()``);
- :data:`DEFAULT_TRACE`: the bundled sample trace;
- :func:`trace_stats`: the numbers behind ``pcs trace stats``;
- :func:`release_buffers`: drop the memory the JSONL reader keeps for the next call.
"""
from __future__ import annotations

from pcs.trace.api import DEFAULT_TRACE, FORMATS, Trace, detect_format, open_trace
from pcs.trace.request import Request, RequestBatch, num_blocks_for

__all__ = ["DEFAULT_TRACE", "FORMATS", "Request", "RequestBatch", "Trace", "detect_format",
           "num_blocks_for", "open_trace", "release_buffers", "trace_stats"]


def release_buffers() -> int:
    """Drop what the JSONL reader keeps after a call for the next one (docs/traces-formats.md, "Memory kept
    between calls"): the id arena of the compiled twin (at most 8 MiB, :data:`pcs.trace.jsonfast.KEPT_ARENA_IDS`
    ids) and the two read buffers (2 MiB each, :data:`pcs.trace.source.KEPT_SPARE_BYTES`). Their memory goes once
    no batch or chunk still views them (at once after a call: pcs keeps none); the next call makes new ones.
    A reader holding one still uses it (its lease, :mod:`pcs.trace.pool`). Thread-safe; never raises.

    Returns:
        The number of objects dropped (0 to 3).
    """
    from pcs.trace import jsonfast, source

    return jsonfast.release_arenas() + source.release_spares()


def __getattr__(name: str):
    if name == "trace_stats":  # lazy: stats pulls in pcs.blocks and more numpy work
        from pcs.trace.stats import trace_stats

        return trace_stats
    raise AttributeError(name)
