"""A lower tier taking batches of demoted blocks: ``pcs.cache.Tier.insert`` against the
reference tier (``tests/reference.py``, ``RefTier.insert_batch``), policy by policy.

The rule (docstring of ``Tier.insert``; docs/semantics.md §7): a block already resident
is not written again but touched; a new block is stored, evicting the oldest unpinned
blocks outside the batch; a batch larger than the tier loses its first keys, a resident
one among them is evicted.
"""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from helpers import SETTINGS, pcs_policy_name
from pcs.cache import Tier, make_policy
from reference import RefTier

batches = st.lists(st.lists(st.integers(0, 9), max_size=6, unique=True), min_size=1, max_size=12)


@SETTINGS
@given(st.sampled_from(["lru", "slru", "fifo"]), st.integers(0, 5), batches)
def test_insert_equals_the_reference(policy, capacity, seq):
    tier = Tier("cpu", capacity, make_policy(pcs_policy_name(policy), capacity))
    ref = RefTier("cpu", capacity, policy)
    for keys in seq:
        pushed, _ = tier.insert(keys)
        assert pushed == ref.insert(keys, "batch")
        assert tier.policy.order() == ref.policy.order()
        tier._check()


def test_fifo_block_pushed_out_by_an_oversized_batch_is_new_when_stored_again():
    """A block pushed out of a lower tier as the first key of an oversized batch is dropped
    (``EvictionPolicy.drop``): FIFO forgets its place, so stored again it enters at the back."""
    # By hand, FIFO tier of 3 blocks (order = first victim first):
    #   [1 2 3]                          -> 1 2 3
    #   [1 4 5 6]: one larger than the tier: its first key 1 is pushed out (evicted);
    #              4 5 6 evict 2 3       -> 4 5 6
    #   [1]: a new block again, evicts 4 -> 5 6 1
    #   [7]: evicts 5                    -> 6 1 7
    tier = Tier("cpu", 3, make_policy("fifo", 3))
    for keys in ([1, 2, 3], [1, 4, 5, 6], [1]):
        tier.insert(keys)
    assert tier.policy.order() == [5, 6, 1]       # before the fix (policy.remove kept 1's place): [1, 5, 6]
    assert tier.insert([7])[0] == [5]             # before the fix: [1], the block it had just written
