"""The streamed one-capacity LRU scan (pcs.engine.lruscan) against independent references.

References: LRU stack depths (pcs.curves.stackdist, a Fenwick-tree algorithm:
a block is resident at capacity C iff its depth at the request's start is
< C, Mattson et al. 1970) for ``lead``; pcs.blocks.single_sequence_hits (a
Python set walk) for ``seen`` / ``ideal``; the two kernels against each other
(return codes included); one hand-worked trace.
"""
from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pcs.blocks import BlockRules, single_sequence_hits
from pcs.curves import stackdist
from pcs.engine import fastpath
from pcs.engine.lruscan import REASONS, NotChained, SequentialLru
from pcs.engine.chunks import rule_columns
from helpers import per_trace
from helpers import arbitrary_traces, chained_traces, make_requests, rules_strategy

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KERNELS = ["python"] + (["c"] if stackdist.available_kernel() == "c" else [])
IDEAL = BlockRules(cache_partial_blocks=True, recompute_last_token=False)


def columns(reqs, rules):
    """(keys, offsets, n, cap, prompt) of a request list, every id kept."""
    lens = np.array([len(r.block_hashes) for r in reqs], np.int64)
    offsets = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
    keys = np.concatenate([np.asarray(r.block_hashes, np.uint64) for r in reqs])
    prompt = np.array([r.prompt_tokens for r in reqs], np.int64)
    n, cap, _ = rule_columns(prompt, lens, np.zeros_like(prompt), reqs[0].block_size, rules)
    return keys, offsets, n, cap, prompt


def depth_leads(keys, offsets, n, c):
    """Per request, leading cacheable blocks with 0 <= depth < c (the stack-depth reference)."""
    keep = np.concatenate([np.arange(offsets[r], offsets[r] + n[r]) for r in range(len(n))]).astype(np.int64)
    flat_off = np.concatenate(([0], np.cumsum(n))).astype(np.int64)
    d, _ = stackdist.stack_depths(keys[keep], flat_off, "python")
    out = []
    for r in range(len(n)):
        ok = (d[flat_off[r]:flat_off[r + 1]] >= 0) & (d[flat_off[r]:flat_off[r + 1]] < c)
        out.append(int(np.argmin(ok)) if not ok.all() else int(ok.shape[0]))
    return out


def run_scan(kernel, keys, offsets, n, c, split=None, check=False):
    """Feed the requests in two batches cut at ``split`` (None: one batch)."""
    lru = SequentialLru(c, kernel, check)
    cuts = [0, len(n)] if split is None else [0, split, len(n)]
    parts = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        parts.append(lru.feed(keys[offsets[a]:offsets[b]], offsets[a:b + 1] - offsets[a], n[a:b]))
    return [np.concatenate([p[k] for p in parts]) for k in range(3)]


def check_against_references(reqs, rules, c, kernel, split=None):
    keys, offsets, n, cap, prompt = columns(reqs, rules)
    lead, seen, ideal = run_scan(kernel, keys, offsets, n, c, split)
    assert lead.tolist() == depth_leads(keys, offsets, n, c)
    bs = reqs[0].block_size
    single = fastpath._single(np.minimum(cap, seen), prompt, bs)
    assert single == single_sequence_hits(reqs, rules)
    assert fastpath._single(ideal, prompt, bs) == single_sequence_hits(reqs, IDEAL)


@SETTINGS
@given(st.one_of(chained_traces(), arbitrary_traces()), rules_strategy, st.integers(0, 12), st.data())
def test_scan_matches_stack_depths_and_single_sequence(reqs, rules, c, data):
    split = data.draw(st.integers(0, len(reqs)))
    for kernel in KERNELS:
        check_against_references(reqs, rules, c, kernel, split)


@SETTINGS
@given(st.one_of(chained_traces(), arbitrary_traces()), rules_strategy, st.integers(0, 12), st.data())
def test_scan_leaving_direct_mode_matches_references(reqs, rules, c, data):
    # The compiled scan indexes slots by id while every id is below max(2**20, 2 x the id count); the first
    # batch holding a larger id (here: the requests from `split` on, ids + shift) moves them into a hash table.
    split = data.draw(st.integers(0, len(reqs)))
    shift = np.uint64(data.draw(st.sampled_from([2**20, 2**40, 2**64 - 64])))
    reqs = [dataclasses.replace(r, block_hashes=r.block_hashes + shift) if i >= split else r
            for i, r in enumerate(reqs)]
    for kernel in KERNELS:
        check_against_references(reqs, rules, c, kernel, split)


