"""The demotion of GPU victims into a lower tier run by a compiled policy (``_lruhier.c`` ``gpu_evict_ops``,
``tinsert`` with ``tadd_batch`` and ``ops_evict``; the batch forms ``PolOps.add_run`` / ``PolOps.victims`` of
``_pol_fifo.c`` and ``_pol_slru.c``): the victims, their order and the lower tier's order are those of one policy
call per block (docs/semantics.md §8: FIFO keeps a block's number across a pin and a re-insert; slru stores a new
block in probation, a reused one in protected, and takes victims from probation first).

Every expected order below is worked out by hand from the policy's rule (comments give the steps: a request's blocks
are released tail first, so [4, 5, 6] enters the order as 6, 5, 4; an insert batch is in eviction order), then the
Python hierarchy (the reference) is driven with the same calls and must agree.
"""
from __future__ import annotations

import pytest

from pcs.cache import Hierarchy, Tier, make_policy

native = pytest.importorskip("pcs.cache.native")
if native._lruhier is None:
    pytest.skip("pcs.cache._lruhier is not compiled", allow_module_level=True)


def _tiers(caps, policy="fifo"):
    return [Tier(f"t{i}", c, make_policy(policy, c)) for i, c in enumerate(caps)]


def _admit(h, keys):
    a = h.start(keys, len(keys), len(keys))
    h.prefill_done(a)
    h.finish(a)


def _orders(h):
    return h.tiers[0].policy.order(), h.tiers[1].policy.order()


# (request, GPU order, CPU order) after it, first victim first; GPU 3 blocks, CPU 6, write-back
FIFO_STEPS = [
    ([1, 2, 3], [3, 2, 1], []),
    # 3 victims 3, 2, 1 (numbers 0, 1, 2 in the CPU tier: one batch, eviction order)
    ([4, 5, 6], [6, 5, 4], [3, 2, 1]),
    # 2 restored from the CPU tier (its copy stays); the GPU victim 6 demoted after the restore
    ([2], [5, 4, 2], [3, 2, 1, 6]),
    # victims 5, 4: the CPU tier full (6 of 6)
    ([7, 8], [2, 8, 7], [3, 2, 1, 6, 5, 4]),
    # 3 restored; the GPU victim 2 is already in the CPU tier: re-inserted in its place (no new block, no eviction)
    ([3], [8, 7, 3], [3, 2, 1, 6, 5, 4]),
    # victims 8, 7, 3: two new CPU blocks need two CPU victims; 3 (the CPU front) is in the batch, so taken out of
    # the order while the victims are chosen: passed (parked), the victims are 2 and 1 (dropped); 8 and 7 get new
    # numbers, 3 comes back with its old one (0), first again
    ([14, 15, 16], [16, 15, 14], [3, 6, 5, 4, 8, 7]),
    # victim 16: one CPU victim, the smallest number: 3
    ([17], [15, 14, 17], [6, 5, 4, 8, 7, 16]),
]


def test_fifo_demotion_keeps_numbers_across_reinsert():
    hs = [native.NativeHierarchy(_tiers([3, 6])), Hierarchy(_tiers([3, 6]))]
    for keys, gpu, cpu in FIFO_STEPS:
        for h in hs:
            _admit(h, keys)
            assert _orders(h) == (gpu, cpu), (keys, type(h).__name__)
    hs[0]._check()


def test_fifo_demotion_counts():
    """The counts of the steps above: CPU blocks written 3 + 1 + 2 + 0 + 2 + 1 = 9 (a re-inserted block is not
    written again), dropped (CPU victims) 2 (step 6: blocks 2, 1) + 1 (step 7: block 3) = 3."""
    for h in (native.NativeHierarchy(_tiers([3, 6])), Hierarchy(_tiers([3, 6]))):
        for keys, _gpu, _cpu in FIFO_STEPS:
            _admit(h, keys)
        assert (h.written_blocks[1], h.dropped_blocks) == (9, 3), type(h).__name__


# slru (protected_share 0.8: GPU 2 blocks -> protected 1, CPU 4 -> protected 3); order = probation then protected
SLRU_STEPS = [
    ([1, 2], [2, 1], []),
    # victims 2, 1: new in the CPU tier, so probation
    ([3, 4], [4, 3], [2, 1]),
    # 2 restored: its CPU copy touched (protected); the GPU victim 4 demoted after, into probation; 2's release is
    # a hit (GPU protected)
    ([2], [3, 2], [1, 4, 2]),
    # victim 3 (GPU probation first): the CPU tier full
    ([5], [5, 2], [1, 4, 3, 2]),
    # victim 5: one CPU victim, probation's front 1
    ([6], [6, 2], [4, 3, 5, 2]),
    # victims 6, 2: 2 is in the CPU tier (taken out while the victim is chosen: probation's front 4), then 6 added
    # to probation, 2 re-added as reused: protected
    ([7, 8], [8, 7], [3, 5, 6, 2]),
]


def test_slru_demotion_segments():
    hs = [native.NativeHierarchy(_tiers([2, 4], "slru")), Hierarchy(_tiers([2, 4], "slru"))]
    for keys, gpu, cpu in SLRU_STEPS:
        for h in hs:
            _admit(h, keys)
            assert _orders(h) == (gpu, cpu), (keys, type(h).__name__)
    hs[0]._check()
