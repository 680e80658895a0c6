"""Turn any request source into columnar chunks of python lists for the replay loop.

Sources: a path or :class:`pcs.trace.Trace` (read with ``iter_batches``), or
any iterable of request-like objects (``prompt_tokens``, ``output_tokens``,
``arrival_s``, ``block_size``, ``block_hashes`` np.uint64 array). Per-request
rule arithmetic (cacheable blocks, hit cap, extra running blocks) and the
prefill-time tables are computed with numpy once per chunk, so the per-request
loop reads python ints and floats only and the per-block loop touches python
ints from one ``tolist()`` per chunk.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator

import numpy as np

from pcs.blocks import BlockRules

__all__ = ["Chunk", "iter_chunks", "rule_columns", "CHUNK_REQUESTS"]

#: Requests per chunk when grouping an iterable of Request objects.
CHUNK_REQUESTS = 4096


@dataclass(slots=True)
class Chunk:
    """A run of consecutive requests as python lists (one entry per request unless noted).

    Attributes:
        first_request_id: request id of row 0.
        block_size: tokens per block.
        arrival_s: floats, seconds.
        prompt_tokens, output_tokens: ints.
        cacheable: ints, ``BlockRules.cacheable_blocks``.
        cap: ints, ``BlockRules.max_hit_blocks``.
        extra_blocks: ints, ``ceil((prompt + output) / block_size) - cacheable``
            (>= 0): slots a running request holds beyond its cacheable blocks.
        offsets: ints, len n + 1: row i's ids are ``hashes[offsets[i]:offsets[i + 1]]``.
        hashes: ints, all block ids of the chunk.
        prefill_s: floats, flat: row i's prefill seconds with h hit blocks is
            ``prefill_s[prefill_offsets[i] + h]`` for 0 <= h <= cap[i] (filled by
            the timing model; empty when there is none).
        prefill_offsets: ints, len n + 1.
        decode_s: floats, seconds of all decode steps of row i.
    """

    first_request_id: int
    block_size: int
    arrival_s: list
    prompt_tokens: list
    output_tokens: list
    cacheable: list
    cap: list
    extra_blocks: list
    offsets: list
    hashes: list
    prefill_s: list
    prefill_offsets: list
    decode_s: list

    def __len__(self) -> int:
        return len(self.arrival_s)


def rule_columns(prompt_tokens: np.ndarray, num_hashes: np.ndarray, output_tokens: np.ndarray,
                 block_size: int, rules: BlockRules) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised ``BlockRules``: (cacheable, cap, extra_blocks), int64 arrays of shape (n,).

    Same arithmetic as :meth:`BlockRules.cacheable_blocks` and
    :meth:`BlockRules.max_hit_blocks` (checked element-wise in the tests).
    """
    p = prompt_tokens.astype(np.int64)
    nh = num_hashes.astype(np.int64)
    n = nh.copy() if rules.cache_partial_blocks else np.minimum(p // block_size, nh)
    cap = np.maximum(0, np.minimum(n, (p - 1) // block_size)) if rules.recompute_last_token else n.copy()
    total = -(-(p + output_tokens.astype(np.int64)) // block_size)
    extra = np.maximum(0, total - n)
    return n, cap, extra


def _from_columns(first_id: int, bs: int, arrival, prompt, output, offsets, hashes, rules: BlockRules,
                  timing: Any) -> Chunk:
    n, cap, extra = rule_columns(prompt, np.diff(offsets), output, bs, rules)
    if timing is not None:
        pre, pre_off, dec = timing.tables(prompt, output, cap, bs)
    else:
        pre, pre_off, dec = [], [], []
    return Chunk(first_id, bs, arrival.tolist(), prompt.tolist(), output.tolist(), n.tolist(), cap.tolist(),
                 extra.tolist(), offsets.tolist(), hashes.tolist(), pre, pre_off, dec)


def _group(requests: Iterable) -> Iterator[list]:
    buf: list = []
    for r in requests:
        buf.append(r)
        if len(buf) == CHUNK_REQUESTS:
            yield buf
            buf = []
    if buf:
        yield buf


def iter_chunks(source: Any, rules: BlockRules, timing: Any = None) -> Iterator[Chunk]:
    """Yield :class:`Chunk` s of ``source`` in order.

    Args:
        source: a Trace (anything with ``iter_batches``) or an iterable of
            request-like objects.
        rules: block rules for the cacheable/cap columns.
        timing: object with ``tables(prompt, output, cap, block_size)`` (see
            :class:`pcs.engine.engine.TimeModel`), or None for no times.
    Raises:
        ValueError: block sizes differ between requests, or negative token counts.
    """
    block_size = None
    next_id = 0

    def check_bs(bs: int) -> int:
        nonlocal block_size
        if block_size is None:
            if bs < 1:
                raise ValueError(f"block size must be >= 1 token, got {bs}")
            block_size = bs
        elif bs != block_size:
            raise ValueError(f"all requests of a replay need one block size; got {block_size} and {bs}")
        return bs

    if hasattr(source, "iter_batches"):
        for b in source.iter_batches():
            bs = check_bs(int(b.block_size))
            yield _from_columns(next_id, bs, b.arrival_s, b.prompt_tokens, b.output_tokens, b.block_offsets,
                                b.block_hashes, rules, timing)
            next_id += len(b)
        return
    for group in _group(source):
        bs = check_bs(int(group[0].block_size))
        for r in group:
            if int(r.block_size) != bs:
                check_bs(int(r.block_size))
        counts = np.fromiter((len(r.block_hashes) for r in group), dtype=np.int64, count=len(group))
        offsets = np.zeros(len(group) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        hashes = (np.concatenate([np.asarray(r.block_hashes, dtype=np.uint64) for r in group])
                  if int(offsets[-1]) else np.zeros(0, dtype=np.uint64))
        arrival = np.array([float(r.arrival_s) for r in group], dtype=np.float64)
        prompt = np.array([int(r.prompt_tokens) for r in group], dtype=np.int64)
        output = np.array([int(getattr(r, "output_tokens", 0)) for r in group], dtype=np.int64)
        if (prompt < 0).any() or (output < 0).any():
            raise ValueError("token counts must be >= 0")
        yield _from_columns(next_id, bs, arrival, prompt, output, offsets, hashes, rules, timing)
        next_id += len(group)
