"""The deployment: GPU tier = GPUs x (HBM x 0.9 - weights per GPU - reserve); pcs deploy and replay agree."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.engine.api import replay
from pcs.errors import UserError
from pcs.hardware import get_gpu
from pcs.model import get_model
from pcs.model.capacity import plan_deployment
from pcs.model.deploy import size_deployment

H100 = get_gpu("h100-sxm")  # 80 GB (datasheet, decimal)


def _run(*args):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    p = tmp_path_factory.mktemp("dep") / "trace.jsonl"
    rows = [{"timestamp": 0, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]},
            {"timestamp": 1000, "input_length": 1025, "output_length": 1, "hash_ids": [1, 2, 3]}]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(p)


def test_default_deployment_by_hand():
    # llama-2-70b on 8 x H100: 80e9 x 0.9 = 72e9 per GPU; weights 68,976,648,192 x 2 B = 137,953,296,384,
    # / 8 = 17,244,162,048 per GPU; reserve 5e9 -> 49,755,837,952 per GPU; x 8 = 398,046,703,616
    d = size_deployment(get_model("llama-2-70b"), H100, 8)
    assert (d.usable_bytes, d.weights_bytes, d.weights_bytes_per_gpu) == (72 * 10**9, 137_953_296_384, 17_244_162_048)
    assert d.kv_bytes_per_gpu == 49_755_837_952 and d.kv_bytes == 398_046_703_616


def test_llama8b_on_one_h100_is_not_a_400gb_tier(trace):
    # 72e9 - 8,030,261,248 x 2 (16,060,522,496) - 5e9 = 50,939,477,504 B (it used to replay 399.97 GB)
    s = replay(trace, model="llama-3.1-8b", tp=1).summary
    assert s.deployment["gpu_tier_bytes"] == 50_939_477_504
    # 512-token blocks of 131,072 x 512 = 67,108,864 B: 50,939,477,504 // 67,108,864 = 759 blocks
    assert s.tiers[0].capacity_blocks == 759
    assert s.deployment["gpu_tier_from"] == "deployment"
    assert any(n.startswith("gpu tier 50.94 GB = 1 x (80.00 GB HBM x 0.9 - 16.06 GB weights - 5.00 GB reserve)")
               for n in s.notes)


def test_gpu_auto_is_the_deployment_sized_tier(trace):
    # "gpu=auto" spells the derived tier out: the same 50,939,477,504 B as with no --tier at all (above)
    s = replay(trace, model="llama-3.1-8b", tp=1, tiers=["gpu=auto", "cpu=1TB"]).summary
    assert s.deployment["gpu_tier_bytes"] == 50_939_477_504 and s.deployment["gpu_tier_from"] == "deployment"
    assert s.tiers[0].capacity_blocks == 759 and s.tiers[1].capacity_blocks == 10**12 // 67_108_864
    with pytest.raises(ValueError, match="only the GPU tier"):
        replay(trace, model="llama-3.1-8b", tp=1, tiers=["gpu=1TB", "cpu=auto"])


def test_weights_that_do_not_fit_exit_2_with_one_line(trace):
    # DeepSeek-V3: 671e9 x 1 B (FP8) / 8 = 83.875 GB per GPU > 72 GB usable
    r = _run("replay", trace, "--model", "deepseek-v3", "--tp", "8")
    assert r.exit_code == 2
    err = r.stderr.strip()
    assert err.count("\n") == 0 and err.startswith("pcs: error: deepseek-v3 does not fit on 8 x h100-sxm")
    assert "weights 671.00 GB" in err and "80.00 GB HBM x 0.9" in err
    r = _run("deploy", "--model", "deepseek-v3", "--tp", "8")
    assert r.exit_code == 2 and "does not fit" in r.stderr
    # on 8 x H200 it fits: 141e9 x 0.9 = 126.9e9 - 83.875e9 - 5e9 = 38.025e9 per GPU, 304.2e9 in all
    assert size_deployment(get_model("deepseek-v3"), get_gpu("h200"), 8).kv_bytes == 304_200_000_000


@pytest.mark.parametrize("model, gpu, tp, dtype", [
    ("llama-2-70b", "h100-sxm", 8, None), ("llama-3.1-8b", "h100-sxm", 1, "fp8"),
    ("llama-3.1-70b", "h200", 4, "fp8_per_token_head"), ("deepseek-v3", "h200", 8, "fp8"),
    ("qwen3-next-80b-a3b", "b200", 2, None), ("gemma-3-27b", "a100-80gb", 2, "nvfp4"),
    ("gpt-oss-120b", "h100-sxm", 2, None), ("deepseek-v3.2", "b200", 16, None),
])
def test_deploy_and_replay_agree(trace, model, gpu, tp, dtype):
    args = ["deploy", "--model", model, "--gpu", gpu, "--tp", str(tp), "--block-size", "512", "--format", "json"]
    r = _run(*args, *(["--dtype", dtype] if dtype else []))
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    # a hybrid model's default tier counts vLLM pages (docs/semantics.md §13.1): deploy's blocks are the whole
    # blocks of its pages, page padding included, as the replay's payload lens counts them
    s = replay(trace, model=model, hardware=gpu, tp=tp, dtype=dtype).summary
    if s.hybrid is not None:
        assert s.payload_lens.gpu_capacity_blocks[0] == d["gpu_blocks"]
        assert s.payload_lens.gpu_bytes_per_block[0] == d["bytes_per_block"]
    else:
        assert s.tiers[0].capacity_blocks == d["gpu_blocks"]
        assert s.tiers[0].bytes_per_block == d["bytes_per_block"]
    assert s.deployment["gpu_tier_bytes"] == d["gpu_tier_bytes"]


def test_plan_by_hand():
    # llama-3.1-8b, 1 x H100, 16-token blocks: pool 50,939,477,504 B; a block 16 x 131,072 = 2,097,152 B
    spec = get_model("llama-3.1-8b").with_tp(1)
    plan = plan_deployment(spec, size_deployment(spec, H100, 1), 16, 8192)
    assert plan.gpu_blocks == 24_289                       # 50,939,477,504 / 2,097,152 = 24,289.8
    assert plan.longest_request_tokens == 24_289 * 16      # every page for one request: 388,624 tokens
    # 8,192 tokens reserve 512 pages = 1,073,741,824 B: 47 requests fit (47.44)
    assert (plan.request_bytes_per_rank, plan.concurrent_requests) == (1_073_741_824, 47)


def test_sliding_only_model_has_no_longest_request(tmp_path):
    # Mistral v0.1 slides on every layer: a request never reserves more than ceil(4096/16) + 1 pages
    from pathlib import Path

    cfg = Path(__file__).parent / "configs" / "mistral.json"
    r = _run("deploy", "--model-config", str(cfg), "--tp", "1", "--format", "json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["longest_request_tokens"] is None
    # 8,192 tokens reserve 257 pages of 32 x 8 x 128 x 4 x 16 = 2,097,152 B = 538,968,064 B per request
    assert d["request_bytes_per_rank"] == 257 * 2_097_152


def test_overrides_move_deploy_and_replay_alike(trace):
    args = ["--gpu-memory-utilization", "0.95", "--kv-reserve", "8GB"]
    r = _run("deploy", "--model", "llama-3.1-8b", "--tp", "1", "--format", "json", *args)
    d = json.loads(r.stdout)
    # 80e9 x 0.95 = 76e9 - 16,060,522,496 - 8e9 = 51,939,477,504
    assert d["kv_bytes_per_gpu"] == 51_939_477_504
    r = _run("replay", trace, "--model", "llama-3.1-8b", "--tp", "1", "--format", "json", "--quiet", *args)
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["deployment"]["gpu_tier_bytes"] == 51_939_477_504
    bad = _run("replay", trace, "--kv-reserve", "8Gb")
    assert bad.exit_code == 2 and "reads as bits" in bad.stderr


def test_replay_notes_show_layout_tp_and_derivation(trace):
    r = _run("replay", trace, "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--dtype", "fp8")
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "note: gpu tier 304.20 GB = 8 x (141.00 GB HBM x 0.9 - 83.88 GB weights - 5.00 GB reserve)" in out
    assert "KV layout fp8 (vLLM): fp8 values, 2 fp32 scales per layer outside the pages" in out
    assert "footprint bytes are per GPU (one TP rank); replay tiers are per TP group" in out
    assert "mla_latent on 8 ranks each" in out


def test_explicit_tier_larger_than_the_deployment_is_noted(trace):
    s = replay(trace, model="llama-3.1-8b", tp=1, tiers=["gpu=100GB"]).summary
    assert s.deployment["gpu_tier_from"] == "--tier"
    assert any("is more than this deployment leaves for KV" in n for n in s.notes)


def test_link_in_bits_gets_the_bytes_hint(trace):
    r = _run("replay", trace, "--tier", "gpu=10blocks", "--tier", "cpu=1TB", "--link", "cpu=400Gb/s")
    assert r.exit_code == 2
    env = _run("envelope", "--full-prefill", "1s", "--restore-bytes", "1GB", "--bandwidth", "400Gb/s")
    # the unit as typed, a bandwidth's to write (GB/s: 'write GB' named a size before)
    hint = "'Gb/s' reads as bits per second; pcs takes bytes: write GB/s (bytes) or divide bits by 8"
    assert hint in r.stderr and hint in env.stderr


def test_unknown_weights_need_a_gpu_tier_size(tmp_path, trace):
    # the Gemma 2 excerpt has no vocab_size: no parameter count, so no deployment to size from
    cfg = {"model_type": "gemma2", "head_dim": 256, "hidden_size": 3584, "num_attention_heads": 16,
           "num_hidden_layers": 42, "num_key_value_heads": 8, "sliding_window": 4096, "torch_dtype": "bfloat16"}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    r = _run("replay", trace, "--model", str(p), "--tp", "1")
    assert r.exit_code == 2 and "weights are unknown" in r.stderr and "--tier gpu=SIZE" in r.stderr
    # with a size given it replays: 21 full + 21 sliding layers x 8,192 B x 512 tokens = 176,160,768 B per block
    r = _run("replay", trace, "--model", str(p), "--tp", "1", "--tier", "gpu=10blocks", "--format", "json", "-q",
             "--hybrid-kv-cache-manager", "disabled")
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    assert s["tiers"][0]["bytes_per_block"] == 42 * 8_192 * 512 and s["deployment"]["gpu_tier_from"] == "--tier"
    # vLLM's hybrid manager (default): 21 layers of each kind -> 21 layers a page (§13.1), a page
    # 21 x 8,192 x 512 = 88,080,384 B, two pages a block: 10 blocks' bytes hold 20 pages
    r = _run("replay", trace, "--model", str(p), "--tp", "1", "--tier", "gpu=10blocks", "--format", "json", "-q")
    s = json.loads(r.stdout)
    assert (s["tiers"][0]["bytes_per_block"], s["tiers"][0]["capacity_blocks"]) == (21 * 8_192 * 512, 20)


@pytest.mark.parametrize("kw, needle", [
    (dict(tp=0), r"^tp must be in \[1, 1024\], got 0"),            # --tp's range (pcs.argcheck.MAX_TP)
    (dict(tp=1025), r"^tp must be in \[1, 1024\]"),
    (dict(tp=8.0), r"^tp must be an integer, got 8.0 \(float\)"),    # no silent truncation
    (dict(tp=True), r"^tp must be an integer, got True \(bool\)"),
    (dict(tp=8, gpu_memory_utilization=0), r"^gpu_memory_utilization must be in \(0, 1\], got 0.0"),
    (dict(tp=8, gpu_memory_utilization=1.01), r"^gpu_memory_utilization must be in \(0, 1\]"),
    (dict(tp=8, gpu_memory_utilization=float("nan")), "^gpu_memory_utilization must be a finite number"),
    (dict(tp=8, gpu_memory_utilization="0.9"), "^gpu_memory_utilization must be a number"),
    (dict(tp=8, reserve_bytes=-1), "^reserve_bytes must be >= 0, got -1"),
    (dict(tp=8, reserve_bytes=1.5e9), r"^reserve_bytes must be an integer, got 1500000000.0 \(float\)"),
])
def test_size_deployment_refusals_name_the_parameter_as_the_api_does(kw, needle):
    # the same words as pcs.replay's (tests/analysis/test_argcheck.py): "<name> must be ...", pcs.argcheck
    with pytest.raises(UserError, match=needle):
        size_deployment(get_model("llama-2-70b"), H100, **kw)


def test_size_deployment_takes_numpy_numbers_as_their_values():
    # tp np.int64(8), reserve np.int32(1e9): 8 x (72e9 - 17,244,162,048 - 1e9) = 8 x 53,755,837,952
    d = size_deployment(get_model("llama-2-70b"), H100, np.int64(8), np.float64(0.9), np.int32(10**9))
    assert d.tp == 8 and d.kv_bytes == 430_046_703_616


@pytest.mark.parametrize("bad, needle", [(-5, "^kv_reserve=-5: must be >= 0"),
                                         (True, r"^kv_reserve=True: must be an integer, not bool")])
def test_replay_kv_reserve_refusal_names_kv_reserve(trace, bad, needle):
    with pytest.raises(UserError, match=needle):
        replay(trace, model="llama-3.1-8b", tp=1, kv_reserve=bad)
