"""The replay text report says how many blocks, and bytes, were restored from each lower tier (its link).

Worked by hand (docs/semantics.md §2-§7; sequential timing, LRU, write-back, 512-token blocks): three prompts of
1,025 tokens name 3 ids each, 2 of them full (cacheable), hits capped at floor(1,024 / 512) = 2 blocks.
A GPU tier of 2 blocks holds r0's blocks 1, 2; r1 (blocks 3, 4) demotes them to cpu; r2 (blocks 1, 2 again)
finds both in cpu: 2 blocks restored over the cpu link, 2 x 167,772,160 B (llama-2-70b fp16, TP 8: 80 layers x
8 KV heads x 128 x K+V x 2 B x 512 tokens) = 335,544,320 B = 335.54 MB.
"""
from __future__ import annotations

import json

from click.testing import CliRunner

from pcs.cli.main import cli

BLOCK_BYTES = 80 * 8 * 128 * 2 * 2 * 512


def _trace(tmp_path, ids_per_request):
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps({"timestamp": 1000 * i, "input_length": 1025, "output_length": 1,
                                        "hash_ids": ids}) + "\n" for i, ids in enumerate(ids_per_request)))
    return path


def _replay(path, *args):
    r = CliRunner().invoke(cli, ["replay", str(path), "-q", "--timing", "sequential", "--tier", "gpu=2blocks",
                                 "--tier", "cpu=8blocks", *args])
    assert r.exit_code == 0, r.output
    return r.stdout


def test_restored_blocks_and_bytes_per_link(tmp_path):
    path = _trace(tmp_path, [[1, 2, 10], [3, 4, 11], [1, 2, 12]])
    assert BLOCK_BYTES == 167_772_160
    d = json.loads(_replay(path, "--format", "json"))
    cpu = d["tiers"][1]
    assert (cpu["restored_blocks"], cpu["restored_bytes"]) == (2, 2 * BLOCK_BYTES)
    row = next(ln for ln in _replay(path).splitlines() if ln.startswith("restored to GPU"))
    assert row.split() == ["restored", "to", "GPU", "335.54", "MB", "from", "cpu", "2", "blk", "=", "335.54", "MB"]


def test_no_restore_says_zero_blocks(tmp_path):
    """Three different prompts: nothing is looked up again, so 0 blocks (0 B) come back over the cpu link."""
    path = _trace(tmp_path, [[1, 2, 10], [3, 4, 11], [5, 6, 12]])
    row = next(ln for ln in _replay(path).splitlines() if ln.startswith("restored to GPU"))
    assert "from cpu 0 blk = 0 B" in row


def test_written_blocks_and_bytes_per_tier(tmp_path):
    """r0 fills the 2-block GPU tier with its blocks 1, 2; r1 (blocks 3, 4) evicts them, write-back: both written to
    cpu, 2 x 167,772,160 B = 335.54 MB; nothing else leaves the GPU before the end."""
    path = _trace(tmp_path, [[1, 2, 10], [3, 4, 11]])
    row = next(ln for ln in _replay(path).splitlines() if ln.startswith("written to lower tiers"))
    assert row.split() == ["written", "to", "lower", "tiers", "335.54", "MB", "cpu", "2", "blk", "=", "335.54", "MB"]


def test_a_note_when_a_tier_restored_more_blocks_than_its_hits():
    """A preempted request's re-admission restores its lower-tier hits again (docs/semantics.md §9): cpu restored
    12 blocks for 10 hits, 2 again; ssd as many as its hits: no note; the GPU tier restores nothing."""
    from pcs.report.replay import _restored_again_notes

    tiers = [{"name": "gpu", "restored_blocks": 0, "hit_blocks": 5},
             {"name": "cpu", "restored_blocks": 12, "hit_blocks": 10},
             {"name": "ssd", "restored_blocks": 3, "hit_blocks": 3}]
    notes = _restored_again_notes({"tiers": tiers})
    assert len(notes) == 1 and notes[0].startswith("cpu: 12 blocks restored for 10 hit blocks: 2 restored again")
    assert _restored_again_notes({"tiers": tiers, "hybrid": {"manager": "vllm"}}) == []
