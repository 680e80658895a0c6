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