@SETTINGS
@given(arbitrary_traces(), rules_strategy, st.integers(0, 6))
def test_kernels_agree_on_return_codes(reqs, rules, c):
    keys, offsets, n, _, _ = columns(reqs, rules)
    outcomes = []
    for kernel in KERNELS:
        try:
            outcomes.append([x.tolist() for x in run_scan(kernel, keys, offsets, n, c, check=True)])
        except NotChained as exc:
            outcomes.append(str(exc))
    assert all(o == outcomes[0] for o in outcomes)


def test_large_random_stream_grows_table_and_slides_bitmap():
    # 30,000 requests of up to 8 ids from 20,000 keys: > 2,048 distinct keys (the table
    # doubles from 4,096 slots), > 65,536 stamps (the live bitmap slides / grows)
    rng = np.random.default_rng(7)
    lens = rng.integers(0, 9, 30_000)
    offsets = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
    keys = rng.integers(0, 20_000, int(offsets[-1])).astype(np.uint64)
    n = np.maximum(0, lens - rng.integers(0, 2, lens.shape[0]))
    for c in (0, 50, 5_000, 10**9):
        outs = [run_scan(k, keys, offsets, n, c, split=12_345) for k in KERNELS]
        assert all(np.array_equal(a, b) for o in outs for a, b in zip(o, outs[0]))
        assert outs[0][0].tolist() == depth_leads(keys, offsets, n, c)


def test_hand_worked():
    # block size 4, all ids cacheable, capacity 2; requests (ids): [1 2], [1 3], [1 2], [2 4]
    # r0: nothing resident -> lead 0; stamps 2 then 1: recency (MRU first) 1 2
    # r1: 1 resident, 3 new -> lead 1; stamps 3 (evicts 2), 1: recency 1 3
    # r2: 1 resident, 2 evicted -> lead 1; seen (infinite cache) 2; stamps 2 (evicts 3), 1: 1 2
    # r3: 2 resident, 4 new -> lead 1, seen 1, ideal 1
    reqs = make_requests([([1, 2], 8), ([1, 3], 8), ([1, 2], 8), ([2, 4], 8)])
    keys, offsets, n, _, _ = columns(reqs, IDEAL)
    for kernel in KERNELS:
        lead, seen, ideal = run_scan(kernel, keys, offsets, n, 2)
        assert (lead.tolist(), seen.tolist(), ideal.tolist()) == ([0, 1, 1, 1], [0, 1, 2, 1], [0, 1, 2, 1])


def test_partial_ids_count_for_ideal_only():
    # bs 4, full blocks only: r0 P=6 ids [1, 9]: 9 is partial (not cacheable) but looked up
    # r1 P=8 ids [1, 9]: both full now; 9 was never stamped -> seen 1, ideal 2; at C=4 lead 1
    reqs = make_requests([([1, 9], 6), ([1, 9], 8)])
    keys, offsets, n, _, _ = columns(reqs, BlockRules())
    assert n.tolist() == [1, 2]
    for kernel in KERNELS:
        lead, seen, ideal = run_scan(kernel, keys, offsets, n, 4)
        assert (lead.tolist(), seen.tolist(), ideal.tolist()) == ([0, 1], [0, 1], [0, 2])


def test_trace(exact_trace):
    from pcs.trace import open_trace

    tr = open_trace(exact_trace)
    reqs = list(tr)
    rules = BlockRules()
    keys, offsets, n, _, _ = columns(reqs, rules)
    flat_off = np.concatenate(([0], np.cumsum(n))).astype(np.int64)
    keep = np.concatenate([np.arange(offsets[r], offsets[r] + n[r]) for r in range(len(n))]).astype(np.int64)
    d, _ = stackdist.stack_depths(keys[keep], flat_off, stackdist.available_kernel())
    for c in per_trace(exact_trace, sample=(100, 1_400), mooncake=(100, 17_522)):
        sc = fastpath.scan(tr, c, rules)
        ok = (d >= 0) & (d < c)  # leading run of resident blocks, vectorised
        bad = np.flatnonzero(~ok)
        first = np.append(bad, ok.shape[0])[np.searchsorted(bad, flat_off[:-1])]
        assert np.array_equal(sc.prefix_hit_blocks, np.minimum(first, flat_off[1:]) - flat_off[:-1])
        single, ideal = fastpath.single_results(sc)
        assert single == single_sequence_hits(reqs, rules)
        assert ideal == single_sequence_hits(reqs, IDEAL)


def test_bad_input():
    with pytest.raises(ValueError, match="capacity must be >= 0"):
        SequentialLru(-1, "python")
    for kernel in KERNELS:
        with pytest.raises(ValueError, match="offsets"):
            SequentialLru(2, kernel).feed(np.array([1, 2], np.uint64), np.array([0, 2], np.int64),
                                          np.array([3], np.int64))


