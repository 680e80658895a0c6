"""Model presets: the KV-relevant subset of each model's Hugging Face ``config.json``.

Each preset is the config fields pcs needs, copied from the file cited in its
comment, and is built by the same code as ``--model-config``
(:func:`pcs.model.hfconfig.build_spec`). Parameter counts come from the model
card or paper cited (the shape-based estimate is only used for user configs).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from pcs.errors import UnknownNameError
from pcs.model.hfconfig import build_spec
from pcs.model.spec import ModelSpec

__all__ = ["MODEL_NAMES", "get_model", "list_models", "PRESETS"]

_HF = "https://huggingface.co/"


def _preset(repo: str, config: dict[str, Any], active: int, params_source: str, *, total: int | None = None,
            weight_bytes: float = 2.0) -> dict[str, Any]:
    """One preset row: the ``config.json`` subset of Hugging Face repo ``repo`` (its source URL), ``active``
    parameters (``total`` the same for a dense model), weight bytes per parameter, the parameters' source."""
    return dict(config=config, source=f"{_HF}{repo}/blob/main/config.json", active=active,
                total=active if total is None else total, weight_bytes=weight_bytes, params_source=params_source)


_DENSE = "counted from the config shapes (dense); model card: "
#: meta-llama/Llama-3.1-8B and -70B config.json fields the two share (8 KV heads of 128, vocab 128256).
_LLAMA_3_1 = dict(model_type="llama", num_key_value_heads=8, head_dim=128, vocab_size=128256, torch_dtype="bfloat16")
#: deepseek-ai/DeepSeek-V3 config.json fields (V3.2 adds the indexer fields to these).
_DEEPSEEK_V3 = dict(model_type="deepseek_v3", num_hidden_layers=61, num_attention_heads=128, kv_lora_rank=512,
                    qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128, q_lora_rank=1536, hidden_size=7168,
                    intermediate_size=18432, moe_intermediate_size=2048, n_routed_experts=256,
                    n_shared_experts=1, num_experts_per_tok=8, first_k_dense_replace=3,
                    vocab_size=129280, torch_dtype="bfloat16", max_position_embeddings=163840)

