"""Mooncake timestamps written by pcs carry no last-bit noise of the seconds -> ms product (pcs/trace/convert.py
``_ms``): 15 significant digits, a whole ms within 1e-6 ms of one."""
from __future__ import annotations

import json

import pytest

from helpers import invoke

ROWS = [(1, [1, 2]), (3, [3, 4]), (7.5, [5, 6])]   # (timestamp ms, ids): 600 tokens = 2 blocks of 512


@pytest.mark.parametrize("speed,want", [
    ("1e6", [1e-06, 3e-06, 7.5e-06]),       # ms / 1e6 by hand
    ("3", [0.333333333333333, 1, 2.5]),     # 1/3 to 15 digits; 3/3 = 1 a whole ms; 7.5/3 = 2.5
    ("0.5", [2, 6, 15]),                    # x2: whole ms written as ints
])
def test_transform_speed_writes_the_decimal_a_user_works_out(tmp_path, speed, want):
    src = tmp_path / "t.jsonl"
    src.write_text("".join(json.dumps({"timestamp": ts, "input_length": 600, "output_length": 5, "hash_ids": ids})
                           + "\n" for ts, ids in ROWS))
    out = tmp_path / "o.jsonl"
    r = invoke("trace", "transform", src, out, "--speed", speed, "-q")
    assert r.exit_code == 0, r.output
    got = [json.loads(line)["timestamp"] for line in out.read_text().splitlines()]
    assert got == want and [type(g) for g in got] == [type(w) for w in want]
