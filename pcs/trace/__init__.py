"""Trace ingestion: streaming readers, chained block hashing, stats, synthesis, conversion.

Public API (consumed by replay and curves):

- :class:`Request`, :class:`RequestBatch`: one request / a columnar run of them;
- :func:`open_trace` -> :class:`Trace` (re-iterable, ``iter_batches()``);
- :data:`DEFAULT_TRACE`: the bundled sample trace;
- :func:`trace_stats`: the numbers behind ``pcs trace stats``.
"""
from __future__ import annotations

from pcs.trace.api import DEFAULT_TRACE, FORMATS, Trace, detect_format, open_trace
from pcs.trace.request import Request, RequestBatch, num_blocks_for

__all__ = ["DEFAULT_TRACE", "FORMATS", "Request", "RequestBatch", "Trace", "detect_format",
           "num_blocks_for", "open_trace", "trace_stats"]


def __getattr__(name: str):
    if name == "trace_stats":  # lazy: stats pulls in pcs.blocks and more numpy work
        from pcs.trace.stats import trace_stats

        return trace_stats
    raise AttributeError(name)
