"""Printed figures add up on screen (docs/semantics.md §12, "Printed figures add up"): a difference printed in
points is the difference of the printed percentages, and parts printed under a total add up to the printed
total (largest-remainder rounding). JSON keeps the exact values.

The hand case (every figure below worked out by hand, one decimal of a percent):

    ideal 0.37351 -> 37.4 %   single-sequence 0.37349 -> 37.3 %   with decode 0.38651 -> 38.7 %
    sequential 0.34554 -> 34.6 %   real 0.34908 -> 34.9 %   oracle 0.36051 -> 36.1 %
    hits served by gpu 0.09452 (9.452 -> 9.5 alone), by cpu 0.25456 (25.456 -> 25.5 alone): 9.5 + 25.5 = 35.0,
    not the 34.9 printed above them. Largest remainder: floors 9.4 and 25.4 leave 34.9 - 34.8 = 0.1, given to the
    larger remainder (cpu's .56 against gpu's .52): 9.4 % + 25.5 % = 34.9 %.
    gap: block rounding 37.4 - 37.3 = +0.1 pts (the exact 0.002 pts printed 0.0 under 37.4 % and 37.3 %)
    gap: capacity and eviction 37.3 - 34.6 = +2.7 pts (exact 2.795 printed +2.8)
    gap: concurrency 34.6 - 34.9 = -0.3 pts (exact -0.354 printed -0.4); the three: 0.1 + 2.7 - 0.3 = 2.5 =
    37.4 - 34.9 (the exact terms printed 0.0 + 2.8 - 0.4 = 2.4)
    the decode blocks raise the ceiling by 38.7 - 37.3 = +1.4 pts (exact 1.302 printed +1.3)
    oracle split: capacity 37.3 - 36.1 = +1.2 pts (exact 1.298 printed +1.3), policy 36.1 - 34.9 = +1.2 pts
    (exact 1.143 printed +1.1)
"""
from __future__ import annotations

import copy
import re

import pytest

from pcs.units import points_between, split_percent

IDEAL, SS, SSD, SEQ, REAL, ORACLE = 0.37351, 0.37349, 0.38651, 0.34554, 0.34908, 0.36051
GPU, CPU = 0.09452, REAL - 0.09452


def hand_payload(sample_replay: dict) -> dict:
    """The shipped sample's replay payload with the hand case's ratios written in (the gap terms as the engine
    defines them, docs/semantics.md §12)."""
    s = copy.deepcopy(sample_replay)
    s.update(ideal_hit_ratio=IDEAL, single_sequence_hit_ratio=SS, single_sequence_with_decode_hit_ratio=SSD,
             sequential_hit_ratio=SEQ, hit_ratio=REAL, oracle_hit_ratio=ORACLE,
             hit_ratio_per_tier={"gpu": GPU, "cpu": CPU})
    s["gap"] = {"block_rounding": IDEAL - SS, "capacity_eviction": SS - SEQ, "concurrency": SEQ - REAL,
                "capacity": SS - ORACLE, "policy": ORACLE - REAL}
    return s


def _value(text: str, label: str) -> str:
    line = next(line for line in text.splitlines() if line.startswith(label))
    return re.search(r"\s(-|[+-]?\d+\.\d (?:%|pts))(?:\s|$)", line[len(label):]).group(1)


def test_split_and_difference_helpers_by_hand():
    assert split_percent([GPU, CPU], REAL) == ["9.4 %", "25.5 %"]
    assert split_percent([0.5, 0.25, 0.25], 1.0) == ["50.0 %", "25.0 %", "25.0 %"]     # exact parts move not
    # thirds: 33.333.. each, floors 33.3 x 3 = 99.9, the 0.1 left to the first of the tied remainders
    assert split_percent([1 / 3, 1 / 3, 1 / 3], 1.0) == ["33.4 %", "33.3 %", "33.3 %"]
    assert split_percent([0.0, REAL], REAL) == ["0.0 %", "34.9 %"]      # a zero part stays 0.0
    assert split_percent([None, 0.1], None) == ["-", "10.0 %"]
    assert points_between(IDEAL, SS) == "+0.1 pts" and points_between(SS, SS) == "0.0 pts"
    assert points_between(SEQ, REAL) == "-0.3 pts" and points_between(None, REAL) == "-"
    assert points_between(SS, SEQ, 0.00049) == "+2.7 pts"      # 0.049 pts prints 0.0: nothing taken off
    assert points_between(SS, SEQ, 0.0005) == "+2.6 pts"       # 0.05 pts prints 0.1 (round half even of 0.05)


def test_replay_text_rows_add_up(sample_replay):
    from pcs.report.replay import render_replay

    text = render_replay(hand_payload(sample_replay))
    assert _value(text, "hit ratio (real, token-weighted)") == "34.9 %"
    assert _value(text, "  hits served by gpu") == "9.4 %"
    assert _value(text, "  hits served by cpu") == "25.5 %"
    assert _value(text, "gap: block rounding") == "+0.1 pts"
    assert _value(text, "gap: capacity and eviction") == "+2.7 pts"
    assert _value(text, "gap: concurrency") == "-0.3 pts"
    assert _value(text, "oracle split: capacity") == "+1.2 pts"
    assert _value(text, "oracle split: policy") == "+1.2 pts"
    assert "raise the ceiling by +1.4 pts" in " ".join(text.split())


