"""A trace read once: its checked batches kept in memory for the passes of one replay.

A replay over event-loop engines reads its trace more than once: the one-pass
scan (single-sequence and ideal results), the next-turn search of the step
scheduler (:mod:`pcs.engine.turns`) and the feed of the engines. Parsing JSONL
(or decoding Parquet) each time cost one full decode per pass; :class:`Decoded`
decodes once and every pass iterates the same :class:`pcs.trace.RequestBatch`
objects (read-only numpy arrays; nobody writes into them).

Small batches (the JSONL readers' ~4 k-request chunks) are joined, in order, into batches of up to
:data:`MERGE_REQUESTS` requests (the Parquet reader's row groups): every pass and both step loops then pay
their per-batch costs (calls, slices, column conversions) a few times per trace instead of once per chunk;
batch boundaries change no result (the passes carry their state from batch to batch).

A trace file may be read on a worker of its own (``ahead``) while the calling thread makes the chunk pieces: the
read (the compiled JSONL decode or pyarrow's, then the value checks) is then the decode pass's critical path,
and the calling thread's share of it is the pieces and the joins (docs/performance.md, "The read beside the
pieces, the no-cache run behind the scan, ..."). A block-id JSONL file read by the compiled twin is read and checked
on the calling thread instead, each chunk decoded on a C++ thread that never takes the GIL (docs/performance.md,
"The 1x call's decode pass: the next chunk on a thread without the GIL, the id arena kept"): a Python reader
worker waited for the GIL between its decodes while the calling thread made the pieces. So is a Parquet trace of
one read batch (:func:`one_read_batch`, 1x Mooncake): the calling thread had nothing to do but wait for its reader
worker, whose thread start and hand-over cost the decode pass about 0.3 ms and a steady call 0.2-0.8 ms
(docs/performance.md, "The 1x Parquet read on the calling thread"). Its walk is begun on the read's first pieces
(:class:`_PiecesWalked`, three of pyarrow's pieces a hand-over) instead of once the whole batch is read and checked:
the walk then ends beside the read's last pieces and the chunk pieces, not after them (docs/performance.md, "The 1x
Parquet walk begun on the read's first pieces"). The pieces (and a batch read here) are handed without ``also``, so
they go to the compiled search's walk thread (``_turns.queue``, no GIL), not to a Python worker: 0.07-0.10 ms less
decode pass in one process (docs/performance.md, the same section, "The pieces on the compiled walk queue").

The step scheduler's next-turn search (:mod:`pcs.engine.turns`) may walk each batch as it is read
(``Decoded(source, turns)``, :class:`pcs.engine.turns.TurnWalk`): on a worker thread while the caller decodes the
next chunk, so the search is done when the decode is (a batch without chunk pieces to make after its walk -- the
JSONL decode-ahead pass's and a 1x Parquet read's -- on the compiled search's own walk thread, which needs no
GIL). The step loops' chunk pieces (:class:`pcs.engine.chunks.ChunkPieces`) of the first joined batch are made on
that worker after each walk and,
once the reads are done, by the caller too instead of waiting for the worker (a Parquet trace is read faster than
it is walked); a later joined batch's chunk is made whole when it is taken, off the decode pass.

Memory: the decoded trace -- 8 B per block hash plus 32 B per request
(arrival, prompt, output, offset) -- for as long as the replay runs; while joining, one joined batch more.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

from pcs.trace.batches import as_batches, read_ahead
from pcs.trace.request import concat_batches

__all__ = ["Decoded", "MERGE_REQUESTS"]

#: Requests per joined batch (:func:`_joined`); the Parquet reader's row-group batches are this size already.
MERGE_REQUESTS = 1 << 16

#: Requests in the first joined batch at most (and at most :data:`MERGE_REQUESTS`): the step loops' first chunk, the
#: one whose pieces the decode pass makes (:class:`pcs.engine.chunks.ChunkPieces`); the later chunks are made while
#: the loops run the ones before, so a smaller first one takes work off the decode pass (docs/performance.md, "The
#: later chunks beside the first feed"). A batch read larger (a Parquet row group) stays as it is.
FIRST_MERGE_REQUESTS = 1 << 15
#: Pieces of a Parquet read handed to the next-turn walk at once (:class:`_PiecesWalked`): 1x Mooncake's 6 pieces of
#: 2,048 rows in two hand-overs, the second walked beside the join, the checks and the chunk pieces. On the Python
#: worker one piece a hand-over kept the decode pass 0.05 ms longer, two the same as three, all six 0.2-0.4 ms longer;
#: on the compiled walk queue one 0.05-0.12 ms longer, two 0.02-0.05, six the same as three (docs/performance.md,
#: "The 1x Parquet walk begun on the read's first pieces").
PIECES_A_HANDOVER = 3


def _joined(batches: Iterator, each: Callable[..., None] | None = None) -> list:
    """``batches`` in order, consecutive ones joined while together they hold at most :data:`MERGE_REQUESTS`
    requests -- the first joined batch at most :data:`FIRST_MERGE_REQUESTS` -- (a batch already that large stays as
    it is); each joined batch keeps its first request's id.
    ``each``: called with every batch as read, before it is joined (the next-turn search, :class:`Decoded`),
    whether it begins a new joined batch, and the joined batches made since its previous call
    (``(index, joined batch)`` each)."""
    out: list = []
    group: list = []
    closed: list = []
    rows = 0
    for b in batches:
        starts = bool(group) and rows + len(b) > (MERGE_REQUESTS if out else first_cap())
        if each is not None:
            each(b, starts, tuple(closed))
            closed.clear()
        if starts:
            out.append(_join(group))
            closed.append((len(out) - 1, out[-1]))
            group, rows = [], 0
        group.append(b)
        rows += len(b)
    if group:
        out.append(_join(group))
    return out


def first_cap() -> int:
    """The most requests the first joined batch holds (:data:`FIRST_MERGE_REQUESTS`, at most :data:`MERGE_REQUESTS`)."""
    return min(FIRST_MERGE_REQUESTS, MERGE_REQUESTS)


def _from_file(source: Any) -> bool:
    """Whether :func:`pcs.trace.batches.as_batches` reads ``source`` from a trace file (a path, None: the bundled
    sample, or a :class:`pcs.trace.Trace`): its batches are then decoded in compiled code that releases the GIL,
    which a worker can do while the caller makes the chunk pieces; a source in memory is Python work alone."""
    from pathlib import Path

    from pcs.trace.api import Trace

    return source is None or isinstance(source, (str, Path, Trace))


def _decodes_ahead(source: Any) -> bool:
    """Whether ``source`` is a trace whose reader decodes each chunk on a thread of its own while it reads the next
    (:meth:`pcs.trace.api.Trace.decodes_ahead`)."""
    return bool(getattr(source, "decodes_ahead", lambda: False)())


def one_read_batch(source: Any) -> bool:
    """Whether ``source`` is a Parquet trace whose footer counted at most one read batch of rows
    (:attr:`pcs.trace.Trace.parquet_rows` <= :data:`pcs.trace.parquet.READ_ROWS`: 1x Mooncake, 12,031 rows): a reader
    worker would read its one batch while the calling thread, with nothing of the batch to work on, only waits
    (docs/performance.md, "The 1x Parquet read on the calling thread"). A hint: a footer that undercounts gives the
    same batches, read here. Anything else (another format, a footer that cannot say, a source in memory): False."""
    from pcs.trace.parquet import READ_ROWS

    rows = getattr(source, "parquet_rows", None)
    return getattr(source, "format", None) == "parquet" and isinstance(rows, int) and rows <= READ_ROWS


def _pieces_are_rows(source: Any) -> bool:
    """Whether a Parquet trace's pieces as read are the rows of its batches, in order, once the read raises nothing
    (:func:`pcs.trace.parquet.read_parquet` ``each_piece``): read with ``on_error="raise"`` (a check drops no row)
    and without ``sort`` (no row moves). Then the next-turn walk of a trace read on the calling thread
    (:func:`one_read_batch`) takes the pieces as pyarrow decodes them (:class:`_PiecesWalked`), beside the read of the
    next ones, instead of the whole batch once it is read and checked (docs/performance.md, "The 1x Parquet walk
    begun on the read's first pieces")."""
    return getattr(source, "on_error", None) == "raise" and getattr(source, "sort", True) is False


class _PiecesWalked:
    """The next-turn walk (:class:`pcs.engine.turns.TurnWalk`) fed a read's pieces as they are read (:meth:`piece`),
    :data:`PIECES_A_HANDOVER` at a time, then its checked batches (:meth:`batch`): the pieces still held are handed
    over first; a batch whose rows the pieces already walked is not walked again, a batch none of whose rows came as
    pieces (a reader that called no ``each_piece``) is walked whole. The pieces' rows are unchecked: the walk's
    result is used only once the read has raised nothing (:class:`Decoded`)."""

    def __init__(self, turns: Any) -> None:
        self._turns, self._walked, self._batched, self._held = turns, 0, 0, []

    def piece(self, block_size: int, offsets: Any, hashes: Any, prompt: Any, output: Any) -> None:
        """One piece's columns (:func:`pcs.trace.parquet.read_parquet` ``each_piece``), handed to the walk with the
        pieces held before it once they are :data:`PIECES_A_HANDOVER`."""
        self._held.append((block_size, offsets, hashes, prompt, output))
        self._walked += len(prompt)
        if len(self._held) >= PIECES_A_HANDOVER:
            self._hand()

    def _hand(self) -> None:
        """The pieces held, in order, to the walk without ``also``: queued for the compiled search's walk thread
        (``_turns.queue``, walked there without the GIL while this thread reads on), not for a Python worker
        (:meth:`pcs.engine.turns.TurnWalk.add_rows`)."""
        held, self._held = self._held, []
        for args in held:
            self._turns.add_rows(*args)

    def batch(self, b: Any, also: Callable[[], Any] | None = None) -> None:
        """Batch ``b`` (the next, checked) walked unless its pieces were.

        Raises:
            RuntimeError: the pieces walked cover part of ``b`` only (a reader whose batches are not its pieces)."""
        self._hand()
        start, self._batched = self._batched, self._batched + len(b)
        if self._walked == start:
            self._turns.add(b, also)
            self._walked = self._batched
        elif self._walked != self._batched:
            raise RuntimeError(f"the pieces walked hold {self._walked:,} rows, the batches {self._batched:,}")


def _join(group: list):
    """One batch of the rows of ``group`` (consecutive batches of one trace), ids numbered from its first."""
    if len(group) == 1:
        return group[0]
    return concat_batches(group).with_first_id(group[0].first_request_id)


class Decoded:
    """``source`` decoded once (:func:`pcs.trace.batches.as_batches`), re-iterable without decoding again.

    Args:
        source: anything :func:`pcs.trace.batches.as_batches` reads.
        turns: a :class:`pcs.engine.turns.TurnWalk` fed every batch as it is read (the next-turn search, on its
            worker thread or the compiled walk thread while the next batch is decoded), or None.
        pieces: with ``turns``, a :class:`pcs.engine.chunks.ChunkPieces` whose pieces are queued as each batch is
            read and made in order on the same worker after each batch's walk, or by the caller once every batch
            is read (:meth:`pcs.engine.chunks.ChunkPieces.drain`), and each joined batch's chunk once its group is
            complete (:meth:`made_chunks`); or None.
        ahead: with ``turns``, a trace file (a path, None or a :class:`pcs.trace.Trace`) is read, decoded and checked
            on a reader worker of its own (:func:`pcs.trace.batches.read_ahead`, one batch in flight, the same
            batches and errors in the same order) while this thread queues each batch's walk and makes its chunk
            piece (:meth:`pcs.engine.chunks.ChunkPieces.drain`) -- except a block-id JSONL trace read by the compiled
            twin (:meth:`pcs.trace.api.Trace.decodes_ahead`): read and checked here, each chunk decoded on a thread of
            its own that needs no GIL while this thread reads the next and makes the pieces (``decode_ahead`` of
            :func:`pcs.trace.batches.as_batches`), each batch walked on the compiled search's walk thread (no
            ``also``: ``_turns.queue``); and a Parquet trace of one read batch (:func:`one_read_batch`): read here (a
            reader worker would read it while this thread waits), its walk on the same walk thread -- piece by piece
            as pyarrow decodes them when the pieces are its rows (:func:`_pieces_are_rows`), else the batch once
            read -- while this thread makes its pieces; a source in memory is read here as without it.
        meanwhile: with ``turns``, called on this thread with the trace's block hashes once every batch is read,
            while the walk finishes its last batch (:meth:`pcs.engine.turns.TurnWalk.result`), or None: the
            caller's own work done in that wait instead of after the decode (:class:`pcs.engine.loops.HierarchyAhead`;
            without ``turns`` there is no wait, and it is not called).
        keep_worker: with ``turns`` on a worker thread, that worker is kept idle once the trace is decoded, for
            :meth:`take_worker` (the caller then closes it), instead of ended.
    Attributes:
        batches: the checked batches, ids numbered from 0, in order, small ones joined (:func:`_joined`).
        block_size: tokens per block (None for an empty trace).
        num_block_hashes: block hashes in the trace (sizes the scan's table once).
        next_turns: with ``turns``, its :class:`pcs.engine.turns.DecodeBlocks` (the search's result over the
            whole trace), else None.
    Raises:
        UserError, InputError: as :func:`pcs.trace.batches.as_batches`; MemoryError: as ``turns``.
    """

    def __init__(self, source: Any, turns: Any = None, pieces: Any = None, ahead: bool = False,
                 meanwhile: Callable[[int], None] | None = None, keep_worker: bool = False) -> None:
        each, self._pieces, self._worker = None, (pieces if turns is not None else None), None
        ahead = ahead and turns is not None and _from_file(source)
        decode_ahead = ahead and _decodes_ahead(source)     # the read on this thread, each decode on its own
        read_here = ahead and not decode_ahead and one_read_batch(source)   # a reader worker would only be waited for
        by_piece = _PiecesWalked(turns) if read_here and _pieces_are_rows(source) else None    # walked as read
        if turns is not None:
            add = turns.add if by_piece is None else by_piece.batch
            each = (lambda b, *_: add(b)) if pieces is None else \
                (lambda b, starts, closed: (pieces.queue(b, starts, closed),
                                            add(b, None if decode_ahead or read_here else pieces.drain),
                                            pieces.drain() if ahead else None))
        batches = as_batches(source, side_by_side=True, decode_ahead=decode_ahead,     # joins view the JSONL ids
                             each_piece=None if by_piece is None else by_piece.piece)
        if ahead and not decode_ahead and not read_here:
            batches = read_ahead(batches, linger=True)      # read, decoded and checked on a worker of its own
        try:
            self.batches = _joined(batches, each)
            if self._pieces is not None:
                self._pieces.drain()       # the pieces the worker has not reached, made here while it walks
            self.num_block_hashes = sum(int(b.block_offsets[-1] - b.block_offsets[0]) for b in self.batches)
            then = None if meanwhile is None else (lambda: meanwhile(self.num_block_hashes))
            self.next_turns = None if turns is None else turns.result(then, keep=keep_worker)
        finally:
            try:
                if ahead:
                    batches.close()    # a read in flight after an error or Ctrl-C: waited for, dropped; worker ended
                if keep_worker and turns is not None:
                    self._worker = turns.take_worker()      # None unless result kept it (no error)
            finally:
                if turns is not None:
                    turns.close()      # a walk still in flight after a reader's error or Ctrl-C: waited for, dropped
        self.block_size = int(self.batches[0].block_size) if self.batches else None

    def take_worker(self) -> Any:
        """The next-turn walk's worker kept idle (``keep_worker``), handed over once: a
        :class:`pcs.beside.Beside` the caller must close; else None."""
        worker, self._worker = self._worker, None
        return worker

    def made_chunks(self, rules: Any, timing: Any, decode: bool) -> Iterator | None:
        """The chunks made in the decode pass (``pieces``), in order, when they are those
        :func:`pcs.engine.chunks.iter_chunks` of this trace with ``rules``, ``timing`` and ``decode`` would give
        (the same rules and time model, ``decode`` False), else None; handed over once (then None)."""
        p = self._pieces
        if p is None or decode or p.rules is not rules or p.timing is not timing:
            return None
        self._pieces = None
        return p.take(self.batches)

    def iter_batches(self) -> Iterator:
        """The batches, in order (each call starts again)."""
        return iter(self.batches)
