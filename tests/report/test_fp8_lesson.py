"""Lesson 2 as the numbers show it: vLLM's fp8 (per-tensor scales outside the pages) halves stored and restore
bytes but not prefill or TTFT; fp8_per_token_head (scales in the pages) does not halve stored bytes either.
The prose (README, lens note, footprint table) says that, and the footprint table shows both layouts."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import invoke

ROOT = Path(__file__).resolve().parents[2]


def _json(*args):
    r = invoke(*args, "--format", "json", "-q")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_footprint_shows_vllm_fp8_and_a_scale_layout():
    res = _json("footprint", "--model", "llama-2-70b", "--tokens", "512", "--block-size", "512")
    rows = {r["layout"]: r for r in res["by_dtype"]}
    assert list(rows)[:3] == ["bf16", "fp8", "fp8_per_token_head"]
    # llama-2-70b, 512 tokens, TP 1: 80 layers x 8 KV heads x 128 x 2 (K, V) x 512 tokens = 83,886,080 values
    assert rows["bf16"]["reserved_bytes"] == 2 * 83_886_080            # 2 B per bf16 value
    assert rows["fp8"]["reserved_bytes"] == 83_886_080                 # 1 B, scales outside the pages: x0.500
    # + one fp32 scale per token per KV head for K and V: 80 x 8 x 2 x 4 B x 512 = 2,621,440 B -> x0.516
    assert rows["fp8_per_token_head"]["reserved_bytes"] == 83_886_080 + 2_621_440
    assert rows["fp8_per_token_head"]["reserved_ratio_vs_bf16"] == pytest.approx(86_507_520 / 167_772_160)


def test_replay_lens_halves_bytes_not_latency():
    lens = _json("replay")["payload_lens"]
    assert (lens["dtype"], lens["alt_dtype"]) == ("fp16", "fp8")
    run, alt = lens["gpu_bytes_per_block"]
    assert (run, alt) == (167_772_160, 83_886_080)                     # exactly half (see above)
    assert lens["restored_bytes"][1] * 2 == lens["restored_bytes"][0]
    assert lens["prefill_s"][0] == lens["prefill_s"][1]                # compute counts FLOPs, not KV bytes
    assert lens["ttft_mean_s"][1] > 0.9 * lens["ttft_mean_s"][0]      # TTFT does not halve


def test_prose_says_what_the_numbers_show():
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "does not halve reserved capacity, restore traffic" not in readme
    assert "x0.500" in readme and "x0.516" in readme and "fp8_per_token_head" in readme
    table = invoke("replay", "-q").stdout.split("Payload is not everything", 1)[1]
    assert "vLLM fp8: x0.500" in " ".join(table.split())
    foot = invoke("footprint", "--model", "llama-3.1-8b", "--tokens", "16", "-q").stdout
    assert "only values narrow; scales, bf16 parts, a state do not" in foot and "fp8_per_token_head" in foot


def test_lens_note_names_fp8_ds_mla_and_its_ratios_on_deepseek_v32(tmp_path):
    """DeepSeek-V3.2 runs fp8 as fp8_ds_mla: the lens note names it with its ratios vs bf16, not plain fp8's
    x0.500 (footprint's text, pcs.report.footprint.fp8_note). By hand, per token per layer over 61 layers:
    Reference bf16 576 x 2 = 1,152 + indexer 128 fp8 = 1,280 -> 78,080; fp8_ds_mla 512 fp8 + 64 x 2 bf16 rope = 640
    + 128 = 768 -> 46,848: x0.600. Reserved / Serialized add the indexer's 4 B scale and fp8_ds_mla's 656 B row:
    bf16 61 x (1,152 + 132) = 78,324, fp8_ds_mla 61 x (656 + 132) = 48,068: 48,068 / 78,324 = x0.614."""
    import json as _json

    from pcs import replay
    from pcs.report.replay import lens_rows

    path = tmp_path / "t.jsonl"
    path.write_text(_json.dumps({"timestamp": 0, "input_length": 1_024, "output_length": 1, "hash_ids": [1, 2]}) + "\n")
    for dtype in (None, "fp8"):
        s = replay(str(path), model="deepseek-v3.2", hardware="b200", dtype=dtype).summary.to_dict()
        note = lens_rows(s)[3][0]
        assert ("fp8 runs as fp8_ds_mla on this model" in note
                and "vs bf16: Reference x0.600, Serialized x0.614, Reserved x0.614" in note), note
        assert "x0.500" not in note
    s = replay(str(path), model="llama-3.1-70b").summary.to_dict()     # plain fp8: the general text
    assert "vLLM fp8: x0.500 of bf16" in lens_rows(s)[3][0]


def test_lens_note_with_a_gpu_tier_of_no_block_names_no_ratio():
    """A GPU tier of 0 blocks holds none in either dtype (gpu_capacity_blocks [0, 0]): the note says fp8 fits more
    blocks per tier (the cpu tier of 100 blocks is 100 x 167,772,160 B, which fits 200 blocks of 83,886,080 B),
    never a placeholder ratio ('fits - the blocks', review37b finding 4); with 8 GPU blocks it is x2.000 (8 -> 16,
    the same bytes at half a block's size)."""
    trace = str(ROOT / "traces" / "formats" / "mooncake_conv_8.jsonl")
    def note(gpu):
        return " ".join(invoke("replay", trace, "--tier", gpu, "--tier", "cpu=100blocks", "--timing",
                               "sequential").output.split())
    none = note("gpu=0blocks")
    assert "also fits more blocks per tier, so the hits change" in none and "fits -" not in none
    eight = note("gpu=8blocks")
    assert "also fits x2.000 the blocks per tier, so the hits change" in eight


def test_a_given_fp8_layout_is_not_called_vllms_pick():
    """On Llama-3.1-8B vLLM runs ``--kv-cache-dtype fp8`` as plain fp8 (per-tensor scales outside the pages); a run
    given ``--dtype fp8_per_token_head`` chose that layout itself, so the lens note must not say "fp8 runs as
    fp8_per_token_head on this model (vLLM picks it for any fp8 cache dtype ...)" (nor name DeepSeek's 64 bf16 rope
    values a token): it gives the general comparison (review37b finding 5)."""
    out = " ".join(invoke("replay", "--model", "llama-3.1-8b", "--tp", "1", "--dtype", "fp8_per_token_head")
                   .output.split())
    assert "runs as fp8_per_token_head" not in out and "rope values" not in out
    assert "(vLLM fp8: x0.500 of bf16; fp8_per_token_head, nvfp4: less, pcs footprint shows both)" in out
