"""pcs compare with two or more --policy and a fleet option: the refusal names the fleet option given."""
from __future__ import annotations

import pytest

from tests.helpers import assert_one_line_error, invoke


@pytest.mark.parametrize("fleet, named", [
    (["--instances", "2"], "--instances makes"),
    (["--router", "round-robin"], "--router makes"),
    (["--shared-tier", "ssd=1TB"], "--shared-tier makes"),
    (["--instances", "2", "--router", "round-robin"], "--instances and --router make"),
])
def test_policies_with_a_fleet_option_name_it(fleet, named):
    r = invoke("compare", "--policy", "lru", "--policy", "fifo", *fleet, "-q")
    assert_one_line_error(r, f"pcs: error: compare either routers or policies, not both: {named} a router "
                             "comparison (one column per --router), and --policy is given 2 times")
