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
    # blk is a block count as in --tier (5000blk = 5000blocks): 1000, 2000, 4000 blocks; 1, 2, 3 blocks
    assert expand_axis("c", {"from": "1000blk", "to": "4000blk", "times": 2}) == \
        ["1000blocks", "2000blocks", "4000blocks"]
    assert expand_axis("c", {"from": "1blk", "to": "3 blocks", "step": "1 block"}) == \
        ["1blocks", "2blocks", "3blocks"]


@pytest.mark.parametrize("spec,words", [
    ({"from": 0, "to": 10}, "a range is"),
    ({"from": 0, "to": 10, "step": 0}, "step must be > 0"),
    ({"from": 10, "to": 0, "step": 1}, "below from"),
    ({"from": "0GB", "to": 10, "step": 1}, "must all be numbers"),
    ({"from": 0, "to": 8, "times": 1}, "times must be a number > 1"),
    ({"from": "1XB", "to": "2GB", "step": "1GB"}, "block count"),
    ([], "non-empty list"),
    (["lru", "lru"], "listed twice"),
    ({"from": "1.5blk", "to": "4blk", "step": "1blk"}, "invalid block count '1.5blk': expected a whole number"),
    ({"from": "1blk", "to": "4GB", "step": "1blk"}, "all sizes or all block counts"),
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
    ({"axes": {"tp": {"from": 1, "to": 1001, "step": 1}, "max-num-seqs": {"from": 1, "to": 1000, "step": 1}}},
     "at most"),
])
def test_bad_plans_say_what_is_wrong(data, words):
    with pytest.raises(ValueError, match=words):
        _plan(data)


@pytest.mark.parametrize("data,words", [
    # pcs replay refuses --tier cpu=.. twice and --tier cpu / --tier CPU (tier names are case-folded); a plan
    # kept the last entry silently (cpu = 200 blocks) and ran a grid other than the one written
    ({"fixed": {"tier": ["gpu=40blocks", "cpu=100blocks", "cpu=200blocks"]}}, "tier entry 'cpu' is given twice"),
    ({"fixed": {"tier": {"gpu": "40blocks", "cpu": "1blocks", "CPU": "2blocks"}}}, "tier entry 'cpu' is given twice"),
    ({"fixed": {"tier": {"gpu": "40blocks"}}, "axes": {"tier.cpu": ["1blocks"], "tier.CPU": ["2blocks"]}},
     "'tier.cpu' and 'tier.CPU' are the same option"),
    # two spellings of --write-policy: one option
    ({"axes": {"write-policy": ["back"], "write_policy": ["through"]}},
     "'write-policy' and 'write_policy' are the same option"),
    ({"fixed": {"write-policy": "back", "write_policy": "back"}}, "are the same option"),
    # 10 GB = 10,000 MB = 10 * 10**9 bytes (GB decimal): one value in three spellings, three equal points
    ({"axes": {"tier.cpu": ["10GB", "10000MB", "10 GB"]}}, "'10000MB' and '10GB' are the same size"),
    ({"axes": {"tier.cpu": ["5blocks", "5 blocks"]}}, "are the same block count"),
    ({"axes": {"tier.cpu": ["5000blk", "1000blocks", "5000blocks"]}},
     "'5000blocks' and '5000blk' are the same block count"),
    # durations compare in ns: 2 s = 2,000 ms = 2 * 10**9 ns; 1.5 min = 90 s; 1 ms = 1,000 us = 10**6 ns
    ({"axes": {"ttft-slo": ["2 seconds", "2s"]}}, "axis 'ttft-slo': '2s' and '2 seconds' are the same duration"),
    ({"axes": {"ttft-slo": ["2s", "500ms", "2000ms"]}}, "'2000ms' and '2s' are the same duration"),
    ({"axes": {"restore-timeout": ["1.5min", "90s"]}}, "'90s' and '1.5min' are the same duration"),
    ({"axes": {"ttft-slo": ["1ms", "1000 us"]}}, "'1000 us' and '1ms' are the same duration"),
    # bandwidths compare in bytes/s: 25 GB/s = 25,000 MB/s = 25 * 10**9; 1 GiB/s = 2**30 = 1,073,741,824 B/s
    ({"axes": {"link.cpu": ["25GB/s", "25000 MB/s"]}}, "'25000 MB/s' and '25GB/s' are the same bandwidth"),
    ({"axes": {"link.cpu": ["1GiB/s", "1073741824B/s"]}}, "'1073741824B/s' and '1GiB/s' are the same bandwidth"),
    # a whole NAME=VALUE option's value: entries in order, names case-folded, each value as above (10 GB = 10,000
    # MB; 5blk = 5 blocks; lru = LRU), a table or "NAME=VALUE" strings alike
    ({"axes": {"tier": [{"gpu": "10GB", "cpu": "5blk"}, ["GPU=10000MB", "cpu=5 blocks"]]}},
     r"axis 'tier': \['GPU=10000MB', 'cpu=5 blocks'\] and \{'gpu': '10GB', 'cpu': '5blk'\} are the same entries"),
    ({"axes": {"tier-policy": ["cpu=lru", {"CPU": "LRU"}]}}, "are the same entries"),
    # a comma list: its items in order (1000 blk = 1000 blocks; 1 GB = 1,000 MB), a string or a list alike
    ({"kind": "curve", "axes": {"capacities": ["1000blocks,2000blocks", "1000blk, 2000blk"]}},
     "axis 'capacities': '1000blk, 2000blk' and '1000blocks,2000blocks' are the same list"),
    ({"kind": "compare", "axes": {"curve-capacities": ["1GB,2GB", ["1000MB", "2GB"]]}}, "are the same list"),
    ({"kind": "curve", "axes": {"capacities": ["1000blocks", ["1000blk"]]}}, "are the same block count"),
    # a repeated option's list: items in order, each as its option reads it
    ({"kind": "compare", "axes": {"policy": [["lru", "fifo"], ["LRU", "fifo"]]}}, "are the same list"),
    # a number and a string on one axis: 1 and "1" are one value in two spellings (the same point ran twice under
    # two ids); 1 and "2" gave point files whose option column is int64 in one, string in the other
    ({"axes": {"tp": [1, "1"]}}, "axis 'tp': 1 is a number and '1' a string"),
    ({"axes": {"tp": [1, "2"]}}, "axis 'tp': 1 is a number and '2' a string"),
    ({"axes": {"tier.cpu": ["10GB", 0]}}, "axis 'tier.cpu': 0 is a number and '10GB' a string"),
])
def test_one_option_or_value_named_twice_is_refused(data, words):
    with pytest.raises(ValueError, match=words):
        _plan(data)


