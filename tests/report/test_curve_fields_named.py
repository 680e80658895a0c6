"""The refusals of a curve JSON left open by a hostile-input review (2026-12-04), each with its kind's other members:

- F4: a file of a pcs before 2026-12-04 (distinct_blocks, block_accesses = the cacheable count) was refused naming
  today's field (distinct_cacheable_blocks, cacheable_blocks), a name the file does not hold: every refusal of
  such a file -- wrong type, out of range, more distinct than cacheable, a null ruled out -- names the field as the
  file holds it; a field missing from it is named with its old name too.
- F6: a value of the wrong type was worded "must be an integer" in a curve JSON and "must be a count >= 0 below
  2^63" in a replay JSON: one wording for every kind (pcs.report.payloadcheck.must_be): a number field with a range
  rule is worded by the rule, "or null" where null is taken.
- F9: distinct_cacheable_blocks null was read beside sample_rate 1.0 (docs/json.md: null when sampled, and
  pcs.curves.api.curve writes the count whenever the curve is exact). The same kind -- a null the file's other
  fields rule out -- in a knee (null only when the ceiling is 0), block_bytes (null only without a model) and
  capacity_bytes (capacity_blocks x block_bytes, null only beside a null knee capacity_blocks).

Curves: tests/conftest.py one_request_curve (exact, no model, ceiling 0: its knees null) and, here, two requests of
the same three hash ids [7, 8, 9], 1,100 tokens each, block 512, with a model: the second request's two whole
blocks (1,024 tokens) can hit, so its ceiling is 1,024 / 2,200 > 0 and its knees are numbers.
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from helpers import old_curve
from pcs.cli.main import cli
from pcs.report.payloadcheck import must_be

COUNT = "a count >= 0 below 2^63"


def _error(result) -> str:
    """The one line of a refusal (exit 2, no traceback)."""
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


@pytest.fixture(scope="module")
def shared_curve(tmp_path_factory) -> dict:
    path = tmp_path_factory.mktemp("two") / "t.jsonl"
    line = {"input_length": 1100, "output_length": 1, "hash_ids": [7, 8, 9]}
    path.write_text("".join(json.dumps(dict(line, timestamp=t)) + "\n" for t in (0, 1)))
    r = CliRunner().invoke(cli, ["curve", str(path), "--capacities", "2blocks", "--model", "llama-3.1-8b",
                                 "--format", "json"])
    assert r.exit_code == 0, r.output
    payload = json.loads(r.stdout)
    assert payload["ceiling_hit_ratio"] == 1024 / 2200 and isinstance(payload["block_bytes"], int)
    return payload


# F4: the field named as the file holds it

@pytest.mark.parametrize("old_key, value, words", [
    ("distinct_blocks", "x", f"must be {COUNT} or null, got \"x\""),
    ("distinct_blocks", -1, f"must be {COUNT}, got -1"),
    ("distinct_blocks", None, f"must be {COUNT} when sample_rate is 1.0 (null only for a sampled curve), got null"),
    ("block_accesses", "x", f"must be {COUNT}, got \"x\""),           # then the cacheable count
    ("block_accesses", 2.5, f"must be {COUNT}, got 2.5"),
])
def test_an_old_file_is_refused_naming_its_own_field(one_request_curve, report_json, old_key, value, words):
    old = dict(old_curve(one_request_curve), **{old_key: value})
    r, f = report_json(old)
    assert _error(r) == f"pcs: error: {f}: field '{old_key}': {words}"
    # today's file with the same value: today's name
    new_key = {"distinct_blocks": "distinct_cacheable_blocks", "block_accesses": "cacheable_blocks"}[old_key]
    r, f = report_json(dict(one_request_curve, **{new_key: value}))
    assert _error(r) == f"pcs: error: {f}: field '{new_key}': {words}"


def test_more_distinct_than_cacheable_in_an_old_file_names_both_old_fields(one_request_curve, report_json):
    r, f = report_json(dict(old_curve(one_request_curve), distinct_blocks=3))     # 3 distinct among 2 blocks
    assert _error(r) == (f"pcs: error: {f}: field 'distinct_blocks': must be at most block_accesses (2): distinct "
                         "ids among the cacheable blocks, got 3")


@pytest.mark.parametrize("drop, named", [
    ("distinct_blocks", "field 'distinct_cacheable_blocks': missing (pcs curve always writes it; a pcs before "
                        "2026-12-04 wrote it as distinct_blocks)"),
    ("block_accesses", "field 'cacheable_blocks': missing (pcs curve always writes it; a pcs before 2026-12-04 "
                       "wrote it as block_accesses)"),
])
def test_a_field_an_old_file_lacks_is_named_by_both_names(one_request_curve, report_json, drop, named):
    old = {k: v for k, v in old_curve(one_request_curve).items() if k != drop}
    r, f = report_json(old)
    assert _error(r) == f"pcs: error: {f}: {named}"


def test_todays_file_lacking_cacheable_blocks_names_no_old_name(one_request_curve, report_json):
    # its block_accesses is today's count of every hash, not the old name of the field it lacks
    r, f = report_json({k: v for k, v in one_request_curve.items() if k != "cacheable_blocks"})
    assert _error(r) == f"pcs: error: {f}: field 'cacheable_blocks': missing (pcs curve always writes it)"


# F6: one wording for a replay's and a curve's field

@pytest.mark.parametrize("key, value, words", [
    ("requests", "x", f"must be {COUNT}, got \"x\""),
    ("prompt_tokens", 1.5, f"must be {COUNT}, got 1.5"),
    ("block_size", "x", "must be a count >= 1 up to 1,048,576 (tokens per block, pcs.choices.MAX_BLOCK_SIZE), "
                        "got \"x\""),
])
def test_a_field_of_both_kinds_is_worded_alike(one_request_curve, sample_replay, report_json, key, value, words):
    for payload in (sample_replay, one_request_curve):
        r, f = report_json(dict(payload, **{key: value}))
        assert _error(r) == f"pcs: error: {f}: field '{key}': {words}"


def test_a_nullable_ratio_is_worded_alike_in_both_kinds(shared_curve, sample_replay, report_json):
    r, f = report_json(dict(sample_replay, hit_ratio="x"))          # the headline the page reads
    assert _error(r) == f"pcs: error: {f}: field 'hit_ratio': must be a ratio in [0, 1] or null, got \"x\""
    knee = dict(shared_curve["knee"], p90=dict(shared_curve["knee"]["p90"], lru_hit_ratio="x"))
    r, f = report_json(dict(shared_curve, knee=knee))
    assert _error(r) == f"pcs: error: {f}: field 'knee.p90.lru_hit_ratio': must be a ratio in [0, 1] or null, got \"x\""


@pytest.mark.parametrize("tp, path, number_only, words", [
    (int, "requests", False, COUNT),
    (int | None, "distinct_cacheable_blocks", False, f"{COUNT} or null"),
    (float | None, "hit_ratio", False, "a ratio in [0, 1] or null"),
    (float, "ceiling_hit_ratio", True, "a ratio in [0, 1]"),            # held to a number: no null
    (float, "gap.policy", True, "a difference of two ratios, in [-1, 1]"),
    (float, "mean_restored_bytes", False, "a number or null"),          # a mean of bytes: no count's rule
    (str | None, "model", False, "a string or null"),
    (int, "percent_of_ceiling", False, "an integer"),                   # no range rule
    (int, "components[0].layers", False, COUNT),                        # a footprint's (its padding row: 0)
    (int, "tp", False, "a count >= 1 below 2^63"),                      # no group of 0 ranks
    (float, "sample_rate", True, "a rate in (0, 1]"),
    (type(None), "x", False, "null"),
])
def test_must_be_by_hand(tp, path, number_only, words):
    assert must_be(tp, path, number_only) == words


# F9: a null the file's other fields rule out

def test_an_exact_curves_null_distinct_count_is_refused(one_request_curve, report_json):
    r, f = report_json(dict(one_request_curve, distinct_cacheable_blocks=None))
    assert _error(r) == (f"pcs: error: {f}: field 'distinct_cacheable_blocks': must be {COUNT} when sample_rate is "
                         "1.0 (null only for a sampled curve), got null")
    from tests.helpers import as_sampled

    r, _ = report_json(as_sampled(one_request_curve, 0.25, distinct_cacheable_blocks=None))
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("key, words", [
    ("capacity_blocks", COUNT), ("lru_hit_ratio", "a ratio in [0, 1]")])
def test_a_knee_is_null_only_when_the_ceiling_is_0(one_request_curve, shared_curve, report_json, key, words):
    knee = dict(shared_curve["knee"], p50=dict(shared_curve["knee"]["p50"], **{key: None}))
    r, f = report_json(dict(shared_curve, knee=knee))
    assert _error(r) == (f"pcs: error: {f}: field 'knee.p50.{key}': must be {words} when ceiling_hit_ratio is above "
                         "0 (null only when the ceiling is 0), got null")
    assert one_request_curve["ceiling_hit_ratio"] == 0.0 and one_request_curve["knee"]["p50"][key] is None
    assert report_json(one_request_curve)[0].exit_code == 0


def test_block_bytes_is_null_only_without_a_model(one_request_curve, shared_curve, report_json):
    r, f = report_json(dict(shared_curve, block_bytes=None))
    assert _error(r) == (f"pcs: error: {f}: field 'block_bytes': must be a count >= 1 below 2^63 when model is named "
                         "(null only without a model), got null")
    assert one_request_curve["model"] is None and one_request_curve["block_bytes"] is None


@pytest.mark.parametrize("place", ["rows[0]", "knee.p99"])
def test_capacity_bytes_is_null_only_beside_a_null_capacity(shared_curve, report_json, place):
    bad = json.loads(json.dumps(shared_curve))
    (bad["rows"][0] if place == "rows[0]" else bad["knee"]["p99"])["capacity_bytes"] = None
    r, f = report_json(bad)
    assert _error(r) == (f"pcs: error: {f}: field '{place}.capacity_bytes': must be {COUNT} when block_bytes and "
                         "capacity_blocks are numbers (capacity_blocks x block_bytes), got null")
