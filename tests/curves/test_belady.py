"""Belady (MIN) for the prefix cache: optimal on tiny traces, a bound on LRU.

The optimum is an exhaustive search over every eviction choice
(test_curve_reference.brute_force_opt); LRU values come from the one-pass
curve, itself checked against the OrderedDict replay in test_curve.py.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcs.blocks import BlockRules
from pcs.curves.belady import belady_hits, plan_belady
from pcs.curves.api import load_accesses, lru_curve
from helpers import per_trace
from helpers import (CYCLE_SPEC, HAND_SPEC, arbitrary_traces, brute_force_opt, chained_traces,
                                  make_requests)


def _plan(reqs, rules=BlockRules()):
    return plan_belady(load_accesses(reqs, rules=rules)[0])


def test_cycle_hand_trace():
    # worked in test_curve_reference: MIN earns 2 hits = 8 tokens at C=2, LRU none
    plan = _plan(make_requests(CYCLE_SPEC))
    out = belady_hits(plan, 2)
    assert out.hit_tokens == 8 and out.hit_blocks == 2
    assert out.block_misses == 7 - 2 and out.requests_truncated == 0
    assert belady_hits(plan, 3).hit_tokens == 16  # 1, 2, 3 all fit: r3..r6 hit


def test_hand_trace_truncation_and_pins():
    # HAND_SPEC (test_curve_reference): at C=2 r0 caches 1, 2 and is truncated
    # (3 finds 1 and 2 pinned); r1 hits 1, 2 (8); r2 hits 1 (cap 1: 4) and
    # must evict 2, the only unpinned leaf, for 5; r3 hits 1 (4), then 2
    # evicts 5 and 3 is truncated. Total 16 = LRU. At C=3 MIN evicts 3 (the
    # only unpinned leaf) for 5 in r2: 8 + 4 + 8 = 20, again = LRU.
    plan = _plan(make_requests(HAND_SPEC))
    two = belady_hits(plan, 2)
    assert (two.hit_tokens, two.requests_truncated) == (16, 2)
    assert belady_hits(plan, 3).hit_tokens == 20
    assert belady_hits(plan, 0).hit_tokens == 0 and belady_hits(plan, 0).requests_truncated == 4


@st.composite
def tiny_traces(draw):
    return draw(chained_traces(max_requests=6, max_blocks=4))


@settings(max_examples=120, deadline=None)
@given(tiny_traces(), st.sampled_from([BlockRules(), BlockRules(recompute_last_token=False),
                                       BlockRules(cache_partial_blocks=True)]))
def test_belady_is_the_brute_force_optimum(reqs, rules):
    # every hit block is worth BS tokens under these rules (a cached partial
    # block is never under the last-token cap)
    plan = _plan(reqs, rules)
    for c in range(0, 6):
        opt = brute_force_opt(reqs, c, rules)
        assert belady_hits(plan, c).hit_tokens == opt, c
        # Belady here is the optimum among prefix-closed caches (evict only blocks whose
        # descendants are gone, docs/semantics.md §14). Evicting a parent while keeping
        # its child is a superset of choices, so it can only match or beat it: with
        # partial blocks cached, a parent recomputed by a request whose hits are capped
        # reconnects a kept child (hypothesis found 8 vs 4 tokens at C=2).
        assert brute_force_opt(reqs, c, rules, leaves_only=False) >= opt, c


@settings(max_examples=150, deadline=None)
@given(chained_traces(max_requests=16, max_blocks=6))
def test_belady_bounds_lru_below_ceiling_and_grows(reqs):
    flat, _ = load_accesses(reqs)
    lru = lru_curve(flat)
    plan = plan_belady(flat)
    prev = -1
    for c in range(0, lru.max_useful_capacity_blocks + 2):
        b = belady_hits(plan, c, check=True)  # invariants after every request
        assert lru.hit_tokens(c) <= b.hit_tokens <= lru.ceiling_hit_tokens, c
        assert b.hit_tokens >= prev, c
        prev = b.hit_tokens
    assert prev == lru.ceiling_hit_tokens  # at the LRU knee of 100 % MIN is there too


@settings(max_examples=100, deadline=None)
@given(arbitrary_traces())
def test_ids_that_are_not_chained_keep_the_invariants(reqs):
    # repeated ids and ids under several parents: no optimality claim, but
    # the cache stays consistent and never beats the infinite cache
    flat, _ = load_accesses(reqs)
    lru = lru_curve(flat)
    plan = plan_belady(flat)
    for c in range(0, lru.max_useful_capacity_blocks + 2):
        assert belady_hits(plan, c, check=True).hit_tokens <= lru.ceiling_hit_tokens


def test_negative_capacity_is_an_error():
    with pytest.raises(ValueError, match=">= 0"):
        belady_hits(_plan(make_requests(HAND_SPEC)), -1)


def test_trace_bounds(exact_trace):
    from pcs.trace import open_trace

    flat, _ = load_accesses(open_trace(exact_trace))
    lru = lru_curve(flat)
    plan = plan_belady(flat)
    prev = 0
    for c in per_trace(exact_trace, sample=(10, 200, 1_000, 4_000), mooncake=(100, 2_000, 10_000, 40_000)) + \
            (plan.num_distinct,):
        b = belady_hits(plan, c)
        assert lru.hit_tokens(c) <= b.hit_tokens <= lru.ceiling_hit_tokens
        assert b.hit_tokens >= prev
        prev = b.hit_tokens
    assert prev == lru.ceiling_hit_tokens  # room for every block: nothing is ever evicted


def test_evicting_a_parent_can_beat_prefix_closed_belady():
    # block size 4, partial blocks cached, last-token cap; C = 2
    # r0 [1000, 1001] P=5: caches both (1001 is the partial block)
    # r1 [1002]       P=1: needs a slot. Leaves only: evict 1001 (1000 has a child).
    #                      Any block: evict 1000 and keep 1001.
    # r2 [1000]       P=1: cap 0, no hit; 1000 is (re)computed and cached
    # r3 [1000, 1001, 1004] P=9: cap (9-1)//4 = 2 blocks.
    #    leaves only: 1000 hits, 1001 gone -> 4 tokens; any block: both hit -> 8 tokens
    reqs = make_requests([([1000, 1001], 5), ([1002], 1), ([1000], 1), ([1000, 1001, 1004], 9)])
    rules = BlockRules(cache_partial_blocks=True)
    assert belady_hits(_plan(reqs, rules), 2).hit_tokens == 4
    assert brute_force_opt(reqs, 2, rules) == 4
    assert brute_force_opt(reqs, 2, rules, leaves_only=False) == 8
