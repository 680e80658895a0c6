"""Build a :class:`ModelSpec` from a Hugging Face ``config.json`` (local file, no network).

Recognised layouts (field names as in the transformers configs):

- MLA (DeepSeek-V2/V3): ``kv_lora_rank``, ``qk_rope_head_dim``, ``qk_nope_head_dim``,
  ``v_head_dim``; with ``index_head_dim`` / ``index_n_heads`` / ``index_topk``
  (DeepSeek-V3.2) an indexer component is added.
- GQA/MHA/MQA: ``num_key_value_heads`` (default ``num_attention_heads``),
  ``head_dim`` (default ``hidden_size // num_attention_heads``).
- Layer pattern: ``layer_types`` (``full_attention``, ``sliding_attention``,
  ``linear_attention``), else ``full_attention_interval`` (Qwen3-Next: layer i
  is full when (i+1) % interval == 0, else Gated DeltaNet), else
  ``sliding_window_pattern`` (Gemma 3: layer i is global when (i+1) % pattern == 0),
  else ``sliding_window`` on every layer when set and ``use_sliding_window`` is
  not false (Mistral), honouring Qwen2's ``max_window_layers``.
- Multimodal wrappers: fields of ``text_config`` override the top level.

Parameter counts are estimated from the shapes (:func:`estimate_params`) unless
the caller passes them; the estimate ignores norms and biases.
"""
from __future__ import annotations

import json
import os
from typing import Any

from pcs.errors import InputError
from pcs.model.components import (FullAttention, IndexerKeys, MLALatent, RecurrentState, SlidingWindow,
                                  normalize_dtype)
from pcs.model.spec import ModelSpec

__all__ = ["load_hf_config", "build_spec", "estimate_params"]

_LAYER_TYPE_NAMES = {
    "full_attention": "full", "attention": "full", "global": "full", "full": "full",
    "sliding_attention": "sliding", "sliding_window": "sliding", "local": "sliding", "sliding": "sliding",
    "linear_attention": "linear", "mamba": "linear", "linear": "linear",
}


class _Fields:
    """Typed access to config fields with errors naming the file and field."""

    def __init__(self, cfg: dict[str, Any], path: str):
        self.cfg = cfg
        self.path = path

    def has(self, key: str) -> bool:
        return self.cfg.get(key) is not None

    def int(self, key: str, default: int | None = None, minimum: int = 1) -> int:
        value = self.cfg.get(key)
        if value is None:
            if default is None:
                raise InputError(self.path, None, key, "missing (required to size the KV cache)")
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise InputError(self.path, None, key, f"must be an integer >= {minimum}, got {value!r}")
        return value

    def dtype(self) -> str:
        raw = self.cfg.get("torch_dtype") or self.cfg.get("dtype") or "bfloat16"
        try:
            return normalize_dtype(raw)
        except ValueError:
            raise InputError(self.path, None, "torch_dtype", f"unknown dtype {raw!r}") from None


def _layer_types(f: _Fields, num_layers: int) -> list[str]:
    raw = f.cfg.get("layer_types")
    if raw is not None:
        if not isinstance(raw, list) or len(raw) != num_layers:
            raise InputError(f.path, None, "layer_types",
                             f"must be a list of {num_layers} entries (num_hidden_layers)")
        out = []
        for t in raw:
            if t not in _LAYER_TYPE_NAMES:
                raise InputError(f.path, None, "layer_types", f"unknown layer type {t!r}; known: "
                                 + ", ".join(sorted(_LAYER_TYPE_NAMES)))
            out.append(_LAYER_TYPE_NAMES[t])
        return out
    if f.has("full_attention_interval") and f.has("linear_num_value_heads"):
        k = f.int("full_attention_interval")
        return ["full" if (i + 1) % k == 0 else "linear" for i in range(num_layers)]
    if f.has("sliding_window_pattern"):
        p = f.int("sliding_window_pattern")
        return ["full" if (i + 1) % p == 0 else "sliding" for i in range(num_layers)]
    if f.has("sliding_window") and f.cfg.get("use_sliding_window", True) is not False:
        first = f.int("max_window_layers", default=0, minimum=0) if f.cfg.get("use_sliding_window") else 0
        return ["full" if i < first else "sliding" for i in range(num_layers)]
    return ["full"] * num_layers


