"""A compiled policy's GPU fill and release in batches (``_lruhier.c`` ``own_fill``: a fill's keys probed and added
with the table in locals, a key found resident pinned once more and taken out of the policy; ``finish_runs``: the
release's two add batches through ``PolOps.add_run``; ``_pol_fifo.c`` ``fifo_victims`` with parked blocks back in
its heap): the victims and orders are those of one policy call per block (docs/semantics.md §8: FIFO keeps a
block's number across a pin; slru stores a new block in probation, a reused one in protected).

Every expected order is worked out by hand from the policy's rule (a request's blocks are released tail first, the
computed ones before the pinned ones), then the Python hierarchy (the reference) is driven with the same calls and
must agree.
"""
from __future__ import annotations

import pytest

from pcs.cache import Hierarchy, Tier, make_policy

native = pytest.importorskip("pcs.cache.native")
if native._lruhier is None:
    pytest.skip("pcs.cache._lruhier is not compiled", allow_module_level=True)


def _both(policy, cap=3):
    mk = lambda: [Tier("gpu", cap, make_policy(policy, cap))]  # noqa: E731
    return native.NativeHierarchy(mk()), Hierarchy(mk())


def _admit(h, keys):
    a = h.start(keys, len(keys), len(keys))
    h.prefill_done(a)
    h.finish(a)


def _run(policy, steps):
    for h in _both(policy):
        for keys, order in steps:
            _admit(h, keys)
            assert h.tiers[0].policy.order() == order, (policy, keys, type(h).__name__)
        if hasattr(h, "_check"):
            h._check()


def test_fifo_fill_of_a_resident_key_keeps_its_number():
    # GPU 3 blocks, fifo; order first victim first
    _run("fifo", [
        ([1], [1]),            # 1 gets number 0
        # 5 is not resident, so the lead is empty and both are computed: the fill adds 5 and finds 1 resident
        # (pinned once more); released tail first: 1 keeps number 0, 5 gets number 1
        ([5, 1], [1, 5]),
        # two new blocks, one free slot: one victim, the smallest number: 1 (not 5); then 8 (2), 7 (3)
        ([7, 8], [5, 8, 7]),
    ])


def test_fifo_victims_take_a_released_parked_block_by_its_number():
    _run("fifo", [
        ([1, 2, 3], [3, 2, 1]),   # released tail first: 3 -> 0, 2 -> 1, 1 -> 2
        # 3 is a hit (pinned); 9 needs a slot: queue 0's front 3 is pinned (parked), the victim is 2 (number 1);
        # released: 9 -> 3, then 3 back by its number 0
        ([3, 9], [3, 1, 9]),
        # two victims: 3 (number 0, from the parked blocks) then 1 (number 2); 11 -> 4, 10 -> 5
        ([10, 11], [9, 11, 10]),
    ])


def test_slru_fill_of_a_resident_key_is_a_reuse():
    # GPU 3 blocks, slru (protected_share 0.8: protected 2); order = probation then protected, LRU first
    _run("slru", [
        ([1], [1]),            # new: probation
        # 5 and 1 computed (the lead is empty); released tail first as one batch of computed blocks (not reused):
        # 1 then 5 into probation
        ([5, 1], [1, 5]),
        # 5 is a hit (pinned) and 6 computed: 6 released first (probation), then 5 reused (protected)
        ([5, 6], [1, 6, 5]),
        # one victim, probation's LRU: 1; 7 into probation
        ([7], [6, 7, 5]),
    ])
