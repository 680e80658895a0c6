"""A ratio whose denominator is 0 (0 hit tokens over 0 prompt tokens) is undefined: JSON null and "-" in the
text tables, the convention pcs prints every undefined value with (pcs.units.format_percent), never "0.0 %".

By hand: a trace of two requests with 0-token prompts has 0 prompt tokens, so hit tokens / prompt tokens is 0/0
for the real, per-tier, single-sequence, ideal and sequential ratios, and so are the gap terms (differences of
them). A trace of one 1,024-token prompt (two 512-token blocks, nothing seen before: 0 hits) and one 0-token
prompt, routed round-robin to two instances: instance 0 has 0 / 1,024 = 0.0 (a defined zero), instance 1 0/0."""
from __future__ import annotations

import json

import pytest

from pcs.units import format_percent, format_points
from tests.helpers import invoke, invoke_json

ZERO = ('{"timestamp": 0, "input_length": 0, "output_length": 5, "hash_ids": []}\n'
        '{"timestamp": 10, "input_length": 0, "output_length": 5, "hash_ids": []}\n')
HALF = ('{"timestamp": 0, "input_length": 1024, "output_length": 5, "hash_ids": [1, 2]}\n'
        '{"timestamp": 10, "input_length": 0, "output_length": 5, "hash_ids": []}\n')


@pytest.fixture
def zero(tmp_path):
    p = tmp_path / "zero.jsonl"
    p.write_text(ZERO)
    return p


def test_undefined_prints_as_a_dash():
    assert format_percent(None) == "-" and format_points(None) == "-" and format_percent(float("nan")) == "-"
    assert format_percent(0.0) == "0.0 %" and format_points(0.0) == "0.0 pts"   # a defined zero stays a zero


@pytest.mark.parametrize("extra", [(), ("--timing", "sequential")])
def test_replay_of_zero_token_prompts_has_null_ratios(zero, extra):
    s = invoke_json("replay", zero, *extra)
    assert s["prompt_tokens"] == 0 and s["requests"] == 2
    for key in ("hit_ratio", "single_sequence_hit_ratio", "ideal_hit_ratio", "sequential_hit_ratio"):
        assert s[key] is None, key
    assert set(s["hit_ratio_per_tier"].values()) == {None}
    assert s["gap"] == {"block_rounding": None, "capacity_eviction": None, "concurrency": None}
    text = invoke("replay", zero, *extra, "-q").stdout
    row = next(line for line in text.splitlines() if line.startswith("hit ratio (real, token-weighted)"))
    assert row.split()[4] == "-" and "0.0 %" not in row
    gap = next(line for line in text.splitlines() if line.startswith("gap: concurrency"))
    assert gap.split()[2] == "-" and "pts" not in gap


def test_compare_and_html_take_the_nulls(zero, tmp_path):
    c = invoke_json("compare", zero, "--policy", "lru", "--policy", "fifo")
    assert [v["hit_ratio"] for v in c["variants"]] == [None, None]
    assert [v["lower_tier_hit_ratio"] for v in c["variants"]] == [None, None]
    out = tmp_path / "z.html"
    r = invoke("replay", zero, "-q", "--html", out)
    assert r.exit_code == 0, r.output
    js = tmp_path / "z.json"
    js.write_text(invoke("replay", zero, "-q", "--format", "json").stdout)
    r = invoke("report", js, "-o", tmp_path / "r.html")
    assert r.exit_code == 0, r.output


def test_fleet_instance_with_no_prompt_tokens(tmp_path):
    p = tmp_path / "half.jsonl"
    p.write_text(HALF)
    s = invoke_json("replay", p, "--instances", "2", "--router", "round-robin")
    rows = s["per_instance"]
    assert (rows[0]["prompt_tokens"], rows[0]["hit_ratio"], rows[0]["ceiling_hit_ratio"]) == (1024, 0.0, 0.0)
    assert (rows[1]["prompt_tokens"], rows[1]["hit_ratio"], rows[1]["ceiling_hit_ratio"]) == (0, None, None)
    assert s["hit_ratio"] == 0.0          # 0 / 1,024 over the fleet: defined
    z = tmp_path / "zero.jsonl"
    z.write_text(ZERO)
    f = invoke_json("replay", z, "--instances", "2")
    assert f["hit_ratio"] is None and f["gap"]["lost_to_routing"] is None