def _mla_components(f: _Fields, num_layers: int, kv_dtype: str) -> list:
    topk = f.int("index_topk") if f.has("index_head_dim") else None
    mla = MLALatent(num_layers=num_layers, kv_lora_rank=f.int("kv_lora_rank"),
                    rope_dim=f.int("qk_rope_head_dim"), num_q_heads=f.int("num_attention_heads"),
                    qk_nope_head_dim=f.int("qk_nope_head_dim"), v_head_dim=f.int("v_head_dim"), topk=topk)
    comps: list = [mla.with_dtype(kv_dtype)]
    if f.has("index_head_dim"):
        comps.append(IndexerKeys(num_layers=num_layers, index_head_dim=f.int("index_head_dim"),
                                 index_n_heads=f.int("index_n_heads")))
    return comps


def _gdn_state(f: _Fields, num_layers: int, model_dtype: str) -> RecurrentState:
    nk, nv = f.int("linear_num_key_heads"), f.int("linear_num_value_heads")
    dk, dv = f.int("linear_key_head_dim"), f.int("linear_value_head_dim")
    ssm = f.cfg.get("mamba_ssm_dtype")
    state_dtype = normalize_dtype(ssm) if isinstance(ssm, str) else model_dtype
    return RecurrentState(num_layers=num_layers, num_heads=nv, head_k_dim=dk, head_v_dim=dv,
                          conv_dim=2 * nk * dk + nv * dv, conv_kernel=f.int("linear_conv_kernel_dim"),
                          conv_dtype=model_dtype, state_dtype=state_dtype)


def build_spec(cfg: dict[str, Any], *, name: str, source: str, path: str = "<config>",
               active_params: int | None = None, total_params: int | None = None,
               weight_dtype_bytes: float | None = None) -> ModelSpec:
    """Build a spec from a parsed config dict (shared by presets and ``--model-config``).

    Raises:
        InputError: a required field is missing or malformed (names ``path`` and the field).
    """
    if not isinstance(cfg, dict):
        raise InputError(path, None, None, "top level must be a JSON object")
    text = cfg.get("text_config")
    if isinstance(text, dict):
        cfg = {**cfg, **text}
    f = _Fields(cfg, path)
    num_layers = f.int("num_hidden_layers")
    model_dtype = f.dtype()
    kv_dtype = model_dtype
    if f.has("kv_lora_rank"):
        comps = _mla_components(f, num_layers, kv_dtype)
        layer_types = ("mla",) * num_layers
    else:
        types = _layer_types(f, num_layers)
        layer_types = tuple(types)
        heads = f.int("num_attention_heads")
        kv_heads = f.int("num_key_value_heads", default=heads)
        head_dim = f.int("head_dim", default=0, minimum=0) or f.int("hidden_size") // heads
        gqa = dict(num_kv_heads=kv_heads, head_dim=head_dim, num_q_heads=heads)
        comps = []
        if types.count("full"):
            comps.append(FullAttention(num_layers=types.count("full"), **gqa).with_dtype(kv_dtype))
        if types.count("sliding"):
            comps.append(SlidingWindow(num_layers=types.count("sliding"), window_tokens=f.int("sliding_window"),
                                       **gqa).with_dtype(kv_dtype))
        if types.count("linear"):
            comps.append(_gdn_state(f, types.count("linear"), model_dtype))
    if active_params is None or total_params is None:
        est_active, est_total = estimate_params(cfg, path)
        active_params = est_active if active_params is None else active_params
        total_params = est_total if total_params is None else total_params
    if weight_dtype_bytes is None:
        weight_dtype_bytes = _weight_bytes(cfg, model_dtype)
    return ModelSpec(name=name, components=tuple(comps), num_layers=num_layers, active_params=int(active_params),
                     total_params=int(total_params), weight_dtype_bytes=float(weight_dtype_bytes),
                     source=source, layer_types=layer_types)


def _weight_bytes(cfg: dict[str, Any], model_dtype: str) -> float:
    """Bytes per weight: 1.0 for an FP8 checkpoint (DeepSeek), ~0.56 for MXFP4 (gpt-oss), else dtype."""
    quant = cfg.get("quantization_config") or {}
    method = str(quant.get("quant_method", "")).lower() if isinstance(quant, dict) else ""
    if method == "fp8":
        return 1.0
    if method == "mxfp4":
        return 0.56
    return {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0}.get(model_dtype, 2.0)


