"""Review 46 leftovers (mend46a). Every expectation is worked out by hand from the documented rules: plan lines
counted in the plan texts below, message wording from docs/semantics.md and the options' --help, the typo rule
from pcs.hardware.likely_typo_of's docstring ("another number is another part"), admission ``none`` from
docs/policies.md ("a run with --admit cpu=none is the run without --admit")."""
from __future__ import annotations

import json

import pytest

from helpers import PLAN_HEAD, SMALL_TRACE, assert_one_line_error, invoke, plan_refusal
from pcs.errors import UserError

_BIG = "1" * 5000       # past Python's 4,300-digit int-string limit, and past a float (309 digits or more)

_HEAD, _prepare_error = PLAN_HEAD, plan_refusal    # a plan's lines 1-6; each test adds from line 7


# L2: a refused tier-policy entry is named by the line it is written on, in each of a plan's forms.

@pytest.mark.parametrize("lines, line", [
    ('"tier-policy" = {cpu = "lfu:aging=x"}\n', 7),                  # [fixed]'s table
    ('"tier-policy" = ["cpu=lfu:aging=x"]\n', 7),                    # a list of NAME=VALUE strings
    ('\n[axes]\n"tier-policy.cpu" = ["lru", "lfu:aging=x"]\n', 9),    # an axis of one entry: its element's line
])
def test_a_refused_tier_policy_entry_names_its_plan_line(tmp_path, lines, line):
    text = _prepare_error(tmp_path, _HEAD + lines)
    assert text.startswith(f"{tmp_path / 'p.toml'}:{line}: point "), text
    assert 'tier-policy = {cpu = "lfu:aging=x"}: lfu aging must be one of dynamic, none, got \'x\'' in text, text


# 7: a plan's bad link is refused before any point runs (at prepare), at its line; a compare point's policies,
# tier policies and links too (before: only when the point ran, naming no line).

@pytest.mark.parametrize("link, words", [
    ("pcie-gen9", 'link = {cpu = "pcie-gen9"}: neither a preset'),
    ("10Gbitps", 'link = {cpu = "10Gbitps"}: invalid bandwidth \'10Gbitps\': \'Gbitps\' reads as bits per second'),
])
def test_a_bad_link_is_refused_at_prepare_with_its_line(tmp_path, link, words):
    text = _prepare_error(tmp_path, _HEAD + f'link = {{cpu = "{link}"}}\n')
    assert text.startswith(f"{tmp_path / 'p.toml'}:7: point "), text
    assert words in text, text


@pytest.mark.parametrize("lines, line, words", [
    ('link = {cpu = "pcie-gen9"}\n', 7, 'link = {cpu = "pcie-gen9"}: neither a preset'),
    ('"tier-policy" = {cpu = "lfu:aging=x"}\n', 7, 'tier-policy = {cpu = "lfu:aging=x"}: lfu aging must be one of'),
    ('policy = ["lru", "lfu:aging=x"]\n', 7, "lfu aging must be one of dynamic, none, got 'x'"),
])
def test_a_compare_point_is_checked_at_prepare(tmp_path, lines, line, words):
    text = _prepare_error(tmp_path, _HEAD.replace('kind = "replay"', 'kind = "compare"') + lines)
    assert text.startswith(f"{tmp_path / 'p.toml'}:{line}: point "), text
    assert words in text, text


def test_check_replay_refuses_a_bad_link_without_the_trace():
    from pcs.engine.api import check_replay

    with pytest.raises(UserError) as err:
        check_replay(tiers=["gpu=500blocks", "cpu=10GB"], links={"cpu": "pcie-gen9"})
    assert str(err.value).startswith("links['cpu'] = 'pcie-gen9': neither a preset"), str(err.value)
    assert err.value.refused_value == "cpu=pcie-gen9"


# L4: a value shown escaped is set apart from its option by a space, as a plain one is.