def test_trace_stats_single_sequence_is_null(zero):
    s = invoke_json("trace", "stats", zero)
    assert s["single_sequence_hit_ratio"] is None and s["single_sequence_hit_tokens"] == 0


# pcs curve: one 0-token prompt, so every ratio of the curve is 0 hit tokens / 0 prompt tokens at any capacity
# (LRU, Belady, the ceiling): undefined, as in replay -- null / "-" / an empty CSV cell / NaN in the Python
# arrays, never 0.0. The block misses stay defined (0 blocks looked up, 0 missed).
def test_curve_json_csv_and_table_give_no_ratio(zero):
    c = invoke_json("curve", zero, "--capacities", "0blocks,10blocks")
    assert c["prompt_tokens"] == 0 and c["ceiling_hit_ratio"] is None
    for row in c["rows"]:
        assert (row["lru_hit_ratio"], row["belady_hit_ratio"], row["ceiling_hit_ratio"]) == (None, None, None)
        assert (row["lru_block_misses"], row["belady_block_misses"]) == (0, 0)
    assert {k["lru_hit_ratio"] for k in c["knee"].values()} == {None}
    csv = invoke("curve", zero, "--capacities", "0blocks,10blocks", "--format", "csv").stdout.splitlines()
    assert csv[1:] == ["0,,,,0,0", "10,,,,0,0"]
    text = invoke("curve", zero, "--capacities", "0blocks,10blocks").stdout
    rows = [line.split() for line in text.splitlines() if line.strip().startswith(("0 ", "10 "))]
    assert [r[1:4] for r in rows] == [["-", "-", "-"]] * 2 and "0.0 %" not in text


def test_curve_python_api_gives_none_and_nan(zero):
    import math

    import numpy as np

    import pcs

    r = pcs.curve(str(zero), capacities=[0, 10])
    assert r.ceiling_hit_ratio is None
    assert [(x.lru_hit_ratio, x.belady_hit_ratio, x.ceiling_hit_ratio) for x in r.rows] == [(None, None, None)] * 2
    assert math.isnan(r.lru.hit_ratio(10))
    arr = r.lru.hit_ratio(np.array([0, 1, 10]))
    assert arr.shape == (3,) and arr.dtype == np.float64 and np.isnan(arr).all()


def test_curve_plot_html_and_report_take_the_nulls(zero, tmp_path):
    pytest.importorskip("matplotlib")
    r = invoke("curve", zero, "--capacities", "0blocks,10blocks", "--plot", tmp_path / "c.png",
               "--html", tmp_path / "c.html")
    assert r.exit_code == 0, r.output
    js = tmp_path / "c.json"
    js.write_text(invoke("curve", zero, "--capacities", "0blocks,10blocks", "--format", "json").stdout)
    r = invoke("report", js, "-o", tmp_path / "r.html")
    assert r.exit_code == 0 and ": 0 charts," in r.output, r.output      # no curve drawn of undefined ratios


def test_curve_report_refuses_a_null_ratio_beside_prompt_tokens(zero, tmp_path):
    c = invoke_json("curve", zero, "--capacities", "0blocks,10blocks")
    c["prompt_tokens"] = 1024           # prompt tokens, so the ratios are defined: a null one is no pcs curve's
    js = tmp_path / "c.json"
    js.write_text(json.dumps(c))
    r = invoke("report", js, "-o", tmp_path / "r.html")
    assert r.exit_code == 2 and "'ceiling_hit_ratio'" in r.output and "prompt_tokens is above 0" in r.output


def test_replay_page_oracle_of_zero_prompts_is_null(zero):
    from pcs.report.htmlcurve import replay_curve

    s = invoke_json("replay", zero, "--tier", "gpu=10blocks")
    curve, oracle = replay_curve(str(zero), s)
    assert oracle == {"capacity_blocks": 10, "hit_ratio": None}
    assert curve["ceiling_hit_ratio"] is None and curve["lru_dense"] == []
