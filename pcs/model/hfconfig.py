"""Build a :class:`ModelSpec` from a Hugging Face ``config.json`` (local file, no network).

Recognised (field names as in the transformers configs):

- MLA (DeepSeek-V2/V3): ``kv_lora_rank``, ``qk_rope_head_dim``, ``qk_nope_head_dim``,
  ``v_head_dim``; with ``index_head_dim`` / ``index_n_heads`` / ``index_topk``
  (DeepSeek-V3.2) an indexer component is added.
- GQA/MHA/MQA: ``num_key_value_heads`` (default ``num_attention_heads``),
  ``head_dim`` (default: the family's, else ``hidden_size // num_attention_heads``).
- The layer pattern (full, sliding, chunked, Gated DeltaNet, Mamba1/2, MLP-only
  layers): :func:`pcs.model.families.layer_pattern` -- the config's
  ``layer_types``, else the ``model_type``'s documented rule; an ambiguous
  config gets a stated assumption (``ModelSpec.assumptions``).
- Multimodal wrappers: fields of ``text_config`` override the top level.

Parameter counts are estimated from the shapes (:func:`pcs.model.params.estimate_params`)
unless the caller passes them.
"""
from __future__ import annotations

import os
from typing import Any

from pcs.errors import InputError, shown_repr
from pcs.model.components import ChunkedLocalAttention, FullAttention, SlidingWindow
from pcs.model.configfields import Fields
from pcs.model.families import layer_pattern
from pcs.model.params import estimate_params, weight_bytes_per_param
from pcs.model.quant import normalize_dtype
from pcs.model.spec import ModelSpec

__all__ = ["load_hf_config", "build_spec", "estimate_params"]


def _mla_components(f: Fields, num_layers: int, kv_dtype: str) -> list:
    from pcs.model.mla import IndexerKeys, MLALatent   # an MLA model's records: not loaded for the others

    topk = f.int("index_topk") if f.has("index_head_dim") else None
    mla = MLALatent(num_layers=num_layers, kv_lora_rank=f.int("kv_lora_rank"),
                    rope_dim=f.int("qk_rope_head_dim"), num_q_heads=f.int("num_attention_heads"),
                    qk_nope_head_dim=f.int("qk_nope_head_dim"), v_head_dim=f.int("v_head_dim"), topk=topk)
    comps: list = [mla.with_dtype(kv_dtype)]
    if f.has("index_head_dim"):
        comps.append(IndexerKeys(num_layers=num_layers, index_head_dim=f.int("index_head_dim"),
                                 index_n_heads=f.int("index_n_heads")))
    return comps


def _state_dtype(f: Fields, model_dtype: str) -> str:
    """``mamba_ssm_dtype`` (a dtype name), else the model's dtype.

    Raises:
        InputError: not a string, or an unknown dtype, naming the file and the field.
    """
    ssm = f.cfg.get("mamba_ssm_dtype")
    if ssm is None:
        return model_dtype
    if not isinstance(ssm, str):
        raise InputError(f.path, None, "mamba_ssm_dtype", f"must be a dtype name, got {shown_repr(ssm)}")
    try:
        return normalize_dtype(ssm)
    except ValueError as exc:
        raise InputError(f.path, None, "mamba_ssm_dtype", str(exc)) from None


def _gdn_state(f: Fields, num_layers: int, model_dtype: str) -> RecurrentState:
    from pcs.model.state import RecurrentState   # a hybrid model's record: not loaded for the others

    nk, nv = f.int("linear_num_key_heads"), f.int("linear_num_value_heads")
    dk, dv = f.int("linear_key_head_dim"), f.int("linear_value_head_dim")
    return RecurrentState(num_layers=num_layers, num_heads=nv, head_k_dim=dk, head_v_dim=dv,
                          conv_dim=2 * nk * dk + nv * dv, conv_kernel=f.int("linear_conv_kernel_dim"),
                          conv_dtype=model_dtype, state_dtype=_state_dtype(f, model_dtype))


