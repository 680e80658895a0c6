"""Hostile input: files -- inputs never overwritten, outputs honour the umask, no temp file survives,
Ctrl-C is one line and exit 130, an empty source is an error.

Members: every command that writes a file (replay --requests-out, curve
--plot, trace convert / synth / synth --tokens-out / transform / from-chat)
and every way an output can be an input (the same path, a symlink, a hard
link, two outputs with one name). The signal tests (a real process killed
with SIGTERM and SIGINT) are in test_hostile_signals.py.
"""
import os
import stat
import tempfile

import pytest

from helpers import SMALL_AZURE, SMALL_TRACE, assert_one_line_error, invoke
from pcs.outfile import TEMPORARY, atomic_output, check_outputs

T = SMALL_TRACE
FORMATS = T.parent
TOKENIZER = FORMATS / "tiny_wordlevel_tokenizer.json"
CHAT = FORMATS / "openai_chat_4.jsonl"


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _leftovers(d) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.endswith(".tmp") or p.name.startswith("."))


def test_an_output_that_is_an_input_is_refused(work):
    (work / "t.parquet").write_bytes(b"")
    assert invoke("trace", "convert", T, "t.parquet", "-q").exit_code == 0
    before = (work / "t.parquet").read_bytes()
    # the example: --requests-out onto the trace it replays
    assert_one_line_error(invoke("replay", "t.parquet", "--requests-out", "t.parquet", "-q"), "input file")
    os.symlink("t.parquet", work / "link.parquet")
    os.link("t.parquet", work / "hard.parquet")
    assert_one_line_error(invoke("replay", "link.parquet", "--requests-out", "t.parquet", "-q"), "input file")
    assert_one_line_error(invoke("trace", "convert", "hard.parquet", "t.parquet", "-q"), "input file")
    assert_one_line_error(invoke("trace", "transform", "t.parquet", "link.parquet", "-q"), "input file")
    assert (work / "t.parquet").read_bytes() == before
    (work / "a.csv").write_bytes(SMALL_AZURE.read_bytes())
    assert_one_line_error(invoke("trace", "synth", "a.csv", "--azure-csv", "a.csv", "-q"), "input file")
    assert_one_line_error(invoke("trace", "synth", "s.jsonl", "--tokens-out", "s.jsonl", "-q"), "name one file")
    (work / "chat.jsonl").write_bytes(CHAT.read_bytes())
    assert_one_line_error(invoke("trace", "from-chat", "chat.jsonl", "chat.jsonl", "--tokenizer", TOKENIZER, "-q"),
                          "input file")
    (work / "c.png").write_bytes(b"")
    assert_one_line_error(invoke("curve", "c.png", "--plot", "c.png", "-q"), "input file")
    assert_one_line_error(invoke("replay", T, "--requests-out", "-", "-q"), "not to stdout")
    assert _leftovers(work) == []


WRITERS = [
    (["replay", T, "--requests-out", "rows.csv"], "rows.csv"),
    (["replay", T, "--requests-out", "rows.parquet"], "rows.parquet"),
    (["curve", T, "--points", "2", "--plot", "c.png"], "c.png"),
    (["trace", "convert", T, "t.parquet"], "t.parquet"),
    (["trace", "convert", T, "t.jsonl.gz"], "t.jsonl.gz"),
    (["trace", "synth", "s.jsonl", "--requests", "20"], "s.jsonl"),
    (["trace", "synth", "s.jsonl", "--requests", "20", "--tokens-out", "tok.jsonl"], "tok.jsonl"),
    (["trace", "transform", T, "x.jsonl", "--speed", "2"], "x.jsonl"),
    (["trace", "from-chat", CHAT, "c.jsonl", "--tokenizer", TOKENIZER], "c.jsonl"),
]


@pytest.mark.parametrize("args, out", WRITERS, ids=[o for _, o in WRITERS])
@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_outputs_honour_the_umask(work, args, out, umask):
    old = os.umask(umask)
    try:
        r = invoke(*args, "-q")
    finally:
        os.umask(old)
    assert r.exit_code == 0, r.output
    assert stat.S_IMODE(os.stat(work / out).st_mode) == 0o666 & ~umask   # as open() creates files (was 0600)
    assert _leftovers(work) == []


@pytest.mark.parametrize("exc, code, line", [(RuntimeError("disk on fire"), 1, None),
                                             (KeyboardInterrupt(), 130, "pcs: interrupted")])
