"""SchedulerConfig takes what the CLI takes: the same integer ranges and bool flags (docs/semantics.md §9;
pcs/cli/replay.py --max-num-batched-tokens 1..10^9, --max-num-seqs 1..10^9, --max-preemptions 0..10^9)."""
from __future__ import annotations

import numpy as np
import pytest

from pcs.engine.schedconfig import SchedulerConfig
from pcs.errors import UserError


@pytest.mark.parametrize("field, value, says", [
    ("max_num_batched_tokens", 10**30, r"must be in \[1, 1000000000\], got 10{30}"),
    ("max_num_batched_tokens", 10**9 + 1, r"must be in \[1, 1000000000\], got 1000000001"),
    ("max_num_batched_tokens", 2048.0, r"must be an integer, got 2048.0"),
    ("max_num_seqs", 0, r"must be in \[1, 1000000000\], got 0"),
    ("max_preemptions", 10**30, r"must be in \[0, 1000000000\], got 10{30}"),
    ("max_preemptions", -1, r"must be in \[0, 1000000000\], got -1"),
    ("restore_fallback", "no", "must be True or False, got 'no'"),
    ("restore_fallback", None, "must be True or False, got None"),
    ("restore_fallback", 0, "must be True or False, got 0"),
    ("cache_decode_blocks", "no", "must be True or False, got 'no'"),
])
def test_out_of_range_or_non_bool_is_refused_naming_the_field(field, value, says):
    with pytest.raises(UserError, match=f"{field} {says}"):
        SchedulerConfig(**{field: value})


def test_the_bounds_and_numpy_values_are_taken_as_python_values():
    c = SchedulerConfig(max_num_batched_tokens=np.int64(10**9), max_num_seqs=np.int32(1), max_preemptions=0,
                        restore_fallback=np.bool_(False), cache_decode_blocks=None)
    assert (c.max_num_batched_tokens, c.max_num_seqs, c.max_preemptions) == (10**9, 1, 0)
    assert type(c.max_num_batched_tokens) is int and c.restore_fallback is False and c.cache_decode_blocks is None
