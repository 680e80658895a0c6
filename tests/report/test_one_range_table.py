"""One table of range rules (pcs.report.payloadcheck.RANGES) for the page's replay check and the payload checker.

The two lived apart until 2026-12-04 and disagreed where these tests look: block_size up to 2^31 - 1 (page) or
2^63 - 1 (checker), where pcs takes 1..2^20 (pcs.choices.MAX_BLOCK_SIZE); gap terms held to [-1, 1] by the page
(three of a replay's four) and by nothing in a compare variant; a huge count shown by its first 60 digits (page) or
by its number of digits (checker); and the wording of the same rule ('a positive number of tokens' beside
'a count >= 1 below 2^63'). Expected messages below are written from the rules, not copied from output.
"""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.errors import UserError
from pcs.report.htmlpage import check_replay_payload
from pcs.report.payloadcheck import RANGES, check_payload, check_range, range_rule

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = str(ROOT / "traces" / "sample_chat.jsonl")
BLOCK = "must be a count >= 1 up to 1,048,576 (tokens per block, pcs.choices.MAX_BLOCK_SIZE)"
DIFF = "must be a difference of two ratios, in [-1, 1]"


def _json(args: list[str]) -> dict:
    r = CliRunner().invoke(cli, [*args, "--format", "json", "--quiet"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def replay_json() -> dict:
    return _json(["replay", "--timing", "sequential", "--tier", "gpu=200blocks"])


@pytest.fixture(scope="module")
def curve_json() -> dict:
    return _json(["curve", SAMPLE, "--capacities", "10blocks,100blocks"])


@pytest.fixture(scope="module")
def compare_json() -> dict:
    return _json(["compare", SAMPLE, "--policy", "lru", "--policy", "fifo", "--timing", "sequential",
                  "--tier", "gpu=100blocks"])


def test_the_rule_is_picked_by_field_name():
    assert range_rule("hit_ratio") is RANGES["ratio"]
    assert range_rule("rows[3].lru_hit_ratio") is RANGES["ratio"]
    assert range_rule("gap.concurrency") is RANGES["ratio_difference"]
    assert range_rule("variants[0].gap_policy") is RANGES["ratio_difference"]
    assert range_rule("rows[1].capacity_blocks") is RANGES["count"]
    assert range_rule("requests") is RANGES["count"]
    assert range_rule("block_size") is RANGES["block_size"]
    assert range_rule("policy") is None                 # a gap term's name outside gap is not a gap term
    assert range_rule("hit_ratio_per_tier.gpu") is None


@pytest.mark.parametrize("path, value, ok", [
    ("block_size", 1, True), ("block_size", 1 << 20, True), ("block_size", (1 << 20) + 1, False),
    ("block_size", 0, False), ("requests", 2 ** 63 - 1, True), ("requests", 2 ** 63, False),
    ("requests", -1, False), ("hit_ratio", 1, True), ("hit_ratio", 1.0000001, False),
    ("gap.policy", -1.0, True), ("gap.policy", -1.5, False), ("hit_ratio", float("nan"), False),
])
def test_check_range_edges(path, value, ok):
    if ok:
        check_range(value, path)
    else:
        with pytest.raises(UserError, match=f"field '{path}': must be"):
            check_range(value, path)


@pytest.mark.parametrize("size", [(1 << 20) + 1, 2 ** 31 - 1])
def test_a_block_size_pcs_never_takes_is_refused_by_both_checks(replay_json, curve_json, size):
    # 2^20 + 1 and 2^31 - 1: each accepted by both checks before (page: below 2^31, checker: below 2^63)
    bad = dict(replay_json, block_size=size)
    with pytest.raises(UserError, match=re.escape(f"field 'block_size': {BLOCK}, got {size}") + "$"):
        check_replay_payload(bad)
    with pytest.raises(UserError, match="field 'block_size': must be a count >= 1 up to 1,048,576"):
        check_payload("curve", dict(curve_json, block_size=size))
    check_replay_payload(dict(replay_json, block_size=1 << 20))      # the largest pcs takes: accepted
    check_payload("curve", dict(curve_json, block_size=1 << 20))


def test_a_compare_variants_gap_term_is_held_to_minus_one_to_one(compare_json):
    # a gap term is ratio - ratio: 1.5 cannot be one (accepted before: no rule covered gap_* of a variant)
    bad = copy.deepcopy(compare_json)
    bad["variants"][0]["gap_concurrency"] = 1.5
    with pytest.raises(UserError, match=re.escape(f"field 'variants[0].gap_concurrency': {DIFF}, got 1.5")):
        check_payload("compare", bad)
    bad["variants"][0]["gap_concurrency"] = -1.0
    check_payload("compare", bad)
    bad["variants"][0]["gap_concurrency"] = None          # float | None: null stays allowed
    check_payload("compare", bad)


def test_a_replays_hybrid_rules_term_is_checked_when_the_waterfall_is_not_drawn(replay_json):
    # the page checked hybrid_rules only inside the waterfall's sum, skipped with hit_ratio null (0/0)
    bad = copy.deepcopy(replay_json)
    bad["hit_ratio"] = None
    bad["gap"]["hybrid_rules"] = 2.0
    with pytest.raises(UserError, match=re.escape(f"field 'gap.hybrid_rules': {DIFF}, got 2.0")):
        check_replay_payload(bad)


def test_each_side_keeps_its_null_rules(replay_json):
    levels = ("hit_ratio", "sequential_hit_ratio", "single_sequence_hit_ratio", "ideal_hit_ratio")
    check_replay_payload(dict(replay_json, prompt_tokens=0, **dict.fromkeys(levels)))   # 0/0: the ratios null
    with pytest.raises(UserError, match=re.escape(f"field 'block_size': {BLOCK}, got null")):
        check_replay_payload(dict(replay_json, block_size=None))
    with pytest.raises(UserError, match="field 'requests': must be a count >= 0 below 2\\^63, got 2.5"):
        check_replay_payload(dict(replay_json, requests=2.5))       # a count takes no float


def test_a_huge_count_is_shown_by_its_digits_on_both_sides(tmp_path, replay_json):
    # the page showed the first 60 digits; 10^400 has 401 digits
    with pytest.raises(UserError, match="field 'requests': must be a count >= 0 below 2\\^63, got an integer "
                                        "of 401 digits"):
        check_replay_payload(dict(replay_json, requests=10 ** 400))
    f = tmp_path / "r.json"
    f.write_text(json.dumps(dict(replay_json, requests=10 ** 400)))
    r = CliRunner().invoke(cli, ["report", str(f), "-o", str(tmp_path / "r.html"), "--no-curve"])
    assert r.exit_code == 2 and "got an integer of 401 digits" in r.output, r.output
