"""Admission policies (pcs.cache.admission*): hand-worked cases through the hierarchy and the tier.

Traces: one- or two-block requests of 4-token blocks, every id a unit that may hit
(``UNIT_RULES``), sequential timing; GPU tier LRU. Expected values are worked in the comments.
"""
from __future__ import annotations

import pytest

from helpers import UNIT_RULES, req
from pcs.cache import Hierarchy, Tier, make_policy
from pcs.cache.admission import make_admission, parse_admission, parse_admit_option
from pcs.cache.admission_tinylfu import CountMinSketch, TinyLFUAdmission
from pcs.cache.policies import PolicyContext
from pcs.cache.policies.context import TraceOracle, clocked
from pcs.engine.chunks import iter_chunks
from pcs.engine.engine import ReplayEngine

A, B, C, D, E = 1, 2, 3, 4, 5


def run(reqs, caps, admit=None, policy="lru"):
    """Sequential replay; ``admit``: tier index -> admission spec. Returns (per-request hit tier or -1, tiers)."""
    ctx = PolicyContext(TraceOracle.build(iter_chunks(reqs, UNIT_RULES)))
    tiers = []
    for j, c in enumerate(caps):
        p, adm = make_policy(policy, c, ctx), None
        if admit and j in admit:
            adm = make_admission(admit[j], ctx)
            if hasattr(adm, "wrap"):
                p = adm.wrap(p)
        tiers.append(Tier(f"t{j}", c, p, adm))
    h = Hierarchy(tiers)
    eng = ReplayEngine(clocked(h), "sequential", check=True)
    for ch in iter_chunks(reqs, UNIT_RULES):
        eng.feed(ch)
    res = eng.close()
    per_tier = [res.columns[f"hit_tokens_t{j}"] for j in range(len(caps))]
    where = [next((j for j in range(len(caps)) if per_tier[j][i]), -1) for i in range(len(reqs))]
    return where, h.tiers


def test_reuse_stores_a_block_on_its_second_use():
    # gpu 2 blocks, cpu 4 with reuse:2; one-block requests A B C A D E A.
    # C evicts A (seen once): refused, dropped. A misses (seen twice now), evicts B (once): refused.
    # D evicts C: refused. E evicts A (twice): written to cpu. The last A hits in cpu (restored; it
    # evicts D from the gpu: refused). cpu: 1 written, 4 refused.
    where, tiers = run([req([k]) for k in (A, B, C, A, D, E, A)], [2, 4], {1: "reuse:2"})
    assert where == [-1, -1, -1, -1, -1, -1, 1]
    assert tiers[1].stats.inserted_blocks == 1 and tiers[1].stats.refused_blocks == 4
    # without admission the 4th request (A) hits in cpu: A was demoted when C arrived
    assert run([req([k]) for k in (A, B, C, A, D, E, A)], [2, 4])[0][3] == 1


def test_selective_stores_only_blocks_hit_k_times():
    # gpu 2, cpu 4 with selective:1; A B A C D: A hits in the gpu (1 hit); C evicts B (0 hits):
    # refused; D evicts A (1 hit): written.
    _, tiers = run([req([k]) for k in (A, B, A, C, D)], [2, 4], {1: "selective:1"})
    assert tiers[1].stats.inserted_blocks == 1 and tiers[1].stats.refused_blocks == 1
    assert set(tiers[1].resident) == {A}


def test_tinylfu_keeps_the_more_frequent_block():
    adm = TinyLFUAdmission()
    tier = Tier("cpu", 1, make_policy("lru", 1), adm)          # sketch: width 16, reset after 10 additions
    assert tier.insert([7]) == ([], 1)                         # room: no duel
    for head in ([7], [7], [7], [9]):
        adm.observe(head, 0)
    assert adm.sketch.estimate(7) == 3 and adm.sketch.estimate(9) == 1
    assert tier.insert([9]) == ([9], 0)                        # 1 < 3: refused, 7 stays
    assert set(tier.resident) == {7} and tier.stats.refused_blocks == 1
    for _ in range(4):
        adm.observe([9], 0)                                    # 8 additions < 10: no reset yet
    assert tier.insert([9]) == ([7], 1)                        # 5 > 3: 9 takes 7's slot
    assert set(tier.resident) == {9} and tier.stats.evicted_blocks == 1
    tier._check()


def test_count_min_sketch_halves_after_its_sample():
    s = CountMinSketch(4, sample=4)
    for _ in range(3):
        s.add(11)
    assert s.estimate(11) == 3 and s.estimate(12) == 0
    s.add(12)                                                 # 4th addition: every counter halves
    assert (s.estimate(11), s.estimate(12), s.additions) == (1, 0, 2)
    for _ in range(40):
        s.add(13)
    assert s.estimate(13) <= 15                                # 4-bit counters saturate


