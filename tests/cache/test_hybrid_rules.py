"""Hand-traced hybrid-model rules: one test per cache-group rule (docs/semantics.md §3.1).

Every expected hit and page below is worked out in the comments from the
rules as vLLM's single-type KV cache managers state them
(vllm/v1/core/single_type_kv_cache_manager.py): block size B = 4 tokens;
a sliding window of W = 9 tokens needs m = ceil((W - 1) / B) = 2 blocks
before the hit point; a chunk of C = 8 tokens is 2 blocks; a state every
N = 8 tokens is a checkpoint every u = 2 blocks. LRU order is written
oldest first. ``w(x)``, ``c(x)``, ``s(x)`` are the page keys of block x in
the window, chunk and state group (group 1).
"""
from __future__ import annotations

import pytest

from pcs.cache import Tier, make_policy
from pcs.cache.groups import CacheGroup, fixed_point
from pcs.cache.grouphier import GroupHierarchy, page_key

B = 4
FULL = CacheGroup("full_attention", "full", ("full_attention",), B)
WIN = CacheGroup("sliding_window", "window", ("sliding_window",), B, span_tokens=9)     # m = 2
CHUNK = CacheGroup("chunked_local", "chunk", ("chunked_local",), B, span_tokens=8)     # 2 blocks a chunk
STATE = CacheGroup("ssm_state", "state", ("ssm_state",), B, span_tokens=8)             # u = 2
STATE_ALIGN = CacheGroup("ssm_state", "state", ("ssm_state",), B, span_tokens=8, align=True)


def w(x: int) -> int:
    return page_key(x, 1, 0)


c = s = w   # group 1's first page, whatever its rule


def hier(*groups, caps=(100,)) -> GroupHierarchy:
    tiers = [Tier(n, cap, make_policy("lru", cap)) for n, cap in zip(("gpu", "cpu"), caps)]
    return GroupHierarchy(tiers, "back", groups, 1, [[1] for _ in caps])


def serve(h: GroupHierarchy, ids: list[int], cap: int | None = None):
    """Admit, prefill and finish one request (sequential, no extra blocks); its admission."""
    adm = h.start(ids, len(ids), len(ids) if cap is None else cap)
    h.prefill_done(adm)
    h.finish(adm)
    h._check()
    return adm


def test_rule_arithmetic():
    assert WIN.window_blocks == 2 and STATE.every_blocks == 2
    # window: a hit of k blocks reads blocks k-2, k-1; after n computed blocks the last 2 stay
    assert (WIN.need_from(6), WIN.keep_from(6), WIN.need_from(1)) == (4, 4, 0)
    # chunk: 5 blocks = 20 tokens, its chunk starts at token 16 = block 4; 6 blocks = 24 is a boundary
    assert (CHUNK.need_from(5), CHUNK.need_from(6)) == (4, 6)
    # state: a hit of 4 reads the state saved at block 3; nothing is kept (the running state has its slot)
    assert (STATE.need_from(4), STATE.keep_from(5)) == (3, 5)
    assert STATE.writes(0, 5) == [1, 3] and STATE.writes(2, 6) == [3, 5] and STATE_ALIGN.writes(0, 5) == [3]
    # chunk: C = 8 = 2 blocks; B divides C, so a decoding sequence holds 2 (vLLM frees the chunk before the next
    # token's before it allocates: pcs.cache.groups.chunk_hold_blocks)
    assert (WIN.hold_blocks, CHUNK.hold_blocks, STATE.hold_blocks, FULL.hold_blocks) == (3, 2, 1, None)


def test_window_rule_scans_right_to_left_like_vllm():
    # present blocks 0 1 2 _ 4 5 6: from 7, blocks 6, 5 are the 2 needed -> 7
    present = {0, 1, 2, 4, 5, 6}.__contains__
    assert WIN.longest(7, present) == 7
    # from 5: block 4 present (run 1), block 3 missing (run 0), blocks 2, 1 -> hit ends at 1 + 2 = 3
    assert WIN.longest(5, present) == 3
    # only block 0 present: no run of 2; the leading present blocks (1) are the hit
    assert WIN.longest(4, {0}.__contains__) == 1


def test_chunk_and_state_rules():
    # chunk from 5 blocks: the chunk starts at block 4; block 4 missing -> the hit is the chunk start, 4
    assert CHUNK.longest(5, {0, 1, 2, 3}.__contains__) == 4
    assert CHUNK.longest(5, {4}.__contains__) == 5          # only the current chunk's block is read
    # state from 5 blocks: checkpoints at 4 (block 3) and 2 (block 1); block 3's state missing -> 2
    assert STATE.longest(5, {1}.__contains__) == 2
    assert STATE.longest(5, set().__contains__) == 0


