"""pcs report on a hand-edited replay or footprint JSON: each field the page reads is held to its type and range
(one wording: pcs.report.payloadcheck.must_be / RANGES), and the fields that relate are held to their relation
(pcs.report.replaycheck) -- exit 2 and one line, never an internal error (exit 1)."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli

pytest.importorskip("jinja2")
FOOTPRINT = Path(__file__).with_name("footprint_llama31_8b.json")
COUNT = "must be a count >= 0 below 2^63"


@pytest.fixture(scope="module")
def run():
    r = CliRunner().invoke(cli, ["replay", "-q", "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    # what the edits below need: a lower tier with its link, restores in the scatter, a deployment, the trace
    assert len(d["tiers"]) == 2 and d["envelope"]["links"] and d["distributions"]["restore_vs_recompute"]["restore_s"]
    assert d["deployment"]["gpu_tier_from"] == "deployment" and d["trace_file"]["path"].endswith("sample_chat.jsonl")
    return d


def _report(tmp_path, doc, *extra):
    src = tmp_path / "b.json"
    src.write_text(json.dumps(doc))
    r = CliRunner().invoke(cli, ["report", "-q", str(src), "-o", str(tmp_path / "p.html"), *extra])
    return src, r


def _refused(tmp_path, doc, message, *extra):
    src, r = _report(tmp_path, doc, *extra)
    assert r.exit_code == 2, r.output
    assert r.output.strip() == f"pcs: error: {src}: {message}"
    assert not (tmp_path / "p.html").exists()


def _edit(d, path, value):
    d = copy.deepcopy(d)
    *head, last = path
    obj = d
    for p in head:
        obj = obj[p]
    if value is KeyError:
        del obj[last]
    else:
        obj[last] = value
    return d


@pytest.mark.parametrize("path, value, message", [
    (("series", "step_s"), None, "field 'series.step_s': must be a number > 0, got null"),
    (("series", "step_s"), -1, "field 'series.step_s': must be a number > 0, got -1"),
    (("series", "step_s"), 0, "field 'series.step_s': must be a number > 0, got 0"),
    (("distributions", "restore_vs_recompute", "restore_s", 0), None,
     "field 'distributions.restore_vs_recompute.restore_s[0]': must be a number, got null"),
    (("distributions", "restore_vs_recompute", "prefill_saved_s", 0), None,
     "field 'distributions.restore_vs_recompute.prefill_saved_s[0]': must be a number, got null"),
    (("deployment", "gpu_tier_bytes"), "x", f"field 'deployment.gpu_tier_bytes': {COUNT}, got \"x\""),
    (("deployment", "gpu_tier_from"), 3, "field 'deployment.gpu_tier_from': must be a string, got 3"),
    (("trace_file", "path"), 1.5, "field 'trace_file.path': must be a string, got 1.5"),
    (("trace_file", "path"), [], "field 'trace_file.path': must be a string, got []"),
    (("trace_file", "path"), {}, "field 'trace_file.path': must be a string, got {}"),
    (("trace_file", "bytes"), None, f"field 'trace_file.bytes': {COUNT}, got null"),
    (("trace_file", "bytes"), "445583", f"field 'trace_file.bytes': {COUNT}, got \"445583\""),
    (("trace_file", "bytes"), True, f"field 'trace_file.bytes': {COUNT}, got true"),
    (("trace_file", "bytes"), float("nan"),
     "field 'trace_file.bytes': must be a finite number, got NaN (pcs writes a non-finite number as null)"),
    (("trace_file", "bytes"), 445583.0, f"field 'trace_file.bytes': {COUNT}, got 445583.0"),
    (("tiers", 0, "bytes_per_block"), -1, f"field 'tiers[0].bytes_per_block': {COUNT}, got -1"),
    (("envelope", "links", 0, "restores"), -1, f"field 'envelope.links[0].restores': {COUNT}, got -1"),
    (("envelope", "links", 0, "bandwidth_bps"), 0, "field 'envelope.links[0].bandwidth_bps': must be a number > 0, got 0"),
    (("envelope", "links", 0, "bandwidth_bps"), -1.0, "field 'envelope.links[0].bandwidth_bps': must be a number > 0, got -1.0"),
    (("requests_with_hit",), -1, f"field 'requests_with_hit': {COUNT}, got -1"),
    (("reference_bytes_per_block",), -1, f"field 'reference_bytes_per_block': {COUNT}, got -1"),
    (("bytes", "restored_per_link", "cpu"), -1, f"field 'bytes.restored_per_link.cpu': {COUNT}, got -1"),
    (("tiers", 0, "bytes_per_block_by_component", "full_attention"), -2,
     f"field 'tiers[0].bytes_per_block_by_component.full_attention': {COUNT}, got -2"),
])
def test_a_field_out_of_its_rule_is_one_line(tmp_path, run, path, value, message):
    _refused(tmp_path, _edit(run, path, value), message, "--no-curve")


def test_trace_file_without_path_is_one_line_with_the_curve_read(tmp_path, run):
    doc = _edit(run, ("trace_file", "path"), KeyError)
    src, r = _report(tmp_path, doc)
    assert r.exit_code == 2 and r.output.startswith(f"pcs: error: {src}: field 'trace_file': must be an object with "
                                                    "'path' (as pcs writes it), got {"), r.output


def test_capacity_bytes_is_blocks_times_bytes_per_block(tmp_path, run):
    t = run["tiers"][0]
    want = t["capacity_blocks"] * t["bytes_per_block"]        # e.g. 2,372 blocks x 167,772,160 B for 70B fp16
    _refused(tmp_path, _edit(run, ("tiers", 0, "capacity_bytes"), 5),
             f"field 'tiers[0].capacity_bytes': must be capacity_blocks x bytes_per_block = {want:,}, got 5",
             "--no-curve")


def test_a_part_is_at_most_its_whole(tmp_path, run):
    n = run["block_accesses"]
    _refused(tmp_path, _edit(run, ("hit_blocks",), n + 1),
             f"field 'hit_blocks': must be at most block_accesses ({n:,}), got {n + 1:,}", "--no-curve")


def test_every_tier_splits_over_tier_0s_components(tmp_path, run):
    _refused(tmp_path, _edit(run, ("tiers", 1, "bytes_per_block_by_component"), {}),
             "field 'tiers[1].bytes_per_block_by_component': must name the components of tiers[0] (full_attention), "
             "got {}", "--no-curve")


def test_the_unedited_run_makes_a_page(tmp_path, run):
    _, r = _report(tmp_path, run, "--no-curve")
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("path, value, message", [
    (("serialized_bytes_per_token",), -1, f"field 'serialized_bytes_per_token': {COUNT}, got -1"),
    (("fixed_bytes_per_sequence",), -5, f"field 'fixed_bytes_per_sequence': {COUNT}, got -5"),
    (("components", 0, "serialized_bytes_per_block"), 2 ** 63,
     f"field 'components[0].serialized_bytes_per_block': {COUNT}, got 9223372036854775808"),
    (("components", 0, "fixed_bytes_per_sequence"), -5, f"field 'components[0].fixed_bytes_per_sequence': {COUNT}, got -5"),
    (("by_dtype", 1, "reference_ratio_vs_bf16"), -1, "field 'by_dtype[1].reference_ratio_vs_bf16': must be a number >= 0, got -1"),
])
def test_footprint_sizes_and_ratios_have_their_range(tmp_path, path, value, message):
    _refused(tmp_path, _edit(json.loads(FOOTPRINT.read_text()), path, value), message)


def test_footprint_ratio_above_1_is_taken(tmp_path):
    """A ratio to bf16 has no upper bound: fp32 stores twice bf16's bytes."""
    doc = _edit(json.loads(FOOTPRINT.read_text()), ("by_dtype", 1, "reference_ratio_vs_bf16"), 2.0)
    _, r = _report(tmp_path, doc)
    assert r.exit_code == 0, r.output


def test_range_rules_by_name():
    from pcs.report.payloadcheck import range_rule

    assert range_rule("tiers[0].bytes_per_block").what == "a count >= 0 below 2^63"
    assert range_rule("components[2].fixed_bytes_per_sequence").what == "a count >= 0 below 2^63"
    assert range_rule("tiers[1].resident_bytes_end_by_component.full_attention").what == "a count >= 0 below 2^63"
    assert range_rule("series.link_bandwidth_bps.cpu").what == "a number > 0"
    assert range_rule("by_dtype[0].prefix_store_ratio_vs_bf16").what == "a number >= 0"
    assert range_rule("envelope.links[0].setup_s") is None
