"""A sweep plan's bad policy option, policy value or admission value is refused with the plan, at the line it is
written, before any point runs (mend45c, item 1: docs/sweep.md "a replay point passes check_replay's checks,
policies included"); pcs.check_replay refuses what the run would (names and values); a [fixed] tier table's size
the run refuses names its line too. Lines counted by hand from the plan texts below."""
from __future__ import annotations

import pytest

from helpers import SMALL_TRACE
from pcs.engine.api import check_replay
from pcs.errors import UserError
from pcs.sweep.api import prepare

_TIERS = ["gpu=auto", "cpu=10GB"]


@pytest.mark.parametrize("kw,words", [
    (dict(policy="slru:protected_shar=0.5"), "policy='slru:protected_shar=0.5': eviction policy 'slru' takes no "
                                             "option 'protected_shar'"),
    (dict(policy="slru:protected_share=1.5"), "policy='slru:protected_share=1.5': protected share must be within "
                                              "[0, 1], got 1.5"),
    (dict(policy="lfu:aging=dynamc"), "policy='lfu:aging=dynamc': lfu aging must be one of dynamic, none"),
    (dict(tier_policies={"cpu": "s3fifo:small_share=2"}),
     "tier_policies['cpu'] = 's3fifo:small_share=2': s3fifo small_share must be within [0, 1], got 2.0"),
    (dict(admit=["cpu=reuse:0"]), "admit='cpu=reuse:0': admission reuse: N must be an int >= 1, got 0"),
    (dict(admit=["cpu=retain:tokens=abc"]), "admit='cpu=retain:tokens=abc': admission retain: tokens"),
])
def test_check_replay_refuses_what_the_run_refuses(kw, words):
    with pytest.raises(UserError) as err:
        check_replay(tiers=_TIERS, **kw)
    assert str(err.value).startswith(words), str(err.value)


@pytest.mark.parametrize("kw", [dict(policy="lfu:aging=none"), dict(policy="belady"), dict(policy="gdsf"),
                                dict(admit=["cpu=retain:tokens=0-4096,duration=60"]), dict(admit=["cpu=tinylfu"])])
def test_check_replay_passes_what_the_run_takes(kw):
    check_replay(tiers=_TIERS, **kw)


_HEAD = (f'kind = "replay"\n\n[fixed]\ntrace = "{SMALL_TRACE}"\ntiming = "sequential"\n'
         'tier = {gpu = "500blocks", cpu = "10GB"}\n')    # lines 1-6


@pytest.mark.parametrize("rest,line,words", [
    # 7 blank, 8 [axes], 9 the policy axis: the lru point must not run first
    ('\n[axes]\npolicy = ["lru", "slru:protected_shar=0.5"]\n', 9, "takes no option 'protected_shar'"),
    ('\n[axes]\npolicy = ["lru", "slru:protected_share=1.5"]\n', 9, "protected share must be within [0, 1]"),
    ('\n[axes]\npolicy = ["lru",\n  "lfu:aging=dynamc"]\n', 10, "lfu aging must be one of dynamic, none"),
    # 7 admit, 8 blank, 9 [axes], 10 policy
    ('admit = ["cpu=reuse:0"]\n\n[axes]\npolicy = ["lru"]\n', 7, "admission reuse: N must be an int >= 1"),
])
def test_a_plan_names_the_line_of_a_bad_policy_before_any_point_runs(tmp_path, rest, line, words):
    plan = tmp_path / "p.toml"
    plan.write_text(_HEAD + rest)
    with pytest.raises(UserError) as err:
        prepare(plan, tmp_path / "out")
    assert str(err.value).startswith(f"{plan}:{line}: "), str(err.value)
    assert words in str(err.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("tier,line,key", [
    ('tier = {gpu = "500blocks", cpu = "10Gb"}\n', 6, "[fixed] 'tier.cpu'"),
    ('tier = ["gpu=500blocks", "cpu=10Gb"]\n', 6, "[fixed] 'tier'"),
])
def test_a_fixed_tier_size_is_refused_with_the_plan_at_its_line(tmp_path, tier, line, key):
    plan = tmp_path / "p.toml"
    plan.write_text(_HEAD.replace('tier = {gpu = "500blocks", cpu = "10GB"}\n', tier)
                    + '\n[axes]\npolicy = ["lru", "fifo"]\n')
    with pytest.raises(UserError) as err:
        prepare(plan, tmp_path / "out")
    assert str(err.value).startswith(f"{plan}:{line}: {key}: bad tier size '10Gb' for tier 'cpu'"), str(err.value)


def test_a_tier_policy_refusal_is_not_placed_on_the_line_of_a_policy_holding_the_same_spec(tmp_path):
    # review45d L1: line 7's policy and line 8's tier-policy table hold the same spec; the gpu tier's refusal is
    # the tier-policy's (it overrides the policy there), so naming line 7 would be wrong: line 8, the table's
    # (mend46a L2; lines 1-6 _HEAD's)
    plan = tmp_path / "p.toml"
    plan.write_text(_HEAD + 'policy = "lfu:aging=x"\n"tier-policy" = {gpu = "lfu:aging=x"}\n')
    with pytest.raises(UserError) as err:
        prepare(plan, tmp_path / "out")
    text = str(err.value)
    assert 'tier-policy = {gpu = "lfu:aging=x"}' in text, text
    assert text.startswith(f"{plan}:8: point "), text


@pytest.mark.parametrize("kw,words", [
    # review45d L3: a value holding a newline was shown raw, and the CLI keeps only a message's first line
    (dict(policy="slru:protected_share=a\nb"), "option protected_share='a\\nb': expected a number"),
    # a policy option given twice: the last value won unseen (an admission option given twice is refused)
    (dict(policy="slru:protected_share=0.5,protected_share=0.6"), "policy option 'protected_share' given twice"),
])
def test_a_policy_spec_refusal_is_whole_on_one_line(kw, words):
    with pytest.raises(UserError) as err:
        check_replay(tiers=_TIERS, **kw)
    assert words in str(err.value) and "\n" not in str(err.value), str(err.value)