@pytest.mark.skipif("c" not in KERNELS, reason="the compiled scan is not built")
@pytest.mark.parametrize("lower", [None, 2])
@pytest.mark.parametrize("hint, big", [(1_000_000, 1_500_000), (0, 600_000)])
def test_hand_worked_on_mapped_arrays_that_grow_and_move(lower, hint, big):
    # test_hand_worked's requests with ids renamed 1 -> 3, 2 -> big, 3 -> 2**40, 4 -> 9 (an LRU sees only which ids
    # repeat, so the values stay). A hint of 1,000,000 ids: the direct array (8 B an entry, 1,125,000 entries) and
    # with a lower tier its last-time array are mapped (>= 4 MB); r0's id 1,500,000 (below the limit, 2 x the hint)
    # grows both in place. No hint: 4,096 entries on the heap; r0's id 600,000 (below the limit, 2**20) moves them
    # into mapped arrays (675,000 entries). r1's id 2**40 moves every id into a hashed table, the arrays freed.
    # Two tiers (GPU 2 slots, the lower 2, write-back): r0 none; r1 finds 1 on the GPU (3 evicts 2 down);
    # r2 finds 1 on the GPU and 2 below: 2 hit blocks; r3 finds 2 on the GPU: 1.
    lru = SequentialLru(2, "c", False, hint, lower)
    got = feed_renamed_hand_worked(lru, big)
    assert got[:3] == [[0, 1, 1, 1], [0, 1, 2, 1], [0, 1, 2, 1]]
    if lower is not None:
        assert got[3] == [0, 1, 2, 1] and lru.tiers_hold()


def feed_renamed_hand_worked(lru, big: int) -> list:
    """test_hand_worked's four requests of 2 ids, the ids renamed 1 -> 3, 2 -> ``big``, 3 -> 2**40, 4 -> 9, fed to
    the compiled scan ``lru`` in three feeds (r0; r1; r2 and r3), every id cacheable (max hit 2); the feeds'
    columns joined, as lists (lead, seen, ideal, then with a lower tier the baseline)."""
    keys = np.array([3, big, 3, 2**40, 3, big, big, 9], np.uint64)
    offsets = np.array([0, 2, 4, 6, 8], np.int64)
    n = np.array([2, 2, 2, 2], np.int64)
    parts = [lru.feed(keys[offsets[a]:offsets[b]], offsets[a:b + 1] - offsets[a], n[a:b], n[a:b])
             for a, b in ((0, 1), (1, 2), (2, 4))]
    return [np.concatenate([p[k] for p in parts]).tolist() for k in range(len(parts[0]))]


@pytest.mark.skipif("c" not in KERNELS, reason="the compiled scan is not built")
@pytest.mark.parametrize("shift", [0, 2**40])
def test_hand_worked_two_tiers_long_requests(shift):
    # Two tiers, GPU 40,000 slots, the lower tier 100,000, write-back; three requests of 30,000 ids each, every id
    # cacheable, max hit 30,000: A = ids 0 .. 29,999, B = ids 100,000 .. 129,999, then A again. One request's
    # release (30,000 new times) outgrows the scan's time -> id log (4,096 entries at first) and its live bitmap
    # (65,536 bits: 90,000 GPU times in all) at once; B's reserve evicts 20,000 victims in one loop and demotes them.
    # A: nothing resident, lead 0, baseline 0; released tail first (id 29,999 oldest, id 0 newest): 30,000 on GPU.
    # B: 30,000 new, budget 30,000: 30,000 + 30,000 - 40,000 = 20,000 victims, the oldest A times: ids 29,999 down
    #    to 10,000, demoted below (room for 100,000). lead 0, seen 0, baseline 0.
    # A again: ids 0 .. 9,999 still on the GPU (a prefix): lead 10,000; ids 10,000 .. 29,999 below: the lower run
    #    reaches 30,000, hits min(30,000, 30,000) = 30,000 (20,000 restored); seen 30,000, ideal 30,000.
    # shift 2**40: the same ids past the direct array's limit (the hashed table's victims and releases).
    a = np.arange(30_000, dtype=np.uint64) + np.uint64(shift)
    keys = np.concatenate([a, np.arange(100_000, 130_000, dtype=np.uint64) + np.uint64(shift), a])
    offsets = np.array([0, 30_000, 60_000, 90_000], np.int64)
    n = np.full(3, 30_000, np.int64)
    lru = SequentialLru(40_000, "c", False, 0, 100_000)
    lead, seen, ideal, base = (x.tolist() for x in lru.feed(keys, offsets, n, n))
    assert (lead, seen, ideal, base) == ([0, 0, 10_000], [0, 0, 30_000], [0, 0, 30_000], [0, 0, 30_000])
    assert lru.tiers_hold()


