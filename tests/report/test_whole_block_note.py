"""The GPU tier derived from the deployment prints one size in the notes and a whole-block size in the tier
table; a note ties the two ("398.05 GB" beside "397.96 GB = 2,372 blk")."""
from __future__ import annotations

import json

from helpers import invoke


def test_the_tier_table_says_why_its_gpu_size_is_smaller():
    # llama-2-70b, fp16, block 512 tokens, TP 8 (the defaults): a block is K and V x 80 layers x 8 KV heads x 128
    # dims x 2 bytes x 512 tokens = 167,772,160 B per TP group (each rank holds 1 KV head of 8: 8 ranks x 1/8).
    block = 2 * 80 * 8 * 128 * 2 * 512
    assert block == 167_772_160
    summary = json.loads(invoke("replay", "--quiet", "--format", "json").stdout)
    size = summary["deployment"]["gpu_tier_bytes"]
    blocks = size // block                    # floor: a tier holds whole blocks (docs/semantics.md §13)
    assert summary["tiers"][0]["capacity_blocks"] == blocks == 2372   # 398.05 GB / 167.77 MB = 2,372.6
    text = invoke("replay", "--quiet").stdout
    assert ("note: gpu capacity counts whole blocks: the deployment's 398.05 GB holds 2,372 blocks of 167.77 MB "
            "= 397.96 GB") in text                                     # 2,372 x 167,772,160 B = 397.956 GB


def test_no_note_for_a_gpu_tier_given_in_blocks():
    text = invoke("replay", "--quiet", "--tier", "gpu=100blocks", "--tier", "cpu=1TB").stdout
    assert "counts whole blocks" not in text


# The whole-block rounding is explained wherever sizes given in bytes are printed rounded.
# llama-3.1-8b at fp8: K and V x 32 layers x 8 KV heads x 128 dims x 1 byte x 512 tokens = 33,554,432 B a block;
# 80 GB / 33,554,432 B = 2,384.19 -> 2,384 blocks = 79,993,765,888 B, printed 79.99 GB.
def test_curve_explains_79_99_gb_for_80gb():
    assert 2 * 32 * 8 * 128 * 1 * 512 == 33_554_432 and 80 * 10**9 // 33_554_432 == 2384
    r = invoke("curve", "traces/sample_chat.jsonl", "--capacities", "40GB,80GB", "--model", "llama-3.1-8b",
               "--dtype", "fp8")
    assert r.exit_code == 0, r.output
    assert "2,384  79.99 GB" in r.stdout and "holds whole blocks, floor(size / bytes per block)" in r.stdout


def test_compare_tiers_row_says_whole_blocks():
    # gpu=80GB with llama-3.1-8b fp8 is shown as the 2,384 whole blocks it holds and their bytes,
    # 2,384 x 33,554,432 B (by hand above)
    r = invoke("compare", "traces/sample_chat.jsonl", "--policy", "lru", "--policy", "fifo", "--tier", "gpu=80GB",
               "--model", "llama-3.1-8b", "--dtype", "fp8", "--quiet")
    assert r.exit_code == 0, r.output
    assert "79.99 GB = 2,384 blk" in r.stdout and "note: tiers: a size given in bytes holds whole blocks" in r.stdout


def test_sweep_front_says_whole_blocks():
    from pcs.report.sweep import render_summary
    from pcs.sweep.result import SweepBest, SweepFrontPoint, SweepSummary

    front = (SweepFrontPoint("p1", 0.5, {"gpu": 79_993_765_888}, {}, 0.5, 0.6),)
    s = SweepSummary("out", 1, 1, "hit_ratio", "max", ("gpu",), (SweepBest("hit_ratio", "max", 0.5, "p1", {}),),
                     front)
    text = render_summary(s)
    assert "79.99 GB" in text and "tier bytes: a size given in bytes holds whole blocks" in text
