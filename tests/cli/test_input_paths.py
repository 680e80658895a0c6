"""Every public function that reads a path refuses a missing one, a directory (a file where a folder goes) and an
unreadable one with pcs.errors.PathError naming the keyword and the path -- never FileNotFoundError /
IsADirectoryError / PermissionError (pcs/trace/pathcheck.py); the CLI prints the path and the problem."""
from __future__ import annotations

import os

import pytest

import pcs
from pcs.errors import InputError, PathError, UserError

MISSING, DIRECTORY, DENIED = "No such file or directory", "Is a directory", "Permission denied"


def _entry_points():
    from pcs.analysis.budget import load_workloads
    from pcs.compute import MeasuredPrefill
    from pcs.hardware import load_hardware_file
    from pcs.model import load_hf_config
    from pcs.sweep import load_plan, run_sweep
    from pcs.trace import trace_stats
    from pcs.trace.chat import load_tokenizer, read_chat_jsonl
    from pcs.trace.convert import convert
    from pcs.trace.synth import SynthSpec, synth_requests

    return {  # name -> (call on a path, the keyword the error names)
        "replay": (lambda p, tmp: pcs.replay(p), "trace"),
        "compare": (lambda p, tmp: pcs.compare(p, policies=["lru", "fifo"]), "trace"),
        "curve": (lambda p, tmp: pcs.curve(p, capacities=[10]), "trace"),
        "fleet_replay": (lambda p, tmp: pcs.fleet_replay(p, instances=2), "trace"),
        "open_trace": (lambda p, tmp: pcs.open_trace(p), "path"),
        "trace_stats": (lambda p, tmp: trace_stats(p), "trace"),
        "convert": (lambda p, tmp: convert(p, tmp / "out.jsonl"), "trace"),
        "run_sweep": (lambda p, tmp: run_sweep(p, tmp / "sweep"), "plan"),
        "load_plan": (lambda p, tmp: load_plan(p), "path"),
        "load_hf_config": (lambda p, tmp: load_hf_config(p), "path"),
        "load_hardware_file": (lambda p, tmp: load_hardware_file(p), "path"),
        "load_workloads": (lambda p, tmp: load_workloads(p), "path"),
        "MeasuredPrefill.from_csv": (lambda p, tmp: MeasuredPrefill.from_csv(p), "path"),
        "read_chat_jsonl": (lambda p, tmp: list(read_chat_jsonl(p)), "path"),
        "load_tokenizer": (lambda p, tmp: load_tokenizer(p), "path"),
        "synth_requests": (lambda p, tmp: list(synth_requests(SynthSpec(num_requests=3), azure_csv=p)), "azure_csv"),
    }


ENTRY = _entry_points()


def _expect(call, path, keyword, problem, tmp_path):
    with pytest.raises(PathError) as err:
        call(path, tmp_path)
    # the whole message, worked out from the rule: KEYWORD='PATH': PROBLEM
    assert str(err.value) == f"{keyword}={str(path)!r}: {problem}"
    assert isinstance(err.value, InputError) and isinstance(err.value, UserError)
    assert not isinstance(err.value, OSError)
    assert (err.value.path, err.value.keyword, err.value.problem) == (str(path), keyword, problem)


@pytest.mark.parametrize("name", sorted(ENTRY))
def test_missing_path(tmp_path, name):
    call, keyword = ENTRY[name]
    _expect(call, tmp_path / "absent.json", keyword, MISSING, tmp_path)


@pytest.mark.parametrize("name", sorted(ENTRY))
def test_directory_where_a_file_goes(tmp_path, name):
    call, keyword = ENTRY[name]
    (tmp_path / "folder.json").mkdir()
    _expect(call, tmp_path / "folder.json", keyword, DIRECTORY, tmp_path)


@pytest.mark.parametrize("name", sorted(ENTRY))
def test_unreadable_file(tmp_path, monkeypatch, name):
    # chmod 000 does not stop root (the CI user may be root): the check asks os.access, so ask it to say no
    call, keyword = ENTRY[name]
    path = tmp_path / "locked.json"
    path.write_text("{}")
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if os.fspath(p) == str(path) else real(p, mode, **kw))
    _expect(call, path, keyword, DENIED, tmp_path)


def test_a_file_under_a_file(tmp_path):
    (tmp_path / "t.jsonl").write_text("")
    _expect(ENTRY["replay"][0], tmp_path / "t.jsonl" / "x.jsonl", "trace", "Not a directory", tmp_path)


@pytest.mark.parametrize("name", ["read_results", "summarize"])
def test_sweep_output_folder(tmp_path, name):
    from pcs.sweep import read_results, summarize

    call = {"read_results": lambda p, tmp: read_results(p), "summarize": lambda p, tmp: summarize(p)}[name]
    _expect(call, tmp_path / "absent", "out", MISSING, tmp_path)
    (tmp_path / "file").write_text("")
    _expect(call, tmp_path / "file", "out", "Not a directory", tmp_path)


