"""The compiled hybrid hierarchy (pcs.cache.nativegroups, pcs/cache/_grouphier.c) equals the Python reference
(pcs.cache.grouphier.GroupHierarchy), docs/semantics.md §15.

- hypothesis traces (tiny tiers forcing eviction, truncation and preemption; 1-3 levels; both write policies;
  full / window / chunk / state groups with 1-3 pages per block and both state modes; every block rule): the
  event loop (sequential and modeled timing) and the step scheduler (pcs.engine.hybridstep) give identical
  per-request columns, ledgers, counters, end states (resident pages with pin counts, LRU order, tier stats)
  and residency (pages, peaks, the sampled series, per-request samples, restored / written / dropped);
- every hybrid preset, through pcs.replay, on the committed samples in traces/ and on the Mooncake trace
  (skipped without ../shared): identical summaries (but the engine names) and per-request tables.
"""
from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import (ALL_RULES, BS, ROOT, SETTINGS, LinearCompute, assert_group_states_equal, group_sets,
                     step_cost, step_run, tables_equal, traces, without_engine_keys)
from pcs.cache import Tier, make_policy
from pcs.cache.groups import CacheGroup
from pcs.cache.grouphier import GroupHierarchy
from pcs.cache.nativegroups import NativeGroupHierarchy, unsupported
from pcs.engine.chunks import iter_chunks
from pcs.engine.engine import ReplayEngine, TimeModel
from pcs.engine.hybridstep import HybridStepEngine

pytestmark = pytest.mark.skipif(unsupported([], [], 1) is not None, reason="pcs.cache._grouphier not built")

NAMES = ("gpu", "cpu", "ssd")
HYBRIDS = ("gpt-oss-120b", "gemma-3-27b", "qwen3-next-80b-a3b", "deepseek-v3.2")


def _pair(caps, wp, groups, step_s=0.01):
    """(reference, compiled) hierarchies over fresh LRU tiers of ``caps`` pages."""
    def tiers():
        return [Tier(n, c, make_policy("lru", c)) for n, c in zip(NAMES, caps)]
    pb = [[3 + j] for j in range(len(caps))]
    return (GroupHierarchy(tiers(), wp, groups, 1, pb, step_s),
            NativeGroupHierarchy(tiers(), wp, groups, 1, pb, step_s))


def _assert_same(ref, nat, a, b) -> None:
    assert {k: repr(list(v)) for k, v in a.columns.items()} == {k: repr(list(v)) for k, v in b.columns.items()}
    assert a.ledger == b.ledger
    assert_group_states_equal(ref, nat)


def _loop(h, reqs, timing, rules):
    e = ReplayEngine(h, timing, block_bytes=[7] * len(h.tiers), check=True)
    for ch in iter_chunks(reqs, rules, TimeModel(LinearCompute())):
        h.tick(ch.arrival_s[0]) if len(ch.arrival_s) else None
        e.feed(ch)
    return e.close()


@SETTINGS
@given(reqs=traces(), groups=group_sets(), caps=st.lists(st.integers(0, 24), min_size=1, max_size=3),
       timing=st.sampled_from(["sequential", "modeled"]), wp=st.sampled_from(["back", "through"]),
       rules=st.sampled_from(ALL_RULES))
def test_native_equals_reference_under_the_event_loop(reqs, groups, caps, timing, wp, rules):
    ref, nat = _pair(caps, wp, groups)
    a, b = _loop(ref, reqs, timing, rules), _loop(nat, reqs, timing, rules)
    _assert_same(ref, nat, a, b)


@SETTINGS
@given(reqs=traces(), groups=group_sets(), caps=st.lists(st.integers(2, 24), min_size=1, max_size=3),
       wp=st.sampled_from(["back", "through"]), budget=st.integers(4, 24), seqs=st.integers(1, 4),
       fallback=st.booleans(), rules=st.sampled_from(ALL_RULES))
def test_native_equals_reference_under_the_step_scheduler(reqs, groups, caps, wp, budget, seqs, fallback, rules):
    ref, nat = _pair(caps, wp, groups)
    out = []
    for h in (ref, nat):
        eng = step_run(reqs, caps, step_cost(token_s=0.001, attn_pair_s=1e-6), budget=budget, seqs=seqs,
                       rules=rules, hierarchy=h, engine=HybridStepEngine, restore_fallback=fallback,
                       block_bytes=[7] * len(caps), links=[None] + [_Link()] * (len(caps) - 1))
        out.append(eng.result)
    _assert_same(ref, nat, *out)


