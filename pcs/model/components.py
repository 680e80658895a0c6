"""KV-cache components: one frozen class per kind, each with its own bytes formula.

Every component answers the same questions (the :class:`KVComponent` protocol),
all per tensor-parallel rank and summed over the component's layers:

- ``payload_bytes_per_token()``: the values themselves (Reference mode);
- ``scale_bytes_per_token()``: quantisation scales stored next to them
  (Serialized and Reserved modes add them);
- ``fixed_payload_bytes()``: bytes held per sequence whatever its length
  (recurrent state), 0 for token-growing components;
- ``tokens_held(T)``: how many tokens' entries a sequence of T tokens keeps
  (T, min(T, W) for a sliding window, the current chunk for chunked local
  attention, 0 for a state);
- ``outside_page_bytes()``: bytes kept per rank outside the pages (per-tensor
  quantisation scales, :mod:`pcs.model.layouts`), 0 for most;
- ``reserved_blocks(T, B)``: pages the allocator holds for one running sequence;
- ``attention_flops(n, c)``: FLOPs of the score and value products for n new
  tokens after c cached ones, for the WHOLE model (all ranks; TP never changes it).

Growth (docs/semantics.md §13): full attention grows with tokens; MLA keeps one
compressed latent per token per layer; a sliding-window layer holds min(T, W);
an indexer keeps small keys per token; recurrent state is fixed per sequence;
scales scale with groups, not values.

Engine sources for the formulas are given on each class. Byte counts are
rounded up to whole bytes per row (one head vector of one token), which is
the only padding modelled; every preset packs exactly.
"""
from __future__ import annotations

from dataclasses import field, replace
from typing import ClassVar, Protocol, Union

import numpy as np

from pcs.units import plural
from pcs.cache.groups import window_hold_blocks
from pcs.errors import UserError, shown_repr
from pcs.model.layouts import get_layout
from pcs.model.quant import QuantScales
from pcs.model.quant import row_bytes as _row_bytes
from pcs._dataclass import dataclass

ArrayLike = Union[int, float, np.ndarray]

__all__ = [
    "QuantScales", "FullAttention", "SlidingWindow", "ChunkedLocalAttention",
    "KVComponent", "causal_pairs", "windowed_pairs", "chunked_pairs",
]


