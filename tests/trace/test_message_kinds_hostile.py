"""Trace messages under hostile input, each checked as a kind (every member found, not the one example):

- ``--on-error skip`` with no request left names the first NON-blank skipped line (a blank line's own message told
  the user to use the option already on) and counts the blank ones apart; blank lines stay bad lines
  (docs/traces.md), so a trailing blank line is still counted as skipped;
- "a"/"an" before a name from a variable (``an azure trace``, ``got an int``: :func:`pcs.units.a_or_an`);
- a hint names another format only when that format's reader accepts the line (tried on the line alone);
- UTF-16 text is named alone, as text traces (not JSON ones) being UTF-8;
- ``--trace-format parquet`` on a file that is no Parquet file gets detection's verdict;
- counts in the id-count messages carry thousands separators;
- Parquet's skipped rows are rows in ``pcs trace stats`` and its notes.

Every expected message is written out from the engine's documented behaviour (docs/traces-formats.md,
docs/traces.md), not copied from a run.
"""
from __future__ import annotations

import gzip
import json
import shutil

import sys

import pytest

from tests.helpers import invoke

ROOT_FORMATS = __import__("pathlib").Path(__file__).resolve().parents[2] / "traces" / "formats"
MOONCAKE_8 = ROOT_FORMATS / "mooncake_conv_8.jsonl"     # 8 valid Mooncake lines, 512-token blocks
AZURE_8 = ROOT_FORMATS / "azure2023_conv_8.csv"         # header TIMESTAMP,ContextTokens,GeneratedTokens + 8 rows
HINT_MOONCAKE = ("format detection reads this line as a mooncake trace: pass --trace-format mooncake (or no "
                 "--trace-format, and pcs detects it)")


def _error(args) -> str:
    r = invoke(*args)
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1, r.output
    return r.output.strip()


def test_leading_blank_lines_are_not_the_reason_named(tmp_path):
    # lines 1-2 blank, lines 3-10 Mooncake lines, read as tokens: every line is bad; the first non-blank (line 3)
    # lacks token_ids (the tokens reader reads token_ids first) and is a valid Mooncake line, so the hint holds
    f = tmp_path / "lead_blank.jsonl"
    f.write_bytes(b"\n\n" + MOONCAKE_8.read_bytes())
    out = _error(["trace", "stats", f, "--trace-format", "tokens", "--on-error", "skip"])
    assert out == (f"pcs: error: {f}:3: field 'token_ids': missing; {HINT_MOONCAKE}; no requests left: all 10 lines "
                   "were skipped as bad (2 of them blank), the first non-blank one for this reason (--on-error skip)")
    assert "use --on-error skip" not in out


def test_one_bad_line_among_blank_ones_is_named_with_the_blank_count(tmp_path):
    f = tmp_path / "one.jsonl"
    f.write_bytes(b"\n{}\n\n")          # line 2: {} has no timestamp (the Mooncake reader's first field)
    out = _error(["trace", "stats", f, "--trace-format", "mooncake", "--on-error", "skip"])
    assert out == (f"pcs: error: {f}:2: field 'timestamp': missing; no requests left: its only non-blank line was "
                   "skipped as bad, and 2 blank lines with it (--on-error skip)")


def test_a_trailing_blank_line_is_a_skipped_bad_line(tmp_path):
    # docs/traces.md: blank lines are bad lines; --on-error skip skips them and counts them
    f = tmp_path / "trail.jsonl"
    f.write_bytes(MOONCAKE_8.read_bytes() + b"\n")
    assert _error(["trace", "stats", f]) == f"pcs: error: {f}:9: blank line (use --on-error skip to skip blank lines)"
    r = invoke("trace", "stats", f, "--on-error", "skip", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["skipped"] == 1 and doc["requests"] == 8
    r = invoke("replay", f, "--on-error", "skip", "--format", "json", "-q")
    assert r.exit_code == 0, r.output
    assert "1 bad trace line was skipped (--on-error skip)" in json.loads(r.stdout)["notes"]


@pytest.mark.parametrize("word, want", [
    ("azure", "an azure"), ("mooncake", "a mooncake"), ("int", "an int"), ("FIFO", "a FIFO"),
    ("8", "an 8"), ("80", "an 80"), ("11", "an 11"), ("18000", "an 18000"), ("16", "a 16"), ("110", "a 110"),
])
def test_article_before_a_variable_word(word, want):
    from pcs.units import a_or_an

    assert a_or_an(word) == want


def test_a_csv_header_read_as_json_names_an_azure_trace():
    out = _error(["trace", "stats", AZURE_8, "--trace-format", "mooncake"])
    assert out == (f"pcs: error: {AZURE_8}:1: invalid JSON: Expecting value at column 1; format detection reads this "
                   "line as an azure trace: pass --trace-format azure (or no --trace-format, and pcs detects it)")


def test_no_advice_to_pass_a_format_whose_reader_refuses_the_line(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text('{"timestamp": 1, "output_length": 1, "token_ids": "x"}\n')
    out = _error(["trace", "stats", f, "--trace-format", "mooncake"])
    assert out == (f"pcs: error: {f}:1: field 'input_length': missing; its keys look like a tokens trace's, but that "
                   "reader refuses the line too: field 'token_ids': must be a list of integers, got a string")
    assert "pass --trace-format" not in out


def test_a_format_whose_reader_accepts_the_line_is_still_suggested(tmp_path):
    f = tmp_path / "m.jsonl"
    f.write_text('{"timestamp": 1, "input_length": 3, "output_length": 1, "hash_ids": [7]}\n')
    assert _error(["trace", "stats", f, "--trace-format", "tokens"]) == (
        f"pcs: error: {f}:1: field 'token_ids': missing; {HINT_MOONCAKE}")


def _wide(codec: str) -> str:
    """The message of a trace saved with Python's ``codec``: "utf-16"/"utf-32" write a byte order mark in this
    machine's order (``sys.byteorder``), "-le"/"-be" none; iconv is told the byte order when no mark gives it."""
    if codec in ("utf-16", "utf-32"):
        what, code = f"{codec.upper()} text with a {sys.byteorder}-endian byte order mark", codec.upper()
    else:
        little = codec.endswith("-le")
        code = codec.upper().replace("-LE", "LE").replace("-BE", "BE")
        what = f"{code} text ({'little' if little else 'big'}-endian, no byte order mark)"
    return (f"the file looks like {what}; pcs reads text traces (JSON Lines, CSV) as UTF-8: re-encode it "
            f"(iconv -f {code} -t UTF-8)")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])   # with a BOM, and without one
