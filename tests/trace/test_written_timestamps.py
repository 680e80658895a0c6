"""Mooncake timestamps written by pcs read back as the arrival pcs held (pcs/trace/convert.py ``ms_stamp``):
the reader divides the written ms by 1000 once, so the writer picks the shortest decimal whose
quotient is the arrival -- a whole ms when that is exact, else 15, 16 or 17 digits, else (an arrival no double
ms reaches) the nearest, 1 ulp off."""
from __future__ import annotations

import json
import math

import pytest

from helpers import invoke

ROWS = [(1, [1, 2]), (3, [3, 4]), (7.5, [5, 6])]   # (timestamp ms, ids): 600 tokens = 2 blocks of 512


def _transform(tmp_path, speed, out_name):
    src = tmp_path / "t.jsonl"
    src.write_text("".join(json.dumps({"timestamp": ts, "input_length": 600, "output_length": 5, "hash_ids": ids})
                           + "\n" for ts, ids in ROWS))
    out = tmp_path / out_name
    r = invoke("trace", "transform", src, out, "--speed", speed, "-q")
    assert r.exit_code == 0, r.output
    return out


@pytest.mark.parametrize("speed,want", [
    # 1/3 ms: 15 digits (0.333333333333333) read back 3.33333333333333e-4 s, 3.3e-19 s below 0.001/3 s where
    # the ulp is 5.4e-20 s: 16 digits are needed; 3/3 = 1 and 7.5/3 = 2.5 are whole or short
    ("3", [0.3333333333333333, 1, 2.5]),
    ("0.5", [2, 6, 15]),                    # x2: whole ms written as ints
])
def test_transform_speed_writes_the_shortest_exact_decimal(tmp_path, speed, want):
    out = _transform(tmp_path, speed, "o.jsonl")
    got = [json.loads(line)["timestamp"] for line in out.read_text().splitlines()]
    assert got == want and [type(g) for g in got] == [type(w) for w in want]


@pytest.mark.parametrize("speed", ["1e6", "3", "7"])
def test_jsonl_reads_back_the_arrivals_its_parquet_twin_keeps(tmp_path, speed):
    # Parquet stores float64 seconds as held; the JSONL form must read back to them (to 1 ulp where no double ms
    # divides to the arrival: 1e-3 s / 1e6 = 1.0000000000000001e-09 s is such a one)
    from pcs.trace.api import open_trace

    def arrivals(path, **kw):
        return [a for b in open_trace(str(path), **kw).iter_batches() for a in b.arrival_s.tolist()]

    pq, js = arrivals(_transform(tmp_path, speed, "o.parquet")), arrivals(_transform(tmp_path, speed, "o.jsonl"))
    assert all(abs(a - b) <= math.ulp(a) for a, b in zip(pq, js)) and len(pq) == len(js) == 3
    if speed != "1e6":
        assert pq == js