def test_fixed_point_iterates_until_every_group_accepts():
    # groups full (lead 7), window (block 2 and 5 missing), state (checkpoints at blocks 1, 3, 5)
    groups = (FULL, WIN, CacheGroup("ssm_state", "state", ("ssm_state",), B, span_tokens=8))
    present = {1: {0, 1, 3, 4, 6}, 2: {1, 3, 5}}
    # pass 1: full 7; window from 7: block 6 (1), 5 missing, 4 (1), 3 (2) -> 5; state from 5 -> 4 (block 3)
    # pass 2: full 4; window from 4: 3 (1), 2 missing, 1 (1), 0 (2) -> 2; state from 2: block 1 -> 2
    # pass 3: full 2, window 2, state 2: stable
    assert fixed_point(groups, 7, lambda g, i: present[g].__contains__(i), full_lead=7) == 2


def test_window_pages_become_evictable_while_the_request_runs():
    h = hier(FULL, WIN)
    gpu = h.levels[0][0]
    ids = [1, 2, 3, 4, 5, 6]
    adm = h.start(ids, 6, 6)
    h.prefill_done(adm)
    # running: every full page is pinned; the next token (25) attends to tokens 17..25, so of the
    # window group only blocks 5 and 6 (tokens 17..24) stay pinned; blocks 1..4 slid out at once:
    # cached, pin count 0, held by the policy (evictable)
    assert [gpu.resident[x] for x in ids] == [1] * 6
    assert [gpu.resident[w(x)] for x in ids] == [0, 0, 0, 0, 1, 1]
    assert set(gpu.policy.order()) == {w(1), w(2), w(3), w(4)}
    assert h.residency.pages[0] == [6, 6]
    h.finish(adm)
    h._check()


def test_evicted_window_blocks_give_no_hit_past_the_windows_start():
    h = hier(FULL, WIN, caps=(12,))
    # A = 1..4: full 1..4 kept; window keeps blocks 3, 4 (the last 2), 1 and 2 stored unpinned.
    # LRU after A: w2 w1 (slid out, tail first) | f4 f3 f2 f1 | w4 w3 (finish, group by group, tail first)
    serve(h, [1, 2, 3, 4])
    # B = 1..6: full lead 4; window from 4: w4, w3 present -> hit 4. It reads only w3, w4 (not w1, w2),
    # released when prefill ends (the window moved to blocks 5, 6). 4 slots, 8 pages resident: no eviction.
    adm = serve(h, [1, 2, 3, 4, 5, 6])
    assert (adm.hit_blocks, adm.prefix_hit_blocks, adm.lost_blocks) == (4, 4, 0)
    assert adm.release[1] == [w(3), w(4)] and adm.hold[1] == []
    # LRU: w2 w1 w4 w3 | f6 f5 f4 f3 f2 f1 | w6 w5; 12 pages, full.
    assert h.levels[0][0].policy.order() == [w(2), w(1), w(4), w(3), 6, 5, 4, 3, 2, 1, w(6), w(5)]
    # C = 20, 21 (new): 2 full + 2 window pages -> evicts the 4 oldest: w2 w1 w4 w3
    serve(h, [20, 21])
    assert h.residency.pages[0] == [8, 4]
    # D = 1 2 3 4 9: full attention holds 1..4 (lead 4), but the window for a hit at 4 needs w3, w4
    # (evicted) and no earlier point has its 2 window blocks either -> no hit at all; 4 blocks lost; the
    # prefix every group accepts is empty, so all 5 blocks are missed (docs/replay.md, missed blocks)
    adm = h.start([1, 2, 3, 4, 9], 5, 5)
    assert (adm.hit_blocks, adm.prefix_hit_blocks, adm.lost_blocks) == (0, 0, 4)
    h.prefill_done(adm)
    h.finish(adm)
    h._check()


def test_a_restore_moves_only_the_windows_blocks():
    h = hier(FULL, WIN, caps=(12, 100))
    # A = 1..6: 8 slots (6 full, window blocks 5 6); w1..w4 stored unpinned -> 12 pages.
    # LRU: w4 w3 w2 w1 | f6 f5 f4 f3 f2 f1 | w6 w5
    serve(h, [1, 2, 3, 4, 5, 6])
    # C = 20..25: 8 slots evict w4 w3 w2 w1 f6 f5 f4 f3; its 4 slid-out window pages evict f2 f1 w6 w5:
    # all of A's 12 pages are now in the cpu tier
    serve(h, [20, 21, 22, 23, 24, 25])
    assert h.residency.pages == [[6, 6], [6, 6]]
    # D = 1..7: full lead 6 (cpu); window from 6: w6, w5 (cpu) -> hit 6. Restored: 6 full pages and the
    # window's 2 (blocks 5, 6); w1..w4 stay below.
    adm = h.start([1, 2, 3, 4, 5, 6, 7], 7, 7)
    assert adm.hit_blocks == 6 and adm.hit_blocks_per_tier == [0, 6]
    assert adm.restored_blocks_per_tier == [0, 8] and h.residency.restored[1] == [6, 2]
    assert all(w(x) not in h.levels[0][0].resident for x in (1, 2, 3, 4))
    h.prefill_done(adm)
    h.finish(adm)
    h._check()