@pytest.mark.parametrize("args, out, target", [
    (["trace", "convert", T, "t.jsonl"], "t.jsonl", "pcs.trace.convert._jsonl_lines"),
    (["replay", T, "--requests-out", "rows.parquet"], "rows.parquet", "pyarrow.parquet.write_table"),
    (["trace", "synth", "s.jsonl", "--requests", "20", "--tokens-out", "tok.jsonl"], "tok.jsonl",
     "pcs.trace.convert._jsonl_lines"),
])
def test_a_failure_mid_write_leaves_no_temp_file_and_the_old_output(work, monkeypatch, exc, code, line, args, out,
                                                                    target):
    (work / out).write_bytes(b"the old output")

    def fail(*a, **k):
        raise exc

    monkeypatch.setattr(target, fail)
    r = invoke(*args, "-q")
    assert r.exit_code == code, r.output
    if line:  # Ctrl-C: one line, exit 130 (was "Aborted!", exit 1)
        assert r.stderr.strip() == line
    assert (work / out).read_bytes() == b"the old output"
    assert _leftovers(work) == [] and not TEMPORARY


def test_atomic_output_removes_its_temp_file_on_any_exit(tmp_path):
    target = tmp_path / "o.txt"
    for exc in (ValueError("bad"), KeyboardInterrupt(), SystemExit(3)):
        with pytest.raises(type(exc)):
            with atomic_output(target) as tmp:
                open(tmp, "w").write("half")
                assert tmp in TEMPORARY
                raise exc
        assert list(tmp_path.iterdir()) == [] and not TEMPORARY
    with atomic_output(target) as tmp:
        open(tmp, "w").write("whole")
    assert target.read_text() == "whole" and [p.name for p in tmp_path.iterdir()] == ["o.txt"]


def test_check_outputs_members(tmp_path):
    (tmp_path / "in.jsonl").write_text("x")
    with pytest.raises(ValueError, match="does not exist"):
        check_outputs({"--out": tmp_path / "no" / "x.csv"})
    with pytest.raises(IsADirectoryError):
        check_outputs({"--out": tmp_path})
    with pytest.raises(ValueError, match="input file"):
        check_outputs({"--out": tmp_path / "in.jsonl"}, {"TRACE": tmp_path / "in.jsonl"})
    with pytest.raises(ValueError, match="name one file"):
        check_outputs({"OUT": tmp_path / "a", "--tokens-out": tmp_path / "." / "a"})
    check_outputs({"--out": tmp_path / "new.csv", "--plot": None}, {"TRACE": "-", "--model": None})


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_output_in_a_read_only_folder_is_refused(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o555)
    assert_one_line_error(invoke("replay", T, "--requests-out", ro / "x.csv", "-q"), "not writable")


def test_stdin_spool_is_removed_whatever_happens(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    trace = T.read_text()
    assert_one_line_error(invoke("trace", "stats", "-", input=""), "-: empty trace")   # the example
    assert_one_line_error(invoke("replay", "-", "--tier", "gpu=lots", input=trace), "lots")
    assert_one_line_error(invoke("trace", "stats", "-", "--trace-format", "parquet", input=trace), "-")
    assert_one_line_error(invoke("replay", "-", "-q", input=trace.replace('"hash_ids"', '"hash_idz"')), "-:")
    r = invoke("replay", "-", "-q", "--format", "json", input=trace)
    assert r.exit_code == 0 and '"trace": "-"' in r.stdout          # names the source -, not the spool
    r = invoke("trace", "stats", "-", "-q", "--format", "json", input=trace)
    assert r.exit_code == 0
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("content", ["", "\n", "TIMESTAMP,ContextTokens,GeneratedTokens\n"])
@pytest.mark.parametrize("cmd", [["trace", "stats"], ["trace", "convert"], ["replay"], ["curve"], ["compare"],
                                 ["trace", "transform"]], ids=" ".join)
def test_an_empty_source_is_an_error_never_a_0_request_output(work, cmd, content):
    (work / "e.csv").write_text(content)
    out = ["o.jsonl"] if cmd[-1] in ("convert", "transform") else []
    fmt = ["--trace-format", "azure"] if content.startswith("TIMESTAMP") else []
    line = assert_one_line_error(invoke(*cmd, "e.csv", *out, *fmt, "-q"), "e.csv")
    assert "empty" in line or "blank line" in line
    assert not (work / "o.jsonl").exists()


def test_an_empty_azure_csv_and_all_lines_skipped_are_errors(work):
    (work / "e.csv").write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n")
    assert_one_line_error(invoke("trace", "synth", "o.jsonl", "--azure-csv", "e.csv", "-q"), "e.csv", "no requests")
    assert not (work / "o.jsonl").exists() and _leftovers(work) == []
    (work / "bad.jsonl").write_text('{"timestamp": 0}\n{"timestamp": 1}\n')
    assert_one_line_error(invoke("trace", "convert", "bad.jsonl", "o.jsonl", "--trace-format", "mooncake",
                                 "--on-error", "skip", "-q"),
                          "bad.jsonl:1: field 'input_length': missing; no requests left: all 2 lines were skipped as "
                          "bad, the first for this reason (--on-error skip)")
    assert not (work / "o.jsonl").exists()
