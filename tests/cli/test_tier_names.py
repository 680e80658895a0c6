"""Tier names, one rule for every tier (pcs/cli/tiernames.py): the first tier is the GPU tier,
named gpu; a lower tier has a known name (its default link) or a name of your own with its --link. A typo is
refused with click's suggestion (difflib, cutoff 0.6: 'gpuu' -> 'gpu', 'cpuu' -> 'cpu', 'sdd' -> 'ssd').
"""
from __future__ import annotations

import pytest

from tests.helpers import invoke

SEQ = ("--timing", "sequential", "-q")


def _error(r, words):
    assert r.exit_code == 2, r.output
    lines = [x for x in r.output.splitlines() if x.startswith("pcs: error:")]
    assert len(lines) == 1 and words in lines[0], r.output
    assert "Traceback" not in r.output


@pytest.mark.parametrize("first", ["gpuu=200GB", "hbm=200GB", "GPU0=200GB", "foo=200GB"])
def test_the_first_tier_is_named_gpu(first):
    size = first.split("=")[1]
    _error(invoke("replay", "--tier", first, *SEQ),
           f"--tier {first}: the first tier is the GPU tier, named gpu: write gpu={size}")


@pytest.mark.parametrize("lower,meant", [("cpuu", "cpu"), ("sdd", "ssd"), ("remot", "remote")])
def test_a_lower_tier_typo_gets_the_known_name(lower, meant):
    _error(invoke("replay", "--tier", "gpu=100blocks", "--tier", f"{lower}=1TB", *SEQ),
           f"--tier {lower}=1TB: unknown lower tier '{lower}'; did you mean '{meant}'?")


def test_a_lower_tier_of_your_own_runs_with_its_link_and_the_gpu_name_in_any_case():
    r = invoke("replay", "--tier", "GPU=100blocks", "--tier", "cpuu=200blocks", "--link", "cpuu=25GB/s", *SEQ)
    assert r.exit_code == 0, r.output
    far = invoke("replay", "--tier", "gpu=100blocks", "--tier", "zz=1TB", *SEQ)       # no close name: link asked
    _error(far, "or name its link: --link zz=")


def test_compare_tier_lists_follow_the_same_rule():
    _error(invoke("compare", "--tiers", "gpuu=100blocks,cpu=200blocks", *SEQ),
           "--tiers gpuu=100blocks,cpu=200blocks: the first tier is the GPU tier, named gpu: write gpu=100blocks")


def test_a_sweep_plan_says_it_in_the_plans_words(tmp_path):
    plan = tmp_path / "p.toml"
    plan.write_text("[fixed]\ntp = 1\ntier = {gpuu = '100blocks'}\n", encoding="utf-8")
    r = invoke("sweep", str(plan), "-o", str(tmp_path / "out"), "--jobs", "1")
    _error(r, 'tier = {gpuu = "100blocks"}: the first tier is the GPU tier, named gpu: write gpu=100blocks')
