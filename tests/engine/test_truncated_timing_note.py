"""With most requests truncated the with/without-cache timing describes no deployment (docs/semantics.md §5: a
truncated request still runs): the step scheduler's replay says so in a note, and changes no number."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.engine.truncation import truncated_timing_note

SAMPLE = Path(__file__).resolve().parents[2] / "traces" / "sample_chat.jsonl"
HEAD = "truncated, more than half: they ran anyway"


def test_the_note_from_more_than_half():
    assert truncated_timing_note(5, 10, 3, "blocks") is None                    # half: not more than half
    note = truncated_timing_note(6, 10, 1, "blocks")
    assert note.startswith("6 of 10 requests truncated, more than half: they ran anyway, as if their KV fit")
    assert "(this one: 1 block)" in note and "--tier gpu=auto" in note


def _notes(*tiers):
    args = ["replay", str(SAMPLE), "--format", "json", "-q"] + [a for t in tiers for a in ("--tier", t)]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_a_one_block_gpu_tier_gets_the_note_and_the_default_run_does_not():
    s = _notes("gpu=1blocks", "cpu=1blocks")                  # every request needs more than one block
    assert s["requests_truncated"] > s["requests"] / 2
    assert [n for n in s["notes"] if HEAD in n] and s["scheduler"] is not None
    assert not [n for n in _notes()["notes"] if HEAD in n]      # the default run truncates none
