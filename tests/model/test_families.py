"""Layer patterns of every architecture family: committed config excerpts, bytes worked out by hand.

tests/model/configs/<family>.json are KV-relevant excerpts written for these
tests, with the field names of the transformers config classes and the values
of the model named in ``_name_or_path`` (nemotron_h.json is shaped like
Nemotron-H-8B with values of its own). Each expected value below is worked out
in its comment; "per layer-token" is KV heads x head_dim x 2 (K, V) x 2 B (bf16).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.model import MODEL_NAMES, footprint, get_model, load_hf_config, reserved_bytes

CONFIGS = Path(__file__).parent / "configs"


def _load(family: str):
    return load_hf_config(CONFIGS / f"{family}.json")


def _ref(family: str, tokens: int, tp: int = 1) -> int:
    spec = _load(family)
    return footprint(spec.with_tp(tp) if tp > 1 else spec, tokens).totals["reference_bytes"]


# (family, name, layer pattern counts, Reference bytes of one 10,000-token sequence)
CASES = [
    # 32 full x 8 x 128 x 4 B = 131,072 per token
    ("llama", "meta-llama/Llama-3.1-8B", {"full": 32}, 131_072 * 10_000),
    # Qwen3: use_sliding_window false -> 64 full; 64 x 8 x 128 x 4 = 262,144 per token
    ("qwen3", "Qwen/Qwen3-32B", {"full": 64}, 262_144 * 10_000),
    # Qwen2.5: sliding_window 131072 is set but use_sliding_window is false -> 28 full x 4 x 128 x 4 = 57,344
    ("qwen2", "Qwen/Qwen2.5-7B-Instruct", {"full": 28}, 57_344 * 10_000),
    # Mistral v0.1: the model-level window on every layer: 32 x 4,096 B x min(10,000, 4,096)
    ("mistral", "mistralai/Mistral-7B-v0.1", {"sliding": 32}, 32 * 4_096 * 4_096),
    # Gemma 2: sliding on every other layer (Gemma2Config default): 21 full x 8,192 B x 10,000
    #   + 21 sliding x 8,192 B x 4,096 = 1,720,320,000 + 704,643,072
    ("gemma2", "google/gemma-2-9b", {"sliding": 21, "full": 21}, 2_424_963_072),
    # Gemma 3: every 6th layer global: 10 full x 16 x 128 x 4 (8,192) x 10,000 = 819,200,000
    #   + 52 sliding x 8,192 x 1,024 = 436,207,616
    ("gemma3", "google/gemma-3-27b-it", {"sliding": 52, "full": 10}, 1_255_407_616),
    # Cohere2: every 4th layer global: 8 full x 4,096 B x 10,000 = 327,680,000
    #   + 24 sliding x 4,096 B x 4,096 = 402,653,184
    ("cohere2", "CohereForAI/c4ai-command-r7b-12-2024", {"sliding": 24, "full": 8}, 730_333_184),
    # gpt-oss: 18 full x 8 x 64 x 4 (2,048) x 10,000 = 368,640,000 + 18 sliding x 2,048 x 128 = 4,718,592
    ("gpt_oss", "openai/gpt-oss-120b", {"sliding": 18, "full": 18}, 373_358_592),
    # Llama 4: NoPE (full) every 4th layer, chunked local (8,192) on the rest; 10,000 tokens: the current
    #   chunk holds 10,000 - 8,192 = 1,808: 12 x 4,096 x 10,000 + 36 x 4,096 x 1,808 = 491,520,000 + 266,600,448
    ("llama4", "meta-llama/Llama-4-Scout-17B-16E-Instruct", {"chunked": 36, "full": 12}, 758_120_448),
    # Qwen3-Next: 12 full x 2 x 256 x 4 (2,048) x 10,000 = 245,760,000 + 36 GDN states
    #   (3 x 8,192 x 2 + 32 x 128 x 128 x 2 = 1,097,728 each) = 39,518,208
    ("qwen3_next", "Qwen/Qwen3-Next-80B-A3B-Instruct", {"linear": 36, "full": 12}, 285_278_208),
    # Jamba: attention where i % 8 == 4 (4 layers) x 8 x 128 x 4 = 16,384 per token -> 163,840,000; 28 Mamba1
    #   states: conv 3 x 8,192 x 2 = 49,152 + ssm 8,192 x 16 x 2 = 262,144 -> 311,296 x 28 = 8,716,288
    ("jamba", "ai21labs/Jamba-v0.1", {"mamba": 28, "full": 4}, 172_556_288),
    # Nemotron-H: 4 '*' layers x 8 x 128 x 4 = 16,384 per token -> 163,840,000; 24 Mamba2 states:
    #   conv 3 x (128 x 64 + 2 x 8 x 128 = 10,240) x 2 = 61,440 + ssm 128 x 64 x 128 x 2 = 2,097,152
    #   -> 2,158,592 x 24 = 51,806,208; the 24 '-' MLP layers hold nothing
    ("nemotron_h", "nemotron-h-8b-shaped", {"mamba": 24, "mlp": 24, "full": 4}, 215_646_208),
    # DeepSeek-V2-Lite MLA: 27 x (512 + 64) x 2 B = 31,104 per token
    ("deepseek_v2", "deepseek-ai/DeepSeek-V2-Lite", {"mla": 27}, 31_104 * 10_000),
    # DeepSeek-V3 MLA: 61 x 576 x 2 = 70,272 per token
    ("deepseek_v3", "deepseek-ai/DeepSeek-V3", {"mla": 61}, 70_272 * 10_000),
    # DeepSeek-V3.2: + indexer keys 61 x 128 fp8 = 7,808 per token (payload)
    ("deepseek_v32", "deepseek-ai/DeepSeek-V3.2-Exp", {"mla": 61}, (70_272 + 7_808) * 10_000),
]


@pytest.mark.parametrize("family, name, pattern, ref", CASES, ids=[c[0] for c in CASES])
def test_family_pattern_and_bytes_by_hand(family, name, pattern, ref):
    spec = _load(family)
    res = footprint(spec, 10_000)
    assert spec.name == name and spec.model_type.startswith(family.split("_")[0])
    assert res.layer_pattern == pattern
    assert res.totals["reference_bytes"] == ref
    assert spec.assumptions == ()  # a family rule or the config states every pattern: nothing assumed


def test_every_preset_family_has_an_excerpt():
    excerpts = {json.loads(p.read_text()).get("model_type") for p in CONFIGS.glob("*.json")}
    presets = {get_model(n).model_type for n in MODEL_NAMES}
    presets = {"gemma3" if t == "gemma3_text" else t for t in presets}
    assert presets <= excerpts
    assert len(excerpts - presets) >= 4  # at least four more families in common use


# --- the issue's Gemma 2 excerpt (fails today: every layer was taken as sliding) ---------------------

GEMMA2_ISSUE = {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "head_dim": 256,
                "hidden_size": 3584, "num_attention_heads": 16, "num_hidden_layers": 42, "num_key_value_heads": 8,
                "sliding_window": 4096, "cache_implementation": "hybrid", "torch_dtype": "bfloat16"}


@pytest.mark.parametrize("tokens, expect", [
    (8192, 2_113_929_216),   # 21 full x 8192 x 8192 B + 21 sliding x 4096 x 8192 B (8 heads x 256 x 2 x 2 B)
    (4096, 1_409_286_144),   # both kinds hold 4096 tokens: 42 x 4096 x 8192 B
])
def test_gemma2_issue_excerpt(tmp_path, tokens, expect):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(GEMMA2_ISSUE))
    r = CliRunner().invoke(cli, ["footprint", "--model-config", str(p), "--tokens", str(tokens), "--dtype", "bf16",
                                 "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["reference_bytes"] == expect
    assert d["model"] == "gemma2"  # from model_type: no _name_or_path, and not the folder's name
    # no vocab_size: the parameters cannot be estimated, which is said, not guessed
    assert any("parameters not estimated" in a for a in d["assumptions"])


# --- rules where the config does not state the pattern -----------------------------------------------

def test_gpt_oss_rule_without_layer_types(tmp_path):
    cfg = json.loads((CONFIGS / "gpt_oss.json").read_text())
    del cfg["layer_types"]
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    spec = load_hf_config(p)
    # GptOssConfig default: sliding when (i + 1) % 2, i.e. even layers slide (vLLM gpt_oss.py)
    assert spec.layer_types[:4] == ("sliding", "full", "sliding", "full") and spec.assumptions == ()


def test_qwen2_window_from_max_window_layers(tmp_path):
    cfg = dict(json.loads((CONFIGS / "qwen2.json").read_text()), use_sliding_window=True, max_window_layers=20,
               sliding_window=4096)
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    spec = load_hf_config(p)
    # layers 0..19 full, 20..27 slide (Qwen2Config.layer_types: sliding when i >= max_window_layers)
    assert spec.layer_types.count("full") == 20 and spec.layer_types[20:] == ("sliding",) * 8


def test_llama4_chunk_boundaries():
    spec = _load("llama4")
    per = 8 * 128 * 4  # 4,096 B per layer-token
    # 8,192 tokens fill the first chunk exactly: all 48 layers hold 8,192
    assert footprint(spec, 8_192).totals["reference_bytes"] == 48 * per * 8_192
    # one more token starts a new chunk: the chunked layers hold 1
    assert footprint(spec, 8_193).totals["reference_bytes"] == 12 * per * 8_193 + 36 * per * 1
    # reserved, 16-token pages: full ceil(8193/16) = 513 pages; chunked pages from 8192 // 16 = 512 to 513: 1
    assert reserved_bytes(spec, 8_193, 16) == 12 * per * 16 * 513 + 36 * per * 16 * 1


def test_mamba2_groups_padded_to_tp():
    # Nemotron-H: 8 groups. TP 8: one group per rank, conv 3 x (8,192/8 + 256) x 2 = 7,680, ssm 16 x 64 x 128 x 2
    #   = 262,144 -> 269,824 x 24 = 6,475,776 per rank (exactly 1/8)
    s = _load("nemotron_h")
    assert s.with_tp(8).fixed_bytes_per_sequence() == 6_475_776 == s.fixed_bytes_per_sequence() // 8
    # TP 16: 8 groups padded to 16 (vLLM extra_groups_for_head_shards): conv 3 x (512 + 256) x 2 = 4,608,
    #   ssm 8 x 64 x 128 x 2 = 131,072 -> 135,680 x 24 = 3,256,320, more than 1/16 (3,237,888)
    assert s.with_tp(16).fixed_bytes_per_sequence() == 3_256_320


def test_jamba_state_splits_over_tp():
    # Mamba1: both conv and ssm split: 8,716,288 / 2 = 4,358,144 per rank at TP 2
    assert _load("jamba").with_tp(2).fixed_bytes_per_sequence() == 4_358_144


def test_estimated_parameters_against_model_cards():
    # model cards: Llama-3.1-8B 8.03B; Mistral-7B 7.24B; Qwen2.5-7B 7.61B; Gemma-2-9B 9.24B (tied embeddings);
    # Jamba 52B total / 12B active; DeepSeek-V2-Lite 15.7B total
    for family, total, rel in [("llama", 8.03e9, 0.01), ("mistral", 7.24e9, 0.01), ("qwen2", 7.61e9, 0.01),
                               ("gemma2", 9.24e9, 0.01), ("jamba", 52e9, 0.02), ("deepseek_v2", 15.7e9, 0.01)]:
        assert _load(family).total_params == pytest.approx(total, rel=rel), family
    assert _load("jamba").active_params == pytest.approx(12e9, rel=0.02)


# --- ambiguous configs: a warning and a JSON field -----------------------------------------------------

@pytest.mark.parametrize("cfg, says", [
    # unknown model_type with a window and no layer_types: the window is assumed on every layer
    ({"model_type": "newmodel", "sliding_window": 2048}, "assumed sliding_window 2048 on every layer"),
    # no model_type, a window and a Gemma-3-style pattern field
    ({"sliding_window": 1024, "sliding_window_pattern": 6}, "assumed Gemma 3's rule"),
    # hybrid cache but nothing says which layers slide
    ({"model_type": "newmodel", "cache_implementation": "hybrid"}, "assumed full attention on every layer"),
    # no dtype
    ({"model_type": "llama", "torch_dtype": None}, "torch_dtype missing: assumed bfloat16"),
])
def test_ambiguous_config_is_said(tmp_path, cfg, says):
    base = {k: v for k, v in json.loads((CONFIGS / "llama.json").read_text()).items() if k != "model_type"}
    p = tmp_path / "config.json"
    p.write_text(json.dumps({**base, **cfg}))
    r = CliRunner().invoke(cli, ["footprint", "--model-config", str(p), "--tokens", "10", "--format", "json"])
    assert r.exit_code == 0, r.output
    assert any(says in a for a in json.loads(r.stdout)["assumptions"])
    warnings = [line for line in r.stderr.splitlines() if line.startswith("pcs: warning: ")]
    assert any(says in w for w in warnings)


def test_malformed_pattern_fields_name_the_field(tmp_path):
    cfg = dict(json.loads((CONFIGS / "nemotron_h.json").read_text()), hybrid_override_pattern="M*")
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="field 'hybrid_override_pattern'"):
        load_hf_config(p)


def _qwen3_36(tmp_path, **fields):
    """A 36-layer Qwen3 config (the qwen3.json excerpt, 36 layers) with ``fields`` set; max_window_layers and
    sliding_window dropped first, so a test states each one it relies on."""
    cfg = json.loads((CONFIGS / "qwen3.json").read_text())
    del cfg["max_window_layers"], cfg["sliding_window"]
    cfg.update(num_hidden_layers=36, **fields)
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    return load_hf_config(p)


def test_qwen3_window_without_max_window_layers_takes_hf_default_28(tmp_path):
    # Qwen3Config: max_window_layers defaults to 28 and layer_types = sliding when i >= max_window_layers:
    # of 36 layers, 0..27 (28 layers) are full and 28..35 (8 layers) slide
    spec = _qwen3_36(tmp_path, use_sliding_window=True, sliding_window=4096)
    assert spec.layer_types == ("full",) * 28 + ("sliding",) * 8
    # bytes of one 10,000-token sequence, 8 x 128 x 4 B = 4,096 B per layer-token:
    # 28 full x 10,000 + 8 sliding x min(10,000, 4,096) = 280,000 + 32,768 = 312,768 layer-tokens
    assert footprint(spec, 10_000).totals["reference_bytes"] == 4_096 * 312_768


def test_qwen3_window_with_max_window_layers_given(tmp_path):
    # max_window_layers 30: layers 0..29 (30) full, 30..35 (6) slide
    spec = _qwen3_36(tmp_path, use_sliding_window=True, sliding_window=4096, max_window_layers=30)
    assert spec.layer_types == ("full",) * 30 + ("sliding",) * 6
    # max_window_layers 0: i >= 0 for every layer, all 36 slide
    assert _qwen3_36(tmp_path, use_sliding_window=True, sliding_window=4096,
                     max_window_layers=0).layer_types == ("sliding",) * 36


def test_qwen3_window_size_defaults_to_4096(tmp_path):
    # Qwen3Config: sliding_window defaults to 4096 (kept only with use_sliding_window); with no
    # max_window_layers the last 8 of 36 layers slide over 4,096 tokens
    spec = _qwen3_36(tmp_path, use_sliding_window=True)
    assert spec.component("sliding_window").num_layers == 8
    assert spec.component("sliding_window").window_tokens == 4096
    # use_sliding_window false (Qwen3Config sets sliding_window to None): every layer full, whatever the window
    assert _qwen3_36(tmp_path, use_sliding_window=False, sliding_window=4096).layer_types == ("full",) * 36
    # sliding_window null with use_sliding_window true: no window, every layer full (layer_types needs a window)
    assert _qwen3_36(tmp_path, use_sliding_window=True, sliding_window=None).layer_types == ("full",) * 36
