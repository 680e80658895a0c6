"""Parameter counts and weight bytes estimated from a Hugging Face config's shapes.

Used for ``--model-config`` models (presets carry model-card counts): the
deployment sizing (:mod:`pcs.model.deploy`) subtracts these weights from HBM,
and the compute model uses the active count. Norms, biases and the small
per-head SSM vectors are ignored.
"""
from __future__ import annotations

from typing import Any

from pcs.errors import InputError
from pcs.model.configfields import Fields
from pcs.model.families import layer_pattern

__all__ = ["estimate_params", "weight_bytes_per_param"]


def weight_bytes_per_param(cfg: dict[str, Any], model_dtype: str) -> float:
    """Bytes per weight: 1.0 for an FP8 checkpoint (DeepSeek), ~0.56 for MXFP4 (gpt-oss), else the dtype's."""
    quant = cfg.get("quantization_config") or {}
    method = str(quant.get("quant_method", "")).lower() if isinstance(quant, dict) else ""
    if method == "fp8":
        return 1.0
    if method == "mxfp4":
        return 0.56
    return {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0}.get(model_dtype, 2.0)


def _mla_params(f: Fields, h: int) -> int:
    heads = f.int("num_attention_heads")
    qk = f.int("qk_nope_head_dim") + f.int("qk_rope_head_dim")
    q_lora = f.int("q_lora_rank", minimum=0) if f.cfg.get("q_lora_rank") is not None else 0
    q = h * q_lora + q_lora * heads * qk if q_lora else h * heads * qk
    kv = h * (f.int("kv_lora_rank") + f.int("qk_rope_head_dim"))
    kv += f.int("kv_lora_rank") * heads * (f.int("qk_nope_head_dim") + f.int("v_head_dim"))
    idx = 0
    if f.has("index_head_dim"):
        idx = (q_lora or h) * f.int("index_n_heads") * f.int("index_head_dim") + h * f.int("index_head_dim")
        idx += h * f.int("index_n_heads")
    return q + kv + heads * f.int("v_head_dim") * h + idx