#: preset-like group sets (block size 4): gpt-oss (full + window of 1 page), gemma-3 (full + window, 6 pages),
#: qwen3-next (full + state every 2 blocks, 3 pages, both modes), a chunked-local model, a window-only model
SHAPES = [
    [("full", 0, 1), ("window", 5, 1)],
    [("full", 0, 1), ("window", 9, 6)],
    [("full", 0, 1), ("state", 8, 3)],
    [("full", 0, 2), ("state", 8, 1, True)],
    [("full", 0, 1), ("chunk", 8, 2)],
    [("window", 7, 2)],
]


def _groups(shape):
    return [CacheGroup(f"g{i}", rule, (f"g{i}",), BS, span, pages, layers=1, align=bool(rest and rest[0]))
            for i, (rule, span, pages, *rest) in enumerate(shape)]


@pytest.mark.parametrize("shape", range(len(SHAPES)))
@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("wp", ["back", "through"])
def test_seeded_stress_with_restores(shape, seed, wp):
    # a 300-request prefix-chained trace on a small GPU over larger lower tiers (restores, demotions, drops,
    # preemption), checked after every step, under the step scheduler and the modeled event loop
    from helpers import stress_trace

    reqs = stress_trace(seed, 300)
    caps = [40, 120, 200]
    for run in ("step", "modeled"):
        ref, nat = _pair(caps, wp, _groups(SHAPES[shape]))
        if run == "modeled":
            a, b = _loop(ref, reqs, "modeled", ALL_RULES[0]), _loop(nat, reqs, "modeled", ALL_RULES[0])
        else:
            a, b = (step_run(reqs, caps, step_cost(token_s=0.001, attn_pair_s=1e-6), budget=16, seqs=4, hierarchy=h,
                             engine=HybridStepEngine, block_bytes=[7] * 3, links=[None, _Link(), _Link()]).result
                    for h in (ref, nat))
        _assert_same(ref, nat, a, b)
        assert sum(map(sum, nat.residency.restored)) > 0


class _Link:
    """A link of dyadic times (setup 2^-12 s, 2^-20 s per byte)."""

    setup_s = 2.0 ** -12

    def transfer_s(self, num_bytes, io_size_bytes=None):
        return self.setup_s + num_bytes * 2.0 ** -20




def _same_replays(trace, **kw) -> None:
    """The Python row (engine "hybrid" by name) and auto (the compiled row) give the same replay."""
    from pcs.engine.api import replay

    a = replay(trace, engine="hybrid", **kw)
    b = replay(trace, **kw)
    assert a.summary.engine == "hybrid" and b.summary.engine == "compiled-hybrid", b.summary.engine_reason
    assert b.summary.baseline_engine == "compiled-hybrid"
    assert json.dumps(without_engine_keys(a.summary.to_dict()), default=str) == \
        json.dumps(without_engine_keys(b.summary.to_dict()), default=str)
    tables_equal(a.requests, b.requests)


@pytest.mark.parametrize("model", HYBRIDS[:3])
@pytest.mark.parametrize("compute", ["step", "infinite"])
@pytest.mark.parametrize("sample", ["sample_chat.jsonl", "sample_azure_conv.jsonl"])
def test_presets_on_the_samples(model, compute, sample):
    _same_replays(str(ROOT / "traces" / sample), model=model, tiers=["gpu=20GB", "cpu=60GB"], compute_mode=compute,
                  residency_step_s=30.0)


def test_write_through_and_three_tiers_on_a_sample():
    _same_replays(str(ROOT / "traces" / "sample_chat.jsonl"), model="gemma-3-27b", write_policy="through",
                  tiers=["gpu=10GB", "cpu=20GB", "ssd=40GB"])


def test_deepseek_is_not_hybrid():
    from pcs.engine.api import replay

    s = replay(str(ROOT / "traces" / "sample_chat.jsonl"), model="deepseek-v3.2", tiers=["gpu=20GB"]).summary
    assert s.engine not in ("hybrid", "compiled-hybrid") and s.hybrid is None