#: name -> {"config": config subset, "source": URL, "active"/"total": params, "weight_bytes", "params_source"}
#: (:func:`_preset`).
PRESETS: dict[str, dict[str, Any]] = {
    # meta-llama/Llama-3.1-8B config.json: 32 layers, 32 heads, 8 KV heads, head_dim 128.
    # Params 8,030,261,248 = 2 x 128256 x 4096 (embed + head) + 32 x (41,943,040 attn
    # + 176,160,768 MLP + 8,192 norms) + 4,096 final norm.
    "llama-3.1-8b": _preset("meta-llama/Llama-3.1-8B", dict(_LLAMA_3_1, num_hidden_layers=32, num_attention_heads=32,
                                                            hidden_size=4096, intermediate_size=14336,
                                                            max_position_embeddings=131072),
                            8_030_261_248, _DENSE + "8B"),
    # meta-llama/Llama-3.1-70B config.json: 80 layers, 64 heads, 8 KV heads, head_dim 128.
    # Params 70,553,706,496 counted the same way (model card: 70B).
    "llama-3.1-70b": _preset("meta-llama/Llama-3.1-70B", dict(_LLAMA_3_1, num_hidden_layers=80, num_attention_heads=64,
                                                              hidden_size=8192, intermediate_size=28672,
                                                              max_position_embeddings=131072),
                             70_553_706_496, _DENSE + "70B"),
    # meta-llama/Llama-2-70b-hf config.json: 80 layers, 64 heads, 8 KV heads (GQA), vocab 32000.
    # The model class the Mooncake (FAST'25) paper served its trace with. Params 68,976,648,192.
    "llama-2-70b": _preset("meta-llama/Llama-2-70b-hf",
                           dict(model_type="llama", num_hidden_layers=80, num_attention_heads=64, num_key_value_heads=8,
                                hidden_size=8192, intermediate_size=28672, vocab_size=32000, torch_dtype="float16",
                                max_position_embeddings=4096),
                           68_976_648_192, _DENSE + "70B"),
    # Qwen/Qwen3-32B config.json: 64 layers, 64 heads, 8 KV heads, head_dim 128, sliding_window null.
    "qwen3-32b": _preset("Qwen/Qwen3-32B",
                         dict(model_type="qwen3", num_hidden_layers=64, num_attention_heads=64, num_key_value_heads=8,
                              head_dim=128, hidden_size=5120, intermediate_size=25600, vocab_size=151936,
                              torch_dtype="bfloat16", max_position_embeddings=40960),
                         32_800_000_000, "Qwen3-32B model card: 32.8B parameters (dense)"),
    # deepseek-ai/DeepSeek-V3 config.json: 61 layers, MLA kv_lora_rank 512, qk_rope_head_dim 64,
    # 128 heads, qk_nope_head_dim 128, v_head_dim 128; 256 routed + 1 shared experts, top-8; FP8 weights.
    "deepseek-v3": _preset("deepseek-ai/DeepSeek-V3", _DEEPSEEK_V3, 37_000_000_000,
                           "DeepSeek-V3 technical report (arXiv 2412.19437): 671B total, 37B activated; FP8 weights",
                           total=671_000_000_000, weight_bytes=1.0),
    # deepseek-ai/DeepSeek-V3.2-Exp config.json: DeepSeek-V3 plus DeepSeek Sparse Attention:
    # index_n_heads 64, index_head_dim 128, index_topk 2048.
    "deepseek-v3.2": _preset("deepseek-ai/DeepSeek-V3.2-Exp",
                             dict(_DEEPSEEK_V3, model_type="deepseek_v32", index_n_heads=64, index_head_dim=128,
                                  index_topk=2048),
                             37_000_000_000,
                             "DeepSeek-V3.2-Exp model card: same base as V3.1 (671B total, 37B activated)",
                             total=671_000_000_000, weight_bytes=1.0),
    # openai/gpt-oss-120b config.json: 36 layers, layer_types alternating sliding_attention
    # (even layers) / full_attention (odd), sliding_window 128, 64 heads, 8 KV heads, head_dim 64.
    "gpt-oss-120b": _preset("openai/gpt-oss-120b",
                            dict(model_type="gpt_oss", num_hidden_layers=36, num_attention_heads=64,
                                 num_key_value_heads=8, head_dim=64, sliding_window=128,
                                 layer_types=["sliding_attention", "full_attention"] * 18, hidden_size=2880,
                                 intermediate_size=2880, num_local_experts=128, experts_per_token=4,
                                 vocab_size=201088, torch_dtype="bfloat16", max_position_embeddings=131072),
                            5_130_000_000,
                            "gpt-oss model card (OpenAI, 2025): 116.83B total, 5.13B active; MXFP4 experts",
                            total=116_830_000_000, weight_bytes=0.56),
    # google/gemma-3-27b-it config.json (text_config): 62 layers, 32 heads, 16 KV heads, head_dim 128,
    # sliding_window 1024, sliding_window_pattern 6 (5 local : 1 global; layers 5, 11, ..., 59 global).
    "gemma-3-27b": _preset("google/gemma-3-27b-it",
                           dict(model_type="gemma3_text", num_hidden_layers=62, num_attention_heads=32,
                                num_key_value_heads=16, head_dim=128, sliding_window=1024, sliding_window_pattern=6,
                                hidden_size=5376, intermediate_size=21504, vocab_size=262208,
                                tie_word_embeddings=True, torch_dtype="bfloat16", max_position_embeddings=131072),
                           27_016_000_000, "Gemma 3 technical report, table 1: 1,416M embedding + 25,600M "
                                           "non-embedding (417M vision encoder excluded)"),
    # Qwen/Qwen3-Next-80B-A3B-Instruct config.json: 48 layers, full_attention_interval 4 (12 gated
    # full-attention layers: 16 heads, 2 KV heads, head_dim 256; 36 Gated DeltaNet layers:
    # 16 QK heads and 32 V heads of 128, conv kernel 4); 512 experts, top-10 + shared.
    "qwen3-next-80b-a3b": _preset("Qwen/Qwen3-Next-80B-A3B-Instruct",
                                  dict(model_type="qwen3_next", num_hidden_layers=48, num_attention_heads=16,
                                       num_key_value_heads=2, head_dim=256, full_attention_interval=4,
                                       linear_num_key_heads=16, linear_num_value_heads=32, linear_key_head_dim=128,
                                       linear_value_head_dim=128, linear_conv_kernel_dim=4, hidden_size=2048,
                                       intermediate_size=5120, moe_intermediate_size=512, num_experts=512,
                                       num_experts_per_tok=10, shared_expert_intermediate_size=512,
                                       attn_output_gate=True, vocab_size=151936, torch_dtype="bfloat16",
                                       max_position_embeddings=262144),
                                  3_000_000_000, "Qwen3-Next-80B-A3B model card: 80B total, 3B activated",
                                  total=80_000_000_000),
}

#: Preset names, in the order ``pcs models`` lists them.
MODEL_NAMES: tuple[str, ...] = tuple(PRESETS)

_SUFFIXES = ("-instruct", "-chat-hf", "-hf", "-it", "-exp", "-base")


def _canonical(name: str) -> str:
    key = str(name).strip().lower().split("/")[-1]
    if key.startswith("meta-llama-"):
        key = key[len("meta-"):]
    for suffix in _SUFFIXES:
        if key.endswith(suffix) and key[: -len(suffix)] in PRESETS:
            return key[: -len(suffix)]
    return key


