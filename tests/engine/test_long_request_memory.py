"""One very long request replays under a memory limit: the prefill table of a joined batch reserves the entries
it knows (``pcs.engine.chunks._room``: the batch's own, then doubling), extrapolated to a joined batch of
``MERGE_REQUESTS`` requests only up to ``pcs.engine.chunks.RESERVE_ENTRIES`` (32 MiB), never beyond (an unbounded
extrapolation was once 50,000 x 65,537 float64 = 26 GB for one 50,000-block request, refused as out of memory under
a 4 GB address-space limit).

The run is a subprocess with ``RLIMIT_AS`` at 4 GB: request 0 has 50,000 blocks (ids 0 .. 49,999, 512 tokens
each), request 1 five blocks ``0, 1, 2, 3, 99999`` a second later, GPU tier 60,000 blocks (both fit, nothing is
evicted). By hand: request 0 hits nothing; request 1 finds its four leading blocks cached by request 0 (the fifth
is new): 4 hit blocks, 4 x 512 = 2,048 hit tokens, 1 missed block; the hit ratio is 2,048 / (25,600,000 + 2,560).
"""
from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

from helpers import fresh_run

LIMIT = 4 * 1024 ** 3
WRAPPER = """
import resource, runpy, sys
resource.setrlimit(resource.RLIMIT_AS, ({lim}, {lim}))
sys.argv = ["pcs"] + sys.argv[1:]
runpy.run_module("pcs", run_name="__main__")
"""


def _trace(path: Path) -> None:
    rows = [{"timestamp": 0, "input_length": 512 * 50_000, "output_length": 2, "hash_ids": list(range(50_000))},
            {"timestamp": 1000, "input_length": 512 * 5, "output_length": 2, "hash_ids": [0, 1, 2, 3, 99_999]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS as Linux has it")
@pytest.mark.parametrize("engine", ["auto", "reference", "compiled-hierarchy"])
def test_a_50000_block_request_replays_under_4_gb(tmp_path, engine):
    trace, rows = tmp_path / "long.jsonl", tmp_path / "rows.csv"
    _trace(trace)
    r = fresh_run(["-c", WRAPPER.format(lim=LIMIT), "replay", str(trace), "-q", "--format", "json", "--tier",
                   "gpu=60000blocks", "--engine", engine, "--requests-out", str(rows)], timeout=600)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["hit_ratio"] == 2048 / (25_600_000 + 2560)
    with open(rows, newline="") as f:
        got = [(d["hit_blocks"], d["missed_blocks"], d["hit_tokens"]) for d in csv.DictReader(f)]
    assert got == [("0", "50000", "0"), ("4", "1", "2048")]
