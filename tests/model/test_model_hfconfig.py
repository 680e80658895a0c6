"""``--model-config``: specs from local Hugging Face config.json files written in tmp_path.

The configs mirror the real files cited in pcs/model/presets.py (trimmed of
fields pcs ignores). Expected bytes are worked by hand.
"""
from __future__ import annotations

import json

import pytest

from pcs.errors import PathError
from pcs.model import estimate_params, get_model, load_hf_config

LLAMA_31_8B = {  # meta-llama/Llama-3.1-8B config.json, as published (no head_dim: 4096 / 32 = 128)
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "bos_token_id": 128000,
    "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336,
    "max_position_embeddings": 131072, "model_type": "llama", "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 8.0, "rope_type": "llama3"}, "rope_theta": 500000.0,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 128256,
}

GEMMA3 = {  # google/gemma-3-27b-it: a multimodal wrapper whose text_config holds the decoder
    "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
    "text_config": {"head_dim": 128, "hidden_size": 5376, "intermediate_size": 21504, "model_type": "gemma3_text",
                    "num_attention_heads": 32, "num_hidden_layers": 62, "num_key_value_heads": 16,
                    "sliding_window": 1024, "sliding_window_pattern": 6, "vocab_size": 262208},
    "torch_dtype": "bfloat16", "vision_config": {"hidden_size": 1152},
}

QWEN3_NEXT = {  # Qwen/Qwen3-Next-80B-A3B-Instruct, with layer_types written out
    "model_type": "qwen3_next", "num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 2,
    "head_dim": 256, "hidden_size": 2048, "intermediate_size": 5120, "full_attention_interval": 4,
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
    "linear_num_value_heads": 32, "linear_value_head_dim": 128, "moe_intermediate_size": 512,
    "num_experts": 512, "num_experts_per_tok": 10, "shared_expert_intermediate_size": 512,
    "vocab_size": 151936, "torch_dtype": "bfloat16",
    "layer_types": ["linear_attention"] * 3 + ["full_attention"],
}
QWEN3_NEXT["layer_types"] = QWEN3_NEXT["layer_types"] * 12

DEEPSEEK_V32 = {  # deepseek-ai/DeepSeek-V3.2-Exp config.json (MoE fields trimmed to what sizing uses)
    "model_type": "deepseek_v32", "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
    "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    "index_head_dim": 128, "index_n_heads": 64, "index_topk": 2048, "hidden_size": 7168,
    "intermediate_size": 18432, "moe_intermediate_size": 2048, "n_routed_experts": 256, "n_shared_experts": 1,
    "num_experts_per_tok": 8, "first_k_dense_replace": 3, "vocab_size": 129280, "torch_dtype": "bfloat16",
    "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]},
}


def _write(tmp_path, cfg, name="config.json"):
    p = tmp_path / name
    p.write_text(cfg if isinstance(cfg, str) else json.dumps(cfg))
    return p


def test_llama_config_matches_preset(tmp_path):
    spec = load_hf_config(_write(tmp_path, LLAMA_31_8B))
    assert spec.kv_bytes_per_token() == 131_072  # 32 x 8 x 128 x 2 x 2
    assert spec.source == str(tmp_path / "config.json")
    # params: 2 x 128256 x 4096 + 32 x (41,943,040 + 176,160,768) = 8,029,995,008 (norms ignored)
    assert estimate_params(LLAMA_31_8B) == (8_029_995_008, 8_029_995_008)
    assert spec.weight_dtype_bytes == 2.0


def test_gemma3_text_config_and_pattern(tmp_path):
    spec = load_hf_config(_write(tmp_path, GEMMA3))
    preset = get_model("gemma-3-27b")
    assert spec.layer_types == preset.layer_types
    assert spec.kv_bytes_per_token() == preset.kv_bytes_per_token() == 507_904


def test_qwen3_next_layer_types(tmp_path):
    spec = load_hf_config(_write(tmp_path, QWEN3_NEXT))
    assert spec.fixed_bytes_per_sequence() == 39_518_208  # see test_model.py
    assert spec.kv_bytes_per_token() == 24_576
    active, total = estimate_params(QWEN3_NEXT)
    assert 75e9 < total < 85e9 and 2.5e9 < active < 4.5e9  # model card: 80B total, 3B active


def test_qwen3_next_fp32_ssm_state(tmp_path):
    cfg = dict(QWEN3_NEXT, mamba_ssm_dtype="float32")
    spec = load_hf_config(_write(tmp_path, cfg))
    # recurrent part doubles: 36 x (49,152 + 32 x 128 x 128 x 4)
    assert spec.fixed_bytes_per_sequence() == 36 * (49_152 + 2_097_152)


