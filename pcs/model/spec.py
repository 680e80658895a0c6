"""ModelSpec: a model as the tuple of its KV components plus what the compute model needs.

A spec is built from a preset (:mod:`pcs.model.presets`) or a Hugging Face
``config.json`` (:mod:`pcs.model.hfconfig`). Byte figures are per
tensor-parallel rank (what one GPU holds); ``tp`` says how many ranks there
are. FLOPs are for the whole model and do not depend on ``tp``.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Union

import numpy as np

from pcs.errors import UnknownNameError, UserError, shown_repr
from pcs.model.components import KVComponent
from pcs.model.layouts import KVLayout, get_layout
from pcs._dataclass import dataclass

__all__ = ["ModelSpec", "BYTE_MODES"]

_ATTENTION = ("full_attention", "sliding_window", "chunked_local", "mla_latent")

#: Accounting modes for per-token bytes (docs/semantics.md §13).
BYTE_MODES: tuple[str, ...] = ("reference", "serialized", "reserved")


def check_mode(mode: str) -> str:
    """Return ``mode`` if valid.

    Raises:
        UserError: unknown mode, listing the valid ones.
    """
    if mode not in BYTE_MODES:
        raise UnknownNameError("byte accounting mode", mode, BYTE_MODES)
    return mode


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A model's KV layout and size.

    Attributes:
        name: preset name or the config's model name.
        components: one :class:`pcs.model.components.KVComponent` per kind of
            layer state (``.name`` is ``full_attention``, ``sliding_window``,
            ``chunked_local``, ``mla_latent``, ``indexer_keys`` or ``ssm_state``).
        num_layers: decoder layers in total.
        active_params: parameters used per token (MoE: routed top-k + shared).
        total_params: all parameters.
        weight_dtype_bytes: bytes per parameter of the served weights (2.0 = bf16).
        source: where the numbers came from (config URL or file path).
        layer_types: per layer ``"full"``, ``"sliding"``, ``"chunked"``, ``"linear"``,
            ``"mamba"``, ``"mla"`` or ``"mlp"`` (no cache).
        tp: tensor-parallel ranks; byte figures are per rank.
        model_type: the config's ``model_type`` ("" for none).
        assumptions: what was assumed where the config was ambiguous (one sentence
            each, :mod:`pcs.model.families`); empty when nothing was.
        max_context_tokens: the config's ``max_position_embeddings`` (the longest sequence the model
            takes), or None when the config does not give it.
    """

    name: str
    components: tuple[KVComponent, ...]
    num_layers: int
    active_params: int
    total_params: int
    weight_dtype_bytes: float = 2.0
    source: str = ""
    layer_types: tuple[str, ...] = ()
    tp: int = 1
    model_type: str = ""
    assumptions: tuple[str, ...] = ()
    max_context_tokens: int | None = None

    def with_dtype(self, dtype: str) -> "ModelSpec":
        """The same model with attention KV (full, sliding, chunked, MLA) stored in layout ``dtype``.

        ``dtype`` is an engine's name or a short name (:func:`pcs.model.layouts.get_layout`).
        Indexer keys and recurrent state keep their own dtypes (engine settings
        separate from the KV cache dtype).

        Raises:
            UserError: unknown dtype (the message lists the valid ones), or a
                layout the model's MLA latent has no form for.
        """
        get_layout(dtype)
        return replace(self, components=tuple(c.with_dtype(dtype) for c in self.components))

    def with_tp(self, tp: int) -> "ModelSpec":
        """The same model split over ``tp`` tensor-parallel ranks (bytes become per rank).

        KV heads are split (at least one per rank, replicated beyond that); MLA
        latents and indexer keys are replicated; recurrent states are split.

        Raises:
            UserError: tp < 1 or a head count that tp does not divide.
        """
        if not isinstance(tp, (int, np.integer)) or tp < 1:
            raise UserError(f"tensor-parallel size must be an integer >= 1, got {shown_repr(tp)}")
        return replace(self, components=tuple(c.with_tp(int(tp)) for c in self.components), tp=int(tp))

    def _attention(self) -> KVComponent | None:
        for c in self.components:
            if c.name in _ATTENTION:
                return c
        return None

    @property
    def config_file(self) -> str | None:
        """The config file the spec was read from (``--model PATH.json``, as given), None for a preset (whose
        ``source`` is its config's URL): what a message or a header names, since ``name`` is the config's
        ``_name_or_path`` or ``model_type``, no preset a user could pass back."""
        return self.source if self.source and not self.source.startswith(("https://", "http://")) else None

    @property
    def kv_dtype(self) -> str:
        """Value dtype of the first attention component (the one ``--dtype`` sets)."""
        c = self._attention()
        if c is not None:
            return c.dtype
        return self.components[0].dtype if self.components else "bf16"

    @property
    def kv_layout(self) -> KVLayout:
        """The KV layout of the attention components (:mod:`pcs.model.layouts`); bf16 without attention."""
        c = self._attention()
        return get_layout(c.layout_name if c is not None else "bf16")

    def outside_page_bytes(self) -> int:
        """Bytes per rank kept outside the pages whatever the tokens (per-tensor scales)."""
        return sum(c.outside_page_bytes() for c in self.components)

    def component(self, name: str) -> KVComponent | None:
        """The component called ``name``, or None."""
        for c in self.components:
            if c.name == name:
                return c
        return None

    def kv_bytes_per_token(self, mode: str = "reference") -> int:
        """Bytes one more token adds, per rank, over token-growing components.

        ``reference`` counts payload only; ``serialized`` and ``reserved`` add
        quantisation scales (a reserved page holds the same bytes per token; its
        extra cost is block rounding, see :func:`pcs.model.footprint.reserved_bytes`).
        A sliding-window layer counts here (it grows until its window is full);
        fixed recurrent state does not (see ``fixed_bytes_per_sequence``).

        Raises:
            UserError: unknown mode.

        >>> from pcs.model import get_model
        >>> get_model("llama-3.1-8b").kv_bytes_per_token()
        131072
        """
        check_mode(mode)
        total = 0
        for c in self.components:
            total += c.payload_bytes_per_token()
            if mode != "reference":
                total += c.scale_bytes_per_token()
        return total

    def fixed_bytes_per_sequence(self) -> int:
        """Bytes per sequence that do not grow with tokens (recurrent state), per rank."""
        return sum(c.fixed_payload_bytes() for c in self.components)

    def attention_flops(self, new_tokens, cached_tokens=0) -> Union[float, np.ndarray]:
        """FLOPs of the attention products for n new tokens after c cached, whole model.

        Sum over components: score (QK^T) and value (PV) products at 2 FLOPs per
        multiply-add, causal, respecting sliding windows and DSA top-k; the
        indexer's scores; an approximate linear-attention state term. Weights'
        FLOPs (2 x active params per token) are NOT included.

        Args:
            new_tokens: n, scalar or array (numpy-broadcastable with cached_tokens).
            cached_tokens: c, scalar or array.
        Returns:
            float for scalar inputs, else a float64 array of the broadcast shape.

        >>> from pcs.model import get_model
        >>> get_model("llama-3.1-8b").attention_flops(1, 0)  # 32 layers x 2 x 32 heads x 256
        524288.0
        """
        total = np.zeros(np.broadcast(np.asarray(new_tokens), np.asarray(cached_tokens)).shape)
        for c in self.components:
            total = total + c.attention_flops(new_tokens, cached_tokens)
        return float(total) if np.ndim(total) == 0 else total