@pytest.mark.parametrize("model,gpu", [("gpt-oss-120b", "40GB"), ("gemma-3-27b", "100GB")])
def test_mooncake(model, gpu):
    from conftest import MOONCAKE_CONV

    if not MOONCAKE_CONV.exists():
        pytest.skip("the Mooncake trace (../shared/traces) is not here")
    from pcs.trace import open_trace

    _same_replays(open_trace(MOONCAKE_CONV), model=model, tiers=[f"gpu={gpu}", "cpu=2TB"])


def test_unsupported_configurations_say_why():
    full = (CacheGroup("full_attention", "full", ("full_attention",), BS),)
    fifo = [Tier("gpu", 4, make_policy("fifo", 4))]
    assert "lru" in unsupported(fifo, full, 1)
    assert "pool" in unsupported([Tier("gpu", 4, make_policy("lru", 4))] * 2, full * 2, 2)
    with pytest.raises(ValueError, match="lru"):
        NativeGroupHierarchy(fifo, "back", full)


def test_unsupported_page_slab_limits():
    """_grouphier.h keeps a group block's page entries side by side, its pages rounded up to a power of two of int32
    entry indices: a block of 4,096 pages fits, 4,097 does not (MAX_BLOCK_PAGES = 2**12); with 6-page blocks (gemma-3's
    window group, rounded up to 8) a tier takes at most 2**30 / 8 = 134,217,728 pages, one more is refused."""
    def groups(pages):
        return (CacheGroup("full_attention", "full", ("full_attention",), BS),
                CacheGroup("sliding_window", "window", ("sliding_window",), BS, span_tokens=BS, pages=pages))

    def tiers(cap):
        return [Tier("gpu", cap, make_policy("lru", cap))]

    assert unsupported(tiers(4), groups(4096), 1) is None
    assert "4,096 pages a group block, got 4,097" in unsupported(tiers(4), groups(4097), 1)
    assert unsupported(tiers(134_217_728), groups(6), 1) is None
    assert "134,217,728 pages" in unsupported(tiers(134_217_729), groups(6), 1)


def test_demotion_runs_hand_traced():
    """GPU victims demoted run by run into the last level, its victims counted as dropped (pcs/cache/_grouphier.c
    t_insert, t_evict), worked out by hand from the LRU rules (docs/semantics.md §5-§7), both twins.

    One full group of 3 pages per block (page p of block b: b.p), GPU and CPU of 6 pages, write-back; each request
    runs start, prefill_done, finish (its pages unpinned tail first, so a block's page 0 is the most recent):
    r1 [1, 2]: GPU 2.2 2.1 2.0 1.2 1.1 1.0 (first victim first).
    r2 [3]: 3 slots -> block 2's run leaves the GPU into the empty CPU (2.2 2.1 2.0, one run with no record);
        GPU 1.2 1.1 1.0 3.2 3.1 3.0.
    r3 [4, 5]: 6 slots -> runs of blocks 1 and 3 go down; the CPU has 3 free pages, so its run of block 2 is dropped
        (3 pages); CPU 1.2 1.1 1.0 3.2 3.1 3.0, written 3 + 6 = 9, CPU evicted 3.
    r4 [1] with a hit of 1 block: block 1 restored from the CPU (its copy touched there: CPU 3.x then 1.2 1.1 1.0),
        its 3 GPU slots from the run of block 5 (5.2 5.1 5.0), demoted: block 3's run dropped; dropped 6 in all,
        CPU 1.2 1.1 1.0 5.2 5.1 5.0, written 12, CPU evicted 6; GPU 4.2 4.1 4.0 1.2 1.1 1.0.
    """
    from pcs.cache.grouphier import page_key

    groups = [CacheGroup("full", "full", ("full_attention",), BS, pages=3)]
    ref, nat = _pair([6, 6], "back", groups)
    keys = lambda *blocks: [page_key(b, 0, p) for b in blocks for p in (2, 1, 0)]  # noqa: E731
    for h in (ref, nat):
        for ids, hit in (([1, 2], 0), ([3], 0), ([4, 5], 0), ([1], 1)):
            a = h.start(ids, len(ids), hit)
            assert a.hit_blocks == hit
            h.prefill_done(a)
            h.finish(a)
        assert h.tiers[0].policy.order() == keys(4, 1)
        assert h.tiers[1].policy.order() == keys(1, 5)
        assert (h.written_blocks[1], h.dropped_blocks) == (12, 6)
        assert h.tiers[1].stats.evicted_blocks == 6
        assert h.residency.dropped == [6]
    assert_group_states_equal(ref, nat)


