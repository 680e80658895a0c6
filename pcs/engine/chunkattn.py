"""Windowed, chunked and linear prefill attention as terms the compiled step loop sums (``docs/semantics.md §10``).

A model whose prefill attention is not plain causal pairs (``StepCost.attn_pair_s`` None: a sliding window,
chunked local attention, DeepSeek's top-k, a linear-attention state) has ``StepCost.chunk_attn_s(n, c) =
model.attention_flops(n, c) / flops_per_s`` (:class:`pcs.compute._ChunkAttention`), the sum over the model's
components in their order (:meth:`pcs.model.spec.ModelSpec.attention_flops`). Each component's FLOPs are
``coef x pairs(n, c)`` with pairs one of :func:`pcs.model.components.causal_pairs`, ``windowed_pairs(W)``,
``chunked_pairs(C)`` or ``n`` (:class:`pcs.model.state.RecurrentState`), and ``coef`` is the component's FLOPs
at ``(n, c) = (1, 0)`` (every pairs function is 1 there, so ``coef`` is exact). :func:`chunk_terms` gives the
terms to ``pcs/engine/_stepsched.c`` (``set_chunk_attention``), which sums them in numpy's floating-point order,
after checking each term against its component at probe points (bit-equal, or no terms: the Python loop runs).
"""
from __future__ import annotations

import numpy as np

__all__ = ["chunk_terms", "CAUSAL", "WINDOW", "CHUNK", "LINEAR"]

#: term kinds (pcs/engine/_stepsched.c: enum PK_*)
CAUSAL, WINDOW, CHUNK, LINEAR = 0, 1, 2, 3
#: (new, cached) tokens where each term is checked against its component's ``attention_flops``
_PROBES = ((1, 0), (7, 0), (127, 1), (128, 128), (129, 1000), (512, 4096), (3000, 12345), (8192, 131072),
           (1, 2_000_000), (100_000, 3_000_000))


def _kind(component) -> tuple[int, float] | None:
    """(kind, window or chunk tokens) of a component by its class (pcs/model/components.py, mla.py, state.py)."""
    name = type(component).__name__
    if name in ("FullAttention", "IndexerKeys"):
        return CAUSAL, 0.0
    if name == "SlidingWindow":
        return WINDOW, float(component.window_tokens)
    if name == "ChunkedLocalAttention":
        return CHUNK, float(component.chunk_tokens)
    if name == "MLALatent":
        return (CAUSAL, 0.0) if component.topk is None else (WINDOW, float(component.topk))
    if name == "RecurrentState":
        return LINEAR, 0.0
    return None


def _pairs(kind: int, n: float, c: float, p: float) -> float:
    """The pairs of one term, as _stepsched.c's term_pairs computes them (the check's side)."""
    if kind == CAUSAL:
        return n * c + n * (n + 1.0) / 2.0
    if kind == LINEAR:
        return n + 0.0 * c

    def s(m: float) -> float:
        if kind == WINDOW:
            a = m if m < p else p
            return a * (a + 1.0) / 2.0 + (m - a) * p
        r = float(np.fmod(m, p))
        q = (m - r) / p
        return q * p * (p + 1.0) / 2.0 + r * (r + 1.0) / 2.0

    return s(c + n) - s(c)


def chunk_terms(cost) -> tuple[list[tuple[int, float, float]], float] | None:
    """``([(kind, coef FLOPs, window or chunk tokens)], flops_per_s)`` of ``cost.chunk_attn_s``, or None.

    Args:
        cost: a :class:`pcs.compute.StepCost`.
    Returns:
        None when the prefill attention is plain (``attn_pair_s`` set), ``chunk_attn_s`` is not the model's
        own ``attention_flops`` (:class:`pcs.compute._ChunkAttention`), a component is of a kind not listed in
        the module docstring, or a term differs from its component at a probe point (bit for bit).
    """
    fn = cost.chunk_attn_s
    if cost.attn_pair_s is not None or type(fn).__name__ != "_ChunkAttention":
        return None
    comps = getattr(fn.model, "components", None)
    if not comps or len(comps) > 8:
        return None
    terms = []
    for comp in comps:
        kp = _kind(comp)
        if kp is None:
            return None
        coef = float(comp.attention_flops(1, 0))
        if any(float(comp.attention_flops(n, c)) != coef * _pairs(kp[0], float(n), float(c), kp[1])
               for n, c in _PROBES):
            return None
        terms.append((kp[0], coef, kp[1]))
    return terms, float(fn.flops_per_s)
