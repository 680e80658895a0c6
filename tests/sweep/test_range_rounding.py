"""A range whose values repeat once rounded to whole blocks is refused naming the axis, the range and the value
(the grid run is the grid written); ranges that round to distinct values are kept as they were."""
from __future__ import annotations

import pytest

from pcs.errors import UserError
from pcs.sweep.axes import expand_axis


def test_a_geometric_block_range_that_rounds_to_repeats_is_refused_naming_the_axis():
    # 1, 1.1, 1.21, 1.331, ... floored: 1blocks until 1.1**8 = 2.14 -> 2blocks: 1blocks is given 8 times
    with pytest.raises(UserError) as e:
        expand_axis("tier.cpu", {"from": "1blocks", "to": "3blocks", "times": 1.1})
    msg = str(e.value)
    assert msg.startswith("axis 'tier.cpu': the range from '1blocks' to '3blocks' by times = 1.1 gives '1blocks' 8 times")
    assert "larger times" in msg


def test_ranges_that_round_to_distinct_values_are_kept():
    # 1000 x 1.5**k floored: 1000, 1500, 2250, 3375 (all distinct)
    assert expand_axis("tier.cpu", {"from": "1000blocks", "to": "4000blocks", "times": 1.5}) == [
        "1000blocks", "1500blocks", "2250blocks", "3375blocks"]
    assert expand_axis("tier.cpu", {"from": "1blocks", "to": "3blocks", "step": "1blocks"}) == [
        "1blocks", "2blocks", "3blocks"]
