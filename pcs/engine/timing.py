"""Prefill and decode seconds per request, computed a chunk at a time for the replay loop.

The compute model (:class:`pcs.compute.ComputeModel`, or measured points) is
called once per chunk with numpy arrays; the event loop reads python floats.
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from pcs import _native
from pcs.compute import ComputeModel
from pcs.model.components import FullAttention
from pcs.model.spec import ModelSpec

__all__ = ["TimeModel", "causal_terms", "prefill_table_numpy"]


#: prefill-table entries per slice (:meth:`TimeModel._prefill_table`): 32 k float64 = 256 kB per temporary.
_SLICE = 1 << 15


def _counted(compute: Any, prompt: np.ndarray):
    """``compute.prefill_s_of_counts`` when ``compute`` is a :class:`pcs.compute.ComputeModel` whose
    ``prefill_s`` and ``prefill_flops`` are the class's own (what that method mirrors) and every count of the
    chunk is exact in float64 (``prompt`` below 2**53), else None (``prefill_s`` with int64 arrays)."""
    cls = type(compute)
    if (not isinstance(compute, ComputeModel) or cls.prefill_s is not ComputeModel.prefill_s
            or cls.prefill_flops is not ComputeModel.prefill_flops or (len(prompt) and int(prompt.max()) >= 1 << 53)):
        return None
    return compute.prefill_s_of_counts


class TimeModel:
    """Prefill and decode seconds from a compute model, vectorised once per chunk.

    Args:
        compute: object with numpy-broadcastable ``prefill_s(new_tokens,
            cached_tokens)`` and ``decode_s_per_token(context_tokens)``
            (:class:`pcs.compute.ComputeModel`, or ``MeasuredPrefill`` plus a
            decode function).
        native: ``auto``, ``c``, ``python`` or None (:func:`pcs._native.resolve`, twin ``prefill``): whether the
            prefill tables :func:`causal_terms` covers are made by ``pcs/engine/_prefill.c`` or by
            :func:`prefill_table_numpy` (the same values).
    Raises:
        UserError: (at the first table) ``native="c"`` without the compiled twin.
    """

    def __init__(self, compute: Any, native: str | None = None) -> None:
        self.compute = compute
        self.native = native
        self._decode: dict[int, float] = {}
        self._terms: tuple | None = None     # causal_terms of compute, () when it has none (read once)

    def tables(self, prompt: np.ndarray, output: np.ndarray, cap: np.ndarray, block_size: int,
               decode: bool = True, arrays: bool = False, out: np.ndarray | None = None):
        """(prefill table, its offsets, decode seconds) as python lists for one chunk.

        Row i's table holds ``prefill_s(P - min(h*bs, P), min(h*bs, P))`` for
        h = 0 .. cap[i] hit blocks; decode seconds are
        ``output x decode_s_per_token(prompt + output // 2)`` (per-token times
        are memoised by context: the same context gives the same time), or []
        with ``decode=False`` (the step scheduler times decode steps itself).
        ``arrays=True`` (with ``decode=False``): the table as float64 and its
        offsets as int64 numpy arrays instead of lists; ``out`` (float64, contiguous, at least the table's
        length): the table is written into its first entries and is a view of them (the table of joined
        batches made in place, :class:`pcs.engine.chunks.ChunkPieces`).
        """
        m = len(prompt)
        counts = cap.astype(np.int64, copy=False) + 1
        offsets = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        # prompt as int64, no copy when it is one: the table's makers only read it
        pre = self._prefill_table(prompt.astype(np.int64, copy=False), counts, offsets, block_size, out)
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

    def _prefill_table(self, prompt: np.ndarray, counts: np.ndarray, offsets: np.ndarray, block_size: int,
                       out: np.ndarray | None = None) -> np.ndarray:
        """The rows of :meth:`tables` (float64, shape (offsets[-1],); with ``out``, a view of its first entries),
        in one compiled pass (``pcs/engine/_prefill.c``) when :func:`causal_terms` describes the compute model, else
        :func:`prefill_table_numpy` (the reference; the same values, tests/engine/test_prefill_table.py)."""
        if self._terms is None:
            self._terms = causal_terms(self.compute) or ()
        exact = not len(prompt) or int(prompt.max()) < 1 << 53      # token counts exact in float64
        total = int(offsets[-1])
        if self._terms and exact and _native.resolve(self.native, "prefill") == "c":
            pre = np.empty(total, dtype=np.float64) if out is None else out[:total]
            _native.module("prefill").prefill_table(pre, np.ascontiguousarray(prompt, dtype=np.int64),
                                                    np.ascontiguousarray(offsets, dtype=np.int64), int(block_size),
                                                    *self._terms)
            return pre
        pre = prefill_table_numpy(self.compute, prompt, counts, offsets, block_size)
        if out is None:
            return pre
        out[:total] = pre
        return out[:total]


def causal_terms(compute: Any) -> tuple[float, float, tuple[float, ...]] | None:
    """(a2, flops_per_s, ks) when ``compute`` is a :class:`pcs.compute.ComputeModel` using the class's own prefill
    methods (as :func:`_counted`; the caller checks the counts are below 2**53) over a :class:`pcs.model.spec.ModelSpec` whose every component's attention FLOPs are
    ``k x causal_pairs(n, c)`` (:class:`~pcs.model.components.FullAttention`, dense
    :class:`~pcs.model.mla.MLALatent`, :class:`~pcs.model.mla.IndexerKeys`), else None. Then
    ``prefill_s(n, c) = (a2 n + sum_j ks[j] causal_pairs(n, c)) / flops_per_s`` with a2 = 2 x active_params
    (:meth:`pcs.compute.ComputeModel.prefill_flops`), each k read exactly as ``attention_flops(1, 0)``
    (causal_pairs(1, 0) = 1), the terms summed in the components' order (:meth:`ModelSpec.attention_flops`)."""
    mla = sys.modules.get("pcs.model.mla")   # not loaded (pcs.model.hfconfig loads it for MLA models): none here
    kinds = (FullAttention,) if mla is None else (FullAttention, mla.IndexerKeys, mla.MLALatent)

    cls = type(compute)
    if not isinstance(compute, ComputeModel) or any(getattr(cls, f) is not getattr(ComputeModel, f) for f in
                                                    ("prefill_s", "prefill_flops", "_flops", "prefill_s_of_counts")):
        return None
    model = compute.model
    if type(model) is not ModelSpec or not 0 < len(model.components) <= 16:
        return None
    if any(type(c) not in kinds or getattr(c, "topk", None) is not None
           for c in model.components):
        return None
    one, zero = np.float64(1.0), np.float64(0.0)
    ks = tuple(float(c.attention_flops(one, zero)) for c in model.components)
    return float(2.0 * model.active_params), float(compute.flops_per_s), ks