def _mamba_state(f: Fields, num_layers: int, model_dtype: str) -> RecurrentState:
    """Mamba1 (Jamba) or Mamba2 (Nemotron-H) state; shapes in :mod:`pcs.model.state`.

    Raises:
        InputError: Mamba layers in a model_type pcs knows no state fields of; Mamba2's ``n_groups`` not dividing
            ``mamba_num_heads`` (``mamba_chunk_scan_combined`` in mamba_ssm's SSD kernels asserts
            ``nheads % ngroups == 0``).
    """
    from pcs.model.state import RecurrentState

    kind = f.family.state_kind if f.family is not None else ""
    dtypes = dict(conv_dtype=model_dtype, state_dtype=_state_dtype(f, model_dtype))
    if kind == "mamba1":
        inter, n = f.int("mamba_expand") * f.int("hidden_size"), f.int("mamba_d_state")
        return RecurrentState(num_layers=num_layers, num_heads=inter, head_k_dim=n, head_v_dim=1, conv_dim=inter,
                              conv_kernel=f.int("mamba_d_conv"), kind="mamba1", **dtypes)
    if kind == "mamba2":
        heads, hd, n = f.int("mamba_num_heads"), f.int("mamba_head_dim"), f.int("ssm_state_size")
        groups = f.int("n_groups")
        if heads % groups:   # Mamba2 shares each B/C group among nheads / ngroups heads (the SSD kernels' rule)
            raise InputError(f.path, None, "n_groups", f"{groups} does not divide mamba_num_heads {heads}: Mamba2 "
                             "shares each B/C group among mamba_num_heads / n_groups heads")
        return RecurrentState(num_layers=num_layers, num_heads=heads, head_k_dim=n, head_v_dim=hd,
                              conv_dim=heads * hd, conv_kernel=f.int("conv_kernel"), kind="mamba2",
                              n_groups=groups, group_dim=2 * n, **dtypes)
    raise InputError(f.path, None, "model_type", "Mamba layers need a model_type whose state fields pcs knows "
                     "(jamba: Mamba1, nemotron_h: Mamba2)")


def _window(f: Fields, key: str) -> int:
    if key in f.cfg and f.cfg[key] is None:
        raise InputError(f.path, None, key, "is null but the layer pattern has layers that need it")
    return f.int(key)


def _gqa_components(f: Fields, kinds: tuple[str, ...], kv_dtype: str, assumptions: list[str]) -> list:
    heads = f.int("num_attention_heads")
    if not f.has("num_key_value_heads") and f.family is None:
        assumptions.append(f"num_key_value_heads missing: assumed {heads} (one KV head per attention head, MHA)")
    if f.head_dim_assumed():
        assumptions.append(f"head_dim missing: assumed hidden_size / num_attention_heads = {f.head_dim()}")
    kv_heads = f.int("num_key_value_heads", default=heads)
    if kv_heads > heads or heads % kv_heads:
        raise InputError(f.path, None, "num_key_value_heads", f"{kv_heads} KV heads must divide the {heads} "
                         "attention heads (each KV head serves a whole group of query heads: HF's repeat_kv, "
                         "vLLM's attention backends assert num_heads % num_kv_heads == 0)")
    gqa = dict(num_kv_heads=kv_heads, head_dim=f.head_dim(), num_q_heads=heads)
    comps: list = []
    if kinds.count("full"):
        comps.append(FullAttention(num_layers=kinds.count("full"), **gqa))
    if kinds.count("sliding"):
        comps.append(SlidingWindow(num_layers=kinds.count("sliding"), window_tokens=_window(f, "sliding_window"),
                                   **gqa))
    if kinds.count("chunked"):
        comps.append(ChunkedLocalAttention(num_layers=kinds.count("chunked"),
                                           chunk_tokens=_window(f, "attention_chunk_size"), **gqa))
    return [c.with_dtype(kv_dtype) for c in comps]