def test_window_pages_stored_last_first_and_split_runs_go_down_hand_traced():
    """A window group's pages that slid out are inserted last page first (the reference's keys[::-1]), and GPU
    victims go down three levels run by run, a block's run split by the eviction count (pcs/cache/_grouphier.c
    d_writes, t_evict, t_insert), worked out by hand from the LRU rules (docs/semantics.md §3.1, §5-§7), both twins.

    Groups: full (f, 1 page a block) and a window of 4 tokens (w, 2 pages; the window is 1 block, so a request's
    window pages before its last block are stored unpinned at prefill_done); GPU 10, CPU 3, SSD 4 pages, write-back;
    no hits (cap 0); each request runs start, prefill_done, finish. First victim first, b.p = block b page p:
    r1 [1, 2, 3]: w2.1 w2.0 w1.1 w1.0 stored (block 2 first, page 1 first), then the pins dropped tail first:
        GPU w2.1 w2.0 w1.1 w1.0 f3 f2 f1 w3.1 w3.0 (9 pages).
    r2 [4]: 3 slots, 1 free -> w2.1 w2.0 down: CPU w2.1 w2.0; GPU ... f4 w4.1 w4.0 (10).
    r3 [5]: w1.1 w1.0 f3 down; the CPU makes room for 3: w2.1 w2.0 to the SSD; CPU w1.1 w1.0 f3.
    r4 [6, 7]: 6 slots (f6 f7 w7.0 w7.1 kept, and w6.0 w6.1 that slide out: the prefill writes them, so they take
        a slot until prefill_done, vLLM allocating every block a prefill writes): victims f2 f1 w3.1 w3.0 f4 w4.1
        (block 4's window run cut after one page); the CPU (3, full) cuts the batch's first 3, f2 f1 w3.1 (not
        resident there), which follow its victims w1.1 w1.0 f3 down; the SSD (4 pages, 2 free) cuts w1.1 w1.0 and
        drops them after its victims w2.1 w2.0, holds f3 f2 f1 w3.1; CPU w3.0 f4 w4.1.
        prefill_done gives back w6's 2 slots and stores w6.1 w6.0 in them (no eviction).
    End: GPU w4.0 f5 w5.1 w5.0 w6.1 w6.0 f7 f6 w7.1 w7.0; CPU w3.0 f4 w4.1; SSD f3 f2 f1 w3.1; written CPU 2 + 3 + 3
    = 8, SSD 2 + 4 = 6; dropped 4, all window pages.
    """
    from pcs.cache.grouphier import page_key

    groups = [CacheGroup("full", "full", ("full_attention",), BS, pages=1),
              CacheGroup("win", "window", ("sliding",), BS, 4, pages=2)]
    ref, nat = _pair([10, 3, 4], "back", groups)
    f = lambda b: page_key(b, 0, 0)  # noqa: E731
    w = lambda b, p: page_key(b, 1, p)  # noqa: E731
    for h in (ref, nat):
        for ids in ([1, 2, 3], [4], [5], [6, 7]):
            a = h.start(ids, len(ids), 0)
            h.prefill_done(a)
            h.finish(a)
        assert h.tiers[0].policy.order() == [w(4, 0), f(5), w(5, 1), w(5, 0), w(6, 1), w(6, 0), f(7), f(6), w(7, 1),
                                             w(7, 0)]
        assert h.tiers[1].policy.order() == [w(3, 0), f(4), w(4, 1)]
        assert h.tiers[2].policy.order() == [f(3), f(2), f(1), w(3, 1)]
        assert (h.written_blocks[1], h.written_blocks[2], h.dropped_blocks) == (8, 6, 4)
        assert h.residency.dropped == [0, 4]
    assert_group_states_equal(ref, nat)


