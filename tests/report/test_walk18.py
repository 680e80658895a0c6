"""The new-user walkthrough's findings (fleet shared-tier label, hybrid padding note, envelope split, ...), each
checked against values worked out by hand in the comments."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import invoke

ROOT = Path(__file__).resolve().parents[2]


def _json(*args):
    r = invoke(*args, "--format", "json", "-q")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_fleet_shared_tier_share_is_not_called_a_recovery(tmp_path):
    # Two requests [1,2,3] (3 blocks of 512 = 1,536 tokens) at 0 s and 1 s, 2 instances round-robin, a write-through
    # shared tier. Fleet ceiling = 1,024 / 3,072 = 33.3 %; own sub-traces (one request each) 0 % -> routing loses
    # 33.3 pts. Instance 2's request reads blocks 1, 2 from the shared tier (written through by instance 1):
    # 1,024 / 3,072 = 33.3 % of prompt tokens. The row names that a share of prompt tokens, not "recovers".
    from pcs.fleet import fleet_replay
    from pcs.report.fleet import render_fleet
    t = tmp_path / "two.jsonl"
    t.write_text('{"timestamp": 0, "input_length": 1536, "output_length": 1, "hash_ids": [1, 2, 3]}\n'
                 '{"timestamp": 1000, "input_length": 1536, "output_length": 1, "hash_ids": [1, 2, 3]}\n')
    s = fleet_replay(str(t), instances=2, router="round-robin", timing="sequential",
                     shared_tier="remote=100blocks", write_policy="through").summary.to_dict()
    assert s["shared_tier"]["hit_ratio"] == pytest.approx(1024 / 3072)
    text = render_fleet(s)
    row = next(line for line in text.splitlines() if line.startswith("routing (own sub-traces)"))
    assert "-33.3 pts split across instances" in row and "serves 33.3 % of prompt tokens" in row
    assert "recovers" not in text
    line = next(x for x in text.splitlines() if x.startswith("prompt tokens served by it (its hit ratio)"))
    assert line.split()[-2:] == ["33.3", "%"]


def test_hybrid_padding_note_matches_its_table():
    # qwen3-next-80b-a3b at TP 8, block 512 (the sample's): one attention page = 12 layers x 1 KV head x 256 x
    # (K, V) x 2 B x 512 tokens x 8 ranks = 50,331,648 B; a block = 4 pages (1 attention + 3 state) = 201,326,592 B;
    # fp8 halves the page: 100,663,296 B (x0.500). Payload: attention 50,331,648 + state 36 layers x 1,097,728 B =
    # 39,518,208 -> 89,849,856 B; fp8: 25,165,824 + 39,518,208 = 64,684,032 B (x0.720). The stored bytes shrink
    # more than the payload, so the notes may not say padding does not shrink.
    res = _json("replay", str(ROOT / "traces" / "sample_chat.jsonl"), "--model", "qwen3-next-80b-a3b",
                "--tier", "gpu=100GB")
    lens = res["payload_lens"]
    assert lens["gpu_bytes_per_block"] == [201_326_592, 100_663_296]
    assert lens["reference_bytes_per_block"] == [89_849_856, 64_684_032]
    text = " ".join(invoke("replay", str(ROOT / "traces" / "sample_chat.jsonl"), "--model", "qwen3-next-80b-a3b",
                           "--tier", "gpu=100GB", "-q").stdout.split())
    assert "shrinks the payload, not in-page scales, padding" not in text
    assert "the state's padding up to the attention page included" in text
    assert "stored bytes move more than the payload (x0.500 against x0.720)" in text


def test_dense_model_keeps_the_payload_note():
    # llama-2-70b fp16 -> fp8 (the default run): payload and GPU bytes both x0.500, no padding note.
    text = " ".join(invoke("replay", "-q").stdout.split())
    assert "a smaller KV dtype shrinks the payload, not in-page scales, padding, setup or compute" in text
    assert "move more than the payload" not in text
