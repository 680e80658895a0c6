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
    assert doc["out"] == f"{tmp_path}/sw\\xff"                        # JSON: the escape as text (docs/json.md)
    again = _ok(_run("sweep", "summarize", "--format", "json", out))   # the folder's points read back
    assert json.loads(again.stdout)["points"] == 2


@non_utf8
def test_json_output_holds_no_lone_surrogate(tmp_path, parquet):
    r = _ok(_run("trace", "convert", "--format", "json", parquet, tmp_path / f"o{FF}.jsonl"))
    doc = json.loads(r.stdout)
    assert doc["path"] == f"{tmp_path}/o\\xff.jsonl"
    doc_text = json.dumps(doc, ensure_ascii=False)
    doc_text.encode("utf-8")                                           # no lone surrogate: encodes as UTF-8
    assert "\\udcff" not in r.stdout


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