def test_window_pages_truncated_inside_a_block_reserve_their_slots_hand_traced():
    """A window group's pages that slide out during the prefill take a GPU slot from start to prefill_done (vLLM
    allocates every block a prefill writes and frees the ones outside the window after it), so a prefill that does
    not fit is truncated over them too, in chain order, and the cut may end inside a group block: prefill_done then
    stores part of a block (pcs/cache/_grouphier.c t_insert without whole-block runs), worked out by hand from the
    rules (docs/semantics.md §3.1, §5-§7), both twins.

    Groups: full (f, 1 page a block) and a window of 4 tokens (w, 2 pages; the window is 1 block); GPU 8, CPU 4 pages,
    write-back; no hits (cap 0); each request runs start, prefill_done, finish. First victim first, b.p = block b
    page p:
    r1 [1, 2, 3, 4]: needs f1..f4, w4.0 w4.1 (kept) and w1 w2 w3 (6 pages that slide out) = 12 > 8: truncated,
        chain order f1 w1.0 w1.1 f2 w2.0 w2.1 f3 w3.0 | w3.1 f4 w4.0 w4.1: 8 slots, f1 f2 f3 pinned, w3.0 w2.1 w2.0
        w1.1 w1.0 stored unpinned at prefill_done (last page first, block 3 without its page 1); finish unpins
        f3 f2 f1: GPU w3.0 w2.1 w2.0 w1.1 w1.0 f3 f2 f1.
    r2 [5]: 3 slots (f5 w5.0 w5.1), none free -> w3.0 w2.1 w2.0 down: CPU w3.0 w2.1 w2.0 (written 3, dropped 0);
        GPU w1.1 w1.0 f3 f2 f1 f5 w5.1 w5.0.
    """
    from pcs.cache.grouphier import page_key

    groups = [CacheGroup("full", "full", ("full_attention",), BS, pages=1),
              CacheGroup("win", "window", ("sliding",), BS, 4, pages=2)]
    ref, nat = _pair([8, 4], "back", groups)
    f = lambda b: page_key(b, 0, 0)  # noqa: E731
    w = lambda b, p: page_key(b, 1, p)  # noqa: E731
    for h in (ref, nat):
        a = h.start([1, 2, 3, 4], 4, 0)
        assert a.truncated and a.reserved == [8]
        h.prefill_done(a)
        h.finish(a)
        assert h.tiers[0].policy.order() == [w(3, 0), w(2, 1), w(2, 0), w(1, 1), w(1, 0), f(3), f(2), f(1)]
        a = h.start([5], 1, 0)
        h.prefill_done(a)
        h.finish(a)
        assert h.tiers[0].policy.order() == [w(1, 1), w(1, 0), f(3), f(2), f(1), f(5), w(5, 1), w(5, 0)]
        assert h.tiers[1].policy.order() == [w(3, 0), w(2, 1), w(2, 0)]
        assert (h.written_blocks[1], h.dropped_blocks) == (3, 0)
        assert h.tiers[0].stats.evicted_blocks == 3
    assert_group_states_equal(ref, nat)


