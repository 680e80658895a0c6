"""Hostile input: every numeric input is bounded before use, with one line naming it.

Members: every integer and float option of every command (found by walking
the command tree, so a new option is covered), sizes/bandwidths/durations in
options and files (``1e999999GB`` raised decimal.Overflow), model config
fields (``num_hidden_layers`` 1e30 / 10^30), hardware and workload files,
trace fields.
"""
import json

import click
import pytest

from helpers import SMALL_TRACE, all_commands, assert_one_line_error, invoke
from pcs.cli.params import Float, Int

T = SMALL_TRACE
NUMERIC = [(path, p) for path, cmd in all_commands() for p in cmd.params
           if isinstance(p, click.Option) and isinstance(p.type, (click.types.IntParamType, click.types.FloatParamType))]


def test_every_numeric_option_is_bounded():
    assert len(NUMERIC) > 30  # the walk found them
    for path, p in NUMERIC:
        assert isinstance(p.type, (Int, Float)), (path, p.opts)
        assert p.type.min is not None and p.type.max is not None, (path, p.opts)


@pytest.mark.parametrize("path, opt", [(path, max(p.opts, key=len)) for path, p in NUMERIC],
                         ids=lambda x: "-".join(x) if isinstance(x, list) else x)
def test_numeric_option_refuses_huge_nan_and_infinite(path, opt):
    for value in ("1e999999", str(10**30), "nan", "-inf"):
        r = invoke(*path, opt, value, "-q")
        assert_one_line_error(r, opt)


@pytest.mark.parametrize("args, needle", [
    (["replay", T, "--tier", "gpu=1e999999GB"], "too large"),                  # the example
    (["replay", T, "--kv-reserve", "1e999999GB"], "too large"),
    (["replay", T, "--link", "cpu=1e999999GB/s"], "--link cpu=1e999999GB/s: invalid bandwidth '1e999999GB/s': too large"),
    (["replay", T, "--link", "cpu=nan"], "--link cpu=nan: a bandwidth must be a finite number"),
    (["budget", "--capacity-need", "1e999999GB", "--bandwidth-need", "1GB/s",
      "--capacity-have", "1GB", "--bandwidth-have", "1GB/s"], "too large"),
    (["budget", "--restores-per-s", "1e999", "--restore-size", "1GB"], "finite"),
    (["budget", "--iops", "nan", "--io-size", "4KiB"], "finite"),
    (["budget", "--transfer-size", "1e999999TB", "--link-bandwidth", "1GB/s"], "too large"),
    (["envelope", "--restore-bytes", "1e999999GB", "--full-prefill", "1s"], "too large"),
    (["envelope", "--restore-bytes", "1GB", "--full-prefill", "1e99999s"], "too large"),
    (["envelope", "--restore-bytes", "1GB", "--full-prefill", "1s", "--bandwidth", "-1GB/s"], "negative"),
    (["hardware", "--gpu", "h100-sxm", "--hbm-capacity", "1e999999GB"], "too large"),
    (["deploy", "--model", "llama-3.1-8b", "--kv-reserve", "-5GB"], "negative"),
])
def test_sizes_bandwidths_durations_are_bounded(args, needle):
    assert_one_line_error(invoke(*args, "-q"), needle)


LLAMA = {"model_type": "llama", "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
         "hidden_size": 4096, "intermediate_size": 14336, "vocab_size": 128256, "torch_dtype": "bfloat16"}


@pytest.mark.parametrize("text, needle", [
    (json.dumps(dict(LLAMA, num_hidden_layers=1e30)), "num_hidden_layers"),   # the example
    (json.dumps(dict(LLAMA, num_hidden_layers=10**30)), "num_hidden_layers"),
    (json.dumps(dict(LLAMA, hidden_size=-1)), "hidden_size"),
    (json.dumps(dict(LLAMA, num_key_value_heads=2**40)), "num_key_value_heads"),
    (json.dumps(dict(LLAMA, num_attention_heads="32")), "num_attention_heads"),
    (json.dumps(LLAMA).replace('"hidden_size": 4096', '"hidden_size": NaN'), "not a JSON number"),
    (json.dumps(LLAMA).replace('"hidden_size": 4096', '"hidden_size": 1e999'), "out of range"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
])
def test_model_config_fields_are_bounded(tmp_path, text, needle):
    cfg = tmp_path / "config.json"
    cfg.write_text(text)
    for args in (["footprint", "--model-config", cfg, "--tokens", "100"], ["replay", T, "--model", cfg],
                 ["deploy", "--model", cfg]):
        assert_one_line_error(invoke(*args, "-q"), str(cfg), needle)


@pytest.mark.parametrize("name, text, args, needle", [
    ("hw.toml", '[gpu.h100-sxm]\nhbm_bps = "1e999999GB/s"\n', ["hardware", "--gpu", "h100-sxm"], "too large"),
    ("hw.json", '{"gpu": {"h100-sxm": {"hbm_bytes": 1e999}}}', ["hardware", "--gpu", "h100-sxm"], "out of range"),
    ("w.toml", '[[workload]]\ncapacity_need = "1e999999GB"\nbandwidth_need = "1GB/s"\n',
     ["budget", "--capacity-have", "1GB", "--bandwidth-have", "1GB/s"], "too large"),
])
def test_settings_file_values_are_bounded(tmp_path, name, text, args, needle):
    f = tmp_path / name
    f.write_text(text)
    opt = "--workloads" if name.startswith("w.") else "--hardware-file"
    assert_one_line_error(invoke(*args, opt, f, "-q"), str(f), needle)


@pytest.mark.parametrize("field, value", [("input_length", 10**30), ("input_length", 1e30), ("output_length", -1),
                                          ("timestamp", 1e999), ("hash_ids", [2**64])])
def test_trace_fields_are_bounded(tmp_path, field, value):
    row = {"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}
    row[field] = value
    f = tmp_path / "t.jsonl"
    f.write_text(json.dumps(row).replace("Infinity", "1e999") + "\n")
    for args in (["replay", f], ["curve", f], ["trace", "stats", f]):
        assert_one_line_error(invoke(*args, "-q"), f"{f}:1", field if field != "timestamp" else "")
