"""Turn any request source into columnar chunks of python lists for the replay loop.

Sources: whatever :func:`pcs.trace.batches.as_batches` reads (a path, a
:class:`pcs.trace.Trace`, an iterable of request-like objects). Per-request
rule arithmetic (cacheable blocks, hit cap, extra running blocks) and the
prefill-time tables are computed with numpy once per chunk, so the per-request
loop reads python ints and floats only and the per-block loop touches python
ints from one ``tolist()`` per chunk.
"""
from __future__ import annotations

import threading
from collections import deque
from typing import Any, Iterator

import numpy as np

from pcs.blocks import BlockRules
from pcs.engine.decoded import first_cap
from pcs.engine.turns import requests_hint
from pcs.trace.batches import BATCH_REQUESTS, as_batches, ceil_blocks

__all__ = ["Chunk", "ChunkPieces", "iter_chunks", "rule_columns", "table_entries_bound", "CHUNK_REQUESTS"]

#: Requests per chunk when grouping an iterable of Request objects (:data:`pcs.trace.batches.BATCH_REQUESTS`).
CHUNK_REQUESTS = BATCH_REQUESTS


def _list_column(name: str) -> property:
    """The column ``name`` of a :class:`Chunk` as a python list (converted from numpy once, on first read)."""
    def get(self) -> list:
        v = self._cols[name]
        if type(v) is not list:
            v = self._cols[name] = v.tolist()
        return v

    def put(self, v) -> None:
        self._cols[name] = v

    return property(get, put)


#: The list columns of a :class:`Chunk`, in constructor order.
LIST_COLUMNS = ("arrival_s", "prompt_tokens", "output_tokens", "cacheable", "max_hit_blocks", "extra_blocks",
                "offsets", "block_hashes", "prefill_s", "prefill_offsets", "decode_s")


class Chunk:
    """A run of consecutive requests as python lists (one entry per request unless noted).

    Each list column may be given as a numpy array instead: it becomes a list (``tolist()``) the first
    time it is read, so a compiled loop that reads only :attr:`arrays` never pays for the lists.

    Attributes:
        first_request_id: request id of row 0.
        block_size: tokens per block.
        arrival_s: floats, seconds.
        prompt_tokens, output_tokens: ints.
        cacheable: ints, ``BlockRules.cacheable_blocks``.
        max_hit_blocks: ints, ``BlockRules.max_hit_blocks`` (``docs/semantics.md §4``).
        extra_blocks: ints, ``ceil((prompt + output) / block_size) - cacheable``
            (>= 0): slots a running request holds beyond its cacheable blocks.
        offsets: ints, len n + 1: row i's block hashes are ``block_hashes[offsets[i]:offsets[i + 1]]``.
        block_hashes: ints, every block hash of the chunk (``docs/semantics.md §1``).
        prefill_s: floats, flat: row i's prefill seconds with h hit blocks is
            ``prefill_s[prefill_offsets[i] + h]`` for 0 <= h <= max_hit_blocks[i] (filled by
            the timing model; empty when there is none).
        prefill_offsets: ints, len n + 1.
        decode_s: floats, seconds of all decode steps of row i.
        arrays: the same columns as numpy arrays, for compiled loops that read buffers
            (:class:`pcs.engine.stepnative.NativeStepEngine`): ``(arrival_s f8, prompt_tokens i8,
            output_tokens i8, cacheable i8, max_hit_blocks i8, offsets i8, block_hashes u8, prefill_s f8,
            prefill_offsets i8)`` (shapes (n,), offsets (n + 1,); the prefill table filled only when decode
            seconds are not (the step scheduler), else empty); None when the chunk was built from lists.
    """

    __slots__ = ("first_request_id", "block_size", "arrays", "_cols")

    def __init__(self, first_request_id: int, block_size: int, arrival_s, prompt_tokens, output_tokens, cacheable,
                 max_hit_blocks, extra_blocks, offsets, block_hashes, prefill_s, prefill_offsets, decode_s,
                 arrays: tuple | None = None) -> None:
        self.first_request_id, self.block_size, self.arrays = first_request_id, block_size, arrays
        self._cols = dict(zip(LIST_COLUMNS, (arrival_s, prompt_tokens, output_tokens, cacheable, max_hit_blocks,
                                             extra_blocks, offsets, block_hashes, prefill_s, prefill_offsets,
                                             decode_s)))

    arrival_s = _list_column("arrival_s")
    prompt_tokens = _list_column("prompt_tokens")
    output_tokens = _list_column("output_tokens")
    cacheable = _list_column("cacheable")
    max_hit_blocks = _list_column("max_hit_blocks")
    extra_blocks = _list_column("extra_blocks")
    offsets = _list_column("offsets")
    block_hashes = _list_column("block_hashes")
    prefill_s = _list_column("prefill_s")
    prefill_offsets = _list_column("prefill_offsets")
    decode_s = _list_column("decode_s")

    def __len__(self) -> int:
        return len(self._cols["arrival_s"])

    def raw(self, name: str):
        """The column ``name`` as it is held: a list, or the numpy array it was given as (not converted)."""
        return self._cols[name]