def test_runs_cut_by_the_eviction_count_and_touched_hand_traced():
    """An eviction count that ends inside a group block's run takes its first pages and leaves the rest at the head
    of the list; a restore pins the left page and touches the lower copies, which line up again as one run; a
    demoted run whose first page is already below leaves it and follows it (pcs/cache/_grouphier.h: LRU entries are
    runs of one block's pages, split and joined), worked out by hand from the LRU rules (docs/semantics.md §5-§7),
    both twins.

    One full group of 3 pages per block (b.p = block b page p), GPU 7 and CPU 6 pages, write-back; each request runs
    start, prefill_done, finish (pins dropped tail first, so a block's pages are listed 2, 1, 0). First victim first:
    r1 [1, 2]: GPU 2.2 2.1 2.0 1.2 1.1 1.0 (one slot free).
    r2 [3]: 3 slots, 1 free -> 2 victims: 2.2 2.1, the count ending inside block 2's run (2.0 stays at the head);
        CPU 2.2 2.1; GPU 2.0 1.2 1.1 1.0 3.2 3.1 3.0.
    r3 [2], hit 1 block: 2.0 pinned (the head leaves), 2.1 2.2 restored: 2 victims 1.2 1.1 (block 1's run cut,
        1.0 left at the head); the CPU copies touched in reverse (2.2 then 2.1: the same order again), then the
        victims demoted: CPU 2.2 2.1 1.2 1.1; GPU after finish 1.0 3.2 3.1 3.0 2.2 2.1 2.0.
    r4 [4]: 3 victims 1.0 3.2 3.1 (block 3's run cut, 3.0 left); the CPU (2 free) makes room for 3 new pages by
        dropping 2.2 (the run 2.2 2.1 cut after one page); CPU 2.1 1.2 1.1 1.0 3.2 3.1; GPU 3.0 2.2 2.1 2.0 4.2 4.1
        4.0.
    r5 [3], hit 1 block: 3.0 pinned, 3.1 3.2 restored: victims 2.2 2.1 (2.0 left at the head); CPU copies touched
        (3.2 then 3.1); demoting 2.2 2.1: 2.1 is in the CPU (unpinned: it leaves the head and goes last), 2.2 is new,
        so one page goes: 1.2 dropped (block 1's run cut); CPU 1.1 1.0 3.2 3.1 2.2 2.1; GPU 2.0 4.2 4.1 4.0 3.2 3.1
        3.0.
    Written to the CPU 2 + 2 + 3 + 1 = 8 pages, dropped 2 (CPU evicted 2).
    """
    from pcs.cache.grouphier import page_key

    groups = [CacheGroup("full", "full", ("full_attention",), BS, pages=3)]
    ref, nat = _pair([7, 6], "back", groups)
    k = lambda *pages: [page_key(b, 0, p) for b, p in pages]  # noqa: E731
    steps = [
        ([1, 2], 0, k((2, 2), (2, 1), (2, 0), (1, 2), (1, 1), (1, 0)), []),
        ([3], 0, k((2, 0), (1, 2), (1, 1), (1, 0), (3, 2), (3, 1), (3, 0)), k((2, 2), (2, 1))),
        ([2], 1, k((1, 0), (3, 2), (3, 1), (3, 0), (2, 2), (2, 1), (2, 0)), k((2, 2), (2, 1), (1, 2), (1, 1))),
        ([4], 0, k((3, 0), (2, 2), (2, 1), (2, 0), (4, 2), (4, 1), (4, 0)),
         k((2, 1), (1, 2), (1, 1), (1, 0), (3, 2), (3, 1))),
        ([3], 1, k((2, 0), (4, 2), (4, 1), (4, 0), (3, 2), (3, 1), (3, 0)),
         k((1, 1), (1, 0), (3, 2), (3, 1), (2, 2), (2, 1))),
    ]
    for h in (ref, nat):
        for ids, hit, gpu, cpu in steps:
            a = h.start(ids, len(ids), hit)
            assert a.hit_blocks == hit
            h.prefill_done(a)
            h.finish(a)
            assert h.tiers[0].policy.order() == gpu
            assert h.tiers[1].policy.order() == cpu
        assert (h.written_blocks[1], h.dropped_blocks) == (8, 2)
        assert h.tiers[1].stats.evicted_blocks == 2
    assert_group_states_equal(ref, nat)


def test_a_prefill_reserves_every_window_page_it_writes_hand_traced():
    """Every page a prefill writes takes a GPU slot from start to prefill_done, the window pages that slide out
    included (vLLM ``get_num_blocks_to_allocate`` allocates each block a prefill writes; ``remove_skipped_blocks``
    frees the ones outside the window after it), docs/semantics.md §3.1; both twins. Full (1 page) and a window of
    W = 2B tokens (m = ceil((W - 1) / B) = 2 blocks), B = BS.

    One request of 6 blocks, no hit, GPU 100 pages: reserved f1..f6 (6) + window blocks 5, 6 kept (2) + window
    blocks 1..4 written and slid out (4) = 12 pages; prefill_done stores the 4 in their own slots (4 given back),
    so the tier's peak of resident + reserved pages is 12 and all 6 window pages are resident at the end.
    """
    groups = [CacheGroup("full", "full", ("full_attention",), BS, pages=1),
              CacheGroup("win", "window", ("sliding",), BS, 2 * BS, pages=1)]
    ref, nat = _pair([100], "back", groups)
    for h in (ref, nat):
        a = h.start([1, 2, 3, 4, 5, 6], 6, 5)
        assert list(a.reserved) == [12]
        h.prefill_done(a)
        assert list(a.reserved) == [0]
        h.finish(a)
        assert h.tiers[0].stats.peak_used_blocks == 12
        assert h.residency.pages[0] == [6, 6]
    assert_group_states_equal(ref, nat)


