"""slru's segments in the compiled hierarchy (pcs/cache/_pol_slru.c): arrays of entries with lazy deletion.

A block taken out of a segment leaves a stale item behind; an append at an array's end moves the live items to
its front (compaction), and an add that finds the arrays smaller than 2 x the blocks held grows them. These
tests run many more appends than the arrays' first size (64 items + 2 per block held) so that both happen
many times, with ``_check`` (which compares every live item with its entry's segment and position) after each
step: on one tier (a table of its own) with an order worked out by hand, and on two slru tiers sharing one
table (pcs/cache/_lruhier_polshare.h) against the Python reference.
"""
from __future__ import annotations

import pytest

from helpers import BS, replay_twins, stress_trace, trace_context, twin_tiers
from pcs.blocks import BlockRules
from pcs.cache import Hierarchy

native = pytest.importorskip("pcs.cache.native")
if native._lruhier is None:
    pytest.skip("pcs.cache._lruhier is not compiled", allow_module_level=True)


def _request(h, keys):
    """keys started (every one may hit), prefilled and finished: the admission's hit blocks per tier."""
    a = h.start(keys, len(keys), len(keys), 0, False)
    hits = list(a.hit_blocks_per_tier)
    h.prefill_done(a)
    h.finish(a)
    h._check()
    return hits


@pytest.mark.parametrize("use_native", [True, False])
def test_many_hits_on_protected_then_one_eviction_worked_by_hand(use_native):
    """One slru tier of 4 blocks, protected share 0.5 (2 blocks). [1, 2, 3, 4] computed: released tail first, so
    probation holds 4, 3, 2, 1 (front first). [1, 2] then hits 300 times: each time both are pinned (out of their
    segment: 600 stale items over the rounds) and released as reused, 2 then 1, to protected (2 blocks: no
    demotion). Order: probation 4, 3, then protected 2, 1. Then [5]: one block computed in a full tier, the victim
    probation's front (4); 5 enters probation's end: 3, 5, then 2, 1. The Python reference gives the same."""
    tiers = twin_tiers([4], ["slru:protected_share=0.5"])
    h = native.NativeHierarchy(tiers, "back") if use_native else Hierarchy(tiers, "back")
    assert _request(h, [1, 2, 3, 4]) == [0]
    for _ in range(300):
        assert _request(h, [1, 2]) == [2]
    assert h.tiers[0].policy.order() == [4, 3, 2, 1]
    assert _request(h, [5]) == [0]
    assert h.tiers[0].policy.order() == [3, 5, 2, 1]


def test_two_slru_tiers_sharing_one_table_equal_the_reference():
    """Two slru tiers (3 and 5 blocks, write-back: one shared table) over 1,500 seeded requests with ``_check``
    after every step, against the Python hierarchy: every admission, column and end state equal."""
    reqs = stress_trace(5, 1500, BS)
    ctx = trace_context(reqs, BlockRules())
    for specs in (["slru", "slru"], ["slru:protected_share=0", "slru:protected_share=0.5"]):
        _ref, h = replay_twins(reqs, [3, 5], specs, "modeled", BlockRules(), "back", ctx=ctx)
        assert h._h.shared_table()
