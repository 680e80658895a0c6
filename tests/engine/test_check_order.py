"""One rule in one place: the checks pcs.replay makes before it reads the trace live in one function
(pcs.engine.api._checked_args), called by replay, check_replay (a sweep's plan), fleet_replay and compare, so a
bad combination of arguments (two faults at once) gets the same first message from every entry point.

The expected fault of each case is worked out by hand from the order pcs.replay's Raises section documents
(pcs.engine.replaydoc.RAISES): the arguments' types, then the numbers, then timing / policy / write policy / tp /
engine / native / compute mode, then the tier list and its per-tier options, then two protected shares, then
model, dtype and hardware; a fleet's or compare's own arguments come before all of them.
"""
from pathlib import Path

import pytest
from click.testing import CliRunner

import pcs
from pcs.cli.main import cli
from pcs.engine.api import check_replay
from pcs.engine.compare import compare
from pcs.fleet.fleet import fleet_replay

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "traces" / "formats" / "mooncake_conv_8.jsonl"
TWO = ["gpu=auto", "cpu=1GB"]

#: (replay's keywords, what the first message names -- worked out by hand)
API_ONLY = [
    # a type before a number: timing= a list (types) and protected_share 2 (> 1)
    (dict(timing=["x"], protected_share=2), "timing= must be a string, got list: ['x']"),
    # a number before an option: protected_share 2 (numbers) and an unknown timing
    (dict(timing="bogus", protected_share=2), "protected_share=2.0: must be in [0, 1]"),
    # a type before a name: dtype= a list and an unknown hardware
    (dict(dtype=["fp8"], hardware="nosuch"), "dtype= must be a string, got list: ['fp8']"),
    # a link's value a collection (types) before an unknown timing
    (dict(links={"cpu": ["a"]}, timing="x"), "links['cpu']= must be a name or a value, not a collection"),
    # a number before the tier list: utilization 0 (range (0, 1]) and two tiers named gpu
    (dict(gpu_memory_utilization=0, tiers=["gpu=auto", "gpu=1GB"]), "gpu_memory_utilization=0.0: must be in (0, 1]"),
    # an option before the tier list: an unknown write policy and no GPU tier
    (dict(write_policy="x", tiers=["cpu=1GB"]), "unknown write policy 'x'"),
]

#: (replay's keywords, pcs replay's options, the sweep plan's [fixed] lines or None, the first fault's words)
EVERYWHERE = [
    # the tier list before the model: no GPU tier first, and an unknown model
    (dict(tiers=["cpu=1GB"], model="nosuch"), ["--tier", "cpu=1GB", "--model", "nosuch"],
     'tier = {cpu = "1GB"}\nmodel = "nosuch"', "the GPU tier comes first in"),
    # two tiers named gpu (a plan's table cannot name one twice: no plan) and an unknown model
    (dict(tiers=["gpu=auto", "gpu=1GB"], model="nosuch"), ["--tier", "gpu=auto", "--tier", "gpu=1GB", "--model",
                                                           "nosuch"], None,
     "gives tier 'gpu' twice (gpu=auto, gpu=1GB): tier names must be distinct; give each tier once"),
    # auto on a lower tier and an unknown model
    (dict(tiers=["gpu=1GB", "cpu=auto"], model="nosuch"), ["--tier", "gpu=1GB", "--tier", "cpu=auto", "--model",
                                                           "nosuch"],
     'tier = {gpu = "1GB", cpu = "auto"}\nmodel = "nosuch"', "tier 'cpu': only the GPU tier"),
    # a protected share inline and given with another value, and an unknown model
    (dict(protected_share=0.3, policy="slru:protected_share=0.2", model="nosuch"),
     ["--protected-share", "0.3", "--policy", "slru:protected_share=0.2", "--model", "nosuch"],
     'protected-share = 0.3\npolicy = "slru:protected_share=0.2"\nmodel = "nosuch"',
     "protected share given twice: 0.2 in "),
    # a tier policy of a tier not in the list, and an unknown model
    (dict(tiers=TWO, tier_policies={"disk": "lru"}, model="nosuch"),
     ["--tier", "gpu=auto", "--tier", "cpu=1GB", "--tier-policy", "disk=lru", "--model", "nosuch"],
     'tier = {gpu = "auto", cpu = "1GB"}\n"tier-policy" = {disk = "lru"}\nmodel = "nosuch"',
     "names tier 'disk', which is not among the tiers: gpu, cpu"),
    # a link of a tier not in the list, and an unknown model
    (dict(tiers=TWO, links={"disk": "pcie-gen5-x16"}, model="nosuch"),
     ["--tier", "gpu=auto", "--tier", "cpu=1GB", "--link", "disk=pcie-gen5-x16", "--model", "nosuch"],
     'tier = {gpu = "auto", cpu = "1GB"}\nlink = {disk = "pcie-gen5-x16"}\nmodel = "nosuch"',
     "names tier 'disk', which is not among the tiers: gpu, cpu"),
    # the tier list before two protected shares
    (dict(tiers=["cpu=1GB"], protected_share=0.3, policy="slru:protected_share=0.2"),
     ["--tier", "cpu=1GB", "--protected-share", "0.3", "--policy", "slru:protected_share=0.2"],
     'tier = {cpu = "1GB"}\nprotected-share = 0.3\npolicy = "slru:protected_share=0.2"', "the GPU tier comes first in"),
    # a protected share given twice through a tier's policy, and an unknown model
    (dict(tiers=TWO, tier_policies={"cpu": "slru:protected_share=0.2"}, protected_share=0.3, model="nosuch"),
     ["--tier", "gpu=auto", "--tier", "cpu=1GB", "--tier-policy", "cpu=slru:protected_share=0.2",
      "--protected-share", "0.3", "--model", "nosuch"],
     'tier = {gpu = "auto", cpu = "1GB"}\n"tier-policy" = {cpu = "slru:protected_share=0.2"}\n'
     'protected-share = 0.3\nmodel = "nosuch"', "protected share given twice: 0.2 in "),
]


