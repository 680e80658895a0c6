"""Plans: axes and ranges expand to the points worked out by hand; ids are stable and distinct."""
from __future__ import annotations

import pytest

from pcs.sweep.axes import expand_axis, format_size
from pcs.sweep.plan import make_plan, point_id

PAIRS = {"replay": frozenset({"tier", "link", "tier_policy"})}


def _plan(data):
    return make_plan(data, pair_options=PAIRS)


def test_ranges_include_both_ends_on_the_grid():
    assert expand_axis("x", {"from": 0, "to": 30, "step": 10}) == [0, 10, 20, 30]
    assert expand_axis("x", {"from": 0, "to": 25, "step": 10}) == [0, 10, 20]       # 30 is past 25
    assert expand_axis("x", {"from": 1000, "to": 16000, "times": 2}) == [1000, 2000, 4000, 8000, 16000]
    # decimal steps: 0.1 + 0.1 + 0.1 is 0.3 here, not 0.30000000000000004
    assert expand_axis("x", {"from": 0.1, "to": 0.3, "step": 0.1}) == [0.1, 0.2, 0.3]


def test_size_ranges_come_back_as_exact_sizes():
    assert expand_axis("c", {"from": "0GB", "to": "2TB", "step": "500GB"}) == \
        ["0B", "500GB", "1TB", "1500GB", "2TB"]
    # 1 GiB = 1,073,741,824 B: no decimal unit divides it, so it stays in bytes
    assert expand_axis("c", {"from": "1GiB", "to": "2GiB", "step": "1GiB"}) == ["1073741824B", "2147483648B"]
    assert expand_axis("c", {"from": "1000blocks", "to": "4000blocks", "times": 2}) == \
        ["1000blocks", "2000blocks", "4000blocks"]
    assert format_size(1_500_000_000) == "1500MB" and format_size(7) == "7B"


@pytest.mark.parametrize("spec,words", [
    ({"from": 0, "to": 10}, "a range is"),
    ({"from": 0, "to": 10, "step": 0}, "step must be > 0"),
    ({"from": 10, "to": 0, "step": 1}, "below from"),
    ({"from": "0GB", "to": 10, "step": 1}, "must all be numbers"),
    ({"from": 0, "to": 8, "times": 1}, "times must be a number > 1"),
    ({"from": "1XB", "to": "2GB", "step": "1GB"}, "block count"),
    ([], "non-empty list"),
    (["lru", "lru"], "listed twice"),
])
def test_bad_axes_say_what_is_wrong(spec, words):
    with pytest.raises(ValueError, match=words):
        expand_axis("x", spec)


def test_points_are_the_product_last_axis_fastest():
    plan = _plan({"fixed": {"tier": {"gpu": "300blocks"}},
                  "axes": {"policy": ["lru", "fifo"], "tier.cpu": ["0GB", "10GB", "20GB"]}})
    assert plan.axes == ("policy", "tier.cpu")
    got = [(p.options["policy"], p.options["tier"]["cpu"]) for p in plan.points]
    assert got == [("lru", "0GB"), ("lru", "10GB"), ("lru", "20GB"), ("fifo", "0GB"), ("fifo", "10GB"),
                   ("fifo", "20GB")]
    assert [list(p.options["tier"]) for p in plan.points] == [["gpu", "cpu"]] * 6   # GPU first, as fixed


def test_ids_are_stable_and_tell_points_apart():
    a = _plan({"fixed": {"policy": "lru", "tier": ["gpu=300blocks", "cpu=10GB"]}})
    b = _plan({"fixed": {"tier": {"gpu": "300blocks"}}, "axes": {"tier.cpu": ["10GB"], "policy": ["lru"]}})
    c = _plan({"fixed": {"write-policy": "back", "tier": {"gpu": "300blocks", "cpu": "10GB"}, "policy": "lru"}})
    pid = a.points[0].point_id
    assert len(pid) == 12 and int(pid, 16) >= 0
    assert b.points[0].point_id == pid                       # same options: fixed or axis, any order
    assert c.points[0].point_id != pid                       # one more option: another point
    assert point_id("compare", a.points[0].options) != pid   # another kind: another point
    swapped = {"policy": "lru", "tier": {"cpu": "10GB", "gpu": "300blocks"}}
    assert point_id("replay", swapped) != pid                # tier order matters (the GPU tier is first)


@pytest.mark.parametrize("data,words", [
    ({"kind": "simulate"}, "unknown kind"),
    ({"fixd": {}}, "unknown key 'fixd'"),
    ({"fixed": {"policy": "lru"}, "axes": {"policy": ["fifo"]}}, "both fixed and an axis"),
    ({"axes": {"policy.x": ["lru"]}}, "only NAME=VALUE options"),
    ({"fixed": {"tier": ["gpu"]}}, "expected NAME=VALUE"),
    ({"axes": {"tp": {"from": 1, "to": 1001, "step": 1}, "seed": {"from": 1, "to": 1000, "step": 1}}}, "at most"),
])
def test_bad_plans_say_what_is_wrong(data, words):
    with pytest.raises(ValueError, match=words):
        _plan(data)
