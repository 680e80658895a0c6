"""MLA latents and sparse-attention indexer keys: the DeepSeek KV components.

Same protocol as :mod:`pcs.model.components` (per rank, summed over layers).
Both are held whole by every TP rank (vLLM ``ModelConfig.get_num_kv_heads``
returns 1 for MLA).
"""
from __future__ import annotations

from dataclasses import field, replace
from typing import ClassVar

import numpy as np

from pcs.units import plural
from pcs.errors import UserError
from pcs.model.components import ArrayLike, _check_tp_q_heads, _PerToken, _Stored, causal_pairs, windowed_pairs
from pcs.model.layouts import mla_form
from pcs.model.quant import QuantScales
from pcs.model.quant import row_bytes as _row_bytes
from pcs._dataclass import dataclass

__all__ = ["MLALatent", "IndexerKeys"]


@dataclass(frozen=True, slots=True)
class MLALatent(_Stored):
    """Multi-head latent attention: one compressed latent per token per layer, no separate V.

    Bytes per token per layer = kv_lora_rank x dtype + qk_rope_head_dim x rope dtype
    (+ scales). DeepSeek-V3 BF16: 61 x (512 + 64) x 2 B = 70,272 B/token.
    Layouts (:func:`pcs.model.layouts.mla_form`): vLLM ``fp8`` stores the 576
    values in fp8 with per-tensor scales outside the pages (576 B per token per
    layer, ``MLAAttentionSpec.real_page_size_bytes``); ``fp8_ds_mla`` (what
    ``fp8`` becomes on DeepSeek-V3.2) gives the latent one fp32 scale per 128
    values and keeps the rope part in bf16: 512 + 4 x 4 + 64 x 2 = 656 B.
    Replicated on every TP rank: vLLM ``get_num_kv_heads`` returns 1 for MLA.
    FLOPs use the non-absorbed prefill form: heads x (qk_nope + rope + v) per pair;
    with ``topk`` (DeepSeek sparse attention) a query attends to min(p, topk) keys.
    """

    name: ClassVar[str] = "mla_latent"
    num_layers: int
    # the stored latent: kv_lora_rank values, then rope_dim values in rope_dtype (None: dtype)
    kv_lora_rank: int
    rope_dim: int
    rope_dtype: str | None = field(default=None, kw_only=True)
    # the attention's shape, read by the FLOPs only; topk: keys per query of sparse attention (None: dense)
    num_q_heads: int
    qk_nope_head_dim: int
    v_head_dim: int
    topk: int | None = None

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
        """Stored in layout ``dtype`` (:func:`pcs.model.layouts.mla_form`; sparse = has ``topk``).

        Raises:
            UserError: unknown dtype, a layout without an MLA form, or ``fp8_ds_mla`` (fixed at 512 latent + 64
                rope values) for another latent or rope width.
        """
        form = mla_form(dtype, sparse=self.topk is not None)
        if form.layout.name == "fp8_ds_mla" and (self.kv_lora_rank, self.rope_dim) != (512, 64):
            raise UserError(f"KV dtype 'fp8_ds_mla' holds a latent of 512 and a rope of 64 values (FlashMLA's "
                            f"656 B row, vLLM flashmla_sparse.py); this model's are {self.kv_lora_rank} and "
                            f"{self.rope_dim}: use bf16, fp16 or fp8 (per tensor)")
        return replace(self, dtype=form.latent_dtype, scales=form.scales, layout=form.layout.name,
                       rope_dtype=None if form.rope_dtype == form.latent_dtype else form.rope_dtype)

    def with_tp(self, tp: int) -> "MLALatent":
        _check_tp_q_heads(tp, self.num_q_heads)
        return replace(self, tp=tp)

    def describe(self) -> str:
        rope = self.rope_dtype or self.dtype
        return (f"{self.num_layers} {plural(self.num_layers, 'layer')} x ({self.kv_lora_rank} {self.dtype} + {self.rope_dim} rope {rope}),"
                f" {self.layout_name}, replicated per rank")


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
            raise UserError(f"tensor-parallel size must be >= 1, got {tp}")
        return replace(self, tp=tp)

    def describe(self) -> str:
        return f"{self.num_layers} {plural(self.num_layers, 'layer')} x {self.index_head_dim} {self.dtype} (+ scales), replicated per rank"
