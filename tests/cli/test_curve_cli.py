"""`pcs curve`: JSON keys, CSV, table, plot and one-line errors (CliRunner).

The trace is the hand-traced one of test_curve_reference (HAND_SPEC) in
Mooncake form: token counts x128 with 512-token blocks give the same
cacheable blocks and caps as x1 with 4-token blocks, so the expected
ratios are the hand-worked 12/43 (C=1), 16/43 (C=2), 24/43 (C>=4).
"""
from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from helpers import HAND_SPEC


@pytest.fixture()
def hand_trace(tmp_path):
    path = tmp_path / "hand.jsonl"
    lines = [json.dumps({"timestamp": i * 1000, "input_length": p * 128, "output_length": 10, "hash_ids": ids})
             for i, (ids, p) in enumerate(HAND_SPEC)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def run(*args):
    return CliRunner().invoke(cli, ["curve", *args], catch_exceptions=False)


def test_json_rows_and_keys(hand_trace):
    res = run(hand_trace, "--capacities", "1blocks,2blocks,4blocks", "--format", "json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert [r["capacity_blocks"] for r in out["rows"]] == [1, 2, 4]
    assert [r["lru_hit_ratio"] for r in out["rows"]] == [12 / 43, 16 / 43, 24 / 43]
    assert [r["belady_hit_ratio"] for r in out["rows"]] == [12 / 43, 16 / 43, 24 / 43]
    assert all(r["ceiling_hit_ratio"] == 24 / 43 for r in out["rows"])
    assert "capacity_bytes" not in out["rows"][0]
    assert out["knee"]["p50"]["capacity_blocks"] == 1 and out["knee"]["p90"]["capacity_blocks"] == 4
    assert out["requests"] == 4 and out["block_size"] == 512 and out["prompt_tokens"] == 43 * 128
    assert set(out) >= {"trace", "block_size", "requests", "block_accesses", "cacheable_blocks",
                        "distinct_cacheable_blocks", "prompt_tokens",
                        "sample_rate", "kernel", "model", "block_bytes", "dtype", "ceiling_hit_ratio", "knee", "rows"}


def test_bytes_with_a_model(hand_trace):
    from pcs.model import block_bytes, get_model

    bb = block_bytes(get_model("llama-3.1-8b"), 512, "reserved").total_bytes
    res = run(hand_trace, "--capacities", f"2blocks,{3 * bb + 5}B", "--model", "llama-3.1-8b", "--format", "json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert [r["capacity_blocks"] for r in out["rows"]] == [2, 3]  # bytes round down to whole blocks
    assert [r["capacity_bytes"] for r in out["rows"]] == [2 * bb, 3 * bb]
    assert out["block_bytes"] == bb and out["model"] == "llama-3.1-8b"
    assert out["knee"]["p90"]["capacity_bytes"] == 4 * bb


def test_csv_and_table(hand_trace):
    res = run(hand_trace, "--points", "3", "--format", "csv", "--no-belady")
    rows = list(csv.DictReader(io.StringIO(res.output)))
    assert [int(r["capacity_blocks"]) for r in rows] == [1, 2, 4]  # geometric 1..4 (LRU reaches the ceiling at 4)
    assert rows[0]["belady_hit_ratio"] == ""
    table = run(hand_trace, "--capacities", "2blocks").output
    assert "LRU" in table and "Belady" in table and "37.2 %" in table  # 16/43
    assert "knee" in table


def test_sampled_run_marks_estimates(hand_trace):
    res = run(hand_trace, "--sample-rate", "0.5", "--format", "json")
    out = json.loads(res.stdout)     # stderr: the warning of a sample this small (a few blocks, under 1,000)
    assert out["sample_rate"] == 0.5 and all(r["belady_hit_ratio"] is None for r in out["rows"])
    assert "fewer than 1,000: samples of" in out["notes"][-1] and res.stderr.startswith("pcs: warning: SHARDS")


def test_table_says_exact_only_when_not_sampled(hand_trace):
    """The table's LRU note: "exact for every capacity" for a full pass, "estimated ... over a SHARDS sample" at
    --sample-rate 0.5 (a sampled curve's LRU values are estimates: docs/curves.md)."""
    exact, sampled = run(hand_trace, "-q").stdout, run(hand_trace, "-q", "--sample-rate", "0.5").stdout
    assert "exact for every capacity" in exact and "SHARDS sample" not in exact
    assert "exact for every capacity" not in sampled
    assert "estimated for every capacity from one pass of stack depths over a SHARDS sample" in sampled


def test_plot(hand_trace, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "curve.png"
    res = run(hand_trace, "--points", "3", "--plot", str(png))
    assert res.exit_code == 0, res.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".png"] == ["curve.png"]  # no temp file left


@pytest.mark.parametrize("args, message", [
    (["--capacities", "1blocks", "--points", "2"], "not both"),
    (["--capacities", "40GB"], "needs --model"),
    (["--capacities", ","], "comma-separated"),
    (["--dtype", "fp8"], "give --model"),
    (["--model", "no-such-model"], "no-such-model"),
    (["--plot", "/nonexistent-dir/x.png"], "does not exist"),
])
def test_errors_are_one_line(hand_trace, args, message):
    res = CliRunner().invoke(cli, ["curve", hand_trace, *args])
    assert res.exit_code == 2
    assert message in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_missing_trace_file():
    res = CliRunner().invoke(cli, ["curve", "/nonexistent/trace.jsonl"])
    assert res.exit_code == 2 and "pcs: error:" in res.output


def test_help_has_units_and_example():
    res = CliRunner().invoke(cli, ["curve", "--help"])
    assert res.exit_code == 0
    assert "blocks" in res.output and "Example" in res.output and "--format" in res.output


# Review 45 (mend45b): --plot's refusal names every image type the check takes (it said ".png, .svg or .pdf" while
# .jpg, .tif, .webp, .eps ... were taken): the ten types matplotlib's savefig writes without another program.
_TAKEN = ["png", "svg", "pdf", "jpg", "jpeg", "tif", "tiff", "webp", "eps", "ps"]


def test_the_plot_refusal_names_every_type_taken_and_each_is_taken(hand_trace, tmp_path):
    from pcs.cli.curve import _plot_format_ok

    r = run(hand_trace, "--capacities", "1blocks", "--plot", str(tmp_path / "c.pgn"))
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert r.output.rstrip().endswith("use .png, .svg, .pdf, .jpg, .jpeg, .tif, .tiff, .webp, .eps or .ps"), r.output
    for suffix in [*_TAKEN, "JPG"]:
        _plot_format_ok(f"c.{suffix}")     # not refused
    mpl = pytest.importorskip("matplotlib.backend_bases")
    assert set(_TAKEN) <= set(mpl.FigureCanvasBase.get_supported_filetypes())


@pytest.mark.parametrize("suffix", ["eps", "ps"])
def test_a_postscript_plot_prints_no_raw_matplotlib_warning(tmp_path, suffix, caplog):
    # review 45d: "The PostScript backend does not support transparency; ..." (matplotlib's log line) on stderr;
    # PostScript draws the translucent grid opaque, the same on white: pcs keeps it quiet where it saves. The
    # bundled sample draws translucent parts
    from pathlib import Path

    pytest.importorskip("matplotlib")
    out = tmp_path / f"curve.{suffix}"
    sample = Path(__file__).resolve().parents[2] / "traces" / "sample_exact.jsonl"
    res = run(str(sample), "--points", "3", "--plot", str(out), "-q", "--format", "json")
    assert res.exit_code == 0, res.output
    assert out.read_bytes()[:4] == b"%!PS"
    # matplotlib logs it (a record; on stderr through logging's last-resort handler, which pytest's capture replaces)
    assert "transparency" not in res.stderr + caplog.text, caplog.text
