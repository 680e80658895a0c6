"""Decode blocks the next turn reuses: which later request of a conversation contains a request's output.

A request's output tokens fill KV blocks while it decodes. vLLM hashes a
block when it is full and keeps it cached after the request ends, so the
next turn of a conversation -- whose prompt is the previous prompt, the
answer and a new message -- hits them. A trace of hash ids does not say
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

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pcs.trace.batches import as_batches

__all__ = ["DecodeBlocks", "decode_blocks", "DETECT_SHARE"]

#: Share of requests with a next turn above which decode blocks are cached by default.
DETECT_SHARE = 0.01


@dataclass(slots=True)
class DecodeBlocks:
    """The decode-block ids of each request that has a next turn.

    Attributes:
        hashes: request index (trace order, from 0) -> its decode blocks' ids (python ints), chain order.
        requests: requests in the trace.
        pairs: requests with a next turn (some may get no id: the next turn's chain is too short).
    """

    hashes: dict = field(default_factory=dict)
    requests: int = 0
    pairs: int = 0

    def get(self, index: int) -> list:
        """The decode-block ids of request ``index`` ([] when none)."""
        return self.hashes.get(index, [])

    @property
    def detected(self) -> bool:
        """Next turns contain previous turns: pairs for at least :data:`DETECT_SHARE` of the requests."""
        return self.pairs > 0 and self.pairs >= DETECT_SHARE * self.requests


def _keys(source: Any) -> tuple[dict, int, np.ndarray]:
    """Pass 1: last full prompt block id -> [(index, f, p, o)] of the requests that take part, the request count and
    the sorted distinct ids."""
    by_key: dict[int, list] = {}
    n = 0
    for b in as_batches(source):
        bs = int(b.block_size)
        p = b.prompt_tokens.astype(np.int64)
        f = p // bs
        nh = np.diff(b.block_offsets.astype(np.int64))
        rows = np.nonzero((f >= 1) & (nh >= f))[0]
        keys = b.block_hashes[b.block_offsets[:-1][rows] + f[rows] - 1].tolist()
        for r, key, fr, pr, orow in zip(rows.tolist(), keys, f[rows].tolist(), p[rows].tolist(),
                                        b.output_tokens[rows].tolist()):
            by_key.setdefault(key, []).append((n + r, fr, pr, int(orow)))
        n += len(p)
    return by_key, n, np.unique(np.fromiter(by_key.keys(), dtype=np.uint64, count=len(by_key)))


def decode_blocks(source: Any) -> DecodeBlocks:
    """Find every request's next turn and its decode blocks' ids (the rule in the module docstring).

    Two reads of ``source`` (any source :func:`pcs.trace.batches.as_batches`
    reads); memory: one entry per request that takes part.
    """
    by_key, n, keys = _keys(source)
    out = DecodeBlocks(requests=n)
    first = 0
    for b in as_batches(source):
        bs = int(b.block_size)
        hashes, off = b.block_hashes, b.block_offsets.astype(np.int64)
        pos = np.nonzero(np.isin(hashes, keys))[0]
        if len(pos):
            rows = np.searchsorted(off, pos, side="right") - 1
            p = b.prompt_tokens.astype(np.int64)
            cacheable = np.minimum(p // bs, np.diff(off))
            for q, r in zip(pos.tolist(), rows.tolist()):
                _resolve(out, by_key, int(hashes[q]), q - int(off[r]), first + r, int(p[r]), hashes,
                         int(off[r]), int(cacheable[r]), bs)
        first += len(b.prompt_tokens)
    return out


def _resolve(out: DecodeBlocks, by_key: dict, key: int, j: int, b_index: int, p_b: int, hashes: np.ndarray,
             b_off: int, b_cacheable: int, bs: int) -> None:
    """Request ``b_index`` holds ``key`` at position ``j``: it is the next turn of every earlier, unresolved
    request with that last full block at that position whose prompt and output it can hold."""
    waiting = by_key.get(key)
    if not waiting:
        return
    keep = []
    for entry in waiting:
        a, f, p, o = entry
        if a < b_index and f == j + 1 and p_b >= p + o:
            out.pairs += 1
            end = min((p + o - 1) // bs, b_cacheable)
            if end > f:
                out.hashes[a] = hashes[b_off + f:b_off + end].tolist()
        else:
            keep.append(entry)
    if len(keep) != len(waiting):
        by_key[key] = keep