@pytest.mark.parametrize("message, cli, plan", [
    ("policy='lfu:aging=x\\n': bad", "--policy 'lfu:aging=x\\n': bad", 'policy = "lfu:aging=x\\n": bad'),
    ("policy='lfu': bad", "--policy lfu: bad", 'policy = "lfu": bad'),
    ("admit='cpu=reuse:\\x01': bad", "--admit 'cpu=reuse:\\x01': bad", 'admit = "cpu=reuse:\\u0001": bad'),
    ("tier_policies['cpu'] = 'lfu:aging=\\x01': bad", "--tier-policy 'cpu=lfu:aging=\\x01': bad",
     'tier-policy = {cpu = "lfu:aging=\\u0001"}: bad'),
    ("links['cpu'] = 'pcie\\x01': bad", "--link 'cpu=pcie\\x01': bad", 'link = {cpu = "pcie\\u0001"}: bad'),
    ("links['cpu'] = 'pcie': bad", "--link cpu=pcie: bad", 'link = {cpu = "pcie"}: bad'),
])
def test_an_escaped_value_is_worded_as_a_plain_one(message, cli, plan):
    from pcs.cli.common import option_names

    assert option_names(message) == cli
    assert option_names(message, plan=True) == plan


def test_an_escaped_policy_on_the_command_line():
    r = invoke("replay", SMALL_TRACE, "--policy", "lfu:aging=\x01")
    assert_one_line_error(r, "--policy 'lfu:aging=\\x01': lfu aging must be one of dynamic, none, got '\\x01'")


# L5, L6: another number is another part, never a typo; an alias that names its preset in full counts as it.

@pytest.mark.parametrize("name, kind, preset", [
    ("pcie-gen5-x1", "link", None),         # x1: a real lane width, not x16 mistyped
    ("h20", "gpu", None),                   # a real NVIDIA part, one digit from h200
    ("h10-sxm", "gpu", None),               # 10 / 100: another number
    ("h200-sxm5", "gpu", "h200"),           # the alias h200-sxm (of h200) and a generation digit
    ("h200-sxn", "gpu", "h200"),            # one letter from the alias h200-sxm
    ("nvme5", "link", None),                # nvme shortens nvme-gen4: a digit after it is not its generation
    ("h100-sxn", "gpu", "h100-sxm"),
    ("H100 SXM", "gpu", "h100-sxm"),
    ("nvlinkc2c", "link", "nvlink-c2c"),
    ("h100-sxm5", "gpu", "h100-sxm"),
])
def test_likely_typo_of(name, kind, preset):
    from pcs.hardware import GPUS, LINKS, likely_typo_of

    assert likely_typo_of(name, GPUS if kind == "gpu" else LINKS) == preset


def test_a_real_lane_width_gets_no_note_in_a_hardware_file(tmp_path):
    from pcs.hardware import load_hardware_file

    hw = tmp_path / "hw.toml"
    hw.write_text('[link."pcie-gen5-x1"]\nbandwidth_bps = "4GB/s"\nsetup_s = "10us"\n'
                  '\n[gpu."h200-sxm5"]\nhbm_bytes = "141GB"\nhbm_bps = "4.8TB/s"\nbf16_flops = 989e12\n')
    table = load_hardware_file(hw)
    assert table.notes == (f"{hw}:5: gpu.h200-sxm5 is a new gpu entry, not a change to a preset (did you mean "
                           "'h200'? a preset's name changes that preset)",)


# L7: bits per second written without its / given as a size: a unit of bandwidth.

@pytest.mark.parametrize("size", ["10Gbitps", "10gbitsps"])
def test_bits_per_second_as_a_size_is_a_unit_of_bandwidth(size):
    r = invoke("replay", SMALL_TRACE, "--tier", f"gpu={size}")
    assert_one_line_error(r, f"invalid size '{size}': '{size[2:]}' is a unit of bandwidth, not of size")


# 6: a number past Python's int-string limit or a float's range is refused as out of range, never read as inf.

