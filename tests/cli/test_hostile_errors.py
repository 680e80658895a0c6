"""Hostile input: errors point at real options and real paths.

Members: a trace whose format cannot be detected names --trace-format (was
--format, the output option); every option an error suggests (--sort,
--on-error, --block-size, --trace-format ...) is an option of the command that
printed it; an output in a missing folder is refused before the work, naming
the user's path (never the temp file); a non-UTF-8 settings file names the
file; an unknown key in a workloads file is an error; a single-value option
given twice is an error, in every command.
"""
import json
import re

import click
import pytest

from helpers import SMALL_TRACE, all_commands, assert_one_line_error, invoke

T = SMALL_TRACE
TRACE_COMMANDS = [["replay"], ["compare"], ["curve"], ["trace", "stats"], ["trace", "convert"], ["trace", "transform"]]
COMMANDS = {tuple(p): c for p, c in all_commands()}


def _args(cmd: list[str], trace) -> list:
    return [*cmd, trace] + (["out.jsonl"] if cmd[-1] in ("convert", "transform") else [])


def _suggested_options_exist(cmd: list[str], line: str) -> None:
    """Every ``--option`` in an error line is an option of the command that printed it."""
    opts = {o for p in COMMANDS[tuple(cmd)].params for o in p.opts}
    for opt in re.findall(r"(?<![\w-])--[a-z][a-z-]*", line):
        assert opt in opts, (cmd, opt, line)


@pytest.mark.parametrize("cmd", TRACE_COMMANDS, ids=" ".join)
def test_undetectable_format_names_trace_format(tmp_path, monkeypatch, cmd):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.txt").write_text("hello, not a trace\n")
    line = assert_one_line_error(invoke(*_args(cmd, "t.txt"), "-q"), "t.txt", "--trace-format")
    assert "--format " not in line
    _suggested_options_exist(cmd, line)


BAD = {  # content -> a problem whose message suggests an option
    "decreasing": [{"timestamp": 5, "input_length": 1, "output_length": 1, "hash_ids": [1]},
                   {"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [2]}],   # --sort
    "blank": [{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1]}, None],  # --on-error skip
    "block size": [{"timestamp": 0, "input_length": 1024, "output_length": 1, "hash_ids": [1]}],  # --block-size
}


@pytest.mark.parametrize("cmd", TRACE_COMMANDS, ids=" ".join)
@pytest.mark.parametrize("problem", list(BAD))
def test_every_suggested_option_exists(tmp_path, monkeypatch, cmd, problem):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.jsonl").write_text("".join((json.dumps(r) if r else "") + "\n" for r in BAD[problem]))
    line = assert_one_line_error(invoke(*_args(cmd, "t.jsonl"), "-q"), "t.jsonl:")
    assert re.search(r"--[a-z]", line), line            # the message does suggest an option ...
    _suggested_options_exist(cmd, line)                 # ... that this command has


def test_sort_and_on_error_do_what_the_errors_suggest(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in BAD["decreasing"]))
    for cmd in (["replay"], ["curve"], ["compare"]):
        assert invoke(*cmd, f, "--sort", "-q").exit_code == 0
    f.write_text("".join((json.dumps(r) if r else "") + "\n" for r in BAD["blank"]))
    r = invoke("replay", f, "--on-error", "skip", "--format", "json")
    assert r.exit_code == 0 and "1 bad trace line was skipped" in r.stderr


OUTPUTS = [  # (args writing into "missing/...", the option named)
    (["replay", T, "--requests-out", "missing/rows.csv"], "--requests-out missing/rows.csv"),
    (["curve", T, "--plot", "missing/c.png"], "--plot missing/c.png"),
    (["trace", "convert", T, "missing/t.parquet"], "OUT missing/t.parquet"),
    (["trace", "synth", "missing/s.jsonl"], "OUT missing/s.jsonl"),
    (["trace", "synth", "s.jsonl", "--tokens-out", "missing/tok.jsonl"], "--tokens-out missing/tok.jsonl"),
    (["trace", "transform", T, "missing/t.jsonl"], "OUT missing/t.jsonl"),
    (["trace", "from-chat", T.parent / "openai_chat_4.jsonl", "missing/c.jsonl", "--tokenizer",
      T.parent / "tiny_wordlevel_tokenizer.json"], "OUT missing/c.jsonl"),
]


