"""Footprint bytes stay within 2^63 - 1, the bound of every size pcs takes and writes (docs/semantics.md §16): a
larger total is refused in one line, never printed as a 24-digit JSON integer."""
from __future__ import annotations

import pytest

from helpers import assert_one_line_error, invoke, invoke_json
from pcs.errors import UserError
from pcs.model import footprint

# llama-3.1-70b, bf16: 80 layers x 8 KV heads x 128 x (K, V) x 2 B = 327,680 B per token (its config.json)
PER_TOKEN = 80 * 8 * 128 * 2 * 2


def test_the_largest_footprint_that_fits_is_reported_exactly():
    # 1e9 tokens x 28,000 sequences x 327,680 B = 9.175e18 B <= 2^63 - 1 = 9.223e18
    out = invoke_json("footprint", "--model", "llama-3.1-70b", "--tokens", "1000000000", "--sequences", "28000")
    assert out["reference_bytes"] == 10**9 * 28_000 * PER_TOKEN == 9_175_040_000_000_000_000


@pytest.mark.parametrize("sequences", [29_000, 10**9])   # 9.503e18 B, 3.277e23 B: both past 2^63 - 1
def test_a_footprint_past_int64_is_refused(sequences):
    assert_one_line_error(invoke("footprint", "--model", "llama-3.1-70b", "--tokens", "1000000000", "--sequences",
                                 str(sequences)), "more than 2^63 - 1 bytes", "give fewer tokens or sequences")
    with pytest.raises(UserError, match=f"{10**9 * sequences * PER_TOKEN:.3e}".replace("+", r"\+")):
        footprint("llama-3.1-70b", 10**9, sequences=sequences)


def test_a_smaller_dtype_is_checked_on_its_bf16_comparison_row_too():
    """``by_dtype`` sets bf16 beside the chosen fp8: 29,000 sequences fit in fp8 (4.75e18 B) but their bf16 row
    (9.503e18 B) does not, and the JSON would hold it: refused as well."""
    with pytest.raises(UserError, match="9.503e\\+18"):
        footprint("llama-3.1-70b", 10**9, dtype="fp8", sequences=29_000)
