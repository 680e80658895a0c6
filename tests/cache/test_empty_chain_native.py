"""An empty chain's admission in the compiled hierarchy (``_lruhier.c`` ``start_empty``, the fast path of
``start`` / ``start_ids`` when no block is looked up, as in the no-cache baseline run): it holds GPU slots only,
with the same budget, truncation, wait_if_full and evictions (write-back demotions) as any request
(docs/semantics.md §5), and ``finish`` gives the slots back without touching the LRU order (§6).

Every expected value below is worked out by hand from those rules (comments give the arithmetic), then the
Python hierarchy (the reference) is driven with the same calls and must agree field for field.
"""
from __future__ import annotations

import pytest

from pcs.cache import Hierarchy, Tier, make_policy
from helpers import admission_fields

native = pytest.importorskip("pcs.cache.native")
if native._lruhier is None:
    pytest.skip("pcs.cache._lruhier is not compiled", allow_module_level=True)

EMPTY = b""     # start_ids' keys: no uint64 at all


def _tiers(caps):
    return [Tier(f"t{i}", c, make_policy("lru", c)) for i, c in enumerate(caps)]


def _admit(h, keys):
    a = h.start(keys, len(keys), len(keys))
    h.prefill_done(a)
    h.finish(a)


def _state(h):
    """(GPU LRU order, CPU LRU order, GPU reserved slots, held GPU slots), first victim first."""
    return (h.tiers[0].policy.order(), h.tiers[1].policy.order(), h.tiers[0].reserved_blocks, h.held_blocks())


def _fields(a):
    """The Admission's fields of admission_fields: prefix, hits, hits per tier, last hit tier, restores per
    tier, truncated, pinned hashes, computed hashes, reserved slots."""
    return admission_fields(a)


def _no_hit(reserved, truncated=False):
    return (0, 0, [0, 0], -1, [0, 0], truncated, [], [], reserved)


@pytest.mark.parametrize("via_ids", [True, False])
def test_empty_chain_reserves_evicts_and_releases(via_ids):
    """GPU 4 + CPU 4 blocks, write-back. Request [1, 2, 3] leaves GPU order [3, 2, 1] (tail released first, §6).
    An empty chain with 2 extra slots: free = 4 - 3 resident = 1, so 1 victim (block 3) is demoted to the CPU
    tier; reserved 2, held 2. Its finish: reserved 0, held 0, GPU order still [2, 1] (no key touched). Then 5
    extra slots: available = 4 - 2 resident + 2 unpinned = 4 < 5, so budget 4, truncated; victims 2 then 1
    demoted (CPU [3, 2, 1]). A wait_if_full start of 1 slot then waits: available 0 < min(1, 4)."""
    hs = [native.NativeHierarchy(_tiers([4, 4])), Hierarchy(_tiers([4, 4]))]
    for h in hs:
        _admit(h, [1, 2, 3])
        assert _state(h) == ([3, 2, 1], [], 0, 0)
    start = [(lambda e, w: hs[0].start_ids(EMPTY, 0, 0, e, w)) if via_ids else
             (lambda e, w: hs[0].start([], 0, 0, e, w)),
             lambda e, w: hs[1].start([], 0, 0, e, w)]
    for h, st in zip(hs, start):
        a = st(2, False)
        assert _fields(a) == _no_hit(2)
        assert _state(h) == ([2, 1], [3], 2, 2)
        h.prefill_done(a)
        assert _state(h) == ([2, 1], [3], 2, 2)
        h.finish(a)
        assert _state(h) == ([2, 1], [3], 0, 0)
        b = st(5, False)
        assert _fields(b) == _no_hit(4, truncated=True)
        assert _state(h) == ([], [3, 2, 1], 4, 4)
        assert st(1, True) is None
        assert _state(h) == ([], [3, 2, 1], 4, 4)
        h.finish(b)
        assert _state(h) == ([], [3, 2, 1], 0, 0)
        h._check()


def test_cacheable_blocks_without_keys_is_an_empty_chain():
    """cacheable_blocks 3 but no key given (start's n cut at the keys there are: 0): no lookup, so the resident
    block 7 is no hit; 1 extra slot fits the free room (4 - 1 = 3), no eviction; reserved 1. The same through
    start_ids with an empty buffer and through the Python hierarchy."""
    hs = [native.NativeHierarchy(_tiers([4, 4])), native.NativeHierarchy(_tiers([4, 4])), Hierarchy(_tiers([4, 4]))]
    for h in hs:
        _admit(h, [7])
    adms = [hs[0].start_ids(EMPTY, 3, 3, 1, False), hs[1].start([], 3, 3, 1, False), hs[2].start([], 3, 3, 1)]
    for h, a in zip(hs, adms):
        assert _fields(a) == _no_hit(1)
        assert _state(h) == ([7], [], 1, 1)
        h.finish(a)
        assert _state(h) == ([7], [], 0, 0)


def test_empty_chain_beside_a_pinned_request():
    """GPU 3 blocks alone. Request [1, 2] started (pinned, its 2 computed slots reserved, not finished):
    available = 3 - 0 resident - 2 reserved = 1. An empty chain asking 2 slots without waiting gets 1, truncated;
    held = 2 + 1 = 3. Finishing the empty one gives back 1 (held 2); the pinned request is untouched."""
    hs = [native.NativeHierarchy(_tiers([3])), Hierarchy(_tiers([3]))]
    for h in hs:
        r = h.start([1, 2], 2, 2)
        e = h.start([], 0, 0, 2, False)
        assert _fields(e)[:2] == (0, 0) and bool(e.truncated) and e.reserved_blocks == 1
        assert h.held_blocks() == 3
        h.finish(e)
        assert h.held_blocks() == 2
        h.prefill_done(r)
        h.finish(r)
        assert h.held_blocks() == 0 and h.tiers[0].policy.order() == [2, 1]