def test_deepseek_v32_config(tmp_path):
    spec = load_hf_config(_write(tmp_path, DEEPSEEK_V32))
    assert [c.name for c in spec.components] == ["mla_latent", "indexer_keys"]
    assert spec.kv_bytes_per_token() == 70_272 + 7_808
    assert spec.weight_dtype_bytes == 1.0
    active, total = estimate_params(DEEPSEEK_V32)
    # paper: 671B total, 37B active (the estimate also counts the small indexer)
    assert abs(total - 671e9) / 671e9 < 0.01 and abs(active - 37e9) / 37e9 < 0.05


def test_mistral_style_sliding_every_layer(tmp_path):
    cfg = dict(LLAMA_31_8B, sliding_window=4096)
    spec = load_hf_config(_write(tmp_path, cfg))
    assert [c.name for c in spec.components] == ["sliding_window"]
    qwen2 = dict(LLAMA_31_8B, sliding_window=131072, use_sliding_window=False)
    assert [c.name for c in load_hf_config(_write(tmp_path, qwen2)).components] == ["full_attention"]


def test_name_from_config_not_the_folder(tmp_path):
    d = tmp_path / "My-Model"
    d.mkdir()
    # no _name_or_path: the model_type names it, whatever the folder is called
    assert load_hf_config(_write(d, LLAMA_31_8B)).name == "llama"
    named = dict(LLAMA_31_8B, _name_or_path="org/named")
    assert load_hf_config(_write(d, named)).name == "org/named"
    bare = {k: v for k, v in LLAMA_31_8B.items() if k != "model_type"}
    assert load_hf_config(_write(d, bare)).name == "hf-config"


@pytest.mark.parametrize("cfg, field", [
    ({k: v for k, v in LLAMA_31_8B.items() if k != "num_hidden_layers"}, "num_hidden_layers"),
    (dict(LLAMA_31_8B, num_key_value_heads="eight"), "num_key_value_heads"),
    (dict(LLAMA_31_8B, num_attention_heads=0), "num_attention_heads"),
    (dict(QWEN3_NEXT, layer_types=["full_attention"] * 3), "layer_types"),
    (dict(QWEN3_NEXT, layer_types=["warp_attention"] * 48), "layer_types"),
    (dict(GEMMA3, text_config=dict(GEMMA3["text_config"], sliding_window=None)), "sliding_window"),
    (dict(LLAMA_31_8B, torch_dtype="float9"), "torch_dtype"),
    # 64 KV heads for 32 query heads, and 12 for 32 (32 % 12 = 8): no whole query group per KV
    # head (HF repeat_kv, vLLM's attention backends need num_heads % num_kv_heads == 0)
    (dict(LLAMA_31_8B, num_key_value_heads=64), "num_key_value_heads"),
    (dict(LLAMA_31_8B, num_key_value_heads=12), "num_key_value_heads"),
])
def test_malformed_config_names_file_and_field(tmp_path, cfg, field):
    path = _write(tmp_path, cfg)
    with pytest.raises(ValueError) as err:
        load_hf_config(path)
    msg = str(err.value)
    assert str(path) in msg and f"field '{field}'" in msg and "\n" not in msg


def test_kv_heads_that_divide_the_heads_are_accepted(tmp_path):
    # 32 heads: MHA (32), GQA (8: groups of 4), MQA (1) all divide 32
    for kv in (32, 8, 1):
        spec = load_hf_config(_write(tmp_path, dict(LLAMA_31_8B, num_key_value_heads=kv)))
        assert spec.components[0].num_kv_heads == kv


def test_a_key_given_twice_is_refused(tmp_path):
    # json.loads keeps the last of two equal keys, which would read 16 layers silently
    text = json.dumps(LLAMA_31_8B)[:-1] + ', "num_hidden_layers": 16}'
    path = _write(tmp_path, text)
    with pytest.raises(ValueError, match="'num_hidden_layers' appears twice") as err:
        load_hf_config(path)
    assert str(path) in str(err.value)


def test_an_unknown_model_type_is_noted(tmp_path):
    # a model_type with no family rule is read with the generic rules, and says so
    spec = load_hf_config(_write(tmp_path, dict(LLAMA_31_8B, model_type="zzz")))
    assert any("model_type 'zzz' has no family rule" in a for a in spec.assumptions)
    assert not any("family rule" in a for a in load_hf_config(_write(tmp_path, LLAMA_31_8B)).assumptions)


def test_not_json(tmp_path):
    path = _write(tmp_path, '{"num_hidden_layers": 32,,}')
    with pytest.raises(ValueError, match="valid JSON") as err:
        load_hf_config(path)
    assert str(err.value).startswith(f"{path}:1:")
    with pytest.raises(ValueError, match="JSON object"):
        load_hf_config(_write(tmp_path, "[1, 2]"))


def test_missing_file(tmp_path):
    with pytest.raises(PathError, match=r"^path='.*absent.json': No such file or directory$"):
        load_hf_config(tmp_path / "absent.json")
