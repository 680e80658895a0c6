"""No two outputs of one run name one path, the ``--plot`` folder included, and the refusal comes before any
output is written (house rule: nothing half-written). Before, ``--requests-out x.csv --html x.csv`` exited 0 with
the page written over the table, and ``--plot p --html p`` wrote the page ``p`` and then failed on the folder."""
from __future__ import annotations

import json

import pytest

from tests.helpers import ROOT, assert_one_line_error, invoke

SAMPLE = ROOT / "traces" / "sample_tokens.jsonl"


@pytest.mark.parametrize("cmd, outs, needle", [
    (["replay"], ["--requests-out", "x.csv", "--html", "x.csv"],
     "--html {d}/x.csv and --requests-out {d}/x.csv name one file"),
    (["replay"], ["--plot", "p", "--html", "p"], "--plot {d}/p and --html {d}/p name one path"),
    (["replay"], ["--plot", "x.csv", "--requests-out", "x.csv"],
     "--plot {d}/x.csv and --requests-out {d}/x.csv name one path"),
    (["curve"], ["--plot", "c", "--html", "c"], "--plot {d}/c and --html {d}/c name one path"),
    (["compare", "--policy", "lru", "--policy", "fifo"], ["--plot", "q", "--html", "q"],
     "--plot {d}/q and --html {d}/q name one path"),
])
def test_two_outputs_on_one_path_are_refused_before_anything_is_written(tmp_path, cmd, outs, needle):
    outs = [str(tmp_path / o) if not o.startswith("--") else o for o in outs]
    r = invoke(*cmd, SAMPLE, *outs, "--quiet")
    assert_one_line_error(r, needle.format(d=tmp_path))
    assert list(tmp_path.iterdir()) == []            # neither the page, the table nor the folder


def test_report_page_and_plot_folder_on_one_path_are_refused(tmp_path):
    run = tmp_path / "run.json"
    r = invoke("replay", SAMPLE, "--format", "json", "--quiet")
    assert r.exit_code == 0, r.output
    run.write_text(r.stdout)
    json.loads(run.read_text())
    page = tmp_path / "r"
    assert_one_line_error(invoke("report", run, "-o", page, "--plot", page, "--no-curve"),
                          f"--plot {page} and -o {page} name one path")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


def test_distinct_outputs_still_run(tmp_path):
    r = invoke("replay", SAMPLE, "--requests-out", tmp_path / "x.csv", "--html", tmp_path / "x.html", "--quiet")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "x.csv").read_text().startswith('"request_id"')
    assert (tmp_path / "x.html").read_text().lstrip().lower().startswith("<!doctype html")
