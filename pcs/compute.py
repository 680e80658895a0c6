"""How long prefill and decode take: an analytic model, or measured points.

Prefill of ``n`` new tokens after ``c`` cached tokens (tensor parallel over
``tp`` GPUs)::

    FLOPs     = 2 x active_params x n + model.attention_flops(n, c)
    prefill_s = FLOPs / (tp x peak_flops x utilisation)

2 FLOPs per parameter per token is the matmul count of a forward pass (Kaplan
et al. 2020, "Scaling Laws for Neural Language Models", section 2.1); the
attention term (score and value products, growing with n x (c + n/2), windows
respected) comes from the model spec. ``peak_flops`` is the GPU's DENSE
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
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from pcs import units
from pcs.errors import InputError
from pcs.hardware import GPUSpec

__all__ = ["DEFAULT_UTILISATION", "ComputeModel", "MeasuredPrefill"]

#: Default prefill MFU (see the module docstring for the source).
DEFAULT_UTILISATION = 0.5


def _as_tokens(value: Any, what: str) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{what} must be finite and >= 0, got {value!r}")
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
        ValueError: tp < 1, utilisation outside (0, 1], unknown dtype, or fp8
            on a GPU without FP8.
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
            raise ValueError(f"tensor-parallel size must be an int >= 1, got {self.tp!r}")
        if not (isinstance(self.utilisation, (int, float)) and 0 < self.utilisation <= 1):
            raise ValueError(f"utilisation must be in (0, 1], got {self.utilisation!r}")
        self.gpu.peak_flops(self.dtype)  # validates dtype and FP8 support

    @property
    def flops_per_s(self) -> float:
        """Sustained FLOP/s of the TP group: tp x dense peak x utilisation."""
        return self.tp * self.gpu.peak_flops(self.dtype) * self.utilisation

    def prefill_flops(self, new_tokens: Any, cached_tokens: Any = 0) -> float | np.ndarray:
        """2 x active_params x n + attention_flops(n, c); numpy-broadcastable, float64."""
        n = _as_tokens(new_tokens, "new tokens")
        c = _as_tokens(cached_tokens, "cached tokens")
        attn = np.asarray(self.model.attention_flops(n, c), dtype=np.float64)
        return _out(2.0 * self.model.active_params * n + attn)

    def prefill_s(self, new_tokens: Any, cached_tokens: Any = 0) -> float | np.ndarray:
        """Seconds to prefill ``new_tokens`` after ``cached_tokens``; numpy-broadcastable.

        Raises:
            ValueError: negative or non-finite token counts.
        """
        return _out(np.asarray(self.prefill_flops(new_tokens, cached_tokens)) / self.flops_per_s)

    def _kv_bytes(self, context_tokens: int) -> int:
        if self.kv_read_bytes is not None:
            return int(self.kv_read_bytes(int(context_tokens)))
        from pcs.model import reserved_bytes  # lazy: H2's footprint code

        return int(reserved_bytes(self.model.with_tp(self.tp), int(context_tokens), self.block_size))

    def decode_s_per_token(self, context_tokens: Any) -> float | np.ndarray:
        """Seconds for one decode step at ``context_tokens``: max(memory, compute); broadcastable.

        Raises:
            ValueError: negative or non-finite context.
        """
        c = _as_tokens(context_tokens, "context tokens")
        weight_bytes = self.model.active_params * float(self.model.weight_dtype_bytes) / self.tp
        kv = np.vectorize(self._kv_bytes, otypes=[np.float64])(c)
        memory_s = (weight_bytes + kv) / self.gpu.hbm_bps
        flops = 2.0 * self.model.active_params + np.asarray(self.model.attention_flops(1, c), dtype=np.float64)
        return _out(np.maximum(memory_s, flops / self.flops_per_s))


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
    """

    tokens: np.ndarray
    seconds: np.ndarray
    source: str = ""

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
            InputError: missing column, a bad or negative value, repeated
                tokens, time decreasing with tokens, or no data rows (file, line, field).
            FileNotFoundError: no such file.
        """
        from pcs.configfile import read_text  # bounded; not UTF-8 or a device: an error naming the file

        path = Path(path)
        lines = [(i, line) for i, line in enumerate(read_text(path).splitlines(), start=1)
                 if line.strip() and not line.lstrip().startswith("#")]
        if not lines:
            raise InputError(str(path), None, None, "empty file: expected a header tokens,seconds and rows")
        header_no, header = lines[0]
        names = [h.strip().lower() for h in next(csv.reader([header]))]
        tok_col = next((names.index(c) for c in _TOKEN_COLS if c in names), None)
        sec_col = next((names.index(c) for c in _SECOND_COLS if c in names), None)
        if tok_col is None or sec_col is None:
            raise InputError(str(path), header_no, None, f"header must name columns tokens and seconds, got {names}")
        points: dict[int, tuple[float, int]] = {}
        for line_no, line in lines[1:]:
            row = next(csv.reader([line]))
            tokens, seconds = _row_values(path, line_no, row, tok_col, sec_col, names)
            if tokens in points:
                raise InputError(str(path), line_no, names[tok_col],
                                 f"{tokens} tokens repeated (first on line {points[tokens][1]})")
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
                                 f"time {cur} s at {t} tokens is less than {prev} s at fewer tokens")
        return cls(np.asarray(order, dtype=np.float64), np.asarray(secs, dtype=np.float64), str(path))


def _row_values(path: Path, line_no: int, row: list[str], tok_col: int, sec_col: int,
                names: list[str]) -> tuple[int, float]:
    """Parse one CSV row into (tokens, seconds), locating errors by line and field."""
    if len(row) <= max(tok_col, sec_col):
        raise InputError(str(path), line_no, None, f"expected {len(names)} fields, got {len(row)}")
    raw_tokens, raw_seconds = row[tok_col].strip(), row[sec_col].strip()
    try:
        tokens = int(raw_tokens)
    except ValueError:
        raise InputError(str(path), line_no, names[tok_col], f"not a whole number of tokens: {raw_tokens!r}") from None
    if tokens < 0:
        raise InputError(str(path), line_no, names[tok_col], f"must be >= 0, got {tokens}")
    try:
        seconds = units.parse_duration(raw_seconds)
    except ValueError as exc:
        raise InputError(str(path), line_no, names[sec_col], str(exc)) from None
    if not math.isfinite(seconds):  # pragma: no cover - parse_duration refuses these
        raise InputError(str(path), line_no, names[sec_col], f"not finite: {raw_seconds!r}")
    return tokens, seconds
