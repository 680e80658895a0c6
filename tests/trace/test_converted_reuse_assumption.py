"""Review 47a, F4: a lengths-only trace (Azure, BurstGPT) converted to JSONL keeps its stated reuse assumption, as
its Parquet form does (docs/traces-formats.md), and the replay note says what the file is -- converted from a
lengths-only trace -- never that it "was generated ... as pcs trace synth writes"."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import invoke

ROOT = Path(__file__).resolve().parents[2]
AZURE = ROOT / "traces" / "formats" / "azure2023_code_8.csv"
BURST3 = ROOT / "traces" / "formats" / "burstgpt3_5.csv"
#: pcs.trace.lengthonly.ReuseModel.describe, as docs/traces-formats.md words the two assumptions
NONE = "synthesised: none (lengths only; every block is new, so every hit ratio is 0)"
SESSIONS = "synthesised: a session's request resends its conversation so far (previous prompt + answer)"


def _stats_reuse(*args) -> str:
    res = invoke("trace", "stats", *args, "--format", "json")
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)["reuse"]


@pytest.mark.parametrize("source, assumption", [(AZURE, NONE), (BURST3, SESSIONS)])
@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_the_assumption_survives_conversion(tmp_path, source, assumption, suffix):
    out = tmp_path / f"t{suffix}"
    assert invoke("trace", "convert", source, out, "-q").exit_code == 0
    assert _stats_reuse(source) == assumption
    assert _stats_reuse(out, "--block-size", "16") == assumption


def test_jsonl_of_jsonl_and_its_parquet_keep_it(tmp_path):
    first, again, pq_path = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.parquet"
    assert invoke("trace", "convert", AZURE, first, "-q").exit_code == 0
    assert invoke("trace", "convert", first, again, "--block-size", "16", "-q").exit_code == 0
    assert again.read_bytes() == first.read_bytes()
    assert invoke("trace", "convert", first, pq_path, "--block-size", "16", "-q").exit_code == 0
    assert _stats_reuse(pq_path) == NONE


@pytest.mark.parametrize("suffix, args", [(".jsonl", ["--block-size", "16"]), (".parquet", [])])
def test_the_replay_note_names_a_converted_trace(tmp_path, suffix, args):
    out = tmp_path / f"t{suffix}"
    assert invoke("trace", "convert", AZURE, out, "-q").exit_code == 0
    res = invoke("replay", out, *args, "--tier", "gpu=4blocks", "--format", "json")
    notes = json.loads(res.stdout)["notes"]
    assert not any("was generated" in n for n in notes)
    assert (f"this trace was converted from a lengths-only trace: its prefix reuse is synthetic ({NONE})"
            in " ".join(notes))


def test_the_csv_itself_still_says_lengths_only():
    res = invoke("replay", AZURE, "--tier", "gpu=4blocks", "--format", "json")
    assert any(n.startswith("this trace records lengths only") for n in json.loads(res.stdout)["notes"])


def test_a_malformed_assumption_names_file_line_and_field(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"timestamp": 0, "input_length": 20, "output_length": 5, "reuse": "synthetic", '
                   '"reuse_assumption": "every block is new", "hash_ids": [0, 1]}\n', encoding="utf-8")
    res = invoke("trace", "stats", bad, "--block-size", "16")
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.startswith(f"pcs: error: {bad}:1: field 'reuse_assumption': must be one line of text")
    assert "Traceback" not in res.stderr
