"""Acceptance: the one-pass LRU curve equals the engine's replay, exactly (docs/semantics.md §14).

``pcs.engine.api.replay(..., tiers=["gpu=<C>blocks"], policy="lru",
timing="sequential")`` is the engine it must equal; its hit tokens and
block misses must equal the curve's at every capacity tried.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pcs.curves.api import load_accesses, lru_curve
from helpers import chained_traces, per_trace

api = pytest.importorskip("pcs.engine.api")


def engine(trace, capacity_blocks: int) -> tuple[int, int]:
    # engine="general": the event-loop engine, not the stack-depth fast path the curve shares
    s = api.replay(trace, tiers=[f"gpu={capacity_blocks}blocks"], policy="lru", timing="sequential",
                   engine="general").summary
    return s.hit_tokens, s.block_misses


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chained_traces(), st.data())
def test_equals_engine_on_hypothesis_traces(reqs, data):
    if not any(r.prompt_tokens for r in reqs):
        return  # the engine refuses an empty trace
    lru = lru_curve(load_accesses(reqs)[0])
    top = lru.max_useful_capacity_blocks + 1
    for c in sorted({0, 1, top, data.draw(st.integers(0, top)), data.draw(st.integers(0, top))}):
        assert engine(reqs, c) == (lru.hit_tokens(c), lru.block_misses(c)), c


def test_equals_engine_on_a_trace(exact_trace):
    from pcs.trace import open_trace

    lru = lru_curve(load_accesses(open_trace(exact_trace))[0])
    caps = per_trace(exact_trace, sample=(1, 30, 300, 1_000, 4_000), mooncake=(1, 300, 3_000, 12_000, 40_000))
    for c in caps + (lru.max_useful_capacity_blocks,):
        assert engine(exact_trace, c) == (lru.hit_tokens(c), lru.block_misses(c)), c
