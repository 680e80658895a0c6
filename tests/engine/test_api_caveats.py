"""Review 47a, F3: the caveat notes about the trace read (its prefix reuse is synthetic, bad lines skipped:
pcs.trace.api.trace_notes) are part of the Python API's result, as of the command's JSON; the CLI's JSON is
unchanged (it gives them once, in its words)."""
from __future__ import annotations

import json
from pathlib import Path

import pcs
from helpers import invoke

ROOT = Path(__file__).resolve().parents[2]
SYNTH = ROOT / "traces" / "sample_exact.jsonl"      # a pcs trace synth output: rows marked "reuse": "synthetic"
GENERATED = "this trace was generated (rows marked \"reuse\": \"synthetic\""
RUN = dict(tiers=["gpu=300blocks"], timing="sequential")
CLI_RUN = ["--tier", "gpu=300blocks", "--timing", "sequential", "--format", "json"]


def _bad_line_trace(tmp_path) -> Path:
    p = tmp_path / "t.jsonl"
    p.write_text('{"timestamp": 0, "input_length": 1024, "output_length": 5, "hash_ids": [1, 2]}\nnot json\n'
                 '{"timestamp": 1, "input_length": 1024, "output_length": 5, "hash_ids": [1, 3]}\n', encoding="utf-8")
    return p


def test_replay_summary_carries_the_synthetic_reuse_note():
    api = pcs.replay(str(SYNTH), **RUN).summary.to_dict()
    assert api["notes"][-1].startswith(GENERATED)
    cli = json.loads(invoke("replay", SYNTH, *CLI_RUN).stdout)
    for key in ("trace_file", "replay_command", "skipped"):     # the keys the command adds (docs/json.md)
        cli.pop(key)
    assert cli == api


def test_replay_summary_carries_the_skipped_lines_notes(tmp_path):
    t = pcs.open_trace(str(_bad_line_trace(tmp_path)), on_error="skip")
    notes = pcs.replay(t, **RUN).summary.notes
    # by hand: line 2 is not JSON, so one line was skipped and it is named
    assert t.skipped == 1
    assert notes[-2] == "1 bad trace line was skipped (on_error='skip')"        # the API's words (mend47e)
    assert notes[-1].startswith(f"skipped {t.name}:2: invalid JSON")
    assert sum("bad trace line" in n for n in notes) == 1       # once


def test_fleet_summary_carries_them_once_at_the_fleet_level():
    s = pcs.fleet_replay(str(SYNTH), instances=2, **RUN).summary
    assert s.notes[-1].startswith(GENERATED) and sum(n.startswith(GENERATED) for n in s.notes) == 1
    assert not any(n.startswith(GENERATED) for i in s.instance_summaries if i is not None for n in i.notes)


def test_the_cli_gives_them_once(tmp_path):
    for args in ([SYNTH], [SYNTH, "--instances", "2"], [_bad_line_trace(tmp_path), "--on-error", "skip"]):
        res = invoke("replay", *args, *CLI_RUN)
        notes = json.loads(res.stdout)["notes"]
        assert len(notes) == len(set(notes)), args
        assert len(res.stderr.splitlines()) == len(set(res.stderr.splitlines())), args
