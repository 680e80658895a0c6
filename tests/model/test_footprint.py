"""Footprint by accounting mode, block_bytes / reserved_bytes, and the ``pcs footprint`` command."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from pcs.cli.main import cli
from pcs.model import MODEL_NAMES, block_bytes, footprint, get_model, reserved_bytes
from pcs.model.footprint import component_bytes, hybrid_block_size, prefix_store_bytes

LLAMA_TOKEN = 131_072  # 32 x 8 x 128 x 2 x 2 B


# --- block_bytes / reserved_bytes (the interface the replay uses) --------------------------------

def test_block_bytes_full_attention():
    m = get_model("llama-3.1-8b")
    for layout in ("reference", "serialized", "reserved"):
        bb = block_bytes(m, 16, layout)
        assert bb.total_bytes == 16 * LLAMA_TOKEN == 2_097_152
        assert bb.per_component == {"full_attention": 2_097_152}
    # vLLM fp8 (per-tensor scales outside the pages): 16 x 65,536 in every layout
    fp8 = m.with_dtype("fp8")
    for layout in ("reference", "serialized", "reserved"):
        assert block_bytes(fp8, 16, layout).total_bytes == 16 * 65_536
    # fp8_per_token_head: serialized/reserved add 16 x (32 x 8 x 2 x 4 B = 2,048) of fp32 scales
    pth = m.with_dtype("fp8_per_token_head")
    assert block_bytes(pth, 16, "reference").total_bytes == 16 * 65_536
    assert block_bytes(pth, 16, "serialized").total_bytes == 16 * (65_536 + 2_048)
    assert block_bytes(pth, 16, "reserved").total_bytes == 16 * (65_536 + 2_048)


def test_block_bytes_hybrid_components():
    # gpt-oss: every cached block carries its 16 tokens of the 18 full and the 18 sliding layers
    bb = block_bytes(get_model("gpt-oss-120b"), 16, "serialized")
    assert bb.per_component == {"full_attention": 16 * 18 * 8 * 64 * 4, "sliding_window": 16 * 18 * 8 * 64 * 4}
    # Qwen3-Next: 16 x 24,576 of attention KV plus one state snapshot of all 36 linear layers
    bb = block_bytes(get_model("qwen3-next-80b-a3b"), 16, "serialized")
    assert bb.per_component == {"full_attention": 393_216, "ssm_state": 39_518_208}
    assert bb.total_bytes == 393_216 + 39_518_208


def test_reserved_bytes_whole_blocks():
    m = get_model("llama-3.1-8b")
    assert reserved_bytes(m, 0, 16) == 0
    assert reserved_bytes(m, 1, 16) == 16 * LLAMA_TOKEN        # one whole block for one token
    assert reserved_bytes(m, 16, 16) == 16 * LLAMA_TOKEN
    assert reserved_bytes(m, 17, 16) == 2 * 16 * LLAMA_TOKEN   # ceil(17/16) = 2 blocks


def test_reserved_bytes_sliding_window_and_state():
    m = get_model("gpt-oss-120b")
    per_layer_token = 8 * 64 * 4  # 2,048 B per token per layer
    # T = 100,000, B = 16: full 6,250 blocks; sliding min(6250, ceil(128/16) + 1 = 9) blocks
    assert reserved_bytes(m, 100_000, 16) == 18 * per_layer_token * 16 * (6_250 + 9)
    q = get_model("qwen3-next-80b-a3b")
    # 1 token: one attention block + the fixed state slot
    assert reserved_bytes(q, 1, 16) == 16 * 24_576 + 39_518_208


def test_interface_errors():
    m = get_model("llama-3.1-8b")
    with pytest.raises(ValueError, match="layout|mode"):
        block_bytes(m, 16, "compressed")
    with pytest.raises(ValueError, match="block_size"):
        block_bytes(m, 0, "reserved")
    with pytest.raises(ValueError, match="tokens"):
        reserved_bytes(m, -1, 16)


# --- mode rules ---------------------------------------------------------------------------------

@settings(max_examples=80, deadline=None)
@given(t=st.integers(0, 5_000), b=st.sampled_from([1, 16, 64, 100, 512]))
def test_sliding_window_never_counts_more_than_its_window(t, b):
    sw = get_model("gpt-oss-120b").component("sliding_window")
    per_token = sw.payload_bytes_per_token()
    got = component_bytes(sw, t, b)
    assert got["reference_bytes"] == min(t, 128) * per_token
    # brute force: blocks that hold at least one of the last min(t, W) tokens
    live = {p // b for p in range(max(0, t - 128), t)}
    assert len(live) <= sw.reserved_blocks(t, b) <= len(live) + 1
    assert got["reserved_bytes"] <= (-(-128 // b) + 1) * b * per_token


@pytest.mark.parametrize("t", [1, 1_000, 1_000_000])
def test_recurrent_state_does_not_grow(t):
    state = get_model("qwen3-next-80b-a3b").component("ssm_state")
    got = component_bytes(state, t, 16)
    assert got["reference_bytes"] == got["serialized_bytes"] == got["reserved_bytes"] == 39_518_208


def test_prefix_store_counts_full_blocks_only():
    m = get_model("llama-3.1-8b")
    # 33 tokens, B = 16: 2 full blocks; the partial third is not a cache object
    assert prefix_store_bytes(m, 33, 16) == 2 * 16 * LLAMA_TOKEN
    assert footprint(m, 33).totals["prefix_store_blocks"] == 2


def test_sequences_multiply():
    m = get_model("llama-3.1-8b")
    one, four = footprint(m, 100).totals, footprint(m, 100, sequences=4).totals
    for k in ("reference_bytes", "serialized_bytes", "reserved_bytes", "prefix_store_bytes"):
        assert four[k] == 4 * one[k]
    with pytest.raises(ValueError, match="sequences"):
        footprint(m, 100, sequences=0)


def test_inline_scales_halve_reference_but_not_serialized_or_reserved():
    res = footprint(get_model("llama-3.1-8b"), 1_000, dtype="fp8_per_token_head")
    assert [r["layout"] for r in res.by_dtype] == ["bf16", "fp8", "fp8_per_token_head"]
    assert [r["dtype"] for r in res.by_dtype] == ["bf16", "fp8", "fp8"]       # the value type
    pth = res.by_dtype[2]
    assert pth["reference_ratio_vs_bf16"] == 0.5
    # serialized: (65,536 + 2,048) / 131,072 = 0.515625
    assert pth["serialized_ratio_vs_bf16"] == 0.515625
    assert pth["reserved_ratio_vs_bf16"] > 0.5
    # vLLM fp8 keeps its two fp32 scales per layer outside the pages: exactly half in every mode
    fp8 = res.by_dtype[1]
    assert fp8["serialized_ratio_vs_bf16"] == fp8["reserved_ratio_vs_bf16"] == 0.5


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_inline_scales_serialized_more_than_half_for_every_preset(name):
    # the per-token-head layout for GQA models; fp8 on DeepSeek-V3.2 is fp8_ds_mla (scales inline);
    # DeepSeek-V3 has no MLA layout with inline scales other than fp8_ds_mla itself
    m = get_model(name)
    dtype = "fp8_ds_mla" if m.component("mla_latent") else "fp8_per_token_head"
    res = footprint(m, 4_096, dtype=dtype)
    row = res.by_dtype[-1]
    assert row["layout"] == dtype and row["dtype"] == "fp8"
    assert row["serialized_ratio_vs_bf16"] > 0.5 and row["reserved_ratio_vs_bf16"] > 0.5


def test_footprint_totals_are_sums_of_components():
    res = footprint(get_model("gemma-3-27b"), 10_000, block_size=32)
    for k in ("reference_bytes", "serialized_bytes", "reserved_bytes", "prefix_store_bytes"):
        assert res.totals[k] == sum(c[k] for c in res.components)
    d = res.to_dict()
    assert d["reference_bytes_per_token"] == 507_904 and d["num_layers"] == 62


# --- CLI ----------------------------------------------------------------------------------------

def _run(*args):
    return CliRunner().invoke(cli, list(args))


def test_cli_json_required_keys():
    r = _run("footprint", "--model", "llama-3.1-8b", "--tokens", "1", "--format", "json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["reference_bytes_per_token"] == LLAMA_TOKEN
    assert isinstance(d["components"], list) and d["components"][0]["name"] == "full_attention"
    for key in ("serialized_bytes", "reserved_bytes", "prefix_store_bytes", "reserved_bytes_per_block", "by_dtype"):
        assert key in d


def test_cli_table_shows_fp8_ratios():
    r = _run("footprint", "--model", "llama-3.1-8b", "--tokens", "4096", "--dtype", "fp8_per_token_head")
    assert r.exit_code == 0, r.output
    # vLLM fp8: x0.500 in every mode; fp8_per_token_head: serialized (65,536 + 2,048) / 131,072 = x0.516
    assert "Reference x0.500" in r.output and "Serialized x0.500" in r.output and "x0.516" in r.output
    assert "fp8_per_token_head" in r.output and "bf16" in r.output


def test_cli_csv_and_tp():
    r = _run("footprint", "--model", "deepseek-v3.2", "--tokens", "100", "--tp", "8", "--format", "csv")
    assert r.exit_code == 0, r.output
    lines = r.output.strip().splitlines()
    assert lines[0].startswith("name,") and len(lines) == 3  # header + mla_latent + indexer_keys


def test_cli_model_config(tmp_path):
    # the KV-relevant fields of meta-llama/Llama-3.1-8B config.json
    cfg = {"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096,
           "intermediate_size": 14336, "vocab_size": 128256, "torch_dtype": "bfloat16"}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    r = _run("footprint", "--model-config", str(p), "--tokens", "1", "--format", "json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["reference_bytes_per_token"] == LLAMA_TOKEN
    # no model_type and no head_dim: the assumption is a one-line warning on stderr and a JSON field
    assert d["assumptions"] == ["head_dim missing: assumed hidden_size / num_attention_heads = 128"]
    assert "pcs: warning: head_dim missing: assumed hidden_size / num_attention_heads = 128" in r.stderr


@pytest.mark.parametrize("args, expect", [
    (["--model", "llama-9", "--tokens", "1"], "valid: llama-3.1-8b"),
    (["--model", "llama-3.1-8b", "--tokens", "1", "--dtype", "fp9"], "valid: bf16"),
    (["--tokens", "1"], "give --model"),
    (["--model", "llama-3.1-8b", "--model-config", "x.json", "--tokens", "1"], "not both"),
    (["--model", "llama-3.1-70b", "--tokens", "1", "--tp", "3"], "tensor-parallel size 3"),
    (["--model-config", "/nonexistent/config.json", "--tokens", "1"], "/nonexistent/config.json"),
])
def test_cli_bad_input_exit_2_one_line(args, expect):
    r = _run("footprint", *args)
    assert r.exit_code == 2
    err = r.stderr.strip()
    assert expect in err and "\n" not in err and "Traceback" not in err


def test_cli_malformed_config_names_file_and_field(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({"num_hidden_layers": 4, "num_attention_heads": "many", "hidden_size": 64}))
    r = _run("footprint", "--model-config", str(p), "--tokens", "1")
    assert r.exit_code == 2
    assert str(p) in r.stderr and "num_attention_heads" in r.stderr


def test_cli_help_has_units_and_example():
    r = _run("footprint", "--help")
    assert r.exit_code == 0 and "Example" in r.output and "--block-size" in r.output


def test_hybrid_block_size_matches_vllm_rule():
    q = get_model("qwen3-next-80b-a3b")
    # state page per layer 1,097,728 B; attention 2 x 256 x 2 x 2 B = 2,048 B per token per layer:
    # 16 x cdiv(1,097,728, 32,768) = 16 x 34 = 544 (vLLM logs "Setting attention block size to 544")
    assert hybrid_block_size(q) == 544
    # tp 2 halves both the state page and the attention bytes per rank: still 544
    assert hybrid_block_size(q.with_tp(2)) == 544
    assert hybrid_block_size(get_model("llama-3.1-8b")) is None
    r = _run("footprint", "--model", "qwen3-next-80b-a3b", "--tokens", "1000")
    assert "--block-size 544" in r.output
