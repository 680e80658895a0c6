"""pcs trace convert / synth and the CLI surface: round trips, atomic writes, seeded synthesis, help."""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import shlex
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import AZURE_CONV
from helpers import file_input_error, per_trace
from pcs.cli.main import cli
from pcs.errors import InputError
from pcs.trace import DEFAULT_TRACE, open_trace, trace_stats
from pcs.trace.synth import SynthSpec, synth_requests

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def run():
    runner = CliRunner()

    def _run(*args, code=0):
        res = runner.invoke(cli, [str(a) for a in args])
        assert res.exit_code == code, res.output
        return res
    return _run


def test_mooncake_parquet_mooncake_is_byte_identical(tmp_path, run, exact_trace):
    pq_path, back = tmp_path / "c.parquet", tmp_path / "c.jsonl"
    run("trace", "convert", exact_trace, pq_path)
    run("trace", "convert", pq_path, back)
    assert back.read_bytes() == exact_trace.read_bytes()
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(pq_path)
    assert pf.schema_arrow.names == ["arrival_s", "prompt_tokens", "output_tokens", "block_hashes"]
    assert pf.schema_arrow.metadata[b"pcs.block_size"] == b"512"
    assert pf.schema_arrow.metadata[b"pcs.schema"] == b"pcs-trace/1"
    assert pf.metadata.num_rows == per_trace(exact_trace, sample=1000, mooncake=12031)


def test_bailian_round_trip_keeps_session_columns(tmp_path, run):
    rows = [{"chat_id": 1, "parent_chat_id": -1, "timestamp": 0.5, "input_length": 20, "output_length": 2,
             "type": "text", "turn": 1, "hash_ids": [5, 6]},
            {"chat_id": 2, "parent_chat_id": 1, "timestamp": 1.25, "input_length": 33, "output_length": 2,
             "type": "image", "turn": 2, "hash_ids": [5, 6, 7]}]
    src = tmp_path / "b.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run("trace", "convert", src, tmp_path / "b.parquet")
    run("trace", "convert", tmp_path / "b.parquet", tmp_path / "b2.jsonl", "--to", "bailian")
    assert [json.loads(line) for line in (tmp_path / "b2.jsonl").read_text().splitlines()] == rows


