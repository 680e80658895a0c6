"""A curve JSON whose numbers contradict each other is refused with the field named (review finding 4 of
2026-12-04: capacity_bytes != blocks x block_bytes, block_bytes 0, sample_rate 2.0 or 0.0, block_accesses below
cacheable_blocks were drawn); and every curve pcs writes passes (round trips, exact and sampled, with and without
a model). The pairs are the format's (docs/json.md, CurveResult; pcs.report.curvecheck).

The base file is worked by hand, not taken from pcs's output: 2 rows at 10 and 100 blocks of a model whose block is
4096 bytes (capacity_bytes 40,960 and 409,600), 50 block accesses of which 40 cacheable, 30 distinct, knees at 10
blocks.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from pcs.errors import UserError
from pcs.report.payloadcheck import check_payload
from tests.helpers import assert_one_line_error, invoke

ROOT = Path(__file__).resolve().parents[2]

BASE = {
    "trace": "t.jsonl", "block_size": 16, "requests": 5, "block_accesses": 50, "cacheable_blocks": 40,
    "distinct_cacheable_blocks": 30, "prompt_tokens": 800, "sample_rate": 1.0, "kernel": "c",
    "engine": "stack-distance", "engine_reason": "exact", "model": "m", "block_bytes": 4096,
    "ceiling_hit_ratio": 0.25,
    "knee": {f"p{p}": {"percent_of_ceiling": p, "capacity_blocks": 10, "capacity_bytes": 40960,
                       "lru_hit_ratio": 0.25} for p in (50, 90, 99)},
    "rows": [{"capacity_blocks": c, "capacity_bytes": c * 4096, "lru_hit_ratio": 0.25, "belady_hit_ratio": 0.25,
              "ceiling_hit_ratio": 0.25, "lru_block_misses": 30, "belady_block_misses": 30} for c in (10, 100)],
    "dtype": None, "notes": [],
}


def test_the_hand_worked_file_passes():
    check_payload("curve", copy.deepcopy(BASE))


def _set(d: dict, keys: tuple, value) -> dict:
    obj = d
    for k in keys[:-1]:
        obj = obj[k]
    obj[keys[-1]] = value
    return d


@pytest.mark.parametrize("keys, value, message", [
    (("rows", 1, "capacity_bytes"), 5,
     "field 'rows[1].capacity_bytes': must be capacity_blocks x block_bytes (100 x 4096 = 409600), got 5"),
    (("knee", "p90", "capacity_bytes"), 40961,
     "field 'knee.p90.capacity_bytes': must be capacity_blocks x block_bytes (10 x 4096 = 40960), got 40961"),
    (("block_bytes",), 0, "field 'block_bytes': must be a count >= 1 below 2^63, got 0"),
    (("sample_rate",), 2.0, "field 'sample_rate': must be a rate in (0, 1], got 2.0"),
    (("sample_rate",), 0.0, "field 'sample_rate': must be a rate in (0, 1], got 0.0"),
    (("sample_rate",), None, "field 'sample_rate': must be a rate in (0, 1], got null"),
    (("block_accesses",), 39, "field 'block_accesses': must be at least cacheable_blocks (40): the cacheable "
                              "blocks are among the block accesses, got 39"),
    (("knee", "p50", "percent_of_ceiling"), 90,
     "field 'knee.p50.percent_of_ceiling': must be 50 (knee p50's level), got 90"),
    (("rows", 1, "capacity_blocks"), 10,
     "field 'rows[1].capacity_blocks': must be above rows[0]'s (10): one row per capacity, ascending, got 10"),
    (("rows", 0, "ceiling_hit_ratio"), 0.5,
     "field 'rows[0].ceiling_hit_ratio': must be ceiling_hit_ratio (0.25): one single-sequence hit ratio, got 0.5"),
])
def test_each_contradiction_is_refused_naming_the_field(tmp_path, keys, value, message):
    bad = _set(copy.deepcopy(BASE), keys, value)
    if keys == ("rows", 1, "capacity_blocks"):
        bad["rows"][1]["capacity_bytes"] = 10 * 4096      # its bytes still its blocks x block_bytes
    with pytest.raises(UserError) as err:
        check_payload("curve", bad)
    assert str(err.value) == message
    f = tmp_path / "c.json"                                 # and through pcs report: exit 2, one line
    f.write_text(json.dumps(bad))
    assert_one_line_error(invoke("report", f, "-o", tmp_path / "c.html", "--quiet"), f"{f}: {message}")


def test_capacity_bytes_without_a_model_is_refused():
    bad = copy.deepcopy(BASE)
    bad.update(model=None, block_bytes=None)
    for entry in (*bad["knee"].values(), bad["rows"][1]):
        entry.pop("capacity_bytes")
    with pytest.raises(UserError, match=r"^field 'rows\[0\].capacity_bytes': must be absent when block_bytes is "
                                        r"null \(written only with a model\), got 40960$"):
        check_payload("curve", bad)


def test_an_old_curve_names_its_own_fields():
    # a curve of a pcs before 2026-12-04: its block_accesses is today's cacheable_blocks, and it has no count of
    # every access to compare with; its distinct_blocks is named as it holds it
    old = copy.deepcopy(BASE)
    old["block_accesses"] = old.pop("cacheable_blocks")
    old["distinct_blocks"] = old.pop("distinct_cacheable_blocks")
    from pcs.curves.result import upgraded_curve

    payload, written = upgraded_curve(old)
    check_payload("curve", payload, written)
    payload["distinct_cacheable_blocks"] = 41
    with pytest.raises(UserError, match=r"^field 'distinct_blocks': must be at most block_accesses \(40\)"):
        check_payload("curve", payload, written)


@pytest.mark.parametrize("args", [
    [],
    ["--model", "llama-3.1-8b"],
    ["--model", "deepseek-v3", "--sample-rate", "0.25"],
    ["--sample-rate", "0.5", "--points", "7"],
])
def test_every_curve_pcs_writes_passes(args):
    r = invoke("curve", ROOT / "traces" / "sample_chat.jsonl", *args, "--format", "json", "--quiet")
    assert r.exit_code == 0, r.output
    payload = json.loads(r.stdout)
    check_payload("curve", payload)
    assert payload["block_accesses"] >= payload["cacheable_blocks"] > 0
