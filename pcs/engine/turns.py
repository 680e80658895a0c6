"""Decode blocks the next turn reuses: which later request of a conversation contains a request's output.

A request's output tokens fill KV blocks while it decodes. vLLM hashes a
block when it is full and keeps it cached after the request ends, so the
next turn of a conversation -- whose prompt is the previous prompt, the
answer and a new message -- hits them. A trace of block hashes does not say
which ids the output blocks had; the next turn's chain does: it holds them
at the same positions (chained hashes, ``docs/semantics.md §1``).

The rule (:func:`decode_blocks`, ``docs/semantics.md §9``):

- request A (prompt ``p``, output ``o``, block size ``bs``) has ``f = p // bs``
  full prompt blocks; it takes part when its chain holds all of them
  (``f >= 1``);
- A's next turn is the first later request B (trace order) whose block at
  position ``f - 1`` has A's id there (so B's first f blocks are A's: chained
  ids) and whose prompt can hold A's prompt and output (``p_B >= p + o``);
- A's decode blocks are the blocks its output fills: positions ``f`` ..
  ``(p + o - 1) // bs - 1`` (the KV holds ``p + o - 1`` tokens at the end:
  the last sampled token is never computed); they get B's ids at those
  positions, as far as B's cacheable blocks (``min(p_B // bs, B's ids)``) reach.

``--cache-decode-blocks`` defaults to on when the trace has such pairs for at
least :data:`DETECT_SHARE` of its requests (:attr:`DecodeBlocks.detected`).
"""
from __future__ import annotations

import heapq
import threading
from typing import Any, Callable

import numpy as np

from pcs import _native, beside
from pcs.trace.batches import as_batches

__all__ = ["DecodeBlocks", "TurnWalk", "decode_blocks", "decode_blocks_python", "requests_hint", "DETECT_SHARE"]

#: Share of requests with a next turn above which decode blocks are cached by default.
DETECT_SHARE = 0.01


