"""The new eviction policies against the papers: hand-worked streams and random streams.

Each pcs policy runs on a flat key stream through one tier, sequential, one
block per request (``helpers.flat_hits``); the references in
``tests/policy_reference.py`` are flat caches written from the papers (not
from pcs or libCacheSim). Expected values below are worked by hand in the
comments (lists: tail / LRU / oldest first).
"""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import SETTINGS, flat_hits
from policy_reference import REFERENCES


def _hits(stream, flags):
    return [k for k, f in zip(stream, flags) if f]


def test_sieve_by_hand():
    # C = 3, queue tail..head. 1 2 3 -> [1 2 3]; 1 hits (visited). 4: hand at the tail 1, visited ->
    # clear, move to 2 (unvisited): evict 2, hand -> 3; [1 3 4]. 2: hand 3 unvisited: evict 3,
    # hand -> 4; [1 4 2]. 5: evict 4, hand -> 2; [1 2 5]. 1 hits. (LRU: 5 evicts 1, so 1 misses.)
    stream = [1, 2, 3, 1, 4, 2, 5, 1]
    ref = REFERENCES["sieve"](3)
    for flags in (flat_hits("sieve", 3, stream), [ref.get(k) for k in stream]):
        assert _hits(stream, flags) == [1, 1]
    assert ref.queue == [1, 2, 5] and ref.hand == 2
    assert _hits(stream, flat_hits("lru", 3, stream)) == [1]


def test_arc_by_hand():
    # C = 2, p = 0. 1, 2 -> T1 [1 2]. 1 hits -> T2 [1], T1 [2]. 3 (case IV B, full): REPLACE, |T1| = 1 > p
    # -> 2 to B1; T1 [3]. 2 in B1: p = 0 + 1 = 1; REPLACE: |T1| = 1 = p, not from B2 -> T2's 1 to B2;
    # T2 [2]. 1 in B2: p = 1 - 1 = 0; REPLACE: |T1| = 1 > 0 -> 3 to B1; T2 [2 1]. 3 in B1: p = 1;
    # REPLACE: T1 empty -> 2 to B2; T2 [1 3]. 2 in B2: p = 0; REPLACE -> 1 to B2; T2 [3 2].
    stream = [1, 2, 1, 3, 2, 1, 3, 2]
    ref = REFERENCES["arc"](2)
    for flags in (flat_hits("arc", 2, stream), [ref.get(k) for k in stream]):
        assert flags == [False, False, True, False, False, False, False, False]
    assert (ref.p, list(ref.t2), list(ref.b2)) == (0, [3, 2], [1])


def test_twoq_by_hand():
    # C = 4: Kin = 1, Kout = 2. 1 2 3 4 -> A1in [1 2 3 4]. 5: |A1in| 4 > 1: 1 out (A1out [1]).
    # 1 in A1out: 2 out (A1out [2]), Am [1]. 2 in A1out: 3 out (A1out [3]), Am [1 2]. 1 hits in Am.
    # 6: A1in [4 5] > 1: 4 out (A1out [3 4]); A1in [5 6].
    stream = [1, 2, 3, 4, 5, 1, 2, 1, 6]
    ref = REFERENCES["2q"](4)
    for flags in (flat_hits("2q", 4, stream), [ref.get(k) for k in stream]):
        assert _hits(stream, flags) == [1]
    assert (list(ref.a1in), list(ref.a1out), list(ref.am)) == ([5, 6], [3, 4], [2, 1])


def test_s3fifo_by_hand():
    # C = 20: S 2 blocks, M 18, G 18 keys. 1 2 -> S [1 2]; S full before any eviction, so 3..20 -> M.
    # 21: S >= 2 -> evictS: 1 (freq 0) to G; S [2 21]. 1 in G: evictS: 2 to G; 1 -> M (19 > 18).
    # 3 hits (freq 1). 22: S 1 < 2 -> evictM: 3 (freq 1) back with 0, 4 (freq 0) evicted; S [21 22].
    # 4 (not in G) misses: evictS: 21 to G; S [22 4].
    stream = list(range(1, 21)) + [21, 1, 3, 22, 4]
    ref = REFERENCES["s3fifo"](20)
    for flags in (flat_hits("s3fifo", 20, stream), [ref.get(k) for k in stream]):
        assert _hits(stream, flags) == [3]
    assert (list(ref.S), list(ref.G)) == ([22, 4], [2, 21])
    assert set(ref.M) == set(range(5, 21)) | {1, 3}


def test_lfu_and_dynamic_aging_by_hand():
    # C = 2, stream 1 1 1 2 3 2 4.
    # plain: counts 1:3, 2:1; 3 evicts 2; 2 evicts 3 (count 1 < 3); 4 evicts 2 -> {1, 4}.
    # LFU-DA (K = count + L): 1: K 3, 2: K 1; 3 evicts 2 (L = 1), K(3) = 2; 2 evicts 3 (L = 2), K(2) = 3;
    # 4: K(1) = K(2) = 3, 1 got its K first -> 1 goes (L = 3) -> {2, 4}: the old favourite aged out.
    stream = [1, 1, 1, 2, 3, 2, 4]
    plain, aged = REFERENCES["lfu:aging=none"](2), REFERENCES["lfu"](2)
    assert [plain.get(k) for k in stream] == [False, True, True, False, False, False, False]
    assert [aged.get(k) for k in stream] == [False, True, True, False, False, False, False]
    assert set(plain.count) == {1, 4} and set(aged.count) == {2, 4} and aged.L == 3
    assert flat_hits("lfu:aging=none", 2, stream + [1]) == [False, True, True, False, False, False, False, True]
    assert flat_hits("lfu", 2, stream + [1]) == [False, True, True, False, False, False, False, False]


streams = st.lists(st.integers(0, 14), min_size=1, max_size=150)


@SETTINGS
@pytest.mark.parametrize("spec", ["sieve", "arc", "2q", "lfu:aging=none", "lfu"])
@given(capacity=st.integers(1, 12), stream=streams)
def test_random_streams_equal_the_paper(spec, capacity, stream):
    ref = REFERENCES[spec](capacity)
    assert flat_hits(spec, capacity, stream) == [ref.get(k) for k in stream]


@SETTINGS
@given(capacity=st.sampled_from([20, 30, 40]), stream=st.lists(st.integers(0, 60), min_size=1, max_size=300))
def test_random_streams_equal_the_paper_s3fifo(capacity, stream):
    # C >= 20: the library admits nothing into S when int(0.1 C) <= 1 (docs/semantics.md §8)
    ref = REFERENCES["s3fifo"](capacity)
    assert flat_hits("s3fifo", capacity, stream) == [ref.get(k) for k in stream]