def prefill_table_numpy(compute: Any, prompt: np.ndarray, counts: np.ndarray, offsets: np.ndarray,
                        block_size: int) -> np.ndarray:
    """:meth:`TimeModel._prefill_table` in numpy (the reference of ``pcs/engine/_prefill.c``, and the code for
    compute models it does not cover): ``prefill_s`` is element-wise, so it runs on slices of about
    :data:`_SLICE` entries (whole rows) into one output array -- temporaries that stay in cache instead of a dozen
    arrays of the whole table. A compute model with ``prefill_s_of_counts``
    (:meth:`pcs.compute.ComputeModel.prefill_s_of_counts`) gets the token counts as float64 (whole numbers below
    2**53: the same values as int64 converted) and skips the checks they cannot fail; any other gets int64
    arrays through ``prefill_s``.
    """
    total, m = int(offsets[-1]), len(prompt)
    pre = np.empty(total, dtype=np.float64)
    cuts = np.searchsorted(offsets, np.arange(0, total, _SLICE), side="right") - 1  # ascending: drop repeats
    cuts = cuts[np.concatenate(([True], cuts[1:] != cuts[:-1]))] if total else []  # (np.unique loads numpy.ma)
    bounds = [*(int(c) for c in cuts), m]
    counted = _counted(compute, prompt)
    dt = np.float64 if counted is not None else np.int64
    for i0, i1 in zip(bounds[:-1], bounds[1:]):
        o0, o1 = int(offsets[i0]), int(offsets[i1])
        reps = counts[i0:i1]
        h = np.arange(o1 - o0, dtype=dt) - np.repeat((offsets[i0:i1] - o0).astype(dt), reps)
        p = np.repeat(prompt[i0:i1].astype(dt), reps)
        cached = np.minimum(h * block_size, p)
        out = counted(p - cached, cached) if counted is not None else compute.prefill_s(p - cached, cached)
        pre[o0:o1] = np.broadcast_to(np.asarray(out, dtype=np.float64), (o1 - o0,))
    return pre