def test_chunk_hit_reads_only_the_current_chunk():
    h = hier(FULL, CHUNK)
    # A = 1..5 (20 tokens): its chunk starts at token 16 = block 5: c5 kept, c1..c4 unpinned at once
    serve(h, [1, 2, 3, 4, 5])
    # B = 1..6: from 6 blocks (24 tokens, a chunk boundary) the chunk needs nothing -> 6; full lead 5
    # -> 5; from 5 the chunk starts at block 5 (c5 present) -> 5. Stable: hit 5, reading c5 only.
    adm = h.start([1, 2, 3, 4, 5, 6], 6, 6)
    assert adm.hit_blocks == 5
    assert adm.hold[1] + adm.release[1] == [c(5)]
    assert [h.levels[0][0].resident[c(x)] for x in (1, 2, 3, 4, 5)] == [0, 0, 0, 0, 1]
    h.prefill_done(adm)
    h.finish(adm)


def test_state_hit_rounds_down_to_the_last_checkpoint():
    h = hier(FULL, STATE)
    # A = 1..5 (20 tokens): states saved at 8 and 16 tokens (blocks 2, 4), both unpinned at once
    # (the running state lives in its own slot); full pages 1..5
    serve(h, [1, 2, 3, 4, 5])
    assert h.residency.pages[0] == [5, 2] and s(2) in h.levels[0][0].resident
    # B = 1..6: full attention holds 20 tokens, but states exist at 8 and 16 only -> hit 4 blocks
    # (16 tokens); it reads one state (block 4's), 1 block lost to the missing checkpoint
    adm = h.start([1, 2, 3, 4, 5, 6], 6, 6)
    assert (adm.hit_blocks, adm.lost_blocks) == (4, 1)
    assert adm.release[1] == [s(4)] and adm.hold[1] == []
    h.prefill_done(adm)
    h.finish(adm)
    h._check()


@pytest.mark.parametrize("group, hit", [(STATE, 2), (STATE_ALIGN, 0)])
def test_mamba_cache_mode_align_saves_only_the_last_checkpoint(group, hit):
    h = hier(FULL, group)
    # A = 1..5: "all" saves the states at blocks 2 and 4, "align" only at block 4 (its last checkpoint)
    serve(h, [1, 2, 3, 4, 5])
    # [1, 2, 3]: from 3 blocks the last checkpoint is at 2 -> "all": hit 2; "align": none
    adm = h.start([1, 2, 3], 3, 3)
    assert adm.hit_blocks == hit
    h.prefill_done(adm)
    h.finish(adm)


def test_running_extra_pages_per_group():
    h = hier(FULL, WIN, STATE.__class__("ssm_state", "state", ("ssm_state",), B, span_tokens=8, pool=0))
    # 3 blocks and 5 extra (partial block + output): full 3 + 5 pages; window keeps blocks 2, 3 and
    # holds at most m + 1 = 3 -> 1 extra; state keeps none and holds 1 running state -> 1 extra.
    # The prefill also writes window block 1 (slid out: ids 1) and the checkpoint at block 2 (u = 2): a slot
    # each while it runs (vLLM allocates every block a prefill writes), given back at prefill_done -> + 1 + 1
    adm = h.start([1, 2, 3], 3, 3, 5)
    assert adm.reserved == [3 + 5 + 2 + 1 + 1 + 1 + 1]
    h.prefill_done(adm)
    assert adm.reserved == [5 + 1 + 1]
    h.finish(adm)
    h._check()


def test_a_hit_counts_at_the_lowest_tier_any_page_it_reads_came_from():
    # docs/replay.md, "hits per tier (hybrid models)". GPU 7 pages, W = 9 tokens (m = 2 window blocks).
    h = hier(FULL, WIN, caps=(7, 100))
    # A = 1..3: 6 slots; w1 slides out (stored unpinned), then full pages, then window pages at finish.
    # GPU LRU: w1 | f3 f2 f1 | w3 w2 (6 pages)
    serve(h, [1, 2, 3])
    # B = 10, 11: 4 slots, 1 free -> evicts w1, f3, f2 into the cpu tier (write-back)
    serve(h, [10, 11])
    assert 1 in h.levels[0][0].resident and w(1) not in h.levels[0][0].resident
    assert w(1) in h.levels[1][0].resident
    # C = 1 (cap 1): the hit at block 1 reads f1 (GPU) and w1 (the window of block 1: cpu). It counts once, at
    # the cpu tier, where its w1 page is restored from -- not at the GPU, the highest tier holding f1.
    adm = serve(h, [1])
    assert adm.hit_blocks == 1 and adm.hit_blocks_per_tier == [0, 1] and adm.restored_blocks_per_tier == [0, 1]
