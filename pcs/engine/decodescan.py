"""The decode-aware single-sequence scan: a request's cached output blocks count as seen after it.

The single-sequence ceiling (docs/semantics.md §12) replays the requests in
order through one infinite cache that keeps every cacheable *prompt* block.
Under the step scheduler with ``--cache-decode-blocks`` (docs/semantics.md
§9, "Decode blocks") a finished request also caches its full output blocks,
under the ids its next turn's chain has at those positions
(:class:`pcs.engine.turns.DecodeBlocks`), and a later request can hit them.
The decode-aware scan is the same walk with those ids added to the cache
right after the request's prompt blocks:

- request r looks up its first ``cacheable`` ids head to tail; its hit is the
  leading run already seen, capped at ``max_hit_blocks`` (§2, §4);
- then its cacheable prompt ids and its decode-block ids (``decode.get(r)``)
  are seen.

With no decode blocks it is exactly :func:`pcs.blocks.single_sequence_hits`.
Two routes give the same result (``tests/engine/test_decodescan.py``):
:func:`pcs.blocks.single_sequence_hits` with ``decode`` (a Python set, the reference) and
:func:`decode_aware_hits`, which feeds the sequential LRU scan
(:class:`pcs.engine.lruscan.SequentialLru`, its compiled kernel
``pcs/engine/_lruscan.c`` or its Python mirror) every request followed by a
row holding its decode-block ids (stamped, never counted), at 0 slots: its
``seen`` run is the walk above.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pcs.blocks import BlockRules, SingleSequenceResult
from pcs.engine.chunks import rule_columns
from pcs.engine.lruscan import SequentialLru
from pcs.trace.batches import as_batches

__all__ = ["decode_aware_hits"]


def _interleave(hashes: np.ndarray, offsets: np.ndarray, n: np.ndarray, d_off: np.ndarray,
                d_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """m requests as 2m rows: request r (its ids ``hashes[offsets[r]:offsets[r + 1]]``, ``n[r]`` cacheable)
    then a row of its decode ids (``d_ids[d_off[r]:d_off[r + 1]]``, all cacheable).

    Args: offsets int64 (m + 1,) from 0; n int64 (m,); d_off int64 (m + 1,) from 0.
    Returns: (ids uint64, offsets int64 (2m + 1,), cacheable int64 (2m,))."""
    m = n.shape[0]
    counts, dc = np.diff(offsets), np.diff(d_off)
    lens = np.empty(2 * m, np.int64)
    lens[0::2], lens[1::2] = counts, dc
    new_off = np.zeros(2 * m + 1, np.int64)
    np.cumsum(lens, out=new_off[1:])
    out = np.empty(int(new_off[-1]), np.uint64)
    out[np.repeat(new_off[0:-1:2] - offsets[:-1], counts) + np.arange(int(offsets[-1]), dtype=np.int64)] = hashes
    out[np.repeat(new_off[1::2] - d_off[:-1], dc) + np.arange(int(d_off[-1]), dtype=np.int64)] = d_ids
    nn = np.empty(2 * m, np.int64)
    nn[0::2], nn[1::2] = n, dc
    return out, new_off, nn


def _result(hits: np.ndarray, prompt: np.ndarray, bs: int) -> SingleSequenceResult:
    tokens = np.minimum(hits * bs, prompt)
    return SingleSequenceResult(int(tokens.sum()), int(prompt.sum()), int(hits.sum()), int((hits > 0).sum()),
                                int(prompt.shape[0]))


def decode_aware_hits(source: Any, rules: BlockRules, decode: Any, native: str | None = "auto"
                      ) -> SingleSequenceResult:
    """The decode-aware single-sequence hits of ``source`` (module docstring; docs/semantics.md §12, §17).

    Args:
        source: any source :func:`pcs.trace.batches.as_batches` reads (read once, batch by batch).
        rules: the run's block rules.
        decode: :class:`pcs.engine.turns.DecodeBlocks` of ``source`` (request indices in its trace order), or
            None (no decode blocks: the prompt-only ceiling).
        native: ``auto``, ``c``, ``python`` or None: the scan's kernel (:func:`pcs._native.resolve` of
            ``lruscan``); the same result.
    Returns:
        :class:`pcs.blocks.SingleSequenceResult` (token-weighted ``hit_ratio``). Cost: O(1) per id.
    Raises:
        ValueError: as :func:`pcs.trace.batches.as_batches`; ``native="c"`` without the compiled kernel.
    """
    lru = SequentialLru(0, native, False)
    first, parts = 0, []
    for b in as_batches(source):
        bs = int(b.block_size)
        prompt, output = np.asarray(b.prompt_tokens, np.int64), np.asarray(b.output_tokens, np.int64)
        offsets = np.asarray(b.block_offsets, np.int64)
        offsets = offsets - offsets[0]
        m = prompt.shape[0]
        n, cap, _ = rule_columns(prompt, np.diff(offsets), output, bs, rules)
        d_off, d_ids = decode.arrays(first, m) if decode is not None else (np.zeros(m + 1, np.int64),
                                                                          np.zeros(0, np.uint64))
        ids, off2, n2 = _interleave(np.asarray(b.block_hashes, np.uint64), offsets, n, d_off, d_ids)
        seen = lru.feed(ids, off2, n2)[1][0::2]
        parts.append((_result(np.minimum(cap, seen), prompt, bs)))
        first += m
    return SingleSequenceResult(*(sum(getattr(p, k) for p in parts) for k in SingleSequenceResult.__slots__))
