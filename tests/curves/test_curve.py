"""The one-pass LRU curve equals the sequential LRU replay at every capacity.

Expected values come from the OrderedDict replay in test_curve_reference.py
(written from docs/semantics.md §3-§6, checked by hand there), from
pcs.blocks.single_sequence_hits for the ceiling, and from brute force over
all capacities for the knee.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcs.blocks import single_sequence_hits
from pcs.curves.api import KNEE_PERCENTS, capacity_grid, curve, load_accesses, lru_curve
from helpers import per_trace
from helpers import (HAND_HITS, HAND_MISSES, HAND_PROMPT, HAND_SPEC, arbitrary_traces,
                                  chained_traces, lru_replay, make_requests, rules_strategy)


def _all_capacities(lru) -> range:
    return range(0, lru.max_useful_capacity_blocks + 3)


def test_hand_trace_every_capacity():
    flat, _ = load_accesses(make_requests(HAND_SPEC))
    lru = lru_curve(flat)
    assert lru.prompt_tokens == HAND_PROMPT
    for c, hits in HAND_HITS.items():
        assert lru.hit_tokens(c) == hits
        assert lru.hit_ratio(c) == pytest.approx(hits / HAND_PROMPT)
    for c, misses in HAND_MISSES.items():
        assert lru.block_misses(c) == misses
    assert lru.max_useful_capacity_blocks == 4  # deepest hit is block 3 of r3 at depth 3
    # knee: ceiling 24 tokens; 50 % = 12 reached at C=1, 90 % = 21.6 at C=4 (C=3 gives 20)
    assert lru.knee(50) == 1 and lru.knee(90) == 4 and lru.knee(99) == 4


def _assert_curve_equals_replay(reqs, rules, kernel=None):
    """At every capacity, the one-pass curve's hit tokens and block misses equal a sequential LRU replay."""
    lru = lru_curve(load_accesses(reqs, rules=rules)[0], kernel=kernel)
    for c in _all_capacities(lru):
        hits, misses, _ = lru_replay(reqs, c, rules)
        assert lru.hit_tokens(c) == hits, c
        assert lru.block_misses(c) == misses, c


@settings(max_examples=300, deadline=None)
@given(chained_traces(), rules_strategy, st.sampled_from(["python", "c"]))
def test_one_pass_equals_sequential_replay_chained(reqs, rules, kernel):
    if kernel == "c":
        pytest.importorskip("pcs.curves._stackdist")
    _assert_curve_equals_replay(reqs, rules, kernel)


@settings(max_examples=300, deadline=None)
@given(arbitrary_traces(), rules_strategy)
def test_one_pass_equals_sequential_replay_arbitrary_ids(reqs, rules):
    # repeated ids, ids under several parents: the lead-depth running max keeps it exact
    _assert_curve_equals_replay(reqs, rules)


@settings(max_examples=200, deadline=None)
@given(arbitrary_traces(), rules_strategy)
def test_ceiling_is_single_sequence_and_curve_is_monotone(reqs, rules):
    lru = lru_curve(load_accesses(reqs, rules=rules)[0])
    assert lru.ceiling_hit_tokens == single_sequence_hits(reqs, rules).hit_tokens
    tokens = lru.hit_tokens(np.arange(0, lru.max_useful_capacity_blocks + 2))
    assert np.all(np.diff(tokens) >= 0) and tokens[0] == 0
    assert tokens[-1] == lru.ceiling_hit_tokens


@settings(max_examples=200, deadline=None)
@given(chained_traces())
def test_knee_is_smallest_capacity_over_all_capacities(reqs):
    lru = lru_curve(load_accesses(reqs)[0])
    top = lru.ceiling_hit_tokens
    for pct in KNEE_PERCENTS:
        if top == 0:
            assert lru.knee(pct) is None
            continue
        brute = next(c for c in _all_capacities(lru) if lru_replay(reqs, c)[0] * 100 >= pct * top)
        assert lru.knee(pct) == brute


def test_curve_result_rows_and_knee():
    reqs = make_requests(HAND_SPEC)
    res = curve(reqs, capacities=[4, 1, 2])
    assert [r.capacity_blocks for r in res.rows] == [1, 2, 4]                  # sorted (a repeat is refused)
    assert [r.lru_hit_ratio for r in res.rows] == [12 / 43, 16 / 43, 24 / 43]
    assert all(r.ceiling_hit_ratio == 24 / 43 for r in res.rows)
    assert [r.lru_block_misses for r in res.rows] == [7, 3 + 0 + 1 + 2, 4]
    assert res.knee["p90"].capacity_blocks == 4
    payload = res.to_dict()
    assert {"rows", "knee", "ceiling_hit_ratio", "requests", "block_accesses", "cacheable_blocks"} <= set(payload)
    # 4-token blocks: prompts 12, 10, 8, 13 name 3, 3, 2, 4 ids of which 3, 2, 2, 3 are full; full ids {1, 2, 3, 5}
    assert payload["requests"] == 4 and payload["block_accesses"] == 3 + 3 + 2 + 4
    assert payload["cacheable_blocks"] == 3 + 2 + 2 + 3 and payload["distinct_cacheable_blocks"] == 4


