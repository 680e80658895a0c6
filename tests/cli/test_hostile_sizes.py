"""Hostile input: one meaning for a size everywhere (docs/semantics.md §16).

Every capacity option -- replay/compare --tier, compare --tiers, curve
--capacities, compare --curve-capacities -- goes through
pcs.units.parse_capacity: a size with a unit or ``Nblocks``; a plain number
other than 0 is refused naming the two spellings that work; a non-zero size
under one block is an error.

Hand-worked bytes per block (K and V, 2 bytes per value at fp16/bf16):
- llama-3.1-8b, 512-token blocks (curve, Reserved, one rank):
  2 x 32 layers x 8 KV heads x 128 dims x 2 B x 512 = 67,108,864 B;
- llama-2-70b, TP 8, 512-token blocks (the replay/compare default GPU tier,
  per TP group: 8 ranks x 1 KV head each = the whole model's 8 heads):
  2 x 80 x 8 x 128 x 2 B x 512 = 167,772,160 B, so 1 GB holds
  floor(1e9 / 167,772,160) = 5 blocks (6 x 167,772,160 = 1,006,632,960 > 1e9).
"""
import json

import pytest

from helpers import SMALL_TRACE, assert_one_line_error, invoke
from pcs import units

T = SMALL_TRACE
GB_70B_BLOCKS = 5          # floor(1e9 / 167,772,160), worked above
LLAMA8B_BLOCK = 67_108_864


@pytest.mark.parametrize("args", [
    ["replay", T, "--tier", "gpu=400"],                       # the example: was a 400-byte, 0-block tier
    ["replay", T, "--tier", "gpu=1TB", "--tier", "cpu=400"],
    ["compare", T, "--tier", "gpu=400"],
    ["compare", T, "--tiers", "gpu=400,cpu=2TB"],
    ["curve", T, "--capacities", "400"],                      # was blocks here: now refused as everywhere
    ["compare", T, "--curve-capacities", "400"],
])
def test_plain_number_is_refused_by_every_capacity_option(args):
    assert_one_line_error(invoke(*args, "-q"), "400GB or 400blocks")


def test_blocks_and_bytes_work_in_every_capacity_option():
    r = invoke("replay", T, "--tier", "gpu=1GB", "--timing", "sequential", "-q", "--format", "json")
    assert r.exit_code == 0, r.output
    by_bytes = json.loads(r.stdout)
    assert by_bytes["tiers"][0]["capacity_blocks"] == GB_70B_BLOCKS
    r = invoke("replay", T, "--tier", f"gpu={GB_70B_BLOCKS}blocks", "--timing", "sequential", "-q", "--format", "json")
    assert json.loads(r.stdout)["hit_ratio"] == by_bytes["hit_ratio"]
    r = invoke("compare", T, "--tiers", "gpu=1GB", "--tiers", "gpu=4 blocks", "--timing", "sequential", "-q",
               "--format", "json")
    assert r.exit_code == 0, r.output
    assert [v["tiers"] for v in json.loads(r.stdout)["variants"]] == ["gpu=5blocks", "gpu=4blocks"]
    # 1 GB is 5 blocks of this model: the same configuration in two spellings is refused (docs/sweep.md)
    r = invoke("compare", T, "--tiers", "gpu=1GB", "--tiers", "gpu=5 blocks", "--timing", "sequential", "-q")
    assert r.exit_code == 2 and "come to the same tiers (gpu=5blocks)" in r.output, r.output
    r = invoke("compare", T, "--curve-capacities", "2blocks,1GB", "--timing", "sequential", "-q", "--format", "json")
    assert r.exit_code == 0, r.output
    assert [row["capacity_blocks"] for row in json.loads(r.stdout)["curve"]] == [2, GB_70B_BLOCKS]
    # 200 MB / 67,108,864 B = 2.98 -> 2 blocks; 3blocks as written
    r = invoke("curve", T, "--capacities", "3blocks,200MB", "--model", "llama-3.1-8b", "-q", "--format", "json")
    assert r.exit_code == 0, r.output
    assert [row["capacity_blocks"] for row in json.loads(r.stdout)["rows"]] == [2, 3]


@pytest.mark.parametrize("args, needle", [
    (["replay", T, "--tier", "gpu=100MB"], "smaller than one block"),          # 1e8 < 167,772,160 B
    (["replay", T, "--tier", "gpu=1TB", "--tier", "cpu=1kB"], "smaller than one block"),
    (["replay", T, "--tier", "gpu=0.5B"], "a number of bytes must be whole"),
    (["curve", T, "--capacities", "10MB", "--model", "llama-3.1-8b"], "smaller than one block"),
    (["compare", T, "--curve-capacities", "100MB"], "smaller than one block"),
])
def test_a_tier_smaller_than_one_block_is_an_error_unless_zero(args, needle):
    assert_one_line_error(invoke(*args, "-q"), needle, "0")


@pytest.mark.parametrize("args", [
    ["replay", T, "--tier", "gpu=0", "--timing", "sequential"],
    ["replay", T, "--tier", "gpu=0blocks", "--timing", "sequential"],
    ["replay", T, "--tier", "gpu=1TB", "--tier", "cpu=0GB", "--timing", "sequential"],
    ["curve", T, "--capacities", "0,1blocks"],
])
def test_zero_is_an_empty_tier_in_any_spelling(args):
    r = invoke(*args, "-q", "--format", "json")
    assert r.exit_code == 0, r.output


def test_parse_capacity_spellings():
    assert units.parse_capacity("0").blocks == 0
    assert units.parse_capacity("5000 Blocks").blocks == 5000
    assert units.parse_capacity("1e3blocks").blocks == 1000
    assert units.parse_capacity("2TB").size_bytes == 2 * 10**12
    assert units.parse_capacity("1GiB").to_blocks(2**20, "x") == 1024         # 2^30 / 2^20
    for bad, needle in [("400", "400GB or 400blocks"), ("1.5blocks", "whole number"), ("-5blocks", "whole number"),
                        ("0.1B", "a number of bytes must be whole"), ("1e999999GB", "too large"), ("1e999999blocks", "too large"),
                        ("lots", "5000blocks"), ("nan", "5000blocks")]:
        with pytest.raises(ValueError, match=needle):
            units.parse_capacity(bad)
    with pytest.raises(ValueError, match="smaller than one block"):
        units.parse_capacity("1kB").to_blocks(LLAMA8B_BLOCK, "--capacities '1kB'")


def test_footprint_says_per_rank_and_replay_says_per_group():
    r = invoke("footprint", "--model", "llama-3.1-70b", "--tokens", "1000", "--tp", "4")
    assert r.exit_code == 0 and "bytes per rank" in r.stdout and "per TP group" in r.stdout
    r = invoke("replay", T, "--tier", "gpu=5blocks")
    assert r.exit_code == 0 and "replay tiers are per TP group" in r.stdout
