"""The event-loop Belady oracle (``belady``): equal to the one-pass MIN curve, and never beaten.

- one tier, sequential, chained hashes: its hit tokens equal
  :func:`pcs.curves.belady.belady_hits` (itself checked against an exhaustive
  search over eviction choices in tests/curves/test_belady.py) at every
  capacity, on hypothesis traces and on ``traces/sample_chat.jsonl``;
- no registered online policy gets more hit tokens than the oracle on any
  test trace: one tier (hypothesis traces, the sample trace) and two or three
  tiers (stress traces, the sample trace), sequential; and the oracle's hit
  tokens on several tiers are at most MIN's at the summed capacity.
"""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import BS, ROOT, SETTINGS, chained_traces, stress_trace
from pcs.blocks import BlockRules
from pcs.cache import Hierarchy, Tier
from pcs.cache.policies import POLICY_NAMES, PolicyContext, make_policy
from pcs.cache.policies.context import TraceOracle, clocked
from pcs.curves.api import load_accesses
from pcs.curves.belady import belady_hits, plan_belady
from pcs.engine.chunks import iter_chunks
from pcs.engine.engine import ReplayEngine

ONLINE = [p for p in POLICY_NAMES if p != "belady"]
SAMPLE = ROOT / "traces" / "sample_chat.jsonl"


def replay_hits(reqs, caps, policy, rules=BlockRules(), timing="sequential") -> int:
    """Hit tokens of ``reqs`` through tiers of ``caps`` blocks, every tier ``policy``."""
    ctx = PolicyContext(TraceOracle.build(iter_chunks(reqs, rules)), lambda depth: 1.0 + depth)
    h = Hierarchy([Tier(f"t{j}", c, make_policy(policy, c, ctx)) for j, c in enumerate(caps)])
    eng = ReplayEngine(clocked(h), timing)
    for ch in iter_chunks(reqs, rules):
        eng.feed(ch)
    return eng.close().ledger.hit_tokens


def min_hits(reqs, capacity, rules=BlockRules()) -> int:
    return belady_hits(plan_belady(load_accesses(reqs, rules=rules)[0]), capacity).hit_tokens


@SETTINGS
@given(chained_traces(), st.integers(0, 12))
def test_one_tier_oracle_equals_the_min_curve(reqs, capacity):
    assert replay_hits(reqs, [capacity], "belady") == min_hits(reqs, capacity)


@pytest.fixture(scope="module")
def sample():
    return SAMPLE


@pytest.mark.parametrize("capacity", [500, 2000, 8000])
def test_one_tier_oracle_equals_the_min_curve_on_the_sample(sample, capacity):
    assert replay_hits(sample, [capacity], "belady") == min_hits(sample, capacity)


@SETTINGS
@given(chained_traces(), st.integers(1, 10))
def test_no_policy_beats_the_oracle_on_one_tier(reqs, capacity):
    best = replay_hits(reqs, [capacity], "belady")
    for p in ONLINE:
        assert replay_hits(reqs, [capacity], p) <= best, p


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("caps", [[6, 12], [4, 8, 16], [10, 30]])
def test_no_policy_beats_the_oracle_on_several_tiers(seed, caps):
    reqs = stress_trace(seed, 150, BS)
    best = replay_hits(reqs, caps, "belady")
    assert best <= min_hits(reqs, sum(caps))          # the tiers' union is a cache of the summed size
    for p in ONLINE:
        assert replay_hits(reqs, caps, p) <= best, p


def test_no_policy_beats_the_oracle_on_the_sample_two_tiers(sample):
    caps = [600, 2400]
    best = replay_hits(sample, caps, "belady")
    assert best <= min_hits(sample, sum(caps))
    got = {p: replay_hits(sample, caps, p) for p in ONLINE}
    assert max(got.values()) < best, got
