"""The trace pre-pass (:class:`pcs.cache.policies.context.TraceOracle`, vectorised) against a plain loop over
the requests written from its definition (docs/semantics.md §1, §4, §8): each block's depth and parent at its
first appearance in a cacheable head (cut before the first hash repeated in that head, as
``Hierarchy.start`` cuts it), and the use keys ``request << 24 | position`` of its accesses below the
request's hit cap -- the dicts, their order, and the arrays the compiled policies load.
"""
from __future__ import annotations

import pytest
from hypothesis import given

from helpers import ALL_RULES, SETTINGS, req, stress_trace, traces
from pcs.blocks import BlockRules
from pcs.cache.policies.context import NEVER, POS_BITS, TraceOracle
from pcs.engine.chunks import iter_chunks


def loop_oracle(chunks):
    """(depth, parent, uses) dicts by one loop over the requests."""
    depth, parent, uses, r = {}, {}, {}, 0
    for ch in chunks:
        for i, (n, cap) in enumerate(zip(ch.cacheable, ch.max_hit_blocks)):
            seen, prev = set(), None
            for pos, h in enumerate(ch.block_hashes[ch.offsets[i]:ch.offsets[i] + n]):
                if h in seen:
                    break
                seen.add(h)
                if h not in depth:
                    depth[h] = pos
                    if prev is not None:
                        parent[h] = prev
                if pos < cap:
                    uses.setdefault(h, []).append(r << POS_BITS | pos)
                prev = h
            r += 1
    return depth, parent, uses


def _same(reqs, rules):
    o = TraceOracle.build(iter_chunks(reqs, rules))
    depth, parent, uses = loop_oracle(iter_chunks(reqs, rules))
    assert list(o.depth.items()) == list(depth.items())
    assert list(o.parent.items()) == list(parent.items())
    assert list(o.uses.items()) == list(uses.items())
    assert o.num_requests == len(reqs)
    assert o.keys.dtype == o.parent_keys.dtype == o.use_keys.dtype == "uint64"
    assert o.use_offsets[-1] == len(o.use_values) and o.use_offsets[0] == 0
    keys = o.keys.tolist()
    assert [keys[p] if p >= 0 else None for p in o.key_parent.tolist()] == [parent.get(k) for k in depth]
    chains = TraceOracle.build(iter_chunks(reqs, rules), future=False)
    assert chains.depth == depth and chains.parent == parent and chains.uses == {}
    future = TraceOracle.build(iter_chunks(reqs, rules), chain=False)     # belady alone: no depths or parents
    assert future.depth == {} and future.parent == {} and len(future.key_parent) == 0
    assert list(future.uses.items()) == list(uses.items())


@SETTINGS
@given(traces(), *[__import__("hypothesis").strategies.sampled_from(ALL_RULES)])
def test_oracle_equals_the_loop_on_random_traces(reqs, rules):
    _same(reqs, rules)


def test_hand_trace_with_a_repeat():
    """Request 0 = 1 2 1 3 (cut at the repeated 1: head 1 2), request 1 = 2 4 5, 4-token blocks, prompts of
    whole blocks plus one token (the partial last block is not cacheable; the hit cap is every full block):
    depth 1:0 2:1 4:1 5:2 (2 first seen at position 1), parents 2<-1, 4<-2, 5<-4; uses 1:(0,0) 2:(0,1),(1,0)
    4:(1,1) 5:(1,2); next use of 2 after request 0 is (1, 0), of 1 never."""
    reqs = [req([1, 2, 1, 3], prompt=17), req([2, 4, 5], prompt=13)]
    o = TraceOracle.build(iter_chunks(reqs, BlockRules()))
    assert o.depth == {1: 0, 2: 1, 4: 1, 5: 2} and o.parent == {2: 1, 4: 2, 5: 4}
    r1 = 1 << POS_BITS
    assert o.uses == {1: [0], 2: [1, r1], 4: [r1 | 1], 5: [r1 | 2]}
    assert o.next_use(2, 0) == r1 and o.next_use(1, 0) == NEVER and o.next_use(9, -1) == NEVER


@pytest.mark.parametrize("seed", range(3))
def test_oracle_equals_the_loop_on_stress_traces(seed):
    _same(stress_trace(seed, 400, 4), BlockRules())


def test_a_head_of_2_to_the_24_blocks_is_refused():
    class Ch:
        first_request_id, block_size, arrival_s = 5, 4, [0.0]
        cacheable, max_hit_blocks, offsets, block_hashes = [1 << POS_BITS], [0], [0, 1], [7]
    with pytest.raises(ValueError, match="request 5: 16777216 cacheable blocks"):
        TraceOracle.build([Ch()])
