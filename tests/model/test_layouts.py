"""KV layouts as engines name them: values and scales worked out by hand from vLLM's page formulas."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.engine.api import replay
from pcs.model import KV_DTYPES, block_bytes, get_layout, get_model
from pcs.model.layouts import LAYOUTS, SHORT_NAMES

LLAMA8B = "llama-3.1-8b"  # 32 layers x 8 KV heads x 128


def _footprint_json(*args):
    r = CliRunner().invoke(cli, ["footprint", *args, "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


@pytest.mark.parametrize("dtype", ["fp8_e4m3", "fp8_e5m2", "fp8"])
def test_vllm_fp8_per_tensor_footprint(dtype):
    # vLLM page: 2 x 32 layers x 8 heads x 128 x 1 B = 65,536 B per token, x 16 tokens = 1,048,576 per block;
    # the two fp32 scales per layer are outside: 32 x 2 x 4 = 256 B per rank
    d = _footprint_json("--model", LLAMA8B, "--tokens", "16", "--block-size", "16", "--dtype", dtype)
    assert d["serialized_bytes_per_token"] == 65_536
    assert d["serialized_bytes_per_block"] == d["reserved_bytes_per_block"] == 1_048_576
    assert d["outside_pages_bytes"] == 256
    assert d["layout"]["scale_place"] == "per_tensor" and d["layout"]["name"] == dtype


@pytest.mark.parametrize("dtype, per_token", [
    # values 65,536 + one fp32 scale per token per head for K and V: 32 x 8 x 2 x 4 = 2,048
    ("fp8_per_token_head", 67_584),
    ("int8_per_token_head", 67_584),
    ("int8", 67_584),                       # the short name means int8_per_token_head
    # nvfp4: per head row 128 // 2 + 128 // 16 = 72 B, x 2 (K, V) x 8 heads x 32 layers = 36,864
    ("nvfp4", 36_864),
    ("fp4", 36_864),
    ("bf16", 131_072),
    ("fp32", 262_144),
])
def test_inline_layouts_per_token(dtype, per_token):
    d = _footprint_json("--model", LLAMA8B, "--tokens", "16", "--block-size", "16", "--dtype", dtype)
    assert d["serialized_bytes_per_token"] == per_token
    assert d["outside_pages_bytes"] == 0


@pytest.mark.parametrize("dtype, blocks", [
    # GPU tier 10 GiB at 512-token blocks: 10,737,418,240 // (65,536 x 512 = 33,554,432) = 320
    ("fp8_e4m3", 320),
    # fp8_per_token_head: 10,737,418,240 // (67,584 x 512 = 34,603,008) = 310
    ("fp8_per_token_head", 310),
    # nvfp4: // (36,864 x 512 = 18,874,368) = 568
    ("nvfp4", 568),
])
def test_replay_gpu_blocks_by_layout(tmp_path, dtype, blocks):
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({"timestamp": 0, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]}) + "\n")
    s = replay(str(p), model=LLAMA8B, tp=1, dtype=dtype, tiers=["gpu=10GiB"], timing="sequential").summary
    assert s.tiers[0].capacity_blocks == blocks
    assert s.deployment["layout"]["name"] == get_layout(dtype).name


def test_footprint_table_prints_the_layout():
    r = CliRunner().invoke(cli, ["footprint", "--model", LLAMA8B, "--tokens", "100", "--dtype", "fp8_e4m3"])
    assert r.exit_code == 0, r.output
    assert "layout fp8_e4m3 (vLLM): fp8 values, 2 fp32 scales per layer outside the pages" in r.output
    assert "vllm/v1/kv_cache_interface.py" in r.output  # the source is named


def test_every_layout_is_documented():
    for name, lay in LAYOUTS.items():
        assert lay.engine and lay.source and lay.padding, name
        assert lay.scale_place in ("none", "per_tensor", "per_token_head", "per_group"), name
    assert set(SHORT_NAMES) <= set(KV_DTYPES) and set(LAYOUTS) <= set(KV_DTYPES)


def test_unknown_layout_lists_the_valid_ones():
    with pytest.raises(ValueError, match="valid: bf16, fp16"):
        get_model(LLAMA8B).with_dtype("fp8_e3m4")


def test_mla_fp8_layouts_in_blocks():
    # DeepSeek-V3 fp8 (per tensor): 61 x 576 B x 16 = 562,176 per 16-token block
    assert block_bytes(get_model("deepseek-v3").with_dtype("fp8"), 16, "reserved").total_bytes == 562_176
    # DeepSeek-V3.2 fp8 -> fp8_ds_mla: 61 x 656 x 16 = 640,256 + indexer 61 x 132 x 16 = 128,832
    v32 = block_bytes(get_model("deepseek-v3.2").with_dtype("fp8"), 16, "reserved")
    assert v32.per_component == {"mla_latent": 640_256, "indexer_keys": 128_832}