def _first(call, **kw) -> str:
    """The first line of what ``call(**kw)`` raises (it must raise)."""
    with pytest.raises(Exception) as info:
        call(**kw)
    return str(info.value).splitlines()[0]


def _api_routes(kw: dict) -> dict[str, str]:
    """Each API entry point's first message for replay's keywords ``kw``: replay, check_replay, a fleet of 2
    and compare (``policy`` as compare's one-policy list)."""
    rest = {k: v for k, v in kw.items() if k != "policy"}
    return {"replay": _first(pcs.replay, **kw),
            "check_replay": _first(check_replay, **kw),
            "fleet": _first(fleet_replay, instances=2, **kw),
            "compare": _first(compare, policies=[kw["policy"]] if "policy" in kw else None, **rest)}


def _shared_fleet(kw: dict) -> str:
    """A fleet of 2 with a shared tier ``remote``, last in its tier list: a message listing the tiers lists it."""
    return _first(fleet_replay, instances=2, shared_tier="remote=1TB", **kw)


@pytest.mark.parametrize("kw,words", API_ONLY)
def test_api_entry_points_name_the_same_first_fault(kw, words):
    seen = _api_routes(kw)
    assert words in seen["replay"], seen
    assert set(seen.values()) == {seen["replay"]}, seen
    assert words in _shared_fleet(kw)


@pytest.mark.parametrize("kw,args,plan,words", EVERYWHERE)
def test_every_entry_point_names_the_same_first_fault(tmp_path, kw, args, plan, words):
    seen = _api_routes(kw)
    assert words in seen["replay"], seen
    assert set(seen.values()) == {seen["replay"]}, seen
    assert words in _shared_fleet(kw)
    res = CliRunner().invoke(cli, ["replay", str(SMALL), "-q", *args])
    assert res.exit_code == 2 and words in res.output.splitlines()[0], res.output
    if plan is not None:
        path = tmp_path / "p.toml"
        path.write_text(f'kind = "replay"\n[fixed]\ntrace = "{SMALL}"\n{plan}\n')
        res = CliRunner().invoke(cli, ["sweep", str(path), "-o", str(tmp_path / "out"), "--jobs", "1"])
        (line,) = res.stderr.splitlines()
        assert res.exit_code == 2 and "point " in line and words in line, res.stderr


