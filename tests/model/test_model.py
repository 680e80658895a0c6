"""Model specs: per-component bytes, presets, tensor parallelism, attention FLOPs.

Expected values are worked by hand in the comments from the HF config values
cited in pcs/model/presets.py and the engine formulas cited in components.py.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcs.model import (KV_DTYPES, MODEL_NAMES, FullAttention, MLALatent, RecurrentState, SlidingWindow, get_model,
                       list_models, normalize_dtype)
from pcs.model.components import causal_pairs, windowed_pairs


# --- acceptance values (docs/semantics.md §13) -----------------------------------------------

def test_llama_31_8b_bf16_bytes_per_token():
    # 32 layers x 8 KV heads x 128 head dim x 2 (K, V) x 2 B = 131,072
    assert get_model("llama-3.1-8b").kv_bytes_per_token() == 32 * 8 * 128 * 2 * 2 == 131_072


def test_llama_31_70b_bf16_bytes_per_token():
    # 80 layers x 8 KV heads x 128 x 2 x 2 B = 327,680
    assert get_model("llama-3.1-70b").kv_bytes_per_token() == 327_680


def test_deepseek_v3_bf16_bytes_per_token():
    # 61 layers x (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 B = 70,272 (no separate V)
    assert get_model("deepseek-v3").kv_bytes_per_token() == 61 * (512 + 64) * 2 == 70_272


def test_other_dense_presets():
    # Qwen3-32B: 64 x 8 x 128 x 2 x 2 = 262,144; Llama-2-70B (GQA, fp16): same shape as 3.1-70B
    assert get_model("qwen3-32b").kv_bytes_per_token() == 262_144
    assert get_model("llama-2-70b").kv_bytes_per_token() == 327_680
    assert get_model("llama-2-70b").kv_dtype == "fp16"


# --- layer patterns ----------------------------------------------------------------------------

def test_gemma3_five_local_to_one_global():
    m = get_model("gemma-3-27b")
    # 62 layers, every 6th global: layers 5, 11, ..., 59 -> 10 global, 52 sliding
    assert [i for i, t in enumerate(m.layer_types) if t == "full"] == list(range(5, 62, 6))
    assert m.component("full_attention").num_layers == 10
    sw = m.component("sliding_window")
    assert (sw.num_layers, sw.window_tokens) == (52, 1024)
    # 62 x 16 KV heads x 128 x 2 x 2 B = 507,904 per token while every window is still filling
    assert m.kv_bytes_per_token() == 507_904


def test_gpt_oss_alternating_sliding_128():
    m = get_model("gpt-oss-120b")
    assert m.layer_types[:4] == ("sliding", "full", "sliding", "full")
    assert m.component("full_attention").num_layers == m.component("sliding_window").num_layers == 18
    assert m.component("sliding_window").window_tokens == 128
    # 36 x 8 x 64 x 2 x 2 B = 73,728
    assert m.kv_bytes_per_token() == 73_728


def test_qwen3_next_state_is_fixed_per_sequence():
    m = get_model("qwen3-next-80b-a3b")
    assert m.layer_types.count("full") == 12 and m.layer_types.count("linear") == 36
    assert m.layer_types[3] == "full" and m.layer_types[0] == "linear"
    # full attention: 12 x 2 KV heads x 256 x 2 x 2 B = 24,576 per token
    assert m.kv_bytes_per_token() == 24_576
    # per linear layer: conv (4-1) x (2x16x128 + 32x128 = 8,192) x 2 B = 49,152
    #                   state 32 x 128 x 128 x 2 B = 1,048,576  -> 1,097,728; x 36 = 39,518,208
    assert m.fixed_bytes_per_sequence() == 36 * (3 * 8192 * 2 + 32 * 128 * 128 * 2) == 39_518_208


def test_deepseek_v32_indexer_keys():
    m = get_model("deepseek-v3.2")
    idx = m.component("indexer_keys")
    # 61 x 128 fp8 = 7,808 payload; + 61 x 4 B (one fp32 scale per 128) = 8,052 serialized
    assert idx.payload_bytes_per_token() == 7_808
    assert idx.payload_bytes_per_token() + idx.scale_bytes_per_token() == 8_052
    assert m.kv_bytes_per_token() == 70_272 + 7_808
    assert m.component("mla_latent").topk == 2048
    # the indexer keeps its own fp8 dtype when the KV dtype changes
    assert m.with_dtype("bf16").component("indexer_keys").dtype == "fp8"


# --- dtypes and scales -------------------------------------------------------------------------

def test_fp8_per_token_head_adds_inline_scales():
    m = get_model("llama-3.1-8b").with_dtype("fp8_per_token_head")
    # payload halves: 65,536; scales: 32 layers x 8 heads x 2 (K, V) x 4 B fp32 = 2,048
    assert m.kv_bytes_per_token("reference") == 65_536
    assert m.kv_bytes_per_token("serialized") == 65_536 + 2_048


@pytest.mark.parametrize("dtype", ["fp8", "fp8_e4m3", "fp8_e5m2", "FP8_E4M3", "float8"])
def test_vllm_fp8_scales_per_tensor_outside_the_pages(dtype):
    # vLLM: 2 x 32 layers x 8 heads x 128 x 1 B = 65,536 B/token in the pages; the two fp32 scales
    # per layer (_k_scale, _v_scale) sit outside: 32 x 8 B = 256 B per rank in all
    m = get_model("llama-3.1-8b").with_dtype(dtype)
    assert m.kv_bytes_per_token("reference") == m.kv_bytes_per_token("serialized") == 65_536
    assert m.outside_page_bytes() == 256
    assert m.kv_layout.scale_place == "per_tensor"


def test_fp8_mla_layouts():
    # DeepSeek-V3, vLLM fp8: the 576-value latent + rope row in fp8, per-tensor scales: 576 B per layer
    m = get_model("deepseek-v3").with_dtype("fp8")
    assert m.kv_bytes_per_token("serialized") == m.kv_bytes_per_token("reference") == 61 * 576
    # vLLM registers _k_scale and _v_scale on MLA layers too: 2 fp32 per layer outside the pages, 61 x 8 = 488 B,
    # the same on every rank (the latent is replicated)
    assert m.outside_page_bytes() == m.with_tp(8).outside_page_bytes() == 61 * 8
    # fp8_ds_mla: 512 fp8 + 4 fp32 scales (one per 128) + 64 rope in bf16 = 656 B per token per layer
    ds = get_model("deepseek-v3").with_dtype("fp8_ds_mla")
    assert ds.kv_bytes_per_token("serialized") == 61 * 656
    assert ds.kv_bytes_per_token("reference") == 61 * (512 + 128)
    # DeepSeek-V3.2: vLLM turns any fp8* into fp8_ds_mla (DeepseekV32ForCausalLM.verify_and_update_config)
    v32 = get_model("deepseek-v3.2").with_dtype("fp8_e4m3").component("mla_latent")
    assert v32.layout_name == "fp8_ds_mla"
    assert v32.payload_bytes_per_token() + v32.scale_bytes_per_token() == 61 * 656
    with pytest.raises(ValueError, match="no MLA form"):
        get_model("deepseek-v3").with_dtype("fp8_per_token_head")


def test_fp4_nvfp4_scales():
    # 4-bit values: 128/2 = 64 B per row, one fp8 scale per 16 values: 8 B per row
    c = FullAttention(num_layers=1, num_kv_heads=1, head_dim=128, num_q_heads=1).with_dtype("fp4")
    assert c.payload_bytes_per_token() == 2 * 64
    assert c.scale_bytes_per_token() == 2 * 8


def test_dtype_aliases_and_errors():
    assert normalize_dtype("bfloat16") == "bf16"
    assert normalize_dtype("FP8_E4M3") == "fp8"
    with pytest.raises(ValueError, match="valid: " + ", ".join(KV_DTYPES)):
        get_model("llama-3.1-8b").with_dtype("fp9")


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_inline_scaled_fp8_serialized_more_than_half_of_bf16(name):
    m = get_model(name)
    dtype = "fp8_ds_mla" if m.component("mla_latent") else "fp8_per_token_head"
    bf16 = m.with_dtype("bf16").kv_bytes_per_token("serialized")
    fp8 = m.with_dtype(dtype).kv_bytes_per_token("serialized")
    assert 2 * fp8 > bf16


# --- tensor parallelism ------------------------------------------------------------------------

def test_tp_splits_kv_heads_with_at_least_one_per_rank():
    m = get_model("llama-3.1-70b")
    # 8 KV heads over 8 ranks: 1 head each -> 327,680 / 8 = 40,960 per rank
    assert m.with_tp(8).kv_bytes_per_token() == 40_960
    # 16 ranks: still 1 head per rank (replicated), vLLM max(1, 8 // 16)
    assert m.with_tp(16).kv_bytes_per_token() == 40_960
    assert m.with_tp(2).kv_bytes_per_token() == 163_840
    with pytest.raises(ValueError, match="tensor-parallel size 3"):
        m.with_tp(3)
    with pytest.raises(ValueError):
        m.with_tp(0)


def test_tp_replicates_mla_and_splits_state():
    assert get_model("deepseek-v3.2").with_tp(8).kv_bytes_per_token() == 70_272 + 7_808
    q = get_model("qwen3-next-80b-a3b")
    assert q.with_tp(2).fixed_bytes_per_sequence() * 2 == q.fixed_bytes_per_sequence()
    assert q.with_tp(2).tp == 2


def test_tp_does_not_change_flops():
    m = get_model("llama-3.1-70b")
    assert m.with_tp(8).attention_flops(100, 1000) == m.attention_flops(100, 1000)


# --- attention FLOPs ---------------------------------------------------------------------------

def test_full_attention_flops_by_hand():
    m = get_model("llama-3.1-8b")
    # one token, nothing cached: 1 pair; 32 layers x 2 FLOP x 32 heads x (128 + 128) = 524,288
    assert m.attention_flops(1, 0) == 524_288.0
    # 2 new after 10 cached: pairs 11 + 12 = 23
    assert m.attention_flops(2, 10) == 23 * 524_288.0
    out = m.attention_flops(np.array([1, 2]), np.array([[0], [10]]))
    assert out.shape == (2, 2) and out[1, 1] == 23 * 524_288.0


def test_sliding_window_flops_capped_by_window():
    sw = SlidingWindow(num_layers=1, num_kv_heads=1, head_dim=1, num_q_heads=1, window_tokens=4)
    # one new token after 1000 cached sees 4 keys: 2 FLOP x (1 + 1) x 4
    assert float(sw.attention_flops(1, 1000)) == 2 * 2 * 4


def test_mla_topk_caps_pairs():
    mla = MLALatent(num_layers=1, kv_lora_rank=512, rope_dim=64, num_q_heads=1, qk_nope_head_dim=128,
                    v_head_dim=128, topk=2048)
    # a token after 10,000 cached attends to 2,048 keys: 2 x (128 + 64 + 128) x 2048
    assert float(mla.attention_flops(1, 10_000)) == 2 * 320 * 2048


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 40), c=st.integers(0, 40), w=st.integers(1, 20))
def test_pair_counts_match_brute_force(n, c, w):
    positions = range(c + 1, c + n + 1)          # 1-based positions of the new tokens
    assert causal_pairs(n, c) == sum(positions)  # token at p sees p keys
    assert windowed_pairs(n, c, w) == sum(min(p, w) for p in positions)


def test_recurrent_flops_linear_in_new_tokens():
    s = RecurrentState(num_layers=1, num_heads=2, head_k_dim=3, head_v_dim=5, conv_dim=8, conv_kernel=4)
    assert float(s.attention_flops(10, 5)) == 6 * 2 * 3 * 5 * 10


# --- presets and lookup ------------------------------------------------------------------------

def test_unknown_model_lists_known_names():
    with pytest.raises(ValueError) as err:
        get_model("llama-9")
    for name in MODEL_NAMES:
        assert name in str(err.value)


def test_hf_style_names_resolve():
    assert get_model("meta-llama/Llama-3.1-8B-Instruct").name == "llama-3.1-8b"
    assert get_model("deepseek-ai/DeepSeek-V3.2-Exp").name == "deepseek-v3.2"
    assert get_model("google/gemma-3-27b-it").name == "gemma-3-27b"


def test_list_models_rows():
    rows = list_models()
    assert [r["name"] for r in rows] == list(MODEL_NAMES)
    assert len(MODEL_NAMES) == 9
    row = rows[0]
    assert row["components"] == "full_attention"
    for key in ("name", "layers", "components", "kv_dtype", "reference_bytes_per_token", "active_params",
                "total_params", "weight_dtype_bytes", "source", "params_source", "layer_pattern"):
        assert key in row
    ds = next(r for r in rows if r["name"] == "deepseek-v3")
    assert (ds["active_params"], ds["total_params"]) == (37_000_000_000, 671_000_000_000)


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_presets_are_consistent(name):
    m = get_model(name)
    assert m.source.startswith("https://huggingface.co/")
    assert 0 < m.active_params <= m.total_params
    assert len(m.layer_types) == m.num_layers
    assert m.weight_dtype_bytes > 0
