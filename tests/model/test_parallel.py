"""Tensor parallelism in replay: a tier's bytes per block = per-rank footprint bytes x the ranks holding a copy.

A 3-request trace at 512-token blocks; values worked out by hand in the comments.
"""
from __future__ import annotations

import json

import pytest

from pcs.engine.api import replay
from pcs.model import LAYOUT_NAMES, MODEL_NAMES, footprint, get_layout, get_model, group_block_bytes, tp_placement

TRACE = [{"timestamp": 0, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]},
         {"timestamp": 1000, "input_length": 1024, "output_length": 1, "hash_ids": [3, 4]},
         {"timestamp": 2000, "input_length": 1025, "output_length": 1, "hash_ids": [1, 2, 9]}]


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    p = tmp_path_factory.mktemp("tp") / "trace.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in TRACE))
    return str(p)


def _gpu_blocks(trace, model, tp, tier="gpu=400GB", **kw):
    return replay(trace, model=model, tp=tp, tiers=[tier], timing="sequential", **kw).summary.tiers[0]


def test_mla_replicated_on_every_rank(trace):
    # DeepSeek-V3 TP 8: each rank holds the whole latent, 70,272 x 512 = 35,979,264 B per block;
    # the group holds 8 copies: 287,834,112 B; 400 GB / that = 1,389 blocks (50 GB per rank / 35,979,264)
    row = _gpu_blocks(trace, "deepseek-v3", 8)
    assert row.bytes_per_block == 8 * 35_979_264 == 287_834_112
    assert row.capacity_blocks == 1_389


def test_gqa_heads_replicated_beyond_the_kv_head_count(trace):
    # Llama-3.1-70B TP 16, 8 KV heads: one head per rank, each head on 2 ranks:
    # per rank 80 x 1 x 128 x 2 x 2 B x 512 = 20,971,520; group 16 x that = 335,544,320; 400 GB -> 1,192
    row = _gpu_blocks(trace, "llama-3.1-70b", 16)
    assert row.bytes_per_block == 16 * 20_971_520
    assert row.capacity_blocks == 1_192
    # TP 8 (one head per rank, no replica): the whole model's 327,680 x 512 = 167,772,160; 400 GB -> 2,384
    assert _gpu_blocks(trace, "llama-3.1-70b", 8).capacity_blocks == 2_384


@pytest.mark.parametrize("model, tp, expect_s", [
    # 2 blocks restored from the CPU tier over PCIe Gen5 x16 (50 GB/s per GPU, 10 us setup), one restore:
    # each rank moves its own copy over its own link: 10 us + 2 x 35,979,264 B / 50e9 = 1.44917056 ms
    ("deepseek-v3", 8, 10e-6 + 2 * 35_979_264 / 50e9),
    # each rank moves its one head: 10 us + 2 x 20,971,520 / 50e9 = 0.8488608 ms
    ("llama-3.1-70b", 16, 10e-6 + 2 * 20_971_520 / 50e9),
    # no replicas: each of 8 ranks moves its eighth of 167,772,160: 10 us + 2 x 20,971,520 / 50e9
    ("llama-3.1-70b", 8, 10e-6 + 2 * 20_971_520 / 50e9),
    # MLA at TP 1: 10 us + 2 x 35,979,264 / 50e9 -- the same as at TP 8: replicas do not speed a restore up
    ("deepseek-v3", 1, 10e-6 + 2 * 35_979_264 / 50e9),
])
def test_restore_moves_each_ranks_share_over_its_own_link(trace, model, tp, expect_s):
    s = replay(trace, model=model, tp=tp, tiers=["gpu=2blocks", "cpu=1TB"], timing="sequential").summary
    link = s.envelope.links[0]
    assert (link.restores, link.restored_blocks) == (1, 2)
    assert link.restore_s == pytest.approx(expect_s, rel=1e-12)


def test_placement_shards_and_replicas():
    p = tp_placement(get_model("qwen3-next-80b-a3b").with_tp(8))
    # 2 KV heads over 8 ranks: 2 shards, 4 replicas; the GDN state is split 8 ways
    assert p.shards == {"full_attention": 2, "ssm_state": 8} and p.replicas == {"full_attention": 4, "ssm_state": 1}
    p = tp_placement(get_model("deepseek-v3.2").with_tp(4))
    assert p.shards == {"mla_latent": 1, "indexer_keys": 1} and p.ranks_holding_copy == 4


def _layouts_for(spec):
    """Every distinct layout, split into those the model takes and those it refuses (MLA)."""
    names = list(dict.fromkeys(get_layout(n).name for n in LAYOUT_NAMES))
    ok, refused = [], []
    for n in names:
        try:
            spec.with_dtype(n)
            ok.append(n)
        except ValueError:
            refused.append(n)
    return ok, refused


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_grid_replay_tier_bytes_equal_footprint_per_rank_times_ranks(trace, name):
    """Acceptance grid: every preset x every layout x TP in {1, 2, 4, 8, 16}."""
    spec = get_model(name)
    ok, refused = _layouts_for(spec)
    assert len(ok) >= 6
    for layout in ok:
        for tp in (1, 2, 4, 8, 16):
            fp = footprint(spec.with_tp(tp), 1024, block_size=512, dtype=layout)
            # whole-model blocks: every layer as full attention (hybrid pages: docs/semantics.md §13.1)
            s = replay(trace, model=name, tp=tp, dtype=layout, timing="sequential", hybrid_kv_cache_manager="disabled",
                       tiers=["gpu=4blocks", "cpu=8blocks", "ssd=16blocks"]).summary
            gpu, cpu, ssd = s.tiers
            # footprint's blocks are vLLM's hybrid pages; the manager disabled has none: its page padding out, and
            # a state in every block (every layer as full attention), where the pages spread a state over the blocks
            # between checkpoints (docs/semantics.md §13.1): the components' bytes of a block, not the pages' shares
            pad = sum(c["serialized_bytes_per_block"] for c in fp.components if c["name"] == "page_padding")
            state = sum(c["fixed_bytes_per_sequence"] - c["serialized_bytes_per_block"] for c in fp.components
                        if c["name"] == "ssm_state")
            assert gpu.bytes_per_block == (fp.per_block["reserved"] - pad + state) * tp, (layout, tp)
            assert cpu.bytes_per_block == ssd.bytes_per_block == (fp.per_block["serialized"] - pad + state) * tp, \
                (layout, tp)
            assert fp.tp_group["bytes_per_block"]["reserved"] - (pad - state) * tp == gpu.bytes_per_block
            assert s.deployment["layout"]["name"] == fp.layout["name"]
    for layout in refused:  # MLA has no per-token-head / nvfp4 / int4 form, GQA no fp8_ds_mla: both refuse it
        with pytest.raises(ValueError, match="no MLA form|is FlashMLA's MLA layout"):
            replay(trace, model=name, dtype=layout, tiers=["gpu=4blocks"])


def test_group_block_bytes_per_component():
    bb = group_block_bytes(get_model("gpt-oss-120b").with_tp(16), 16, "serialized")
    # 8 KV heads over 16 ranks: 1 head per rank: 18 layers x 64 x 4 B x 16 tokens = 73,728 per kind, x 16 ranks
    assert bb.per_component == {"full_attention": 16 * 73_728, "sliding_window": 16 * 73_728}


def test_tp_that_vllm_refuses():
    with pytest.raises(ValueError, match="does not divide"):
        get_model("llama-3.1-8b").with_tp(3)
    with pytest.raises(ValueError, match="attention heads"):
        get_model("deepseek-v3").with_tp(256)
