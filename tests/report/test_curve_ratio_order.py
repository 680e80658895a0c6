"""A curve JSON whose ratios or counts contradict each other is refused by pcs report, the field named, one line,
exit 2 (hostile-input review of 2026-12-04, finding 1: these were drawn). LRU <= Belady <= ceiling at each capacity
(docs/semantics.md §14) -- so a ceiling of 0 leaves no LRU hit --, LRU <= Belady checked only for an exact curve (a
sampled LRU value is an estimate); block misses at most the cacheable blocks; every knee p50, p90, p99 present; a
block_bytes only beside a model (pcs writes the two together, pcs.curves.api._block_bytes).

The base file is worked by hand (not pcs's output): 5 requests of 800 prompt tokens in all, 40 cacheable blocks (30
distinct), 16-token blocks; 200 tokens hit an infinite cache (ceiling 200 / 800 = 0.25); at 10 blocks LRU hits 160
tokens (0.2) and Belady 200 (0.25); at 100 blocks both hit the 200. Misses: 30 distinct blocks miss once each, so at
100 blocks 30 misses; at 10 blocks LRU misses 33 and Belady 30.
"""
from __future__ import annotations

import copy
import json

import pytest

from helpers import assert_one_line_error, invoke, old_curve
from pcs.errors import UserError
from pcs.report.payloadcheck import check_payload

BASE = {
    "trace": "t.jsonl", "block_size": 16, "requests": 5, "block_accesses": 50, "cacheable_blocks": 40,
    "distinct_cacheable_blocks": 30, "prompt_tokens": 800, "sample_rate": 1.0, "kernel": "c",
    "engine": "stack-distance", "engine_reason": "exact", "model": "m", "block_bytes": 4096,
    "ceiling_hit_ratio": 0.25,
    "knee": {"p50": {"percent_of_ceiling": 50, "capacity_blocks": 10, "capacity_bytes": 40960, "lru_hit_ratio": 0.2},
             "p90": {"percent_of_ceiling": 90, "capacity_blocks": 100, "capacity_bytes": 409600,
                     "lru_hit_ratio": 0.25},
             "p99": {"percent_of_ceiling": 99, "capacity_blocks": 100, "capacity_bytes": 409600,
                     "lru_hit_ratio": 0.25}},
    "rows": [{"capacity_blocks": 10, "capacity_bytes": 40960, "lru_hit_ratio": 0.2, "belady_hit_ratio": 0.25,
              "ceiling_hit_ratio": 0.25, "lru_block_misses": 33, "belady_block_misses": 30},
             {"capacity_blocks": 100, "capacity_bytes": 409600, "lru_hit_ratio": 0.25, "belady_hit_ratio": 0.25,
              "ceiling_hit_ratio": 0.25, "lru_block_misses": 30, "belady_block_misses": 30}],
    "dtype": None, "notes": [],
}


def _with(keys: tuple, value) -> dict:
    bad = copy.deepcopy(BASE)
    obj = bad
    for k in keys[:-1]:
        obj = obj[k]
    obj[keys[-1]] = value
    return bad


def test_the_hand_worked_file_passes():
    check_payload("curve", copy.deepcopy(BASE))


ABOVE_CEILING = "must be at most ceiling_hit_ratio (0.25): no cache hits more than an infinite one"


@pytest.mark.parametrize("keys, value, message", [
    # 0.3 x 800 = 240 hit tokens, above the 200 an infinite cache hits
    (("rows", 1, "lru_hit_ratio"), 0.3, f"field 'rows[1].lru_hit_ratio': {ABOVE_CEILING}, got 0.3"),
    (("knee", "p90", "lru_hit_ratio"), 0.3, f"field 'knee.p90.lru_hit_ratio': {ABOVE_CEILING}, got 0.3"),
    (("rows", 0, "belady_hit_ratio"), 0.3, f"field 'rows[0].belady_hit_ratio': {ABOVE_CEILING}, got 0.3"),
    # LRU 0.25 (200 tokens) at 10 blocks against Belady's 0.2 (160): MIN is the optimum at one capacity
    (("rows", 0, "belady_hit_ratio"), 0.125,
     "field 'rows[0].lru_hit_ratio': must be at most belady_hit_ratio (0.125): Belady's MIN is the optimum at one "
     "capacity, got 0.2"),
    # 41 misses among 40 cacheable accesses
    (("rows", 0, "lru_block_misses"), 41, "field 'rows[0].lru_block_misses': must be at most cacheable_blocks (40): "
                                          "each miss is one of the cacheable accesses, got 41"),
    (("rows", 1, "belady_block_misses"), 41, "field 'rows[1].belady_block_misses': must be at most "
                                             "cacheable_blocks (40): each miss is one of the cacheable accesses, "
                                             "got 41"),
    (("knee",), {}, "field 'knee': must hold p50, p90 and p99 (pcs writes every knee, with null capacities when "
                    "the ceiling is 0), p50, p90, p99 missing"),
])
def test_each_contradiction_is_refused_naming_the_field(tmp_path, keys, value, message):
    bad = _with(keys, value)
    with pytest.raises(UserError) as err:
        check_payload("curve", bad)
    assert str(err.value) == message
    f = tmp_path / "c.json"                                 # and through pcs report: exit 2, one line, no page
    f.write_text(json.dumps(bad))
    assert_one_line_error(invoke("report", f, "-o", tmp_path / "c.html", "--quiet"), f"{f}: {message}")
    assert not (tmp_path / "c.html").exists()


