"""One normaliser from any request source to columnar :class:`RequestBatch` es.

Every consumer that reads a trace (the replay loop's chunks, the lru-scan,
the curves) reads it through :func:`as_batches`, so every source kind gets
the same checks and the same columns:

- a path (``str`` / ``Path``) or None (the bundled sample,
  :data:`pcs.trace.DEFAULT_TRACE`): opened with :func:`pcs.trace.open_trace`;
- anything with ``iter_batches()`` (a :class:`pcs.trace.Trace`, a replica in
  memory): its batches as they come;
- an iterable of request-like objects (``arrival_s``, ``prompt_tokens``,
  ``block_hashes``, ``block_size``, optional ``output_tokens`` = 0), e.g.
  :class:`pcs.trace.Request`: grouped :data:`BATCH_REQUESTS` at a time.

Checks, the same for every kind: one block size >= 1 token over the whole
source, token counts >= 0. Request ids are numbered from 0 in source order.
"""
from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from pcs.errors import ArgumentTypeError, UserError, shown_repr
from pcs.trace.reqcheck import check_order, request_fields
from pcs.trace.request import RequestBatch

__all__ = ["BATCH_REQUESTS", "as_batches", "ceil_blocks", "read_ahead", "reiterable", "with_limits"]

#: Requests per batch when grouping an iterable of request objects.
BATCH_REQUESTS = 4096
#: What a ``trace`` argument may be (module docstring), for the TypeError of anything else.
TRACE_ACCEPTS = ("a path, a Trace (anything with iter_batches()) or an iterable of request-like objects "
                 "(arrival_s, prompt_tokens, block_hashes, block_size)")