def test_convert_gzip_output_and_json_summary(tmp_path, run):
    res = run("trace", "convert", DEFAULT_TRACE, tmp_path / "s.jsonl.gz", "--format", "json")
    info = json.loads(res.stdout)
    assert info["format"] == "mooncake" and info["requests"] == sum(1 for _ in open(DEFAULT_TRACE))
    assert (tmp_path / "s.jsonl.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert trace_stats(open_trace(tmp_path / "s.jsonl.gz"))["block_accesses"] == info["block_accesses"]


def test_convert_is_atomic_and_never_touches_input(tmp_path, run):
    src = tmp_path / "bad.jsonl"
    good = '{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [0]}\n'
    src.write_text(good * 10 + '{"timestamp": 0, "input_length": -5}\n')
    out = tmp_path / "out.parquet"
    out.write_bytes(b"old")
    res = run("trace", "convert", src, out, code=2)
    assert ":11: field 'input_length'" in res.output
    assert out.read_bytes() == b"old"                       # untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl", "out.parquet"]   # no temp left
    run("trace", "convert", src, src, code=2)               # refuses to overwrite its input
    assert src.read_text().endswith('"input_length": -5}\n')


def test_convert_skip_reports_skipped(tmp_path, run):
    src = tmp_path / "bad.jsonl"
    src.write_text('{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [0]}\n\n'
                   '{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1]}\n')
    res = run("trace", "convert", src, tmp_path / "o.jsonl", "--on-error", "skip", "--format", "json")
    info = json.loads(res.stdout)
    assert (info["requests"], info["skipped"]) == (2, 1)


# --- synth --------------------------------------------------------------------------------------

def test_synth_is_seeded_and_deterministic(tmp_path, run):
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    run("trace", "synth", a, "--requests", 300, "--seed", 3)
    run("trace", "synth", b, "--requests", 300, "--seed", 3)
    run("trace", "synth", c, "--requests", 300, "--seed", 4)
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    assert sum(1 for _ in open_trace(a)) == 300


def _readme_synth_commands() -> list[list[str]]:
    """The `pcs trace synth ...` commands in traces/README.md, split into words."""
    text = (ROOT / "traces" / "README.md").read_text(encoding="utf-8")
    return [shlex.split(c)[1:] for c in re.findall(r"`(pcs trace synth [^`]*)`", text)]


def test_readme_records_a_command_for_every_sample():
    made = set()
    for words in _readme_synth_commands():
        made.add(words[2])
        if "--tokens-out" in words:
            made.add(words[words.index("--tokens-out") + 1])
    assert made == {f"traces/{p.name}" for p in (ROOT / "traces").glob("*.jsonl")}


@pytest.mark.parametrize("words", _readme_synth_commands(), ids=lambda w: w[2])
def test_bundled_samples_are_reproducible_from_the_readme_commands(tmp_path, run, words, request):
    """Re-run each recorded command into tmp_path; every file it writes equals the bundled one."""
    outs = {}
    args = list(words)
    for i, w in enumerate(args):
        if w.startswith("traces/"):
            outs[tmp_path / Path(w).name] = ROOT / w
            args[i] = str(tmp_path / Path(w).name)
        elif w == AZURE_CONV.name:                     # the public CSV, found through conftest
            args[i] = str(request.getfixturevalue("azure_conv"))  # skips with the fixture's reason
    run(*args)
    for made, bundled in outs.items():
        assert made.read_bytes() == bundled.read_bytes(), bundled.name


def test_synth_sessions_grow_their_prefix():
    reqs = list(synth_requests(SynthSpec(num_requests=400, seed=9, block_size=16, length_scale=0.1)))
    by_id = {r.chat_id: r for r in reqs}
    kinds = {r.kind for r in reqs}
    assert kinds == {"chat", "agent", "oneoff"}
    followers = [r for r in reqs if r.parent_chat_id >= 0]
    assert followers
    for r in followers:
        parent = by_id[r.parent_chat_id]
        # a later turn = the parent's prompt + the parent's answer + new text: it starts with the parent's prompt
        assert r.kind == parent.kind and r.turn == parent.turn + 1 and r.arrival_s >= parent.arrival_s
        assert np.array_equal(r.token_ids[: parent.token_ids.size], parent.token_ids)
        assert r.token_ids.size >= parent.token_ids.size + parent.output_tokens
    assert all(r.parent_chat_id == -1 for r in reqs if r.kind == "oneoff")
    assert all(a.arrival_s <= b.arrival_s for a, b in zip(reqs, reqs[1:]))


@pytest.fixture(params=["written", "real"])
def azure_csv(request, tmp_path) -> tuple[Path, int]:
    """(CSV path, rows to use): one written here in the Azure 2023 format (40 rows, 7 fractional
    digits, one minute apart), and the real conversation CSV (first 200 rows; skips where absent)."""
    if request.param == "real":
        return request.getfixturevalue("azure_conv"), 200
    rows = [f"2023-11-16 18:{15 + i:02d}:{17 * i % 60:02d}.{1234567 * (i + 1) % 10**7:07d},"
            f"{997 * i % 4000 + 10},{31 * i % 500 + 1}" for i in range(40)]
    path = tmp_path / "azure.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(rows) + "\n")
    return path, 40


def test_synth_from_azure_csv_keeps_times_and_counts(azure_csv, tmp_path, run):
    csv, n = azure_csv
    out = tmp_path / "az.jsonl"
    run("trace", "synth", out, "--requests", n, "--azure-csv", csv, "--seed", 1)
    lines = csv.read_text().splitlines()[1:n + 1]

    def secs(s):  # independent parse: 7 fractional digits
        main, frac = s.split(".")
        return dt.datetime.fromisoformat(main).timestamp() + int(frac) / 1e7

    t0 = secs(lines[0].split(",")[0])
    want = [(round((secs(ts) - t0) * 1000), int(c), int(g)) for ts, c, g in (ln.split(",") for ln in lines)]
    got = [(json.loads(ln)["timestamp"], json.loads(ln)["input_length"], json.loads(ln)["output_length"])
           for ln in out.read_text().splitlines()]
    assert got == want


def test_synth_from_azure_csv_says_how_many_rows_it_took(azure_csv, tmp_path):
    # the default --requests 1700 silently took 1,700 of the real CSV's 19,365 rows; now a note
    # on stderr names the count and whether it was the default (CliRunner(mix_stderr=False) keeps them apart)
    csv, n = azure_csv
    runner = CliRunner()
    given = runner.invoke(cli, ["trace", "synth", str(tmp_path / "a.jsonl"), "--requests", "7", "--azure-csv", str(csv)])
    assert given.exit_code == 0, given.output
    assert "at most the first 7 rows were taken (--requests 7, as given)" in given.stderr
    assert len((tmp_path / "a.jsonl").read_text().splitlines()) == 7
    default = runner.invoke(cli, ["trace", "synth", str(tmp_path / "b.jsonl"), "--azure-csv", str(csv)])
    rows = len(csv.read_text().splitlines()) - 1     # the header line is not a row
    # the note only where rows were left out: the real CSV's 19,365 rows > 1,700; the written one's 40 are not
    assert ("(--requests 1700, the default); --requests all takes every row" in default.stderr) == (rows > 1700)
    every = runner.invoke(cli, ["trace", "synth", str(tmp_path / "c.jsonl"), "--requests", "all", "--azure-csv", str(csv)])
    assert every.exit_code == 0 and "rows were taken" not in every.stderr


def test_azure_csv_errors(tmp_path):
    from pcs.trace.azure import read_azure_csv

    text = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:47.0,x,1\n"
    e = file_input_error(tmp_path, "a.csv", text, lambda p: list(read_azure_csv(p)))
    assert (e.line, e.field) == (3, "ContextTokens")


def test_synth_spec_validation():
    with pytest.raises(ValueError, match="mix"):
        SynthSpec(mix=(0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="rate_rps"):
        SynthSpec(rate_rps=0)


# --- CLI surface ---------------------------------------------------------------------------------

@pytest.mark.parametrize("sub", ["stats", "convert", "synth"])
def test_every_subcommand_has_help_with_an_example(run, sub):
    out = run("trace", sub, "--help").output
    assert "Example" in out and "--format" in out


def test_stats_default_trace_table_and_csv(run):
    table = run("trace", "stats").output
    assert "single-sequence hit ratio" in table and "sample_chat.jsonl" in table
    csv_out = run("trace", "stats", "--format", "csv").output.splitlines()
    assert len(csv_out) == 2 and "single_sequence_hit_ratio" in csv_out[0].split(",")


def test_readme_documents_the_json_keys():
    # the keys of the trace-shape statistics are documented in docs/traces-formats.md
    readme = (ROOT / "docs" / "traces.md").read_text() + (ROOT / "docs" / "traces-formats.md").read_text()
    s = trace_stats(open_trace(ROOT / "traces" / "sample_tokens.jsonl"))
    missing = [k for k in s if f"`{k}`" not in readme]
    assert not missing, missing
    for word in ("pcs-trace/1", "block_hashes", "list<uint64>"):
        assert word in readme


def test_missing_file_is_one_line_error(run, tmp_path):
    res = run("trace", "stats", tmp_path / "nope.jsonl", code=2)
    assert res.output.startswith("pcs: error:") and "nope.jsonl" in res.output and len(res.output.splitlines()) == 1


def test_chmod_of_written_files(tmp_path, run):
    out = tmp_path / "x.parquet"
    run("trace", "convert", DEFAULT_TRACE, out)
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask


@pytest.mark.parametrize("requests, noted", [("8", False), ("9", False), ("7", True), (None, False)])
def test_synth_azure_rows_note_only_when_rows_were_left_out(tmp_path, requests, noted):
    # traces/formats/azure2023_conv_8.csv has 8 rows (9 lines with the header), so
    # --requests 8, 9 and the default 1,700 take every row (no note); --requests 7 leaves row 8 out (note)
    csv = ROOT / "traces" / "formats" / "azure2023_conv_8.csv"
    args = ["trace", "synth", str(tmp_path / "a.jsonl"), "--azure-csv", str(csv)]
    res = CliRunner().invoke(cli, args + (["--requests", requests] if requests else []))
    assert res.exit_code == 0, res.output
    assert ("rows were taken" in res.stderr) == noted
