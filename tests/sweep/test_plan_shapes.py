"""A plan value that does not fit its option is refused naming the file, the table, the key and what is expected
(pcs.sweep.kinds.shape_problem): `policy = [["lru"]]` used to run as lru, recorded as '["lru"]'."""
from __future__ import annotations

import pytest

from pcs.errors import UserError
from pcs.sweep import load_plan, make_plan

ONE = "expected one value: a string or a number"
MANY = "expected a value or a list of values (strings or numbers)"
PAIRS = 'expected a table of NAME = value (strings or numbers), a list of "NAME=VALUE" strings or one such string'
FLAG = "expected true or false (the option is a flag)"


@pytest.mark.parametrize("kind,table,key,value,message", [
    ("replay", "axes", "policy", [["lru"], "fifo"], f"value 1 of the axis (one point's value): {ONE}, got a list [\"lru\"]"),
    ("replay", "axes", "policy", ["lru", {"a": 1}], f"value 2 of the axis (one point's value): {ONE}, got a table {{\"a\": 1}}"),
    ("replay", "axes", "policy", [True], f"value 1 of the axis (one point's value): {ONE}, got true"),
    ("replay", "axes", "block-size", [[16]], f"value 1 of the axis (one point's value): {ONE}, got a list [16]"),
    ("replay", "axes", "tier.cpu", [["1GB"]], f"value 1 of the axis (one point's value): {ONE}, got a list [\"1GB\"]"),
    ("replay", "axes", "tier", [{"gpu": ["1GB"]}], f"value 1 of the axis (one point's value): {PAIRS}, got a table {{\"gpu\": [\"1GB\"]}}"),
    ("replay", "axes", "cache-partial-blocks", [1], f"value 1 of the axis (one point's value): {FLAG}, got a number 1"),
    ("compare", "axes", "policy", [["lru", "fifo"], [["lru"]]], f"value 2 of the axis (one point's value): {MANY}, got a list [[\"lru\"]]"),
    ("curve", "axes", "capacities", [["1GB"], [["2GB"]]], f"value 2 of the axis (one point's value): {MANY}, got a list [[\"2GB\"]]"),
    ("replay", "fixed", "policy", ["lru"], f"{ONE}, got a list [\"lru\"]"),
    ("replay", "fixed", "timing", {"x": 1}, f"{ONE}, got a table {{\"x\": 1}}"),
    ("replay", "fixed", "tier", [["gpu=1GB"]], f"{PAIRS}, got a list [[\"gpu=1GB\"]]"),
])
def test_a_value_of_the_wrong_shape_is_refused(kind, table, key, value, message):
    with pytest.raises(UserError) as err:
        make_plan({"kind": kind, table: {key: value}}, "plan.toml")
    assert str(err.value) == f"plan.toml [{table}] {key!r}: {message}"


def test_values_of_the_right_shape_still_expand():
    assert len(make_plan({"kind": "compare", "axes": {"policy": [["lru", "fifo"], ["lru", "s3fifo"]]}}).points) == 2
    assert len(make_plan({"kind": "curve", "axes": {"capacities": [["1GB", "2GB"], "3GB"]}}).points) == 2
    p = make_plan({"axes": {"tier": [{"gpu": "1GB"}, ["gpu=2GB"], "gpu=3GB"]}})
    assert [pt.options["tier"] for pt in p.points] == [{"gpu": "1GB"}, {"gpu": "2GB"}, {"gpu": "3GB"}]


def test_the_file_is_named(tmp_path):
    plan = tmp_path / "p.toml"
    plan.write_text('[axes]\npolicy = [["lru"]]\n')
    with pytest.raises(UserError) as err:
        load_plan(plan)
    assert str(err.value) == f"{plan}:2: [axes] 'policy': value 1 of the axis (one point's value): {ONE}, got a list [\"lru\"]"


def test_an_in_memory_point_with_a_list_for_one_value_is_refused():
    from pcs.sweep.kinds import build_task
    from pcs.sweep.plan import Point

    with pytest.raises(UserError, match=r"option 'policy' takes one value, got a list \[\"lru\"\]"):
        build_task("replay", Point("x", {"policy": ["lru"]}))
