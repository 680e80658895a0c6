"""``pcs report`` and ``--html`` / ``--plot`` from the command line: outputs, errors, inputs untouched."""
from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli

pytest.importorskip("jinja2")

RUN = ["replay", "-q", "--format", "json", "--tier", "gpu=500blocks", "--tier", "cpu=1500blocks"]


def _run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _one_line_error(r, text: str) -> None:
    assert r.exit_code == 2, r.output
    assert text in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1 and r.output.startswith("pcs: error: ")


def test_html_leaves_stdout_alone_and_leaves_no_temp_file(tmp_path):
    plain = _run(*RUN)
    with_page = _run(*RUN, "--html", tmp_path / "p.html")
    assert with_page.exit_code == 0, with_page.output
    assert with_page.stdout == plain.stdout
    assert [p.name for p in tmp_path.iterdir()] == ["p.html"]
    text = (tmp_path / "p.html").read_text()
    assert text.startswith("<!DOCTYPE html>") and "Vega-Lite" in text


def test_report_of_the_json_draws_the_same_page(tmp_path):
    """pcs report RUN.json gives the page replay --html gave, but for the command line that wrote it."""
    r = _run(*RUN, "--html", tmp_path / "a.html")
    (tmp_path / "run.json").write_text(r.stdout)
    before = (tmp_path / "run.json").read_bytes()
    rep = _run("report", "-q", tmp_path / "run.json", "-o", tmp_path / "b.html")
    assert rep.exit_code == 0, rep.output
    assert (tmp_path / "run.json").read_bytes() == before  # inputs never modified
    a, b = ((tmp_path / n).read_text() for n in ("a.html", "b.html"))
    # the same page but for the line naming the command that wrote it
    strip = lambda t: "\n".join(ln for ln in t.splitlines() if "page written by" not in ln)  # noqa: E731
    assert strip(a) == strip(b)
    for marker in ('data-key="hit_ratio"', 'id="chart-gap"', 'id="chart-curve"', 'id="chart-ts_hit"', "oracle (Belady)"):
        assert marker in a


def test_plot_writes_png_and_svg_per_figure(tmp_path):
    pytest.importorskip("vl_convert")
    r = _run("curve", "-q", "--points", "4", "--plot", tmp_path / "figs", "--html", tmp_path / "c.html")
    assert r.exit_code == 0, r.output
    files = sorted(p.name for p in (tmp_path / "figs").iterdir())
    assert files == ["curve.png", "curve.svg"]
    assert (tmp_path / "figs" / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = (tmp_path / "figs" / "curve.svg").read_text()
    assert svg.lstrip().startswith("<svg") and "hit ratio (share of prompt tokens)" in svg  # axis title with unit


@pytest.mark.parametrize("args, message", [
    (["report", "{json}"], "give -o FILE.html and/or --plot DIR"),
    (["report", "{bad}", "-o", "{out}"], "line 1: not JSON"),
    (["report", "{other}", "-o", "{out}"], "not the JSON of pcs replay, compare, curve or footprint"),
    (["report", "{json}", "-o", "/nonexistent-dir/r.html"], "does not exist"),
    (["replay", "-q", "--html", "/nonexistent-dir/r.html"], "--html /nonexistent-dir/r.html: the folder"),
    (["report", "{json}", "-o", "{json}"], "is also an input file"),  # pcs never overwrites its inputs
    (["report", "{json}", "-o", "-"], "not to stdout"),
    (["report", "{json}", "--plot", "{json}"], ": Not a directory"),     # the readers' wording, a file where a folder goes (mend46e; was click's "is a file")
    (["footprint", "--model", "llama-3.1-8b", "--tokens", "16", "--plot", "/nonexistent-dir/figs"], "does not exist"),
])
def test_errors_are_one_line(tmp_path, args, message):
    (tmp_path / "run.json").write_text(_run(*RUN).stdout)
    (tmp_path / "bad.json").write_text("{oops")
    (tmp_path / "other.json").write_text(json.dumps({"rows": []}))
    paths = {"json": tmp_path / "run.json", "bad": tmp_path / "bad.json", "other": tmp_path / "other.json",
             "out": tmp_path / "r.html"}
    r = _run(*[a.format(**paths) for a in args])
    _one_line_error(r, message)
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("fleet", [["replay", "--instances", "2"], ["compare", "--router", "round-robin", "--router",
                                                                     "prefix", "--instances", "2"]])
def test_report_names_fleet_json_and_what_it_takes(tmp_path, fleet):
    """A fleet's JSON (once refused as "not the JSON of pcs replay", though pcs replay wrote it) is
    refused naming it as a fleet's and listing the JSON the page does take; no page is written."""
    r = _run(*fleet, "-q", "--format", "json", "--tier", "gpu=500blocks")
    assert r.exit_code == 0, r.output
    (tmp_path / "fleet.json").write_text(r.stdout)
    r = _run("report", tmp_path / "fleet.json", "-o", tmp_path / "r.html")
    _one_line_error(r, "the JSON of a fleet (pcs replay or pcs compare with --instances")
    assert "takes the JSON of a single-instance pcs replay, compare, curve or footprint" in r.output
    assert not (tmp_path / "r.html").exists()


def test_missing_extras_are_one_line_before_any_work(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "jinja2", None)  # import jinja2 -> ImportError
    _one_line_error(_run("replay", "-q", "--html", tmp_path / "r.html"),
                    "the HTML report needs the 'jinja2' package: pip install -e '.[report]' in the pcs clone")
    monkeypatch.setitem(sys.modules, "vl_convert", None)
    _one_line_error(_run("footprint", "--model", "llama-3.1-8b", "--tokens", "16", "--plot", tmp_path / "f"),
                    "--plot needs the 'vl-convert-python' package: pip install -e '.[plot]' in the pcs clone")


def test_interval_replay_refuses_a_page(tmp_path, mooncake_conv):
    r = _run("replay", mooncake_conv, "-q", "--block-size", "256", "--html", tmp_path / "r.html")
    _one_line_error(r, "gives an interval")


def test_report_without_the_trace_notes_it(tmp_path):
    s = json.loads(_run(*RUN).stdout)
    s["trace"] = s["trace_file"]["path"] = str(tmp_path / "gone.jsonl")
    (tmp_path / "run.json").write_text(json.dumps(s))
    r = CliRunner().invoke(cli, ["report", str(tmp_path / "run.json"), "-o", str(tmp_path / "r.html")])
    assert r.exit_code == 0, r.output
    assert "gone.jsonl not found: no hit-rate curve and no oracle" in r.stderr
    text = (tmp_path / "r.html").read_text()
    assert 'id="chart-gap"' in text and 'id="chart-curve"' not in text


def test_mooncake_page_is_self_contained_and_small(tmp_path, mooncake_conv):
    """The issue's bound: the default replay page of the Mooncake trace is at most ~5 MB."""
    r = _run("replay", mooncake_conv, "-q", "--format", "json", "--html", tmp_path / "m.html")
    assert r.exit_code == 0, r.output
    page = tmp_path / "m.html"
    assert page.stat().st_size <= 5_000_000
    text = page.read_text()
    for chart in ("gap", "curve", "ts_hit", "ts_resident", "ts_restore", "ts_queue", "ts_backlog", "ttft", "restore"):
        assert f'id="chart-{chart}"' in text
