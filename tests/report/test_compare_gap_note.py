"""``pcs compare``'s note on the gap rows says only what the printed rows need (docs/semantics.md §12).

The oracle split (``oracle split: capacity`` / ``policy``) is printed only with ``--gap-oracle`` (or ``--admit``):
its part of the note (capacity + policy split single-sequence - real again) only then. The ceiling incl. the next
turns' decode blocks exists only when the step scheduler cached decode blocks: never in sequential timing.
"""
from __future__ import annotations

import json

from click.testing import CliRunner

from pcs.cli.main import cli

ORACLE = "the oracle split's capacity + policy split single-sequence - real again"
DECODE = "when a variant cached the next turns' decode blocks"


def _compare(tmp_path, *args):
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps({"timestamp": 1000 * i, "input_length": 1025, "output_length": 1,
                                        "hash_ids": ids}) + "\n"
                            for i, ids in enumerate([[1, 2, 10], [3, 4, 11], [1, 2, 12]])))
    r = CliRunner().invoke(cli, ["compare", str(path), "-q", "--policy", "lru", "--policy", "fifo", "--timing",
                                 "sequential", "--tier", "gpu=2blocks", "--tier", "cpu=8blocks", *args])
    assert r.exit_code == 0, r.output
    note = next(ln for ln in r.stdout.splitlines() if ln.startswith("note: single-sequence = "))
    return r.stdout, note


def test_no_oracle_rows_no_oracle_note(tmp_path):
    out, note = _compare(tmp_path)
    assert "oracle split" not in out
    assert ORACLE not in note and DECODE not in note        # sequential timing: no decode blocks cached
    assert note.endswith("the gap rows sum to ideal - real")


def test_oracle_rows_bring_their_note(tmp_path):
    out, note = _compare(tmp_path, "--gap-oracle")
    assert "oracle split: capacity" in out and "oracle split: policy" in out
    assert ORACLE in note and DECODE not in note


def test_the_help_says_the_oracle_keys_come_with_gap_oracle_alone():
    # --admit alone gives no oracle_hit_ratio / gap_capacity / gap_policy (docs/json.md); the help said
    # "with --admit / --gap-oracle" (new-user trial 2026-12-04)
    from click.testing import CliRunner

    from pcs.cli.main import cli

    text = " ".join(CliRunner().invoke(cli, ["compare", "--help"]).output.split())
    assert "admission with --admit; oracle_hit_ratio, gap_capacity, gap_policy with --gap-oracle" in text
    assert "--admit / --gap-oracle" not in text
