"""pcs trace convert / synth and pcs trace stats count the same thing under one name, "block accesses"
(once, convert said "42,553 block hashes" where stats said "block accesses 42,553"). The count is
worked out from the file itself: the sum of len(hash_ids) over its lines (every block of every request)."""
from __future__ import annotations

import json

from helpers import invoke, invoke_json
from pcs.trace import DEFAULT_TRACE


def test_convert_and_stats_name_one_count_alike(tmp_path):
    with open(DEFAULT_TRACE) as f:
        accesses = sum(len(json.loads(line)["hash_ids"]) for line in f if line.strip())
    out = tmp_path / "t.parquet"
    info = invoke_json("trace", "convert", DEFAULT_TRACE, out)
    assert info["block_accesses"] == accesses and "block_ids" not in info
    assert invoke_json("trace", "stats", DEFAULT_TRACE)["block_accesses"] == accesses
    text = invoke("trace", "convert", DEFAULT_TRACE, tmp_path / "u.parquet").stdout
    assert f"{accesses:,} block accesses" in text and "block hashes" not in text
