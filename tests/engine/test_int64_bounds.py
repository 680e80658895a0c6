"""Capacity bytes fit int64 however the size is written (docs/semantics.md §16).

The byte form is bounded at 2^63 - 1 bytes by the parser; the block form is bounded where the bytes per block
are known (pcs.units.capacity_to_blocks), and a sweep row refuses any integer outside int64.
"""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.errors import UserError
from pcs.sweep.columns import typed_table
from pcs.units import capacity_to_blocks

# llama-2-70b (the default model), TP 8, block 512: 80 layers x 8 KV heads x 128 x 2 (K,V) x 2 B x 512 tokens
# = 167,772,160 B per block (the figure the replay table prints). (2^63 - 1) // 167,772,160
# = 9,223,372,036,854,775,807 // 167,772,160 = 54,975,581,388 (2^63 / (5 x 2^25) = 2^38 / 5 = 54,975,581,388.8).
BLOCK = 167_772_160
MOST = 54_975_581_388


def test_block_count_whose_bytes_pass_int64_is_refused():
    assert capacity_to_blocks(None, MOST, BLOCK, "tier 'cpu'") == MOST          # 9.2234e18 B: fits
    with pytest.raises(UserError, match=r"tier 'cpu': 54,975,581,389 blocks x 167,772,160 B per block is more than "
                                        r"2\^63 - 1 bytes.*give at most 54,975,581,388 blocks"):
        capacity_to_blocks(None, MOST + 1, BLOCK, "tier 'cpu'")
    assert capacity_to_blocks(None, 10**30, None, "x") == 10**30   # no bytes per block known: a count alone


@pytest.mark.parametrize("args", [
    ["replay", "--tier", "gpu=100blocks", "--tier", "cpu=100000000000blocks"],
    ["replay", "--instances", "2", "--tier", "gpu=100blocks", "--shared-tier", "remote=100000000000blocks"],
])
def test_cli_refuses_block_tiers_beyond_int64_bytes(args):
    # 1e11 blocks x 167,772,160 B = 1.68e19 B > 9.22e18: a clear error (rc 2), not a 1.5e27-byte JSON integer
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 2, r.output
    assert "100,000,000,000 blocks x 167,772,160 B per block is more than 2^63 - 1 bytes" in r.output


def test_sweep_row_integer_beyond_int64_names_the_column():
    assert typed_table({"a": 2**63 - 1}, {}).column("a").to_pylist() == [2**63 - 1]
    with pytest.raises(UserError, match=r"column 'summary.x': 9223372036854775808 is beyond"):
        typed_table({"summary.x": 2**63}, {})
