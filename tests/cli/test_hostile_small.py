"""Hostile input: the small things that read as carelessness.

Members: synth --requests all with --azure-csv; the synthesised-reuse note in
the replay summary (Azure CSV, and a Parquet converted from it); stdin named
``-``; ``-0.0 pts`` printed as ``0.0 pts``; one spelling for one thing
(--dtype everywhere, --kv-dtype a hidden alias; --model takes a config path
everywhere); ``pcs --help`` lists every command; envelope's default GPU is
replay's; the curve plot's title and byte axis.
"""
import json

import click
import pytest

from helpers import SMALL_AZURE, SMALL_TRACE, all_commands, assert_one_line_error, invoke
from pcs.cli.main import COMMANDS
from pcs.units import format_points

T = SMALL_TRACE


def test_synth_takes_every_row_of_an_azure_csv(tmp_path):
    r = invoke("trace", "synth", tmp_path / "o.jsonl", "--azure-csv", SMALL_AZURE, "--requests", "all", "-q",
               "--format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["requests"] == 8                       # the CSV's 8 rows
    assert_one_line_error(invoke("trace", "synth", tmp_path / "p.jsonl", "--requests", "all"), "--azure-csv")


def test_replay_of_synthesised_reuse_says_so(tmp_path):
    r = invoke("replay", SMALL_AZURE, "--tier", "gpu=5blocks", "--format", "json", "-q")
    assert r.exit_code == 0, r.output
    assert any("synthetic" in n for n in json.loads(r.stdout)["notes"])
    assert "synthetic" in invoke("replay", SMALL_AZURE, "--tier", "gpu=5blocks").stdout        # table too
    assert invoke("trace", "convert", SMALL_AZURE, tmp_path / "a.parquet", "-q").exit_code == 0
    r = invoke("replay", tmp_path / "a.parquet", "--tier", "gpu=5blocks", "--format", "json", "-q")
    assert any("synthetic" in n for n in json.loads(r.stdout)["notes"])        # kept through conversion
    r = invoke("replay", T, "--tier", "gpu=5blocks", "--format", "json", "-q")
    assert not any("synthetic" in n for n in json.loads(r.stdout)["notes"])    # recorded reuse: no note


def test_stdin_is_named_dash():
    text = T.read_text()
    for args, key in ((["replay", "-"], "trace"), (["curve", "-", "--points", "2"], "trace")):
        r = invoke(*args, "-q", "--format", "json", input=text)
        assert r.exit_code == 0 and json.loads(r.stdout)[key] == "-", r.output
    assert invoke("replay", "-", "-q", input=text).stdout.startswith("pcs replay: - |")


def test_negative_zero_points_print_as_zero():
    assert format_points(-0.0) == format_points(-0.00049) == format_points(0.0) == "0.0 pts"
    assert format_points(-0.031) == "-3.1 pts" and format_points(0.031) == "+3.1 pts"
    for args in (["replay", T, "--tier", "gpu=5blocks"], ["compare", T, "--tier", "gpu=5blocks"]):
        out = invoke(*args, "-q").stdout
        assert "-0.0 pts" not in out and "+0.0 pts" not in out and "0.0 pts" in out


def test_one_spelling_for_the_kv_dtype():
    takes_model = [(p, c) for p, c in all_commands() if any("--model" in q.opts for q in c.params)]
    assert len(takes_model) >= 6
    for path, cmd in takes_model:
        opts = {o: q for q in cmd.params for o in q.opts}
        assert "--dtype" in opts, path
        assert "--kv-dtype" not in opts or opts["--kv-dtype"].hidden, path
    base = ["envelope", "--model", "llama-3.1-8b", "--restore-tokens", "4096", "--bandwidth", "20GB/s", "-q",
            "--format", "json"]
    new, old = invoke(*base, "--dtype", "fp8"), invoke(*base, "--kv-dtype", "fp8")
    assert new.exit_code == 0 and new.stdout == old.stdout
    assert_one_line_error(invoke(*base, "--dtype", "fp8", "--kv-dtype", "fp8"), "--dtype once")


def test_model_config_path_works_in_every_model_option(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "llama", "num_hidden_layers": 32, "num_attention_heads": 32,
                               "num_key_value_heads": 8, "hidden_size": 4096, "intermediate_size": 14336,
                               "vocab_size": 128256, "torch_dtype": "bfloat16"}))
    for args in (["footprint", "--tokens", "100"], ["deploy"], ["curve", T, "--points", "2"],
                 ["envelope", "--restore-tokens", "100", "--bandwidth", "1GB/s"],
                 ["replay", T, "--tier", "gpu=5blocks"]):
        r = invoke(*args, "--model", cfg, "-q")
        assert r.exit_code == 0, (args, r.output)
    assert_one_line_error(invoke("footprint", "--tokens", "1", "--model", tmp_path / "none.json"), "none.json")


def test_help_lists_every_command():
    out = invoke("--help").stdout
    for name in COMMANDS:
        assert f"  {name} " in out, name
    trace_help = invoke("trace", "--help").stdout
    for path, _ in all_commands():
        if path[0] == "trace":
            assert f"  {path[1]} " in trace_help, path
    for path, _ in all_commands():
        assert invoke(*path, "--help").exit_code == 0, path


def test_envelope_defaults_to_replays_gpu():
    from pcs.engine.api import DEFAULTS

    base = ["envelope", "--model", "llama-3.1-8b", "--restore-tokens", "4096", "--bandwidth", "20GB/s", "-q",
            "--format", "json"]
    default, named = invoke(*base), invoke(*base, "--gpu", DEFAULTS["gpu"])
    assert default.exit_code == 0, default.output
    assert json.loads(default.stdout) == json.loads(named.stdout)
    assert DEFAULTS["gpu"] in json.loads(default.stdout)["full_prefill_from"]


def test_curve_plot_has_a_title_and_a_byte_axis():
    pytest.importorskip("matplotlib")
    from pcs.curves.api import curve
    from pcs.report.curve import curve_figure

    res = curve(str(T), points=2, model="llama-3.1-8b")
    fig = curve_figure(res, "llama-3.1-8b", str(T))
    ax = fig.axes[0]
    assert "mooncake_conv_8.jsonl" in ax.get_title() and "8 requests" in ax.get_title()
    tops = [a for a in ax.child_axes if "bytes" in a.get_xlabel()]
    assert len(tops) == 1 and "llama-3.1-8b" in tops[0].get_xlabel()
    res = curve(str(T), points=2)
    assert not curve_figure(res, None, str(T)).axes[0].child_axes               # no model: no byte axis


def test_every_command_is_a_pcs_command():
    from pcs.cli.common import PcsCommand

    for path, cmd in all_commands():
        assert isinstance(cmd, PcsCommand), path
        assert any(isinstance(p, click.Option) and "--quiet" in p.opts for p in cmd.params), path