@pytest.mark.parametrize("args, needle", OUTPUTS, ids=[n for _, n in OUTPUTS])
def test_output_in_a_missing_folder_is_refused_before_the_work(tmp_path, monkeypatch, args, needle):
    monkeypatch.chdir(tmp_path)

    def no_work(*a, **k):
        raise AssertionError("the work started before the output was checked")

    for target in ("pcs.engine.api.replay", "pcs.curves.api.curve", "pcs.trace.api.Trace.iter_batches",
                   "pcs.trace.synth.synth_requests", "pcs.trace.chat.read_chat_jsonl"):
        monkeypatch.setattr(target, no_work)
    line = assert_one_line_error(invoke(*args, "-q"), needle, "does not exist")
    assert ".tmp" not in line


def test_a_write_that_fails_names_the_users_path_not_the_temp_file(tmp_path, monkeypatch):
    def disk_full(*a, **k):
        raise OSError(28, "No space left on device", str(a[1]) if len(a) > 1 else None)

    monkeypatch.setattr("pyarrow.csv.write_csv", disk_full)
    out = tmp_path / "rows.csv"
    line = assert_one_line_error(invoke("replay", T, "--requests-out", out, "-q"), str(out), "No space left")
    assert ".tmp" not in line and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name, args", [
    ("config.json", ["footprint", "--tokens", "10", "--model-config"]),
    ("config.json", ["replay", T, "--model"]),
    ("hw.toml", ["hardware", "--hardware-file"]),
    ("w.json", ["budget", "--workloads"]),
    ("prefill.csv", ["envelope", "--restore-bytes", "1GB", "--bandwidth", "1GB/s", "--prefill-csv"]),
    ("tpl.jinja", ["trace", "from-chat", T.parent / "openai_chat_4.jsonl", "o.jsonl", "--tokenizer",
                   T.parent / "tiny_wordlevel_tokenizer.json", "--chat-template"]),
])
def test_non_utf8_settings_name_the_file(tmp_path, monkeypatch, name, args):
    monkeypatch.chdir(tmp_path)
    f = tmp_path / name
    f.write_bytes(b'{"model_type": "llama", "x": "caf\xe9"}\n')       # Latin-1 e-acute: not UTF-8
    assert_one_line_error(invoke(*args, f, "-q"), str(f), "UTF-8")


@pytest.mark.parametrize("text, field", [
    ('{"workloads": [{"capacity_need": "1GB", "bandwidth_need": "1GB/s", "nmae": "A"}]}', "workloads[0].nmae"),
    ('{"device": {"capacity": "1GB"}, "workloads": [{"capacity_need": "1GB", "bandwidth_need": "1GB/s"}]}',
     "device.capacity"),
    ('{"workload": [{"capacity_need": "1GB", "bandwidth_need": "1GB/s"}], "devices": {}}', "devices"),
])
def test_unknown_key_in_a_workloads_file_is_an_error(tmp_path, text, field):
    f = tmp_path / "w.json"
    f.write_text(text)
    r = invoke("budget", "--workloads", f, "--capacity-have", "1GB", "--bandwidth-have", "1GB/s")
    assert_one_line_error(r, str(f), f"'{field}'", "unknown key")   # the key as the file wrote it


VALUE_OPTIONS = [(path, max(p.opts, key=len)) for path, cmd in all_commands() for p in cmd.params
                 if isinstance(p, click.Option) and not (p.multiple or p.count or p.is_flag)]


@pytest.mark.parametrize("path, opt", VALUE_OPTIONS, ids=[" ".join(p) + " " + o for p, o in VALUE_OPTIONS])
def test_a_single_value_option_given_twice_is_an_error(path, opt):
    # the example is replay --policy lru --policy fifo ("last one wins" before)
    assert_one_line_error(invoke(*path, opt, "a", opt, "b"), opt, "more than once")


def test_repeatable_options_still_repeat():
    r = invoke("replay", T, "--tier", "gpu=5blocks", "--tier", "cpu=5blocks", "-q", "-q")
    assert r.exit_code == 0, r.output
    r = invoke("compare", T, "--policy", "lru", "--policy", "fifo", "--tier", "gpu=5blocks", "-q")
    assert r.exit_code == 0, r.output
