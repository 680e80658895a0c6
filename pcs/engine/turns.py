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

import heapq
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


def _batch_columns(b) -> tuple:
    """Per-request columns of one batch: (offsets, prompt, output, f = full prompt blocks, cacheable), int64."""
    bs = int(b.block_size)
    off = b.block_offsets.astype(np.int64)
    p = b.prompt_tokens.astype(np.int64)
    nh = np.diff(off)
    return off, p, b.output_tokens.astype(np.int64), p // bs, np.minimum(p // bs, nh), nh


def decode_blocks(source: Any) -> DecodeBlocks:
    """Find every request's next turn and its decode blocks' ids (the rule in the module docstring).

    One read of ``source`` (any source :func:`pcs.trace.batches.as_batches`
    reads), in trace order: request B first resolves the earlier requests
    still waiting for a next turn whose last full prompt block B holds at the
    same position (``waiting[(id, f)]``, a heap on ``p + o`` so every A with
    ``p + o <= p_B`` comes off at once), then waits for its own. Memory: one
    entry per request that takes part and has no next turn yet.
    """
    out = DecodeBlocks()
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
        _walk(out, waiting, n, bs, hashes, off.tolist(), p.tolist(), o.tolist(), f.tolist(), cacheable.tolist(),
              pos.tolist(), rows.tolist(), regs.tolist(), reg_keys.tolist(), hashes[pos].tolist())
        n += len(p)
    out.requests = n
    return out


def _walk(out: DecodeBlocks, waiting: dict, first: int, bs: int, hashes: np.ndarray, off: list, p: list, o: list,
          f: list, cacheable: list, pos: list, rows: list, regs: list, reg_keys: list, at_pos: list) -> None:
    """One batch in trace order: each row resolves at its candidate positions (``at_pos``: the ids there, python
    ints), then registers (if it takes part)."""
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


def _resolve(out: DecodeBlocks, heap: list, p_b: int, hashes: np.ndarray, b_off: int, b_cacheable: int,
             bs: int) -> None:
    """Request B (prompt ``p_b``) holds the heap's id at the heap's position: it is the next turn of every
    waiting request whose prompt and output it can hold (``p + o <= p_b``)."""
    while heap and heap[0][0] <= p_b:
        _, a, f, p, o = heapq.heappop(heap)
        out.pairs += 1
        end = min((p + o - 1) // bs, b_cacheable)
        if end > f:
            out.hashes[a] = hashes[b_off + f:b_off + end].tolist()
