"""The decode-aware single-sequence scan (pcs.engine.decodescan) against the set walk of pcs.blocks.

The reference is :func:`pcs.blocks.single_sequence_hits` with ``decode``: one Python set, request by request,
the request's decode-block ids added right after its prompt blocks (docs/semantics.md §12, §17).
"""
from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import req, traces
from pcs import _native
from pcs.blocks import BlockRules, single_sequence_hits
from pcs.engine import decodescan
from pcs.engine.turns import decode_blocks
from pcs.trace.batches import as_batches

KERNELS = ["python", "c"] if _native.built("lruscan") else ["python"]
RULES = [BlockRules(), BlockRules(cache_partial_blocks=True), BlockRules(recompute_last_token=False),
         BlockRules(True, False)]


@pytest.mark.parametrize("kernel", KERNELS)
def test_hand_case_output_blocks_hit_under_the_next_turns_ids(kernel):
    # block size 4. A (0): ids [1, 2], prompt 8, output 9: f = 2 full prompt blocks; its KV ends at
    # 8 + 9 - 1 = 16 tokens -> output blocks at positions 2 .. 16 // 4 - 1 = 3.
    # B (1): ids [1, 2, 3, 4, 5], prompt 20 >= 8 + 9: A's next turn; A's decode blocks get B's ids [3, 4].
    # Prompt-only ceiling: B hits [1, 2] = 8 tokens (3 was never a prompt block before B).
    # Decode-aware: B hits [1, 2, 3, 4] = 16 tokens, capped at (20 - 1) // 4 = 4 blocks: all 4.
    reqs = [req([1, 2], 0.0, prompt=8, out=9), req([1, 2, 3, 4, 5], 1.0, prompt=20, out=0)]
    dec = decode_blocks(reqs, "python")
    assert dec.hashes == {0: [3, 4]}
    prompt_only = decodescan.decode_aware_hits(reqs, BlockRules(), None, kernel)
    aware = decodescan.decode_aware_hits(reqs, BlockRules(), dec, kernel)
    assert (prompt_only.hit_tokens, prompt_only.prompt_tokens, prompt_only.hit_blocks) == (8, 28, 2)
    assert (aware.hit_tokens, aware.prompt_tokens, aware.hit_blocks, aware.requests_with_hit) == (16, 28, 4, 1)
    assert aware == single_sequence_hits(reqs, BlockRules(), dec)


@settings(max_examples=150, deadline=None)
@given(traces(max_requests=30), st.integers(1, 7), st.sampled_from(KERNELS), st.sampled_from(RULES), st.data())
def test_scan_equals_the_set_walk(reqs, rows, kernel, rules, data):
    # arbitrary outputs (next turns both found and not); small batches so that a request's decode ids and
    # the requests hitting them fall in different batches
    reqs = [req(r.block_hashes.tolist(), r.arrival_s, prompt=r.prompt_tokens,
                out=data.draw(st.integers(0, 12)), bs=r.block_size) for r in reqs]
    dec = decode_blocks(reqs, "python")
    orig = decodescan.as_batches
    decodescan.as_batches = functools.partial(as_batches, rows=rows)
    try:
        aware = decodescan.decode_aware_hits(reqs, rules, dec, kernel)
        plain = decodescan.decode_aware_hits(reqs, rules, None, kernel)
    finally:
        decodescan.as_batches = orig
    assert aware == single_sequence_hits(reqs, rules, dec)
    # without decode blocks: the prompt-only ceiling; with them never lower (the cache only grows)
    assert plain == single_sequence_hits(reqs, rules)
    assert aware.hit_tokens >= plain.hit_tokens


@pytest.mark.skipif(len(KERNELS) < 2, reason="the compiled pcs.engine._lruscan is not built")
def test_kernels_equal_on_a_conversation_trace():
    from helpers import conversation_trace

    reqs = conversation_trace(np.random.default_rng(5), 6, 5)
    dec = decode_blocks(reqs, "python")
    assert len(dec.index) > 0
    got = {k: decodescan.decode_aware_hits(reqs, BlockRules(), dec, k) for k in KERNELS}
    assert got["c"] == got["python"] == single_sequence_hits(reqs, BlockRules(), dec)


