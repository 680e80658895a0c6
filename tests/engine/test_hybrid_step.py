"""Hybrid models under the step scheduler (docs/semantics.md §9, §3.1, §15; pcs.engine.hybridstep).

A hand-traced timeline in the style of test_scheduler_timeline.py (cost: 1 ms per token computed,
nothing else, so a step of T tokens takes T ms) with the rules of test_hybrid_rules.py (block size
B = 4 tokens; a sliding window of W = 5 tokens needs m = ceil((W - 1) / B) = 1 block before the hit
point and holds at most m + 1 = 2 blocks while running); then hypothesis runs: one full-attention group
equals the reference hierarchy under the step scheduler, and for hybrid groups no pool exceeds its
capacity, the busy time is the sum of the step times and every request finishes.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import BS, req, step_cost, step_run, traces
from pcs.cache import Hierarchy, Tier, make_policy
from pcs.cache.groups import CacheGroup
from pcs.cache.grouphier import GroupHierarchy, page_key
from pcs.engine.hybridstep import HybridStepEngine
from pcs.engine.turns import decode_blocks

MS = 0.001
FULL = CacheGroup("full_attention", "full", ("full_attention",), 4)
WIN = CacheGroup("sliding_window", "window", ("sliding_window",), 4, span_tokens=5)    # m = 1, holds 2


def _col(eng, name):
    col = eng.result.columns[name]
    if isinstance(col, np.ndarray):     # the compiled step loop's columns: numpy over its own bytes
        return col.tolist()
    return np.frombuffer(col, dtype={"q": np.int64, "d": np.float64, "b": np.int8}[col.typecode]).tolist()


def _groups(caps, groups):
    """One shared LRU pool per level (capacities in pages), page bytes 1."""
    tiers = [Tier(n, c, make_policy("lru", c)) for n, c in zip(("gpu", "cpu"), caps)]
    return GroupHierarchy(tiers, "back", groups, 1, [[1] for _ in caps])


def test_window_group_grows_to_its_hold_and_its_slid_out_page_is_the_victim():
    # GPU pool 6 pages, CPU 10; groups full + window (1 page a block each); budget 16 tokens.
    # R0: t=0, ids 1 2 (prompt 8 tokens), output 9.
    #   admission: no hit; full computes f1 f2 (kept), the window computes w2 (kept: the next token, at
    #   position 8, attends to positions 4..8 = block 1 and the new block) and w1 (slid out: stored
    #   unpinned at prefill end); 3 slots reserved.
    #   step 1 [0, 8 ms): 8 prompt tokens; first token at 8 ms (TTFT 8 ms). GPU: f1 f2 w2 pinned, w1 evictable.
    #   decode steps G=1..8 (1 token, 1 ms each): position 8 (G=1) opens block 2: full +1 slot, window +1
    #   (it holds 1 of its 2): 5 held, 4 resident + 2 reserved = 6 = capacity, nothing evicted;
    #   position 12 (G=5) opens block 3: full +1, the window is at its 2 blocks (+0): the pool is full, the
    #   victim is w1 (the only unpinned page), demoted to the CPU. Held peak 3 pinned + 3 reserved = 6.
    #   (As all full attention the request would need 2 x 4 = 8 pages and could not run in 6.)
    #   R0 finishes after its 9th token: 8 + 8 = 16 ms.
    # R1: t=20 ms, ids 1 5 (prompt 8), output 1. Hit cap (8 - 1) // 4 = 1 block. Full: f1 on the GPU;
    #   the window for a hit at 1 needs block 0: w1, on the CPU -> restored (1 page; no link: 0 s).
    #   The hit block counts at the slowest level a needed page came from: the CPU. 4 tokens computed:
    #   step [20, 24 ms), first (and last) token at 24 ms: TTFT 4 ms.
    reqs = [req([1, 2], 0.0, prompt=8, out=9), req([1, 5], 20 * MS, prompt=8, out=1)]
    h = _groups((6, 10), (FULL, WIN))
    eng = step_run(reqs, [6, 10], step_cost(token_s=MS), budget=16, seqs=4, hierarchy=h, engine=HybridStepEngine)
    assert _col(eng, "ttft_s") == pytest.approx([8 * MS, 4 * MS], abs=1e-12)
    assert _col(eng, "finish_s") == pytest.approx([16 * MS, 24 * MS], abs=1e-12)
    assert _col(eng, "preemptions") == [0, 0]
    assert _col(eng, "hit_tokens") == [0, 4] and _col(eng, "hit_tokens_cpu") == [0, 4]
    assert eng.result.ledger.peak_reserved_blocks == 6
    w = lambda x: page_key(x, 1, 0)  # noqa: E731
    r = h.residency
    assert r.restored[1] == [0, 1]                         # one window page from the CPU, no full page
    assert w(1) in h.levels[1][0].resident                 # the demoted victim
    # after R1: f1 f2 f5 and w1 (restored) w2 (R0's, unpinned) w5 -- 3 + 3 = 6 pages, the pool's capacity
    assert r.group_peak_pages[0] == [3, 3]
    # per-request residency samples: one per request, at its first admission (GPU pages per group)
    assert list(r.request_pages[0]) == [0, 2] and list(r.request_pages[1]) == [0, 2]
    assert eng.stats.busy_s == pytest.approx(20 * MS) and eng.stats.steps == 10


def test_preempted_request_keeps_one_residency_sample():
    # GPU 5 pages, no CPU; full + window. R0: ids 1 2, prompt 8, output 9 (the first test's request):
    #   prefill: f1 f2 w2 pinned, w1 unpinned (4 resident). G=1: block 2 needs full +1, window +1: 2 slots
    #   of the 1 free + w1 (evicted, dropped). G=5: block 3 needs full +1: 3 pinned + 2 reserved = 5, none
    #   left -> R0 (the youngest that grows) is preempted after 1 + 4 = 5 tokens: prompt 8 + 5 = 13 tokens.
    #   Re-admitted (preempted max_preemptions = 1 time: every block it will need, 13 + 4 - 1 = 16 tokens
    #   = 4 blocks): hits f1 f2 and w2 (cap min(2, 12 // 4) = 2), pinned; extra full 2 pages, window
    #   2 - 1 kept = 1 page: 3 more slots, 2 obtainable -> truncated, no growing; 13 - 8 = 5 tokens recomputed.
    # One request, so one residency sample (its first admission), not two.
    reqs = [req([1, 2], 0.0, prompt=8, out=9)]
    h = _groups((5,), (FULL, WIN))
    eng = step_run(reqs, [5], step_cost(token_s=MS), budget=16, seqs=4, hierarchy=h, engine=HybridStepEngine,
                   max_preemptions=1)
    assert _col(eng, "preemptions") == [1] and eng.stats.recompute_tokens == 5
    assert np.isfinite(_col(eng, "finish_s")).all()
    assert len(h.residency.request_lost) == 1 and len(h.residency.request_pages[0]) == 1


# -- hypothesis ---------------------------------------------------------------------------------------------
COST = step_cost(token_s=2.0 ** -10, weights_s=2.0 ** -8, kv_token_s=2.0 ** -14, attn_pair_s=2.0 ** -16,
                 attn_token_s=2.0 ** -18, layers=4)


@st.composite
def runs(draw):
    reqs = draw(traces(max_requests=14))
    reqs = [r._replace(arrival_s=round(r.arrival_s * 1024) / 1024) for r in reqs]   # dyadic arrivals
    budget = draw(st.integers(2, 16))
    kw = dict(budget=budget, seqs=draw(st.integers(1, budget)),
              restore_policy=draw(st.sampled_from(["layerwise", "wait", "best-effort"])),
              restore_fallback=draw(st.booleans()), max_preemptions=draw(st.integers(0, 3)))
    caps = [draw(st.integers(4, 24))] + ([draw(st.integers(0, 40))] if draw(st.booleans()) else [])
    dec = decode_blocks(reqs) if draw(st.booleans()) else None
    return reqs, caps, dec, kw


def _values(col):
    if isinstance(col, np.ndarray):     # the compiled step loop's columns: numpy over its own bytes
        return col
    return np.frombuffer(col, dtype={"q": np.int64, "d": np.float64, "b": np.int8}[col.typecode])


@settings(max_examples=60, deadline=None)
@given(runs(), st.sampled_from(["back", "through"]), st.sampled_from(["lru", "arc", "2q"]))
def test_one_full_group_under_the_step_scheduler(run, wp, policy):
    # one full-attention group of one page is the reference hierarchy: the same timeline and columns (arc and
    # 2q too: the GPU pool tells their ghost lists the pages it reserves for, GroupHierarchy._incoming)
    reqs, caps, dec, kw = run
    ref_tiers = [Tier(n, c, make_policy(policy, c)) for n, c in zip(("gpu", "cpu"), caps)]
    ref = step_run(reqs, caps, COST, decode=dec, write_policy=wp, hierarchy=Hierarchy(ref_tiers, wp), **kw)
    tiers = [Tier(n, c, make_policy(policy, c)) for n, c in zip(("gpu", "cpu"), caps)]
    h = GroupHierarchy(tiers, wp, (CacheGroup("full_attention", "full", ("full_attention",), BS),), 1,
                       [[0] for _ in caps])
    hyb = step_run(reqs, caps, COST, decode=dec, write_policy=wp, hierarchy=h, engine=HybridStepEngine, **kw)
    for name, col in ref.result.columns.items():
        a, b = _values(col), _values(hyb.result.columns[name])
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), name
    assert ref.steps_log == hyb.steps_log and ref.result.ledger == hyb.result.ledger
    for x, y in zip(ref.h.tiers, h.tiers):
        assert x.resident == y.resident and x.policy.order() == y.policy.order()


@st.composite
def group_sets(draw):
    """Full attention (maybe) plus 1-2 of window / chunk / state, random spans and pages, shared or split pools."""
    kinds = draw(st.lists(st.sampled_from(["window", "chunk", "state"]), min_size=1, max_size=2, unique=True))
    groups = []
    if draw(st.booleans()) or len(kinds) == 1:
        groups.append(CacheGroup("full_attention", "full", ("full_attention",), BS, 0, draw(st.integers(1, 2))))
    for kind in kinds:
        span = {"window": st.integers(2, 14), "chunk": st.integers(2, 12), "state": st.sampled_from([BS, 2 * BS])}
        groups.append(CacheGroup(kind, kind, (kind,), BS, draw(span[kind]), draw(st.integers(1, 2)),
                                 align=kind == "state" and draw(st.booleans())))
    if draw(st.booleans()):
        groups = [CacheGroup(g.name, g.rule, g.components, g.block_size, g.span_tokens, g.pages, p, g.layers,
                             g.align) for p, g in enumerate(groups)]
        return groups, len(groups)
    return groups, 1


@settings(max_examples=40, deadline=None)
@given(runs(), group_sets(), st.sampled_from(["back", "through"]))
def test_hybrid_groups_under_the_step_scheduler(run, gs, wp):
    # check=True: the hierarchy's invariants after every event (no pool over its capacity, pins, page counters)
    reqs, caps, dec, kw = run
    groups, pools = gs
    caps = [c * 2 for c in caps]        # two pages a block at most
    tiers = [Tier(n if pools == 1 else f"{n}/{g.name}", c, make_policy("lru", c))
             for n, c in zip(("gpu", "cpu"), caps) for g in groups[:pools]]
    h = GroupHierarchy(tiers, wp, groups, pools, [[3 + p for p in range(pools)] for _ in caps])
    eng = step_run(reqs, caps, COST, decode=dec, write_policy=wp, hierarchy=h, engine=HybridStepEngine, **kw)
    c = eng.result.columns
    finish = _values(c["finish_s"])
    assert len(finish) == len(reqs) and np.isfinite(finish).all(), "every request finishes"
    assert eng.stats.busy_s == pytest.approx(sum(s for _, s, *_ in eng.steps_log), rel=1e-12, abs=1e-15)
    assert all(tokens <= kw["budget"] for *_, tokens, _d, _c, _n in eng.steps_log)
    assert all(t.num_pinned == 0 and t.reserved_blocks == 0 for t in h.levels[0]), "a page still held"
    r = h.residency
    for j, lvl in enumerate(h.levels):
        assert all(a <= lvl[g.pool].capacity_blocks for a, g in zip(r.group_peak_pages[j], groups))
    assert len(r.request_lost) == len(reqs) and all(len(p) == len(reqs) for p in r.request_pages)
    hit = _values(c["hit_tokens"])
    assert (hit <= _values(c["prompt_tokens"])).all()
