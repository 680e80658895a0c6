"""Hypothesis properties of the tiered cache and the replay engine on random small traces.

Traces are prefix-chained like real ones: a request reuses a prefix of an
earlier request's ids and appends fresh ids, so every id has one parent.
"""
from __future__ import annotations

from collections import OrderedDict

from hypothesis import given
from hypothesis import strategies as st

from pcs.blocks import BlockRules, single_sequence_hits
from pcs.cache import Hierarchy, Tier, make_policy
from pcs.cache.policies import POLICY_NAMES, PolicyContext
from pcs.cache.policies.context import TraceOracle, clocked
from pcs.engine.engine import ReplayEngine, TimeModel
from pcs.engine.chunks import iter_chunks
from helpers import ALL_RULES, BS, SETTINGS, LinearCompute, run, stress_trace, traces

def _parents(reqs) -> dict[int, int | None]:
    par: dict[int, int | None] = {}
    for r in reqs:
        ids = r.block_hashes.tolist()
        for i, k in enumerate(ids):
            par[k] = ids[i - 1] if i else None
    return par


class CheckedHierarchy(Hierarchy):
    """A hierarchy whose evictions assert the victim was unpinned, and whose _check can test prefix closure."""

    parents: dict | None = None

    def __init__(self, tiers, write_policy="back", parents=None):
        super().__init__(tiers, write_policy)
        self.parents = parents
        for tier in self.tiers:
            evict = tier.policy.evict

            def checked(n, evict=evict, tier=tier):
                victims = evict(n)
                for v in victims or ():
                    assert tier.resident[v] == 0, f"pinned block {v} evicted from {tier.name}"
                return victims
            tier.policy.evict = checked

    def _check(self):
        super()._check()
        if self.parents is not None:
            for j, tier in enumerate(self.tiers):
                for k in tier.resident:
                    p = self.parents[k]
                    assert p is None or any(p in t.resident for t in self.tiers[:j + 1]), \
                        f"block {k} in {tier.name} but its parent {p} in no tier at or above it"


def _engine(reqs, caps, policies, timing, rules, write_policy="back", parents=None):
    # trace-reading policies (gdsf, belady) get the pre-pass of this trace and a clock that follows admissions
    ctx = PolicyContext(TraceOracle.build(iter_chunks(reqs, rules)), lambda depth: 1.0 + depth)
    tiers = [Tier(f"t{i}", c, make_policy(p, c, ctx)) for i, (c, p) in enumerate(zip(caps, policies))]
    h = CheckedHierarchy(tiers, write_policy, parents)
    eng = ReplayEngine(clocked(h), timing, block_bytes=[7] * len(caps), check=True)
    for ch in iter_chunks(reqs, rules, TimeModel(LinearCompute())):
        eng.feed(ch)
    return eng.close(), h


config = st.tuples(
    st.lists(st.integers(0, 12), min_size=1, max_size=3),
    st.sampled_from(POLICY_NAMES), st.sampled_from(["sequential", "modeled"]),
    st.sampled_from(ALL_RULES), st.sampled_from(["back", "through"]))


@SETTINGS
@given(traces(), config)
def test_capacity_pins_checks_and_hit_ceiling(reqs, cfg):
    """_check after every step (capacity, pins >= 0, policy = unpinned); no pinned victim;
    hit_ratio <= single_sequence; per-tier hits add up; nothing left pinned or reserved at the end."""
    caps, policy, timing, rules, wp = cfg
    res, h = _engine(reqs, caps, [policy] * len(caps), timing, rules, wp)
    L = res.ledger
    assert L.hit_tokens <= single_sequence_hits(reqs, rules).hit_tokens
    assert sum(L.tier_hit_blocks) == L.hit_blocks and sum(L.tier_hit_tokens) == L.hit_tokens
    for j in range(1, len(caps)):
        assert L.links[j].restored_blocks == L.tier_hit_blocks[j]
        assert L.links[j].restored_bytes == 7 * L.tier_hit_blocks[j]
    assert sum(res.columns["hit_tokens"]) == L.hit_tokens
    assert h.tiers[0].num_pinned == 0 and h.tiers[0].reserved_blocks == 0
    for t in h.tiers:
        assert t.stats.peak_used_blocks <= t.capacity_blocks


