"""Prefill and decode seconds per request, computed a chunk at a time for the replay loop.

The compute model (:class:`pcs.compute.ComputeModel`, or measured points) is
called once per chunk with numpy arrays; the event loop reads python floats.
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["TimeModel"]


class TimeModel:
    """Prefill and decode seconds from a compute model, vectorised once per chunk.

    Args:
        compute: object with numpy-broadcastable ``prefill_s(new_tokens,
            cached_tokens)`` and ``decode_s_per_token(context_tokens)``
            (:class:`pcs.compute.ComputeModel`, or ``MeasuredPrefill`` plus a
            decode function).
    """

    def __init__(self, compute: Any) -> None:
        self.compute = compute
        self._decode: dict[int, float] = {}

    def tables(self, prompt: np.ndarray, output: np.ndarray, cap: np.ndarray, block_size: int,
               decode: bool = True, arrays: bool = False):
        """(prefill table, its offsets, decode seconds) as python lists for one chunk.

        Row i's table holds ``prefill_s(P - min(h*bs, P), min(h*bs, P))`` for
        h = 0 .. cap[i] hit blocks; decode seconds are
        ``output x decode_s_per_token(prompt + output // 2)`` (per-token times
        are memoised by context: the same context gives the same time), or []
        with ``decode=False`` (the step scheduler times decode steps itself).
        ``arrays=True`` (with ``decode=False``): the table as float64 and its
        offsets as int64 numpy arrays instead of lists.
        """
        m = len(prompt)
        counts = cap.astype(np.int64) + 1
        offsets = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        row = np.repeat(np.arange(m), counts)
        h = np.arange(int(offsets[-1]), dtype=np.int64) - offsets[:-1][row]
        p = prompt.astype(np.int64)[row]
        cached = np.minimum(h * block_size, p)
        pre = np.broadcast_to(np.asarray(self.compute.prefill_s(p - cached, cached), dtype=np.float64), (len(h),))
        if not decode:
            return (np.ascontiguousarray(pre), offsets, []) if arrays else (pre.tolist(), offsets.tolist(), [])
        out = output.astype(np.int64)
        ctx = (prompt.astype(np.int64) + out // 2).tolist()
        memo = self._decode
        todo = sorted({c for c in ctx if c not in memo})
        if todo:
            per = np.broadcast_to(np.asarray(self.compute.decode_s_per_token(np.array(todo, dtype=np.int64)),
                                             dtype=np.float64), (len(todo),))
            memo.update(zip(todo, per.tolist()))
        return pre.tolist(), offsets.tolist(), [o * memo[c] for o, c in zip(out.tolist(), ctx)]
