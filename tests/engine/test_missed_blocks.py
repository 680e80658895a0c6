"""Missed blocks (docs/replay.md, "missed blocks"): a cacheable block the rules did not let the request use.

- hand-worked: a two-layer Gemma-2-like model (one full-attention layer, one 32-token sliding window,
  16-token blocks) on four requests, where the window rule refuses a hit the full layer alone would give:
  the refused blocks are misses, on both twins (``hybrid``, ``compiled-hybrid``);
- invariant (hypothesis traces, every hybrid preset, both twins, both timings): without the last-token cap,
  a request that was not truncated has ``hit_blocks + recomputed_hit_blocks + missed_blocks = cacheable``,
  and with it no request counts more than its cacheable blocks.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import traces
from pcs import _native
from pcs.blocks import BlockRules
from pcs.engine.api import replay

TWINS = ["hybrid"] + (["compiled-hybrid"] if _native.built("grouphier") else [])
HYBRIDS = ("gpt-oss-120b", "gemma-3-27b", "qwen3-next-80b-a3b")

#: one full-attention layer and one 32-token sliding-window layer
TINY_GEMMA2 = {"_name_or_path": "tiny/gemma2-w32", "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2",
               "head_dim": 8, "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 1,
               "num_hidden_layers": 2, "num_key_value_heads": 1, "sliding_window": 32,
               "cache_implementation": "hybrid", "vocab_size": 1000, "torch_dtype": "bfloat16",
               "max_position_embeddings": 4096}


def _trace(tmp_path):
    rows = [(1, 80, [1, 2, 3, 4, 5]), (2, 96, [1, 2, 3, 4, 5, 6]), (3, 32, [7, 8]), (4, 96, [1, 2, 3, 4, 10, 11])]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"chat_id": c, "parent_chat_id": -1, "timestamp": 10.0 * (c - 1),
                                        "input_length": p, "output_length": 1, "type": "text", "turn": 1,
                                        "hash_ids": ids}) + "\n" for c, p, ids in rows))
    cfg = tmp_path / "tinyg2.json"
    cfg.write_text(json.dumps(TINY_GEMMA2))
    return path, cfg


@pytest.mark.parametrize("engine", TWINS)
def test_blocks_the_window_refused_are_misses_hand_worked(tmp_path, engine):
    # B = 16, W = 32 (2 blocks); gpu=6blocks is 12 pages of the shared pool (one full + one window page a block).
    # cacheable = P // 16: 5, 6, 2, 6 = 19. Request 0: nothing cached, 5 misses. Request 1: blocks 1-5 resident,
    # cap (96 - 1) // 16 = 5: 5 hits, block 6 missed. Request 2: new blocks 7, 8: 2 misses; its 4 pages (plus
    # request 1's 12 cached ones, LRU) push out the oldest window pages of 1-5. Request 3: the full layer
    # holds 1-4 (4 blocks, 64 tokens) but the window needs blocks 3 and 4's window pages, evicted: the rules
    # refuse all 4 (hybrid_lost_tokens 64), so 0 hits and all 6 blocks missed (10 and 11 are new).
    # Totals: hits 5, misses 5 + 1 + 2 + 6 = 14 = 19 - 5 (recomputed 224 tokens = 14 x 16).
    path, cfg = _trace(tmp_path)
    r = replay(str(path), model=str(cfg), tp=1, tiers=["gpu=6blocks"], timing="sequential", engine=engine)
    cols = {c: r.requests.column(c).to_pylist() for c in ("hit_blocks", "missed_blocks", "hybrid_lost_tokens")}
    assert cols == {"hit_blocks": [0, 5, 0, 0], "missed_blocks": [5, 1, 2, 6], "hybrid_lost_tokens": [0, 0, 0, 64]}
    s = r.summary
    assert (s.cacheable_blocks, s.hit_blocks, s.block_misses) == (19, 5, 14)
    assert s.prompt_tokens - s.hit_tokens == 304 - 80 == 14 * 16   # every prompt is whole blocks


@settings(max_examples=60, deadline=None)   # main before the fix failed within 150 examples
@given(reqs=traces(max_requests=14), model=st.sampled_from(HYBRIDS), gpu=st.integers(2, 16),
       timing=st.sampled_from(["sequential", "modeled"]), engine=st.sampled_from(TWINS),
       cap=st.booleans())
def test_hits_and_misses_add_up_to_the_cacheable_blocks(reqs, model, gpu, timing, engine, cap):
    rules = BlockRules(recompute_last_token=cap)
    r = replay(reqs, model=model, tiers=[f"gpu={gpu}blocks", f"cpu={3 * gpu}blocks"], timing=timing,
               engine=engine, rules=rules)
    t = r.requests
    hit, miss = (t.column(c).to_numpy().astype(np.int64) for c in ("hit_blocks", "missed_blocks"))
    rec = t.column("recomputed_hit_blocks").to_numpy().astype(np.int64) if "recomputed_hit_blocks" in \
        t.column_names else np.zeros_like(hit)
    trunc = t.column("truncated").to_numpy().astype(bool)
    n = np.array([rules.cacheable_blocks(q.prompt_tokens, len(q.block_hashes), q.block_size) for q in reqs])
    assert (miss >= 0).all() and (hit + rec + miss <= n).all()
    if not cap:
        assert (hit + rec + miss)[~trunc].tolist() == n[~trunc].tolist()
    s = r.summary
    assert s.hit_blocks + s.block_misses <= s.cacheable_blocks == int(n.sum())