@lru_cache(maxsize=None)
def _build(name: str) -> ModelSpec:
    p = PRESETS[name]
    return build_spec(p["config"], name=name, source=p["source"], path=f"preset {name}",
                      active_params=p["active"], total_params=p["total"], weight_dtype_bytes=p["weight_bytes"])


#: The hint of an unknown model name from the API; the CLI replaces it with its own (``--model path/to/config.json``).
HF_CONFIG_HINT = "or load a Hugging Face config.json: model=pcs.model.hfconfig.load_hf_config(path)"


def get_model(name: str) -> ModelSpec:
    """The preset called ``name`` (case-insensitive; HF ids like ``meta-llama/Llama-3.1-8B`` work), or the
    spec of the Hugging Face config.json ``name`` names (an ``os.PathLike``, a name ending ``.json``, or a file
    on disk: :func:`pcs.model.load_hf_config`), as the CLI's ``--model x.json`` reads it.

    Raises:
        UnknownNameError: (a ValueError) unknown name; the message lists the known presets.
        PathError: a path that is missing or a folder (naming ``model=``).
        InputError: a config that is not JSON or has a field missing/malformed, naming the file and field.

    >>> get_model("deepseek-v3").kv_bytes_per_token()
    70272
    """
    if _refuse_missing_config(name):
        from pcs.model.hfconfig import load_hf_config

        return load_hf_config(name)
    key = _canonical(name)
    if key not in PRESETS:    # the API's hint; the CLI shows its --model form (pcs.cli.common.option_names)
        raise UnknownNameError("model", name, MODEL_NAMES,
                               hint=HF_CONFIG_HINT)
    return _build(key)


def _refuse_missing_config(name: Any) -> bool:
    """A model named by a path (an ``os.PathLike``, a name ending ``.json``, or one on disk) that is missing or a
    folder is a :class:`pcs.errors.PathError` (``model='x.json': No such file or directory``), not an unknown
    preset; an HF id (``meta-llama/Llama-3.1-8B``) is a name, and so is a preset's name that names a folder here
    holding no ``config.json`` (no model folder: ``mkdir qwen3-32b`` does not hide the preset). A value that is neither a str nor a path is refused.

    Returns:
        True when ``name`` is a path to a readable file (a config to load), False for a name.
    Raises:
        ArgumentTypeError, PathError.
    """
    import os

    from pcs.argcheck import check_text

    check_text(name, "model", "a preset name (or a ModelSpec)", others=(os.PathLike,))
    if (isinstance(name, str) and _canonical(name) in PRESETS and os.path.isdir(name)
            and not os.path.isfile(os.path.join(name, "config.json"))):
        return False        # a folder named like a preset holding no config.json (no model folder): the preset
    if isinstance(name, os.PathLike) or str(name).lower().endswith(".json") or os.path.exists(name):
        from pcs.trace.pathcheck import check_input_file

        check_input_file(name, "model")
        return True
    return False


def as_model(model: "ModelSpec | str") -> ModelSpec:
    """A ModelSpec as given, or the preset or config.json path a name names (:func:`get_model`).

    Raises:
        UnknownNameError: unknown preset name (a UserError).
        PathError: a config path that is missing or a folder.
        InputError: a config with a field missing or malformed, naming the file and field.
    """
    return model if isinstance(model, ModelSpec) else get_model(model)


def list_models() -> list[dict[str, Any]]:
    """One row per preset for ``pcs models`` (stable keys, documented in docs/views.md).

    Keys: ``name``, ``layers``, ``layer_pattern`` (counts per layer type),
    ``components`` (component names, comma-separated), ``kv_dtype``, ``reference_bytes_per_token``
    (BF16 payload, one rank), ``fixed_bytes_per_sequence`` (recurrent state),
    ``active_params``, ``total_params``, ``weight_dtype_bytes``, ``source``,
    ``params_source``.
    """
    rows = []
    for name in MODEL_NAMES:
        spec = get_model(name)
        counts: dict[str, int] = {}
        for t in spec.layer_types:
            counts[t] = counts.get(t, 0) + 1
        rows.append({
            "name": name,
            "layers": spec.num_layers,
            "layer_pattern": ", ".join(f"{n} {t}" for t, n in counts.items()),
            "components": ", ".join(c.name for c in spec.components),
            "kv_dtype": spec.kv_layout.name,
            "reference_bytes_per_token": spec.kv_bytes_per_token("reference"),
            "fixed_bytes_per_sequence": spec.fixed_bytes_per_sequence(),
            "active_params": spec.active_params,
            "total_params": spec.total_params,
            "weight_dtype_bytes": spec.weight_dtype_bytes,
            "source": spec.source,
            "params_source": PRESETS[name]["params_source"],
        })
    return rows
