"""A sweep says what it is doing before its first point (a large plan was silent for seconds)
and runs no more processes than the CPUs it may use (--jobs 4096 would start one spawn process per point).
"""
from __future__ import annotations

import json

from click.testing import CliRunner

import pcs.cli.sweep as cli_sweep
import pcs.sweep.backends as backends
from pcs.cli.main import cli

PLAN = "kind = 'footprint'\n[fixed]\nmodel = 'llama-3.1-8b'\n[axes]\ntokens = [1024, 2048, 4096]\n"


def _run(tmp_path, *args):
    plan = tmp_path / "p.toml"
    plan.write_text(PLAN, encoding="utf-8")
    return CliRunner().invoke(cli, ["sweep", str(plan), "-o", str(tmp_path / "out"), "--format", "json", *args])


def test_a_large_plan_says_how_many_points_it_checks_first(tmp_path, monkeypatch):
    monkeypatch.setattr(cli_sweep, "PLANNING_NOTE_POINTS", 3)        # 3 points: at the threshold
    r = _run(tmp_path, "--jobs", "1")
    assert r.exit_code == 0, r.output
    assert r.stderr.splitlines()[0].startswith("pcs: note: checking the 3 points of ")
    assert "before the first one runs" in r.stderr.splitlines()[0]
    monkeypatch.setattr(cli_sweep, "PLANNING_NOTE_POINTS", 4)        # below it: no such line
    assert "checking the" not in _run(tmp_path, "--jobs", "1", "--force").stderr
    assert "checking the" not in _run(tmp_path, "--jobs", "1", "--force", "-q").stderr


def test_jobs_above_the_cpus_are_capped_with_a_note(tmp_path, monkeypatch):
    monkeypatch.setattr(backends, "default_jobs", lambda: 1)           # a one-CPU process: 1 = run in-process
    r = _run(tmp_path, "--jobs", "4096")
    assert r.exit_code == 0, r.output
    assert ("pcs: note: --jobs 4,096 is more than the 1 CPU this process may use; running 1 process ("
            in r.stderr)
    assert json.loads(r.stdout)["ran"] == 3
    assert "--jobs" not in _run(tmp_path, "--jobs", "1", "--force").stderr     # within the CPUs: no note
