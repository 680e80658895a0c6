"""The JSON of a fleet with --shared-tier carries the threads decision (shared_tier.threads), as pcs replay's JSON
(threads) and a plain fleet's (instance_summaries[i].threads) do (pcs.beside.threads_decision); it lacked it until
2026-12-04. Expected objects are pcs.beside's rule written out: PCS_THREADS=off -> inline, on -> worker threads."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli

SHARED = ("replay", "--instances", "2", "--shared-tier", "remote=10blocks", "--format", "json", "--quiet")
PLAIN = ("replay", "--instances", "2", "--format", "json", "--quiet")
EXPECTED = {"off": {"mode": "off", "used": False, "reason": "PCS_THREADS=off: inline whatever the trace"},
            "on": {"mode": "on", "used": True, "reason": "PCS_THREADS=on: worker threads whatever the trace"}}


def _json(args, monkeypatch, mode):
    monkeypatch.setenv("PCS_THREADS", mode)
    r = CliRunner().invoke(cli, list(args))
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


@pytest.mark.parametrize("mode", ["off", "on"])
def test_shared_tier_json_names_the_threads_decision(monkeypatch, mode):
    shared = _json(SHARED, monkeypatch, mode)["shared_tier"]
    assert shared["threads"] == EXPECTED[mode]
    assert list(shared)[-3:] == ["engine", "engine_reason", "threads"]     # beside the engine, as in a replay
    plain = _json(PLAIN, monkeypatch, mode)
    assert plain["instance_summaries"][0]["threads"] == EXPECTED[mode]      # the same object a plain fleet has


def test_pcs_report_takes_it_as_any_fleet_json(tmp_path, monkeypatch):
    # pcs report draws no fleet; the new key changes nothing there: the one fleet message, exit 2, no field error
    for name, args in (("shared.json", SHARED), ("plain.json", PLAIN)):
        f = tmp_path / name
        f.write_text(json.dumps(_json(args, monkeypatch, "off")))
        r = CliRunner().invoke(cli, ["report", str(f), "-o", str(tmp_path / "p.html")])
        assert r.exit_code == 2 and f"{f}: the JSON of a fleet (" in r.output and "field" not in r.output, r.output
