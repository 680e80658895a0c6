"""Review 47f: file names that are not UTF-8 read and written (pyarrow is handed the name's bytes), every shown
name through the one rule of pcs.errors (a byte that is not UTF-8 as ``\\xff``, a tab as ``\\t``, U+202E as
``\\u202e``), admission and policy option lists holding a second kind, and small wordings."""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
FF = os.fsdecode(b"\xff")             # the byte 0xff of a name, as Python holds it: '\udcff'
non_utf8 = pytest.mark.skipif(sys.platform == "win32" or sys.getfilesystemencoding() != "utf-8",
                              reason="needs a UTF-8 POSIX file system (surrogateescape file names)")


def _run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _ok(r):
    assert r.exit_code == 0, r.output
    assert "Traceback" not in r.output and "internal error" not in r.output
    return r


@pytest.fixture(scope="module")
def parquet(tmp_path_factory) -> Path:
    """The bundled token trace as a 16-token Parquet trace (25 requests)."""
    out = tmp_path_factory.mktemp("pq") / "ok.parquet"
    _ok(_run("trace", "convert", "-q", ROOT / "traces" / "sample_tokens.jsonl", out))
    return out


# --- 1. names that are not UTF-8: read and written; shown as \xff ---------------------------------------------

@non_utf8
def test_convert_to_a_parquet_name_that_is_not_utf8(tmp_path, parquet):
    out = tmp_path / f"out{FF}.parquet"
    r = _ok(_run("trace", "convert", parquet, out))
    assert out.stat().st_size > 0
    assert f"to {tmp_path}/out\\xff.parquet" in r.stdout          # the byte's escape, never '\udcff'
    back = _ok(_run("trace", "stats", "--format", "json", out))       # and it reads back: 25 requests
    assert json.loads(back.stdout)["requests"] == 25


@non_utf8
def test_synth_to_a_parquet_name_that_is_not_utf8(tmp_path):
    out = tmp_path / f"s{FF}.parquet"
    _ok(_run("trace", "synth", "--requests", "5", out))
    assert out.stat().st_size > 0


@non_utf8
@pytest.mark.parametrize("command", [["trace", "stats"], ["replay", "-q"]])
def test_read_a_parquet_name_that_is_not_utf8(tmp_path, parquet, command):
    src = tmp_path / f"in{FF}.parquet"
    shutil.copyfile(parquet, src)
    r = _ok(_run(*command, "--format", "json", src))
    assert json.loads(r.stdout)["requests"] == 25


@non_utf8
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_requests_out_name_that_is_not_utf8(tmp_path, parquet, suffix):
    out = tmp_path / f"r{FF}{suffix}"
    _ok(_run("replay", "-q", parquet, "--requests-out", out))
    if suffix == ".csv":
        assert len(out.read_text().splitlines()) == 26               # a header and the 25 requests
    else:
        import pyarrow.parquet as pq

        with open(out, "rb") as f:
            assert pq.read_metadata(f).num_rows == 25


@non_utf8
def test_requests_out_refused_suffix_shows_the_byte(tmp_path, parquet):
    r = _run("replay", "-q", parquet, "--requests-out", tmp_path / f"r{FF}.txt")
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert f"--requests-out {tmp_path}/r\\xff.txt: " in r.output


@non_utf8
def test_sweep_into_a_folder_that_is_not_utf8(tmp_path):
    shutil.copyfile(ROOT / "traces" / "sample_chat.jsonl", tmp_path / "t.jsonl")
    (tmp_path / "cmp.toml").write_text('kind = "replay"\n[fixed]\ntrace = "t.jsonl"\nmodel = "llama-3.1-8b"\ntp = 1\n'
                                       'timing = "sequential"\ntier = {gpu = "500blocks", cpu = "0GB"}\n'
                                       '[axes]\npolicy = ["lru", "fifo"]\n')
    out = tmp_path / f"sw{FF}"
    r = _ok(_run("sweep", "-q", tmp_path / "cmp.toml", "-o", out, "--format", "json"))
    assert len(list(out.glob("*.parquet"))) == 2
    doc = json.loads(r.stdout)
    assert doc["points"] == 2 and doc["summary"]["replay_points"] == 2
    assert doc["out"] == str(out)              # JSON's \\udcff escape reads back as the name on disk (docs/json.md)
    again = _ok(_run("sweep", "summarize", "--format", "json", out))   # the folder's points read back
    assert json.loads(again.stdout)["points"] == 2