def test_cli_prints_the_path_and_the_problem(tmp_path):
    from click.testing import CliRunner

    from pcs.cli.main import cli

    r = CliRunner().invoke(cli, ["footprint", "--model", str(tmp_path / "absent.json"), "--tokens", "5"])
    assert r.exit_code == 2
    # the option that named it, as typed (mend45c: a trace's or --model's missing file named its option)
    assert r.output.strip() == f"pcs: error: --model {tmp_path / 'absent.json'}: {MISSING}"


@pytest.mark.parametrize("args, unit", [(["--tier", "gpu=200", "GB"], "GB"), (["--tier", "gpu=2", "TiB"], "TiB"),
                                        (["--tier", "gpu=500", "blocks"], "blocks")])
def test_a_size_written_with_a_space_names_the_unit_read_as_the_trace(args, unit):
    # "--tier gpu=200 GB" leaves GB as the next argument, which click reads as the TRACE: the missing file is the
    # unit, and the error says so (exit 2, one line), while a missing file of another name gets no such hint
    from click.testing import CliRunner

    from pcs.cli.main import cli

    res = CliRunner().invoke(cli, ["replay", *args])
    assert res.exit_code == 2
    assert f"{unit}: No such file or directory (a unit alone:" in res.output and f"'200{unit}'" in res.output
    other = CliRunner().invoke(cli, ["replay", "missing.jsonl"])
    assert other.exit_code == 2 and "a unit alone" not in other.output


# Review 45 (mend45b): an empty path is refused by the option's name, one line, exit 2 (--chat-template '' said
# ".: Is a directory", pathlib's Path('') being '.'; --hardware-file '' and --workloads '' were taken as not given;
# TRACE '' said ": No such file or directory"; sweep run -o '' wrote its results in the current folder).

def _empty_cases():
    from helpers import ROOT, SMALL_TRACE

    t, chat = str(SMALL_TRACE), str(ROOT / "traces" / "sample_chat.jsonl")
    tok = str(ROOT / "traces" / "formats" / "tiny_wordlevel_tokenizer.json")
    file, folder = "a file name", "a folder name (. for the current folder)"
    return [   # (command line with None for the empty value, the option as named, what it takes)
        (["replay", None], "TRACE", file),
        (["replay", t, "--hardware-file", None], "--hardware-file", file),
        (["replay", t, "--requests-out", None], "--requests-out", file),
        (["replay", t, "--plot", None], "--plot", folder),
        (["compare", t, "--policy", "lru", "--policy", "fifo", "--hardware-file", None], "--hardware-file", file),
        (["curve", None], "TRACE", file),
        (["curve", t, "--plot", None], "--plot", "a file or folder name"),
        (["deploy", "--model-config", None], "--model-config", file),
        (["envelope", "--model", "llama-3.1-8b", "--prefill-csv", None], "--prefill-csv", file),
        (["footprint", "--model-config", None, "--tokens", "10"], "--model-config", file),
        (["footprint", "--model", "llama-3.1-8b", "--tokens", "10", "--plot", None], "--plot", folder),
        (["hardware", "--hardware-file", None], "--hardware-file", file),
        (["budget", "--workloads", None], "--workloads", file),
        (["report", t, "-o", None], "-o", file),
        (["sweep", "run", str(ROOT / "traces" / "sweep_sample.toml"), "-o", None], "-o", folder),
        (["trace", "stats", None], "TRACE", file),
        (["trace", "convert", None, "o.jsonl"], "IN", file),
        (["trace", "events", None], "EVENTS", file),
        (["trace", "transform", t, None], "OUT", file),
        (["trace", "from-chat", None, "o.jsonl", "--tokenizer", tok], "CHAT", file),
        (["trace", "from-chat", chat, "o.jsonl", "--tokenizer", tok, "--chat-template", None], "--chat-template",
         "a built-in template name or a file"),
        (["trace", "from-chat", chat, "o.jsonl", "--tokenizer", None], "--tokenizer", file),
        (["trace", "synth", "o.jsonl", "--tokens-out", None], "--tokens-out", file),
    ]


@pytest.mark.parametrize("case", range(len(_empty_cases())))
def test_an_empty_path_is_refused_by_its_option(tmp_path, monkeypatch, case):
    from helpers import assert_one_line_error, invoke

    args, label, wanted = _empty_cases()[case]
    monkeypatch.chdir(tmp_path)      # nothing may be written to the current folder
    line = assert_one_line_error(invoke(*["" if a is None else a for a in args], "-q"))
    assert line == f"pcs: error: {label} '': an empty path; give {wanted}"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args", [["curve", "TRACE", "--model", ""], ["curve", "TRACE", "--model-config", ""]])
def test_an_empty_model_is_refused_as_footprint_refuses_it(tmp_path, args):
    from helpers import SMALL_TRACE, assert_one_line_error, invoke

    line = assert_one_line_error(invoke(*[str(SMALL_TRACE) if a == "TRACE" else a for a in args], "-q"))
    assert line == f"pcs: error: {args[2]} '': empty; give a preset name (`pcs models`) or a config.json path"