@pytest.mark.parametrize("kw,words", [
    (dict(admit=["cpu=retain"]), "admit= is for single-instance replays (not with instances=, router= or shared_tier=)"),
    (dict(gap_oracle=True), "gap_oracle is for single-instance replays (not with instances=, router= or shared_tier=)"),
    (dict(admit=["cpu=retain"], gap_oracle=True), "admit= and gap_oracle are for single-instance replays (not with instances=, router= or "
                                                    "shared_tier=)"),
])
def test_shared_tier_refuses_admission_by_the_one_fleet_rule(kw, words):
    # a shared tier is a fleet: admission and the gap oracle are refused by the fleet's one rule
    # (refuse_single_instance_options), before the trace is read and before the shared tier is set up
    assert _first(fleet_replay, instances=2, shared_tier="remote=1TB", **kw) == words


def _tiers(*names):
    from pcs.cache import Tier, make_policy

    return [Tier(n, 4, make_policy("lru", 4)) for n in names]


def test_one_write_policy_timing_and_distinct_names_rule():
    # one check each (pcs.cache.hierarchy.check_write_policy / check_distinct, pcs.engine.engine.check_timing),
    # called by every hierarchy, the engine and pcs.replay: the same words from each, worked out by hand from
    # WRITE_POLICIES = (back, through) and TIMINGS = (modeled, sequential)
    from pcs.cache.groups import CacheGroup
    from pcs.cache.grouphier import GroupHierarchy
    from pcs.cache.hierarchy import Hierarchy
    from pcs.engine.engine import ReplayEngine

    group = (CacheGroup("full_attention", "full", ("full_attention",), 16),)
    wp = "unknown write policy 'around'; valid: back, through"
    assert _first(pcs.replay, write_policy="around") == "write_policy='around': " + wp     # the keyword leads
    assert _first(Hierarchy, tiers=_tiers("gpu", "cpu"), write_policy="around") == wp
    assert _first(GroupHierarchy, tiers=_tiers("gpu"), write_policy="around", groups=group, page_bytes=[[1]]) == wp
    timing = "unknown timing 'fast'; valid: modeled, sequential"
    assert _first(pcs.replay, timing="fast") == "timing='fast': " + timing
    assert _first(ReplayEngine, hierarchy=Hierarchy(_tiers("gpu")), timing="fast") == timing
    assert _first(Hierarchy, tiers=_tiers("gpu", "gpu")) == "tier names must be distinct, got ['gpu', 'gpu']"
    assert _first(GroupHierarchy, tiers=_tiers("gpu", "gpu/1"), groups=group, page_bytes=[[1], [1]]) == \
        "tier level names must be distinct, got ['gpu', 'gpu']"
    from pcs.cache.nativegroups import NativeGroupHierarchy, unsupported
    if unsupported([], [], 1) is None:      # the compiled twin built: the same words
        assert _first(NativeGroupHierarchy, tiers=_tiers("gpu"), write_policy="around", groups=group,
                      page_bytes=[[1]]) == wp
        assert _first(NativeGroupHierarchy, tiers=_tiers("gpu", "gpu/1"), groups=group,
                      page_bytes=[[1], [1]]) == "tier level names must be distinct, got ['gpu', 'gpu']"


def test_one_lfu_aging_rule():
    # both LFU implementations check aging by pcs.cache.policies.lfu.check_aging: LFU_AGINGS = (dynamic, none)
    from pcs.cache.policies.array_lfu import ArrayLFU
    from pcs.cache.policies.lfu import LFUPolicy

    words = "lfu aging must be one of dynamic, none, got 'old'"
    assert _first(LFUPolicy, capacity_blocks=4, aging="old") == words
    assert _first(ArrayLFU, capacity_blocks=4, aging="old") == words


def test_shared_tier_is_last_in_the_checked_tier_list():
    # the shared tier 'remote' joins the tier list last: a private tier named remote makes gpu, remote, remote;
    # a link of an unknown tier lists gpu, cpu, remote; a link of the shared tier is taken (the model fault next)
    shared = dict(instances=2, shared_tier="remote=1TB")
    assert _first(fleet_replay, tiers=["gpu=auto", "remote=1GB"], **shared) == \
        "tier names must be distinct, got gpu, remote, remote"
    assert _first(fleet_replay, tiers=TWO, links={"disk": "pcie-gen5-x16"}, **shared) == \
        "links['disk'] = 'pcie-gen5-x16': names tier 'disk', which is not among the tiers: gpu, cpu, remote"
    assert _first(fleet_replay, links={"remote": "pcie-gen5-x16"}, model="nosuch", **shared).startswith(
        "model='nosuch': unknown model 'nosuch'")