def test_retention_keeps_the_head_where_lru_drops_it():
    # gpu 3 blocks, two-block requests: r0 [S a] at t 0, r1 [b c] at t 1, r2 [d] at t 2, r3 [S e] at t 3;
    # retain tokens 0-4 (the depth-0 block) for 100 s.
    # LRU: after r0 (released tail first) a, S; r1 evicts a -> S, c, b; r2 evicts S; r3 misses S.
    # retain: S and b retained; r1 evicts a; r2 evicts c (the only unretained); r3 hits S.
    S, a, b, c, d, e = 10, 11, 12, 13, 14, 15
    reqs = [req([S, a], 0), req([b, c], 1), req([d], 2), req([S, e], 3)]
    assert run(reqs, [3])[0][3] == -1
    where, tiers = run(reqs, [3], {0: "retain:tokens=0-4,duration=100"})
    assert where[3] == 0 and tiers[0].policy.name == "lru"


def test_retention_ends_after_its_duration():
    # the same with a 0.5 s duration: every retention has ended when r1 and r2 evict, so they act
    # as LRU over blocks released at their expiry: r1 evicts a, r2 evicts S -> r3 misses S.
    S, a, b, c, d, e = 10, 11, 12, 13, 14, 15
    reqs = [req([S, a], 0), req([b, c], 1), req([d], 2), req([S, e], 3)]
    assert run(reqs, [3], {0: "retain:tokens=0-4,duration=0.5"})[0][3] == -1


def test_parsing_and_errors():
    assert parse_admission("reuse:3") == ("reuse", {"n": 3})
    assert parse_admission("tinylfu") == ("tinylfu", {})
    assert parse_admit_option(["cpu=reuse:2+cpu=tinylfu", "none"], ["gpu", "cpu"]) == {"cpu": ["reuse:2", "tinylfu"]}
    with pytest.raises(ValueError, match="unknown admission 'lru'; valid: reuse, selective, tinylfu, retain"):
        parse_admission("lru")
    with pytest.raises(ValueError, match="GPU tier stores every block it computes"):
        parse_admit_option(["gpu=reuse:2"], ["gpu", "cpu"])
    with pytest.raises(ValueError, match="not among the tiers: gpu, cpu"):
        parse_admit_option(["ssd=reuse:2"], ["gpu", "cpu"])
    with pytest.raises(ValueError, match="takes no option 'm'; its options: n"):
        make_admission("reuse:m=2")
    with pytest.raises(ValueError, match="N must be an int >= 1"):
        make_admission("reuse:0")
    with pytest.raises(ValueError, match="tokens must be A-B"):
        make_admission("retain:tokens=9-3", PolicyContext(TraceOracle()))


def _retaining(policy, reqs, duration):
    """``policy`` (4 blocks) behind ``retain:tokens=0-4`` (the depth-0 block) over the trace ``reqs``; its clock."""
    ctx = PolicyContext(TraceOracle.build(iter_chunks(reqs, UNIT_RULES)))
    return make_admission(f"retain:tokens=0-4,duration={duration}", ctx).wrap(make_policy(policy, 4, ctx)), ctx.clock


@pytest.mark.parametrize("policy", ["fifo", "sieve"])
def test_a_pooled_block_evicted_leaves_the_inner_policy(policy):
    # Rule (docs/semantics.md §8): a pooled block that leaves the tier leaves the inner policy's memory too,
    # as TensorRT-LLM keeps a free block in one queue only (evictionPolicy.cpp). Trace for depths and clock:
    # [S x] t 0, [S y] t 10, [S z] t 20, [S w] t 40 (S depth 0: retained; x y z w depth 1: not); 5 s retention.
    S, x, y, z, w = 10, 11, 12, 13, 14
    p, clock = _retaining(policy, [req([S, k], t) for k, t in ((x, 0), (y, 10), (z, 20), (w, 40))], 5)
    clock.now = 0
    p.add([S])                           # pooled until 5 s; the inner policy never saw it
    clock.now = 1                        # t 10
    p.add([x])
    assert p.evict(1) == [x]             # S expired at 5 s: back to the inner policy after x, which goes first
    p.remove([S])                        # S hit (pinned): FIFO keeps its entry number, SIEVE its queue place
    p.add([S])                           # released: pooled again until 15 s; the inner policy still holds it pinned
    p.add([y])
    assert p.evict(2) == [y, S]          # y (the only unpooled block), then the pool's S
    # the inner policy forgot S as it forgets a dropped block (before the fix: FIFO still held S's entry
    # number, as a pinned block, for good; SIEVE's queue still held S, pinned, for good)
    assert list(p.inner.order()) == [] and len(p) == 0
    assert S not in p.inner._pinned and (S not in p.inner._held if policy == "fifo" else S not in p.inner._older)
    p._check()
    clock.now = 2                        # t 20: z enters, then S (pooled until 25 s)
    p.add([z])
    p.add([S])
    clock.now = 3                        # t 40: S expires into the inner policy, entering after z:
    assert p.evict(1) == [z]             # z first (before the fix: S, at the place it had before it left)
    assert p.order() == [S]
    p._check()
