"""The replay JSON says whether its side work ran on worker threads (``threads``), as it says which engine ran.

The rule (pcs/beside.py's docstring): ``PCS_THREADS=on`` hands the side work to worker threads and ``off`` keeps it
on the calling thread whatever the trace; ``auto`` (unset) uses threads on two CPUs or more, except for a small
trace file when no CPU is free at the replay's start, and never on one CPU. The numbers are the same either way.
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import pcs
from pcs import beside
from pcs.cli.main import cli

TIERS = ["gpu=300blocks", "cpu=2000blocks"]


@pytest.mark.parametrize("env, cpus, small, expected", [
    ("on", {0}, True, ("on", True)),              # on: threads even on one CPU and a small trace
    ("off", {0, 1}, False, ("off", False)),       # off: inline even on two CPUs and a large trace
    ("yes", {0, 1}, False, ("on", True)),         # an alias of on
    (None, {0}, False, ("auto", False)),          # auto on one CPU: inline
    (None, {0, 1}, False, ("auto", True)),        # auto on two CPUs, not a small trace: threads
    (None, {0, 1}, True, ("auto", False)),        # auto, a small trace: inline
])
def test_decision_follows_the_rule(monkeypatch, env, cpus, small, expected):
    if env is None:
        monkeypatch.delenv("PCS_THREADS", raising=False)
    else:
        monkeypatch.setenv("PCS_THREADS", env)
    monkeypatch.setattr(beside.os, "sched_getaffinity", lambda pid: cpus, raising=False)
    monkeypatch.setattr(beside, "small_trace", lambda source: small)
    with beside.sized(object()):
        d = beside.threads_decision()
    assert (d["mode"], d["used"]) == expected
    reason = d["reason"]
    if expected[0] != "auto":
        assert reason.startswith(f"PCS_THREADS={expected[0]}:")
    elif small:
        assert "small trace file" in reason and reason.endswith("inline")
    elif len(cpus) == 1:
        assert reason == "auto: one CPU: inline"
    else:
        assert reason == "auto: two CPUs or more: worker threads"


@pytest.mark.parametrize("env, used", [("on", True), ("off", False)])
def test_replay_json_names_the_mode(monkeypatch, env, used):
    monkeypatch.setenv("PCS_THREADS", env)
    r = CliRunner().invoke(cli, ["replay", "-q", "--format", "json", *[a for t in TIERS for a in ("--tier", t)]])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["threads"]["mode"] == env and d["threads"]["used"] is used
    other = pcs.replay(tiers=TIERS).summary.to_dict()      # the API, same env: the same summary
    assert other["threads"] == d["threads"]
