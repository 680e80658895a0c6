"""KV-cache components: one frozen class per kind, each with its own bytes formula.

Every component answers the same questions (the :class:`KVComponent` protocol),
all per tensor-parallel rank and summed over the component's layers:

- ``payload_bytes_per_token()``: the values themselves (Reference mode);
- ``scale_bytes_per_token()``: quantisation scales stored next to them
  (Serialized and Reserved modes add them);
- ``fixed_payload_bytes()``: bytes held per sequence whatever its length
  (recurrent state), 0 for token-growing components;
- ``tokens_held(T)``: how many tokens' entries a sequence of T tokens keeps
  (T, or min(T, W) for a sliding window, 0 for a state);
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

import math
from dataclasses import dataclass, replace
from typing import ClassVar, Protocol, Union

import numpy as np

from pcs.model.quant import DTYPE_BITS, KV_DTYPES, QuantScales, default_scales, normalize_dtype
from pcs.model.quant import row_bytes as _row_bytes

ArrayLike = Union[int, float, np.ndarray]

__all__ = [
    "DTYPE_BITS", "KV_DTYPES", "normalize_dtype", "QuantScales", "default_scales",
    "FullAttention", "SlidingWindow", "MLALatent", "IndexerKeys", "RecurrentState",
    "KVComponent", "causal_pairs", "windowed_pairs",
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


class KVComponent(Protocol):
    """What every component class provides (see the module docstring)."""

    name: ClassVar[str]
    num_layers: int
    dtype: str

    def payload_bytes_per_token(self) -> int: ...
    def scale_bytes_per_token(self) -> int: ...
    def fixed_payload_bytes(self) -> int: ...
    def tokens_held(self, tokens: int) -> int: ...
    def reserved_blocks(self, tokens: int, block_size: int) -> int: ...
    def attention_flops(self, new_tokens: ArrayLike, cached_tokens: ArrayLike) -> np.ndarray: ...
    def with_dtype(self, dtype: str) -> "KVComponent": ...
    def with_tp(self, tp: int) -> "KVComponent": ...
    def describe(self) -> str: ...


def _check_tp_heads(tp: int, heads: int, what: str) -> None:
    if tp < 1:
        raise ValueError(f"tensor-parallel size must be >= 1, got {tp}")
    if heads % tp != 0 and tp % heads != 0:
        raise ValueError(f"tensor-parallel size {tp} does not divide {heads} {what} "
                         f"(nor do they divide it); vLLM requires one to divide the other")


class _PerToken:
    """Defaults of a component that keeps one entry per token: no fixed bytes,
    holds all T tokens, ceil(T / B) pages (vLLM ``FullAttentionManager``)."""

    __slots__ = ()

    def fixed_payload_bytes(self) -> int:
        return 0

    def tokens_held(self, tokens: int) -> int:
        return tokens

    def reserved_blocks(self, tokens: int, block_size: int) -> int:
        return -(-tokens // block_size)


class _GQA(_PerToken):
    """Shared formulas of full and sliding-window GQA/MHA/MQA layers."""

    __slots__ = ()

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
        dtype = normalize_dtype(dtype)
        return replace(self, dtype=dtype, scales=default_scales(dtype, self.head_dim))

    def with_tp(self, tp: int):
        _check_tp_heads(tp, self.num_kv_heads, "KV heads")
        return replace(self, tp=tp)

    def _describe_heads(self) -> str:
        return f"{self.num_layers} layers x {self.kv_heads_per_rank()} KV heads x {self.head_dim} x (K,V) {self.dtype}"


@dataclass(frozen=True, slots=True)
class FullAttention(_GQA):
    """Full-attention KV (MHA, GQA, MQA): K and V per token per KV head per layer.

    Bytes per token = layers x KV heads per rank x (head_dim + head_dim_v) x dtype bytes
    (vLLM ``FullAttentionSpec.real_page_size_bytes`` divided by block_size).
    Llama-3.1-8B BF16: 32 x 8 x (128 + 128) x 2 B = 131,072 B/token.
    """

    name: ClassVar[str] = "full_attention"
    num_layers: int
    num_kv_heads: int
    head_dim: int
    num_q_heads: int
    dtype: str = "bf16"
    scales: QuantScales | None = None
    tp: int = 1
    head_dim_v: int | None = None


    def attention_flops(self, new_tokens: ArrayLike, cached_tokens: ArrayLike) -> np.ndarray:
        return self._flops_per_pair() * causal_pairs(new_tokens, cached_tokens)

    def describe(self) -> str:
        return self._describe_heads()


@dataclass(frozen=True, slots=True)
class SlidingWindow(_GQA):
    """Sliding-window attention KV: like full attention, but only the last W tokens matter.

    Holds min(T, W) tokens. The allocator reserves the window rounded up to
    blocks plus one block, since the window rarely starts on a block boundary
    (vLLM ``SlidingWindowSpec.max_memory_usage_bytes``: ``cdiv(W - 1 + new, B) + 1``
    pages; blocks that slid out are freed by ``SlidingWindowManager.remove_skipped_blocks``).
    """

    name: ClassVar[str] = "sliding_window"
    num_layers: int
    num_kv_heads: int
    head_dim: int
    num_q_heads: int
    window_tokens: int
    dtype: str = "bf16"
    scales: QuantScales | None = None
    tp: int = 1
    head_dim_v: int | None = None

    def tokens_held(self, tokens: int) -> int:
        return min(tokens, self.window_tokens)

    def reserved_blocks(self, tokens: int, block_size: int) -> int:
        """min(ceil(T/B), ceil(W/B) + 1) pages."""
        return min(-(-tokens // block_size), -(-self.window_tokens // block_size) + 1)

    def attention_flops(self, new_tokens: ArrayLike, cached_tokens: ArrayLike) -> np.ndarray:
        return self._flops_per_pair() * windowed_pairs(new_tokens, cached_tokens, self.window_tokens)

    def describe(self) -> str:
        return f"{self._describe_heads()}, window {self.window_tokens}"


@dataclass(frozen=True, slots=True)
class MLALatent(_PerToken):
    """Multi-head latent attention: one compressed latent per token per layer, no separate V.

    Bytes per token per layer = kv_lora_rank x dtype + qk_rope_head_dim x rope dtype
    (+ scales). DeepSeek-V3 BF16: 61 x (512 + 64) x 2 B = 70,272 B/token.
    Quantised (fp8), the latent gets one fp32 scale per 128 values and the rope
    part stays 16-bit: 512 + 4 x 4 + 64 x 2 = 656 B per token per layer, vLLM's
    ``fp8_ds_mla`` layout (``MLAAttentionSpec.real_page_size_bytes``).
    Replicated on every TP rank: vLLM ``get_num_kv_heads`` returns 1 for MLA.
    FLOPs use the non-absorbed prefill form: heads x (qk_nope + rope + v) per pair;
    with ``topk`` (DeepSeek sparse attention) a query attends to min(p, topk) keys.
    """

    name: ClassVar[str] = "mla_latent"
    num_layers: int
    kv_lora_rank: int
    rope_dim: int
    num_q_heads: int
    qk_nope_head_dim: int
    v_head_dim: int
    dtype: str = "bf16"
    scales: QuantScales | None = None
    rope_dtype: str | None = None
    topk: int | None = None
    tp: int = 1

    def payload_bytes_per_token(self) -> int:
        row = _row_bytes(self.kv_lora_rank, self.dtype) + _row_bytes(self.rope_dim, self.rope_dtype or self.dtype)
        return self.num_layers * row

    def scale_bytes_per_token(self) -> int:
        return 0 if self.scales is None else self.num_layers * self.scales.row_bytes(self.kv_lora_rank)

    def attention_flops(self, new_tokens: ArrayLike, cached_tokens: ArrayLike) -> np.ndarray:
        per_pair = 2.0 * self.num_q_heads * (self.qk_nope_head_dim + self.rope_dim + self.v_head_dim)
        pairs = (causal_pairs(new_tokens, cached_tokens) if self.topk is None
                 else windowed_pairs(new_tokens, cached_tokens, self.topk))
        return per_pair * self.num_layers * pairs

    def with_dtype(self, dtype: str) -> "MLALatent":
        dtype = normalize_dtype(dtype)
        quantised = DTYPE_BITS[dtype] < 16
        scales = None
        if dtype in ("fp8", "int8"):
            scales = QuantScales(group_size=128, scale_bits=32)
        elif dtype in ("fp4", "int4"):
            scales = QuantScales(group_size=16, scale_bits=8)
        return replace(self, dtype=dtype, scales=scales, rope_dtype="bf16" if quantised else None)

    def with_tp(self, tp: int) -> "MLALatent":
        if tp < 1:
            raise ValueError(f"tensor-parallel size must be >= 1, got {tp}")
        return replace(self, tp=tp)

    def describe(self) -> str:
        rope = self.rope_dtype or self.dtype
        return (f"{self.num_layers} layers x ({self.kv_lora_rank} {self.dtype} + {self.rope_dim} rope {rope}),"
                f" replicated per rank")


@dataclass(frozen=True, slots=True)
class IndexerKeys(_PerToken):
    """Sparse-attention indexer keys (DeepSeek-V3.2 lightning indexer): small keys per token per layer.

    Own dtype, untouched by the KV ``--dtype``: fp8 keys of index_head_dim plus
    one fp32 scale per 128 values, 128 + 4 = 132 B per token per layer (vLLM
    ``DeepseekV32IndexerBackend`` cache ``index_head_dim + index_head_dim // 128 * 4``
    uint8; SGLang ``NSATokenToKVPool``). Replicated per rank (one "head").
    FLOPs: the indexer scores every preceding token, index_n_heads x index_head_dim x 2 per pair.
    """

    name: ClassVar[str] = "indexer_keys"
    num_layers: int
    index_head_dim: int
    index_n_heads: int
    dtype: str = "fp8"
    scales: QuantScales | None = QuantScales(group_size=128, scale_bits=32)
    tp: int = 1

    def payload_bytes_per_token(self) -> int:
        return self.num_layers * _row_bytes(self.index_head_dim, self.dtype)

    def scale_bytes_per_token(self) -> int:
        return 0 if self.scales is None else self.num_layers * self.scales.row_bytes(self.index_head_dim)

    def attention_flops(self, new_tokens: ArrayLike, cached_tokens: ArrayLike) -> np.ndarray:
        per_pair = 2.0 * self.index_n_heads * self.index_head_dim * self.num_layers
        return per_pair * causal_pairs(new_tokens, cached_tokens)

    def with_dtype(self, dtype: str) -> "IndexerKeys":
        return self  # own dtype; see the class docstring

    def with_tp(self, tp: int) -> "IndexerKeys":
        if tp < 1:
            raise ValueError(f"tensor-parallel size must be >= 1, got {tp}")
        return replace(self, tp=tp)

    def describe(self) -> str:
        return f"{self.num_layers} layers x {self.index_head_dim} {self.dtype} (+ scales), replicated per rank"


@dataclass(frozen=True, slots=True)
class RecurrentState:
    """Recurrent / SSM / linear-attention state: fixed bytes per sequence per layer.

    Per layer and rank (Gated DeltaNet, vLLM ``MambaStateShapeCalculator.gated_delta_net_state_shape``):
    conv state (conv_kernel - 1) x conv_dim / tp values with
    conv_dim = 2 x K heads x head_k_dim + V heads x head_v_dim, plus the recurrent
    state V heads / tp x head_v_dim x head_k_dim. Both are split across TP ranks
    (vLLM ``divide(..., tp_world_size)``), not replicated. Dtypes follow vLLM's
    ``mamba_cache_dtype`` / ``mamba_ssm_cache_dtype`` (default: model dtype), not
    the KV ``--dtype``. Does not grow with T.
    FLOPs (approximate, per new token per layer): 6 x heads x head_k_dim x head_v_dim
    for the delta-rule retrieval S k, the rank-1 update and the readout S^T q.
    """

    name: ClassVar[str] = "ssm_state"
    num_layers: int
    num_heads: int
    head_k_dim: int
    head_v_dim: int
    conv_dim: int
    conv_kernel: int
    conv_dtype: str = "bf16"
    state_dtype: str = "bf16"
    tp: int = 1

    @property
    def dtype(self) -> str:
        """Dtype label: ``bf16`` or ``bf16/fp32`` (conv/recurrent) when they differ."""
        return self.conv_dtype if self.conv_dtype == self.state_dtype else f"{self.conv_dtype}/{self.state_dtype}"

    def payload_bytes_per_token(self) -> int:
        return 0

    def scale_bytes_per_token(self) -> int:
        return 0

    def fixed_payload_bytes(self) -> int:
        """Conv + recurrent state bytes per sequence, all layers, one rank."""
        conv = (self.conv_kernel - 1) * _row_bytes(self.conv_dim // self.tp, self.conv_dtype)
        state = (self.num_heads // self.tp) * self.head_v_dim * _row_bytes(self.head_k_dim, self.state_dtype)
        return self.num_layers * (conv + state)

    def tokens_held(self, tokens: int) -> int:
        return 0

    def reserved_blocks(self, tokens: int, block_size: int) -> int:
        return 0

    def attention_flops(self, new_tokens: ArrayLike, cached_tokens: ArrayLike) -> np.ndarray:
        n = np.asarray(new_tokens, dtype=np.float64) + 0.0 * np.asarray(cached_tokens, dtype=np.float64)
        return 6.0 * self.num_heads * self.head_k_dim * self.head_v_dim * self.num_layers * n

    def with_dtype(self, dtype: str) -> "RecurrentState":
        return self  # state dtypes are separate engine settings; see the class docstring

    def with_tp(self, tp: int) -> "RecurrentState":
        _check_tp_heads(tp, self.num_heads, "recurrent-state heads")
        if self.num_heads % tp or self.conv_dim % tp:
            raise ValueError(f"tensor-parallel size {tp} must divide {self.num_heads} state heads "
                             f"and conv dim {self.conv_dim} (vLLM divide())")
        return replace(self, tp=tp)

    def describe(self) -> str:
        per_layer = math.ceil(self.fixed_payload_bytes() / self.num_layers)
        return (f"{self.num_layers} layers x (conv {self.conv_kernel - 1}x{self.conv_dim // self.tp} + state "
                f"{self.num_heads // self.tp}x{self.head_v_dim}x{self.head_k_dim}) {self.dtype}"
                f" = {per_layer:,} B/layer, fixed per sequence")