class DecodeBlocks:
    """The decode-block hashes of each request that has a next turn.

    Held as one sorted index: ``index`` int64 (k,) the requests (trace order, from 0) that got ids,
    ascending; ``starts`` int64 (k + 1,) where each one's ids begin in ``ids`` uint64 (chain order).

    Attributes:
        requests: requests in the trace.
        pairs: requests with a next turn (some may get no id: the next turn's chain is too short).
    """

    __slots__ = ("requests", "pairs", "index", "starts", "ids", "_hashes", "_spans")

    def __init__(self, index: np.ndarray | None = None, starts: np.ndarray | None = None,
                 ids: np.ndarray | None = None, requests: int = 0, pairs: int = 0) -> None:
        self.index = np.zeros(0, np.int64) if index is None else index
        self.starts = np.zeros(1, np.int64) if starts is None else starts
        self.ids = np.zeros(0, np.uint64) if ids is None else ids
        self.requests, self.pairs = requests, pairs
        self._hashes: dict | None = None
        self._spans: dict | None = None

    @classmethod
    def from_dict(cls, hashes: dict, requests: int, pairs: int) -> "DecodeBlocks":
        """From request index -> its decode blocks' ids (python ints, non-empty lists)."""
        index = np.array(sorted(hashes), dtype=np.int64)
        lens = np.array([len(hashes[a]) for a in index.tolist()], dtype=np.int64)
        starts = np.zeros(len(index) + 1, np.int64)
        np.cumsum(lens, out=starts[1:])
        ids = np.fromiter((x for a in index.tolist() for x in hashes[a]), np.uint64, int(starts[-1]))
        return cls(index, starts, ids, requests, pairs)

    @classmethod
    def from_resolutions(cls, a: np.ndarray, lens: np.ndarray, ids: np.ndarray, requests: int,
                         pairs: int) -> "DecodeBlocks":
        """From resolutions in any order: request ``a[i]`` (int64, each once) gets ``lens[i]`` > 0 ids, the
        i-th run of ``ids`` (uint64)."""
        order = np.argsort(a, kind="stable")
        src = np.zeros(len(a) + 1, np.int64)
        np.cumsum(lens, out=src[1:])
        starts = np.zeros(len(a) + 1, np.int64)
        np.cumsum(lens[order], out=starts[1:])
        # position k of the output run of a[order[j]] reads ids[src[order[j]] + k]
        gather = np.repeat(src[:-1][order] - starts[:-1], lens[order]) + np.arange(int(starts[-1]), dtype=np.int64)
        return cls(a[order], starts, ids[gather], requests, pairs)

    @property
    def hashes(self) -> dict:
        """Request index -> its decode blocks' ids (python ints), chain order (built once, on first use)."""
        if self._hashes is None:
            ids, st = self.ids.tolist(), self.starts.tolist()
            self._hashes = {a: ids[st[k]:st[k + 1]] for k, a in enumerate(self.index.tolist())}
        return self._hashes

    def get(self, index: int) -> list:
        """The decode-block hashes of request ``index`` ([] when none)."""
        return self.hashes.get(index, [])

    def arrays(self, first: int, m: int) -> tuple[np.ndarray, np.ndarray]:
        """(offsets int64 (m + 1,), ids uint64): the decode-block hashes of requests first .. first + m - 1,
        request ``first + r``'s at ``ids[offsets[r]:offsets[r + 1]]``; one request (``m`` = 1, as a fleet's
        one clock feeds them) through a request -> span dict built once."""
        if m == 1:
            if self._spans is None:
                st = self.starts.tolist()
                self._spans = {a: (st[k], st[k + 1]) for k, a in enumerate(self.index.tolist())}
            a, b = self._spans.get(first, (0, 0))
            return np.array((0, b - a), np.int64), self.ids[a:b]
        lo, hi = np.searchsorted(self.index, [first, first + m])
        counts = np.zeros(m + 1, np.int64)
        counts[self.index[lo:hi] - first + 1] = np.diff(self.starts[lo:hi + 1])
        return np.cumsum(counts), self.ids[self.starts[lo]:self.starts[hi]]

    @property
    def detected(self) -> bool:
        """Next turns contain previous turns: pairs for at least :data:`DETECT_SHARE` of the requests."""
        return self.pairs > 0 and self.pairs >= DETECT_SHARE * self.requests


def _batch_columns(b) -> tuple:
    """Per-request columns of one batch: (offsets, prompt, output, f = full prompt blocks, cacheable), int64."""
    bs = int(b.block_size)
    off = b.block_offsets.astype(np.int64)
    p = b.prompt_tokens.astype(np.int64)
    nh = np.diff(off)
    return off, p, b.output_tokens.astype(np.int64), p // bs, np.minimum(p // bs, nh), nh


def decode_blocks(source: Any, native: str | None = None) -> DecodeBlocks:
    """Find every request's next turn and its decode blocks' ids (the rule in the module docstring).

    One read of ``source`` (any source :func:`pcs.trace.batches.as_batches`
    reads), in trace order: request B first resolves the earlier requests
    still waiting for a next turn whose last full prompt block B holds at the
    same position (``waiting[(id, f)]``, a heap on ``p + o`` so every A with
    ``p + o <= p_B`` comes off at once), then waits for its own. Memory: one
    entry per request that takes part and has no next turn yet.

    Args:
        native: ``auto``, ``c``, ``python`` or None (:func:`pcs._native.resolve`): the compiled twin
            ``pcs.engine._turns`` or the Python reference (:func:`decode_blocks_python`); the same result
            (tests/engine/test_turns.py).
    Raises:
        UserError: ``native="c"`` without the compiled twin.
    """
    from pcs import _native

    if _native.resolve(native, "turns") == "python":
        return decode_blocks_python(source)
    walk = TurnWalk(threaded=False)
    for b in as_batches(source):
        walk.add(b)
    return walk.result()


