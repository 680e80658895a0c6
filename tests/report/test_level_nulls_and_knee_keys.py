"""pcs report's null waterfall levels and unknown knee keys, each refused in one line naming the field (exit 2).

A replay's four levels (hit_ratio, sequential_hit_ratio, single_sequence_hit_ratio, ideal_hit_ratio) are ratios of
prompt tokens: null together, and only with no prompt tokens (0/0). Until 2026-12-04 a null hit_ratio or
single_sequence_hit_ratio beside numbers drew the page without the waterfall (exit 0) while a null sequential or
ideal level was refused. A curve's knee keys are p50, p90, p99 (pcs.curves.api.KNEE_PERCENTS); a key with a dot
("a.b") skipped the knee null check, whose path was split on dots. Expected messages are written from the rules.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli

from pcs.errors import UserError
from pcs.report.htmlpage import check_replay_payload
from pcs.report.payloadcheck import check_payload

LEVELS = ("hit_ratio", "sequential_hit_ratio", "single_sequence_hit_ratio", "ideal_hit_ratio")
RATIO = "must be a ratio in [0, 1]"
NULL_ONLY = "(null only when every ratio is: no prompt tokens), got null"


@pytest.mark.parametrize("level", LEVELS)
def test_any_one_null_level_beside_numbers_is_refused(report_json, sample_replay, level):
    # hit_ratio is the first level read for the reason; when it is the null one, sequential_hit_ratio is
    because = "sequential_hit_ratio" if level == "hit_ratio" else "hit_ratio"
    r, path = report_json(dict(sample_replay, **{level: None}))
    assert r.exit_code == 2
    assert r.output.strip() == f"pcs: error: {path}: field '{level}': {RATIO} when {because} is one {NULL_ONLY}"


def test_every_level_null_with_prompt_tokens_is_refused(sample_replay):
    assert sample_replay["prompt_tokens"] > 0
    with pytest.raises(UserError, match=f"^field 'ideal_hit_ratio': {RATIO.replace('[', '.')} when prompt_tokens "
                                        "is above 0 "):
        check_replay_payload(dict(sample_replay, **dict.fromkeys(LEVELS)))


def test_every_level_null_without_prompt_tokens_is_taken(sample_replay):
    check_replay_payload(dict(sample_replay, prompt_tokens=0, **dict.fromkeys(LEVELS)))


@pytest.fixture(scope="module")
def sample_curve() -> dict:
    """``pcs curve traces/sample_chat.jsonl --capacities 10blocks,100blocks --format json``: a trace with reuse."""
    sample = Path(__file__).resolve().parents[2] / "traces" / "sample_chat.jsonl"
    r = CliRunner().invoke(cli, ["curve", str(sample), "--capacities", "10blocks,100blocks", "--format", "json",
                                 "--quiet"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _curve(sample_curve: dict) -> dict:
    out = copy.deepcopy(sample_curve)
    assert out["ceiling_hit_ratio"] > 0 and set(out["knee"]) == {"p50", "p90", "p99"}
    return out


@pytest.mark.parametrize("key", ["a.b", "p95", "p50.capacity_blocks", ""])
def test_a_knee_key_pcs_never_writes_is_refused_by_name(sample_curve, key):
    c = _curve(sample_curve)
    c["knee"][key] = dict(c["knee"]["p50"], capacity_blocks=None)
    with pytest.raises(UserError, match=f"^field 'knee': its keys must be among p50, p90, p99 \\(the knees pcs "
                                        f"writes\\), got \"{key}\"$"):
        check_payload("curve", c)


def test_a_null_knee_is_found_under_its_whole_key(sample_curve):
    c = _curve(sample_curve)
    c["knee"]["p90"]["lru_hit_ratio"] = None
    with pytest.raises(UserError, match="^field 'knee.p90.lru_hit_ratio': must be a ratio in .0, 1. when "
                                        "ceiling_hit_ratio is above 0 "):
        check_payload("curve", c)


def test_a_whole_curve_is_taken(sample_curve):
    check_payload("curve", _curve(sample_curve))
