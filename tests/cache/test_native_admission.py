"""The compiled admission policies (pcs/cache/_admission.c inside pcs.cache._lruhier) against the Python ones.

The Python hierarchy over Tier with the admission policies of pcs/cache/admission_*.py is the reference
(docs/semantics.md §8, §15); the native hierarchy with the same eviction policy and admission per tier must
give the same admissions, per-request columns, ledger and end state (resident blocks, each tier's
``policy.order()``, counters with ``refused_blocks``) -- on the hand cases of tests/cache/test_admission.py
(values worked there by hand, checked here again on the compiled twin), hypothesis traces (each rule x
several policies x 1-3 tiers, tiny tiers, both write policies and timings), a seeded stress stream with
``_check`` after every step, direct calls with requests left running, and through ``pcs.replay`` on the
committed sample and the Mooncake trace (summary and per-request table).
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcs.blocks import BlockRules
from pcs.cache.policies import PolicyContext
from pcs.cache.policies.context import TraceOracle
from pcs.engine.chunks import iter_chunks
from helpers import (ALL_RULES, BS, SETTINGS, STRESS_CASES, TWIN_TRACE_CASES, UNIT_RULES, assert_trace_replays_equal,
                     drive_direct_calls, replay_twins, req, stress_trace, trace_context, traces, twin_hierarchy,
                     twin_tiers, twin_trace_case)

native = pytest.importorskip("pcs.cache.native")
if native._lruhier is None:
    pytest.skip("pcs.cache._lruhier is not compiled", allow_module_level=True)

#: Every compiled admission, with default and non-default options, and two combined on one tier.
ADMITS = ["reuse:2", "reuse:1", "reuse:3", "selective:1", "selective:2", "tinylfu", "tinylfu:sample=0.5",
          "tinylfu:sample=2.5", "reuse:2+tinylfu", "selective:1+reuse:2"]
#: Eviction policies the admissions are composed with (LRU inline, a queue policy, ghosts, a heap).
POLICIES = ["lru", "fifo", "slru", "sieve", "2q", "s3fifo", "arc", "lfu"]
PER_RULE = settings(SETTINGS, max_examples=40)
A, B, C, D, E = 1, 2, 3, 4, 5


def _same(reqs, caps, specs, admits, timing, rules, wp, future=False):
    """The twins equal (helpers.replay_twins) over a trace context with the chain structure and no future
    uses (retain reads depths; ``future``: with them and a block cost per depth, for gdsf and belady,
    helpers.trace_context); returns (the reference's result, the compiled hierarchy)."""
    ctx = trace_context(reqs, rules) if future else \
        PolicyContext(TraceOracle.build(iter_chunks(reqs, rules), future=False))
    return replay_twins(reqs, caps, specs, timing, rules, wp, admits, ctx)


def _hand(reqs, caps, admit):
    """Sequential replay on the native hierarchy, LRU tiers, ``admit`` on tier 1: (hit tier per request, tiers)."""
    res, h = _same(reqs, caps, ["lru"] * len(caps), [None, admit][:len(caps)], "sequential", UNIT_RULES, "back")
    per_tier = [res.columns[f"hit_tokens_t{j}"] for j in range(len(caps))]
    return [next((j for j in range(len(caps)) if per_tier[j][i]), -1) for i in range(len(reqs))], h.tiers


def test_every_compiled_admission_is_available():
    from pcs.cache.admission import ADMISSION_KINDS
    assert set(native.COMPILED_ADMISSIONS) == set(ADMISSION_KINDS)         # every kind has a compiled twin
    for adm in ADMITS:
        assert native.available(twin_tiers([8, 16], ["lru", "arc"], [None, adm])), adm
    t = twin_tiers([8, 16], ["lru", "lru"], [None, "tinylfu:sample=2.5"])[1]
    # CountMinSketch(16, int(2.5 x 16) = 40): width 16 = 2**4 counters per row, halved after 40 additions
    assert native.gate_specs(t.admission) == [("tinylfu", 4, 40)]
    assert native.gate_specs(twin_tiers([8, 100], ["lru"] * 2, [None, "reuse:3+tinylfu"])[1].admission) \
        == [("reuse", 3, 0), ("tinylfu", 7, 1000)]          # width 128 >= 100 = 2**7; 10 x 100 additions


def test_hand_retention_keeps_the_head_where_lru_drops_it():
    # tests/cache/test_admission.py's case: gpu 3 blocks; r0 [S a] at t 0, r1 [b c] at 1, r2 [d] at 2,
    # r3 [S e] at 3; retaining tokens 0-4 (the depth-0 blocks S, b) for 100 s: r1 evicts a, r2 evicts c (the
    # only unretained block), r3 hits S and its e evicts b: d (depth 0) is retained too, so only retained
    # blocks are left and the oldest retention goes first. For 0.5 s every retention has ended when r1 and
    # r2 evict: S goes
    S, a, b, c, d, e = 10, 11, 12, 13, 14, 15
    reqs = [req([S, a], 0), req([b, c], 1), req([d], 2), req([S, e], 3)]
    res, h = _same(reqs, [3], ["lru"], ["retain:tokens=0-4,duration=100"], "sequential", UNIT_RULES, "back")
    assert res.columns["hit_tokens_t0"][3] > 0 and set(h.tiers[0].resident) == {S, d, e}
    res, _ = _same(reqs, [3], ["lru"], ["retain:tokens=0-4,duration=0.5"], "sequential", UNIT_RULES, "back")
    assert res.columns["hit_tokens_t0"][3] == 0


#: Every compiled eviction policy, some with non-default options: retain sits in front of each.
RETAIN_POLICIES = ["lru", "slru", "slru:protected_share=0.5", "fifo", "sieve", "2q", "2q:in_share=0.5", "s3fifo",
                   "s3fifo:small_share=0.3", "arc", "lfu", "lfu:aging=none", "gdsf", "belady"]


def test_retain_runs_compiled_in_front_of_every_compiled_policy():
    ctx = trace_context([req([1, 2], 0)], UNIT_RULES)
    from pcs.engine.select import RunConfig, choose
    for pol in RETAIN_POLICIES:
        tiers = twin_tiers([4, 8], [pol] * 2, ["retain:tokens=0-4,duration=1"] * 2, ctx)
        assert native.available(tiers), pol
        assert choose(RunConfig.of(tiers, "sequential"))[0].name == "compiled-hierarchy", pol
    assert native.available(twin_tiers([4, 8], ["lru"] * 2, [None, "retain:tokens=0-4,duration=1+reuse:2"], ctx))
    # one retain per tier: two pools in front of one policy have no twin
    assert not native.available(twin_tiers([4], ["fifo"], ["retain:tokens=0-4,duration=1+retain:tokens=4-8,duration=1"],
                                           ctx))


@pytest.mark.parametrize("policy", ["fifo", "sieve"])
def test_hand_a_pooled_block_evicted_leaves_the_inner_policy(policy):
    # One tier of 2 blocks, sequential; retain the depth-0 blocks (tokens 0-4) for 5 s. The compiled pool
    # forgets in the policy (PolOps.forget) what the Python one forgets (RetainingPolicy._forget, semantics §8).
    # r0 t 0 [S x]: x to the policy, S pooled until 5.  r1 t 10 [T]: one eviction: S expired, given to the
    # policy after x; x goes; T pooled until 15.  r2 t 11 [S y]: S hit (pinned in the policy: FIFO keeps its
    # number, SIEVE its place); y evicts T (the policy holds nothing unpinned); S released into the pool until
    # 16, the policy still holding it pinned.  r3 t 12 [U v]: two evictions: y (the policy's), then S (the
    # pool's oldest): the policy forgets S.  r4 t 13 [S z]: misses; evicts v, then U; S pooled until 18.
    # r5 t 30 [W]: S expired into the policy after z, as a new block: z goes (had the policy kept S's old
    # place, S would go).  r6 t 31 [S q]: S hits (1 block, 4 tokens); q evicts W from the pool. Evicted: x T y S
    # v U z W = 8; inserted: 10 (S twice).
    S, T, U, W, x, y, v, z, q = 10, 20, 30, 40, 11, 12, 13, 14, 15
    reqs = [req([S, x], 0), req([T], 10), req([S, y], 11), req([U, v], 12), req([S, z], 13), req([W], 30),
            req([S, q], 31)]
    res, h = _same(reqs, [2], [policy], ["retain:tokens=0-4,duration=5"], "sequential", UNIT_RULES, "back")
    assert list(res.columns["hit_tokens_t0"]) == [0, 0, 4, 0, 0, 0, 4]
    assert set(h.tiers[0].resident) == {S, q} and h.tiers[0].stats.inserted_blocks == 10 \
        and h.tiers[0].stats.evicted_blocks == 8


def test_hand_reuse_stores_a_block_on_its_second_use():
    # tests/cache/test_admission.py's case: gpu 2, cpu 4 with reuse:2; one-block requests A B C A D E A:
    # only A (seen twice when E evicts it) is written below; the last A hits in cpu; 4 refused
    where, tiers = _hand([req([k]) for k in (A, B, C, A, D, E, A)], [2, 4], "reuse:2")
    assert where == [-1, -1, -1, -1, -1, -1, 1]
    assert tiers[1].stats.inserted_blocks == 1 and tiers[1].stats.refused_blocks == 4


def test_hand_selective_stores_only_blocks_hit_k_times():
    # gpu 2, cpu 4 with selective:1; A B A C D: C evicts B (0 hits): refused; D evicts A (1 hit): written
    _, tiers = _hand([req([k]) for k in (A, B, A, C, D)], [2, 4], "selective:1")
    assert tiers[1].stats.inserted_blocks == 1 and tiers[1].stats.refused_blocks == 1
    assert set(tiers[1].resident) == {A}


def test_hand_tinylfu_duel():
    # gpu 1, cpu 1 with tinylfu (width 16, reset after 10 additions); requests A A A B C: every request's
    # head counts once. B evicts A from the gpu: cpu has room, A written (no duel). C evicts B: B (1 use)
    # duels A (3 uses): refused, A stays and is given back to LRU as reused. cpu: 1 written, 1 refused.
    where, tiers = _hand([req([k]) for k in (A, A, A, B, C)], [1, 1], "tinylfu")
    assert where == [-1, 0, 0, -1, -1]
    assert set(tiers[1].resident) == {A}
    assert tiers[1].stats.inserted_blocks == 1 and tiers[1].stats.refused_blocks == 1
    # sample=100 (no reset in 10 additions): A A A A B B B B B C. B evicts A from the gpu: written (room). C
    # evicts B (5 uses) from the gpu; the cpu holds A (4 uses): B wins, A is evicted from the cpu (dropped)
    _, tiers = _hand([req([k]) for k in (A, A, A, A, B, B, B, B, B, C)], [1, 1], "tinylfu:sample=100")
    assert set(tiers[1].resident) == {B} and tiers[1].stats.evicted_blocks == 1
    assert tiers[1].stats.inserted_blocks == 2 and tiers[1].stats.refused_blocks == 0


config = st.tuples(st.lists(st.tuples(st.integers(0, 10), st.sampled_from(POLICIES)), min_size=1, max_size=3),
                   st.sampled_from(ADMITS), st.sampled_from(["sequential", "modeled"]), st.sampled_from(ALL_RULES),
                   st.sampled_from(["back", "through"]))


@SETTINGS
@given(traces(), config)
def test_native_admission_equals_python_on_random_traces(reqs, cfg):
    tiers, admit, timing, rules, wp = cfg
    admits = [None] + [admit] * (len(tiers) - 1)
    _same(reqs, [c for c, _ in tiers], [s for _, s in tiers], admits, timing, rules, wp)


@pytest.mark.parametrize("admit", ADMITS)
@PER_RULE
@given(reqs=traces(), caps=st.lists(st.integers(0, 8), min_size=2, max_size=3),
       pol=st.sampled_from(POLICIES), timing=st.sampled_from(["sequential", "modeled"]),
       wp=st.sampled_from(["back", "through"]))
def test_each_admission_with_tiny_tiers(admit, reqs, caps, pol, timing, wp):
    _same(reqs, caps, [pol] * len(caps), [None] + [admit] * (len(caps) - 1), timing, BlockRules(), wp)


#: retain variants: token ranges over the first blocks (BS = 4 tokens), durations around the traces' arrival gaps
RETAINS = ["retain:tokens=0-4,duration=0.1", "retain:tokens=0-8,duration=1", "retain:tokens=4-12,duration=0.01",
           "retain:tokens=0-4,duration=100"]
retain_config = st.tuples(
    st.lists(st.tuples(st.integers(0, 10), st.sampled_from(RETAIN_POLICIES),
                       st.sampled_from([None] + RETAINS),
                       st.sampled_from([None, "reuse:2", "tinylfu", "selective:1"])), min_size=1, max_size=3),
    st.sampled_from(["sequential", "modeled"]), st.sampled_from(ALL_RULES), st.sampled_from(["back", "through"]))


@SETTINGS
@given(traces(), retain_config)
def test_native_retain_equals_python_on_random_traces(reqs, cfg):
    """retain on any tier (the GPU tier too) in front of any compiled policy, alone or with a gate on a lower
    tier."""
    tiers, timing, rules, wp = cfg
    admits = ["+".join(a for a in (ret, gate if j else None) if a) or None
              for j, (_, _, ret, gate) in enumerate(tiers)]
    _same(reqs, [c for c, *_ in tiers], [s for _, s, *_ in tiers], admits, timing, rules, wp, future=True)


#: pools that take most blocks for about one arrival gap: a block expires into the policy, is pinned there and
#: pooled again, then leaves as the pool's victim (the policy must forget it: PolOps.forget)
SHORT_RETAINS = ["retain:tokens=0-16,duration=0.005", "retain:tokens=0-12,duration=0.03",
                 "retain:tokens=0-8,duration=0.01", "retain:tokens=0-4,duration=0.1"]


@pytest.mark.parametrize("policy", [p for p in RETAIN_POLICIES if p.split(":")[0] not in ("lru", "slru")])
@PER_RULE
@given(reqs=traces(max_requests=40), caps=st.lists(st.integers(0, 6), min_size=1, max_size=3),
       ret=st.sampled_from(SHORT_RETAINS), timing=st.sampled_from(["sequential", "modeled"]),
       wp=st.sampled_from(["back", "through"]))
def test_retain_in_front_of_each_policy_with_tiny_tiers(policy, reqs, caps, ret, timing, wp):
    """Every tier one policy behind a pool (tiny tiers, most blocks retained for about one arrival gap: the
    pool's victims and drops include blocks the policy saw pinned)."""
    _same(reqs, caps, [policy] * len(caps), [ret] * len(caps), timing, BlockRules(), wp, future=True)


@pytest.mark.parametrize("admit", ["reuse:2", "selective:1", "tinylfu", "reuse:2+tinylfu"])
@settings(SETTINGS, max_examples=40)
@given(st.lists(st.lists(st.integers(0, 6), max_size=6), min_size=1, max_size=12), st.integers(0, 5),
       st.integers(0, 5), st.booleans(), st.sampled_from(["back", "through"]), st.sampled_from(POLICIES))
def test_direct_calls_with_waits_and_running_requests(admit, chains, c0, c1, wait, wp, pol):
    """start/prefill_done/finish/abort/grow called directly, requests left running: every Admission field
    and the end state agree."""
    hs = [twin_hierarchy(twin_tiers([c0, c1], [pol, pol], [None, admit]), wp, n) for n in (False, True)]
    drive_direct_calls(hs, chains, wait)


@pytest.mark.parametrize("admit", ["reuse:2", "selective:1", "tinylfu:sample=0.5", "reuse:2+tinylfu",
                                   "retain:tokens=0-8,duration=0.5", "retain:tokens=0-16,duration=5+tinylfu"])
def test_seeded_stress(admit):
    """600 requests, _check after every step (STRESS_CASES: the 6-block GPU tier truncates, the 9-block CPU
    tier overflows); policies with ghosts and heaps below an admission (retain: on every tier, GPU too)."""
    reqs = stress_trace(7, 600, BS)
    ret = admit.startswith("retain")
    pols = {(40, 60, 80): ["sieve", "gdsf", "arc"] if ret else ["lru", "lru", "arc"],
            (6, 9): ["belady", "2q"] if ret else ["lru", "2q"], (6, 20, 30): ["fifo", "s3fifo", "lfu"]}
    for caps, timing, wp in STRESS_CASES:
        specs = pols[tuple(caps)]
        admits = [admit.split("+")[0] if ret else None] + [admit] * (len(caps) - 1)
        a, _ = _same(reqs, caps, specs, admits, timing, BlockRules(), wp, future=ret)
        assert a.ledger.num_requests == 600


#: helpers.TWIN_TRACE_CASES but a 100 GB GPU tier over 1 TB CPU in the Mooncake trace's first case
REAL = {**TWIN_TRACE_CASES,
        "mooncake": [("modeled", "back", ["gpu=100GB", "cpu=1TB"])] + TWIN_TRACE_CASES["mooncake"][1:]}
TRACE_ADMITS = {"reuse": ("lru", ["cpu=reuse:2", "ssd=reuse:3"]), "selective": ("arc", ["cpu=selective:2"]),
                "tinylfu": ("lru", ["cpu=tinylfu", "ssd=tinylfu:sample=4"]),
                "mixed": ("s3fifo", ["cpu=reuse:2", "cpu=tinylfu", "ssd=selective:1"]),
                "retain": ("lru", ["gpu=retain:tokens=0-2048,duration=300", "cpu=retain:tokens=0-4096,duration=60",
                                   "cpu=reuse:2"])}


@pytest.mark.parametrize("case", range(3))
@pytest.mark.parametrize("adm", list(TRACE_ADMITS))
def test_trace_summary_and_table_identical(exact_trace, case, adm):
    """Every case on the committed sample; on the Mooncake trace the two-tier modeled case per rule and every
    case of the mixed one."""
    timing, wp, tiers = twin_trace_case(exact_trace, case, adm == "mixed", REAL)
    policy, admits = TRACE_ADMITS[adm]
    names = {t.split("=")[0] for t in tiers}
    admit = [a for a in admits if a.split("=")[0] in names]
    _, b = assert_trace_replays_equal(exact_trace, model="llama-3.1-70b", tiers=tiers, policy=policy, admit=admit,
                                      timing=timing, write_policy=wp)
    assert any(t.refused_blocks for t in b.summary.tiers[1:])        # the admission acted


#: retain in front of each policy that runs compiled behind it since PolOps.forget: on the Mooncake trace a
#: sequential two-tier case each (the reference hierarchy takes seconds, not a minute), every case for fifo
RETAIN_REAL = {**TWIN_TRACE_CASES, "mooncake": [("sequential", "back", ["gpu=100GB", "cpu=1TB"]),
                                                ("modeled", "back", ["gpu=100GB", "cpu=1TB"]),
                                                TWIN_TRACE_CASES["mooncake"][1]]}
RETAIN_TRACE = ["gpu=retain:tokens=0-2048,duration=300", "cpu=retain:tokens=0-4096,duration=60"]


@pytest.mark.parametrize("case", range(3))
@pytest.mark.parametrize("policy", ["fifo", "sieve", "2q", "s3fifo", "arc", "lfu", "gdsf", "belady"])
def test_retain_trace_summary_and_table_identical(exact_trace, case, policy):
    timing, wp, tiers = twin_trace_case(exact_trace, case, policy == "fifo", RETAIN_REAL)
    names = {t.split("=")[0] for t in tiers}
    admit = [a for a in RETAIN_TRACE if a.split("=")[0] in names]
    assert_trace_replays_equal(exact_trace, model="llama-3.1-70b", tiers=tiers, policy=policy, admit=admit,
                               timing=timing, write_policy=wp)
