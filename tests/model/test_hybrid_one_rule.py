"""Hybrid models: one rule in one place for what a window reserves, what a tier in blocks gives the
all-full-attention comparison line, and how many pages one block of the model takes (docs/semantics.md §3.1, §13,
§13.1; docs/hybrid.md).

Expected values worked by hand:

1. A sliding window of W tokens, B-token blocks. vLLM frees, before a step with c computed tokens, the blocks wholly
   before ``get_num_skipped_tokens(c) = c - W + 1`` (``SlidingWindowManager.remove_skipped_blocks``), then
   allocates ceil((c + 1) / B) blocks for the next token (``get_num_blocks_to_allocate``): a decoding sequence
   holds ceil((c + 1) / B) - floor(max(0, c - W + 1) / B) blocks, at most ceil((W - 1) / B) + 1 = m + 1.
   W = 128, B = 16: m = ceil(127 / 16) = 8, 9 blocks (c = 128: ceil(129 / 16) - floor(1 / 16) = 9 - 0 = 9;
   c = 143: ceil(144 / 16) - floor(16 / 16) = 9 - 1 = 8). W = 1,024, B = 512: m = ceil(1,023 / 512) = 2, 3 blocks
   (c = 1,024: ceil(1,025 / 512) - floor(1 / 512) = 3). The old ceil(W / B) + 1 gives the same 9 and 3 there;
   it differs when B divides W - 1: W = 129, B = 16 holds at most ceil(128 / 16) + 1 = 9 (ceil(W / B) + 1 = 10),
   W = 513, B = 512 at most ceil(512 / 512) + 1 = 2 (not 3).
   gemma-3-27b TP 8, 52 sliding layers of 2 KV heads x 128 x (K, V) x 2 B = 53,248 B per token per rank; 10,000
   tokens, B = 512: min(ceil(10,000 / 512) = 20, 3) = 3 blocks, Reserved 3 x 512 x 53,248 = 81,788,928 B.
   gpt-oss-120b TP 8, 18 sliding layers of 1 KV head x 64 x 2 x 2 B = 4,608 B per token per rank; 10,000 tokens,
   B = 16: 9 blocks x 16 x 4,608 = 663,552 B.
2. gemma-3-27b TP 8, B = 512. A page is 10 layers x 524,288 B x 8 ranks = 41,943,040 B; a block of the hybrid model
   1 full + ceil(52 / 10) = 6 sliding pages = 293,601,280 B; a block of the all-full model 62 layers x 524,288 B x 8
   = 260,046,848 B. ``gpu=1641blocks``: 1,641 x 7 = 11,487 pages = 481,799,700,480 B; the comparison line holds the
   same bytes, floor(481,799,700,480 / 260,046,848) = 1,852 blocks (1,852 x 260,046,848 = 481,606,762,496, the
   rest 192,937,984 < a block), not 1,641. ``cpu=100blocks`` (Serialized = Reserved here): 100 x 293,601,280 =
   29,360,128,000 B, floor(/ 260,046,848) = 112 blocks.
   qwen3-next-80b-a3b TP 8, B = 4 (a state every 144 / 4 = 36 blocks, so the padded block is the smaller): a page
   12 x 4 x 1,024 B x 8 = 393,216 B, a block 1 full + ceil(108 / 36) = 3 state pages = 1,572,864 B; the all-full
   block 8 x (12 x 4 x 1,024 + 36 x 137,216) = 39,911,424 B. ``gpu=4blocks``: 16 pages = 6,291,456 B, 0 all-full
   blocks: the line holds none there (it used to refuse the hybrid run, "smaller than one block").
3. qwen3-next-80b-a3b TP 8, B = 16: 12 full layers, 1 KV head per rank x 256 x 2 x 2 B = 1,024 B per token per
   layer; vLLM's G = 12, a page 12 x 16 x 1,024 B = 196,608 B per rank, 1,572,864 B per TP group. A state is
   36 x 137,216 B per rank; vLLM's hybrid block 16 x ceil(137,216 / (16 x 1,024)) = 144 tokens, so a checkpoint
   every 144 tokens = 9 blocks, a state taking the 144-token attention page of its 3 layer groups: 3 x 9 = 27 pages.
   One block of the model: 1 full page + ceil(27 / 9) = 3 state pages = 4 pages = 6,291,456 B (not 1 + 27 = 28).
"""
from __future__ import annotations

