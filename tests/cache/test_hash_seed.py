"""The compiled block tables hash with a per-process seed (pcs/_kernel_common.h ``key_hash``): ids crafted against
the unseeded hash, ``k_i = f(i x HMUL^-1 mod 2**64)`` with ``f(y) = y ^ (y >> 32)`` (an involution, so
``(k_i ^ k_i >> 32) x HMUL = i``: every id at home slot 0, fingerprint 0), replay as any ids do; and no output
depends on where a key sits, so two processes (two seeds) print the same bytes.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import fresh_run, index_probes, invoke

ROOT = Path(__file__).resolve().parents[2]
HMUL = 0x9E3779B97F4A7C15
M64 = (1 << 64) - 1


def crafted(i: int) -> int:
    """The id whose unseeded key_hash is ``i``."""
    y = (i * pow(HMUL, -1, 1 << 64)) & M64
    return y ^ (y >> 32)


def test_the_crafted_ids_invert_the_unseeded_hash():
    for i in (1, 2, 3, 1000):
        k = crafted(i)
        assert ((k ^ (k >> 32)) * HMUL) & M64 == i


@pytest.mark.parametrize("engine", ["compiled-hierarchy", "reference"])
def test_crafted_ids_hit_as_worked_by_hand(tmp_path, engine):
    # request 0: crafted ids 1..50 (50 blocks of 512 tokens); request 1, 10 s later: its first 40 ids, then 10 new
    # (51..60). The GPU tier holds 1,000 blocks: nothing is evicted, so request 1 hits its 40 leading blocks
    # (40 x 512 = 20,480 tokens) and misses 10; request 0 hits nothing.
    ids0 = [crafted(i) for i in range(1, 51)]
    ids1 = ids0[:40] + [crafted(i) for i in range(51, 61)]
    trace = tmp_path / "crafted.jsonl"
    trace.write_text("".join(json.dumps({"timestamp": t, "input_length": 512 * len(h), "output_length": 4,
                                         "hash_ids": h}) + "\n" for t, h in ((0, ids0), (10_000, ids1))))
    rows = tmp_path / "rows.csv"
    r = invoke("replay", trace, "-q", "--format", "json", "--tier", "gpu=1000blocks", "--compute", "infinite",
               "--engine", engine, "--requests-out", rows)
    assert r.exit_code == 0, r.output
    lines = rows.read_text().splitlines()
    head = lines[0].replace('"', "").split(",")
    got = [dict(zip(head, ln.split(","))) for ln in lines[1:]]
    assert [(g["hit_blocks"], g["missed_blocks"], g["hit_tokens"]) for g in got] == [("0", "50", "0"),
                                                                                    ("40", "10", "20480")]


def test_two_processes_print_the_same_bytes(tmp_path):
    """Each process draws its own seed; the summary and the per-request table do not change."""
    outs = []
    for k in range(2):
        rows = tmp_path / f"rows{k}.csv"
        r = fresh_run(["-m", "pcs", "replay", str(ROOT / "traces" / "sample_chat.jsonl"), "-q", "--format", "json",
                       "--tier", "gpu=300blocks", "--tier", "cpu=900blocks", "--engine", "compiled-hierarchy",
                       "--requests-out", str(rows)], timeout=300)
        assert r.returncode == 0, r.stderr
        summary = json.loads(r.stdout)
        summary.pop("elapsed_s", None)
        outs.append((json.dumps(summary, sort_keys=True), rows.read_bytes()))
    assert outs[0] == outs[1]




def test_the_read_only_index_spreads_crafted_ids():
    # the index of gdsf / belady (pcs/cache/native.py key_index, C data_find). 2,000 crafted ids: unseeded
    # (seed 0, the index before) every one's hash is i <= 2,000, so every home slot is 0 (of 4,096: 2**12 >=
    # 2 x 2,001): the ids fill slots 0..1999 and the lookups read 1 + 2 + ... + 2,000 = 2,001,000 slots.
    # Seeded (this process's seed, and fixed ones) they spread like any ids: linear probing at load <= 1/2
    # reads about 1.5 slots a key (Knuth, TAOCP vol. 3 §6.4); 3 a key (6,000) is far above that, far below the
    # quadratic count.
    import numpy as np

    from pcs.cache import native

    keys = [crafted(i) for i in range(1, 2001)]
    arr = np.array(keys, dtype=np.uint64)
    assert index_probes(native.key_index(arr, 0), keys, 0) == 2_001_000
    for seed in (native.INDEX_SEED, 0x0123456789ABCDEF, 0xD1B54A32D192ED03):   # random-looking, as drawn
        assert index_probes(native.key_index(arr, seed), keys, seed) <= 6_000, seed


@pytest.mark.parametrize("policy", ["gdsf", "belady"])
def test_an_index_of_another_seed_reads_right(tmp_path, monkeypatch, policy):
    # the index carries its seed to C (an oracle made in another process, another seed): with the seed set to
    # one no process draws, the compiled policy still finds every known block, so the replay equals the Python
    # reference's (which has no index). 60 requests over 8 chains of 10 crafted ids (request r: chain 5r mod 8,
    # its first 3 + 7r mod 8 ids) on tiers of 12 + 20 blocks: blocks compete. (Handing C a seed other than the
    # index's moves belady's hit ratio here from 0.426 to 0.236: the comparison sees a wrong index.)
    from pcs.cache import native

    monkeypatch.setattr(native, "INDEX_SEED", 0x5EED)
    trace = tmp_path / "crafted.jsonl"
    with open(trace, "w") as f:
        for r in range(60):
            chain, n = (r * 5) % 8, 3 + (r * 7) % 8
            f.write(json.dumps({"timestamp": r * 1000, "input_length": 512 * n, "output_length": 4,
                                "hash_ids": [crafted(chain * 10 + j + 1) for j in range(n)]}) + "\n")
    outs = []
    for engine in ("compiled-hierarchy", "reference"):
        r = invoke("replay", trace, "-q", "--format", "json", "--tier", "gpu=12blocks", "--tier", "cpu=20blocks",
                   "--policy", policy, "--engine", engine)
        assert r.exit_code == 0, r.output
        got = json.loads(r.output)
        outs.append({k: v for k, v in got.items() if "engine" not in k and k not in ("elapsed_s", "replay_command")})
        if engine != "reference":
            assert got["engine"] == "compiled-hierarchy"
    assert outs[0] == outs[1]
