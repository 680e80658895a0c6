"""Polish: messages and an empty --gpu, each one line at the CLI, exit 2."""
from __future__ import annotations

from helpers import ROOT, assert_one_line_error, invoke

T = ROOT / "traces" / "sample_chat.jsonl"


def test_an_empty_gpu_name_is_refused_not_the_default():
    # on main "" fell through `hardware or DEFAULTS["gpu"]` (pcs/engine/api.py) and ran as h100-sxm, exit 0
    out = invoke("replay", T, "--tier", "gpu=40blocks", "--gpu", "", "-q")
    assert_one_line_error(out, "unknown GPU ''; valid: h100-sxm")


def test_a_stale_delay_without_router_says_the_default_is_round_robin():
    out = invoke("compare", T, "--router-stale-s", "5", "--policy", "lru", "--policy", "fifo",
                 "--tier", "gpu=40blocks")
    line = assert_one_line_error(out, "no router in use reads them (round-robin; without --router the default "
                                 "is round-robin; prefix and cache-aware do)")
    assert "no --router given" not in line


def test_a_truncated_json_line_says_at_once(tmp_path):
    # line 2 opens the string "ab at column 34: {(1) "timestamp"(2-12) :(13) sp 1(15) ,(16) sp
    # "input_length"(18-31) :(32) sp(33) "(34)
    p = tmp_path / "trunc.jsonl"
    p.write_text('{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n'
                 '{"timestamp": 1, "input_length": "ab')
    line = assert_one_line_error(invoke("replay", p, "--tier", "gpu=40blocks", "-q"),
                                 "trunc.jsonl:2: invalid JSON: Unterminated string starting at column 34")
    assert "at at" not in line
