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
- then its cacheable prompt ids and its decode-block hashes (``decode.get(r)``)
  are seen.

With no decode blocks it is exactly :func:`pcs.blocks.single_sequence_hits`.
Two routes give the same result (``tests/engine/test_decodescan.py``):
:func:`pcs.blocks.single_sequence_hits` with ``decode`` (a Python set, the reference) and
:func:`decode_aware_hits`, the sequential LRU scan's ``seen_decode`` run
(:class:`pcs.engine.lruscan.SequentialLru` fed each batch's decode ids, its compiled kernel
``pcs/engine/_lruscan.c`` or its Python mirror): the same hash probe per id as the other walks, so a
replay's one-pass scan (:func:`pcs.engine.fastpath.scan` with ``decode``) gives it beside them.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pcs.blocks import BlockRules, SingleSequenceResult
from pcs.engine.chunks import rule_columns
from pcs.engine.lruscan import SequentialLru
from pcs.trace.batches import as_batches

__all__ = ["decode_aware_hits"]


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
        UserError: as :func:`pcs.trace.batches.as_batches`; ``native="c"`` without the compiled kernel.
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
        dec = decode.arrays(first, m) if decode is not None else (np.zeros(m + 1, np.int64), np.zeros(0, np.uint64))
        seen = lru.feed(b.block_hashes, offsets, n, None, dec)[3]
        parts.append((_result(np.minimum(cap, seen), prompt, bs)))
        first += m
    return SingleSequenceResult(*(sum(getattr(p, k) for p in parts) for k in SingleSequenceResult.__slots__))
