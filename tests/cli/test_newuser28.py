"""The new user's findings of round 28, each checked against the rule it follows.

Block arithmetic, worked by hand: llama-2-70b fp16 at block 512 (the default model and block) is 80 layers x 8 KV
heads x 128 x 2 (K, V) x 2 B x 512 tokens = 167,772,160 B per block; 200 GB holds floor(200e9 / 167,772,160) =
1,192 blocks = 199,984,414,720 B (199.98 GB), 1 TB holds 5,960 blocks = 999,922,073,600 B (999.92 GB).
"""
from __future__ import annotations

import pytest

from pcs.errors import UserError
from pcs.units import parse_capacity
from tests.helpers import assert_one_line_error, invoke, invoke_json

BLOCK = 80 * 8 * 128 * 2 * 2 * 512


# -- blocks spelled as the tables print them ("1,192 blk") -----------------------------------------------------------

@pytest.mark.parametrize("text", ["5000blk", "5000 blk", "5000BLK", "5000blocks", "5000 block"])
def test_blk_is_a_block_count_as_the_tables_print_it(text):
    assert parse_capacity(text).blocks == 5000


def test_blk_on_the_command_line_is_the_same_tier_as_blocks():
    a = invoke_json("replay", "--tier", "gpu=300blk", "--timing", "sequential")
    b = invoke_json("replay", "--tier", "gpu=300blocks", "--timing", "sequential")
    assert a["tiers"][0]["capacity_blocks"] == 300 == b["tiers"][0]["capacity_blocks"]
    assert a["hit_ratio"] == b["hit_ratio"]


@pytest.mark.parametrize("text", ["1.5blk", "-3blk", "5000blks", "5000bk"])
def test_blk_takes_the_rule_of_blocks(text):
    with pytest.raises(UserError):
        parse_capacity(text)


@pytest.mark.parametrize("cmd", ["replay", "compare"])
def test_a_comma_list_given_to_tier_points_at_repeating_it_and_at_tiers(cmd):
    line = assert_one_line_error(invoke(cmd, "--tier", "gpu=200GB,cpu=1TB"),
                                 "--tier gpu=200GB,cpu=1TB", "one tier per --tier",
                                 "--tier gpu=200GB --tier cpu=1TB", "--tiers")
    assert "bad tier size" not in line