class TurnWalk:
    """The compiled next-turn search (``pcs.engine._turns``) fed one batch at a time, as a reader decodes them:
    :meth:`add` each batch in trace order, then :meth:`result` (the :class:`DecodeBlocks` of
    :func:`decode_blocks` over the same batches; batch boundaries change nothing, the state carries over).

    Threads: ``threaded`` walks each batch on a worker thread (:class:`pcs.beside.Beside`; ``_turns.walk``
    releases the GIL) while the caller decodes the next one (:class:`pcs.engine.decoded.Decoded`); a batch added
    while the worker is still busy waits in a list, taken by the worker's next call (the caller does not wait for
    the worker); each call is joined before the next starts, so the walks run in order, one at a time, on the state
    only the worker touches. A batch added without ``also`` (while no such call is in flight) goes instead to the
    compiled search's own queue (``_turns.queue``): the process's one walk thread (named ``pcs-turns``), a pthread
    that never takes the GIL and is kept between walks, walks the queued batches in order as they come, so no Python
    thread waits for the GIL to begin or end a walk (the Python worker did, about 0.2-0.4 ms a walk beside the
    caller's Python on 2 cores: docs/performance.md, "The 1x JSONL decode pass's fill and drain" (2026-12-05)); a
    batch with ``also`` first waits for the queue (:meth:`_drain`), so the walks stay in trace order either way.
    A batch is read, never written. :meth:`close` (also done by :meth:`result`) waits for a walk in flight and ends
    the worker, on every path (an error or Ctrl-C in the reader): no Python thread is left behind, and the walk
    thread holds nothing of this walk.

    ``requests``: a size hint, the requests the trace holds (:func:`requests_hint`; 0: unknown): the first walk
    makes the search's key table for that many keys at once, instead of doubling it batch after batch (each doubling
    a new table whose pages fault in and every key rehashed: docs/performance.md, "The next-turn walk from
    Parquet: read-bound, its key table sized from the footer ..." (2026-12-05)); a hint only, no result depends on
    it.

    Raises:
        RuntimeError: the compiled twin is not built (:func:`pcs._native.module`; an install fault, not input).
        MemoryError: a walk ran out of memory (raised by the next :meth:`add` or by :meth:`result`).
    """

    def __init__(self, threaded: bool, requests: int = 0) -> None:
        self._tn = _native.module("turns")
        if self._tn is None:
            raise RuntimeError(f"the compiled {_native.TWINS['turns']} is not built")
        self._state, self._n, self._side = self._tn.new(int(requests)), 0, beside.Beside(threaded)
        self._queued = False                     # batches queued for the compiled walk thread (_tn.queue), not drained
        self._kept = False                       # the worker left idle by result(keep=True), not yet taken
        self._pending: list = []                 # batches added while the worker was busy, in order
        self._running = False                    # a call handed to the worker and not joined
        self._finished = threading.Event()       # set by that call when it is done (join will not wait)
        self._lock = threading.Lock()            # _pending and _finished, between add and the worker's call

    def _walk(self, first: int, bs: int, hashes: np.ndarray, off: np.ndarray, p: np.ndarray, o: np.ndarray,
              also: Callable[[], Any] | None = None) -> None:
        self._tn.walk(self._state, first, bs, hashes, off, p, o)
        if also is not None:
            also()

    def _walk_all(self, batches: list) -> None:
        """One worker call: the walks (each with its ``also``) of ``batches``, in order, then of the batches added
        meanwhile, until none is pending."""
        try:
            while batches:
                for args in batches:
                    self._walk(*args)
                with self._lock:
                    batches, self._pending = self._pending, []
                    if not batches:
                        self._finished.set()
        finally:
            self._finished.set()

    def _hand_over(self) -> None:
        """Join the worker's call (its error raised here) and start one over the batches pending."""
        self._side.join()
        self._running = False
        with self._lock:
            batches, self._pending = self._pending, []
        if batches:
            self._finished.clear()
            self._running = True
            self._side.start(self._walk_all, batches)

    def add(self, b, also: Callable[[], Any] | None = None) -> None:
        """Walk batch ``b`` (a :class:`pcs.trace.RequestBatch`, the next in trace order) after the earlier ones;
        ``also``: called after the walk in the same call on the worker (:class:`pcs.engine.chunks.ChunkPieces`),
        its error raised as a walk's. The caller never waits here for a call still running: ``b`` then waits in
        a list for the worker's next call (made at a later :meth:`add` or at :meth:`result`). Without ``also``, with
        threads and no worker call in flight, ``b`` is queued for the compiled walk thread instead (``_turns.queue``;
        its arrays held until :meth:`result` or :meth:`close`); with ``also``, the batches queued before are waited
        for first."""
        self.add_rows(int(b.block_size), b.block_offsets, b.block_hashes, b.prompt_tokens, b.output_tokens, also)

    def add_rows(self, block_size: int, offsets: Any, hashes: Any, prompt: Any, output: Any,
                 also: Callable[[], Any] | None = None) -> None:
        """:meth:`add` of the rows given by their columns: ``offsets`` int64 (m + 1,) into ``hashes`` uint64,
        ``prompt`` and ``output`` tokens int64 (m,) (the columns of a Parquet read's piece,
        :func:`pcs.trace.parquet.read_parquet` ``each_piece``); kept unchanged until the walk is joined."""
        i8 = np.int64
        off = np.ascontiguousarray(offsets, i8)
        args = (self._n, int(block_size), np.ascontiguousarray(hashes, np.uint64), off,
                np.ascontiguousarray(prompt, i8), np.ascontiguousarray(output, i8), also)
        self._n += len(off) - 1
        if also is None and self._side.threaded and not self._running:
            self._tn.queue(self._state, *args[:-1])      # walked on the compiled walk thread, no GIL taken
            self._queued = True
            return
        self._drain()                    # the batches queued before are walked first (trace order)
        with self._lock:
            self._pending.append(args)
            idle = not self._running or self._finished.is_set()
        if idle:
            self._hand_over()            # the previous call is done (its error is raised here)

    def _drain(self, drop: bool = False) -> None:
        """Wait for the batches queued for the compiled walk thread (``_tn.drain``: each walked, or with ``drop`` the
        ones not begun skipped; their arrays let go); a walk's MemoryError is raised here (not with ``drop``)."""
        if self._queued:
            self._queued = False
            self._tn.drain(self._state, drop)

    def result(self, meanwhile: Callable[[], Any] | None = None, keep: bool = False) -> DecodeBlocks:
        """The decode blocks of every batch added (the worker joined and ended); its arrays are read-only views of
        the bytes the compiled search lays out by request index (``_turns.result``). ``meanwhile``: called on this
        thread once the batches still pending are handed to the worker, before waiting for it (the caller's work
        beside the last walk, :class:`pcs.engine.decoded.Decoded`); its error is raised once the worker is ended.
        ``keep``: once every walk is joined and the blocks are made without error, the worker is left idle instead
        of ended, for :meth:`take_worker` (:meth:`close` still ends it when nobody takes it); when this raises, no
        worker is kept."""
        kept = False
        try:
            self._hand_over()            # the batches still pending
            if keep and self._queued:
                self._side.spawn()       # the worker to keep (none ran the walks), started while they end
            if meanwhile is not None:
                meanwhile()
            self._side.join()
            self._drain()
            kept = self._kept = keep and self._side.threaded
        finally:
            if not kept:
                self._side.close()
        try:
            index, starts, ids, pairs = self._tn.result(self._state)    # by request index already (no sort here)
            return DecodeBlocks(np.frombuffer(index, np.int64), np.frombuffer(starts, np.int64),
                                np.frombuffer(ids, np.uint64), self._n, pairs)
        except BaseException:
            if kept:                     # no worker kept when this raises (MemoryError, Ctrl-C): nobody takes it
                self._kept = False
                self._side.close()
            raise

    def take_worker(self) -> Any:
        """The worker thread's :class:`pcs.beside.Beside`, idle, left by :meth:`result` with ``keep``: handed to the
        caller, who must close it (the next side work of the replay runs on it instead of a new thread: one
        ``Thread.start`` fewer on the caller's path); None when there is none (threads off, or not kept).
        Once taken, :meth:`close` no longer touches it."""
        side, kept, self._kept = self._side, self._kept, False
        if not kept:
            return None
        self._side = None                        # close() has nothing left to end (no join: no wait to cut)
        return side

    def close(self) -> None:
        """Wait for a walk in flight (its outcome dropped; the queued batches not begun skipped) and end the worker
        thread (none once taken)."""
        try:
            self._drain(drop=True)
        finally:
            if self._side is not None:
                self._side.close()