def test_a_knee_missing_is_named():
    bad = copy.deepcopy(BASE)
    del bad["knee"]["p90"]
    with pytest.raises(UserError, match=r"^field 'knee': must hold p50, p90 and p99 .*\), p90 missing$"):
        check_payload("curve", bad)


def test_a_ceiling_of_0_beside_lru_hits_is_refused():
    # nothing hits an infinite cache (ceiling 0: pcs writes null knees), yet the rows hit 0.2 and 0.25
    bad = copy.deepcopy(BASE)
    bad["ceiling_hit_ratio"] = 0.0
    for row in bad["rows"]:
        row.update(ceiling_hit_ratio=0.0, belady_hit_ratio=0.25)
    for knee in bad["knee"].values():
        knee.update(capacity_blocks=None, capacity_bytes=None, lru_hit_ratio=None)
    with pytest.raises(UserError, match=r"^field 'rows\[0\].lru_hit_ratio': must be at most ceiling_hit_ratio "
                                        r"\(0.0\): no cache hits more than an infinite one, got 0.2$"):
        check_payload("curve", bad)
    for row in bad["rows"]:                                 # no hit anywhere: as pcs writes a trace without reuse
        row.update(lru_hit_ratio=0.0, belady_hit_ratio=0.0, lru_block_misses=40, belady_block_misses=40)
    check_payload("curve", bad)


def test_block_bytes_without_a_model_is_refused():
    bad = copy.deepcopy(BASE)
    bad["model"] = None
    with pytest.raises(UserError, match=r"^field 'block_bytes': must be null when model is null \(pcs writes a "
                                        r"block's bytes only with a model\), got 4096$"):
        check_payload("curve", bad)


def test_a_sampled_lru_estimate_above_belady_is_not_compared():
    # a sampled LRU value is an estimate (pcs writes no Belady beside it): LRU above Belady is no contradiction;
    # the ceiling and miss rules still hold for it
    sampled = copy.deepcopy(BASE)
    sampled.update(sample_rate=0.5, distinct_cacheable_blocks=None)
    for row in sampled["rows"]:
        row["belady_hit_ratio"] = row["belady_block_misses"] = None
    sampled["rows"][0]["lru_hit_ratio"] = 0.2         # a sampled LRU estimate: no Belady to compare it with
    check_payload("curve", sampled)
    sampled["rows"][0]["lru_hit_ratio"] = 0.3
    with pytest.raises(UserError, match=r"^field 'rows\[0\].lru_hit_ratio': must be at most ceiling_hit_ratio"):
        check_payload("curve", sampled)


def test_an_old_curve_names_its_cacheable_count_as_it_holds_it():
    # a pcs before 2026-12-04 wrote the cacheable count as block_accesses
    from pcs.curves.result import upgraded_curve

    payload, written = upgraded_curve(old_curve(_with(("rows", 0, "lru_block_misses"), 41)))
    with pytest.raises(UserError, match=r"^field 'rows\[0\].lru_block_misses': must be at most block_accesses "
                                        r"\(40\)"):
        check_payload("curve", payload, written)


@pytest.mark.parametrize("args", [
    ["traces/sample_chat.jsonl", "--capacities", "0blocks,1blocks,2blocks,50blocks,5000blocks,40000blocks"],
    ["traces/sample_chat.jsonl", "--points", "30", "--model", "llama-3.1-70b"],
    ["traces/sample_chat.jsonl", "--points", "30", "--sample-rate", "0.01", "--seed", "3"],
    ["traces/sample_tokens.jsonl", "--points", "20"],
])
def test_every_curve_pcs_writes_keeps_the_order(args):
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    r = invoke("curve", root / args[0], *args[1:], "--format", "json", "--quiet")
    assert r.exit_code == 0, r.output
    payload = json.loads(r.stdout)
    check_payload("curve", payload)
    rows = payload["rows"]
    assert all(row["lru_hit_ratio"] <= payload["ceiling_hit_ratio"] for row in rows)
    assert all(row["lru_block_misses"] <= payload["cacheable_blocks"] for row in rows)
