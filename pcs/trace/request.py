"""The request record every reader yields, and its columnar batch form.

A trace is a stream of requests in arrival order. Each request carries one
block hash per prompt block *including* a trailing partial block (Mooncake:
``len(hash_ids) == ceil(input_length / block_size)``, FAST'25 release README);
which of those blocks a cache may keep (full blocks only, last-token cap) is
decided by consumers through :class:`pcs.blocks.BlockRules`.

Ids are opaque: Mooncake assigns them in first-appearance order, token traces
get 64-bit chained hashes (:mod:`pcs.trace.hashing`); no consumer may read
meaning into an id's value (docs/semantics.md §1).
"""
from __future__ import annotations

from typing import Any, Iterator

import numpy as np
from pcs.choices import MAX_BLOCK_SIZE  # tokens per block: the one bound (defined there, numpy-free)
from pcs.errors import UserError
from pcs._dataclass import dataclass

__all__ = ["MAX_BLOCK_SIZE", "Request", "RequestBatch", "concat_batches", "join_hashes", "num_blocks_for"]


def num_blocks_for(prompt_tokens: int, block_size: int) -> int:
    """Blocks covering ``prompt_tokens`` tokens, the partial last one included.

    ``ceil(prompt_tokens / block_size)`` (Mooncake FAST'25 release README).

    >>> num_blocks_for(1030, 512), num_blocks_for(1024, 512), num_blocks_for(0, 512)
    (3, 2, 0)
    """
    return -(-prompt_tokens // block_size)


@dataclass(frozen=True, slots=True)
class Request:
    """One request of a trace.

    Attributes:
        request_id: 0-based position in the stream (after ``--sort``).
        arrival_s: arrival time in seconds from the trace's own origin.
        prompt_tokens: prompt length in tokens (>= 0).
        output_tokens: generated tokens (>= 0).
        block_hashes: ``np.ndarray[np.uint64]``, shape ``(num_blocks,)`` with
            ``num_blocks == ceil(prompt_tokens / block_size)``: one opaque id
            per prompt block, the trailing partial block included. Treat as
            read-only (it may be a view into a batch).
        block_size: tokens per block the ids were computed at.
        session_id: chat/session id when the trace has one (Bailian
            ``chat_id``), else None.
        parent_id: parent request's session id (Bailian ``parent_chat_id``;
            -1 in the file means none and is kept as -1), else None.
        turn: turn number within a session, else None.
        type: request type string (Bailian ``type``), else None.
        extra_keys: token traces only: the hash extra keys as sorted
            ``(name, value)`` pairs (``cache_salt``, ``lora_id``,
            ``mm_hashes``), already mixed into ``block_hashes``; else None.
    """

    request_id: int
    arrival_s: float
    prompt_tokens: int
    output_tokens: int
    block_hashes: np.ndarray
    block_size: int
    session_id: int | None = None
    parent_id: int | None = None
    turn: int | None = None
    type: str | None = None
    extra_keys: tuple | None = None

    @property
    def num_blocks(self) -> int:
        """Number of block hashes (partial last block included)."""
        return int(self.block_hashes.shape[0])


@dataclass(frozen=True, slots=True)
class RequestBatch:
    """A run of consecutive requests as numpy columns (for fast consumers).

    Attributes:
        first_request_id: ``request_id`` of row 0.
        block_size: tokens per block.
        arrival_s: float64, shape (n,), seconds.
        prompt_tokens: int64, shape (n,).
        output_tokens: int64, shape (n,).
        block_offsets: int64, shape (n + 1,); row i's ids are
            ``block_hashes[block_offsets[i]:block_offsets[i + 1]]``;
            ``block_offsets[0] == 0``.
        block_hashes: uint64, shape (block_offsets[-1],).
        session_id, parent_id, turn: int64, shape (n,), or None when the
            trace has no such column.
        type: tuple of n str (or None entries), or None.
        extra_keys: tuple of n ``Request.extra_keys`` values, or None.
    """

    first_request_id: int
    block_size: int
    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    block_offsets: np.ndarray
    block_hashes: np.ndarray
    session_id: np.ndarray | None = None
    parent_id: np.ndarray | None = None
    turn: np.ndarray | None = None
    type: tuple | None = None
    extra_keys: tuple | None = None

    def __len__(self) -> int:
        return int(self.arrival_s.shape[0])

    @property
    def num_blocks(self) -> np.ndarray:
        """int64, shape (n,): block hashes per request."""
        return np.diff(self.block_offsets)

    def requests(self) -> Iterator[Request]:
        """Yield the rows as :class:`Request` objects (ids are views)."""
        arr = self.arrival_s.tolist()
        pt = self.prompt_tokens.tolist()
        ot = self.output_tokens.tolist()
        off = self.block_offsets.tolist()
        sid = self.session_id.tolist() if self.session_id is not None else None
        par = self.parent_id.tolist() if self.parent_id is not None else None
        turn = self.turn.tolist() if self.turn is not None else None
        typ = self.type
        ext = self.extra_keys
        hashes = self.block_hashes
        bs = self.block_size
        rid = self.first_request_id
        for i in range(len(arr)):
            yield Request(
                rid + i, arr[i], pt[i], ot[i], hashes[off[i]:off[i + 1]], bs,
                None if sid is None else sid[i],
                None if par is None else par[i],
                None if turn is None else turn[i],
                None if typ is None else typ[i],
                None if ext is None else ext[i],
            )

    def with_first_id(self, first_request_id: int) -> "RequestBatch":
        """The same rows renumbered from ``first_request_id``."""
        return RequestBatch(first_request_id, self.block_size, self.arrival_s, self.prompt_tokens,
                            self.output_tokens, self.block_offsets, self.block_hashes,
                            self.session_id, self.parent_id, self.turn, self.type, self.extra_keys)


def _side_by_side(xs: list) -> np.ndarray | None:
    """One read-only view of the read-only 1-D arrays ``xs`` when they are views of one buffer lying side by side,
    in order (ids in an arena of the compiled twin: the JSONL chunks', :func:`pcs.trace.jsonfast.arena`, or a
    Parquet read's pieces', :class:`pcs.trace.parquet._IdRoom`), so that joining them copies nothing; else None.
    The view is of the buffer itself, as ``xs`` are, so views joined again join as a view.

    The buffer is each array's ``base`` -- or, for a buffer whose exports are counted (an arena has a
    ``bf_releasebuffer``: :mod:`pcs.trace.pool`'s exact check), the object of the ``memoryview`` that
    ``numpy.frombuffer`` keeps as ``base`` to hold its export, one per array."""
    base, dtype = _owner(xs[0]), xs[0].dtype
    if base is None or isinstance(base, np.ndarray):
        return None
    start = end = xs[0].__array_interface__["data"][0]
    for x in xs:
        if (_owner(x) is not base or x.dtype != dtype or x.ndim != 1 or x.flags.writeable
                or not x.flags.c_contiguous or x.__array_interface__["data"][0] != end):
            return None
        end += x.nbytes
    whole = np.frombuffer(base, dtype=np.uint8)
    if whole.flags.writeable:
        return None
    at = start - whole.__array_interface__["data"][0]    # a view of base itself, so a join of joins is a view too
    return np.frombuffer(base, dtype=dtype, count=(end - start) // dtype.itemsize, offset=at)


def _owner(x: np.ndarray) -> Any:
    """The object whose buffer ``numpy.frombuffer`` viewed for ``x``: ``x.base``, or its ``memoryview``'s object."""
    base = x.base
    return base.obj if isinstance(base, memoryview) else base


def join_hashes(xs: list) -> np.ndarray:
    """The block hashes of batches one after the other: a view when they lie side by side (:func:`_side_by_side`),
    else a copy."""
    joined = _side_by_side(xs) if len(xs) > 1 else None
    return np.concatenate(xs) if joined is None else joined


def concat_batches(batches: list[RequestBatch], block_size: int | None = None) -> RequestBatch:
    """One :class:`RequestBatch` holding all rows of ``batches`` in order (ids renumbered from 0).

    Optional columns are kept only when every batch has them. An empty list
    gives an empty batch at ``block_size`` (required then).

    Raises:
        UserError: empty list without ``block_size``, or batches of different block sizes.
    """
    if not batches:
        if block_size is None:
            raise UserError("concat_batches: no batches and no block_size")
        z = np.zeros(0, dtype=np.int64)
        return RequestBatch(0, block_size, np.zeros(0), z, z, np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.uint64))
    bs = batches[0].block_size
    if any(b.block_size != bs for b in batches):
        raise UserError("concat_batches: batches of different block sizes")

    def col(k):
        xs = [getattr(b, k) for b in batches]
        return None if any(x is None for x in xs) else np.concatenate(xs)

    def tup(k):
        xs = [getattr(b, k) for b in batches]
        return None if any(x is None for x in xs) else sum(xs, ())

    offs = np.zeros(sum(len(b) for b in batches) + 1, dtype=np.int64)
    np.cumsum(np.concatenate([b.num_blocks for b in batches]), out=offs[1:])
    return RequestBatch(0, bs, np.concatenate([b.arrival_s for b in batches]),
                        np.concatenate([b.prompt_tokens for b in batches]),
                        np.concatenate([b.output_tokens for b in batches]), offs,
                        join_hashes([b.block_hashes for b in batches]),
                        col("session_id"), col("parent_id"), col("turn"), tup("type"), tup("extra_keys"))