def requests_hint(source: Any) -> int:
    """The requests of ``source`` as a Parquet trace's footer counted them when it was opened
    (:attr:`pcs.trace.Trace.parquet_rows`), else 0 (unknown: another format, a source in memory, a footer that
    cannot say): :class:`TurnWalk`'s size hint. The compiled search takes at most 2**20 of it, so a footer that
    overstates its rows makes at most a table of 2**21 slots (48 MB) ahead of the keys."""
    rows = getattr(source, "parquet_rows", None)
    if not rows or getattr(source, "format", None) != "parquet":
        return 0
    return int(rows)


def decode_blocks_python(source: Any) -> DecodeBlocks:
    """:func:`decode_blocks` in plain Python (the reference of the compiled ``pcs.engine._turns``)."""
    hashes_out: dict = {}
    pairs = [0]                  # a counter _resolve increments
    waiting: dict[tuple[int, int], list] = {}
    live: set[int] = set()        # ids some request waits on (a superset: emptied heaps stay)
    n = 0
    for b in as_batches(source):
        bs = int(b.block_size)
        hashes = b.block_hashes
        off, p, o, f, cacheable, nh = _batch_columns(b)
        regs = np.nonzero((f >= 1) & (nh >= f))[0]
        reg_keys = hashes[off[:-1][regs] + f[regs] - 1]
        live.update(reg_keys.tolist())
        cand = np.fromiter(live, dtype=hashes.dtype, count=len(live))
        pos = np.nonzero(np.isin(hashes, cand))[0]
        rows = np.searchsorted(off, pos, side="right") - 1
        _walk((hashes_out, pairs), waiting, n, bs, hashes, off.tolist(), p.tolist(), o.tolist(), f.tolist(),
              cacheable.tolist(), pos.tolist(), rows.tolist(), regs.tolist(), reg_keys.tolist(), hashes[pos].tolist())
        n += len(p)
    return DecodeBlocks.from_dict(hashes_out, n, pairs[0])


