"""A point refused for one option's value names the plan's line where that value is written (Review 44c):
a [fixed] key, an axis list's element, a range axis's key; a value it cannot place (two options hold it, a
NAME=VALUE entry) gets no line, never a wrong one. Lines counted by hand from the plan texts below."""
from __future__ import annotations

import re

import pytest

from helpers import SMALL_TRACE, plan_refusal

_HEAD = f'kind = "replay"\n\n[fixed]\ntrace = "{SMALL_TRACE}"\ntier = {{gpu = "500blocks"}}\n'   # lines 1-5


_refusal = plan_refusal


@pytest.mark.parametrize("rest,line,words", [
    # line 6 'model', 8 '[axes]', 9 'policy = ["lru",', 10 '"fifx"]': the element's own line (click's Choice)
    ('model = "llama-3.1-8b"\n\n[axes]\npolicy = ["lru",\n  "fifx"]\n', 10, "unknown eviction policy 'fifx'"),
    # tp = 0 at line 6 (click's range)
    ('tp = 0\nmodel = "llama-3.1-8b"\n\n[axes]\npolicy = ["lru"]\n', 6, "'tp': 0 is not in the range"),
    # a misspelt fixed model at line 7 (the API's unknown name, found as the one option holding it)
    ('policy = "lru"\nmodel = "llama-3.1-8"\n\n[axes]\ntp = [1]\n', 7, "unknown model 'llama-3.1-8'"),
    # the same from an axis: the second element, line 9
    ('\n[axes]\nmodel = ["llama-3.1-8b",\n  "llama-3.1-8"]\n', 9, "unknown model 'llama-3.1-8'"),
    # a range axis: the grid is written at its key, line 9 (6 model, 7 blank, 8 [axes])
    ('model = "llama-3.1-8b"\n\n[axes]\ntp = {from = 0, to = 1, step = 1}\n', 9, "'tp': 0 is not in the range"),
])
def test_a_point_refusal_names_the_line_of_its_value(tmp_path, rest, line, words):
    msg = _refusal(tmp_path, _HEAD + rest)
    assert msg.startswith(f"{tmp_path / 'p.toml'}:{line}: point "), msg
    assert words in msg


def test_a_mistyped_key_is_the_plan_s_refusal_at_its_line(tmp_path):
    # every key's name is checked before any value, so before any point: the table, not a point, at line 6
    msg = _refusal(tmp_path, _HEAD + 'timng = "sequential"\n\n[axes]\npolicy = ["lru"]\n')
    assert msg.startswith(f"{tmp_path / 'p.toml'}:6: [fixed]: unknown option 'timng' for pcs replay; did you mean"), msg


def test_a_value_two_options_hold_gets_no_line(tmp_path):
    # 'h100' is both the gpu and the (unknown) model: which key is meant is not known, so the plan alone
    msg = _refusal(tmp_path, _HEAD + 'gpu = "h100"\n\n[axes]\nmodel = ["h100"]\n')
    assert re.match(re.escape(str(tmp_path / "p.toml")) + r": point \w+ \(", msg), msg
    assert "unknown model 'h100'" in msg


def test_a_point_failing_while_it_runs_names_the_plan_and_the_line(tmp_path):
    """Review 45, 4b: a point that fails in its run (not at the plan check) names the plan and the line of the value
    the message quotes (engine 'lru-scan', written on line 9); the other point runs."""
    from helpers import invoke

    plan = tmp_path / "p.toml"
    # lines 1-5 _HEAD, 6 timing, 7 (blank), 8 [axes], 9 engine
    plan.write_text(_HEAD.replace('tier = {gpu = "500blocks"}', 'tier = {gpu = "40blocks", cpu = "100blocks"}')
                    + 'timing = "sequential"\n\n[axes]\nengine = ["lru-scan", "reference"]\n')
    out = invoke("sweep", plan, "-o", tmp_path / "out", "--jobs", "1", "-q")
    assert out.exit_code == 2, out.output
    errs = [ln for ln in out.stderr.splitlines() if ln.startswith("pcs: error: ") and "cannot run" in ln]
    assert len(errs) == 1, out.stderr
    assert errs[0].startswith(f"pcs: error: {plan}:9: point "), errs[0]
    assert re.search(r"\(trace=\S+ tier\.gpu=40blocks tier\.cpu=100blocks timing=sequential engine=lru-scan\): "
                     r"engine 'lru-scan' cannot run this replay", errs[0]), errs[0]


def test_a_point_failing_while_it_runs_without_a_culprit_names_the_plan_alone(tmp_path):
    # tier.gpu = "1KB" holds no block of llama-2-70b: the message quotes 'gpu', a tier table's entry, which the plan
    # cannot place: the plan alone, no line
    from helpers import invoke

    plan = tmp_path / "p.toml"
    plan.write_text(_HEAD + '\n[axes]\n"tier.gpu" = ["500blocks", "1KB"]\n')
    out = invoke("sweep", plan, "-o", tmp_path / "out", "--jobs", "1", "-q")
    assert out.exit_code == 2, out.output
    errs = [ln for ln in out.stderr.splitlines() if "smaller than one block" in ln]
    assert len(errs) == 1 and errs[0].startswith(f"pcs: error: {plan}: point "), out.stderr