def _mamba_params(f: Fields, h: int) -> int:
    """In/out projections and conv of one Mamba layer (Mamba1: + x/dt projections)."""
    fam = f.family
    if fam is not None and fam.state_kind == "mamba2":
        heads, hd, n = f.int("mamba_num_heads"), f.int("mamba_head_dim"), f.int("ssm_state_size")
        inter, groups = heads * hd, f.int("n_groups")
        conv_dim = inter + 2 * groups * n
        return h * (inter + conv_dim + heads) + inter * h + conv_dim * f.int("conv_kernel")
    inter, n = f.int("mamba_expand") * h, f.int("mamba_d_state")
    dt_rank = f.int("mamba_dt_rank", default=-(-h // 16))
    return h * 2 * inter + inter * h + inter * (dt_rank + 2 * n) + dt_rank * inter + inter * f.int("mamba_d_conv")


def _attn_params(f: Fields, h: int, kind: str) -> int:
    if kind == "mla":
        return _mla_params(f, h)
    if kind == "mlp":
        return 0
    if kind == "mamba":
        return _mamba_params(f, h)
    if kind == "linear":
        nk, nv = f.int("linear_num_key_heads"), f.int("linear_num_value_heads")
        dk, dv = f.int("linear_key_head_dim"), f.int("linear_value_head_dim")
        conv = (2 * nk * dk + nv * dv) * f.int("linear_conv_kernel_dim")
        return h * (2 * nk * dk + 2 * nv * dv + 2 * nv) + nv * dv * h + conv
    heads = f.int("num_attention_heads")
    kv_heads = f.int("num_key_value_heads", default=heads)
    hd = f.head_dim()
    gate = 2 if f.cfg.get("attn_output_gate") else 1  # Qwen3-Next gates the output per head
    return h * heads * hd * gate + 2 * h * kv_heads * hd + heads * hd * h


def _is_moe_layer(f: Fields, layer: int) -> bool:
    """Jamba: experts every ``expert_layer_period`` from ``expert_layer_offset``; DeepSeek: after
    ``first_k_dense_replace``; else every layer of an MoE config."""
    if f.cfg.get("expert_layer_period") is not None and f.int("expert_layer_period", minimum=0):
        return layer % f.int("expert_layer_period") == f.int("expert_layer_offset", default=0, minimum=0)
    return layer >= f.int("first_k_dense_replace", default=0, minimum=0)


def _experts(f: Fields) -> int:
    """The routed-expert count (0: a dense model): the first of ``n_routed_experts``, ``num_experts``,
    ``num_local_experts`` given non-null, read as every config integer is (:meth:`Fields.int`: 0..2^20).

    Raises:
        InputError: the count is 0 while a top-k of 1 or more is given (docs/models.md: a routed top-k needs
            experts to route to), or malformed.
    """
    for key in ("n_routed_experts", "num_experts", "num_local_experts"):
        if f.cfg.get(key) is not None:
            n = f.int(key, minimum=0)
            k = next(((kk, f.cfg[kk]) for kk in _TOP_K if f.cfg.get(kk) is not None), None)
            if n == 0 and k is not None and type(k[1]) is int and k[1] > 0:
                raise InputError(f.path, None, key, f"is 0 but {k[0]} routes each token to {k[1]} experts: give "
                                 "the routed-expert count, or drop the top-k for a dense model")
            return n
    return 0


#: the top-k keys, first given wins (HF: num_experts_per_tok; gpt-oss: experts_per_token)
_TOP_K = ("num_experts_per_tok", "experts_per_token")


def _top_k(f: Fields, experts: int, ekey: str) -> int:
    """Experts each token is routed to: the first of :data:`_TOP_K` given, an integer in [1, ``experts``].

    Raises:
        InputError: neither key given (pcs does not guess a top-k, docs/models.md), 0, or above ``experts``.
    """
    key = next((k for k in _TOP_K if f.get(k) is not None), None)
    if key is None:
        raise InputError(f.path, None, _TOP_K[0], f"missing: the model has {experts} routed experts ({ekey}) "
                         "but no top-k (num_experts_per_tok or experts_per_token); pcs does not guess it")
    k = f.int(key, minimum=1)
    if k > experts:
        raise InputError(f.path, None, key, f"routes each token to {k} experts but the model has "
                         f"{experts}: top-k must be <= the expert count")
    return k


def _mlp_params(f: Fields, h: int, layer: int, kind: str) -> tuple[int, int]:
    """(active, total) MLP parameters of one layer."""
    if f.family is not None and f.family.rule == "nemotron_h" and kind != "mlp":
        return 0, 0  # a Nemotron-H layer is one mixer: Mamba, attention or MLP
    experts = _experts(f)
    if not experts or not _is_moe_layer(f, layer):
        p = 3 * h * f.int("intermediate_size")
        return p, p
    mi = f.int("moe_intermediate_size", default=0, minimum=0) or f.int("intermediate_size")
    ekey = next(k for k in ("n_routed_experts", "num_experts", "num_local_experts") if f.cfg.get(k) is not None)
    k = _top_k(f, experts, ekey)
    shared = 3 * h * mi * f.int("n_shared_experts", default=0, minimum=0)
    shared += 3 * h * f.int("shared_expert_intermediate_size", default=0, minimum=0)
    router = h * experts
    return k * 3 * h * mi + shared + router, experts * 3 * h * mi + shared + router


def estimate_params(cfg: dict[str, Any], path: str = "<config>") -> tuple[int, int]:
    """Estimate (active, total) parameters from config shapes (norms and biases ignored).

    Embedding and LM head (untied unless ``tie_word_embeddings``), the mixer of
    each layer kind (attention, MLA, Gated DeltaNet, Mamba), dense or MoE MLPs
    (routed top-k + shared experts active). Llama-3.1-8B: 8.03e9 (model card 8.03e9).

    Raises:
        InputError: a field needed for the estimate is missing or malformed.
    """
    f = Fields.of(cfg, path)
    h = f.int("hidden_size")
    n = f.int("num_hidden_layers")
    kinds = layer_pattern(f, n).kinds
    embed = f.int("vocab_size") * h * (1 if f.get("tie_word_embeddings") else 2)
    active = total = embed
    for i, kind in enumerate(kinds):
        mixer = _attn_params(f, h, kind)
        a, tot = _mlp_params(f, h, i, kind)
        active += mixer + a
        total += mixer + tot
    return active, total

