"""A file a sweep plan names and pcs cannot read is refused before any point is built, naming the plan, the line
and field of the value, the path as the plan wrote it and as it was read (relative paths from the plan's folder,
docs/sweep.md), and the problem. Lines are counted by hand in PLAN."""
from __future__ import annotations

import shutil

import pytest

from helpers import ROOT, SMALL_TRACE, assert_one_line_error, invoke

PLAN = """kind = "replay"
[fixed]
trace = "t.jsonl"
tier = {gpu = "500blocks"}
[axes]
policy = ["lru"]
"""


@pytest.fixture
def sub(tmp_path, monkeypatch):
    """tmp_path/sub holding t.jsonl and cfg.json; the current directory is tmp_path (not the plan's folder)."""
    (tmp_path / "sub").mkdir()
    shutil.copy(SMALL_TRACE, tmp_path / "sub" / "t.jsonl")
    shutil.copy(ROOT / "tests" / "model" / "configs" / "llama.json", tmp_path / "sub" / "cfg.json")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "sub"


def _sweep(sub, text):
    (sub / "p.toml").write_text(text)
    return invoke("sweep", "sub/p.toml", "-o", "out", "-q", "--jobs", "1")


@pytest.mark.parametrize("text,where,written", [
    (PLAN.replace("t.jsonl", "gone.jsonl"), "3: field 'fixed.trace'", "gone.jsonl"),
    (PLAN.replace('trace = "t.jsonl"\n', "").replace('policy = ["lru"]', 'trace = ["t.jsonl",\n  "gone.jsonl"]'),
     "6: field 'axes.trace[1]'", "gone.jsonl"),
    (PLAN.replace("[axes]", 'hardware-file = "hw.toml"\n[axes]'), "5: field 'fixed.hardware-file'", "hw.toml"),
    (PLAN.replace("[axes]", 'model_config = "nocfg.json"\n[axes]'), "5: field 'fixed.model_config'", "nocfg.json"),
])
def test_a_missing_file_names_the_plan_line_field_and_both_paths(sub, text, where, written):
    line = assert_one_line_error(_sweep(sub, text))
    assert line == (f"pcs: error: sub/p.toml:{where}: {written!r} (from the plan's folder: sub/{written}): "
                    "No such file or directory"), line


def test_an_absolute_path_is_named_as_written(sub, tmp_path):
    gone = tmp_path / "elsewhere" / "gone.jsonl"
    line = assert_one_line_error(_sweep(sub, PLAN.replace("t.jsonl", str(gone))))
    assert line == f"pcs: error: sub/p.toml:3: field 'fixed.trace': {str(gone)!r}: No such file or directory", line


def test_a_model_config_is_read_from_the_plan_folder(sub):
    # replay's --model-config is a plain string option: it was read from the current directory, not the plan's
    r = _sweep(sub, PLAN.replace("[axes]", 'model_config = "cfg.json"\n[axes]'))
    assert r.exit_code == 0, r.output


def test_a_file_only_done_points_read_is_not_asked_for(sub):
    # guard: a finished sweep run again prints its summary though its trace has gone (nothing is read)
    assert _sweep(sub, PLAN).exit_code == 0
    (sub / "t.jsonl").unlink()
    r = invoke("sweep", "sub/p.toml", "-o", "out", "-q", "--jobs", "1")
    assert r.exit_code == 0, r.output