@SETTINGS
@given(traces(), st.lists(st.integers(0, 10), min_size=1, max_size=3), st.sampled_from(["sequential", "modeled"]),
       st.sampled_from(ALL_RULES))
def test_lru_stays_prefix_closed(reqs, caps, timing, rules):
    """Under LRU a resident block's parent is resident in the same tier or a higher one, after every step."""
    _engine(reqs, caps, ["lru"] * len(caps), timing, rules, parents=_parents(reqs))


def _flat_lru_hits(reqs, capacity, rules) -> int:
    """Independent reference (docs/semantics.md §6): plain LRU of unit blocks over the stream
    'per request: blocks 0..n-1, then n-1..0'; a request's hits = min(cap, lead at its start)."""
    od: OrderedDict = OrderedDict()
    total = 0
    for r in reqs:
        ids = r.block_hashes.tolist()
        n = rules.cacheable_blocks(r.prompt_tokens, len(ids), r.block_size)
        cap = rules.max_hit_blocks(r.prompt_tokens, len(ids), r.block_size)
        lead = 0
        while lead < n and ids[lead] in od:
            lead += 1
        total += rules.hit_tokens(min(cap, lead), r.prompt_tokens, r.block_size)
        for k in ids[:n] + ids[:n][::-1]:
            od[k] = None
            od.move_to_end(k)
            if len(od) > capacity:
                od.popitem(last=False)
    return total


@SETTINGS
@given(traces(), st.sampled_from(ALL_RULES))
def test_one_lru_tier_sequential_equals_flat_lru_and_is_monotone(reqs, rules):
    distinct = len({k for r in reqs for k in r.block_hashes.tolist()})
    prev = -1
    for c in range(0, distinct + 2):
        res, _ = run(reqs, [c], rules=rules, check=False)
        assert res.ledger.hit_tokens == _flat_lru_hits(reqs, c, rules), c
        assert res.ledger.hit_tokens >= prev, f"hit tokens fell from {prev} at capacity {c}"
        prev = res.ledger.hit_tokens
    assert prev == single_sequence_hits(reqs, rules).hit_tokens   # big enough = infinite cache


@SETTINGS
@given(traces(), config)
def test_identical_input_identical_output(reqs, cfg):
    caps, policy, timing, rules, wp = cfg
    a, ha = _engine(reqs, caps, [policy] * len(caps), timing, rules, wp)
    b, hb = _engine(reqs, caps, [policy] * len(caps), timing, rules, wp)
    assert a.ledger == b.ledger
    as_bytes = lambda cols: {k: v.tobytes() if hasattr(v, "tobytes") else list(v) for k, v in cols.items()}
    assert as_bytes(a.columns) == as_bytes(b.columns)      # bytes: NaN finish_s (sequential) compares equal
    assert [t.policy.order() for t in ha.tiers] == [t.policy.order() for t in hb.tiers]


def test_seeded_stress_every_policy_both_timings():
    """Longer random streams, _check after every step, mixed policies per tier."""
    reqs = stress_trace(2024, 600, BS)
    pols = [POLICY_NAMES[i % len(POLICY_NAMES)] for i in range(3)]
    for caps in ([40, 60, 80], [6, 20, 30]):        # the small GPU tier truncates long requests
        for timing in ("sequential", "modeled"):
            for wp in ("back", "through"):
                res, h = _engine(reqs, caps, pols, timing, BlockRules(), wp)
                L = res.ledger
                assert L.num_requests == 600
                assert L.hit_tokens <= single_sequence_hits(reqs, BlockRules()).hit_tokens
                assert all(L.tier_hit_blocks) and (L.requests_truncated > 0) == (caps[0] == 6)
