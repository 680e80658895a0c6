"""Demotion into a full lower tier behaves as a flat LRU fed the victims one by one.

Regression for a batch rule that kept an already-resident victim while
dropping its parent (found by the prefix-closure property test).
"""

from pcs.blocks import BlockRules
from pcs.cache import Hierarchy, Tier, make_policy


def _run(reqs, caps):
    h = Hierarchy([Tier(f"t{i}", c, make_policy("lru", c)) for i, c in enumerate(caps)], "back")
    rules = BlockRules()
    for prompt, ids in reqs:
        n = rules.cacheable_blocks(prompt, len(ids), 4)
        cap = rules.max_hit_blocks(prompt, len(ids), 4)
        adm = h.start(list(ids), n, cap, 0, False)
        h.prefill_done(adm)
        h.finish(adm)
        h._check()
    return h


def test_demoted_batch_keeps_parents_over_children():
    # block size 4; t0 (GPU) 3 blocks, t1 2 blocks, LRU, write-back
    reqs = [
        (12, [0, 1, 2]),  # t0 = {0,1,2}, LRU order 2,1,0 (tail first)
        (4, [3]),         # evict 2 -> t1 = {2}; t0 = {0,1,3}
        (12, [0, 1, 2]),  # lead 3 (2 from t1); 2 comes back up: t0 evicts 3 -> t1 = {2,3}; t0 = {0,1,2}
        (12, [4, 5, 6]),  # t0 evicts 2, 1, 0 (tail first) into t1 of 2 blocks. A flat LRU fed 2, 1, 0:
                          # touch 2 -> [3,2]; insert 1 evicts 3 -> [2,1]; insert 0 evicts 2 -> [1,0]
    ]
    h = _run(reqs, [3, 2])
    assert set(h.tiers[0].resident) == {4, 5, 6}
    assert set(h.tiers[1].resident) == {0, 1}   # not {2, 0}: 2 without its parent 1 is useless
    assert h.dropped_blocks == 2                # 3, then 2
