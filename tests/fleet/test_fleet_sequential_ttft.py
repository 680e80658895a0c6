"""A fleet under ``--timing sequential`` reports TTFT as a replay does (docs/cluster.md: one instance behind a router
is the replay of the trace): each request's TTFT with no queue, so the fleet's p50 / p99 are the replay's
``envelope.ttft_p50_s`` / ``ttft_p99_s``, not "- / -"."""
from __future__ import annotations

from pathlib import Path

from tests.helpers import invoke, invoke_json

ROOT = Path(__file__).resolve().parents[2]
EXACT = str(ROOT / "traces" / "sample_exact.jsonl")


def _json(*args):
    return invoke_json("replay", EXACT, "--timing", "sequential", *args)


def test_one_instance_sequential_ttft_is_the_replays():
    one, fleet = _json(), _json("--instances", "1")
    want = (one["envelope"]["ttft_p50_s"], one["envelope"]["ttft_p99_s"])
    assert None not in want
    assert (fleet["ttft_p50_s"], fleet["ttft_p99_s"]) == want
    row = fleet["per_instance"][0]
    assert (row["ttft_p50_s"], row["ttft_p99_s"]) == want


def test_the_sequential_ttft_row_says_no_queue():
    r = invoke("replay", EXACT, "-q", "--timing", "sequential", "--instances", "1")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0].startswith("pcs replay: ") and "| 1 instance |" in lines[0]   # one instance, not "1 instances"
    row = next(line for line in lines if line.startswith("TTFT p50 / p99"))
    assert row.startswith("TTFT p50 / p99 (no queue: --timing sequential)") and "- / -" not in row