def _components(f: Fields, kinds: tuple[str, ...], model_dtype: str, assumptions: list[str]) -> list:
    if kinds and kinds[0] == "mla":
        return _mla_components(f, len(kinds), model_dtype)
    comps = _gqa_components(f, kinds, model_dtype, assumptions)
    if kinds.count("linear"):
        comps.append(_gdn_state(f, kinds.count("linear"), model_dtype))
    if kinds.count("mamba"):
        comps.append(_mamba_state(f, kinds.count("mamba"), model_dtype))
    return comps


def _estimate(cfg: dict[str, Any], path: str, assumptions: list[str]) -> tuple[int, int]:
    """:func:`estimate_params`, or (0, 0) with an assumption when a shape field is missing.

    Raises:
        InputError: a shape field given but malformed (``num_local_experts: -8``, ``"8"``, top-k above the
            expert count): refused naming the field, not taken as unknown weights.
    """
    try:
        return estimate_params(cfg, path)
    except InputError as exc:
        if Fields.of(cfg, path).cfg.get(exc.field) is not None:
            raise
        assumptions.append(f"parameters not estimated ({exc.field} missing or malformed): weights and their "
                           "FLOPs count as 0; a GPU tier cannot be sized from this deployment")
        return 0, 0


def _shadowed(cfg: dict[str, Any]) -> list[str]:
    """One sentence per top-level field that ``text_config`` gives another value (``model_type`` aside): the text
    model's value is used (transformers' multimodal configs, e.g. Llama4Config, read the text fields from
    ``text_config``), so an edit of the top-level copy must not pass unsaid."""
    text = cfg.get("text_config") if isinstance(cfg, dict) else None
    if not isinstance(text, dict):
        return []
    return [f"{k} is {shown_repr(cfg[k])} at the top level but {shown_repr(text[k])} in text_config: used text_config's {shown_repr(text[k])}"
            for k in cfg if k in text and k != "model_type" and cfg[k] != text[k]]


def build_spec(cfg: dict[str, Any], *, name: str, source: str, path: str = "<config>",
               active_params: int | None = None, total_params: int | None = None,
               weight_dtype_bytes: float | None = None) -> ModelSpec:
    """Build a spec from a parsed config dict (shared by presets and ``--model-config``).

    Raises:
        InputError: a required field is missing or malformed, or no layer holds a cache (every layer an MLP):
            names ``path`` and the field.
    """
    f = Fields.of(cfg, path)
    num_layers = f.int("num_hidden_layers")
    pattern = layer_pattern(f, num_layers)
    assumptions = list(pattern.assumptions) + _shadowed(cfg) + _kv_dtype_asked(f.cfg)
    if f.family is None and f.cfg.get("model_type"):
        assumptions.append(f"model_type {shown_repr(f.cfg['model_type'])} has no family rule in pcs "
                           "(pcs.model.families): read with the generic rules, no family defaults")
    if not (f.has("torch_dtype") or f.has("dtype")):
        assumptions.append("torch_dtype missing: assumed bfloat16 weights and KV")
    model_dtype = f.dtype()
    comps = _components(f, pattern.kinds, model_dtype, assumptions)
    if not comps:   # only MLP layers (Nemotron-H "-"/"E"): 0 bytes per block, nothing to cache or size
        field = "layer_types" if f.cfg.get("layer_types") is not None else (
            "hybrid_override_pattern" if f.has("hybrid_override_pattern") else "num_hidden_layers")
        which = "its one layer does not hold" if num_layers == 1 else f"none of the {num_layers} layers holds"
        raise InputError(path, None, field, f"{which} a KV cache or state (attention, "
                         "Mamba or linear attention; here every layer is an MLP): nothing to cache")
    if active_params is None or total_params is None:
        est_active, est_total = _estimate(cfg, path, assumptions)
        active_params = est_active if active_params is None else active_params
        total_params = est_total if total_params is None else total_params
    if weight_dtype_bytes is None:
        weight_dtype_bytes = weight_bytes_per_param(f.cfg, model_dtype)
    return ModelSpec(name=name, components=tuple(comps), num_layers=num_layers, active_params=int(active_params),
                     total_params=int(total_params), weight_dtype_bytes=float(weight_dtype_bytes),
                     source=source, layer_types=pattern.kinds, model_type=str(f.cfg.get("model_type") or ""),
                     assumptions=tuple(assumptions), max_context_tokens=_max_context(f))


