"""How long prefill and decode take: an analytic model, or measured points.

Prefill of ``n`` new tokens after ``c`` cached tokens (tensor parallel over
``tp`` GPUs)::

    FLOPs     = 2 x active_params x n + model.attention_flops(n, c)
    prefill_s = FLOPs / (tp x peak_flops x utilisation)

2 FLOPs per parameter per token is the matmul count of a forward pass (Kaplan
et al. 2020, "Scaling Laws for Neural Language Models", section 2.1: C_forward
~ 2N); the attention term (score and value products, growing with n x (c + n/2),
windows respected) comes from the model spec. Kaplan's N excludes the embeddings,
and vLLM computes logits only at the positions it samples (a prefill's last token);
``active_params`` counts the input embedding (a lookup, no matmul) and the LM head,
so pcs charges both on every prompt token: the prefill time is an UPPER BOUND by the
embedding and LM-head share (docs/semantics.md §10). llama-3.1-8b, 8,192 tokens, one
H100 (989.4 TFLOP/s dense bf16), MFU 0.5: (2 x 8,030,261,248 x 8,192 + 4 x 128 x 32
x 32 x 8,192 x 8,193 / 2) / 494.7e12 = 301.5 ms, against 266.7 ms with Kaplan's
non-embedding N (8,030,261,248 - 2 x 128,256 x 4,096 = 6,979,588,096) and the LM
head (2 x 525,336,576 FLOPs) on the last token only: 11.5 % lower (pcs x1.130);
llama-3.1-70b 2.51 s against 2.44 s, 2.8 % lower. The rule is kept (every T_full and
replay time rests on it); calibrate with measured points (:class:`MeasuredPrefill`). ``peak_flops`` is the GPU's DENSE
tensor-core peak for the compute dtype (:mod:`pcs.hardware`).

Default utilisation (model FLOPs utilisation, MFU) = 0.5. Source and reasoning:
Pope et al. 2023, "Efficiently Scaling Transformer Inference" (MLSys), reach
76 % MFU for large-batch prefill on TPU v4, the best published case; GPU serving
stacks running single prompts of a few thousand tokens (kernel launch, norms,
all-reduce under TP) sit well below that, and 0.4-0.6 is the range commonly
used for prefill estimates. 0.5 is that middle; for decisions, calibrate with
measured points (:class:`MeasuredPrefill`).

Decode of one token at context ``c`` is memory bound (single sequence, batch 1)::

    memory_s  = (active_params x weight_dtype_bytes / tp + KV bytes read per rank) / hbm_bps
    compute_s = (2 x active_params + attention_flops(1, c)) / (tp x peak x utilisation)
    decode_s  = max(memory_s, compute_s)

Only the active parameters are read at batch 1 (for MoE: the routed experts);
the KV bytes read are what the allocator holds for the sequence on one rank
(``pcs.model.reserved_bytes`` of ``model.with_tp(tp)``) unless a
``kv_read_bytes`` function is given. HBM bandwidth is the datasheet peak, so
decode_s is a lower bound.

A continuous-batching step (:class:`StepCost`, ``ComputeModel.step_cost()``;
``docs/semantics.md §10``) runs prefill chunks and one decode token per
running sequence together; its time is the roofline of the whole batch::

    memory_s  = weights read once + KV read of every sequence in the step
    compute_s = 2 x active_params x tokens + attention FLOPs, / (tp x peak x utilisation)
    step_s    = max(memory_s, compute_s)

so a lone prefill costs what ``prefill_s`` says (compute bound) and a decode
batch is memory bound until its tokens' matmuls outweigh the weight read.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

import numpy as np

from pcs import units
from pcs.units import format_counted, plural
from pcs.errors import InputError, UserError, quoted, shown_repr
from pcs.hardware import MIN_FLOPS, GPUSpec
from pcs._dataclass import dataclass

__all__ = ["DEFAULT_UTILISATION", "ComputeModel", "MeasuredPrefill", "StepCost"]

#: Default prefill MFU (see the module docstring for the source).
DEFAULT_UTILISATION = 0.5


def _as_tokens(value: Any, what: str) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise UserError(f"{what} must be finite and >= 0, got {shown_repr(value)}")
    return arr


def _out(arr: np.ndarray) -> float | np.ndarray:
    return float(arr) if arr.ndim == 0 else arr


@dataclass(frozen=True, slots=True)
class ComputeModel:
    """Analytic prefill and decode time of a model on ``tp`` GPUs.

    Attributes:
        model: a ModelSpec (``active_params``, ``weight_dtype_bytes``,
            ``attention_flops(n, c)``, ``with_tp``) or a preset name.
        gpu: the GPU's figures (:class:`pcs.hardware.GPUSpec`) or a preset name.
        tp: tensor-parallel size (int >= 1): FLOPs and weights split evenly.
        utilisation: MFU in (0, 1]; default :data:`DEFAULT_UTILISATION`.
        dtype: compute dtype selecting the peak: "bf16" (or "fp16") or "fp8".
        kv_read_bytes: function context_tokens -> KV bytes one rank reads per
            decode step; None uses ``pcs.model.reserved_bytes``.
        block_size: tokens per KV block for the default ``kv_read_bytes``.
    Raises:
        UserError: tp < 1, utilisation outside (0, 1], unknown dtype, fp8
            on a GPU without FP8, or utilisation x peak below :data:`pcs.hardware.MIN_FLOPS` x 0.001.
    """

    model: Any
    gpu: GPUSpec
    tp: int = 1
    utilisation: float = DEFAULT_UTILISATION
    dtype: str = "bf16"
    kv_read_bytes: Callable[[int], int] | None = None
    block_size: int = 16

    def __post_init__(self) -> None:
        if isinstance(self.model, str):  # a preset name, as the CLI accepts
            from pcs.model import get_model

            object.__setattr__(self, "model", get_model(self.model))
        if isinstance(self.gpu, str):
            from pcs.hardware import get_gpu

            object.__setattr__(self, "gpu", get_gpu(self.gpu))
        if isinstance(self.tp, bool) or not isinstance(self.tp, int) or self.tp < 1:
            raise UserError(f"tensor-parallel size must be an int >= 1, got {shown_repr(self.tp)}")
        if not (isinstance(self.utilisation, (int, float)) and 0 < self.utilisation <= 1):
            raise UserError(f"utilisation must be in (0, 1], got {shown_repr(self.utilisation)}")
        peak = self.gpu.peak_flops(self.dtype)  # validates dtype and FP8 support
        low = MIN_FLOPS * 1e-3          # the hardware's lowest peak at 0.1 % utilisation
        if peak * self.utilisation < low:
            raise UserError(f"utilisation= {self.utilisation:g} x {self.gpu.name}'s {self.dtype} peak "
                            f"{peak:g} FLOP/s is {peak * self.utilisation:g} FLOP/s, below {low:g} (pcs's bound: "
                            "pcs.hardware.MIN_FLOPS x 0.001; a token's time would be absurd or overflow)")

    @property
    def flops_per_s(self) -> float:
        """Sustained FLOP/s of the TP group: tp x dense peak x utilisation."""
        return self.tp * self.gpu.peak_flops(self.dtype) * self.utilisation

    def prefill_flops(self, new_tokens: Any, cached_tokens: Any = 0) -> float | np.ndarray:
        """2 x active_params x n + attention_flops(n, c); numpy-broadcastable, float64."""
        n = _as_tokens(new_tokens, "new tokens")
        c = _as_tokens(cached_tokens, "cached tokens")
        return _out(self._flops(n, c))

    def _flops(self, n: np.ndarray, c: np.ndarray) -> np.ndarray:
        """:meth:`prefill_flops` of float64 arrays, unchecked."""
        attn = np.asarray(self.model.attention_flops(n, c), dtype=np.float64)
        return 2.0 * self.model.active_params * n + attn

    def prefill_s(self, new_tokens: Any, cached_tokens: Any = 0) -> float | np.ndarray:
        """Seconds to prefill ``new_tokens`` after ``cached_tokens``; numpy-broadcastable.

        Raises:
            UserError: negative or non-finite token counts.
        """
        return _out(np.asarray(self.prefill_flops(new_tokens, cached_tokens)) / self.flops_per_s)

    def prefill_s_of_counts(self, new_tokens: np.ndarray, cached_tokens: np.ndarray) -> np.ndarray:
        """:meth:`prefill_s` of two float64 arrays of the same shape that hold whole token counts >= 0 by
        construction (the replay's prefill tables, :class:`pcs.engine.timing.TimeModel`): the same float
        operations in the same order, so the same values, without the checks and conversions (a third of the
        time of a table). Nothing is checked: bad input gives bad numbers, not an error."""
        return np.asarray(self._flops(new_tokens, cached_tokens)) / self.flops_per_s

    def _kv_bytes(self, context_tokens: int) -> int:
        if self.kv_read_bytes is not None:
            return int(self.kv_read_bytes(int(context_tokens)))
        from pcs.model import reserved_bytes  # lazy: H2's footprint code

        return int(reserved_bytes(self.model.with_tp(self.tp), int(context_tokens), self.block_size))

    def decode_s_per_token(self, context_tokens: Any) -> float | np.ndarray:
        """Seconds for one decode step at ``context_tokens``: max(memory, compute); broadcastable.

        Raises:
            UserError: negative or non-finite context.
        """
        c = _as_tokens(context_tokens, "context tokens")
        weight_bytes = self.model.active_params * float(self.model.weight_dtype_bytes) / self.tp
        kv = np.vectorize(self._kv_bytes, otypes=[np.float64])(c)
        memory_s = (weight_bytes + kv) / self.gpu.hbm_bps
        flops = 2.0 * self.model.active_params + np.asarray(self.model.attention_flops(1, c), dtype=np.float64)
        return _out(np.maximum(memory_s, flops / self.flops_per_s))

    def _fit_contexts(self, max_context_tokens: int | None) -> tuple[float, float]:
        """The two contexts (whole blocks) the step cost's linear terms are fitted through.

        2**20 and 2**21 tokens, unless a window or chunk span is at least the longest context C the run
        can see (the larger of ``max_context_tokens`` and the model's): such a span never acts, so the fit
        is taken below C, where its layers grow as full attention does: c2 the last whole block below C,
        c1 the first whole block past every shorter span (+ one block: a window holds ceil(W/B) + 1
        pages), else c2 - one block. C unknown, or shorter than three blocks: 2**20 and 2**21.
        """
        b = self.block_size
        far = (float(b * ((1 << 20) // b)), float(b * ((1 << 21) // b)))
        known = [int(v) for v in (max_context_tokens, getattr(self.model, "max_context_tokens", None))
                 if v is not None]
        spans = [int(getattr(c, a)) for c in getattr(self.model, "components", ())
                 for a in ("window_tokens", "chunk_tokens") if hasattr(c, a)]
        if not known or max(known) <= 3 * b or not any(s >= max(known) for s in spans):
            return far
        top = max(known)
        c2 = b * ((top - 1) // b)
        acting = [s for s in spans if s < top]
        c1 = b * (-(-max(acting) // b) + 1) if acting else b * (c2 // 2 // b)
        return float(c1 if 0 < c1 < c2 else c2 - b), float(c2)

    def step_cost(self, max_context_tokens: int | None = None) -> "StepCost":
        """The coefficients of a continuous-batching step on this model and GPU (:class:`StepCost`).

        KV bytes read per sequence and decode attention FLOPs per sequence are
        fitted as ``a + b x context`` through two contexts (:meth:`_fit_contexts`):
        exact for full attention and MLA (pages grow linearly); a sliding window
        (or local chunk) shorter than the longest context the run can see
        becomes the intercept (an over-estimate below the window); one at least
        that long never acts, and its layers cost exactly what full attention
        costs (``docs/semantics.md §10``). Prefill-chunk attention
        uses ``attention_flops`` itself; when it equals ``k x causal_pairs(n,
        c)`` (checked at three points) the scalar form ``k x pairs`` is used.

        Args:
            max_context_tokens: the longest context (prompt + output tokens) the run can see, or None;
                the larger of it and the model's ``max_context_tokens`` is taken.
        """
        c1, c2 = self._fit_contexts(max_context_tokens)
        kv1, kv2 = self._kv_bytes(int(c1)), self._kv_bytes(int(c2))
        kv_slope = (kv2 - kv1) / (c2 - c1)
        a1, a2 = (float(self.model.attention_flops(1, c)) for c in (c1, c2))
        a_slope = (a2 - a1) / (c2 - c1)
        per_pair = float(self.model.attention_flops(1, 0))
        probes = ((7.0, 100_000.0), (3000.0, 500_000.0), (1.0, 3.0e6))
        plain = per_pair > 0 and all(
            math.isclose(float(self.model.attention_flops(n, c)), per_pair * (n * c + n * (n + 1) / 2), rel_tol=1e-12)
            for n, c in probes)
        f = self.flops_per_s
        w = float(self.model.weight_dtype_bytes) / self.tp / self.gpu.hbm_bps
        return StepCost(
            weights_active_s=self.model.active_params * w,
            weights_total_s=max(self.model.total_params, self.model.active_params) * w,
            kv_seq_s=(kv1 - kv_slope * c1) / self.gpu.hbm_bps, kv_token_s=kv_slope / self.gpu.hbm_bps,
            token_s=2.0 * self.model.active_params / f,
            attn_seq_s=(a1 - a_slope * c1) / f, attn_token_s=a_slope / f,
            attn_pair_s=per_pair / f if plain else None,
            layers=int(self.model.num_layers),
            chunk_attn_s=None if plain else _ChunkAttention(self.model, f))


@dataclass(frozen=True, slots=True, eq=False)
class _ChunkAttention:
    """Attention seconds of a prefill chunk from the model's own ``attention_flops`` (scalar calls)."""

    model: Any
    flops_per_s: float

    def __call__(self, new_tokens: int, cached_tokens: int) -> float:
        return float(self.model.attention_flops(new_tokens, cached_tokens)) / self.flops_per_s


@dataclass(frozen=True, slots=True)
class StepCost:
    """Seconds of one continuous-batching step as a function of its composition (``docs/semantics.md §10``).

    A step holds prefill chunks (n new tokens after c cached each) and ``d``
    decode sequences with ``S`` context tokens in total (one new token each)::

        memory_s  = weights_s(T) + sum over sequences (kv_seq_s + kv_token_s x context)
        compute_s = token_s x T + chunk attention + d x attn_seq_s + attn_token_s x S
        step_s    = max(memory_s, compute_s)

    with T the step's tokens (sum n + d) and ``weights_s(T) = min(weights_total_s,
    weights_active_s x T)`` (an MoE step touches more experts with more tokens,
    at most all of them; equal for a dense model). A chunk's attention is
    ``attn_pair_s x (n c + n (n + 1) / 2)`` (causal pairs) or, for windowed or
    other attention, ``chunk_attn_s(n, c)``. Built by :meth:`ComputeModel.step_cost`
    (sources there) or given directly (tests, measured coefficients).

    Attributes (seconds, per the unit named):
        weights_active_s, weights_total_s: reading the active / all weights once (one rank).
        kv_seq_s, kv_token_s: KV read per sequence, intercept and per context token (one rank).
        token_s: matmul time per token (2 x active params / sustained FLOP/s).
        attn_seq_s, attn_token_s: decode attention per sequence, intercept and per context token.
        attn_pair_s: prefill attention per causal (query, key) pair, or None.
        layers: decoder layers (layer-wise restore overlap, :mod:`pcs.engine.restores`).
        chunk_attn_s: ``(n, c) -> seconds`` when ``attn_pair_s`` is None.
    """

    weights_active_s: float
    weights_total_s: float
    kv_seq_s: float
    kv_token_s: float
    token_s: float
    attn_seq_s: float
    attn_token_s: float
    attn_pair_s: float | None
    layers: int = 1
    chunk_attn_s: Callable[[int, int], float] | None = None

    def weights_s(self, tokens: int) -> float:
        """Seconds to read the weights once for a step of ``tokens`` tokens."""
        return min(self.weights_total_s, self.weights_active_s * tokens)

    def chunk_s(self, new_tokens: int, cached_tokens: int) -> tuple[float, float]:
        """(compute, memory) seconds a prefill chunk adds to a step, weights excluded."""
        n, c = new_tokens, cached_tokens
        attn = self.attn_pair_s * (n * c + n * (n + 1) / 2) if self.attn_pair_s is not None \
            else self.chunk_attn_s(n, c)
        return self.token_s * n + attn, self.kv_seq_s + self.kv_token_s * c

    def step_s(self, chunk_compute_s: float, chunk_memory_s: float, chunk_tokens: int, decode_seqs: int,
               decode_context_tokens: float) -> float:
        """Seconds of one step: chunks' (compute, memory) sums and tokens, plus a decode batch."""
        d, s = decode_seqs, decode_context_tokens
        memory = self.weights_s(chunk_tokens + d) + chunk_memory_s + d * self.kv_seq_s + self.kv_token_s * s
        compute = chunk_compute_s + d * (self.token_s + self.attn_seq_s) + self.attn_token_s * s
        return memory if memory > compute else compute

    def prefill_s(self, new_tokens: int, cached_tokens: int) -> float:
        """Seconds of a prefill alone in a step (no decode batch)."""
        if new_tokens <= 0:
            return 0.0
        comp, mem = self.chunk_s(new_tokens, cached_tokens)
        return self.step_s(comp, mem, new_tokens, 0, 0)

    def decode_run_s(self, decode_seqs: int, context_tokens: float, steps: int) -> float:
        """Seconds of ``steps`` pure decode steps of ``decode_seqs`` sequences starting at ``context_tokens``.

        Step j (0-based) has context S + j x d, so memory and compute are both
        affine in j; their max switches at most once, and each side is summed
        in closed form (sum_{j=a}^{b-1} (A + B j) = (b - a) A + B (a + b - 1)(b - a) / 2).
        """
        if steps <= 0 or decode_seqs <= 0:
            return 0.0
        return _decode_sum(self.decode_terms(decode_seqs, context_tokens), steps)

    def decode_terms(self, d: int, context_tokens: float) -> tuple:
        """(a1, b1, a2, b2): memory a1 + b1 j and compute a2 + b2 j of decode step j (``decode_run_s``), seconds.

        The step scheduler computes them once per decode run and passes them to :func:`decode_sum` and
        :func:`decode_steps_for` (the same sums as ``decode_run_s`` / ``decode_steps_within``)."""
        w = self.weights_active_s * d
        a1 = (w if w < self.weights_total_s else self.weights_total_s) + d * self.kv_seq_s \
            + self.kv_token_s * context_tokens
        return a1, self.kv_token_s * d, d * (self.token_s + self.attn_seq_s) + self.attn_token_s * context_tokens, \
            self.attn_token_s * d

    def decode_steps_within(self, decode_seqs: int, context_tokens: float, seconds: float, most: int) -> int:
        """Fewest pure decode steps (1 .. ``most``) whose total time reaches ``seconds``; ``most`` if none."""
        if most <= 0 or decode_seqs <= 0:
            return most if 0.0 < seconds else 1
        return decode_steps_for(self.decode_terms(decode_seqs, context_tokens), seconds, most)


def decode_steps_for(terms: tuple, seconds: float, most: int) -> int:
    """:meth:`StepCost.decode_steps_within` given its ``decode_terms`` (d >= 1, ``most`` >= 1): the fewest
    pure decode steps (1 .. ``most``) whose total time reaches ``seconds``; ``most`` if none."""
    if _decode_sum(terms, most) < seconds:
        return most
    lo, hi = 1, most                       # the answer is in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        if _decode_sum(terms, mid) >= seconds:
            hi = mid
        else:
            lo = mid + 1
    return lo


def decode_sum(terms: tuple, steps: int) -> float:
    """:meth:`StepCost.decode_run_s` given its ``decode_terms`` (d >= 1): seconds of ``steps`` decode steps."""
    return _decode_sum(terms, steps) if steps > 0 else 0.0


def _decode_sum(terms: tuple, k: int) -> float:
    """Sum over decode steps 0 .. k-1 (k >= 1) of max(memory, compute), the affine terms of ``decode_terms``."""
    a1, b1, a2, b2 = terms
    if b1 == b2:                             # one side dominates every step
        return _affine_sum(a1, b1, 0, k) if a1 >= a2 else _affine_sum(a2, b2, 0, k)
    x = (a2 - a1) / (b1 - b2)                # memory >= compute from j >= x (b1 > b2) or up to x (b1 < b2)
    if b1 > b2:
        split = math.ceil(x)                 # min(k, max(0, ceil(x))) written out
        split = k if split > k else (split if split > 0 else 0)
        return _affine_sum(a2, b2, 0, split) + _affine_sum(a1, b1, split, k)
    split = math.floor(x) + 1
    split = k if split > k else (split if split > 0 else 0)
    return _affine_sum(a1, b1, 0, split) + _affine_sum(a2, b2, split, k)


def _affine_sum(a: float, b: float, lo: int, hi: int) -> float:
    """sum_{j=lo}^{hi-1} (a + b j); 0 when hi <= lo."""
    if hi <= lo:
        return 0.0
    m = hi - lo
    return m * a + b * ((lo + hi - 1) * m / 2)




_TOKEN_COLS = ("tokens", "prompt_tokens", "new_tokens")
_SECOND_COLS = ("seconds", "prefill_s", "time_s", "s")


@dataclass(frozen=True, slots=True, eq=False)
class MeasuredPrefill:
    """Prefill time interpolated from measured (tokens, seconds) points.

    ``total_s(T)`` is the time to prefill T tokens from scratch: linear
    interpolation between points (``numpy.interp``), a (0, 0) point added when
    the file has no 0-token row, and linear extrapolation with the last
    segment's slope beyond the largest measurement. Prefill of n new tokens
    after c cached is total_s(c + n) - total_s(c): the cost of the later
    tokens, which attend to more context, is what remains.

    Attributes:
        tokens: np.ndarray[np.float64], shape (k,), strictly increasing, k >= 2.
        seconds: np.ndarray[np.float64], shape (k,), non-decreasing.
        source: the file the points came from.
        notes: what reading it read past: its header's columns that are none of tokens' or seconds' names
            (:func:`pcs.trace.lengthonly.unknown_columns_note`), as the command line prints them on stderr.
    """

    tokens: np.ndarray
    seconds: np.ndarray
    source: str = ""
    notes: tuple[str, ...] = ()

    def total_s(self, tokens: Any) -> float | np.ndarray:
        """Seconds to prefill ``tokens`` tokens with nothing cached; broadcastable."""
        t = _as_tokens(tokens, "tokens")
        inside = np.interp(t, self.tokens, self.seconds)
        slope = (self.seconds[-1] - self.seconds[-2]) / (self.tokens[-1] - self.tokens[-2])
        beyond = self.seconds[-1] + slope * (t - self.tokens[-1])
        return _out(np.where(t > self.tokens[-1], beyond, inside))

    def prefill_s(self, new_tokens: Any, cached_tokens: Any = 0) -> float | np.ndarray:
        """Seconds to prefill ``new_tokens`` after ``cached_tokens``: total_s(c+n) - total_s(c)."""
        n = _as_tokens(new_tokens, "new tokens")
        c = _as_tokens(cached_tokens, "cached tokens")
        return _out(np.asarray(self.total_s(c + n)) - np.asarray(self.total_s(c)))

    @classmethod
    def from_csv(cls, path: str | Path) -> "MeasuredPrefill":
        """Read points from a CSV with a header: ``tokens,seconds`` (one row per measurement).

        Seconds may carry units ("12.5ms"). Accepted column names: tokens
        (or prompt_tokens, new_tokens) and seconds (or prefill_s, time_s, s).
        Blank lines and lines starting with ``#`` are skipped.

        Raises:
            InputError: a header column missing or given twice (:func:`_prefill_columns`; an unknown one is read past,
                named in ``notes``), a row whose field
                count is not the header's, a bad or negative value, repeated
                tokens, time decreasing with tokens, or no data rows (file, line, field).
            PathError: ``path`` is missing, a directory or not readable (naming ``path=``).
        """
        import csv

        from pcs.configfile import read_text  # bounded; not UTF-8 or a device: an error naming the file
        from pcs.trace.lengthonly import unknown_columns_note

        path = Path(path)
        lines = [(i, line) for i, line in enumerate(read_text(path).splitlines(), start=1)
                 if line.strip() and not line.lstrip().startswith("#")]
        if not lines:
            raise InputError(str(path), None, None, "empty file: expected a header tokens,seconds and rows")
        header_no, header = lines[0]
        cells = next(csv.reader([header]))
        names = [h.strip().lower() for h in cells]
        tok_col, sec_col = _prefill_columns(names, str(path), header_no)
        note = unknown_columns_note(f"{path}:{header_no}", cells, _TOKEN_COLS + _SECOND_COLS, fold=True)
        points: dict[int, tuple[float, int]] = {}
        for line_no, line in lines[1:]:
            row = next(csv.reader([line]))
            tokens, seconds = _row_values(path, line_no, row, tok_col, sec_col, names)
            if tokens in points:
                raise InputError(str(path), line_no, names[tok_col],
                                 f"{format_counted(tokens, 'token')} repeated (first on line {points[tokens][1]})")
            points[tokens] = (seconds, line_no)
        if not points:
            raise InputError(str(path), None, None, "no data rows after the header")
        points.setdefault(0, (0.0, 0))
        if len(points) < 2:
            raise InputError(str(path), None, None, "need at least one row with tokens > 0")
        order = sorted(points)
        secs = [points[t][0] for t in order]
        for prev, cur, t in zip(secs, secs[1:], order[1:]):
            if cur < prev:
                raise InputError(str(path), points[t][1], names[sec_col],
                                 f"time {cur} s at {format_counted(t, 'token')} is less than {prev} s at fewer tokens")
        return cls(np.asarray(order, dtype=np.float64), np.asarray(secs, dtype=np.float64), str(path),
                   (note,) if note else ())


def _prefill_columns(names: list[str], path: str, line: int) -> tuple[int, int]:
    """The columns (from 0) of tokens and seconds in a measured-prefill CSV header ``names`` (stripped, lower case),
    by the rule of pcs's CSV trace readers (:func:`pcs.trace.lengthonly.header_problem`): each named once, by one
    of its names; another column is read past, with a note (:func:`pcs.trace.lengthonly.unknown_columns_note`).

    Raises:
        InputError: at ``path``:``line``, a column given twice (one name twice, or two names of one quantity; an
            empty name is none), a misspelt one (:func:`pcs.trace.lengthonly.misspelt_column`: ``second``, did you
            mean ``seconds``?) or one missing, named.

    >>> _prefill_columns(["seconds", "prompt_tokens"], "f.csv", 1)
    (1, 0)
    """
    from pcs.trace.lengthonly import misspelt_column, twice_named

    twice = twice_named(names)
    problem = f"gives column {quoted(twice, show=repr)} twice" if twice is not None else None
    for kind in (_TOKEN_COLS, _SECOND_COLS):
        both = [c for c in names if c in kind]
        if problem is None and len(both) > 1:
            problem = f"gives {kind[0]} twice (columns {quoted(both[0], show=repr)} and {quoted(both[1], show=repr)})"
    problem = problem or misspelt_column(names, _TOKEN_COLS + _SECOND_COLS)
    cols = [next((names.index(c) for c in kind if c in names), None) for kind in (_TOKEN_COLS, _SECOND_COLS)]
    if problem is None and None in cols:
        problem = f"lacks {' and '.join(kind[0] for kind, c in zip((_TOKEN_COLS, _SECOND_COLS), cols) if c is None)}"
    if problem:
        raise InputError(path, line, None, f"header {problem} (columns: tokens or {', '.join(_TOKEN_COLS[1:])}; "
                         f"seconds or {', '.join(_SECOND_COLS[1:])})")
    return cols[0], cols[1]


def _row_values(path: Path, line_no: int, row: list[str], tok_col: int, sec_col: int,
                names: list[str]) -> tuple[int, float]:
    """Parse one CSV row into (tokens, seconds), locating errors by line and field."""
    if len(row) != len(names):      # a field more than the header's is never dropped silently
        raise InputError(str(path), line_no, None, f"expected {len(names)} fields ({','.join(names)}), got {len(row)}")
    raw_tokens, raw_seconds = row[tok_col].strip(), row[sec_col].strip()
    try:
        tokens = units.ascii_int(raw_tokens)
    except ValueError:
        raise InputError(str(path), line_no, names[tok_col], f"not a whole number of tokens: {shown_repr(raw_tokens)}") from None
    if tokens < 0:
        raise InputError(str(path), line_no, names[tok_col], f"must be >= 0, got {tokens}")
    try:
        seconds = units.parse_duration(raw_seconds)
    except ValueError as exc:
        raise InputError(str(path), line_no, names[sec_col], str(exc)) from None
    if not math.isfinite(seconds):  # pragma: no cover - parse_duration refuses these
        raise InputError(str(path), line_no, names[sec_col], f"not finite: {shown_repr(raw_seconds)}")
    return tokens, seconds
