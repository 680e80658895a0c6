"""Hand-traced routing: which instance each request goes to, and why (docs/semantics.md §17).

Block size 4, full blocks, no last-token cap (UNIT_RULES): every id of a
request may hit and is stored. Service times are given per request, so the
load in flight is known by hand.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from pcs.blocks import BlockRules
from pcs.fleet.index import CacheIndex
from pcs.fleet.route import route
from pcs.fleet.routers import parse_router, router_names
from pcs.fleet.routers.session import splitmix64
from helpers import batch

RULES = BlockRules(cache_partial_blocks=True, recompute_last_token=False)
BIG = 10 ** 6


def go(name, rows, n, service=None, stale=0.0, cap=BIG, sessions=None, parents=None):
    b = batch(rows, sessions, parents=parents)
    svc = np.full(len(rows), 100.0) if service is None else np.array(service, dtype=np.float64)
    return route(b, RULES, parse_router(name, n), CacheIndex([cap] * n, stale), svc).tolist()


def test_round_robin():
    # request k -> k mod 2, whatever the blocks
    assert go("round-robin", [(0, [1])] * 5, 2) == [0, 1, 0, 1, 0]


def test_random_is_numpy_pcg64_seeded():
    # one draw of default_rng(seed).integers(3) per request, in order (numpy's documented generator)
    want = np.random.default_rng(7).integers(3, size=6).tolist()
    assert go("random:seed=7", [(0, [1])] * 6, 3) == want
    assert go("random:seed=7", [(0, [1])] * 6, 3) == want          # deterministic
    assert go("random", [(0, [1])] * 6, 3) == np.random.default_rng(0).integers(3, size=6).tolist()


def test_least_loaded_requests_in_flight():
    # service: r0 10 s, r1 1 s, r2 10 s, r3 1 s, r4 -
    # r0 t=0: in flight [0,0,0] -> 0 (lowest index); busy until 10
    # r1 t=1: [1,0,0] -> 1; until 2
    # r2 t=2: r1 ended at 2 (retired at <= now) -> [1,0,0] -> 1; until 12
    # r3 t=3: [1,1,0] -> 2; until 4
    # r4 t=5: r3 retired -> [1,1,0] -> 2
    rows = [(0, [1]), (1, [2]), (2, [3]), (3, [4]), (5, [5])]
    assert go("least-loaded", rows, 3, service=[10, 1, 10, 1, 1]) == [0, 1, 1, 2, 2]


def test_least_loaded_by_tokens():
    # prompts 40, 4, 4 tokens, all in flight: r0 -> 0; r1: tokens [40,0] -> 1; r2: [40,4] -> 1
    rows = [(0, [1] * 10), (0, [2]), (0, [3])]
    assert go("least-loaded:by=tokens", rows, 2) == [0, 1, 1]
    # by requests r2 sees [1,1] -> 0
    assert go("least-loaded", rows, 2) == [0, 1, 0]


def test_splitmix64_reference_vector():
    # SplitMix64 seeded with 0: first output 0xE220A8397B1DCDAF (Steele et al.; Vigna's splitmix64.c)
    assert splitmix64(0) == 0xE220A8397B1DCDAF


def test_session_sticky_and_error_without_ids():
    sessions = [7, 8, 7, 9, 8, 7]
    got = go("session", [(k, [k]) for k in range(6)], 4, sessions=sessions)
    assert got == [splitmix64(s) % 4 for s in sessions]
    assert got[0] == got[2] == got[5] and got[1] == got[4]
    with pytest.raises(ValueError, match="session ids"):
        go("session", [(0, [1])], 2)


def test_session_keys_on_the_root_chat_of_a_bailian_conversation():
    # hostile F2. Bailian: session_id holds the per-turn chat_id, parent_id the parent_chat_id. Chats 1 -> 3 -> 5
    # are one conversation (root 1), 2 and 4 stand alone, 9 names a parent (8) that never came: its own root.
    # Every turn keys on its root: [1, 2, 1, 4, 1, 9] -> splitmix64(root) mod 4.
    chats, parents = [1, 2, 3, 4, 5, 9], [-1, -1, 1, -1, 3, 8]
    got = go("session", [(k, [k]) for k in range(6)], 4, sessions=chats, parents=parents)
    assert got == [splitmix64(s) % 4 for s in [1, 2, 1, 4, 1, 9]]


def test_session_less_requests_go_to_the_least_loaded_instance():
    # hostile F6. Session -1 = none (the readers' value): such a request goes to the instance with the fewest
    # requests in flight (lowest index on a tie), not to splitmix64(-1) mod N. 3 instances, all in flight
    # (service 100 s): r0 session 5 -> s5 = splitmix64(5) % 3; r1, r2, r3 session -1 each take the emptiest.
    s5 = splitmix64(5) % 3
    rest = [i for i in range(3) if i != s5]      # r1 -> the lower empty one, r2 -> the other empty one
    got = go("session", [(0, [k]) for k in range(4)], 3, sessions=[5, -1, -1, -1])
    assert got[:3] == [s5, rest[0], rest[1]]
    assert got[3] == 0                           # all three hold 1 request: the lowest index
    # a trace whose every row is -1 has no sessions: refused like a trace without the column
    with pytest.raises(ValueError, match="session ids"):
        go("session", [(0, [1]), (0, [2])], 2, sessions=[-1, -1])


def test_consistent_hash_same_first_k_blocks_same_instance():
    # k=2: key = id of block 2; [1,2,...] requests share it whatever follows
    rows = [(0, [1, 2, 3]), (0, [1, 2, 9, 9]), (0, [1, 2])]
    got = go("consistent-hash:k=2", rows, 8)
    assert got[0] == got[1] == got[2]
    # k=1 on a trace whose every request starts with id 0 (Mooncake): one instance gets everything
    assert len(set(go("consistent-hash:k=1", [(0, [0, k]) for k in range(1, 30)], 4))) == 1


def test_consistent_hash_adding_an_instance_moves_keys_only_to_it():
    # the ring property (Karger et al.): going from 4 to 5 instances, a key either stays or moves to instance 4
    rows = [(0, [k]) for k in range(1, 400)]
    four, five = go("consistent-hash:k=1", rows, 4), go("consistent-hash:k=1", rows, 5)
    moved = [b for a, b in zip(four, five) if a != b]
    assert moved and set(moved) == {4}


def _ring_owner(key, n, vnodes=100):
    """The documented rule, by hand: points splitmix64(i * 2**32 + v) for instance i, v < vnodes; the key's hash
    splitmix64(key XOR 0xC2B2AE3D27D4EB4F); the owner of the first point at or after it, wrapping to the lowest."""
    points = sorted((splitmix64((i << 32) + v), i) for i in range(n) for v in range(vnodes))
    h = splitmix64(key ^ 0xC2B2AE3D27D4EB4F)
    return next((i for p, i in points if p >= h), points[0][1])


def test_consistent_hash_small_keys_spread_over_the_ring():
    # SplitMix64's first output from seed 0 (Steele et al.'s reference generator): the finaliser the ring uses
    assert splitmix64(0) == 0xE220A8397B1DCDAF
    # keys below vnodes used to hash onto instance 0's own points (key k == point input 0 * 2**32 + k): every
    # small key went to instance 0 whatever N. The tester's keys 3, 43, 58 at N = 2, 8, 4096:
    for n in (2, 8, 4096):
        got = go("consistent-hash:k=1", [(0, [3]), (0, [43]), (0, [58])], n)
        assert got == [_ring_owner(k, n) for k in (3, 43, 58)]
        assert got != [0, 0, 0]
    # 99 small keys on 8 instances (12.4 each on average): most instances get some, none gets a third
    rows = [(0, [k]) for k in range(1, 100)]
    got = go("consistent-hash:k=1", rows, 8)
    assert got == [_ring_owner(k, 8) for k in range(1, 100)]
    assert len(set(got)) >= 6 and max(got.count(i) for i in range(8)) < 33
    # one point per instance, two instances: the key goes to the first point clockwise of its hash
    p0, p1 = splitmix64(0), splitmix64(1 << 32)
    for k in (0, 1, 5, 10 ** 6):
        h = splitmix64(k ^ 0xC2B2AE3D27D4EB4F)
        first = [p for p in sorted((p0, p1)) if p >= h]
        want = {p0: 0, p1: 1}[first[0] if first else min(p0, p1)]
        assert go("consistent-hash:k=1,vnodes=1", [(0, [k])], 2) == [want]


def test_prefix_longest_match_then_load():
    # r0 [1,2,3]: nothing cached anywhere, in flight [0,0] -> 0
    # r1 [7,8]:   matches [0,0], in flight [1,0] -> 1
    # r2 [1,2,9]: matches [2,0] -> 0
    # r3 [7,8,5]: matches [0,2] -> 1
    # r4 [4]:     matches [0,0], in flight [2,2] -> 0 (lowest index)
    rows = [(0, [1, 2, 3]), (0, [7, 8]), (1, [1, 2, 9]), (1, [7, 8, 5]), (2, [4])]
    assert go("prefix", rows, 2) == [0, 1, 0, 1, 0]


def test_cache_aware_trades_overlap_against_load():
    # score = 2 x matched/len - 1 x in_flight/max in_flight
    # r0 [1,2,3,4]: [0-0, 0-0] -> 0 (tie, lowest index)
    # r1 [1,2,3,4]: inst0 2x1 - 1x1/1 = 1; inst1 0 - 0 = 0 -> 0
    # r2 [1,5,6,7]: in flight [2,0]; inst0 2x0.25 - 1 = -0.5; inst1 0 -> 1   (prefix would say 0)
    # r3 [1,5,6,8]: in flight [2,1]; inst0 0.5 - 1 = -0.5; inst1 2x0.75 - 0.5 = 1.0 -> 1
    rows = [(0, [1, 2, 3, 4]), (0, [1, 2, 3, 4]), (0, [1, 5, 6, 7]), (0, [1, 5, 6, 8])]
    assert go("cache-aware", rows, 2) == [0, 0, 1, 1]
    assert go("prefix", rows, 2)[2] == 0
    # load weight 0: overlap only; r2 inst0 2x0.25 > inst1 0 -> 0; r3: inst0 now holds 1..7, matches
    # [1,5,6] -> 2x0.75 > 0 -> 0
    assert go("cache-aware:load=0", rows, 2) == [0, 0, 0, 0]


def test_stale_index_hides_recent_stores():
    # prefix router, 2 instances; r0 t=0 [1,2] -> 0 (tie)
    # r1 t=1 [1,2]: exact view: match [2,0] -> 0; stale 5 s: r0's store visible only at t=5 -> [0,0],
    #   in flight [1,0] -> 1
    # r2 t=6 [1,2]: exact: [2,0] -> 0; stale: stores of t=0 and t=1 visible -> [2,2], in flight [1,1] -> 0
    rows = [(0, [1, 2]), (1, [1, 2]), (6, [1, 2])]
    assert go("prefix", rows, 2) == [0, 0, 0]
    assert go("prefix", rows, 2, stale=5) == [0, 1, 0]


def test_stale_index_applies_evictions_late():
    idx = CacheIndex([2], stale_s=5)
    idx.store(0, [1, 2], 0.0)
    idx.store(0, [3], 1.0)            # evicts 1 (LRU) at t=1
    assert idx.held_blocks(0) == 2
    idx.advance(5.5)                  # sees the stores of t=0, not yet the eviction of t=1
    assert idx.match(0, [1, 2]) == 2
    idx.advance(6.0)
    assert idx.match(0, [1, 2]) == 0 and idx.match(0, [3]) == 1


def test_router_options_errors():
    with pytest.raises(ValueError, match="unknown router"):
        parse_router("nope", 2)
    with pytest.raises(ValueError, match="router 'prefix' takes no options, got 'k'"):
        parse_router("prefix:k=3", 2)
    with pytest.raises(ValueError, match="overlap must be a finite number in"):
        parse_router("cache-aware:overlap=x", 2)
    with pytest.raises(ValueError, match=r"load must be a finite number in \[0, 1e\+06\], got -1.0"):
        parse_router("cache-aware:load=-1", 2)
    assert set(router_names()) == {"round-robin", "random", "least-loaded", "session", "consistent-hash",
                                   "prefix", "cache-aware"}


#: Router specs refused, each with a piece of its message.
REFUSED_SPECS = [
    # hostile F3: NaN/inf weights made every score compare false -> all traffic on instance 0; bounded [0, 1e6]
    ("cache-aware:overlap=nan", "option overlap must be a finite number in [0, 1e+06], got 'nan'"),
    ("cache-aware:load=nan", "option load must be a finite number in [0, 1e+06], got 'nan'"),
    ("cache-aware:overlap=inf", "option overlap must be a finite number in [0, 1e+06], got 'inf'"),
    ("cache-aware:load=-inf", "option load must be a finite number in [0, 1e+06], got '-inf'"),
    ("cache-aware:overlap=1e7", "option overlap must be a finite number in [0, 1e+06], got 10000000.0"),
    # hostile F4: vnodes unbounded (a 2e9-entry ring); <= 10,000 and instances x vnodes <= 1,000,000
    ("consistent-hash:vnodes=1000000000", "option vnodes must be an integer in [1, 10,000], got 1000000000"),
    ("consistent-hash:vnodes=0", "option vnodes must be an integer in [1, 10,000], got 0"),
    # hostile F11: one bound per option, whatever the wrong value (k=0 and k=-1 the same message)
    ("consistent-hash:k=0", "option k must be an integer in [1, 1,000,000], got 0"),
    ("consistent-hash:k=-1", "option k must be an integer in [1, 1,000,000], got -1"),
    ("random:seed=abc", "option seed must be an integer in [0, 18,446,744,073,709,551,615], got 'abc'"),
    ("random:seed=-1", "option seed must be an integer in [0, 18,446,744,073,709,551,615], got -1"),
    # hostile F12: exact names like every other choice (--compute STEP is refused too); options once each
    ("ROUND-ROBIN", "unknown router 'ROUND-ROBIN'"),
    ("Prefix", "unknown router 'Prefix'"),
    ("", "unknown router ''"),
    ("random:seed=1,seed=2", "option seed given twice"),
    ("cache-aware:OVERLAP=1", "router 'cache-aware' takes no option 'OVERLAP'"),
]


@pytest.mark.parametrize("spec, needle", REFUSED_SPECS)
def test_router_spec_refused(spec, needle):
    with pytest.raises(ValueError) as e:
        parse_router(spec, 2)
    assert needle in str(e.value)


def test_consistent_hash_ring_size_bound():
    # 101 x 10,000 = 1,010,000 ring points > 1,000,000: refused before the ring is built
    with pytest.raises(ValueError, match="101 x 10000 must be <= 1,000,000 ring points"):
        parse_router("consistent-hash:vnodes=10000", 101)
    # weights at their bounds still route: r0 sees no hits, no load -> all scores 0 -> instance 0 (lowest);
    # r1 matches its 1 block on instance 0: 1e6 x 1/1 - 0 > 0 on instance 1 -> 0
    assert go("cache-aware:overlap=1e6,load=0", [(0, [1]), (0, [1])], 2) == [0, 0]


@settings(max_examples=30, deadline=None)
@given(rows=st.lists(st.lists(st.integers(0, 12), min_size=1, max_size=6), min_size=1, max_size=30),
       cap=st.integers(0, 8), n=st.integers(1, 3), name=st.sampled_from(["round-robin", "random", "consistent-hash"]))
def test_bulk_index_is_the_stored_one(rows, cap, n, name):
    # a router that does not read the index gets it filled once after routing (CacheIndex.load);
    # the state must be the one CacheIndex.store, request by request, leaves (ids may repeat: not chained)
    b = batch([(k * 0.5, ids) for k, ids in enumerate(rows)])
    index = CacheIndex([cap] * n)
    out = route(b, RULES, parse_router(name, n), index, np.full(len(rows), 1.0))
    ref = CacheIndex([cap] * n)
    off, ids = b.block_offsets.tolist(), b.block_hashes.tolist()
    for k, i in enumerate(out.tolist()):
        row = ids[off[k]:off[k + 1]]
        ref.store(i, row[:RULES.cacheable_blocks(int(b.prompt_tokens[k]), len(row), b.block_size)], k * 0.5)
    for i in range(n):
        assert index.held_blocks(i) == ref.held_blocks(i)       # counted before the set is built
        assert index.held_ids(i) == ref.held_ids(i)
        assert index.held_blocks(i) == ref.held_blocks(i)


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(st.tuples(st.lists(st.integers(0, 2 ** 64 - 1), min_size=0, max_size=6), st.integers(1, 30)),
                     min_size=1, max_size=40),
       n=st.integers(1, 5), name=st.sampled_from(["round-robin", "random", "random:seed=18446744073709551615",
                                                  "consistent-hash", "consistent-hash:k=1,vnodes=3",
                                                  "consistent-hash:k=7,vnodes=1"]),
       rules=st.sampled_from([RULES, BlockRules()]))
def test_vectorised_assignment_is_the_per_request_one(rows, n, name, rules):
    # Router.assign_all (numpy, one call) against Router.choose request by request (the reference): the same
    # instance for every request, under both block rules (the hittable prefix decides consistent-hash's key;
    # requests with no hittable block key on their position), prompts shorter and longer than the ids
    b = batch([(k * 0.5, ids, p) for k, (ids, p) in enumerate(rows)])
    fast = route(b, rules, parse_router(name, n), CacheIndex([4] * n), np.full(len(rows), 1.0))
    ref = route(b, rules, parse_router(name, n), CacheIndex([4] * n), np.full(len(rows), 1.0), fast=False)
    assert fast.tolist() == ref.tolist()


@given(x=st.lists(st.integers(0, 2 ** 64 - 1), max_size=20))
def test_splitmix64_array_is_the_scalar_one(x):
    from pcs.fleet.routers.session import splitmix64_array

    assert splitmix64_array(np.array(x, dtype=np.uint64)).tolist() == [splitmix64(v) for v in x]


def test_loaded_index_counts_large_and_negative_ids():
    # held_blocks of a loaded (not yet built) set = min(capacity, distinct ids): 4 distinct ids below,
    # counted by numpy.unique (ids too large for the bitmap; negative int64 ids)
    for ids in (np.array([2 ** 63, 5, 2 ** 63, 7, 9], dtype=np.uint64), np.array([-3, 5, -3, 7, 9], dtype=np.int64)):
        for cap, held in ((3, 3), (10, 4)):
            index = CacheIndex([cap])
            index.load(0, ids)
            assert index.held_blocks(0) == held
            assert len(index.held_ids(0)) == held
