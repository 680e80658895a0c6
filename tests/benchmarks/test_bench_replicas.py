"""Benchmark replicas: copies of a trace share no block id, whatever the trace's ids (benchmarks/common.py).

The trace of two rows, ids [182790, 182791] then [0, 1]: least id 0, largest 182791, so the id span is
182791 - 0 + 1 = 182792 and copy 2 holds [365582, 365583] and [182792, 182793] -- none of copy 1's four
ids, and the two requests of one copy share none either: every lookup misses, hit ratio 0. (The old fixed
offset 182,790 put copy 2's second request on [182790, 182791], copy 1's first request: hits.)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import common  # noqa: E402

from pcs.errors import UserError  # noqa: E402

ROWS = [{"timestamp": 0, "input_length": 1024, "output_length": 10, "hash_ids": [182790, 182791]},
        {"timestamp": 1, "input_length": 1024, "output_length": 10, "hash_ids": [0, 1]}]


def _trace(tmp_path: Path, rows=ROWS) -> Path:
    p = tmp_path / "coll.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_id_span_is_max_minus_min_plus_one():
    assert common.id_span(0, 182789, 11) == 182790          # Mooncake: ids 0..182789
    assert common.id_span(5, 9, 3) == 5


def test_id_span_refuses_copies_past_u64():
    assert common.id_span(2**64 - 1, 2**64 - 1, 1) == 1      # one copy of the largest id: fits
    with pytest.raises(UserError, match="2\\^64 - 1"):
        common.id_span(2**64 - 1, 2**64 - 1, 2)              # copy 2 would be id 2^64
    with pytest.raises(UserError):
        common.id_span(0, 2**63, 2)                         # 2^63 + (2^63 + 1) = 2^64 + 1


def test_replicate_mooncake_offsets_by_span(tmp_path):
    # 2 rows x 2 cacheable blocks (1024 // 512) = 4 per copy; 8 accesses -> 2 copies
    rep = common.replicate_mooncake(_trace(tmp_path), tmp_path, 8)
    assert (rep.copies, rep.id_stride) == (2, 182792)
    ids = [json.loads(line)["hash_ids"] for line in rep.path.read_text().splitlines()]
    assert ids == [[182790, 182791], [0, 1], [365582, 365583], [182792, 182793]]


def test_bench_replay_copies_share_nothing(tmp_path):
    import bench_replay

    import pcs

    src = bench_replay.Replicated(_trace(tmp_path), 2)
    assert src.id_span == 182792
    res = pcs.replay(src, model="llama-3.1-70b", tiers=["gpu=100blocks"], timing="sequential")
    assert res.summary.hit_ratio == 0.0


def test_bench_replay_refuses_ids_past_u64(tmp_path):
    import bench_replay

    rows = [{"timestamp": 0, "input_length": 512, "output_length": 1, "hash_ids": [2**64 - 1]}]
    with pytest.raises(UserError, match="2\\^64 - 1"):
        bench_replay.Replicated(_trace(tmp_path, rows), 2)