def test_curve_argument_errors():
    reqs = make_requests(HAND_SPEC)
    with pytest.raises(ValueError, match="not both"):
        curve(reqs, capacities=[1], points=3)
    with pytest.raises(ValueError, match=">= 0"):
        curve(reqs, capacities=[-1])
    with pytest.raises(ValueError, match="sample_rate"):
        curve(reqs, sample_rate=0.0)
    with pytest.raises(ValueError, match="kernel"):
        curve(reqs, kernel="fortran")


def test_capacity_grid():
    assert capacity_grid(1000, 4) == [1, 10, 100, 1000]
    assert capacity_grid(0, 5) == [1]
    assert capacity_grid(3, 10) == [1, 2, 3]
    with pytest.raises(ValueError):
        capacity_grid(10, 0)


def test_trace_equals_sequential_replay(exact_trace):
    from pcs.trace import open_trace

    reqs = list(open_trace(exact_trace))
    flat, _ = load_accesses(open_trace(exact_trace))
    lru = lru_curve(flat)
    assert lru.ceiling_hit_tokens == single_sequence_hits(reqs).hit_tokens
    caps = per_trace(exact_trace, sample=(1, 50, 500, 3_000, 10_000), mooncake=(1, 500, 5_000, 30_000, 100_000))
    for c in caps + (lru.max_useful_capacity_blocks,):
        hits, misses, _ = lru_replay(reqs, c)
        assert lru.hit_tokens(c) == hits, c
        assert lru.block_misses(c) == misses, c


@settings(max_examples=150, deadline=None)
@given(arbitrary_traces(), st.integers(0, 3))
def test_shards_decomposition_is_exact_when_everything_is_kept(reqs, heads):
    # rate 1 - 1e-9 keeps every block (hash < threshold) but goes through the
    # three-run decomposition: heads + sampled/R must give the exact depths
    flat, _ = load_accesses(reqs)
    exact = lru_curve(flat)
    est = lru_curve(flat, sample_rate=1 - 1e-9, exact_head_blocks=heads)
    caps = np.arange(0, exact.max_useful_capacity_blocks + 2)
    assert np.allclose(est.hit_tokens(caps), exact.hit_tokens(caps))
    assert np.allclose(est.block_misses(caps), exact.block_misses(caps))


def test_shards_error_on_a_trace(exact_trace):
    from pcs.trace import open_trace

    flat, _ = load_accesses(open_trace(exact_trace))
    exact = lru_curve(flat)
    caps = np.array(capacity_grid(exact.max_useful_capacity_blocks, 30))
    assert np.array_equal(lru_curve(flat, sample_rate=1.0).hit_tokens(caps), exact.hit_tokens(caps))
    # measured (README, 8 seeds): rate 0.1 mean |error| 0.14 points, worst
    # 0.9; the bounds here are loose on purpose (they catch a scaling bug). The
    # sample, 14 x fewer distinct blocks, samples 14 x fewer: seeds 1-4 give
    # mean 0.39-0.47 points, worst 2.4-2.7
    est = lru_curve(flat, sample_rate=0.1, seed=1)
    err = np.abs(est.hit_ratio(caps) - exact.hit_ratio(caps))
    mean_bound, max_bound = per_trace(exact_trace, sample=(0.01, 0.05), mooncake=(0.005, 0.02))
    assert err.mean() < mean_bound and err.max() < max_bound
    # plain SHARDS (no exact heads) misses block 0, which starts every
    # request and earns 4.3 of the 37.3 points: the error is that large
    plain = lru_curve(flat, sample_rate=0.1, seed=1, exact_head_blocks=0)
    assert np.abs(plain.hit_ratio(caps) - exact.hit_ratio(caps)).mean() > 0.02


@pytest.mark.parametrize("native,sample_rate,engine,words", [
    ("python", 1.0, "stack-distance", ("exact, one pass", "Python stack-depth kernel", "native=python")),
    ("python", 0.5, "shards", ("SHARDS sampling at rate 0.5", "Python stack-depth kernel")),
])
def test_curve_says_which_engine_ran_and_why(native, sample_rate, engine, words):
    """The curve JSON names its engine beside the older ``kernel`` key: exact one-pass stack distances, or SHARDS
    when sampled (pcs/curves/shards.py); native='python' runs the Python twin (pcs/_native.py)."""
    out = curve(make_requests(HAND_SPEC), capacities=[1], native=native, sample_rate=sample_rate,
                belady=False).to_dict()
    assert out["kernel"] == "python" and out["engine"] == engine
    assert all(w in out["engine_reason"] for w in words), out["engine_reason"]


def test_kernel_is_a_deprecated_alias_of_native():
    """``curve(kernel=...)`` (the older name, pcs/curves/api.py) picks the same switch as ``native=``: kernel='python'
    runs the Python kernel even where the C one is built; a different value in each is refused."""
    reqs = make_requests(HAND_SPEC)
    old = curve(reqs, capacities=[1, 2], kernel="python", belady=False).to_dict()
    new = curve(reqs, capacities=[1, 2], native="python", belady=False).to_dict()
    assert old["kernel"] == "python" and old == new
    assert curve(reqs, capacities=[1], kernel="python", native="python", belady=False).kernel == "python"
    with pytest.raises(ValueError, match="name the same switch"):
        curve(reqs, capacities=[1], kernel="python", native="c")