@pytest.mark.parametrize("fmt", ["azure", "mooncake", None])
def test_a_utf16_csv_is_named_as_utf16_alone(tmp_path, encoding, fmt):
    f = tmp_path / "u16.csv"
    f.write_bytes(AZURE_8.read_text().encode(encoding))
    args = ["trace", "stats", f] + (["--trace-format", fmt] if fmt else [])
    assert _error(args) == f"pcs: error: {f}:1: {_wide(encoding)}"


# UTF-32 was named UTF-16 (its LE byte order mark starts with UTF-16 LE's, an ASCII character's first two bytes
# are UTF-16's), and `iconv -f UTF-16` of it gives garbage: BOM FF FE 00 00 / 00 00 FE FF (Unicode 15, 23.8), or
# '{' / 'T' as 7B 00 00 00 (LE) / 00 00 00 7B (BE)
@pytest.mark.parametrize("encoding", ["utf-32", "utf-32-le", "utf-32-be"])
@pytest.mark.parametrize("trace, fmt", [(AZURE_8, "azure"), (AZURE_8, None), (MOONCAKE_8, "mooncake"),
                                        (MOONCAKE_8, None)])
def test_utf32_text_is_named_utf32(tmp_path, encoding, trace, fmt):
    f = tmp_path / ("u32" + trace.suffix)
    f.write_bytes(trace.read_text().encode(encoding))
    args = ["trace", "stats", f] + (["--trace-format", fmt] if fmt else [])
    assert _error(args) == f"pcs: error: {f}:1: {_wide(encoding)}"


NOT_PARQUET = "not a Parquet file (it does not start with the Parquet magic bytes PAR1)"


def test_parquet_named_on_a_jsonl_trace_gets_detections_verdict(tmp_path):
    assert _error(["trace", "stats", MOONCAKE_8, "--trace-format", "parquet"]) == (
        f"pcs: error: {MOONCAKE_8}: {NOT_PARQUET}; format detection reads this file as a mooncake trace: pass "
        "--trace-format mooncake (or no --trace-format, and pcs detects it)")
    assert _error(["trace", "stats", AZURE_8, "--trace-format", "parquet"]) == (
        f"pcs: error: {AZURE_8}: {NOT_PARQUET}; format detection reads this file as an azure trace: pass "
        "--trace-format azure (or no --trace-format, and pcs detects it)")


def test_parquet_named_on_a_gzipped_parquet_file_says_gunzip(tmp_path):
    pq = tmp_path / "m.parquet"
    assert invoke("trace", "convert", MOONCAKE_8, pq).exit_code == 0
    gz = tmp_path / "m.parquet.gz"
    with open(pq, "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    assert _error(["trace", "stats", gz, "--trace-format", "parquet"]) == (
        f"pcs: error: {gz}:1: {NOT_PARQUET}; format detection: a gzip-compressed Parquet file: pcs reads Parquet as "
        "written (its columns are compressed inside); gunzip it first")


