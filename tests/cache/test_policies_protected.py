"""Segmented LRU ("protected") against LRU, traced by hand."""
from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

from pcs.blocks import BlockRules
from pcs.cache import Hierarchy, Tier, make_policy
from pcs.cache.policies import DEFAULT_PROTECTED_SHARE, ProtectedPolicy
from pcs.engine.engine import ReplayEngine
from pcs.engine.chunks import iter_chunks

Req = namedtuple("Req", "arrival_s prompt_tokens output_tokens block_size block_hashes")
BS = 4
# every hash id is a unit, no last-token cap: a request of k ids hits up to k blocks
RULES = BlockRules(cache_partial_blocks=True, recompute_last_token=False)


def _req(ids, t=0.0):
    return Req(t, len(ids) * BS, 0, BS, np.array(ids, dtype=np.uint64))


def _hits_per_request(policy: str, reqs, capacity: int, **opts) -> list[int]:
    tier = Tier("gpu", capacity, make_policy(policy, capacity, **opts))
    eng = ReplayEngine(Hierarchy([tier]), "sequential", check=True)
    for ch in iter_chunks(reqs, RULES):
        eng.feed(ch)
    return list(eng.close().columns["hit_blocks"])


def test_default_share_is_caffeines():
    # Caffeine BoundedLocalCache.PERCENT_MAIN_PROTECTED = 0.80d
    assert DEFAULT_PROTECTED_SHARE == 0.8
    assert ProtectedPolicy(10).protected_max_blocks == 8
    with pytest.raises(ValueError):
        ProtectedPolicy(10, protected_share=1.5)


def test_protected_keeps_reused_prefix_through_scan_lru_loses_it():
    # ids: P = reused prefix p0,p1 (ids 0,1); S = scan 10,11,12; T = scan 20,21,22. Capacity 5 blocks,
    # protected share 0.4 -> protected segment at most floor(0.4 * 5) = 2 blocks.
    reqs = [_req([0, 1]), _req([0, 1]), _req([10, 11, 12]), _req([20, 21, 22]), _req([0, 1])]
    # protected, step by step:
    # 1. [0,1]: both miss; released tail first -> probation (LRU..MRU) = 1, 0.          hits 0
    # 2. [0,1]: both hit (pinned, leave probation); released as reused -> protected = 1, 0.  hits 2
    # 3. [10,11,12]: miss; 3 free slots (5 - 2); released -> probation = 12, 11, 10.      hits 0
    # 4. [20,21,22]: miss; 0 free slots; 3 victims from probation: 12, 11, 10.           hits 0
    #    probation = 22, 21, 20; protected still = 1, 0.
    # 5. [0,1]: both hit in protected.                                                    hits 2
    assert _hits_per_request("protected", reqs, 5, protected_share=0.4) == [0, 2, 0, 0, 2]
    # LRU, step by step (one list, LRU..MRU):
    # 1. -> 1, 0                      hits 0
    # 2. hit both -> 1, 0              hits 2
    # 3. 3 free -> 1, 0, 12, 11, 10    hits 0
    # 4. 3 victims from the LRU end: 1, 0, 12 -> 11, 10, 22, 21, 20.   hits 0
    # 5. 0 is gone: lookup stops at the first block.                    hits 0
    assert _hits_per_request("lru", reqs, 5) == [0, 2, 0, 0, 0]


def test_protected_overflow_demotes_to_probation_mru():
    p = ProtectedPolicy(4, protected_share=0.5)   # protected at most 2
    p.add([1, 2, 3], reused=True)                # protected 1,2,3 -> overflow: 1 demoted to probation
    assert p.segments() == ([1], [2, 3])
    p.add([4])                                   # new block -> probation MRU
    assert p.segments() == ([1, 4], [2, 3])
    p.touch([4])                                 # second use -> protected; 2 (protected LRU) demoted
    assert p.segments() == ([1, 2], [3, 4])
    assert p.evict(3) == [1, 2, 3]               # probation first, then protected LRU
    p._check()


def test_spec_option_is_not_hidden_by_an_unset_flag():
    """``--policy slru:protected_share=0`` with no ``--protected-share`` flag: the replay passes
    protected_share=None (not given), which must leave the spec's 0 in force (a hostile check of the
    compiled paths: the spec's value was dropped and the default 0.8 ran). floor(0.0 x 10) = 0 protected
    blocks; floor(0.5 x 10) = 5; the flag, when given, wins over the spec."""
    from pcs.cache.policies import make_policies, make_policy

    assert make_policy("slru:protected_share=0", 10, protected_share=None).protected_max_blocks == 0
    assert make_policies(["slru:protected_share=0.5"], [10], protected_share=None)[0].protected_max_blocks == 5
    assert make_policy("slru:protected_share=0.5", 10, protected_share=0.2).protected_max_blocks == 2
    with pytest.raises(ValueError, match=r"protected share must be within \[0, 1\], got 1.5"):
        make_policies(["slru:protected_share=1.5"], [10], protected_share=None)


def test_integer_options_beyond_int64_are_refused():
    """A policy option the compiled policies hold as int64 (s3fifo's move_to_main_threshold): 2**63 - 1 is
    accepted, 2**63 and 1e20 are a ValueError (was an OverflowError traceback from the compiled hierarchy)."""
    from pcs.cache.policies import check_policy, parse_policy_spec

    assert parse_policy_spec(f"s3fifo:move_to_main_threshold={2**63 - 1}")[1] == {"move_to_main_threshold": 2**63 - 1}
    for big in (2**63, 10**20, -(2**63) - 1):     # refused by the option's type check, an integer (mend46d)
        with pytest.raises(ValueError, match=r"out of range: an integer holds -2\^63 to 2\^63 - 1 \(64 bits\)"):
            check_policy(f"s3fifo:move_to_main_threshold={big}")