@non_utf8
def test_json_output_names_the_file_on_disk(tmp_path, parquet):
    """Review 47p: the JSON of a non-UTF-8 name reads back as that name (JSON's escape of the surrogate), so the
    file it names is found; the escape as text (``\\xff``, mend47f's first form) named no file."""
    r = _ok(_run("trace", "convert", "--format", "json", parquet, tmp_path / f"o{FF}.jsonl"))
    assert '"o\\udcff.jsonl"' in r.stdout.replace(str(tmp_path) + "/", "")
    doc = json.loads(r.stdout)
    assert doc["path"] == str(tmp_path / f"o{FF}.jsonl") and os.path.exists(doc["path"])


@non_utf8
def test_messages_show_the_byte(tmp_path, parquet):
    r = _ok(_run("trace", "convert", parquet, tmp_path / f"o{FF}.jsonl"))
    assert "o\\xff.jsonl" in r.output and "udcff" not in r.output


def test_printable_shows_a_surrogate_escape_as_its_byte():
    from pcs.errors import printable, shown_path, utf8_text

    assert printable("a\udcffb") == "a\\xffb" and shown_path("o\udc80.jsonl") == "o\\x80.jsonl"
    assert utf8_text("t\ud800") == "t\\ud800"                         # a surrogate of no byte keeps its escape


# --- 2. lines that print a written file's name ------------------------------------------------------------------

ODD = "t\tb\u202e"


def test_convert_wrote_line_escapes_the_name(tmp_path, parquet):
    r = _ok(_run("trace", "convert", parquet, tmp_path / f"{ODD}.parquet"))
    assert r.stdout.startswith("wrote ") and r.stdout.splitlines()[0].endswith("to " + f"{tmp_path}/t\\tb\\u202e.parquet")
    assert "\t" not in r.stdout and "\u202e" not in r.stdout


def test_synth_wrote_line_escapes_the_name(tmp_path):
    r = _ok(_run("trace", "synth", "--requests", "5", tmp_path / f"{ODD}.parquet"))
    assert "t\\tb\\u202e.parquet" in r.stdout and "\t" not in r.stdout and "\u202e" not in r.stdout


def test_transform_title_escapes_the_names(tmp_path, parquet):
    src = tmp_path / f"i{ODD}.parquet"
    shutil.copyfile(parquet, src)
    r = _ok(_run("trace", "transform", src, tmp_path / f"{ODD}.parquet", "--speed", "2"))
    assert "t\\tb\\u202e.parquet <- " in r.stdout and "it\\tb\\u202e.parquet" in r.stdout
    assert "\t" not in r.stdout and "\u202e" not in r.stdout


# --- 3. a second kind or policy after a comma --------------------------------------------------------------------

@pytest.mark.parametrize("admit, word, first, fix", [
    ("cpu=reuse:2,tinylfu", "tinylfu", "reuse", "cpu=reuse:2+cpu=tinylfu"),   # was: option 'n' given twice
    ("cpu=tinylfu,reuse:2", "reuse", "tinylfu", "cpu=tinylfu+cpu=reuse:2"),   # was: unknown 'tinylfu,reuse'
    ("cpu=reuse,selective", "selective", "reuse", "cpu=reuse+cpu=selective"),
    ("cpu=retain:tokens=0-4096,reuse", "reuse", "retain", "cpu=retain:tokens=0-4096+cpu=reuse"),
])
def test_admission_kind_after_a_comma(parquet, admit, word, first, fix):
    r = _run("replay", "-q", parquet, "--tier", "gpu=100blocks", "--tier", "cpu=1000blocks", "--admit", admit)
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert f"'{word}' is an admission kind, not an option of {first}: stack kinds with '+', each with its tier: {fix}" \
        in r.output
    fixed = _run("replay", "-q", parquet, "--tier", "gpu=100blocks", "--tier", "cpu=1000blocks", "--admit", fix)
    assert fixed.exit_code == 0, fixed.output                        # the advice given runs


def test_admission_option_named_like_no_kind_is_still_an_option():
    from pcs.cache.admission import parse_admission

    assert parse_admission("retain:tokens=0-4096,duration=60") == ("retain", {"tokens": "0-4096", "duration": 60})