def test_id_count_messages_carry_thousands_separators(tmp_path):
    # 3,000,001 tokens at 512-token blocks: ceil = 5,860 ids (5,859 x 512 = 2,999,808 < 3,000,001); 2 ids would need
    # blocks of at least 1,500,001 tokens, above the largest block size 1,048,576
    f = tmp_path / "big.jsonl"
    f.write_text('{"timestamp": 0, "input_length": 3000001, "output_length": 1, "hash_ids": [1, 2]}\n')
    assert _error(["trace", "stats", f]) == (
        f"pcs: error: {f}:1: field 'hash_ids': has 2 ids but ceil(3,000,001 / block size 512) = 5,860; no block "
        "size in 1..1,048,576 gives 2 ids for 3,000,001 tokens")


def test_parquet_skips_rows_not_lines(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    meta = {"pcs.schema": "pcs-trace/1", "pcs.block_size": "512", "pcs.source_format": "mooncake"}
    # row 2: output_tokens -1, a bad row; rows 1 and 3 fine (512 tokens = 1 id each)
    t = pa.table({"arrival_s": pa.array([0.0, 1.0, 2.0], pa.float64()),
                  "prompt_tokens": pa.array([512, 512, 512], pa.int64()),
                  "output_tokens": pa.array([1, -1, 1], pa.int64()),
                  "block_hashes": pa.array([[1], [2], [3]], pa.list_(pa.uint64()))}).replace_schema_metadata(meta)
    p = tmp_path / "t.parquet"
    pq.write_table(t, p)
    r = invoke("trace", "stats", p, "--on-error", "skip")
    assert r.exit_code == 0, r.output
    rows = {line[:40].strip(): line[40:].strip() for line in r.stdout.splitlines()}
    assert rows.get("skipped rows") == "1" and "skipped lines" not in rows
    r = invoke("replay", p, "--on-error", "skip", "--format", "json", "-q")
    assert r.exit_code == 0, r.output
    assert "1 bad trace row was skipped (--on-error skip)" in json.loads(r.stdout)["notes"]


BURSTGPT_4 = ROOT_FORMATS / "burstgpt1_4.csv"   # header Timestamp,Model,Request tokens,... + 4 rows


# A CSV trace's blank (or whitespace-only) line is a blank line as a JSON Lines trace's is (docs/traces.md: a bad
# line, skipped and counted apart under --on-error skip, never the reason named); it was "expected 3 columns, got
# 0" and, under skip, named as the first reason ahead of the real one (review35c F5)
@pytest.mark.parametrize("src, bad, reason", [
    (AZURE_8, "bad,1,2", "field 'TIMESTAMP': expected 'YYYY-MM-DD HH:MM:SS[.fff][+00:00|Z]', got 'bad'"),
    (BURSTGPT_4, "x,ChatGPT,1,1,2,Conversation log", "field 'Timestamp': must be a number of seconds, got 'x'"),
])
@pytest.mark.parametrize("blank", ["", "   "])
def test_a_csv_blank_line_is_a_blank_line(tmp_path, src, bad, reason, blank):
    header = src.read_text().splitlines()[0]
    f = tmp_path / "b.csv"
    f.write_text(f"{header}\n{blank}\n{blank}\n{bad}\n")
    assert _error(["trace", "stats", f]) == (
        f"pcs: error: {f}:2: blank line (use --on-error skip to skip blank lines)")
    assert _error(["trace", "stats", f, "--on-error", "skip"]) == (
        f"pcs: error: {f}:4: {reason}; no requests left: its only non-blank line was skipped as bad, and 2 blank "
        "lines with it (--on-error skip)")
    f.write_text(f"{header}\n{blank}\n{blank}\n")           # blank lines alone after the header: no request at all
    assert _error(["trace", "stats", f, "--on-error", "skip"]) == (
        f"pcs: error: {f}: empty trace (no requests): every line skipped was blank (2 blank lines)")


def test_a_quoted_empty_field_is_a_row_of_one_column_not_a_blank_line(tmp_path):
    # '""' is one empty field (csv.reader: ['']), a row of one column; an empty line is no field at all ([])
    f = tmp_path / "q.csv"
    f.write_text(AZURE_8.read_text().splitlines()[0] + '\n""\n')
    assert _error(["trace", "stats", f]) == f"pcs: error: {f}:2: expected 3 columns, got 1"


# Bytes that are no text trace's under a named format and --on-error skip: the cause alone, as without
# --trace-format; it ended "...; no requests left: all 9 lines were skipped as bad, the first for this reason", a
# per-line ending for a whole-file cause (review35c F9)
@pytest.mark.parametrize("encoding, cause", [("utf-16-le", _wide("utf-16-le")), ("utf-32-le", _wide("utf-32-le"))])
@pytest.mark.parametrize("fmt", ["mooncake", None])
def test_a_whole_file_cause_under_skip_is_the_cause_alone(tmp_path, encoding, cause, fmt):
    f = tmp_path / "u.jsonl"
    f.write_bytes(MOONCAKE_8.read_text().encode(encoding))
    args = ["trace", "stats", f, "--on-error", "skip"] + (["--trace-format", fmt] if fmt else [])
    assert _error(args) == f"pcs: error: {f}:1: {cause}"