def test_distinct_values_and_entries_still_run():
    # 1 and 1.0 stay two values (the command may read them differently); 10GB and 10GiB differ
    # (10**10 vs 10 * 2**30 bytes); gpu and cpu are two entries
    assert expand_axis("x", [1, 1.0]) == [1, 1.0]
    assert expand_axis("protected-share", [0, 0.5, 1]) == [0, 0.5, 1]     # ints and floats: one numeric column
    assert expand_axis("x", [True, "a"]) == [True, "a"]                     # a flag is not a number here
    plan = _plan({"fixed": {"tier": ["gpu=40blocks", "cpu=1blocks"]}, "axes": {"tier.cpu": ["10GB", "10GiB"]}})
    assert [p.options["tier"]["cpu"] for p in plan.points] == ["10GB", "10GiB"]
    # 2 s and 2 ms, 1 GB/s (10**9) and 1 GiB/s (2**30), 1 s and 1.001 s differ: each runs
    assert expand_axis("ttft-slo", ["2s", "2ms", "1s", "1.001s"]) == ["2s", "2ms", "1s", "1.001s"]
    assert expand_axis("link.cpu", ["1GB/s", "1GiB/s"]) == ["1GB/s", "1GiB/s"]
    # a size and a duration of one number are two kinds (neither axis is right for both; the command names it)
    assert expand_axis("x", ["1000B", "1000ms", "1000blk"]) == ["1000B", "1000ms", "1000blk"]
    # entries or items in another order, or one more, are another value: each runs
    assert expand_axis("tier", [{"gpu": "10GB", "cpu": "5blk"}, {"gpu": "10GB"}, {"cpu": "5blk", "gpu": "10GB"}]) \
        == [{"gpu": "10GB", "cpu": "5blk"}, {"gpu": "10GB"}, {"cpu": "5blk", "gpu": "10GB"}]
    assert expand_axis("capacities", ["1000blk,2000blk", "2000blk,1000blk", "1000blk"]) == \
        ["1000blk,2000blk", "2000blk,1000blk", "1000blk"]
    assert expand_axis("policy", [["lru", "fifo"], ["fifo", "lru"]]) == [["lru", "fifo"], ["fifo", "lru"]]
