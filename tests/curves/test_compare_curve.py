"""`pcs compare --curve-capacities`: curve rows for the compared policies.

Two independent mechanisms must agree: the LRU column comes from the one-pass
stack-depth curve, the compare variants from full replays.
"""
import json

from click.testing import CliRunner

from helpers import per_trace
from pcs.cli.main import cli


def test_curve_rows_match_the_replays(exact_trace):
    small, big = per_trace(exact_trace, sample=(500, 2000), mooncake=(1000, 5000))
    args = ["compare", str(exact_trace), "--policy", "lru", "--policy", "fifo", "--timing", "sequential",
            "--tier", f"gpu={big}blocks", "--curve-capacities", f"{small}blocks,{big}blocks", "--quiet", "--format", "json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    by_policy = {v["policy"]: v for v in out["variants"]}
    at_big = next(r for r in out["curve"] if r["capacity_blocks"] == big)
    # the same configuration (one tier of `big` blocks, sequential) through two mechanisms
    assert at_big["lru_hit_ratio"] == by_policy["lru"]["hit_ratio"]
    assert at_big["fifo_hit_ratio"] == by_policy["fifo"]["hit_ratio"]
    for row in out["curve"]:
        assert row["lru_hit_ratio"] <= row["belady_hit_ratio"] <= row["ceiling_hit_ratio"]
        assert row["fifo_hit_ratio"] <= row["belady_hit_ratio"]
    assert out["curve"][0]["lru_hit_ratio"] <= out["curve"][1]["lru_hit_ratio"]


def test_bad_curve_capacities_one_line():
    result = CliRunner().invoke(cli, ["compare", "--curve-capacities", "lots", "--quiet"])
    assert result.exit_code == 2
    assert "--curve-capacities" in result.output