@pytest.mark.parametrize("policy, word, first", [
    ("slru,lru", "lru", "slru"),                          # was: unknown eviction policy 'slru,lru'
    ("slru:protected_share=0.5,lru", "lru", "slru"),      # was: bad option 'lru'; expected OPTION=VALUE
    ("s3fifo:small_share=0.2,arc", "arc", "s3fifo"),
])
def test_policy_after_a_comma(parquet, policy, word, first):
    for option in (["--policy", policy], ["--tier", "gpu=100blocks", "--tier", "cpu=1000blocks",
                                          "--tier-policy", f"cpu={policy}"]):
        r = _run("replay", "-q", parquet, *option)
        assert r.exit_code == 2 and "Traceback" not in r.output
        assert f"'{word}' is an eviction policy, not an option of {first}: a value names one policy" in r.output


# --- 4. small wordings -------------------------------------------------------------------------------------------

PLAN_HEAD = 'kind = "replay"\n[fixed]\ntrace = "t.jsonl"\nmodel = "llama-3.1-8b"\ntp = 1\n'


def _plan(tmp_path, body: str):
    shutil.copyfile(ROOT / "traces" / "sample_chat.jsonl", tmp_path / "t.jsonl")
    (tmp_path / "p.toml").write_text(PLAN_HEAD + body)
    r = _run("sweep", tmp_path / "p.toml", "-o", tmp_path / "out")
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    return r.stderr.strip()


@pytest.mark.parametrize("body, line, key, wanted", [
    ('tier = {gpu = "500blocks", cpu = nan}\n[axes]\npolicy = ["lru"]\n', 6, "tier.cpu",
     'a size with its unit, as text: "5GB" or "500blocks" (a plain number is refused)'),
    ('[axes]\n"tier.cpu" = [inf, "1GB"]\n', 7, "tier.cpu[0]",
     'a size with its unit, as text: "5GB" or "500blocks" (a plain number is refused)'),
    ('link = {cpu = nan}\n[axes]\npolicy = ["lru"]\n', 6, "link.cpu",
     'a link preset or a bandwidth per GPU, as text: "pcie-gen5-x16" or "25GB/s"'),
])
def test_a_non_finite_value_says_what_the_key_takes(tmp_path, body, line, key, wanted):
    msg = _plan(tmp_path, body)
    assert msg.endswith(f"p.toml:{line}: [{'axes' if '[0]' in key else 'fixed'}]: option '{key}': "
                        f"{'inf' if 'inf' in body else 'nan'} is not finite; give {wanted}"), msg


def test_a_non_finite_number_option_still_asks_a_finite_number(tmp_path):
    msg = _plan(tmp_path, 'max-num-seqs = nan\n[axes]\npolicy = ["lru"]\n')
    assert msg.endswith("p.toml:6: [fixed]: option 'max-num-seqs': nan is not finite; give a finite number"), msg


def _stats(tmp_path, text: str, *opts):
    p = tmp_path / "t.csv"
    p.write_text(text)
    r = _run("trace", "stats", p, *opts)
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    return p, r.stderr.strip()


AZ_ROW = "2023-11-16 18:15:46.6805900,374,44\n"
AZ_EXPECTED = ("; expected TIMESTAMP,ContextTokens,GeneratedTokens or TIMESTAMP,NumImages,ContextTokens,"
               "GeneratedTokens (the columns in any order)")


@pytest.mark.parametrize("header, problem", [
    ("TIMESTAMP,ContextTokens", "lacks 'GeneratedTokens'"),
    ("TIMESTAMP,ContextTokens,ContextTokens,GeneratedTokens", "gives column 'ContextTokens' twice"),
    ("TIMESTAMP,contexttokens,GeneratedTokens",
     "lacks 'ContextTokens' ('contexttokens' differs only in case: column names are case-sensitive)"),
])
def test_an_azure_header_names_what_is_wrong(tmp_path, header, problem):
    p, msg = _stats(tmp_path, f"{header}\n{AZ_ROW}", "--trace-format", "azure")
    assert msg == f"pcs: error: {p}:1: Azure header {problem}{AZ_EXPECTED}"