# -- the decode-aware walk inside the replay's one-pass scan (pcs.engine.fastpath.scan with decode) ---------

from pcs.engine import fastpath  # noqa: E402


@pytest.mark.parametrize("kernel", KERNELS)
def test_fused_walk_hand_case_leaves_the_lru_and_ideal_walk_alone(kernel):
    # block size 4; A (0) ids [1, 2], prompt 8, output 9: decode blocks under B's ids [3, 4] (as above).
    # B (1) [1, 2, 3, 4, 5], prompt 20; C (2) [1, 2, 3], prompt 12.
    # seen (prompt walk, uncapped): A 0; B 2 (1, 2 stamped by A); C 3 (B stamped 1, 2, 3).
    # seen_decode: A 0; B 4 (1, 2 stamped, 3, 4 A's decode ids; 5 never); C 3.
    # ideal: A 0; B 2 (3 was only a decode id: never looked up before B); C 3.
    # lead at 16 slots (nothing evicted) = seen: decode ids take no LRU slot.
    reqs = [req([1, 2], 0.0, prompt=8, out=9), req([1, 2, 3, 4, 5], 1.0, prompt=20, out=0),
            req([1, 2, 3], 2.0, prompt=12, out=0)]
    dec = decode_blocks(reqs, "python")
    sc = fastpath.scan(reqs, 16, BlockRules(), kernel, decode=dec)
    assert sc.seen_decode.tolist() == [0, 4, 3]
    assert sc.seen_lead.tolist() == [0, 2, 3] == sc.prefix_hit_blocks.tolist()
    assert sc.ideal_lead.tolist() == [0, 2, 3]
    assert fastpath.decode_result(sc) == single_sequence_hits(reqs, BlockRules(), dec)
    assert fastpath.decode_result(fastpath.scan(reqs, 16, BlockRules(), kernel)) is None


@settings(max_examples=150, deadline=None)
@given(traces(max_requests=30), st.integers(0, 12), st.sampled_from(KERNELS + ["c2"] if "c" in KERNELS else KERNELS),
       st.sampled_from(RULES), st.data())
def test_fused_walk_equals_the_set_walk_and_changes_no_other_column(reqs, cap, kernel, rules, data):
    # one tier (either kernel) or two tiers ("c2": the compiled scan with a lower tier of 0..8 blocks, whose
    # truncated ids are marked stamped, pcs/engine/_lruscan_tiers.h): the decode-aware result equals the set
    # walk, and every other column equals the scan's without decode ids
    # spread: ids scattered over 64 bits (an odd multiplier is a bijection mod 2**64): the hashed table
    spread = 0x9E3779B97F4A7C15 if data.draw(st.booleans()) else 1
    reqs = [req([i * spread % 2**64 for i in r.block_hashes.tolist()], r.arrival_s, prompt=r.prompt_tokens,
                out=data.draw(st.integers(0, 12)), bs=r.block_size) for r in reqs]
    dec = decode_blocks(reqs, "python")
    lower = data.draw(st.integers(0, 8)) if kernel == "c2" else None
    k = "c" if kernel == "c2" else kernel
    fused = fastpath.scan(reqs, cap, rules, k, check=False, lower_blocks=lower, decode=dec)
    plain = fastpath.scan(reqs, cap, rules, k, check=False, lower_blocks=lower)
    assert fastpath.decode_result(fused) == single_sequence_hits(reqs, rules, dec)
    for name in ("prefix_hit_blocks", "seen_lead", "ideal_lead", "baseline_hits"):
        a, b = getattr(fused, name), getattr(plain, name)
        assert (a is None and b is None) or a.tolist() == b.tolist(), name
