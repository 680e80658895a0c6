"""Review 47m (hostile, on mend47e) and the lead's fuzz of pcs report: each expectation from the documented rules.

1. A replay JSON lacking a key the page reads without a default (``trace``, ``model``, ``gpu``, ``tp``,
   ``block_size``, ``timing``, ``policy``, ``write_policy``, ``cache_partial_blocks``, ``recompute_last_token``,
   ``reference_bytes_per_block``, ``envelope``: pcs replay always writes each) is refused by name, exit 2; it ended
   in a KeyError traceback (exit 1). Found by dropping each top-level key of a replay JSON in turn; dropping each
   nested key (225 paths of a modeled replay, 28 of a compare, 37 of a curve) already gave exit 0 or 2.
2. A sweep point's ``replay_command`` names its trace wherever ``pcs replay`` would read it (after an option, after
   ``--``): it was read only as the word after ``pcs replay``, so such a line fell back to the bundled sample.
3. A ``replay_command`` naming another file than the JSON's ``trace`` (a hand-edited file) is not used: the page
   would draw another trace's curve and oracle; the trace is then read as typed, as for a JSON of an older pcs.
"""
from __future__ import annotations

import json

import pytest

from helpers import ROOT, SMALL_TRACE, invoke, sweep_point_json

NEEDS = ("trace", "model", "gpu", "tp", "block_size", "timing", "policy", "write_policy", "cache_partial_blocks",
         "recompute_last_token", "reference_bytes_per_block", "envelope")


@pytest.fixture(scope="module")
def replay_json():
    res = invoke("replay", SMALL_TRACE, "--tier", "gpu=300blocks", "--timing", "sequential", "--format", "json")
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


@pytest.mark.parametrize("key", NEEDS)
def test_a_replay_json_lacking_a_key_the_page_reads_is_refused_by_name(tmp_path, replay_json, key):
    doc = {k: v for k, v in replay_json.items() if k != key}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    res = invoke("report", path, "-o", tmp_path / "r.html")
    assert res.exit_code == 2 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.strip() == f"pcs: error: {path}: field '{key}': missing (pcs replay always writes it)"
    assert not (tmp_path / "r.html").exists()


def test_the_command_line_trace_is_found_where_pcs_replay_reads_it():
    from pcs.cli.rerun import command_trace

    assert command_trace("pcs replay --policy lru '/d ü/it'\"'\"'s.jsonl'") == "/d ü/it's.jsonl"
    assert command_trace("pcs replay --tier gpu=5blocks --timing sequential /data/t.jsonl") == "/data/t.jsonl"
    assert command_trace("pcs replay -- /data/-t.jsonl") == "/data/-t.jsonl"
    assert command_trace("pcs replay --tier gpu=5blocks") == str(ROOT / "traces" / "sample_chat.jsonl")


@pytest.fixture
def sweep_point(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return json.loads(sweep_point_json(tmp_path))


def test_a_trace_named_after_an_option_is_the_one_read(tmp_path, sweep_point):
    trace = tmp_path / "plans" / "t8.jsonl"
    sweep_point["replay_command"] = f"pcs replay --policy lru --timing sequential {trace}"
    (tmp_path / "p.json").write_text(json.dumps(sweep_point))
    res = invoke("report", "p.json", "-o", "p.html")
    assert res.exit_code == 0, res.stderr
    assert f"trace {trace}, as its replay_command names it, is read unchecked" in res.stderr


def test_a_replay_command_naming_another_file_is_not_used(tmp_path, sweep_point):
    other = ROOT / "traces" / "sample_chat.jsonl"
    sweep_point["replay_command"] = f"pcs replay {other}"
    (tmp_path / "p.json").write_text(json.dumps(sweep_point))
    res = invoke("report", "p.json", "-o", "p.html")
    assert res.exit_code == 0, res.stderr
    assert res.stderr.strip().splitlines()[0] == (
        f"pcs: note: the replay JSON has no trace_file and its replay_command names {other}, not its trace: "
        f"trace {sweep_point['trace']} is read from the current directory unchecked")
    assert str(other) not in res.stderr.split("not its trace", 1)[1]


def test_a_sweep_point_notes_its_skipped_lines_in_the_plan_words(tmp_path, monkeypatch):
    """Review 47m: mend47e moved the sweep's stored note from the command line's words to the plan's (docs/sweep.md
    names a plan's options as `on-error = "skip"`) and no test pinned it. By hand: line 2 is not JSON, one skipped."""
    (tmp_path / "t.jsonl").write_text(
        '{"timestamp": 0, "input_length": 1024, "output_length": 5, "hash_ids": [1, 2]}\nnot json\n'
        '{"timestamp": 1, "input_length": 1024, "output_length": 5, "hash_ids": [1, 3]}\n', encoding="utf-8")
    (tmp_path / "plan.toml").write_text('kind = "replay"\n[fixed]\ntrace = "t.jsonl"\non-error = "skip"\n'
                                        'timing = "sequential"\ntier = {gpu = "300blocks"}\n')
    monkeypatch.chdir(tmp_path)
    assert invoke("sweep", "run", "plan.toml", "-o", "out", "-q").exit_code == 0
    import pyarrow.parquet as pq

    row = pq.read_table(next((tmp_path / "out").rglob("*.parquet"))).to_pylist()[0]
    notes = json.loads(row["result_json"])["notes"]
    assert '1 bad trace line was skipped (on-error = "skip")' in notes, notes


def test_a_line_with_an_option_this_pcs_does_not_know_still_names_its_trace():
    """Review 47p: click's parse of a line holding an unknown option (a dataset written by another pcs version) or
    an option without its value found no trace, so the bundled sample was named; the trace is still its first
    word."""
    from pcs.cli.rerun import command_trace

    assert command_trace("pcs replay /d/t.jsonl --retired-option 5") == "/d/t.jsonl"
    assert command_trace("pcs replay /d/t.jsonl --tier") == "/d/t.jsonl"
