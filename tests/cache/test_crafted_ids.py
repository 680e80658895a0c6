"""Block ids chosen against one multiply replay like any other ids.

The compiled tables (pcs/cache/_oatable.h via pcs/cache/_lruhier.h and _grouphier.h, and the read-only index of
pcs/cache/native.py ``key_index``) take a key's home slot from ``key_hash`` (pcs/_kernel_common.h:
``(k ^ k >> 32) x HMUL``). Ids
``((777 << 32) | j) x HMUL^-1 mod 2**64`` all had one home slot and one fingerprint under ``key x HMUL >> 32``. A
renaming of ids never changes a replay (docs/semantics.md §1: ids are compared only for equality), so the JSON of
20,000 such ids equals the JSON of the same trace with ids 1..20,000 -- and the hit ratio is the hand-worked one.
How fast the crafted trace replays is a benchmark figure (docs/performance.md), not a test.
"""
from __future__ import annotations

import json

import pytest

from helpers import invoke_json

_HMUL = 0x9E3779B97F4A7C15
_INV = pow(_HMUL, -1, 2**64)
N_REQ = 5_000          # x 4 ids = 20,000 distinct ids, each request seen twice


def _crafted(j: int) -> int:
    """The j-th id (j >= 1) whose ``id x HMUL`` has high 32 bits 777 (the tester's generator)."""
    return ((777 << 32) | j) * _INV % 2**64


def _write(path, name_of) -> None:
    """N_REQ requests of 4 fresh ids (2,048 tokens, B = 512), then the same N_REQ requests again."""
    with open(path, "w") as f:
        for rnd in range(2):
            for i in range(N_REQ):
                ids = [name_of(4 * i + k + 1) for k in range(4)]
                t = (rnd * N_REQ + i) * 1000
                f.write(json.dumps({"timestamp": t, "input_length": 2048, "output_length": 4, "hash_ids": ids}) + "\n")


def test_generator_makes_one_home_under_the_plain_multiply():
    # the premise: every crafted id has the same high 32 bits of id x HMUL (so one slot and one fingerprint before)
    assert {(_crafted(j) * _HMUL % 2**64) >> 32 for j in range(1, 20_001)} == {777}


@pytest.mark.parametrize("args", [
    ("--tier", "gpu=30000blocks", "--tier", "cpu=30000blocks", "--timing", "sequential"),
    ("--tier", "gpu=6000blocks", "--tier", "cpu=30000blocks"),
    ("--tier", "gpu=6000blocks", "--tier", "cpu=30000blocks", "--policy", "gdsf"),
    ("--model", "gemma-3-27b", "--tier", "gpu=4GB", "--tier", "cpu=40GB"),
])
def test_crafted_ids_replay_like_plain_ids(tmp_path, args):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    crafted, plain = tmp_path / "a" / "t.jsonl", tmp_path / "b" / "t.jsonl"
    _write(crafted, _crafted)
    _write(plain, lambda j: j)
    a, b = invoke_json("replay", crafted, *args), invoke_json("replay", plain, *args)
    a = json.loads(json.dumps(a).replace(str(tmp_path / "a"), "X"))
    b = json.loads(json.dumps(b).replace(str(tmp_path / "b"), "X"))
    for r in (a, b):        # the files differ by construction (other ids): their identity (size, hash, mtime) too
        r.pop("trace_file")
    assert a == b
    assert a["engine"].startswith("compiled-"), a["engine"]     # the compiled tables, not the Python reference
    if "sequential" in args:
        # by hand (§2, §4): 4 cacheable blocks, hits capped at (2048 - 1) // 512 = 3 blocks; all 20,000 ids fit, so
        # the first pass hits nothing and every request of the second hits 3 x 512 tokens:
        # 5,000 x 1,536 / (10,000 x 2,048) = 0.375
        assert a["hit_ratio"] == pytest.approx(0.375, abs=1e-12)
