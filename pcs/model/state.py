"""Recurrent / SSM / linear-attention state: fixed bytes per sequence, split over TP ranks.

One class covers the state shapes vLLM's ``MambaStateShapeCalculator``
(``vllm/model_executor/layers/mamba/mamba_utils.py``) computes, per layer and rank:

- ``gated_deltanet`` (Qwen3-Next, ``gated_delta_net_state_shape``): conv
  (K - 1) x conv_dim / tp, conv_dim = 2 x K heads x head_k_dim + V heads x
  head_v_dim; recurrent state V heads / tp x head_k_dim x head_v_dim;
- ``mamba1`` (Jamba, ``mamba1_state_shape``): conv (K - 1) x intermediate / tp;
  state intermediate / tp x d_state (here num_heads = intermediate, head_v_dim = 1,
  head_k_dim = d_state);
- ``mamba2`` (Nemotron-H, ``mamba2_state_shape``): conv (K - 1) x (intermediate +
  2 x groups x d_state) / tp, where groups are first padded to tp when tp does
  not divide them (``extra_groups_for_head_shards``: each rank keeps one group);
  state heads / tp x head_dim x d_state (head_v_dim = head_dim, head_k_dim = d_state);
- ``lightning`` (MiniMax linear attention, ``linear_attention_state_shape``):
  heads / tp x head_dim x head_dim, fp32, no conv state.

Dtypes follow vLLM's ``mamba_cache_dtype`` / ``mamba_ssm_cache_dtype``
(default: the model dtype), not the KV ``--dtype``. Nothing grows with T.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import ClassVar

import numpy as np

from pcs.units import plural
from pcs.errors import UserError
from pcs.model.quant import row_bytes as _row_bytes
from pcs._dataclass import dataclass

__all__ = ["RecurrentState", "STATE_KINDS"]

#: State kinds and the vLLM shape function each follows.
STATE_KINDS: dict[str, str] = {
    "gated_deltanet": "MambaStateShapeCalculator.gated_delta_net_state_shape",
    "mamba1": "MambaStateShapeCalculator.mamba1_state_shape",
    "mamba2": "MambaStateShapeCalculator.mamba2_state_shape",
    "lightning": "MambaStateShapeCalculator.linear_attention_state_shape",
}


@dataclass(frozen=True, slots=True)
class RecurrentState:
    """Fixed per-sequence state of ``num_layers`` recurrent layers (see the module docstring).

    Attributes:
        num_layers: layers with this state.
        num_heads: state heads, split over TP ranks.
        head_k_dim, head_v_dim: state matrix per head is head_v_dim x head_k_dim values.
        conv_dim: conv channels split over TP ranks (0: no conv state).
        conv_kernel: conv kernel K; the conv state keeps K - 1 columns.
        conv_dtype, state_dtype: value dtypes.
        tp: tensor-parallel ranks.
        kind: a key of :data:`STATE_KINDS`.
        n_groups, group_dim: Mamba2 B/C groups and their conv channels (2 x d_state)
            each; padded to tp when tp does not divide them.
    FLOPs (approximate, per new token per layer): 6 x heads x head_k_dim x head_v_dim
    for the state read, the rank-1 update and the readout.
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
    kind: str = "gated_deltanet"
    n_groups: int = 0
    group_dim: int = 0

    @property
    def dtype(self) -> str:
        """Dtype label: ``bf16`` or ``bf16/fp32`` (conv/recurrent) when they differ."""
        return self.conv_dtype if self.conv_dtype == self.state_dtype else f"{self.conv_dtype}/{self.state_dtype}"

    def payload_bytes_per_token(self) -> int:
        return 0

    def scale_bytes_per_token(self) -> int:
        return 0

    def outside_page_bytes(self) -> int:
        return 0

    def _groups_per_rank(self) -> int:
        if not self.n_groups:
            return 0
        padded = self.n_groups if self.n_groups % self.tp == 0 else self.tp
        return padded // self.tp

    def conv_channels_per_rank(self) -> int:
        """Conv channels one rank keeps: conv_dim / tp + its groups x group_dim."""
        return self.conv_dim // self.tp + self._groups_per_rank() * self.group_dim

    def fixed_payload_bytes(self) -> int:
        """Conv + recurrent state bytes per sequence, all layers, one rank."""
        conv = max(self.conv_kernel - 1, 0) * _row_bytes(self.conv_channels_per_rank(), self.conv_dtype)
        state = (self.num_heads // self.tp) * self.head_v_dim * _row_bytes(self.head_k_dim, self.state_dtype)
        return self.num_layers * (conv + state)

    def tokens_held(self, tokens: int) -> int:
        return 0

    def reserved_blocks(self, tokens: int, block_size: int) -> int:
        return 0

    def attention_flops(self, new_tokens, cached_tokens) -> np.ndarray:
        n = np.asarray(new_tokens, dtype=np.float64) + 0.0 * np.asarray(cached_tokens, dtype=np.float64)
        return 6.0 * self.num_heads * self.head_k_dim * self.head_v_dim * self.num_layers * n

    def with_dtype(self, dtype: str) -> "RecurrentState":
        return self  # state dtypes are separate engine settings; see the module docstring

    def with_tp(self, tp: int) -> "RecurrentState":
        """Split over ``tp`` ranks (vLLM ``divide()``: tp must divide heads and conv channels).

        Raises:
            UserError: tp < 1 or a dimension tp does not divide.
        """
        if tp < 1:
            raise UserError(f"tensor-parallel size must be >= 1, got {tp}")
        if self.num_heads % tp or self.conv_dim % tp:
            raise UserError(f"tensor-parallel size {tp} must divide {self.num_heads} state heads "
                             f"and conv dim {self.conv_dim} (vLLM divide())")
        if self.n_groups and self.n_groups % tp and tp % self.n_groups:
            raise UserError(f"tensor-parallel size {tp} and {self.n_groups} Mamba2 groups: one must divide "
                             "the other (vLLM extra_groups_for_head_shards)")
        return replace(self, tp=tp)

    def describe(self) -> str:
        per_layer = math.ceil(self.fixed_payload_bytes() / self.num_layers)
        conv = (f"conv {self.conv_kernel - 1}x{self.conv_channels_per_rank()} + "
                if self.conv_kernel > 1 else "")
        return (f"{self.num_layers} {self.kind} {plural(self.num_layers, 'layer')} x ({conv}state "
                f"{self.num_heads // self.tp}x{self.head_v_dim}x{self.head_k_dim}) {self.dtype}"
                f" = {per_layer:,} B/layer, fixed per sequence")
