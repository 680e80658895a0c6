"""Model specs: KV components, layouts, presets, HF config import, the footprint and the deployment.

Public API (used by the budget, compute, replay and curve parts):

- :func:`get_model`, :data:`MODEL_NAMES`, :func:`list_models`, :func:`load_hf_config`
- :class:`ModelSpec` (``with_dtype``, ``with_tp``, ``attention_flops``, ``kv_bytes_per_token``)
- :func:`get_layout`, :data:`KV_DTYPES` (the names ``--dtype`` takes), :class:`KVLayout`
- :func:`block_bytes` -> :class:`BlockBytes`, :func:`reserved_bytes`, :func:`footprint`
- :func:`group_block_bytes`, :func:`tp_placement` (a TP group's bytes, :mod:`pcs.model.parallel`)
- :func:`size_deployment` (HBM -> weights, reserve, KV pool, :mod:`pcs.model.deploy`)

Footprint figures are ints per tensor-parallel rank; a replay tier holds a TP
group (per-rank bytes x the ranks, each holding its share, :mod:`pcs.model.parallel`).

The names are imported on first use (:func:`pcs._lazy.lazy_package`), so ``pcs.model.layouts`` (the ``--dtype`` names) loads
without numpy.
"""
from __future__ import annotations

from pcs._lazy import lazy_package
from pcs.model.layouts import LAYOUT_NAMES

#: Names ``--dtype`` accepts: short names, then the engines' layout names (:mod:`pcs.model.layouts`).
KV_DTYPES: tuple[str, ...] = LAYOUT_NAMES

__all__ = [
    "DTYPE_BITS", "KV_DTYPES", "BYTE_MODES", "normalize_dtype", "QuantScales", "KVLayout", "get_layout",
    "FullAttention", "SlidingWindow", "ChunkedLocalAttention", "MLALatent", "IndexerKeys", "RecurrentState",
    "ModelSpec", "get_model", "MODEL_NAMES", "list_models", "load_hf_config", "build_spec", "estimate_params",
    "BlockBytes", "block_bytes", "reserved_bytes", "prefix_store_bytes", "FootprintResult", "footprint",
    "TPPlacement", "tp_placement", "group_block_bytes", "group_bytes_per_token",
]

lazy_package(__name__, {
    "ChunkedLocalAttention": "components", "FullAttention": "components", "QuantScales": "components",
    "SlidingWindow": "components", "BlockBytes": "footprint", "FootprintResult": "footprint",
    "block_bytes": "footprint", "footprint": "footprint", "prefix_store_bytes": "footprint",
    "reserved_bytes": "footprint", "build_spec": "hfconfig", "estimate_params": "hfconfig",
    "load_hf_config": "hfconfig", "KVLayout": "layouts", "get_layout": "layouts", "IndexerKeys": "mla",
    "MLALatent": "mla", "TPPlacement": "parallel", "group_block_bytes": "parallel",
    "group_bytes_per_token": "parallel", "tp_placement": "parallel", "MODEL_NAMES": "presets",
    "get_model": "presets", "list_models": "presets", "DTYPE_BITS": "quant", "normalize_dtype": "quant",
    "BYTE_MODES": "spec", "ModelSpec": "spec", "RecurrentState": "state"})