def test_hybrid_rules_row_is_taken_out_of_capacity_as_printed(sample_replay):
    """A hybrid model's rules term (0.0125 -> +1.2 pts, exact 1.25 rounds half to even) is printed on its own
    row and taken out of capacity and eviction as printed: 37.3 - 34.6 - 1.2 = +1.5 pts, so the two rows
    add up to the printed single-sequence - sequential, 2.7."""
    from pcs.report.replay import payload_gap_texts

    s = hand_payload(sample_replay)
    s["gap"].update(hybrid_rules=0.0125, capacity_eviction=SS - SEQ - 0.0125)
    shown = payload_gap_texts(s)
    assert (shown["hybrid_rules"], shown["capacity_eviction"]) == ("+1.2 pts", "+1.5 pts")


def test_html_waterfall_and_runs_table_print_the_same(sample_replay):
    from pcs.report import htmlcharts, htmltables

    s = hand_payload(sample_replay)
    chart = htmlcharts.waterfall_chart(s, None)
    labels = {r["step"]: r["label"] for r in _steps(chart.spec)}
    assert labels == {"ideal": "37.4 %", "block rounding": "+0.1 pts", "single-sequence": "37.3 %",
                      "capacity and eviction": "+2.7 pts", "sequential": "34.6 %", "concurrency": "-0.3 pts",
                      "real": "34.9 %"}
    table = htmltables.runs_table([s, s])
    cells = {row[0]["text"]: row[1]["text"] for row in table["rows"]}
    assert (cells["gap: block rounding"], cells["gap: capacity and eviction"], cells["gap: concurrency"]) == \
        ("+0.1 pts", "+2.7 pts", "-0.3 pts")


def _steps(chart) -> list[dict]:
    """The waterfall's rows (its ``steps`` dataset) wherever the Vega-Lite spec keeps its datasets."""
    found = []

    def walk(x):
        if isinstance(x, dict):
            if "steps" in x and isinstance(x["steps"], list):
                found.extend(x["steps"])
            for v in x.values():
                walk(v)
        elif isinstance(x, (list, tuple)):
            for v in x:
                walk(v)

    walk(chart)
    return found


def _variant(name: str) -> dict:
    """A compare variant's JSON fields of the hand case (no ideal or sequential: block rounding and
    concurrency carry them)."""
    return {"variant": name, "tiers": "gpu=10blocks", "hit_ratio": REAL, "single_sequence_hit_ratio": SS,
            "gap_block_rounding": IDEAL - SS, "gap_capacity_eviction": SS - SEQ, "gap_concurrency": SEQ - REAL,
            "oracle_hit_ratio": ORACLE, "gap_capacity": SS - ORACLE, "gap_policy": ORACLE - REAL}


def test_compare_gap_rows_are_the_difference_of_the_printed_ratios():
    from pcs.report.compare import variant_gap_texts
    from pcs.report.htmltables import compare_table

    assert variant_gap_texts(_variant("lru")) == {
        "gap_block_rounding": "+0.1 pts", "gap_capacity_eviction": "+2.7 pts", "gap_concurrency": "-0.3 pts",
        "gap_capacity": "+1.2 pts", "gap_policy": "+1.2 pts"}
    table = compare_table({"trace": "t", "model": "m", "timing": "modeled", "variants": [_variant("a"),
                                                                                        _variant("b")]})
    cells = {row[0]["text"]: [c["text"] for c in row[1:]] for row in table["rows"]}
    assert cells["gap: capacity and eviction"] == ["+2.7 pts"] * 2
    assert cells["oracle split: policy"] == ["+1.2 pts"] * 2


def test_fleet_steps_are_the_difference_of_the_printed_ratios():
    """ceiling 0.37351 (37.4 %) -> captured 0.37349 (37.3 %) -> delivered 0.34908 (34.9 %): -0.1 pts split
    across instances (the exact -0.002 printed 0.0), -2.4 pts in the instances (exact -2.441)."""
    from pcs.report.fleet import _gap_rows

    s = {"gap": {"fleet_ceiling_hit_ratio": IDEAL, "captured_hit_ratio": SS, "delivered_hit_ratio": REAL,
                 "lost_to_routing": IDEAL - SS, "lost_in_instances": SS - REAL},
         "imbalance_requests": 1.0, "imbalance_prompt_tokens": 1.0, "imbalance_busy_s": 1.0,
         "ttft_p50_s": 1.0, "ttft_p99_s": 2.0}
    rows = {r[0].split(" (")[0]: r for r in _gap_rows(s)}
    assert rows["captured by routing"][2] == "-0.1 pts split across instances"
    assert rows["delivered"][2] == "-2.4 pts finite tiers, concurrency"


@pytest.mark.parametrize("trace", ["sample_chat.jsonl", "sample_exact.jsonl"])
def test_shipped_traces_print_rows_that_add_up(trace):
    """On the shipped traces (sample_chat printed 9.5 % + 25.5 % under 34.9 % before): the per-tier rows sum
    to the real row and the gap rows to ideal - real, as printed."""
    from tests.helpers import ROOT, invoke

    text = invoke("replay", ROOT / "traces" / trace, "-q", "--gap-oracle").stdout

    def num(label):
        return float(_value(text, label).split()[0])

    assert round(num("  hits served by gpu") + num("  hits served by cpu"), 1) == num("hit ratio (real")
    ideal = float(re.search(r"ideal (\d+\.\d) %", text).group(1))
    gaps = num("gap: block rounding") + num("gap: capacity and eviction") + num("gap: concurrency")
    assert round(gaps, 1) == round(ideal - num("hit ratio (real"), 1)
    assert round(num("oracle split: capacity") + num("oracle split: policy"), 1) == \
        round(num("single-sequence hit ratio") - num("hit ratio (real"), 1)