@pytest.mark.skipif("c" not in KERNELS, reason="the compiled scan is not built")
@pytest.mark.parametrize("shift", [0, 2**40])
def test_hand_worked_two_tiers_lower_evictions_over_words(shift):
    # Two tiers, GPU 100 slots, the lower tier 60, write-back; every id cacheable, max hit = the request's ids.
    # A = ids 0 .. 99, B = ids 1000 .. 1099; requests A, B, A, B, A. Lower-tier times start at 64, 64 to a word.
    # A: all new: lead 0, baseline 0; released tail first (99 oldest, 0 newest).
    # B: all new; 100 victims (A's ids 99 .. 0, oldest first) demoted at lower times 64 .. 163; 100 > 60: the 40
    #    oldest (99 .. 60, times 64 .. 103) dropped. Baseline 0.
    # A: not on the GPU (lead 0), below: ids 0 .. 59 (60 is not): 60 hits, all restored (touched 59 .. 0 at times
    #    164 .. 223); 100 victims (B's ids) at 224 .. 323; 160 > 60: the 100 oldest live times go -- nothing live in
    #    the word of 64 .. 127 (104 .. 127 died at the touches), 28 in 128 .. 191, all 64 of 192 .. 255, 8 of
    #    256 .. 319: times 164 .. 263, the 60 restored and B's 40 oldest victims (1099 .. 1060). Baseline 60.
    # B: below: 1000 .. 1059: 60 hits (the same steps, the roles swapped); A again: 60.
    # shift 2**40: the same ids in the hashed table. seen: A 0, B 0, then every id stamped before: 100.
    a = np.arange(100, dtype=np.uint64) + np.uint64(shift)
    b = a + np.uint64(1000)
    keys = np.concatenate([a, b, a, b, a])
    offsets = np.arange(0, 501, 100, dtype=np.int64)
    n = np.full(5, 100, np.int64)
    lru = SequentialLru(100, "c", False, 0, 60)
    lead, seen, ideal, base = (x.tolist() for x in lru.feed(keys, offsets, n, n))
    assert (lead, seen, ideal, base) == ([0] * 5, [0, 0, 100, 100, 100], [0, 0, 100, 100, 100], [0, 0, 60, 60, 60])
    assert lru.tiers_hold()


@pytest.mark.parametrize("kernel", KERNELS)
def test_hand_worked_checks_after_every_run_ended(kernel):
    # Capacity 4; r0 [1 2] stamps both. Then, after a new id (every leading run ends there): [3 1] finds 1 resident
    # after the miss -> code 2 (not chained); [3 4 3] repeats 3 -> code 1. Without the check, [3 1]'s lead is 0,
    # seen 0 (3 was never stamped), ideal 0; with a lower tier the two-tier baseline's premise is broken.
    def feed(lru, ids):
        keys = np.array(ids, np.uint64)
        return lru.feed(keys, np.array([0, len(ids)], np.int64), np.array([len(ids)], np.int64),
                        *(() if not lru.tiers else (np.array([len(ids)], np.int64),)))
    for ids, code in (([3, 1], 2), ([3, 4, 3], 1)):
        lru = SequentialLru(4, kernel, True)
        feed(lru, [1, 2])
        with pytest.raises(NotChained, match=re.escape(REASONS[code])):
            feed(lru, ids)
    lru = SequentialLru(4, kernel, False)
    feed(lru, [1, 2])
    assert [x.tolist() for x in feed(lru, [3, 1])] == [[0], [0], [0]]
    if kernel == "c":
        lru = SequentialLru(4, "c", False, 0, 4)
        feed(lru, [1, 2])
        assert [x.tolist() for x in feed(lru, [3, 1])] == [[0], [0], [0], [-1]] and not lru.tiers_hold()


@pytest.mark.parametrize("kernel", KERNELS)
def test_hand_worked_ids_whose_or_passes_the_array(kernel):
    # A hint of 10,000 ids: the direct array has 11,250 entries. Ids 8,192 and 4,000: their OR (12,192) passes the
    # array's end, their largest (8,192) does not -- the scan then finds the largest id and keeps the array.
    # Capacity 2, requests [8192 4000], [8192 4000], [4000 7]: r0 lead 0; r1 both resident: lead 2, seen 2,
    # ideal 2; r2 4000 resident, 7 new: lead 1, seen 1, ideal 1.
    keys = np.array([8192, 4000, 8192, 4000, 4000, 7], np.uint64)
    offsets = np.array([0, 2, 4, 6], np.int64)
    lru = SequentialLru(2, kernel, True, 10_000)
    lead, seen, ideal = (x.tolist() for x in lru.feed(keys, offsets, np.full(3, 2, np.int64)))
    assert (lead, seen, ideal) == ([0, 2, 1], [0, 2, 1], [0, 2, 1])
