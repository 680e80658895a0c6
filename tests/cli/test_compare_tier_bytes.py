"""`pcs compare --format json` gives each variant's tiers in bytes beside blocks, as its text table's tiers row
Worked by hand: llama-2-70b fp16 at block 512 is 80 layers x 8 KV heads x 128 x 2 (K, V) x 2 B x
512 tokens = 167,772,160 B per block (one TP group, bytes per rank x 8 = the same total); 200 GB holds
floor(200e9 / 167,772,160) = 1,192 blocks = 199,984,414,720 B; 1 TB holds 5,960 blocks = 999,922,073,600 B.
"""
from __future__ import annotations

from tests.helpers import invoke_json

BLOCK = 80 * 8 * 128 * 2 * 2 * 512


def test_each_variant_has_its_tiers_in_blocks_and_bytes():
    assert BLOCK == 167_772_160
    d = invoke_json("compare", "--tiers", "gpu=200GB,cpu=1TB", "--tiers", "gpu=5000blocks", "--timing",
                    "sequential")
    a, b = d["variants"]
    assert a["tier_capacities"] == {"gpu": {"capacity_blocks": 1192, "capacity_bytes": 1192 * BLOCK},
                                    "cpu": {"capacity_blocks": 5960, "capacity_bytes": 5960 * BLOCK}}
    assert 1192 * BLOCK == 199_984_414_720 and 5960 * BLOCK == 999_922_073_600
    assert list(a["tier_capacities"]) == ["gpu", "cpu"]            # GPU first, as the tiers text
    assert b["tier_capacities"] == {"gpu": {"capacity_blocks": 5000, "capacity_bytes": 5000 * BLOCK}}
    assert a["tiers"] == "gpu=1192blocks cpu=5960blocks"           # the text a user passes back is unchanged