def causal_pairs(n: ArrayLike, c: ArrayLike) -> np.ndarray:
    """(query, key) pairs of causal attention for n new tokens after c cached: n*c + n(n+1)/2."""
    n = np.asarray(n, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    return n * c + n * (n + 1.0) / 2.0


def windowed_pairs(n: ArrayLike, c: ArrayLike, window: int) -> np.ndarray:
    """Pairs when the token at position p (1-based) sees min(p, W) keys: S(c+n) - S(c).

    S(m) = sum_{p=1..m} min(p, W) = a(a+1)/2 + (m - a) W with a = min(m, W).
    """
    n = np.asarray(n, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    w = float(window)

    def s(m: np.ndarray) -> np.ndarray:
        a = np.minimum(m, w)
        return a * (a + 1.0) / 2.0 + (m - a) * w

    return s(c + n) - s(c)


def chunked_pairs(n: ArrayLike, c: ArrayLike, chunk: int) -> np.ndarray:
    """Pairs when the token at position p (1-based) sees the keys of its own chunk: S(c+n) - S(c).

    S(m) = sum_{p=1..m} ((p - 1) mod C + 1) = q C (C+1)/2 + r (r+1)/2 with q, r = divmod(m, C).
    """
    n = np.asarray(n, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    size = float(chunk)

    def s(m: np.ndarray) -> np.ndarray:
        q, r = np.floor_divide(m, size), np.mod(m, size)
        return q * size * (size + 1.0) / 2.0 + r * (r + 1.0) / 2.0

    return s(c + n) - s(c)


class KVComponent(Protocol):
    """What every component class provides (see the module docstring)."""

    name: ClassVar[str]
    num_layers: int
    dtype: str

    def payload_bytes_per_token(self) -> int: ...
    def scale_bytes_per_token(self) -> int: ...
    def fixed_payload_bytes(self) -> int: ...
    def outside_page_bytes(self) -> int: ...
    def tokens_held(self, tokens: int) -> int: ...
    def reserved_blocks(self, tokens: int, block_size: int) -> int: ...
    def attention_flops(self, new_tokens: ArrayLike, cached_tokens: ArrayLike) -> np.ndarray: ...
    def with_dtype(self, dtype: str) -> "KVComponent": ...
    def with_tp(self, tp: int) -> "KVComponent": ...
    def describe(self) -> str: ...


def _tp_refused(message: str, tp: int) -> UserError:
    """A refusal of tensor-parallel size ``tp``, keeping it as the error's ``refused_value``: a sweep plan names the
    line its ``tp`` is written on (:func:`pcs.sweep.kinds.culprit`)."""
    err = UserError(message)
    err.refused_value = tp
    return err


def _check_tp_heads(tp: int, heads: int, what: str) -> None:
    if tp < 1:
        raise _tp_refused(f"tensor-parallel size must be >= 1, got {tp}", tp)
    if heads % tp != 0 and tp % heads != 0:
        raise _tp_refused(f"tensor-parallel size {tp} does not divide {heads} {what} "
                          f"(nor do they divide it); vLLM requires one to divide the other", tp)


def _check_tp_q_heads(tp: int, heads: int) -> None:
    """vLLM ``ModelConfig.verify_with_parallel_config``: attention heads % tp == 0."""
    if tp < 1:
        raise _tp_refused(f"tensor-parallel size must be >= 1, got {tp}", tp)
    if heads % tp:
        raise _tp_refused(f"tensor-parallel size {tp} does not divide the {heads} attention heads "
                          "(vLLM requires num_attention_heads % tp == 0)", tp)


class _PerToken:
    """Defaults of a component that keeps one entry per token: no fixed bytes,
    holds all T tokens, ceil(T / B) pages (vLLM ``FullAttentionManager``)."""

    __slots__ = ()

    def fixed_payload_bytes(self) -> int:
        return 0

    def outside_page_bytes(self) -> int:
        return 0

    def tokens_held(self, tokens: int) -> int:
        return tokens

    def reserved_blocks(self, tokens: int, block_size: int) -> int:
        return -(-tokens // block_size)


@dataclass(frozen=True, slots=True)
class _Stored(_PerToken):
    """Fields and formulas of a per-token component stored in a KV layout (:mod:`pcs.model.layouts`) and placed
    on TP ranks: the GQA layers and the MLA latent (declared once here, keyword-only after a subclass's shape).

    ``dtype``: the values' dtype; ``scales``: scales stored inline with each row (None: none); ``tp``: the
    tensor-parallel size; ``layout``: the layout's name (None: the dtype's own). A subclass has ``num_layers``.
    """

    dtype: str = field(default="bf16", kw_only=True)
    scales: QuantScales | None = field(default=None, kw_only=True)
    tp: int = field(default=1, kw_only=True)
    layout: str | None = field(default=None, kw_only=True)

    @property
    def layout_name(self) -> str:
        """The KV layout's name (the dtype's own when never set)."""
        return self.layout or self.dtype

    def outside_page_bytes(self) -> int:
        """Per-tensor scales of these layers, per rank (:meth:`KVLayout.outside_bytes_per_layer`; vLLM registers
        K and V scales on MLA layers too)."""
        return self.num_layers * get_layout(self.layout_name).outside_bytes_per_layer()


@dataclass(frozen=True, slots=True)
class _GQA(_Stored):
    """Fields and shared formulas of the GQA/MHA/MQA layers: full, sliding-window and chunked local attention.

    A subclass adds its span (``window_tokens``, ``chunk_tokens``) as a keyword-only field.
    """

    num_layers: int
    num_kv_heads: int
    head_dim: int
    num_q_heads: int
    head_dim_v: int | None = None

    def kv_heads_per_rank(self) -> int:
        """KV heads one rank stores: max(1, H_kv // tp), replicated when tp > H_kv.

        Source: vLLM ``ModelConfig.get_num_kv_heads`` (``vllm/config/model.py``).
        """
        return max(1, self.num_kv_heads // self.tp)

    def _v_dim(self) -> int:
        return self.head_dim_v or self.head_dim

    def payload_bytes_per_token(self) -> int:
        """K and V rows: layers x KV heads/rank x (row(head_dim) + row(head_dim_v))."""
        per_head = _row_bytes(self.head_dim, self.dtype) + _row_bytes(self._v_dim(), self.dtype)
        return self.num_layers * self.kv_heads_per_rank() * per_head

    def scale_bytes_per_token(self) -> int:
        if self.scales is None:
            return 0
        per_head = self.scales.row_bytes(self.head_dim) + self.scales.row_bytes(self._v_dim())
        return self.num_layers * self.kv_heads_per_rank() * per_head

    def _flops_per_pair(self) -> float:
        # QK^T: 2*d_qk per head per pair; PV: 2*d_v; all query heads of all ranks.
        return 2.0 * self.num_q_heads * (self.head_dim + self._v_dim()) * self.num_layers

    def with_dtype(self, dtype: str):
        """Stored in layout ``dtype`` (an engine name or a short name, :func:`pcs.model.layouts.get_layout`).

        Raises:
            UserError: an unknown dtype; ``fp8_ds_mla``, an MLA-only layout (vLLM flashmla_sparse.py), as an MLA
                model refuses the GQA-only per-token-head layouts (:func:`pcs.model.layouts.mla_form`).
        """
        lay = get_layout(dtype)
        if lay.name == "fp8_ds_mla":
            raise UserError("KV dtype 'fp8_ds_mla' is FlashMLA's MLA layout (512 fp8 latent + 4 fp32 scales + 64 "
                            "bf16 rope per token and layer); attention with K and V heads takes bf16, fp16, fp8 / "
                            "fp8_e4m3 / fp8_e5m2, fp8_per_token_head, int8_per_token_head, nvfp4 or int4")
        if lay.scale_place == "per_group":
            _refuse_partial_groups(lay.name, lay.group_size, self.head_dim, self._v_dim())
        return replace(self, dtype=lay.value_dtype, scales=lay.inline_scales(self.head_dim), layout=lay.name)

    def with_tp(self, tp: int):
        _check_tp_q_heads(tp, self.num_q_heads)
        _check_tp_heads(tp, self.num_kv_heads, "KV heads")
        return replace(self, tp=tp)

    def _describe_heads(self) -> str:
        return (f"{self.num_layers} {plural(self.num_layers, 'layer')} x {self.kv_heads_per_rank()} KV heads x {self.head_dim} x (K,V)"
                f" {self.layout_name}")


@dataclass(frozen=True, slots=True)
class FullAttention(_GQA):
    """Full-attention KV (MHA, GQA, MQA): K and V per token per KV head per layer.

    Bytes per token = layers x KV heads per rank x (head_dim + head_dim_v) x dtype bytes
    (vLLM ``FullAttentionSpec.real_page_size_bytes`` divided by block_size).
    Llama-3.1-8B BF16: 32 x 8 x (128 + 128) x 2 B = 131,072 B/token.
    """

    name: ClassVar[str] = "full_attention"

    def attention_flops(self, new_tokens: ArrayLike, cached_tokens: ArrayLike) -> np.ndarray:
        return self._flops_per_pair() * causal_pairs(new_tokens, cached_tokens)

    def describe(self) -> str:
        return self._describe_heads()


@dataclass(frozen=True, slots=True)
class SlidingWindow(_GQA):
    """Sliding-window attention KV: like full attention, but only the last W tokens matter.

    Holds min(T, W) tokens. A running sequence reserves at most m + 1 pages, m = ceil((W - 1) / B): the
    window of the next token spans m blocks, or m + 1 when it does not start on a block boundary; blocks
    that slid out are freed before each step (vLLM ``SlidingWindowManager.remove_skipped_blocks``,
    ``get_num_blocks_to_allocate``). The rule is :func:`pcs.cache.groups.window_hold_blocks`, the one pcs
    replay's window group holds.
    """

    name: ClassVar[str] = "sliding_window"
    window_tokens: int = field(kw_only=True)

    def tokens_held(self, tokens: int) -> int:
        return min(tokens, self.window_tokens)

    def reserved_blocks(self, tokens: int, block_size: int) -> int:
        """min(ceil(T/B), ceil((W - 1)/B) + 1) pages (:func:`pcs.cache.groups.window_hold_blocks`): W = 128,
        B = 16: 9 pages from T = 129 on; W = 1,024, B = 512: 3 from T = 1,025 on. While its prefill step runs a
        sequence holds every page the step writes, ceil(T/B) with no prefix hit (docs/semantics.md §3.1)."""
        return min(-(-tokens // block_size), window_hold_blocks(self.window_tokens, block_size))

    def attention_flops(self, new_tokens: ArrayLike, cached_tokens: ArrayLike) -> np.ndarray:
        return self._flops_per_pair() * windowed_pairs(new_tokens, cached_tokens, self.window_tokens)

    def describe(self) -> str:
        return f"{self._describe_heads()}, window {self.window_tokens}"


@dataclass(frozen=True, slots=True)
class ChunkedLocalAttention(_GQA):
    """Chunked local attention KV (Llama 4): a token attends only to keys of its own chunk of C tokens.

    Holds the current chunk: ((T - 1) mod C) + 1 tokens for T > 0. The
    allocator keeps the pages from the chunk's start to T (vLLM
    ``ChunkedLocalAttentionManager.remove_skipped_blocks`` frees pages before
    the chunk; ``ChunkedLocalAttentionSpec``, ``vllm/v1/kv_cache_interface.py``):
    ceil(T/B) - floor(start/B) pages with start = C floor((T-1)/C).
    Cached prefix blocks hold their own tokens' KV of these layers, like a
    sliding window (an upper bound for a store that drops finished chunks).
    """

    name: ClassVar[str] = "chunked_local"
    chunk_tokens: int = field(kw_only=True)

    def _chunk_start(self, tokens: int) -> int:
        return 0 if tokens <= 0 else (tokens - 1) // self.chunk_tokens * self.chunk_tokens

    def tokens_held(self, tokens: int) -> int:
        return tokens - self._chunk_start(tokens)

    def reserved_blocks(self, tokens: int, block_size: int) -> int:
        """ceil(T/B) - floor(chunk start / B) pages: C = 8, B = 4: 2 at T = 16, 1 at T = 17; at most
        :func:`pcs.cache.groups.chunk_hold_blocks` (1 + ceil((C - gcd(C, B)) / B)), what pcs replay's chunk group
        holds while decoding (docs/semantics.md §3.1)."""
        return -(-tokens // block_size) - self._chunk_start(tokens) // block_size

    def attention_flops(self, new_tokens: ArrayLike, cached_tokens: ArrayLike) -> np.ndarray:
        return self._flops_per_pair() * chunked_pairs(new_tokens, cached_tokens, self.chunk_tokens)

    def describe(self) -> str:
        return f"{self._describe_heads()}, chunk {self.chunk_tokens}"


def _refuse_partial_groups(layout: str, group: int, head_dim: int, v_dim: int) -> None:
    """A per-group layout (nvfp4, int4: one scale per ``group`` values) needs head rows of whole groups: vLLM
    refuses NVFP4 with ``head_size % 16 != 0`` (``csrc/cache_kernels.cu`` reshape_and_cache_flash: "NVFP4 KV
    cache requires head_size to be a multiple of 16"; the TRTLLM backend the same), and its page formula
    ``head_size // 2 + head_size // 16`` holds only then. pcs refuses what the engine refuses
    (docs/semantics.md §13, KV layouts).

    Raises:
        UserError: naming head_dim (or the V head dim), its value and the layout.
    """
    for field, dim in (("head_dim", head_dim), ("V head dim", v_dim)):
        if dim % group:
            raise UserError(f"KV dtype {shown_repr(layout)} stores one scale per {group} values of a head row, so {field} "
                            f"must be a multiple of {group} (vLLM refuses NVFP4 otherwise), got {dim}: "
                            "give another KV dtype (bf16, fp8, fp8_per_token_head ...)")
