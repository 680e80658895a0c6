"""Independent references for the curve tests, and hand-traced checks of them.

- ``lru_replay``: a sequential one-tier LRU prefix cache written straight
  from the brief's shared replay semantics with an OrderedDict (lookup
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

from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from hypothesis import strategies as st

from pcs.blocks import BlockRules

BS = 4  # tokens per block in the synthetic traces


@dataclass(frozen=True)
class Req:
    """Duck-typed pcs.trace.Request: what curve(), single_sequence_hits() read."""

    prompt_tokens: int
    block_hashes: np.ndarray
    block_size: int = BS
    output_tokens: int = 1
    arrival_s: float = 0.0


def make_requests(spec: list[tuple[list[int], int]], bs: int = BS) -> list[Req]:
    """[(ids, prompt_tokens)] -> requests; ids must have ceil(P / bs) entries."""
    out = []
    for i, (ids, p) in enumerate(spec):
        assert len(ids) == -(-p // bs), (ids, p)
        out.append(Req(p, np.asarray(ids, dtype=np.uint64), bs, arrival_s=float(i)))
    return out


def lru_replay(requests, capacity: int, rules: BlockRules = BlockRules()) -> tuple[int, int, int]:
    """(hit_tokens, block_misses, requests_truncated) of the sequential LRU replay."""
    cache: OrderedDict[int, None] = OrderedDict()  # first = LRU, last = MRU
    hit_tokens = misses = truncated = 0
    for req in requests:
        hashes = [int(h) for h in req.block_hashes]
        p, bs = req.prompt_tokens, req.block_size
        n = rules.cacheable_blocks(p, len(hashes), bs)
        cap = rules.max_hit_blocks(p, len(hashes), bs)
        lead = 0
        while lead < n and hashes[lead] in cache:
            lead += 1
        hit_tokens += rules.hit_tokens(min(cap, lead), p, bs)
        misses += n - lead
        pinned = set(hashes[:lead])
        held = hashes[:lead]
        for h in hashes[lead:n]:
            if h not in cache:
                if len(cache) >= capacity:
                    victim = next((k for k in cache if k not in pinned), None)
                    if victim is None:
                        truncated += 1
                        break
                    del cache[victim]
                cache[h] = None
            pinned.add(h)
            held.append(h)
        for h in reversed(held):  # tail first, head last: the head ends MRU
            cache.move_to_end(h)
        assert len(cache) <= capacity
    return hit_tokens, misses, truncated


def brute_force_opt(requests, capacity: int, rules: BlockRules = BlockRules(), leaves_only: bool = True) -> int:
    """Max token-weighted hits over all eviction choices (tiny chained traces only).

    Same mechanics as the replay (pins, forced insertion of new blocks,
    truncation when nothing is evictable); each eviction may pick any
    unpinned block (``leaves_only``: only those with no resident child).
    """
    reqs, parent = [], {}
    for req in requests:
        hashes = [int(h) for h in req.block_hashes]
        p, bs = req.prompt_tokens, req.block_size
        n = rules.cacheable_blocks(p, len(hashes), bs)
        cap = rules.max_hit_blocks(p, len(hashes), bs)
        weights = [rules.hit_tokens(i + 1, p, bs) - rules.hit_tokens(i, p, bs) if i < cap else 0 for i in range(n)]
        for i in range(1, n):
            assert parent.setdefault(hashes[i], hashes[i - 1]) == hashes[i - 1], "ids must be chained"
        reqs.append((tuple(hashes[:n]), tuple(weights)))

    def allocations(ids, j, resident, pinned):
        if j == len(ids):
            yield resident
            return
        x = ids[j]
        if x in resident:
            yield from allocations(ids, j + 1, resident, pinned | {x})
            return
        if len(resident) < capacity:
            yield from allocations(ids, j + 1, resident | {x}, pinned | {x})
            return
        victims = [v for v in resident if v not in pinned
                   and not (leaves_only and any(parent.get(c) == v for c in resident))]
        if not victims:
            yield resident  # truncated: the request keeps its head only
            return
        for v in victims:
            yield from allocations(ids, j + 1, (resident - {v}) | {x}, pinned | {x})

    @lru_cache(maxsize=None)
    def best(r: int, resident: frozenset) -> int:
        if r == len(reqs):
            return 0
        ids, weights = reqs[r]
        lead = 0
        while lead < len(ids) and ids[lead] in resident:
            lead += 1
        gain = sum(weights[:lead])
        return gain + max(best(r + 1, s) for s in allocations(ids, lead, resident, frozenset(ids[:lead])))

    return best(0, frozenset())


@st.composite
def chained_traces(draw, max_requests: int = 14, max_blocks: int = 6):
    """Requests whose ids form a prefix tree: each request copies a prefix of
    an earlier one (or nothing) and appends fresh ids, as chained hashes do."""
    chains: list[list[int]] = []
    spec = []
    fresh = 1000
    for _ in range(draw(st.integers(1, max_requests))):
        nblocks = draw(st.integers(0, max_blocks))
        base: list[int] = []
        if chains and draw(st.booleans()):
            src = chains[draw(st.integers(0, len(chains) - 1))]
            base = src[: draw(st.integers(0, min(len(src), nblocks)))]
        ids = base + list(range(fresh, fresh + nblocks - len(base)))
        fresh += nblocks
        chains.append(ids)
        p = 0 if nblocks == 0 else draw(st.integers((nblocks - 1) * BS + 1, nblocks * BS))
        spec.append((ids, p))
    return make_requests(spec)


@st.composite
def arbitrary_traces(draw, max_requests: int = 12, max_blocks: int = 5, alphabet: int = 6):
    """Requests with ids drawn from a small alphabet: repeats and ids under
    different parents included (not chained hashes)."""
    spec = []
    for _ in range(draw(st.integers(1, max_requests))):
        nblocks = draw(st.integers(0, max_blocks))
        ids = draw(st.lists(st.integers(0, alphabet - 1), min_size=nblocks, max_size=nblocks))
        p = 0 if nblocks == 0 else draw(st.integers((nblocks - 1) * BS + 1, nblocks * BS))
        spec.append((ids, p))
    return make_requests(spec)


rules_strategy = st.builds(BlockRules, cache_partial_blocks=st.booleans(), recompute_last_token=st.booleans())

# A hand-traced trace (BS = 4). Per request: ids, P -> n cacheable, cap:
#   r0 [1,2,3]   P=12 -> n=3 (12//4), cap=min(3, 11//4)=2
#   r1 [1,2,4]   P=10 -> n=2,          cap=min(2, 9//4)=2
#   r2 [1,5]     P=8  -> n=2,          cap=min(2, 7//4)=1
#   r3 [1,2,3,6] P=13 -> n=3,          cap=min(3, 12//4)=3
# Stack after each request (MRU first; stamped tail first, head last):
#   r0: 1 2 3    r1 depths 1:0 2:1 -> 1 2 3
#   r2 depths 1:0 5:cold -> 1 5 2 3      r3 depths 1:0 2:2 3:3
# Hits (tokens) per capacity C = sum over requests of 4 * min(cap, lead):
#   C=1: r1 4 + r2 4 + r3 4 = 12;  C=2: 8 + 4 + 4 = 16;  C=3: 8 + 4 + 8 = 20;
#   C>=4: 8 + 4 + 12 = 24 (the ceiling). Prompt tokens 12+10+8+13 = 43.
# Block misses (n - lead): r0 3 always; C=1: 3+1+1+2 = 7; C>=4: 3+0+1+0 = 4.
# At C=2 r0 (n=3) is truncated: 1 and 2 are pinned when 3 needs a slot; so
# is r3 (lead 1; 2 evicts 5; then 1 and 2 are pinned when 3 needs a slot).
HAND_SPEC = [([1, 2, 3], 12), ([1, 2, 4], 10), ([1, 5], 8), ([1, 2, 3, 6], 13)]
HAND_HITS = {0: 0, 1: 12, 2: 16, 3: 20, 4: 24, 10: 24}
HAND_MISSES = {1: 7, 4: 4}
HAND_PROMPT = 43


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
CYCLE_SPEC = [([i, 100 + k], 5) for k, i in enumerate((1, 2, 3, 1, 2, 3, 1))]


def test_reference_brute_force_on_the_cycle():
    reqs = make_requests(CYCLE_SPEC)
    assert lru_replay(reqs, 2)[0] == 0
    assert brute_force_opt(reqs, 2) == 8
    assert brute_force_opt(reqs, 3) == 4 * 4  # everything fits: r3..r6 hit
