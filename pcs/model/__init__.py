"""Model specs: KV components, presets, HF config import and the footprint view.

Public API (used by the budget, compute, replay and curve parts):

- :func:`get_model`, :data:`MODEL_NAMES`, :func:`list_models`, :func:`load_hf_config`
- :class:`ModelSpec` (``with_dtype``, ``with_tp``, ``attention_flops``, ``kv_bytes_per_token``)
- :func:`block_bytes` -> :class:`BlockBytes`, :func:`reserved_bytes`, :func:`footprint`

All byte figures are ints, per tensor-parallel rank; see
:mod:`pcs.model.footprint` for what one cached block of each component holds.
"""
from pcs.model.components import (DTYPE_BITS, KV_DTYPES, FullAttention, IndexerKeys, MLALatent, QuantScales,
                                  RecurrentState, SlidingWindow, normalize_dtype)
from pcs.model.footprint import (BlockBytes, FootprintResult, block_bytes, footprint, prefix_store_bytes,
                                 reserved_bytes)
from pcs.model.hfconfig import build_spec, estimate_params, load_hf_config
from pcs.model.presets import MODEL_NAMES, get_model, list_models
from pcs.model.spec import BYTE_MODES, ModelSpec

__all__ = [
    "DTYPE_BITS", "KV_DTYPES", "BYTE_MODES", "normalize_dtype", "QuantScales",
    "FullAttention", "SlidingWindow", "MLALatent", "IndexerKeys", "RecurrentState",
    "ModelSpec", "get_model", "MODEL_NAMES", "list_models", "load_hf_config", "build_spec", "estimate_params",
    "BlockBytes", "block_bytes", "reserved_bytes", "prefix_store_bytes", "FootprintResult", "footprint",
]