def test_a_burstgpt_header_says_a_column_differs_only_in_case(tmp_path):
    p, msg = _stats(tmp_path, "Timestamp,model,Request tokens,Response tokens,Total tokens,Log Type\n1,a,2,3,5,x\n",
                    "--trace-format", "burstgpt")
    assert msg.startswith(f"pcs: error: {p}:1: BurstGPT header lacks 'Model' ('model' differs only in case: column "
                          "names are case-sensitive) (expected "), msg


@pytest.mark.parametrize("head, looks", [
    ("TIMESTAMP\tContextTokens\tGeneratedTokens", "a TSV header (3 tab-separated columns): the CSV readers (azure, "
                                                  "burstgpt) read comma-separated columns; replace the tabs with commas"),
    ('"TIMESTAMP,ContextTokens,GeneratedTokens', "a CSV header with an unbalanced double quote: close it, or remove it"),
])
def test_a_tsv_or_unbalanced_quote_header_is_said_to_look_like_one(tmp_path, head, looks):
    p, msg = _stats(tmp_path, f"{head}\n{AZ_ROW}")
    assert msg == (f"pcs: error: {p}:1: cannot detect the format: the first non-blank line looks like {looks}; pass "
                   "--trace-format (mooncake, bailian, tokens, parquet, azure, burstgpt: azure or burstgpt for CSV)")


def test_bailian_output_names_the_input_and_the_missing_column(tmp_path):
    src = tmp_path / "b.parquet"
    _ok(_run("trace", "convert", ROOT / "traces" / "formats" / "burstgpt3_5.csv", src))    # session_id only
    r = _run("trace", "convert", src, tmp_path / "x.jsonl", "--to", "bailian")
    assert r.exit_code == 2
    assert r.stderr.strip() == (f"pcs: error: {src} (parquet) has no parent_id: a Bailian row's chat_id and "
                                "parent_chat_id are the request's session_id and parent_id (turn, when absent, is "
                                "written 1); write mooncake or parquet")


@pytest.mark.parametrize("tiers, msg", [
    (["gpu=100GB", "gpu=10GB"], "--tier gives tier 'gpu' twice (gpu=100GB, gpu=10GB): tier names must be distinct; "
                                "give each tier once"),
    (["gpu=-5GB"], "--tier gpu=-5GB: bad tier size '-5GB' for tier 'gpu': invalid size '-5GB': must not be negative"),
    (["gpu=1GB", "cpu=5"], "--tier cpu=5: bad tier size '5' for tier 'cpu': capacity '5' has no unit"),
])
def test_a_tier_refusal_names_the_option(parquet, tiers, msg):
    r = _run("replay", "-q", parquet, *(a for t in tiers for a in ("--tier", t)))
    assert r.exit_code == 2 and r.stderr.startswith(f"pcs: error: {msg}"), r.output


@pytest.mark.parametrize("args, msg", [
    (["--instances", "2", "--router", "least-loaded:x"],
     "--router least-loaded:x: router 'least-loaded': bad option 'x'; expected OPTION=VALUE; its options: by="),
    (["--instances", "2", "--router", "bogus"], "--router bogus: unknown router 'bogus'; valid: "),
    (["--policy", "bogus"], "--policy bogus: unknown eviction policy 'bogus'; valid: "),
])
def test_router_policy_and_admission_refusals_have_one_form(parquet, args, msg):
    r = _run("replay", "-q", parquet, *args)
    assert r.exit_code == 2 and r.stderr.startswith(f"pcs: error: {msg}"), r.output
    assert "Invalid value" not in r.stderr and "--help')" not in r.stderr


# --- 5. every key's name before any value ------------------------------------------------------------------------

@pytest.mark.parametrize("body, line, key", [
    ('bogus_key = 1\ntp_x = 2\n', 6, "bogus_key"),
    ('bogus_key = 1\nmax-num-seqs = nan\n[axes]\npolicy = ["lru"]\n', 6, "bogus_key"),
    ('max-num-seqs = nan\n[axes]\npolicy = ["lru"]\nbogus_key = [1]\n', 9, "bogus_key"),
])
def test_an_unknown_key_is_named_before_a_value(tmp_path, body, line, key):
    msg = _plan(tmp_path, body)
    assert f"p.toml:{line}: [{'axes' if line == 9 else 'fixed'}]: unknown option '{key}' for pcs replay" in msg, msg
