"""Readers, chained hashing and the open_trace contract (formats, gzip, stdin, batches)."""
from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import per_trace
from pcs.trace import DEFAULT_TRACE, Request, open_trace
from pcs.trace.hashing import ROOT_HASH, MMInput, hash_block, hash_request_blocks

MOONCAKE_LINES = [
    # 1030 tokens -> ceil(1030/512) = 3 ids
    {"timestamp": 0, "input_length": 1030, "output_length": 7, "hash_ids": [0, 1, 2]},
    {"timestamp": 1500, "input_length": 512, "output_length": 0, "hash_ids": [0]},
    {"timestamp": 1500, "input_length": 0, "output_length": 3, "hash_ids": []},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_mooncake_fields_and_units(tmp_path):
    t = open_trace(write_jsonl(tmp_path / "m.jsonl", MOONCAKE_LINES))
    assert (t.format, t.block_size) == ("mooncake", 512)
    reqs = list(t)
    assert [r.request_id for r in reqs] == [0, 1, 2]
    assert [r.arrival_s for r in reqs] == [0.0, 1.5, 1.5]          # ms -> s
    assert [r.prompt_tokens for r in reqs] == [1030, 512, 0]
    assert [r.output_tokens for r in reqs] == [7, 0, 3]
    assert reqs[0].block_hashes.dtype == np.uint64 and reqs[0].block_hashes.tolist() == [0, 1, 2]
    assert reqs[2].num_blocks == 0 and reqs[0].session_id is None
    # re-iterable: a second pass streams the file again
    assert [r.prompt_tokens for r in t] == [1030, 512, 0]


def test_iter_batches_columns(tmp_path):
    t = open_trace(write_jsonl(tmp_path / "m.jsonl", MOONCAKE_LINES))
    (b,) = list(t.iter_batches())
    assert b.arrival_s.dtype == np.float64 and b.prompt_tokens.dtype == np.int64
    assert b.block_offsets.tolist() == [0, 3, 4, 4] and b.block_offsets.dtype == np.int64
    assert b.block_hashes.dtype == np.uint64 and b.block_hashes.tolist() == [0, 1, 2, 0]
    assert b.num_blocks.tolist() == [3, 1, 0]


def test_bailian_fields(tmp_path):
    rows = [{"chat_id": 7, "parent_chat_id": -1, "timestamp": 0.25, "input_length": 20, "output_length": 4,
             "type": "text", "turn": 1, "hash_ids": [10, 11]},
            {"chat_id": 8, "parent_chat_id": 7, "timestamp": 3.5, "input_length": 40, "output_length": 4,
             "type": "file", "turn": 2, "hash_ids": [10, 11, 12]}]
    t = open_trace(write_jsonl(tmp_path / "b.jsonl", rows))
    assert (t.format, t.block_size) == ("bailian", 16)   # ceil(20/16) = 2, ceil(40/16) = 3
    a, b = list(t)
    assert (a.arrival_s, b.arrival_s) == (0.25, 3.5)      # seconds
    assert (b.session_id, b.parent_id, b.turn, b.type) == (8, 7, 2, "file")
    assert a.parent_id == -1


def test_gzip_and_stdin(tmp_path):
    text = "".join(json.dumps(r) + "\n" for r in MOONCAKE_LINES)
    gz = tmp_path / "m.jsonl.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    assert [r.prompt_tokens for r in open_trace(gz)] == [1030, 512, 0]
    code = ("import json; from pcs.trace import trace_stats, open_trace; "
            "t = open_trace('-'); print(json.dumps([t.format, trace_stats(t)['requests'], sum(1 for _ in t)]))")
    out = subprocess.run([sys.executable, "-c", code], input=gzip.compress(text.encode()), capture_output=True, check=True)
    assert json.loads(out.stdout) == ["mooncake", 3, 3]   # stdin is re-iterable too


def test_default_trace_is_bundled_and_found():
    assert DEFAULT_TRACE.name == "sample_chat.jsonl" and DEFAULT_TRACE.exists()
    t = open_trace()
    assert (t.format, t.block_size) == ("mooncake", 512)
    n = sum(len(b) for b in t.iter_batches())
    assert 1000 <= n <= 5000


def test_default_trace_missing_is_a_clear_error(monkeypatch, tmp_path):
    import pcs.trace.api as api

    monkeypatch.setattr(api, "DEFAULT_TRACE", tmp_path / "nope.jsonl")
    with pytest.raises(ValueError, match="default sample trace .* is missing"):
        api.open_trace()


def test_request_is_frozen_and_slotted():
    r = Request(0, 0.0, 1, 1, np.zeros(1, np.uint64), 16)
    with pytest.raises(AttributeError):
        r.prompt_tokens = 2
    assert not hasattr(r, "__dict__")


# --- hashing ----------------------------------------------------------------------------------

def test_hash_block_matches_the_documented_encoding():
    # independent re-implementation of the docstring's byte layout
    toks = [5, 70000, 2**32 - 1]
    payload = (ROOT_HASH.to_bytes(8, "little") + (3).to_bytes(4, "little")
               + b"".join(t.to_bytes(4, "little") for t in toks))
    want = int.from_bytes(hashlib.blake2b(payload, digest_size=8, person=b"pcs-blk1").digest(), "little")
    assert hash_block(ROOT_HASH, np.array(toks, "<u4").tobytes()) == want
    assert hash_request_blocks(np.array(toks, np.uint32), 16).tolist() == [want]
    root = int.from_bytes(hashlib.blake2b(b"pcs block hash root v1", digest_size=8).digest(), "little")
    assert ROOT_HASH == root


def test_chaining_extra_keys_and_partial_blocks():
    a = np.arange(100, dtype=np.uint32)
    h = hash_request_blocks(a, 16)
    assert h.size == 7 and h.dtype == np.uint64                 # ceil(100/16)
    # same prefix -> same leading hashes; a change in block 2 changes blocks 2.. only
    b = a.copy()
    b[40] += 1
    hb = hash_request_blocks(b, 16)
    assert (hb[:2] == h[:2]).all() and (hb[2:] != h[2:]).all()
    # same tokens under a different parent are a different block
    assert hash_request_blocks(a[16:32], 16)[0] != h[1]
    # the partial last block's hash covers its tokens: 100 vs 99 tokens differ only there
    h99 = hash_request_blocks(a[:99], 16)
    assert (h99[:6] == h[:6]).all() and h99[6] != h[6]
    # salt mixes into block 0 (hence all); lora into all; a positioned mm input from its block on
    salted = hash_request_blocks(a, 16, cache_salt="tenant-a")
    assert (salted != h).all()
    assert (hash_request_blocks(a, 16, lora_id=3) != h).all()
    assert (hash_request_blocks(a, 16, lora_id=3) != hash_request_blocks(a, 16, lora_id="3")).all()
    mm = hash_request_blocks(a, 16, mm_inputs=[MMInput("img", 50, 10)])   # tokens 50..59 -> block 3
    assert (mm[:3] == h[:3]).all() and (mm[3:] != h[3:]).all()
    # deterministic across processes (fixed root, no PYTHONHASHSEED dependence)
    code = "import numpy as np; from pcs.trace.hashing import hash_request_blocks as f; print(f(np.arange(100, dtype=np.uint32), 16).tolist())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "123", "PATH": ""})
    assert json.loads(out.stdout) == h.tolist()


def test_known_prefix_hashes_are_reused_exactly():
    a = np.arange(1000, dtype=np.uint32)
    full = hash_request_blocks(a, 64)
    assert (hash_request_blocks(a, 64, known=full[:5]) == full).all()


def test_token_trace_reader(tmp_path):
    rows = [{"token_ids": list(range(40)), "timestamp": 5, "output_length": 2},
            {"token_ids": list(range(35)), "cache_salt": "s"},
            {"token_ids": list(range(35)), "timestamp": 9, "lora_id": 1, "mm_hashes": ["x", {"hash": "y", "offset": 3, "length": 2}]}]
    t = open_trace(write_jsonl(tmp_path / "t.jsonl", rows))
    assert (t.format, t.block_size) == ("tokens", 16)
    a, b, c = list(t)
    assert (a.arrival_s, b.arrival_s, c.arrival_s) == (0.005, 0.005, 0.009)   # absent: previous
    assert (a.output_tokens, b.output_tokens) == (2, 0)
    assert a.block_hashes.tolist() == hash_request_blocks(np.arange(40, dtype=np.uint32), 16).tolist()
    assert b.block_hashes.tolist() == hash_request_blocks(np.arange(35, dtype=np.uint32), 16, cache_salt="s").tolist()
    assert a.extra_keys is None and b.extra_keys == (("cache_salt", "s"),)
    assert c.extra_keys == (("lora_id", 1), ("mm_hashes", (("x", 0, 1), ("y", 3, 2))))
    assert c.block_hashes.tolist() == hash_request_blocks(
        np.arange(35, dtype=np.uint32), 16, lora_id=1, mm_inputs=[MMInput("x"), MMInput("y", 3, 2)]).tolist()
    # the same token trace at another block size: ceil(40/8) = 5 blocks
    assert [r.num_blocks for r in open_trace(tmp_path / "t.jsonl", block_size=8)] == [5, 5, 5]


def _plain_counts(path) -> tuple[int, int]:
    """(requests, block ids) by a plain JSON read, line by line."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines()]
    return len(rows), sum(len(r["hash_ids"]) for r in rows)


def test_mooncake_trace_counts(exact_trace):
    # real trace: counts of the public release file (docs/traces.md); sample: a plain JSON read
    n = blocks = 0
    ok = True
    for b in open_trace(exact_trace).iter_batches():
        n += len(b)
        blocks += int(b.block_hashes.size)
        ok &= bool((np.diff(b.block_offsets) == -(-b.prompt_tokens // 512)).all())
    want = per_trace(exact_trace, sample=None, mooncake=(12031, 288500)) or _plain_counts(exact_trace)
    assert (n, blocks, ok) == (*want, True)