@pytest.mark.parametrize("text, words", [
    (_BIG, "an integer holds -2^63 to 2^63 - 1 (64 bits)"),
    ("1e999", "a float holds at most about 1.7977e308 either side"),
    (_BIG + ".5", "a float holds at most about 1.7977e308 either side"),
])
def test_a_spec_value_out_of_range(text, words):
    from pcs.cache.policies import OutOfRangeText, spec_value

    value = spec_value(text)        # kept as text, refused by the option's type check (mend46d)
    assert isinstance(value, OutOfRangeText) and value == text
    assert "is out of range: " + words in value.problem, value.problem[:300]


@pytest.mark.parametrize("option, value, words", [
    ("--admit", f"cpu=reuse:{_BIG}", "is out of range: an integer holds -2^63 to 2^63 - 1 (64 bits)"),
    ("--policy", "slru:protected_share=1e999", "--policy slru:protected_share=1e999: option value \"1e999\" is out "
                                               "of range"),
    ("--protected-share", _BIG, "(5,000 characters) is out of range: a float holds at most about 1.7977e308 either side"),
    ("--protected-share", "1e999", "'1e999' is out of range: a float holds at most about 1.7977e308 either side"),
])
def test_a_huge_option_number_is_out_of_range(option, value, words):
    r = invoke("replay", SMALL_TRACE, "--tier", "gpu=500blocks", "--tier", "cpu=1GB", option, value)
    line = assert_one_line_error(r, words)
    assert "inf" not in line.replace("info", ""), line[:300]


def test_a_toml_float_past_the_range_is_named_at_its_line(tmp_path):
    from pcs.errors import InputError
    from pcs.hardware import load_hardware_file

    hw = tmp_path / "hw.toml"
    hw.write_text('[gpu."mine"]\nhbm_bytes = "96GB"\nhbm_bps = "4TB/s"\nbf16_flops = 1_0e999\n')
    with pytest.raises(InputError) as err:
        load_hardware_file(hw)
    assert str(err.value) == (f"{hw}:4: field 'gpu.mine.bf16_flops': number 1_0e999 is out of range: a float holds at most "
                              "about 1.7977e308 either side")


# 8: --admit TIER=none is no admission on that tier: the run's numbers are those without --admit.

def test_admit_tier_none_is_the_run_without_admit():
    base = ("replay", SMALL_TRACE, "--tier", "gpu=20blocks", "--tier", "cpu=40blocks", "--format", "json", "-q")
    plain, none = invoke(*base), invoke(*base, "--admit", "cpu=none")
    assert plain.exit_code == 0 and none.exit_code == 0, (plain.output, none.output)
    a, b = json.loads(plain.stdout), json.loads(none.stdout)
    for d in (a, b):
        d.get("provenance", {}).pop("replay_command", None)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True).replace(" --admit cpu=none", "")


def test_admit_lists_none_and_refuses_none_beside_a_kind():
    r = invoke("replay", SMALL_TRACE, "--tier", "gpu=500blocks", "--tier", "cpu=1GB", "--admit", "cpu=bogus")
    assert_one_line_error(r, "unknown admission 'bogus'; valid: reuse, selective, tinylfu, retain, none")
    r = invoke("replay", SMALL_TRACE, "--tier", "gpu=500blocks", "--tier", "cpu=1GB", "--admit", "cpu=none+cpu=reuse:2")
    assert_one_line_error(r, "--admit cpu=none: tier 'cpu' is given no admission (cpu=none) and admission 'reuse:2'; give one")


def test_a_sweep_plan_takes_admit_tier_none(tmp_path):
    from pcs.sweep.api import prepare

    plan = tmp_path / "p.toml"
    plan.write_text(_HEAD + 'admit = "cpu=none"\n')
    prep = prepare(plan, tmp_path / "out")
    assert len(prep.tasks) == 1 and prep.tasks[0].kwargs["admit"] == ["cpu=none"]
