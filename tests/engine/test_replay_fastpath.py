"""The lru-scan engine (pcs.engine.fastpath) gives the reference engine's ReplayResult exactly.

Reference: the event loop over the Python hierarchy (``replay(..., engine="reference")``,
pcs.cache.Hierarchy step by step), an independent implementation; plus one
hand-worked trace. Summaries are compared with ``==`` on the whole dataclass:
every float is produced by the same arithmetic on the same values in both
paths (hit ratios are int / int; prefill times come from the same compute
model called on the same (new, cached) token pairs, elementwise; sums and
percentiles run over identical float64 arrays in the same order), so no
tolerance is needed. Only the keys naming the engine (``SUMMARY_KEYS``) differ.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import LinearCompute, per_trace
from pcs.blocks import BlockRules
from pcs.engine.api import replay
from pcs.engine.select import SUMMARY_KEYS
from helpers import arbitrary_traces, chained_traces, make_requests, rules_strategy

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def assert_same_table(a, b) -> None:
    """Same column names, arrow types and values (NaN == NaN: finish_s is NaN in sequential timing)."""
    assert a.column_names == b.column_names
    assert a.schema == b.schema
    for name in a.column_names:
        x, y = a[name].to_numpy(), b[name].to_numpy()
        assert x.dtype == y.dtype, name
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name


def both(trace, **kw):
    """(reference, lru-scan) results of the same replay; ``lru-scan`` is forced, so it raises if it does not
    apply (modeled timing: ``auto``, whose sequential baseline is the lru-scan)."""
    ref = replay(trace, engine="reference", **kw)
    scan = replay(trace, engine="lru-scan" if kw.get("timing") == "sequential" else "auto", **kw)
    return ref, scan


def _numbers(summary):
    """The summary without the keys naming the engine (the only ones that differ)."""
    return dataclasses.replace(summary, **{k: None for k in SUMMARY_KEYS})


def assert_same(ref, scan) -> None:
    assert _numbers(scan.summary) == _numbers(ref.summary)
    assert_same_table(ref.requests, scan.requests)


# -- the committed sample and the real trace ------------------------------------------------------------------------------

def test_trace_at_three_capacities(exact_trace):
    # the largest request has 246 (sample: 225) full blocks of 512 tokens: a 100-block tier truncates it (asserted)
    for c in per_trace(exact_trace, sample=(100, 1_000, 4_000), mooncake=(100, 3_000, 40_000)):
        ref, scan = both(exact_trace, tiers=[f"gpu={c}blocks"], timing="sequential")
        assert_same(ref, scan)
        if c == 100:
            assert ref.summary.requests_truncated > 0
        assert ref.summary.tiers[0].evicted_blocks > 0


def test_trace_bytes_sized_tier_and_sequential_baseline(exact_trace):
    # a tier in bytes (llama-3.1-8b, fp8) and write-through; then the modeled run, whose
    # sequential baseline (sequential_hit_ratio, gap.capacity_eviction) takes the scan path under auto
    kw = dict(model="llama-3.1-8b", dtype="fp8", tiers=["gpu=5GB"], write_policy="through")
    assert_same(*both(exact_trace, timing="sequential", **kw))
    gpu = per_trace(exact_trace, sample="gpu=1000blocks", mooncake="gpu=2000blocks")
    ref, auto = both(exact_trace, tiers=[gpu], timing="modeled")
    assert_same(ref, auto)


# -- hypothesis traces ---------------------------------------------------------------------------

@SETTINGS
@given(chained_traces(), rules_strategy, st.data())
def test_chained_traces(reqs, rules, data):
    total = sum(len(r.block_hashes) for r in reqs)
    caps = sorted({0, 1, data.draw(st.integers(0, total + 1)), total + 1})
    wp = data.draw(st.sampled_from(["back", "through"]))
    for c in caps:
        kw = dict(tiers=[f"gpu={c}blocks"], rules=rules, write_policy=wp, compute=LinearCompute())
        assert_same(*both(reqs, timing="sequential", **kw))
    assert_same(*both(reqs, timing="modeled", tiers=[f"gpu={caps[1]}blocks"], rules=rules))


@SETTINGS
@given(arbitrary_traces(), rules_strategy, st.integers(0, 8))
def test_auto_equals_reference_on_any_ids(reqs, rules, c):
    """Block hashes repeated within a request or under different parents: auto detects when the
    lru-scan does not apply and falls back to the event loop; either way the result is the reference's."""
    kw = dict(tiers=[f"gpu={c}blocks"], timing="sequential", rules=rules, compute=LinearCompute())
    assert_same(replay(reqs, engine="reference", **kw), replay(reqs, engine="auto", **kw))


