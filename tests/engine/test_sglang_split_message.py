"""SGLang's pool split: a pool left with no page is named, with its page and the ratio to change
(pcs/engine/hybrid.py _refuse_empty_pool; docs/hybrid.md)."""
from __future__ import annotations

import pytest

import pcs
from pcs.errors import UserError


def test_a_ratio_that_starves_the_state_pool_names_the_pool_and_the_ratio():
    # qwen3-next: a full-attention pool and an SSM-state pool; mamba_full_memory_ratio 1e-6 gives the state
    # pool ~1e-6 of the tier, less than its one page: the tier itself is far larger than a page
    with pytest.raises(UserError, match=r"tier 'gpu' \([\d,]+ B\): SGLang's pool split leaves pool 'ssm_state' no "
                                        r"page \([\d,]+ B per page; pages per pool: \d+, 0\); change "
                                        r"mamba_full_memory_ratio \(now 1e-06\)"):
        pcs.replay(None, model="qwen3-next-80b-a3b", tiers=["gpu=200blocks"], hybrid_kv_cache_manager="sglang",
                   mamba_full_memory_ratio=1e-6)
