"""A hybrid model's tiers count pages in capacity_blocks / bytes_per_block (keys kept so no
number moves); the JSON says which unit each tier's *_blocks fields count (TierSummary.blocks_unit)."""
from __future__ import annotations

import pcs


def test_blocks_unit_is_block_for_a_full_attention_model_and_page_for_a_hybrid_one():
    full = pcs.replay("traces/sample_chat.jsonl", tiers=["gpu=100blocks", "cpu=400blocks"]).summary.to_dict()
    assert [t["blocks_unit"] for t in full["tiers"]] == ["block", "block"]
    # gpt-oss-120b (sliding window + full attention layers) is a hybrid model: the vLLM manager's shared pool
    # is counted in pages on every tier
    hyb = pcs.replay("traces/sample_chat.jsonl", model="gpt-oss-120b", tiers=["gpu=40GB", "cpu=100GB"]).summary
    d = hyb.to_dict()
    assert d["hybrid"] is not None
    assert [t["blocks_unit"] for t in d["tiers"]] == ["page", "page"]