# -- hand-worked ---------------------------------------------------------------------------------

def test_hand_worked_truncation_and_evictions():
    # block size 4, full blocks only, last-token cap; one LRU tier of 3 blocks.
    # r0 ids 1 2 3 4, P=16: n=4 > 3 -> truncated, caches its head 1 2 3 (3 inserted, 0 evicted);
    #     cap = 15 // 4 = 3, lead 0 -> 0 hits, missed 4
    # r1 ids 1 2 9,   P=12: n=3, cap=2; lead 2 (1, 2 resident) -> hits 2 = 8 tokens, missed 1;
    #     inserts 9: tier full (1 2 3) -> evicts the LRU block 3 (recency after r0: 1 2 3, head MRU)
    # r2 ids 7,       P=5:  n=1, cap=1; lead 0, inserts 7 -> evicts the LRU of (1 2 9) after r1 = 9
    # totals: hit tokens 8 of 33; inserted 3 + 1 + 1 = 5, resident end 3, evicted 2
    reqs = make_requests([([1, 2, 3, 4], 16), ([1, 2, 9], 12), ([7, 8], 5)])
    r = replay(reqs, tiers=["gpu=3blocks"], timing="sequential", engine="lru-scan", compute=LinearCompute())
    s = r.summary
    assert (s.hit_tokens, s.prompt_tokens, s.block_misses, s.requests_truncated) == (8, 33, 6, 1)
    t = s.tiers[0]
    assert (t.evicted_blocks, t.resident_blocks_end, t.resident_blocks_peak) == (2, 3, 3)
    assert s.bytes.dropped_blocks == 2 and s.bytes.peak_reserved_blocks == 3
    assert r.requests["hit_blocks"].to_pylist() == [0, 2, 0]
    assert r.requests["truncated"].to_pylist() == [True, False, False]
    # LinearCompute: 1 ms per new token; r1 prefills 12 - 8 = 4 tokens
    assert r.requests["prefill_s"].to_pylist() == [16 * 0.001, 4 * 0.001, 5 * 0.001]
    assert_same(replay(reqs, tiers=["gpu=3blocks"], timing="sequential", engine="reference",
                       compute=LinearCompute()), r)


# -- dispatch and errors --------------------------------------------------------------------------

def test_lru_scan_refuses_what_it_cannot_do():
    chained = make_requests([([1, 2], 8), ([1, 3], 8)])
    with pytest.raises(ValueError, match="engine 'fast' .alias of lru-scan. cannot run this replay: timing is "
                                         "modeled, it needs sequential"):
        replay(chained, tiers=["gpu=4blocks"], timing="modeled", engine="fast")
    with pytest.raises(ValueError, match=r"exactly one tier, got 2 \(gpu:lru, cpu:lru\)"):
        replay(chained, tiers=["gpu=4blocks", "cpu=8blocks"], timing="sequential", engine="lru-scan")
    with pytest.raises(ValueError, match="it needs policy lru, got gpu:fifo"):
        replay(chained, tiers=["gpu=4blocks"], policy="fifo", timing="sequential", engine="lru-scan")
    with pytest.raises(ValueError, match="a block hash repeats within a request"):
        replay(make_requests([([1, 2, 1], 12)]), tiers=["gpu=4blocks"], timing="sequential", engine="lru-scan")
    with pytest.raises(ValueError, match="not chained"):
        # r1: block 9 never seen, then block 5 cached: not a prefix chain
        replay(make_requests([([5], 4), ([9, 5], 8)]), tiers=["gpu=4blocks"], timing="sequential", engine="fast")
    with pytest.raises(ValueError, match="unknown engine 'quick'; valid: auto, lru-scan, compiled-step, compiled-hierarchy, "
                                         "reference, compiled-hybrid, hybrid, general, fast"):
        replay(chained, tiers=["gpu=4blocks"], timing="sequential", engine="quick")


def test_rules_partial_blocks_keep_one_kernel_pass_consistent():
    # with cache_partial_blocks the run's stream and the ideal stream are the same ids
    reqs = make_requests([([1, 2, 3], 10), ([1, 2, 4], 9), ([1, 5], 6)])
    rules = BlockRules(cache_partial_blocks=True, recompute_last_token=False)
    for c in (0, 2, 5):
        assert_same(*both(reqs, tiers=[f"gpu={c}blocks"], timing="sequential", rules=rules,
                          compute=LinearCompute()))