def rule_columns(prompt_tokens: np.ndarray, num_hashes: np.ndarray, output_tokens: np.ndarray,
                 block_size: int, rules: BlockRules) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(cacheable, max_hit_blocks, extra_blocks), int64 arrays of shape (n,): :meth:`BlockRules.columns` and
    the decode blocks past the cacheable ones (checked element-wise in the tests)."""
    n, cap = rules.columns(prompt_tokens, num_hashes, block_size)
    total = ceil_blocks(prompt_tokens.astype(np.int64) + output_tokens.astype(np.int64), block_size)
    extra = np.maximum(0, total - n)
    return n, cap, extra


def _tables(prompt, output, offsets, bs: int, rules: BlockRules, timing: Any, decode: bool) -> tuple:
    """A run of rows' rule columns and time tables: (cacheable, max_hit_blocks, extra_blocks, prefill table,
    its offsets, decode seconds, (prefill table, offsets) as arrays or two empty arrays). Each row's values depend
    on that row alone (:func:`rule_columns`, :meth:`pcs.engine.timing.TimeModel.tables`)."""
    n, cap, extra = rule_columns(prompt, np.diff(offsets), output, bs, rules)
    pre_arrays = (np.zeros(0), np.zeros(0, np.int64))
    if timing is not None and decode:
        pre, pre_off, dec = timing.tables(prompt, output, cap, bs)
    elif timing is not None:
        pre_arrays = timing.tables(prompt, output, cap, bs, False, True)[:2]
        pre, pre_off, dec = pre_arrays[0], pre_arrays[1], []
    else:
        pre, pre_off, dec = [], [], []
    return n, cap, extra, pre, pre_off, dec, pre_arrays


def _chunk(first_id: int, bs: int, arrival, prompt, output, offsets, hashes, tables: tuple) -> Chunk:
    """The :class:`Chunk` of a run of rows and their :func:`_tables`."""
    n, cap, extra, pre, pre_off, dec, pre_arrays = tables
    i8 = np.int64
    arrays = (np.ascontiguousarray(arrival, np.float64), np.ascontiguousarray(prompt, i8),
              np.ascontiguousarray(output, i8), n, cap, np.ascontiguousarray(offsets, i8),
              np.ascontiguousarray(hashes, np.uint64)) + pre_arrays
    # the list columns stay numpy arrays until a Python loop reads them (Chunk converts on first read)
    return Chunk(first_id, bs, arrival, prompt, output, n, cap, extra, offsets, hashes, pre, pre_off, dec, arrays)


def _from_columns(first_id: int, bs: int, arrival, prompt, output, offsets, hashes, rules: BlockRules,
                  timing: Any, decode: bool = True) -> Chunk:
    return _chunk(first_id, bs, arrival, prompt, output, offsets, hashes,
                  _tables(prompt, output, offsets, bs, rules, timing, decode))


class ChunkPieces:
    """The step scheduler's chunks (:func:`iter_chunks` with ``decode=False``) made in the decode pass: each
    batch's rule columns (:func:`rule_columns`) and prefill table (:meth:`pcs.engine.timing.TimeModel.tables`,
    written in place into its joined batch's table) as the batch is read; once a joined batch of
    :class:`pcs.engine.decoded.Decoded` is complete, its chunk (:meth:`add` ``closed``, or :meth:`take` for the
    rest). The chunks are those of :func:`iter_chunks` over the joined batches, value for value: every row's
    columns and table entries depend on that row alone, and joining the batches only renumbers the table's offsets.

    Only the first :attr:`groups_ahead` joined batches are made in pieces: the step loops' first feed needs no
    other, and a later joined batch's chunk is made whole from it (:func:`_from_columns`, the same values) by
    :meth:`take` -- which :func:`pcs.engine.feed._feed` runs on its read-ahead worker while the loops run the
    chunks before it -- off the calling thread's decode pass (docs/performance.md, "The later chunks beside the
    first feed").

    Threads: the reader :meth:`queue` s each batch; :meth:`drain` makes the pieces queued, in batch order, on whichever
    thread calls it -- the next-turn search's worker after each walk (:class:`pcs.engine.turns.TurnWalk`), the caller
    once its reads are done and it would only wait for the worker (:class:`pcs.engine.decoded.Decoded`) -- one at a
    time under a lock (:meth:`add` is the unit). A piece reads the batch (read-only arrays), the rules (frozen) and
    the time model's compute terms, and writes only this object, which the caller reads after that worker's last
    join (:meth:`take`).
    Memory: per joined batch not handed over, its table (8 B an entry; the buffer is reserved for the joined
    batch's estimated entries, :func:`_group_estimate`, at most what ``entries`` leaves, and grows by doubling past
    them: resident, the pages the entries fill -- except that numpy advises a buffer of 4 MiB or more for
    transparent huge pages, so the last 2 MiB page the entries reach is resident whole when the reservation runs
    past it) and 32 B per request.

    Args:
        rules: block rules; timing: :class:`pcs.engine.timing.TimeModel` (its ``tables``), as ``_feed`` passes them.
        entries: at least as many table entries as the whole trace needs (:func:`table_entries_bound`: a Parquet
            footer's block hashes plus rows), or 0 when not known. A reservation never passes what it leaves after
            the joined batches before, so a trace smaller than a joined batch (1x Mooncake: 300,531 entries against
            the 1,892,294 its first batch's rows extrapolate to) reserves about what it fills. A wrong count costs
            only a table grown by doubling.
    """

    #: Joined batches whose chunks are made in pieces in the decode pass (the rest by :meth:`take`).
    groups_ahead = 1

    def __init__(self, rules: BlockRules, timing: Any, entries: int = 0) -> None:
        self.rules, self.timing = rules, timing
        self._left = entries if entries > 0 else None   # entries the bound leaves after the pieces made so far
        self._groups: list = []   # per joined batch: [[(cacheable, max hit, extra, table offsets)], table, used]
        self._made: dict = {}     # joined batch index -> its Chunk
        self._queued: deque = deque()     # (batch, starts, closed) queued and not yet made, in batch order
        self._lock = threading.Lock()     # held while a piece is made: one at a time, in order
        self._opened = 0                  # joined batches begun by the batches queued

    def queue(self, b: Any, starts: bool = False, closed: tuple = ()) -> None:
        """Queue batch ``b``'s piece (:meth:`add`'s arguments), made by the next :meth:`drain` on any thread -- when
        ``b`` is in one of the first :attr:`groups_ahead` joined batches; a later one's piece is not made (its
        chunk is made whole from its joined batch by :meth:`take`), only the chunks it closes are queued."""
        self._opened += bool(starts or not self._opened)
        if self._opened > self.groups_ahead:
            closed = tuple(c for c in closed if c[0] < self.groups_ahead)     # a later one has no pieces
            if closed:
                self._queued.append((None, False, closed))
            return
        self._queued.append((b, starts, closed))

    def drain(self) -> None:
        """Make every piece queued, in order (a thread that finds another one making them waits, then goes on
        with what is left); an error is raised on the thread that met it, the pieces after it left queued."""
        while self._queued:
            with self._lock:
                if not self._queued:
                    return
                self.add(*self._queued[0])
                self._queued.popleft()

    def add(self, b: Any, starts: bool = False, closed: tuple = ()) -> None:
        """Make the piece of batch ``b`` (the next in trace order; ``starts``: it begins a new joined batch), after
        the chunks of ``closed`` (``(index, joined batch)`` each, complete before ``b``)."""
        for g, joined in closed:
            self._made[g] = self._chunk_of(g, joined)
        if b is None:               # only closing (:meth:`queue` of a batch past the groups made ahead)
            return
        if starts or not self._groups:
            self._groups.append([[], None, 0])
        grp = self._groups[-1]
        bs, prompt, output = int(b.block_size), b.prompt_tokens, b.output_tokens
        n, cap, extra = rule_columns(prompt, np.diff(b.block_offsets), output, bs, self.rules)
        need = int(cap.sum()) + len(cap)                   # the table's entries: max hit + 1 a row
        if grp[1] is None:
            reserve = _group_estimate(need, len(cap))
            grp[1] = _room(None, 0, need, reserve if self._left is None else min(reserve, self._left))
        else:
            grp[1] = _room(grp[1], grp[2], need)
        pre, off = self.timing.tables(prompt, output, cap, bs, False, True, out=grp[1][grp[2]:])[:2]
        grp[0].append((n, cap, extra, off))
        grp[2] += len(pre)
        if self._left is not None:
            self._left = max(0, self._left - len(pre))

    def _chunk_of(self, g: int, b: Any) -> Chunk:
        """The chunk of joined batch ``g`` (``b``) from its pieces (released)."""
        parts, table, used = self._groups[g]
        self._groups[g] = None
        if len(parts) == 1:
            n, cap, extra, off = parts[0]
        else:
            n, cap, extra = (np.concatenate([p[k] for p in parts]) for k in range(3))
            base = np.cumsum([0] + [int(p[3][-1]) for p in parts[:-1]])
            off = np.concatenate([p[3][:-1] + s for p, s in zip(parts, base)] + [np.array([used], np.int64)])
        pre = table[:used] if table is not None else np.zeros(0)
        return _chunk(b.first_request_id, int(b.block_size), b.arrival_s, b.prompt_tokens, b.output_tokens,
                      b.block_offsets, b.block_hashes, (n, cap, extra, pre, off, [], (pre, off)))

    def take(self, batches: list) -> Iterator[Chunk]:
        """The chunks of the joined ``batches``, in order, each handed over once (dropped here once yielded)."""
        for g, b in enumerate(batches):
            made = self._made.pop(g, None)
            if made is None:
                made = self._chunk_of(g, b) if g < len(self._groups) else \
                    _from_columns(b.first_request_id, int(b.block_size), b.arrival_s, b.prompt_tokens,
                                  b.output_tokens, b.block_offsets, b.block_hashes, self.rules, self.timing, False)
            yield made


def table_entries_bound(source: Any) -> int:
    """At least as many prefill-table entries (:meth:`ChunkPieces.add`: max hit + 1 a row) as ``source`` needs:
    the block hashes plus the rows a Parquet trace's footer counts (a row's max hit is at most its block hashes,
    :meth:`pcs.blocks.BlockRules.columns`), or 0 when not known (another source; a footer without the counts). A
    size hint: a wrong count changes no result."""
    rows, ids = requests_hint(source), getattr(source, "parquet_block_hashes", None)
    return 0 if not rows or ids is None else int(ids) + rows


#: The most table entries :func:`_group_estimate` reserves ahead of what the pieces need: 2**22 (32 MiB of address space).
RESERVE_ENTRIES = 1 << 22


def _group_estimate(need: int, rows: int) -> int:
    """Table entries to reserve for a joined batch whose first piece needs ``need`` entries for ``rows`` rows: the
    same entries per row over the most rows the first joined batch holds (:func:`pcs.engine.decoded.first_cap`: only
    the first is made in pieces, :attr:`ChunkPieces.groups_ahead`; a later one's estimate errs on the small side), plus
    a quarter, at most :data:`RESERVE_ENTRIES` (one very long request must not reserve its length times a joined
    batch's rows: tests/engine/test_long_request_memory.py) and never less than ``need``; so that the pieces after
    it rarely move the table (a move copies every entry written). Only the pages the entries fill become resident
    (the rest of ``numpy.empty``'s allocation is address space)."""
    most = first_cap()
    if rows <= 0 or rows >= most:
        return need
    return max(need, min(RESERVE_ENTRIES, need + -(-need * (most - rows) * 5 // (4 * rows))))


def _room(table: np.ndarray | None, used: int, need: int, reserve: int = 0) -> np.ndarray:
    """``table`` with room for ``need`` entries past ``used``: itself when it has it, else a new one holding its
    first ``used`` entries, sized for what is known -- the first ``max(need, reserve)`` entries (``reserve``: an
    estimate of the whole joined batch's, :func:`_group_estimate`), later at least twice the old size (a joined
    batch's table grows in amortised linear time)."""
    if table is not None and used + need <= len(table):
        return table
    size = max(need, reserve) if table is None else max(2 * len(table), used + need)
    grown = np.empty(max(size, 1), dtype=np.float64)
    if table is not None:
        grown[:used] = table[:used]
    return grown


def iter_chunks(source: Any, rules: BlockRules, timing: Any = None, decode: bool = True) -> Iterator[Chunk]:
    """Yield :class:`Chunk` s of ``source`` in order, one per :class:`pcs.trace.RequestBatch`.

    Args:
        source: any source :func:`pcs.trace.batches.as_batches` reads (a
            Trace, a path, an iterable of request-like objects).
        rules: block rules for the cacheable / max-hit columns.
        timing: object with ``tables(prompt, output, max_hit_blocks, block_size)``
            (see :class:`pcs.engine.timing.TimeModel`), or None for no times.
        decode: fill ``decode_s`` (False: left empty; only the instant-compute
            modeled loop reads it).
    Raises:
        UserError: as :func:`pcs.trace.batches.as_batches` (block sizes
            differ or < 1, negative token counts).
    """
    for b in as_batches(source):
        yield _from_columns(b.first_request_id, int(b.block_size), b.arrival_s, b.prompt_tokens, b.output_tokens,
                            b.block_offsets, b.block_hashes, rules, timing, decode)
