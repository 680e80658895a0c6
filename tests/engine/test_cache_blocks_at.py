"""When a prefill's blocks become hits: the step scheduler's ``cache_blocks_at`` (docs/semantics.md §9).

``prefill-done`` (the default, pcs's rule; TensorRT-LLM's ``storeContextBlocks``): all of a request's computed
blocks at the end of the step running its last chunk. ``scheduled`` (vLLM v1: ``KVCacheManager.allocate_slots``
ends with ``coordinator.cache_blocks(request, min(num_computed_tokens + num_new_tokens, request.num_tokens))``):
the full blocks of each chunk when its step is composed, so a request admitted later in the same step hits them.
``chunk-done`` (SGLang: ``cache_unfinished_req`` of the chunked request before the next batch): the full blocks
computed so far at the end of each step that ran a chunk.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings

import pcs
from pcs.engine.schedconfig import SchedulerConfig
from helpers import assert_one_line_error, invoke, req, step_cost, step_run
from test_scheduler_properties import _run, _values, runs

MS = 0.001
EQ2 = ({"timestamp": 0, "input_length": 1024, "output_length": 5, "hash_ids": [1, 2]},) * 2
# A: 30,720 tokens = 60 blocks of 512 (ids 1..60), four chunks of <= 8,192 tokens; B at 150 ms: 9,216 tokens =
# 18 blocks, ids 1..16 (A's first 16 blocks = A's first chunk) then its own 1000, 1001
CHUNK2 = ({"timestamp": 0, "input_length": 30720, "output_length": 5, "hash_ids": list(range(1, 61))},
          {"timestamp": 150, "input_length": 9216, "output_length": 5, "hash_ids": list(range(1, 17)) + [1000, 1001]})


def _replay(tmp_path, rows, at: str, **scheduler):
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = SchedulerConfig(cache_blocks_at=at, **scheduler)
    return pcs.replay(str(path), tiers=["gpu=100blocks"], scheduler=cfg)


def test_two_identical_requests_admitted_in_one_step(tmp_path):
    # two 1,024-token rows at t=0 (2 blocks of 512 each), budget 8,192: both are admitted in step 1.
    # prefill-done: A's blocks are cached at the end of step 1, after B's lookup -> B hits nothing: 0 tokens.
    # scheduled (vLLM): A's chunk (1,024 tokens = 2 full blocks) is cached when step 1 is composed, before B is
    # looked up; B's hits are capped by the last-token rule (§4) at (1024 - 1) // 512 = 1 block -> 512 tokens,
    # hit ratio 512 / (2 x 1,024) = 0.25.
    # chunk-done (SGLang): A's chunk runs in the same step as B's lookup -> 0 tokens, as prefill-done.
    got = {at: _replay(tmp_path, EQ2, at).summary for at in ("prefill-done", "scheduled", "chunk-done")}
    assert {at: s.hit_tokens for at, s in got.items()} == {"prefill-done": 0, "scheduled": 512, "chunk-done": 0}
    assert got["scheduled"].hit_ratio == 0.25
    assert got["scheduled"].scheduler.cache_blocks_at == "scheduled"


def test_a_chunked_prefill_exposes_each_chunk(tmp_path):
    # A's first chunk (tokens 0..8,191 = blocks 1..16) is computed in step 1, which starts at 0; B, arriving at 150 ms,
    # joins at a later step boundary. prefill-done: B waits for the step budget and is admitted beside A's last chunk,
    # before A's blocks are cached -> 0 hit tokens. scheduled and chunk-done: blocks 1..16 are cached from step 1 (its
    # composition, resp. its end); B's chain matches them and then stops at id 1000; cap (9,216 - 1) // 512 = 17 >= 16
    # -> 16 blocks = 8,192 hit tokens, 8,192 / (30,720 + 9,216) = 0.2051 of the prompt tokens.
    hits = {at: _replay(tmp_path, CHUNK2, at).summary.hit_tokens for at in ("prefill-done", "scheduled", "chunk-done")}
    assert hits == {"prefill-done": 0, "scheduled": 8192, "chunk-done": 8192}


def test_a_smaller_budget_no_longer_raises_the_hit_ratio(tmp_path):
    # prefill-done: budget 1,024 puts B in step 2, after A's prefill is done -> 512 hit tokens (0.25), while
    # budget 8,192 gives 0 (previous test): a smaller budget raises the hit ratio, an artefact of the rule.
    # scheduled: B hits A's block 1 either way (same step, or the next) -> 0.25 at both budgets.
    ratio = {(at, b): _replay(tmp_path, EQ2, at, max_num_batched_tokens=b).summary.hit_ratio
             for at in ("prefill-done", "scheduled") for b in (1024, 8192)}
    assert ratio[("prefill-done", 1024)] == 0.25 and ratio[("prefill-done", 8192)] == 0.0
    assert ratio[("scheduled", 1024)] == ratio[("scheduled", 8192)] == 0.25


def test_the_new_values_run_on_the_reference_and_say_why(tmp_path):
    # the compiled step loop and the compiled hierarchy cache at prefill done only: the run falls back to the
    # Python reference and the reason names the option
    s = _replay(tmp_path, EQ2, "scheduled").summary
    assert s.engine == "reference"
    assert "not compiled-step: blocks cached at scheduled (--cache-blocks-at)" in s.engine_reason


def test_a_request_preempted_mid_prefill_leaves_its_cached_blocks():
    # block size 2, 1 ms per token, budget 3, 2 sequences, GPU 5 blocks, LRU.
    # R0: t=0, prompt 2 (id 1), output 6.  R1: t=0, prompt 6 (ids 5, 6, 7), output 2.
    # step 1 [0, 3):  R0 admitted (1 slot), chunk 2, done: first token at 3 ms; R1 admitted (3 slots; 4 of 5
    #                 held), chunk 1 (tokens 0).
    # step 2 [3, 6):  R0 writes KV position 2: a 2nd slot (5 of 5 held), decodes; R1 chunk 2 (tokens 1-2): block 5
    #                 (tokens 0-1) is full -> cached (scheduled: when composed; chunk-done: at the step's end).
    # step 3 [6, 9):  R0 decodes; R1 chunk 2 (tokens 3-4): block 6 (tokens 2-3) cached.
    # step 4 [9, 10): R0 at position 4 needs a 3rd slot: none; R1 (the youngest growing) is preempted mid-prefill:
    #                 its pins dropped tail first (6, then 5); prefill-done caches nothing of it. R0 takes the freed
    #                 slot: the LRU victim is block 6 (unpinned first), block 5 stays. R1 waits for R0's slots.
    # steps 5-6 [10, 12): R0 decodes its 5th and 6th tokens: done at 12 ms.
    # R1 re-admitted at 12 ms: prompt 6, hit cap (6 - 1) // 2 = 2 blocks, but only block 5 is cached:
    #   prefill-done: 0 hits, 6 tokens again: [12, 15) + [15, 18), first token at 18 ms, decode [18, 19) -> 19 ms.
    #   scheduled / chunk-done: 1 hit, 4 tokens: [12, 15) + [15, 16), first token at 16 ms, decode -> 17 ms.
    reqs = [req([1], 0.0, prompt=2, out=6, bs=2), req([5, 6, 7], 0.0, prompt=6, out=2, bs=2)]
    want = {"prefill-done": (6, 18, 19), "scheduled": (4, 16, 17), "chunk-done": (4, 16, 17)}
    for at, (recomputed, ttft_ms, finish_ms) in want.items():
        eng = step_run(reqs, [5], step_cost(token_s=MS), budget=3, seqs=2, skip=False, cache_blocks_at=at)
        assert eng.stats.preemptions == 1 and eng.stats.recompute_tokens == recomputed, at
        assert list(eng.result.columns["ttft_s"]) == pytest.approx([3 * MS, ttft_ms * MS], abs=1e-12), at
        assert list(eng.result.columns["finish_s"]) == pytest.approx([12 * MS, finish_ms * MS], abs=1e-12), at
        gpu = eng.h.tiers[0]
        assert gpu.num_pinned == 0 and gpu.reserved_blocks == 0


def test_abort_keeps_the_cached_blocks_unpinned():
    # Hierarchy mechanism: 4 computed blocks, 2 cached before a preemption: abort unpins those 2 (they stay
    # resident, evictable) and gives back the 2 reserved slots of the blocks not computed.
    from pcs.cache import Hierarchy, Tier
    from pcs.cache.policies import make_policy

    h = Hierarchy([Tier("gpu", 8, make_policy("lru", 8))])
    adm = h.start([1, 2, 3, 4], 4, 3, 0, True)
    assert adm.computed_hashes == [1, 2, 3, 4] and adm.reserved_blocks == 4
    h.cache_computed(adm, 2)
    h.cache_computed(adm, 1)          # below what is cached: nothing changes
    gpu = h.tiers[0]
    assert sorted(gpu.resident) == [1, 2] and gpu.num_pinned == 2 and adm.reserved_blocks == 2
    h.abort(adm)
    assert sorted(gpu.resident) == [1, 2] and gpu.num_pinned == 0 and gpu.reserved_blocks == 0
    again = h.start([1, 2, 3, 4], 4, 3, 0, True)        # a later request hits them
    assert again.hit_blocks == 2


@settings(max_examples=40, deadline=None)
@given(runs())
def test_conservation_under_each_rule(run):
    # random traces, tiers, restore policies, preemptions: every request finishes, the ledger sums, nothing is
    # held at the end, the hierarchy's and scheduler's invariants hold after every event (step_run checks them), and
    # one step at a time gives the same columns as event skipping
    reqs, caps, dec, kw = run
    for at in ("scheduled", "chunk-done"):
        eng = _run(reqs, caps, dec, kw, cache_blocks_at=at)
        c = eng.result.columns
        assert np.isfinite(_values(c["finish_s"])).all()
        L = eng.result.ledger
        assert sum(L.tier_hit_tokens) == L.hit_tokens == int(_values(c["hit_tokens"]).sum())
        gpu = eng.h.tiers[0]
        assert gpu.num_pinned == 0 and gpu.reserved_blocks == 0
        slow = _run(reqs, caps, dec, kw, cache_blocks_at=at, skip=False)      # event skipping changes nothing
        for name, col in c.items():
            x, y = _values(col), _values(slow.result.columns[name])
            assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), (at, name)


def test_an_unknown_value_is_refused():
    with pytest.raises(ValueError, match="unknown cache_blocks_at 'allocate'"):
        SchedulerConfig(cache_blocks_at="allocate")


def test_the_cli_option_reaches_the_run_and_is_refused_without_a_scheduler(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in EQ2))
    r = invoke("replay", str(path), "--quiet", "--format", "json", "--tier", "gpu=100blocks",
               "--cache-blocks-at", "scheduled")
    out = json.loads(r.output)
    assert out["hit_tokens"] == 512 and out["scheduler"]["cache_blocks_at"] == "scheduled"   # as the first test
    assert_one_line_error(invoke("replay", str(path), "--quiet", "--compute", "infinite", "--cache-blocks-at",
                                 "scheduled"), "--cache-blocks-at", "--compute infinite")