def ceil_blocks(tokens: np.ndarray, block_size: int) -> np.ndarray:
    """``ceil(tokens / block_size)`` element-wise, int64 (n,) from int64 (n,) tokens: ``-(-tokens // block_size)``,
    the blocks that hold so many tokens. A power-of-two block size (every preset's, Mooncake's 512) takes an
    arithmetic shift instead of numpy's int64 division (about 30 instructions an element, the read's checks and
    the chunks' rule columns at 10x: several M a call): a shift right by k is a floor division by 2**k, so the
    values are the same for every int64, negative ones included."""
    bs = int(block_size)
    if bs > 0 and bs & (bs - 1) == 0:
        return -((-tokens) >> (bs.bit_length() - 1))
    return -(-tokens // bs)


def _not_a_request(r: Any, exc: AttributeError) -> TypeError:
    """The TypeError for an item of a request iterable that lacks a request attribute."""
    missing = f" (no {shown_repr(exc.name)})" if getattr(exc, "name", None) else ""
    return ArgumentTypeError(f"trace must be {TRACE_ACCEPTS}; got an item of type {type(r).__name__}{missing}")


def reiterable(source: Any = None, block_size: int | None = None) -> Any:
    """``source`` in a form :func:`as_batches` can read more than once.

    A path or None is opened (:func:`pcs.trace.open_trace`, ``block_size``
    passed on); a Trace, list or tuple is returned as it is; any other
    iterable (a generator) is read into a list.

    Raises:
        PathError: ``source`` is missing, a directory or not readable, naming it as ``trace=``
            (:func:`pcs.trace.pathcheck.check_input_file`).
        InputError: as :func:`pcs.trace.open_trace`.
        ArgumentTypeError: (a TypeError) ``source`` is none of these (:data:`TRACE_ACCEPTS`).
        UserError: a bytes path or a file object (:func:`pcs.trace.pathcheck.refuse_file_objects`).
    """
    from pcs.trace.pathcheck import check_input_file, refuse_file_objects

    refuse_file_objects(source)
    if source is None or isinstance(source, (str, Path)):
        from pcs.trace import open_trace

        if source is not None:
            check_input_file(source, "trace")
        return open_trace(source, block_size=block_size)     # None: the bundled sample (pcs.trace.api.trace_path)
    if hasattr(source, "iter_batches") or isinstance(source, (list, tuple)):
        return source
    if not isinstance(source, Iterable):
        raise ArgumentTypeError(f"trace must be {TRACE_ACCEPTS}; got {type(source).__name__}")
    return list(source)


def with_limits(source: Any, limits: Any) -> Any:
    """``source`` (as :func:`reiterable` returns it) read with a run's row bounds ``limits``
    (:class:`pcs.trace.rowlimits.RowLimits`): a :class:`pcs.trace.Trace` as its :meth:`~pcs.trace.Trace.limited`
    view, a re-blocked one (:class:`pcs.trace.reblock.ReblockedTrace`) over that view of its source; any other
    source as it is (requests in memory, batches a sweep holds: the run's own checks apply, e.g.
    :func:`pcs.engine.scheduler.check_output_tokens`)."""
    from pcs.trace.api import Trace

    if isinstance(source, Trace):
        return source.limited(limits)
    reblock = sys.modules.get("pcs.trace.reblock")   # not imported (a replay's usual case): no re-blocked source
    if reblock is not None and isinstance(source, reblock.ReblockedTrace) and isinstance(source.source, Trace):
        return dataclasses.replace(source, source=source.source.limited(limits))
    return source


def _from_fields(fields: list, first_id: int, previous: float) -> RequestBatch:
    """One batch from checked request fields (:func:`pcs.trace.reqcheck.request_fields`), request ``first_id``
    first, the arrivals in order after ``previous``."""
    arrival = np.array([f[0] for f in fields], dtype=np.float64)
    check_order(arrival, first_id, previous)
    counts = np.fromiter((len(f[3]) for f in fields), dtype=np.int64, count=len(fields))
    offsets = np.zeros(len(fields) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    hashes = np.concatenate([f[3] for f in fields]) if int(offsets[-1]) else np.zeros(0, dtype=np.uint64)
    return RequestBatch(0, fields[0][4], arrival, np.array([f[1] for f in fields], dtype=np.int64),
                        np.array([f[2] for f in fields], dtype=np.int64), offsets, hashes)


def _group(requests: Iterable, rows: int) -> Iterator[RequestBatch]:
    """Request-like objects, each checked, as batches of ``rows``; a block size change is an error."""
    buf: list = []
    done, previous = 0, -math.inf
    for r in requests:
        try:
            r.arrival_s, r.prompt_tokens, r.block_hashes, r.block_size  # noqa: B018 - a request-like object?
        except AttributeError as exc:
            raise _not_a_request(r, exc) from None
        f = request_fields(r, done + len(buf))
        if buf and f[4] != buf[0][4]:
            raise UserError(f"all requests of a trace need one block size; got {buf[0][4]} and {f[4]}")
        buf.append(f)
        if len(buf) == rows:
            batch = _from_fields(buf, done, previous)
            yield batch
            done, previous, buf = done + len(buf), float(batch.arrival_s[-1]), []
    if buf:
        yield _from_fields(buf, done, previous)


def _raw(source: Any, block_size: int | None, rows: int, ahead: bool = False,
         side_by_side: bool = False, decode_ahead: bool = False, linger: bool = False,
         each_piece: Callable[..., None] | None = None) -> Iterator[RequestBatch]:
    if source is None or isinstance(source, (str, Path)) or hasattr(source, "iter_batches"):
        trace = reiterable(source, block_size)
        from pcs.trace.api import Trace

        batches = iter(trace.iter_batches(side_by_side=True, decode_ahead=decode_ahead, each_piece=each_piece)
                       if side_by_side and isinstance(trace, Trace) else trace.iter_batches())
        return read_ahead(batches, linger) if ahead and isinstance(trace, Trace) else batches
    return _group(source, rows)


def read_ahead(batches: Iterator, linger: bool = False) -> Iterator:
    """``batches`` (a trace file's reader, or any iterator that only the returned one advances) with the next batch
    made on a worker thread while the caller works on this one (:class:`pcs.beside.Beside`), when threads are
    wanted (:func:`pcs.beside.threads_wanted`; else ``batches`` as they are). A win when the caller's work
    releases the GIL (the compiled scan and step loops); the batches are None-free.

    ``linger=False`` (a trace reader, :func:`as_batches`): a worker per batch, ended once its batch is made, so a
    caller that drops the reader part-way without closing it leaves no idle thread (the one batch in flight
    finishes, and its thread with it); ``True``: one worker for every batch, ended by exhaustion or ``close()``
    -- for a caller that closes on every path (:func:`pcs.engine.feed._feed`: one thread start less a chunk).

    One batch in flight: batch k + 1 is asked for when batch k is handed over, never earlier, so memory holds at
    most one decoded batch more than reading in line. Only the worker advances the reader, one call at a time, in
    order, so the batches -- and a reader's error, raised here at the batch where it occurred -- are the ones read
    in line. A caller that stops early (an error, a break) waits for the batch in flight, which is dropped.
    """
    from pcs.beside import Beside, threads_wanted

    if not threads_wanted():
        yield from batches
        return
    side = Beside(True, linger)
    try:
        side.start(next, batches, None)
        while (b := side.join()) is not None:
            side.start(next, batches, None)
            yield b
    finally:
        side.close()


#: The largest arrival time a replay takes, seconds from the trace's zero (2**32 s, about 136 years: Unix
#: times in seconds until 2106). Past it a float64 second no longer resolves a microsecond (its spacing is
#: 2**-20 s at 2**32 s), so step times added to a clock would be lost and time could stop (docs/semantics.md §9).
MAX_ARRIVAL_S = float(2**32)


def arrival_error(arrival_s: float) -> str | None:
    """Why an arrival (seconds from the trace's zero) cannot be replayed -- it lies beyond
    +-:data:`MAX_ARRIVAL_S` -- or None. The one rule: the JSONL readers raise it naming file, line and field
    (``pcs.trace.hashids``, ``pcs.trace.tokens``), :func:`as_batches` naming the request for other sources."""
    if abs(arrival_s) <= MAX_ARRIVAL_S:
        return None
    return (f"arrival {arrival_s:g} s is beyond +-2**32 s (136 years), where a float64 clock loses microseconds: "
            "subtract the first timestamp from every row (times count from the trace's own zero)")


def _check_arrivals(arrival_s: np.ndarray, first_id: int) -> None:
    """Raise UserError naming the first request whose arrival lies beyond +-:data:`MAX_ARRIVAL_S`."""
    bad = ~(np.abs(arrival_s) <= MAX_ARRIVAL_S)     # NaN too (a NaN fails every comparison)
    if bad.any():
        i = int(np.argmax(bad))
        raise UserError(f"request {first_id + i}: {arrival_error(float(arrival_s[i]))}")


def as_batches(source: Any = None, block_size: int | None = None,
               rows: int = BATCH_REQUESTS, read_ahead: bool = False,
               side_by_side: bool = False, decode_ahead: bool = False, *,
               linger: bool = False, each_piece: Callable[..., None] | None = None) -> Iterator[RequestBatch]:
    """Yield ``source`` as checked :class:`RequestBatch` es, in order, ids numbered from 0.

    Args:
        source: a path, None (the bundled sample), anything with
            ``iter_batches()``, or an iterable of request-like objects (see
            the module docstring).
        block_size: tokens per block for token traces opened from a path
            (:func:`pcs.trace.open_trace`); ignored otherwise.
        rows: requests per batch when grouping request objects.
        read_ahead: decode a trace file's next batch on a worker thread while the caller works on this one
            (:func:`read_ahead`; a win for a caller whose work releases the GIL, such as the one-pass scan);
            sources in memory are read as they are.
        side_by_side: the caller keeps every batch and joins consecutive ones (:class:`pcs.engine.decoded.Decoded`):
            a trace file read by the compiled JSONL twin lays their ids side by side, so the joins are views
            (:meth:`pcs.trace.api.Trace.iter_batches`); the same batches either way.
        decode_ahead: with ``side_by_side``, a block-id JSONL file read by the compiled twin has each chunk decoded
            on a thread of its own while this thread reads the next (:meth:`pcs.trace.api.Trace.decodes_ahead`; for
            a caller that wants threads); ignored by every other source.
        linger: with ``read_ahead``, one worker thread makes every batch (:func:`read_ahead`'s ``linger``: one
            thread start a batch fewer), ended when the batches run out or when this iterator is closed -- so the
            caller closes it on every path (``contextlib.closing``), or a worker waits for its next call until
            the process ends.
        each_piece: with ``side_by_side``, a Parquet trace file's pieces handed to it as pyarrow decodes them,
            unchecked (:func:`pcs.trace.parquet.read_parquet`); ignored by every other source.
    Yields:
        :class:`RequestBatch`: ``arrival_s`` float64 (n,) seconds,
        ``prompt_tokens`` / ``output_tokens`` int64 (n,) tokens,
        ``block_offsets`` int64 (n + 1,) from 0, ``block_hashes`` uint64.
    Raises:
        UserError: block sizes differ, a block size < 1, a negative token count, an arrival
            beyond +-:data:`MAX_ARRIVAL_S`; a bytes path or a file object
            (:func:`pcs.trace.pathcheck.refuse_file_objects`).
        PathError, InputError: as :func:`reiterable`.
    """
    from pcs.trace.pathcheck import refuse_file_objects

    refuse_file_objects(source)
    batches = _raw(source, block_size, rows, read_ahead, side_by_side, decode_ahead, linger, each_piece)
    try:
        yield from _checked(batches)
    finally:
        if linger and hasattr(batches, "close"):
            batches.close()     # the read-ahead's worker ended now (closed with this iterator), not when collected


def _checked(batches: Iterator[RequestBatch]) -> Iterator[RequestBatch]:
    """:func:`as_batches`' checks of each batch, its ids renumbered from 0."""
    size = None
    next_id = 0
    for b in batches:
        bs = int(b.block_size)
        if size is None and bs < 1:
            raise UserError(f"block size must be >= 1 token, got {bs}")
        if size is not None and bs != size:
            raise UserError(f"all requests of a trace need one block size; got {size} and {bs}")
        size = bs
        if (np.asarray(b.prompt_tokens) < 0).any() or (np.asarray(b.output_tokens) < 0).any():
            raise UserError("token counts must be >= 0")
        _check_arrivals(np.asarray(b.arrival_s), next_id)
        yield b if b.first_request_id == next_id else b.with_first_id(next_id)
        next_id += len(b)
