"""Tier mechanism and two-tier hierarchy, traced by hand."""
from __future__ import annotations

import pytest

from pcs.cache import Hierarchy, Tier, make_policy
from helpers import req, run


def _tier(cap, policy="lru"):
    return Tier("gpu", cap, make_policy(policy, cap))


def test_reserve_fill_pin_unpin_release():
    t = _tier(4)
    assert t.reserve(3) == []                  # 3 free slots, nothing to evict
    assert t.free_blocks == 1 and t.reserved_blocks == 3
    assert t.fill([10, 11]) == []              # 2 slots become resident blocks pinned once
    assert t.reserved_blocks == 1 and t.resident == {10: 1, 11: 1} and len(t.policy) == 0
    t._check()
    t.unpin([11, 10], reused=False)            # tail first: 11 is evicted before 10
    t.release(1)
    assert t.policy.order() == [11, 10] and t.free_blocks == 2
    t.pin([10])                                # a hit: leaves the policy
    assert t.reserve(3) == [11]                # 2 free + 1 victim; 10 is pinned and safe
    assert t.reserve(1) is None                # nothing evictable left: no change
    assert t.reserved_blocks == 3 and 10 in t
    t._check()


def test_fill_of_a_resident_key_pins_it_and_keeps_the_slot():
    t = _tier(3)
    t.reserve(1)
    t.fill([5])
    t.unpin([5], reused=False)
    t.reserve(1)
    assert t.fill([5]) == [5]                  # already cached by someone else: pinned, slot kept
    assert t.resident[5] == 1 and t.reserved_blocks == 1
    t._check()


def test_insert_overflow_and_capacity_zero():
    t = Tier("cpu", 2, make_policy("lru", 2))
    pushed, written = t.insert([1, 2, 3])      # eviction order: 1 is the oldest and does not fit
    assert (pushed, written) == ([1], 2) and t.policy.order() == [2, 3]
    pushed, written = t.insert([2, 4])         # 2 already held: not written again, touched (3, 2);
    assert (pushed, written) == ([3], 1) and t.policy.order() == [2, 4]   # 4 then evicts 3
    t._check()
    z = Tier("cpu", 0, make_policy("lru", 0))
    assert z.insert([7, 8]) == ([7, 8], 0)
    z._check()


def test_negative_capacity_is_rejected():
    with pytest.raises(ValueError):
        Tier("gpu", -1, make_policy("lru", 0))
    with pytest.raises(ValueError):
        Hierarchy([_tier(1)], "sometimes")


def test_two_tiers_write_back_hand_traced():
    # GPU 2 blocks, CPU 4 blocks, LRU, bytes per block: GPU 1000 (reserved), CPU 300 (serialized)
    reqs = [req([1, 2]), req([5, 6]), req([1, 2]), req([7]), req([1, 2])]
    res, h = run(reqs, [2, 4], block_bytes=[1000, 300])
    L = res.ledger
    # 1. [1,2] miss; GPU (LRU..MRU) 2,1
    # 2. [5,6] miss; GPU evicts 2,1 -> written to CPU (2 blocks); GPU 6,5; CPU 2,1
    # 3. [1,2] both in CPU: restored (2 blocks); CPU copies touched (2,1); GPU evicts 6,5 -> CPU 2,1,6,5
    # 4. [7] miss; GPU (2,1) evicts 2, already in CPU: not written again, touched (CPU 1,6,5,2); GPU 1,7
    # 5. [1,2]: 1 GPU hit, 2 restored from CPU (touched: still 1,6,5,2); GPU evicts 7 -> CPU full,
    #    evicts 1 (dropped from the last tier); CPU 6,5,2,7
    assert list(res.columns["hit_blocks"]) == [0, 0, 2, 0, 2]
    assert list(res.columns["hit_tokens_gpu"]) == [0, 0, 0, 0, 4]
    assert list(res.columns["hit_tokens_cpu"]) == [0, 0, 8, 0, 4]
    assert L.tier_hit_blocks == [1, 3] and L.hit_blocks == 4          # no block counted twice
    assert L.links[1].restored_blocks == 3
    assert L.links[1].restored_bytes == 3 * 300                       # lower-tier hit blocks x its bytes
    assert list(res.columns["restored_bytes"]) == [0, 0, 600, 0, 300]
    assert h.written_blocks == [0, 5] and h.dropped_blocks == 1
    assert h.tiers[1].policy.order() == [6, 5, 2, 7]


def test_two_tiers_write_through_hand_traced():
    reqs = [req([1, 2]), req([5, 6]), req([1, 2])]
    res, h = run(reqs, [2, 4], write_policy="through", block_bytes=[1000, 300])
    # 1. [1,2] computed -> cached in GPU and written to CPU at once (2 writes)
    # 2. [5,6]: GPU evicts 1,2 -> discarded (the CPU has them); 5,6 written to CPU (2 writes)
    # 3. [1,2] restored from CPU; GPU evicts 5,6 -> discarded; hits are not written again
    #    the CPU (4 blocks) never evicted: nothing left the last tier
    assert list(res.columns["hit_blocks"]) == [0, 0, 2]
    assert h.written_blocks == [0, 4] and h.dropped_blocks == 0
    assert h.tiers[0].stats.evicted_blocks == 4 and h.tiers[1].stats.evicted_blocks == 0
    assert res.ledger.links[1].restored_bytes == 600


def test_zero_size_tiers_are_allowed():
    res, h = run([req([1, 2]), req([1, 2])], [0, 3])
    assert res.ledger.hit_blocks == 0 and res.ledger.requests_truncated == 2
    res, h = run([req([1, 2]), req([1, 2])], [2, 0])
    assert list(res.columns["hit_blocks"]) == [0, 2]


def test_cut_restores_keeps_the_chain_head():
    h = Hierarchy([_tier(3), Tier("cpu", 10, make_policy("lru", 10))])
    # lead positions: 0 in the GPU, 1..3 in the CPU (ids 7, 8, 9); room for 1 restore:
    # restore 7 (position 1); the hit chain ends at position 2, the first block not restored
    # (computed blocks: none get a slot once restores are cut)
    assert h._truncate([0, 1, 1, 1], 4, [[7, 8, 9]], [10], 1) == (2, [[7]], [])
    # room for all 3 restores and 1 of the 2 computed blocks: hits stay 4, the computed list is cut
    assert h._truncate([0, 1, 1, 1], 4, [[7, 8, 9]], [10, 11], 4) == (4, [[7, 8, 9]], [10])