def test_gpu_only_dropped_pages_are_the_gpu_evictions_hand_traced():
    """On a GPU-only hierarchy every page dropped was resident on the GPU and evicted from it: ``dropped_blocks``
    equals the GPU tier's ``evicted_blocks`` (docs/json.md: blocks evicted from the last tier), no page is
    dropped that never was stored (docs/semantics.md §3.1, §7); both twins. Full (1 page) and a window of W = 2B
    tokens (m = 2), GPU 6 pages, write-back, no hits.

    r1 [1, 2, 3, 4]: needs f1..f4, w3 w4 (kept) and w1 w2 (slide out) = 8 > 6: truncated, chain order
        f1 w1 f2 w2 f3 w3 kept (6 slots); nothing evicted, nothing dropped (before, w1 w2 were stored unreserved
        into a full GPU: pushed out, never resident, and counted dropped: 2 dropped, 0 evicted).
    r2 [5, 6, 7]: f5 f6 f7, w6 w7 kept, w5 slides out = 6 slots, the 6 unpinned pages of r1 evicted and dropped.
    """
    groups = [CacheGroup("full", "full", ("full_attention",), BS, pages=1),
              CacheGroup("win", "window", ("sliding",), BS, 2 * BS, pages=1)]
    ref, nat = _pair([6], "back", groups)
    for h in (ref, nat):
        a = h.start([1, 2, 3, 4], 4, 0)
        assert a.truncated
        h.prefill_done(a)
        h.finish(a)
        assert (h.dropped_blocks, h.tiers[0].stats.evicted_blocks) == (0, 0)
        a = h.start([5, 6, 7], 3, 0)
        assert not a.truncated
        h.prefill_done(a)
        h.finish(a)
        assert (h.dropped_blocks, h.tiers[0].stats.evicted_blocks, h.tiers[0].stats.overflow_blocks) == (6, 6, 0)
    assert_group_states_equal(ref, nat)


def test_the_running_state_takes_its_slots_from_admission_hand_traced():
    """A state group's running state takes one state's pages of the shared pool from admission to finish, with
    or without output blocks (vLLM's ``MambaManager`` allocates the running state's block from the same block
    pool; docs/semantics.md §3.1), never cached; both twins. Full (1 page) + state every block (2 pages).

    GPU 10 pages, r [5, 7], 2 blocks, cap 1, no extra block: needs f5 f7 (2) + checkpoints s5.0 s5.1 s7.0 s7.1
        (4) + the running state (2) = 8 <= 10: untruncated, 8 reserved, live [2, 1]; grow by 1 block takes
        only f's page (the state holds its one running state): 9; prefill_done fills f5 f7 (7) and stores the
        4 checkpoint pages unpinned (3 left: running state + grown page); finish gives them back: nothing held,
        resident pages [2, 4].
    GPU 7 pages, the same request: 8 > 7: truncated (before, the running state took no slot: 6 <= 7 fitted);
        it reserves the pool's 7 slots (its budget, §5) and keeps f5 s5.0 s5.1 f7 s7.0 s7.1 in chain order (6).
    """
    groups = [CacheGroup("full", "full", ("full_attention",), BS, pages=1),
              CacheGroup("ssm", "state", ("ssm_state",), BS, BS, pages=2)]
    ref, nat = _pair([10], "back", groups)
    for h in (ref, nat):
        a = h.start([5, 7], 2, 1)
        assert (a.truncated, list(a.reserved), list(a.live)) == (False, [8], [2, 1])
        assert h.grow(a, 1) and list(a.reserved) == [9] and list(a.live) == [3, 1]
        h.prefill_done(a)
        assert list(a.reserved) == [3] and h.held_blocks() == 2 + 3
        h.finish(a)
        assert h.held_blocks() == 0 and h.residency.pages[0] == [2, 4]
    assert_group_states_equal(ref, nat)
    ref, nat = _pair([7], "back", groups)
    for h in (ref, nat):
        a = h.start([5, 7], 2, 1)
        assert (a.truncated, list(a.reserved)) == (True, [7])
        h.prefill_done(a)
        h.finish(a)
        assert h.held_blocks() == 0 and h.residency.pages[0] == [2, 4]
    assert_group_states_equal(ref, nat)