def _kv_dtype_asked(cfg: dict[str, Any]) -> list[str]:
    """A sentence when the config asks for a KV cache dtype (``kv_cache_dtype``, or a compressed-tensors
    ``quantization_config.kv_cache_scheme``): pcs does not take it from the config, as vLLM does not (its
    ``kv_cache_dtype`` is a serving option, ``auto`` = the model dtype, ``vllm/config/cache.py``); the KV dtype is
    the run's ``dtype`` (``--dtype`` on the command line), which sizes fp8 and others (``pcs.model.layouts``)."""
    quant = cfg.get("quantization_config")
    scheme = quant.get("kv_cache_scheme") if isinstance(quant, dict) else None
    asked = [f"kv_cache_dtype {shown_repr(cfg['kv_cache_dtype'])}"] if cfg.get("kv_cache_dtype") is not None else []
    if scheme is not None:
        asked.append(f"quantization_config.kv_cache_scheme {shown_repr(scheme)}")
    if not asked:
        return []
    return [f"the config asks for a KV cache dtype ({'; '.join(asked)}): pcs does not read it there (vLLM takes "
            "the KV dtype from its kv_cache_dtype setting, not the config); the KV is sized in the run's dtype "
            "(--dtype, e.g. fp8; default the model's)"]


#: The largest ``max_position_embeddings`` read (2^40 tokens): above any model's context (Llama 4 Scout's
#: 10,485,760 passes the 2^20 bound of the other fields), far inside int64.
MAX_CONTEXT_TOKENS = 2**40


def _max_context(f: Fields) -> int | None:
    """``max_position_embeddings`` (text_config's for a multimodal wrapper), None when absent or null; a value
    given is an integer in 1..2^40, as every config integer is bounded (:meth:`Fields.int`).

    Raises:
        InputError: a negative, fractional, text or too-large value, naming the file and field.
    """
    if f.cfg.get("max_position_embeddings") is None:
        return None
    return f.int("max_position_embeddings", maximum=MAX_CONTEXT_TOKENS)


def config_name(cfg: dict[str, Any]) -> str:
    """The model's name from the config: ``_name_or_path``, else ``model_type``, else ``hf-config``."""
    text = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else {}
    return str(cfg.get("_name_or_path") or cfg.get("model_type") or text.get("model_type") or "hf-config")


def load_hf_config(path: str | os.PathLike) -> ModelSpec:
    """Read a local Hugging Face ``config.json`` and build its :class:`ModelSpec`.

    The name comes from the config (:func:`config_name`), not the folder.
    Parameter counts are estimated (:func:`estimate_params`).

    Raises:
        PathError: ``path`` is missing, a directory or not readable (naming ``path=``).
        InputError (a ValueError): not JSON, or a field missing/malformed; the
            message names the file and the field.
    """
    from pcs.configfile import read_json_object_lines  # bounded, UTF-8, finite numbers; errors name file and line

    path = os.fspath(path)
    cfg, lines = read_json_object_lines(path)
    if isinstance(cfg.get("text_config"), dict):    # its fields override the top level's (Fields.of): looked for first
        lines.prefixes = ("text_config.", "")
    with lines.located():
        return build_spec(cfg, name=config_name(cfg), source=path, path=path)
