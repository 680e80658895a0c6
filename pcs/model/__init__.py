"""Model specs: KV components, layouts, presets, HF config import, the footprint and the deployment.

Public API (used by the budget, compute, replay and curve parts):

- :func:`get_model`, :data:`MODEL_NAMES`, :func:`list_models`, :func:`load_hf_config`
- :class:`ModelSpec` (``with_dtype``, ``with_tp``, ``attention_flops``, ``kv_bytes_per_token``)
- :func:`get_layout`, :data:`KV_DTYPES` (the names ``--dtype`` takes), :class:`KVLayout`
- :func:`block_bytes` -> :class:`BlockBytes`, :func:`reserved_bytes`, :func:`footprint`
- :func:`group_block_bytes`, :func:`tp_placement` (a TP group's bytes, :mod:`pcs.model.parallel`)
- :func:`size_deployment` (HBM -> weights, reserve, KV pool, :mod:`pcs.model.deploy`)

Footprint figures are ints per tensor-parallel rank; a replay tier holds a TP
group (per-rank bytes x the ranks holding a copy, :mod:`pcs.model.parallel`).
"""
from pcs.model.components import ChunkedLocalAttention, FullAttention, QuantScales, SlidingWindow
from pcs.model.footprint import (BlockBytes, FootprintResult, block_bytes, footprint, prefix_store_bytes,
                                 reserved_bytes)
from pcs.model.hfconfig import build_spec, estimate_params, load_hf_config
from pcs.model.layouts import LAYOUT_NAMES, KVLayout, get_layout
from pcs.model.mla import IndexerKeys, MLALatent
from pcs.model.parallel import TPPlacement, group_block_bytes, group_bytes_per_token, tp_placement
from pcs.model.presets import MODEL_NAMES, get_model, list_models
from pcs.model.quant import DTYPE_BITS, normalize_dtype
from pcs.model.spec import BYTE_MODES, ModelSpec
from pcs.model.state import RecurrentState

#: Names ``--dtype`` accepts: short names, then the engines' layout names (:mod:`pcs.model.layouts`).
KV_DTYPES: tuple[str, ...] = LAYOUT_NAMES

__all__ = [
    "DTYPE_BITS", "KV_DTYPES", "BYTE_MODES", "normalize_dtype", "QuantScales", "KVLayout", "get_layout",
    "FullAttention", "SlidingWindow", "ChunkedLocalAttention", "MLALatent", "IndexerKeys", "RecurrentState",
    "ModelSpec", "get_model", "MODEL_NAMES", "list_models", "load_hf_config", "build_spec", "estimate_params",
    "BlockBytes", "block_bytes", "reserved_bytes", "prefix_store_bytes", "FootprintResult", "footprint",
    "TPPlacement", "tp_placement", "group_block_bytes", "group_bytes_per_token",
]