def test_a_state_checkpoint_written_by_the_prefill_needs_its_slots_hand_traced():
    """A state group's checkpoint that a prefill writes takes its pages' slots like any page it writes (vLLM's
    ``MambaManager`` allocates the state blocks of the tokens a step computes; docs/semantics.md §3.1, §5), so a
    request whose full page and state do not fit the GPU is truncated (as a full-attention model's request is);
    both twins. Full (f, 1 page) and a state checkpointed every block (s, 3 pages), GPU 3 pages, no output block.

    r1 [5], 1 block, cap 0: needs f5 + s5.0 s5.1 s5.2 = 4 > 3: truncated, chain order f5 s5.0 s5.1 kept (3 slots):
        a checkpoint missing a page, which no hit can read.
    r2 [5, 7], cap 1: f5 is resident (full lead 1) but the checkpoint at block 1 lacks s5.2: the state rule refuses,
        hit 0, lost_blocks 1; it needs f7 and the checkpoints at blocks 1 and 2 (6 pages) with 2 slots (f5 pinned):
        truncated.
    """
    groups = [CacheGroup("full", "full", ("full_attention",), BS, pages=1),
              CacheGroup("ssm", "state", ("ssm_state",), BS, BS, pages=3)]
    ref, nat = _pair([3], "back", groups)
    for h in (ref, nat):
        a = h.start([5], 1, 0)
        assert a.truncated and list(a.reserved) == [3]
        h.prefill_done(a)
        h.finish(a)
        assert h.residency.pages[0] == [1, 2]
        a = h.start([5, 7], 2, 1)
        assert (a.hit_blocks, a.lost_blocks, a.truncated) == (0, 1, True)
        h.prefill_done(a)
        h.finish(a)
    assert_group_states_equal(ref, nat)


def test_a_chunk_group_holds_what_vllm_holds_while_decoding_hand_traced():
    """A running request holds at most 1 + ceil((C - gcd(C, B)) / B) blocks of a chunked-local group
    (pcs.cache.groups.chunk_hold_blocks; vLLM frees the blocks before the chunk of the next token,
    ``ChunkedLocalAttentionManager.get_num_skipped_tokens``, before it allocates); both twins. Full (1 page) +
    chunk C = 8 (1 page), B = 4: B divides C, so 8 / 4 = 2 blocks (pcs held ceil(C / B) + 1 = 3 before).

    vLLM, prompt 12 tokens then decoding: with n = 12 .. 15 computed the chunk is [8, 16), blocks 2 and 3 (2
    blocks); at n = 16 it frees blocks 0..3 and holds block 4 alone: at most 2.
    pcs, r [1, 2, 3] (3 blocks, no hit): full computes 3 pages, the chunk group writes 3 (block 0, 1 slide out at
    prefill end) and keeps block 2: reserved 6, live [3, 1]. grow 1: full +1, chunk 1 -> 2 (its hold): 8,
    [4, 2]. grow 1 again: full +1, the chunk group already holds 2 (the block sliding out gives its slot): 9,
    [5, 2] (10 and [5, 3] under ceil(C / B) + 1).
    """
    groups = [CacheGroup("full", "full", ("full_attention",), BS, pages=1),
              CacheGroup("chunk", "chunk", ("chunked_local",), BS, 8, pages=1)]
    assert BS == 4 and groups[1].hold_blocks == 2
    ref, nat = _pair([100], "back", groups)
    for h in (ref, nat):
        a = h.start([1, 2, 3], 3, 3)
        assert (a.truncated, list(a.reserved), list(a.live)) == (False, [6], [3, 1])
        assert h.grow(a, 1) and (list(a.reserved), list(a.live)) == ([8], [4, 2])
        assert h.grow(a, 1) and (list(a.reserved), list(a.live)) == ([9], [5, 2])
        h.prefill_done(a)
        h.finish(a)
        assert h.held_blocks() == 0
    assert_group_states_equal(ref, nat)