def _walk(out: tuple, waiting: dict, first: int, bs: int, hashes: np.ndarray, off: list, p: list, o: list,
          f: list, cacheable: list, pos: list, rows: list, regs: list, reg_keys: list, at_pos: list) -> None:
    """One batch in trace order: each row resolves at its candidate positions (``at_pos``: the ids there, python
    ints), then registers (if it takes part); ``out``: (request index -> decode-block hashes, [pairs])."""
    k = 0
    npos = len(pos)
    for r, key in zip(regs + [len(p)], reg_keys + [None]):
        while k < npos and rows[k] <= r:     # the positions of rows up to r (row r's before it registers)
            q, rb = pos[k], rows[k]
            heap = waiting.get((at_pos[k], q - off[rb] + 1))
            if heap and heap[0][0] <= p[rb]:
                _resolve(out, heap, p[rb], hashes, off[rb], cacheable[rb], bs)
            k += 1
        if key is not None:
            heapq.heappush(waiting.setdefault((key, f[r]), []), (p[r] + o[r], first + r, f[r], p[r], o[r]))


def _resolve(out: tuple, heap: list, p_b: int, hashes: np.ndarray, b_off: int, b_cacheable: int,
             bs: int) -> None:
    """Request B (prompt ``p_b``) holds the heap's id at the heap's position: it is the next turn of every
    waiting request whose prompt and output it can hold (``p + o <= p_b``)."""
    while heap and heap[0][0] <= p_b:
        _, a, f, p, o = heapq.heappop(heap)
        out[1][0] += 1
        end = min((p + o - 1) // bs, b_cacheable)
        if end > f:
            out[0][a] = hashes[b_off + f:b_off + end].tolist()