def _attn_params(f: _Fields, h: int, layer_type: str) -> int:
    heads = f.int("num_attention_heads")
    if f.has("kv_lora_rank"):
        qk = f.int("qk_nope_head_dim") + f.int("qk_rope_head_dim")
        q_lora = f.cfg.get("q_lora_rank")
        q = h * q_lora + q_lora * heads * qk if q_lora else h * heads * qk
        kv = h * (f.int("kv_lora_rank") + f.int("qk_rope_head_dim"))
        kv += f.int("kv_lora_rank") * heads * (f.int("qk_nope_head_dim") + f.int("v_head_dim"))
        idx = 0
        if f.has("index_head_dim"):
            idx = (q_lora or h) * f.int("index_n_heads") * f.int("index_head_dim") + h * f.int("index_head_dim")
            idx += h * f.int("index_n_heads")
        return q + kv + heads * f.int("v_head_dim") * h + idx
    if layer_type == "linear":
        nk, nv = f.int("linear_num_key_heads"), f.int("linear_num_value_heads")
        dk, dv = f.int("linear_key_head_dim"), f.int("linear_value_head_dim")
        conv = (2 * nk * dk + nv * dv) * f.int("linear_conv_kernel_dim")
        return h * (2 * nk * dk + 2 * nv * dv + 2 * nv) + nv * dv * h + conv
    kv_heads = f.int("num_key_value_heads", default=heads)
    hd = f.int("head_dim", default=0, minimum=0) or h // heads
    gate = 2 if f.cfg.get("attn_output_gate") else 1  # Qwen3-Next gates the output per head
    return h * heads * hd * gate + 2 * h * kv_heads * hd + heads * hd * h


def _mlp_params(f: _Fields, h: int, layer: int) -> tuple[int, int]:
    """(active, total) MLP parameters of one layer."""
    experts = f.cfg.get("n_routed_experts") or f.cfg.get("num_experts") or f.cfg.get("num_local_experts")
    dense_first = f.int("first_k_dense_replace", default=0, minimum=0)
    if not experts or layer < dense_first:
        p = 3 * h * f.int("intermediate_size")
        return p, p
    mi = f.int("moe_intermediate_size", default=0, minimum=0) or f.int("intermediate_size")
    k = f.int("num_experts_per_tok", default=0, minimum=0) or f.int("experts_per_token", default=1)
    shared = 3 * h * mi * f.int("n_shared_experts", default=0, minimum=0)
    shared += 3 * h * f.int("shared_expert_intermediate_size", default=0, minimum=0)
    router = h * experts
    return k * 3 * h * mi + shared + router, experts * 3 * h * mi + shared + router


def estimate_params(cfg: dict[str, Any], path: str = "<config>") -> tuple[int, int]:
    """Estimate (active, total) parameters from config shapes (norms and biases ignored).

    Embedding and LM head (untied unless ``tie_word_embeddings``), attention
    projections per layer type, dense or MoE MLPs (routed top-k + shared
    experts active). Llama-3.1-8B: 8.03e9 (model card 8.03e9).

    Raises:
        InputError: a field needed for the estimate is missing or malformed.
    """
    if isinstance(cfg.get("text_config"), dict):
        cfg = {**cfg, **cfg["text_config"]}
    f = _Fields(cfg, path)
    h = f.int("hidden_size")
    num_layers = f.int("num_hidden_layers")
    types = ["mla"] * num_layers if f.has("kv_lora_rank") else _layer_types(f, num_layers)
    embed = f.int("vocab_size") * h * (1 if cfg.get("tie_word_embeddings", False) else 2)
    active = total = embed
    for i, t in enumerate(types):
        attn = _attn_params(f, h, t)
        a, tot = _mlp_params(f, h, i)
        active += attn + a
        total += attn + tot
    return active, total


def load_hf_config(path: str | os.PathLike) -> ModelSpec:
    """Read a local Hugging Face ``config.json`` and build its :class:`ModelSpec`.

    The name is the config's ``_name_or_path`` or else the file's parent
    directory name. Parameter counts are estimated (:func:`estimate_params`).

    Raises:
        FileNotFoundError: no such file.
        InputError (a ValueError): not JSON, or a field missing/malformed; the
            message names the file and the field.
    """
    path = os.fspath(path)
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, exc.lineno, None, f"not valid JSON: {exc.msg}") from None
    if not isinstance(cfg, dict):
        raise InputError(path, None, None, "top level must be a JSON object")
    default_name = os.path.basename(os.path.dirname(os.path.abspath(path))) or "hf-config"
    name = cfg.get("_name_or_path") or default_name
    return build_spec(cfg, name=str(name), source=path, path=path)
