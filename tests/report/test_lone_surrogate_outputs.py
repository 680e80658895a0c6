"""A lone surrogate in a shown string -- a trace file name that is not UTF-8 (byte 0xff reaches Python as
``\\udcff``) or a ``\\ud800`` escape in a JSON string -- never crashes a writer: the HTML page, ``--plot`` and
a sweep's Parquet rows show it as its escape (as the text tables do); a config.json holding one is refused.

Every writer of pcs's output, and what it does with such a string:
  text table     shown_relative_path: the byte's escape ``\\xff`` (pcs.errors.utf8_text; the page shows the same text)
  JSON           json.dumps (ensure_ascii): the JSON escape ``\\udcff``, read back as the name on disk (docs/json.md)
  CSV (stdout)   emit: the same escape
  HTML page      write_file: the same escape (was UnicodeEncodeError)
  curve --plot   matplotlib title: shown_relative_path (was TypeError from FreeType)
  sweep Parquet  typed_table: the same escape (was UnicodeEncodeError in pyarrow)
  config.json    refused at reading, naming the field (was UnicodeEncodeError printing the table)
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
NAME = "tr\udcffce.jsonl"          # os.fsdecode(b"tr\xffce.jsonl") on a UTF-8 file system
SHOWN = "tr\\xffce.jsonl"           # the byte's escape: backslash, 'xff' (what the text table prints)
RUN = ["replay", "-q", "--format", "json", "--tier", "gpu=500blocks", "--tier", "cpu=1500blocks"]

pytestmark = pytest.mark.skipif(sys.platform == "win32" or sys.getfilesystemencoding() != "utf-8",
                                reason="needs a UTF-8 POSIX file system (surrogateescape file names)")


def _run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture()
def odd_trace(tmp_path) -> Path:
    path = tmp_path / NAME
    shutil.copyfile(ROOT / "traces" / "sample_chat.jsonl", path)
    return path


def test_write_file_escapes_a_lone_surrogate(tmp_path):
    from pcs.report.html import write_file

    write_file(tmp_path / "a.html", "a\udcffb\ud800c\u00e9")
    # 'a', the 4 ASCII characters of \xff (the byte \udcff stands for), 'b', the 6 of \ud800 (a lone surrogate of
    # no byte), 'c', then e-acute as its 2 UTF-8 bytes
    assert (tmp_path / "a.html").read_bytes() == b"a\\xffb\\ud800c\xc3\xa9"


def test_report_of_a_run_on_a_non_utf8_file_name(tmp_path, odd_trace):
    pytest.importorskip("jinja2")
    r = _run(*RUN, odd_trace)
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["trace"] == str(odd_trace)          # the JSON keeps the path it read
    (tmp_path / "run.json").write_text(r.stdout)
    rep = _run("report", "-q", "--no-curve", tmp_path / "run.json", "-o", tmp_path / "p.html")
    assert rep.exit_code == 0, rep.output
    page = (tmp_path / "p.html").read_text(encoding="utf-8")
    assert SHOWN in page
    table = _run(*RUN[:2], *RUN[4:], odd_trace)
    assert table.exit_code == 0 and SHOWN in table.stdout.splitlines()[0]   # the text shows the same escape


def test_report_finds_the_trace_of_a_non_utf8_name(tmp_path, odd_trace):
    """Review 47p: with the name written as the text ``\\xff`` the page lost its curve and oracle (5 charts, "not
    found"); JSON's escape reads back as the name, so the trace is found and checked as any other."""
    pytest.importorskip("jinja2")
    r = _run(*RUN, odd_trace)
    assert r.exit_code == 0, r.output
    (tmp_path / "run.json").write_text(r.stdout)
    rep = _run("report", tmp_path / "run.json", "-o", tmp_path / "p.html")
    assert rep.exit_code == 0, rep.output
    assert "not found" not in rep.stderr, rep.stderr


def test_replay_html_and_curve_html_on_a_non_utf8_file_name(tmp_path, odd_trace):
    pytest.importorskip("jinja2")
    r = _run(*RUN, odd_trace, "--html", tmp_path / "r.html")
    assert r.exit_code == 0, r.output
    c = _run("curve", "-q", "--points", "3", odd_trace, "--html", tmp_path / "c.html")
    assert c.exit_code == 0, c.output
    for name in ("r.html", "c.html"):
        assert SHOWN in (tmp_path / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("suffix", ["svg", "png"])
def test_curve_plot_on_a_non_utf8_file_name(tmp_path, odd_trace, suffix):
    pytest.importorskip("matplotlib")
    r = _run("curve", "-q", "--points", "3", odd_trace, "--plot", tmp_path / f"c.{suffix}")
    assert r.exit_code == 0, r.output
    assert (tmp_path / f"c.{suffix}").stat().st_size > 0


def test_report_of_json_strings_holding_ud800(tmp_path):
    pytest.importorskip("jinja2")
    r = _run(*RUN)
    d = json.loads(r.stdout)
    d["model"], d["trace"] = "m\ud800", "t\ud800.jsonl"
    (tmp_path / "b.json").write_text(json.dumps(d))                # json.dumps writes the escapes as \ud800
    rep = _run("report", "-q", "--no-curve", tmp_path / "b.json", "-o", tmp_path / "p.html")
    assert rep.exit_code == 0, rep.output
    page = (tmp_path / "p.html").read_text(encoding="utf-8")
    assert "t\\ud800.jsonl" in page and "m\\ud800" in page


def test_sweep_row_holds_the_escape():
    pytest.importorskip("pyarrow")
    from pcs.sweep.columns import typed_table

    t = typed_table({"option.trace": "/d\udcffr/t.jsonl", "n": 3, "x": None}, {"x": "float64"})
    assert t.column("option.trace").to_pylist() == ["/d\\xffr/t.jsonl"]
    assert t.column("n").to_pylist() == [3] and str(t.schema.field("x").type) == "double"


def test_sweep_of_a_plan_in_a_non_utf8_folder(tmp_path):
    pytest.importorskip("pyarrow")
    folder = tmp_path / "d\udcffr"
    folder.mkdir()
    shutil.copyfile(ROOT / "traces" / "sample_chat.jsonl", folder / "t.jsonl")
    (folder / "plan.toml").write_text('kind = "replay"\n[fixed]\ntrace = "t.jsonl"\nmodel = "llama-3.1-8b"\ntp = 1\n'
                                      'timing = "sequential"\ntier = {gpu = "500blocks", cpu = "0GB"}\n'
                                      '[axes]\npolicy = ["lru"]\n')
    r = _run("sweep", folder / "plan.toml", "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    import pyarrow.parquet as pq

    rows = pq.read_table(tmp_path / "out").to_pylist()
    assert len(rows) == 1 and rows[0]["trace"] == str(tmp_path / "d\\xffr" / "t.jsonl")   # the escape, as text
    assert json.loads(rows[0]["result_json"])["trace"] == str(folder / "t.jsonl")   # JSON's escape: the path back


@pytest.mark.parametrize("doc, field", [
    ('{"_name_or_path": "\\ud800x"}', "_name_or_path"),
    ('{"a": [1, {"b": "ok", "c": "\\udcff"}]}', "a[1].c"),
    ('{"a": {"\\ud800": 1}}', "a.\\ud800"),
])
def test_config_json_with_a_lone_surrogate_is_refused(tmp_path, doc, field):
    from pcs.configfile import read_json_object
    from pcs.errors import InputError

    (tmp_path / "config.json").write_text(doc)
    with pytest.raises(InputError) as err:
        read_json_object(tmp_path / "config.json")
    assert err.value.field == field and err.value.problem.startswith("a lone surrogate \\u")


def test_config_json_pair_of_surrogates_is_text(tmp_path):
    from pcs.configfile import read_json_object

    (tmp_path / "config.json").write_text('{"name": "\\ud83d\\ude00"}')   # a valid pair: U+1F600
    assert read_json_object(tmp_path / "config.json") == {"name": "\U0001F600"}


def test_csv_and_table_on_a_strict_stdout(odd_trace):
    """CliRunner's stdout is strict UTF-8 (as PYTHONIOENCODING=utf-8 makes the interpreter's): the CSV and the
    table carry the escape."""
    csv = _run("replay", "-q", "--format", "csv", odd_trace)
    assert csv.exit_code == 0, csv.output
    assert csv.stdout.splitlines()[1].startswith(str(odd_trace.parent) + "/" + SHOWN + ",")


def test_model_config_with_a_lone_surrogate_exits_2(tmp_path):
    cfg = json.loads((ROOT / "tests" / "model" / "configs" / "qwen2.json").read_text())
    cfg["_name_or_path"] = "q\ud800"
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = _run("replay", "-q", "--tp", "1", "--model", tmp_path / "config.json")
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert r.output.strip() == (f"pcs: error: {tmp_path / 'config.json'}:1: field '_name_or_path': a lone surrogate "
                                "\\ud800 is not text (not valid Unicode)")