import json

import math

import pytest

from pcs.cache.groups import CacheGroup, chunk_hold_blocks, pages_per_model_block, window_hold_blocks
from pcs.model import footprint, get_model
from pcs.model.components import ChunkedLocalAttention, SlidingWindow


def _vllm_decode_blocks(c: int, window: int, block: int) -> int:
    """Blocks a decoding sequence holds with c computed tokens (module docstring 1), vLLM's arithmetic."""
    return -(-(c + 1) // block) - max(0, c - window + 1) // block


@pytest.mark.parametrize("window, block, hold", [(128, 16, 9), (1024, 512, 3), (129, 16, 9), (513, 512, 2)])
def test_footprint_reserves_the_window_the_replay_holds(window, block, hold):
    assert window_hold_blocks(window, block) == hold
    assert max(_vllm_decode_blocks(c, window, block) for c in range(window, window + 4 * block)) == hold
    grp = CacheGroup("sliding_window", "window", ("sliding_window",), block, window)
    sw = SlidingWindow(1, 1, 64, 1, window_tokens=window)
    assert grp.hold_blocks == hold == sw.reserved_blocks(100 * window, block)


def _vllm_chunk_decode_blocks(c: int, chunk: int, block: int) -> int:
    """Blocks a decoding sequence holds in a chunked-local group with c computed tokens, vLLM's arithmetic: the
    blocks before floor(c / C) C freed (``get_num_skipped_tokens``), then blocks up to token c + 1 allocated."""
    return -(-(c + 1) // block) - c // chunk * chunk // block


@pytest.mark.parametrize("chunk, block, hold", [
    (8192, 512, 16),    # Llama 4's C at Mooncake's B: B divides C, C / B (pcs held 17)
    (8192, 16, 512),    # vLLM's default B
    (8, 4, 2),
    (7, 4, 3),          # C mod B = 3 > gcd 1: chunk [7, 14) spans blocks 1, 2, 3
    (6, 4, 2),          # C mod B = 2 = gcd 2: chunks [6, 12) and [12, 18) span 2 blocks each
    (3, 4, 2),          # C < B: chunk [3, 6) spans blocks 0 and 1
    (2, 4, 1),          # C < B, B a multiple of C: every chunk inside one block
])
def test_footprint_reserves_the_chunk_the_replay_holds(chunk, block, hold):
    assert chunk_hold_blocks(chunk, block) == hold
    period = chunk * block // math.gcd(chunk, block)        # the chunk starts' offsets in a block repeat after it
    assert max(_vllm_chunk_decode_blocks(c, chunk, block) for c in range(period + chunk)) == hold
    grp = CacheGroup("chunked_local", "chunk", ("chunked_local",), block, chunk)
    cl = ChunkedLocalAttention(1, 1, 64, 1, chunk_tokens=chunk)
    assert grp.hold_blocks == hold == max(cl.reserved_blocks(t, block) for t in range(1, period + chunk + 1))


def test_window_reserved_blocks_by_hand():
    sw = SlidingWindow(1, 1, 64, 1, window_tokens=128)
    assert [sw.reserved_blocks(t, 16) for t in (0, 100, 128, 129, 10_000)] == [0, 7, 8, 9, 9]
    sw = SlidingWindow(1, 1, 64, 1, window_tokens=1024)
    assert [sw.reserved_blocks(t, 512) for t in (1000, 1025, 100_000)] == [2, 3, 3]


@pytest.mark.parametrize("name, tokens, block, blocks, nbytes", [("gemma-3-27b", 10_000, 512, 3, 81_788_928),
                                                                 ("gpt-oss-120b", 10_000, 16, 9, 663_552)])
def test_footprint_reserved_of_the_window_component(name, tokens, block, blocks, nbytes):
    row, = [c for c in footprint(name, tokens, block, tp=8).components if c["name"] == "sliding_window"]
    assert (row["reserved_blocks"], row["reserved_bytes"]) == (blocks, nbytes)
    from pcs.model.footprint import hybrid_pages

    win, = [g for g in hybrid_pages(get_model(name).with_tp(8), block).groups if g.rule == "window"]
    assert win.hold_blocks == blocks          # the replay's window group holds what footprint reserves


def test_comparison_line_holds_the_hybrid_runs_bytes_in_blocks():
    from helpers import ROOT
    from pcs.engine.api import replay
    from pcs.trace import open_trace

    trace = open_trace(ROOT / "traces" / "sample_chat.jsonl")
    run = lambda *tiers: replay(trace, model="gemma-3-27b", tp=8, tiers=list(tiers), timing="sequential").summary
    s = run("gpu=1641blocks", "cpu=100blocks")
    assert s.tiers[0].capacity_blocks == 11_487 and s.tiers[0].capacity_bytes == 481_799_700_480
    line = s.hybrid.full_attention
    assert line["tiers"]["gpu"]["capacity_blocks"] == 1_852
    assert line["tiers"]["cpu"]["capacity_blocks"] == 112
    same = run("gpu=481799700480B", "cpu=29360128000B").hybrid.full_attention   # a tier in bytes: the same line
    assert same == line
    assert run("gpu=100GB").hybrid.full_attention["tiers"]["gpu"]["capacity_blocks"] == 100 * 10**9 // 260_046_848


def test_comparison_line_of_fewer_bytes_than_an_all_full_block_holds_none():
    import numpy as np
    from helpers import Req
    from pcs.engine.api import replay

    reqs = [Req(float(i), 40, 3, 4, np.arange(10, dtype=np.uint64)) for i in range(3)]
    for kw in ({"timing": "sequential"}, {}):
        s = replay(reqs, model="qwen3-next-80b-a3b", tp=8, tiers=["gpu=4blocks", "cpu=12blocks"], **kw).summary
        assert (s.tiers[0].capacity_blocks, s.tiers[0].capacity_bytes) == (16, 6_291_456)
        assert s.hybrid.full_attention["tiers"]["gpu"]["capacity_blocks"] == 0
        assert s.hybrid.full_attention["tiers"]["cpu"]["capacity_blocks"] == 12 * 1_572_864 // 39_911_424 == 0


def test_a_multi_block_state_block_is_its_pages_spread_over_the_checkpoint(tmp_path):
    from helpers import invoke_json
    from pcs.model.footprint import hybrid_pages
    from pcs.model.parallel import group_block_bytes
    from pcs.engine.hybrid import plan_hybrid
    from pcs.report.replay import block_bytes, model_block_pages

    assert pages_per_model_block("state", 27, 144, 16) == 3 and pages_per_model_block("window", 6, 1024, 512) == 6
    spec = get_model("qwen3-next-80b-a3b").with_tp(8)
    plan = plan_hybrid(spec, 16, ["gpu"], [group_block_bytes(spec, 16, "reserved")], [(10**9, None)], "vllm",
                       0.8, 0.9, "all")
    assert [(g.rule, g.pages, g.span_tokens) for g in plan.groups] == [("full", 1, 0), ("state", 27, 144)]
    assert plan.page_bytes[0][0] == 1_572_864
    assert plan.block_layout(0)[0] == 4 * 1_572_864 == 6_291_456
    assert hybrid_pages(spec, 16).block_pages() == (4,)
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps({"timestamp": i, "input_length": 160, "output_length": 1,
                                         "hash_ids": list(range(10))}) + "\n" for i in range(2)))
    s = invoke_json("replay", trace, "--block-size", "16", "--model", "qwen3-next-80b-a3b", "--tp", "8",
                    "--tier", "gpu=10blocks", "--timing", "sequential")
    assert model_block_pages(s) == [1, 3]
    assert block_bytes(s, s["tiers"][0]) == 6_291_456
    assert s["tiers"][0]["capacity_blocks"] == 40    # 10 blocks of 4 pages (the plan's block_layout)
