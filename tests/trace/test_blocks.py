"""Block rules and the single-sequence hit ratio, checked on hand-made streams."""
from types import SimpleNamespace

import numpy as np
import pytest

from pcs.blocks import BlockRules, single_sequence_hits


def req(prompt_tokens, hashes, block_size=4):
    return SimpleNamespace(prompt_tokens=prompt_tokens, block_size=block_size,
                           block_hashes=np.asarray(hashes, dtype=np.uint64))


@pytest.mark.parametrize("p,num_hashes,full,cap", [
    # block size 4: 9 tokens -> 2 full blocks + 1 partial; cap (9-1)//4 = 2
    (9, 3, 2, 2),
    # 8 tokens = 2 full blocks; the last token must be recomputed: cap (8-1)//4 = 1
    (8, 2, 2, 1),
    # 3 tokens: no full block, nothing cacheable or hittable
    (3, 1, 0, 0),
    # 1 token: cap (1-1)//4 = 0
    (1, 1, 0, 0),
])
def test_default_rules(p, num_hashes, full, cap):
    rules = BlockRules()
    assert rules.cacheable_blocks(p, num_hashes, 4) == full
    assert rules.max_hit_blocks(p, num_hashes, 4) == cap


def test_partial_and_no_cap():
    r = BlockRules(cache_partial_blocks=True, recompute_last_token=False)
    assert r.cacheable_blocks(9, 3, 4) == 3
    assert r.max_hit_blocks(9, 3, 4) == 3
    # a hit partial block covers only the remaining token: 9 tokens, not 12
    assert r.hit_tokens(3, 9, 4) == 9
    # partial cached but the last token recomputed: (9-1)//4 = 2 blocks
    assert BlockRules(cache_partial_blocks=True).max_hit_blocks(9, 3, 4) == 2


def test_single_sequence_by_hand():
    # block size 4
    stream = [
        req(9, [1, 2, 3]),      # all new: 0 hit tokens; caches 1, 2 (3 is partial)
        req(9, [1, 2, 7]),      # 1, 2 seen; cap (9-1)//4 = 2 -> 8 hit tokens
        req(8, [1, 2]),         # both seen, cap (8-1)//4 = 1 -> 4 hit tokens
        req(12, [5, 2, 9]),     # 5 new: lookup stops, 2 never counts -> 0
        req(13, [1, 3, 4, 6]),  # 1 seen, 3 was only a partial block (never cached) -> 4
    ]
    res = single_sequence_hits(stream)
    assert res.hit_tokens == 0 + 8 + 4 + 0 + 4
    assert res.prompt_tokens == 9 + 9 + 8 + 12 + 13
    assert res.hit_blocks == 0 + 2 + 1 + 0 + 1
    assert res.requests_with_hit == 3
    assert res.hit_ratio == pytest.approx(16 / 51)


def test_single_sequence_partial_blocks_cached():
    stream = [req(9, [1, 2, 3]), req(9, [1, 2, 3])]
    rules = BlockRules(cache_partial_blocks=True, recompute_last_token=False)
    # second request hits all 3 blocks = all 9 tokens
    assert single_sequence_hits(stream, rules).hit_tokens == 9
    # with the default rules: 3 is never cached and the cap is 2 blocks -> 8 tokens
    assert single_sequence_hits(stream).hit_tokens == 8


def test_empty_stream():
    assert single_sequence_hits([]).hit_ratio == 0.0
