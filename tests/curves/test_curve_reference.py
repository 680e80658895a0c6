"""Independent references for the curve tests, and hand-traced checks of them.

- ``lru_replay``: a sequential one-tier LRU prefix cache written straight
  from docs/semantics.md §3-§6 with an OrderedDict (lookup
  stops at the first miss, pin the lead, allocate new blocks evicting
  unpinned LRU blocks, truncate when nothing is evictable, touch tail first
  so the head is MRU).
- ``brute_force_opt``: the best token-weighted hits over EVERY sequence of
  eviction choices (unpinned leaves, or any unpinned block), by exhaustive
  search with memoisation; for tiny traces only.
- hypothesis strategies for chained traces (ids form a prefix tree, as
  chained hashes do) and for arbitrary id streams.
"""
from __future__ import annotations

from helpers import CYCLE_SPEC, HAND_HITS, HAND_MISSES, HAND_SPEC, brute_force_opt, lru_replay, make_requests


def test_reference_lru_matches_the_hand_trace():
    reqs = make_requests(HAND_SPEC)
    for c, hits in HAND_HITS.items():
        assert lru_replay(reqs, c)[0] == hits, c
    for c, misses in HAND_MISSES.items():
        assert lru_replay(reqs, c)[1] == misses, c
    assert lru_replay(reqs, 2)[2] == 2  # r0 and r3 truncated
    assert lru_replay(reqs, 3)[2] == 0


# Belady beats LRU on a cycle. One-block requests A B C A B C A (P=5: n=1,
# cap=1, 4 tokens a hit), C=2. LRU: every access misses (cyclic), 0 tokens.
# MIN: r2 C evicts B (next r4) not A (next r3); r3 A hits; r4 B evicts A
# (next r6) not C (next r5); r5 C hits; r6 A misses: 2 hits = 8 tokens.


def test_reference_brute_force_on_the_cycle():
    reqs = make_requests(CYCLE_SPEC)
    assert lru_replay(reqs, 2)[0] == 0
    assert brute_force_opt(reqs, 2) == 8
    assert brute_force_opt(reqs, 3) == 4 * 4  # everything fits: r3..r6 hit
