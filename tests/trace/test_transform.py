"""What-if transforms keep the prefix tree: tenants by hand, speed, truncation, scaling, sampling."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from helpers import lru_replay

from pcs.blocks import single_sequence_hits
from pcs.cli.main import cli
from pcs.trace import open_trace
from pcs.trace.request import RequestBatch, concat_batches
from pcs.trace.transform import TransformSpec, transform

MOONCAKE8 = Path(__file__).resolve().parents[2] / "traces" / "formats" / "mooncake_conv_8.jsonl"


def small() -> RequestBatch:
    """4-token blocks: r0 [1,2,3] 12 tok, r1 [1,2,4] 12 tok, r2 [1,2,3,5] 16 tok, at 0, 1, 2 s."""
    return RequestBatch(0, 4, np.array([0.0, 1.0, 2.0]), np.array([12, 12, 16]), np.array([1, 1, 1]),
                        np.array([0, 3, 6, 10]), np.array([1, 2, 3, 1, 2, 4, 1, 2, 3, 5], dtype=np.uint64))


def ratio(b) -> float:
    return single_sequence_hits(b.requests()).hit_ratio


def tenant_rows(t, k) -> list:
    return [r for r, ten in zip(t.batch.requests(), t.tenant.tolist()) if ten == k]


def test_tenant_copies_keep_each_tenants_ratio_and_lower_the_fleets_by_hand():
    # Original, single sequence (cap (p-1)//4): r0 0; r1 hits 1,2 -> 8; r2 hits 1,2,3 -> 12: 20 / 40 = 0.5.
    # Two copies with disjoint ids: each tenant's stream is the original renamed -> 0.5 each.
    b = small()
    assert ratio(b) == 20 / 40
    t = transform(b, TransformSpec(tenants=2))
    assert len(t.batch) == 6 and t.tenant.tolist() == [0, 1, 0, 1, 0, 1]
    for k in (0, 1):
        assert single_sequence_hits(tenant_rows(t, k)).hit_ratio == 20 / 40
    ids0 = {int(h) for r in tenant_rows(t, 0) for h in r.block_hashes}
    ids1 = {int(h) for r in tenant_rows(t, 1) for h in r.block_hashes}
    assert not ids0 & ids1 and len(ids0) == len(ids1) == 5
    # The fleet in one LRU cache of 4 blocks (sequential; helpers.lru_replay, pins the request's blocks):
    #  original: r0 fills 1,2,3; r1 hits 1,2 (8), adds 4; r2 hits 1,2,3 (12), evicts 4 for 5: 20 of 40 tokens.
    #  fleet r0a r0b r1a r1b r2a r2b: r0a fills a1 a2 a3; r0b needs 3 slots: adds b1, evicts a3, a2 -> [a1 b3 b2 b1];
    #  r1a hits a1 (4), refills a2 a4 over b3 b2; r1b hits b1 (4), refills b2 b4 over a4 a2;
    #  r2a hits a1 (4), refills a2 a3 a5 over b4 b2 b1; r2b finds b1 gone: 0. 12 of 80 tokens.
    assert lru_replay(list(b.requests()), 4)[0] == 20
    assert lru_replay(list(t.batch.requests()), 4)[0] == 12
    assert 12 / 80 < 20 / 40


def test_tenant_split_loses_the_shared_prefix_by_hand():
    # Conversations: r0 ends its turn at block 3 (its first appearance); r2 contains 3 -> {r0, r2}; r1 alone.
    # Dealt to different tenants, r1's copy of the shared 1,2 is its own: fleet r0 0, r1 0, r2 12 -> 12 / 40.
    b = small()
    seed = next(s for s in range(50) if len(set(transform(b, TransformSpec(tenants=2, tenant_mode="split",
                                                                           seed=s)).tenant.tolist())) == 2)
    t = transform(b, TransformSpec(tenants=2, tenant_mode="split", seed=seed))
    assert t.conversation.tolist() == [0, 1, 0] and t.tenant[0] == t.tenant[2] != t.tenant[1]
    assert ratio(t.batch) == 12 / 40 < ratio(b)


def test_speed_truncation_and_sampling():
    b = concat_batches(list(open_trace(MOONCAKE8).iter_batches()))
    fast = transform(b, TransformSpec(speed=3)).batch
    assert np.allclose(fast.arrival_s * 3, b.arrival_s) and ratio(fast) == ratio(b)
    # cut prompts to 1000 tokens: every request keeps block 0 and a 488-token rest of block 1 (a new id per
    # original block 1); 1000 // 512 = 1 full block, cap 999 // 512 = 1: every request but the first hits block 0
    # -> 7 x 512 tokens of 8 x 1000; the two requests sharing [0, 1541, ...] and [0, 975, ...] share block 1 too,
    # but it is partial (not cached)
    cut = transform(b, TransformSpec(max_input_tokens=1000, max_output_tokens=100)).batch
    assert cut.prompt_tokens.tolist() == [1000] * 8 and cut.output_tokens.max() == 100
    assert single_sequence_hits(cut.requests()).hit_tokens == 7 * 512
    # sampling keeps whole conversations (4 conversations of 2 turns each)
    for seed in range(5):
        s = transform(b, TransformSpec(sample_conversations=0.5, seed=seed))
        assert np.all(np.bincount(s.conversation) % 2 == 0)


def test_scaling_keeps_the_tree():
    b = concat_batches(list(open_trace(MOONCAKE8).iter_batches()))
    same = transform(b, TransformSpec(prompt_scale=1.0 + 1e-12))  # a no-op stretch goes through the mapping
    assert ratio(same.batch) == ratio(b) and same.batch.num_blocks.tolist() == b.num_blocks.tolist()
    # x2: every block becomes two, both named after the original (new block 2i ends at original token 256 of
    # block i, 2i + 1 at its end), so every hit doubles: 2 x 13824. One more: the repeated 1902-token request
    # (3804 tokens now, cap 3803 // 512 = 7) also hits new block 6, the full first half of its original partial
    # block 977 (366 -> 732 tokens), which its first occurrence cached: + 512.
    two = transform(b, TransformSpec(prompt_scale=2.0)).batch
    assert two.prompt_tokens.tolist() == (2 * b.prompt_tokens).tolist()
    assert single_sequence_hits(two.requests()).hit_tokens == 2 * 13824 + 512
    # shared prefix x3: only block 0 is shared across conversations (the others are within one conversation):
    # every prompt grows by 2 x 512 tokens, and the hit tokens by 2 x 512 for each of the 7 requests that hit 0
    p3 = transform(b, TransformSpec(prefix_scale=3.0)).batch
    assert (p3.prompt_tokens - b.prompt_tokens).tolist() == [1024] * 8
    assert single_sequence_hits(p3.requests()).hit_tokens == 13824 + 7 * 1024


def test_cli_transform(tmp_path):
    out = tmp_path / "t.jsonl"
    res = CliRunner().invoke(cli, ["trace", "transform", str(MOONCAKE8), str(out), "--tenants", "2", "--speed", "2",
                                   "--format", "json", "-q"])
    assert res.exit_code == 0, res.output
    info = json.loads(res.output)
    assert info["before"]["requests"] == 8 and info["after"]["requests"] == 16
    assert info["after"]["single_sequence_hit_ratio"] == info["before"]["single_sequence_hit_ratio"]
    assert info["applied"] == ["2 tenants (copy)", "arrivals x2 faster"]
    first = json.loads(out.read_text().splitlines()[0])
    assert first["hash_ids"][0] == 0  # renumbered densely
    # --speed 0.5 halves the rate, so the note says slower, by 1 / 0.5 = 2
    res = CliRunner().invoke(cli, ["trace", "transform", str(MOONCAKE8), str(out), "--speed", "0.5",
                                   "--format", "json", "-q"])
    assert json.loads(res.output)["applied"] == ["arrivals x2 slower (--speed 0.5: time spans x2)"]
    res = CliRunner().invoke(cli, ["trace", "transform", str(MOONCAKE8), str(out), "--tenant-mode", "mix"])
    assert res.exit_code == 2
    res = CliRunner().invoke(cli, ["trace", "transform", str(MOONCAKE8), str(MOONCAKE8)])
    assert res.exit_code == 2 and "input file" in res.output
    with pytest.raises(ValueError, match="speed"):
        TransformSpec(speed=0)


def test_transform_reports_the_lines_it_skipped(tmp_path):
    # review 45d: --on-error skip dropped a bad line without a word (no skipped, no skipped_lines, no note); now
    # as pcs trace stats and replay report it (pcs.cli.common.with_trace_notes). The bad line is put in as line 3
    # of 9: the file's 8 requests are all read
    lines = MOONCAKE8.read_text().splitlines()
    dirty = tmp_path / "dirty.jsonl"
    dirty.write_text("\n".join(lines[:2] + ['{"bad": 1}'] + lines[2:]) + "\n")
    res = CliRunner().invoke(cli, ["trace", "transform", str(dirty), str(tmp_path / "o.jsonl"), "--on-error", "skip",
                                   "--format", "json", "-q"])
    assert res.exit_code == 0, res.output
    info = json.loads(res.stdout)
    message = f"{dirty}:3: field 'timestamp': missing"
    assert info["skipped"] == 1 and info["before"]["requests"] == 8
    assert info["skipped_lines"] == [{"file": str(dirty), "line": 3, "field": "timestamp", "problem": "missing",
                                      "message": message}]
    assert info["notes"] == ["1 bad trace line was skipped (--on-error skip)", f"skipped {message}"]
    table = CliRunner().invoke(cli, ["trace", "transform", str(dirty), str(tmp_path / "o.jsonl"), "--on-error",
                                     "skip"])
    assert "note: 1 bad trace line was skipped (--on-error skip)" in table.stdout
    assert f"note: skipped {message}" in table.stdout
