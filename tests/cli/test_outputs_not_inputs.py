"""No output of a run may name one of its inputs, for every command that writes a file (pcs.cli.iofiles).

The tables below are written from each command's --help, not from pcs.cli.iofiles: which parameters name files,
which of them are written. A new file parameter fails test_every_file_parameter_is_classified until it is added
here, so the parametrized cases cover every (output, input) pair a command has. Each case: exit 2, one line,
the input byte for byte as it was, no output file made.
"""
from __future__ import annotations

import json
import shutil

import click
import pytest

from helpers import SMALL_AZURE, SMALL_TRACE, all_commands, assert_one_line_error, invoke

FORMATS = SMALL_TRACE.parent
#: command -> its parameters that name a file or folder, by click name: "out" written, "in" read (from --help)
FILE_PARAMS = {
    "budget": {"workloads_file": "in", "hardware_file": "in"},
    "compare": {"trace": "in", "hardware_file": "in", "html_path": "out", "plot_dir": "out"},
    "curve": {"trace": "in", "plot_path": "out", "html_path": "out"},
    "deploy": {"model_config": "in", "hardware_file": "in"},
    "envelope": {"model_config": "in", "prefill_csv": "in", "hardware_file": "in"},
    "footprint": {"model_config": "in", "html_path": "out", "plot_dir": "out"},
    "hardware": {"hardware_file": "in"},
    "replay": {"trace": "in", "hardware_file": "in", "requests_out": "out", "html_path": "out", "plot_dir": "out"},
    "report": {"files": "in", "html_path": "out", "plot_dir": "out"},
    "sweep run": {"plan": "in", "out": "out"},
    "sweep summarize": {"out": "in"},
    "trace convert": {"out_path": "out"},
    "trace from-chat": {"out_path": "out", "tokenizer_path": "in"},
    "trace synth": {"out_path": "out", "azure_csv": "in", "tokens_out": "out"},
    "trace transform": {"out_path": "out"},
}


def test_every_file_parameter_is_classified():
    from pcs.cli.iofiles import OUTPUTS

    for path, cmd in all_commands():
        name = " ".join(path)
        found = {p.name for p in cmd.params if isinstance(p.type, click.Path)}
        assert found == set(FILE_PARAMS.get(name, {})), (name, found)
        outs = {k for k, v in FILE_PARAMS.get(name, {}).items() if v == "out"}
        assert set(OUTPUTS.get(cmd.name, ())) == outs, name


@pytest.fixture
def work(tmp_path, monkeypatch):
    """Every input the cases name, in the current folder."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(SMALL_TRACE, "t.jsonl")
    assert invoke("trace", "convert", "t.jsonl", "t.parquet", "-q").exit_code == 0
    (tmp_path / "cfg.json").write_text(json.dumps(dict(
        model_type="llama", num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, hidden_size=64,
        intermediate_size=128, vocab_size=100, torch_dtype="bfloat16", max_position_embeddings=4096)))
    (tmp_path / "hw.toml").write_text("# a hardware file\n")
    (tmp_path / "w.toml").write_text("# a workloads file\n")
    (tmp_path / "p.csv").write_text("tokens,seconds\n1024,0.1\n")
    shutil.copy(SMALL_AZURE, "a.csv")
    shutil.copy(FORMATS / "openai_chat_4.jsonl", "chat.jsonl")
    shutil.copy(FORMATS / "tiny_wordlevel_tokenizer.json", "tok.json")
    (tmp_path / "tpl.jinja").write_text("{% for m in messages %}{{ m.content }} {% endfor %}")
    r = invoke("replay", "t.jsonl", "--model", "llama-3.1-8b", "--tp", "1", "--tier", "gpu=500blocks", "-q",
               "--format", "json")
    assert r.exit_code == 0, r.output
    (tmp_path / "run.json").write_text(r.stdout)
    return tmp_path


REPLAY = ["--tier", "gpu=500blocks", "--tp", "1", "-q"]
COMPARE = ["--tier", "gpu=500blocks", "--tp", "1", "--policy", "lru", "--policy", "fifo", "-q"]
#: (the command line, the input it names that the output names too, what the refusal calls that input)
CASES = [
    (["replay", "t.parquet", "--requests-out", "t.parquet", *REPLAY], "t.parquet", "TRACE"),
    (["replay", "t.jsonl", "--html", "t.jsonl", *REPLAY], "t.jsonl", "TRACE"),
    (["replay", "t.jsonl", "--model", "cfg.json", "--html", "cfg.json", *REPLAY], "cfg.json", "--model"),
    (["replay", "t.jsonl", "--model-config", "cfg.json", "--html", "cfg.json", *REPLAY], "cfg.json",
     "--model-config"),
    (["replay", "t.jsonl", "--hardware-file", "hw.toml", "--html", "hw.toml", *REPLAY], "hw.toml",
     "--hardware-file"),
    (["compare", "t.jsonl", "--html", "t.jsonl", *COMPARE], "t.jsonl", "TRACE"),
    (["compare", "t.jsonl", "--model", "cfg.json", "--html", "cfg.json", *COMPARE], "cfg.json", "--model"),
    (["compare", "t.jsonl", "--model-config", "cfg.json", "--html", "cfg.json", *COMPARE], "cfg.json",
     "--model-config"),
    (["compare", "t.jsonl", "--hardware-file", "hw.toml", "--html", "hw.toml", *COMPARE], "hw.toml",
     "--hardware-file"),
    (["curve", "t.jsonl", "--html", "t.jsonl", "-q"], "t.jsonl", "TRACE"),
    (["curve", "t.jsonl", "--model", "cfg.json", "--html", "cfg.json", "-q"], "cfg.json", "--model"),
    (["curve", "t.jsonl", "--model-config", "cfg.json", "--plot", "cfg.json", "-q"], "cfg.json",
     "--model-config"),
    (["footprint", "--model", "cfg.json", "--tokens", "100", "--html", "cfg.json"], "cfg.json", "--model"),
    (["footprint", "--model-config", "cfg.json", "--tokens", "100", "--html", "cfg.json"], "cfg.json",
     "--model-config"),
    (["report", "run.json", "-o", "run.json"], "run.json", "FILES"),
    (["report", "run.json", "--html", "t.jsonl"], "t.jsonl", "the trace of input 1"),   # the tester's H3
    (["report", "run.json", "-o", "t.jsonl", "--no-curve"], "t.jsonl", "the trace of input 1"),
    (["trace", "convert", "t.jsonl", "t.jsonl", "-q"], "t.jsonl", "IN"),
    (["trace", "transform", "t.jsonl", "t.jsonl", "-q"], "t.jsonl", "IN"),
    (["trace", "synth", "a.csv", "--azure-csv", "a.csv", "-q"], "a.csv", "--azure-csv"),
    (["trace", "synth", "s.jsonl", "--azure-csv", "a.csv", "--tokens-out", "a.csv", "-q"], "a.csv",
     "--azure-csv"),
    (["trace", "from-chat", "chat.jsonl", "chat.jsonl", "--tokenizer", "tok.json", "-q"], "chat.jsonl", "CHAT"),
    (["trace", "from-chat", "chat.jsonl", "tok.json", "--tokenizer", "tok.json", "-q"], "tok.json",
     "--tokenizer"),
    (["trace", "from-chat", "chat.jsonl", "tpl.jinja", "--tokenizer", "tok.json", "--chat-template", "tpl.jinja",
      "-q"], "tpl.jinja", "--chat-template"),
]


@pytest.mark.parametrize("args,shared,what", CASES, ids=[" ".join(c[0][:4]) for c in CASES])
def test_an_output_naming_an_input_is_refused(work, args, shared, what):
    before = (work / shared).read_bytes()
    names = sorted(p.name for p in work.iterdir())
    assert_one_line_error(invoke(*args), f"is also an input file of this run ({what})")
    assert (work / shared).read_bytes() == before
    assert sorted(p.name for p in work.iterdir()) == names


def test_a_sweep_folder_holding_the_plans_trace_is_refused_before_running(work):
    # the tester's M3: -o names the folder of the plan's Parquet trace; the store reads every Parquet file there
    (work / "D").mkdir()
    shutil.copy("t.parquet", "D/tr.parquet")
    (work / "D" / "plan.toml").write_text('[fixed]\ntrace = "tr.parquet"\nmodel = "llama-3.1-8b"\n'
                                          'tier = {gpu = "500blocks"}\ntiming = "sequential"\n[axes]\ntp = [1, 2]\n')
    before = (work / "D" / "tr.parquet").read_bytes()
    assert_one_line_error(invoke("sweep", "run", "D/plan.toml", "-o", "D", "-q"), "-o D holds D/tr.parquet",
                          "(D/plan.toml: trace)")
    assert sorted(p.name for p in (work / "D").iterdir()) == ["plan.toml", "tr.parquet"]
    assert (work / "D" / "tr.parquet").read_bytes() == before
    # the plan itself may live with its results: nothing the points read is in D then
    (work / "E").mkdir()
    (work / "E" / "plan.toml").write_text('kind = "footprint"\n[fixed]\nmodel = "llama-3.1-8b"\ntokens = 100\n'
                                          '[axes]\nblock-size = [16, 32]\n')
    r = invoke("sweep", "run", "E/plan.toml", "-o", "E", "--jobs", "1", "-q")
    assert r.exit_code == 0, r.output


def test_a_model_folder_is_read_as_its_config(work):
    # a local Hugging Face model folder (huggingface-cli download --local-dir) holds config.json: --model reads it
    (work / "m").mkdir()
    shutil.copy("cfg.json", "m/config.json")
    by_folder = invoke("footprint", "--model", "m", "--tokens", "100", "--format", "json", "-q")
    by_file = invoke("footprint", "--model", "m/config.json", "--tokens", "100", "--format", "json", "-q")
    assert by_folder.exit_code == 0, by_folder.output
    # 2 layers x 2 KV heads x 16 (64/4) head dim x 2 (K and V) x 2 B (bf16) = 256 B per token
    assert json.loads(by_folder.stdout)["reference_bytes_per_token"] == 256
    assert json.loads(by_folder.stdout) == json.loads(by_file.stdout)
    assert_one_line_error(invoke("footprint", "--model", "m", "--tokens", "100", "--html", "m/config.json"),
                          "is also an input file of this run (--model)")


def test_a_name_of_both_a_preset_and_a_local_path(work):
    # a file named like a preset is read (a path on disk comes first), and a note says which one was used
    shutil.copy("cfg.json", "llama-3.1-8b")
    r = invoke("footprint", "--model", "llama-3.1-8b", "--tokens", "100", "--format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["reference_bytes_per_token"] == 256
    assert "read the file llama-3.1-8b in this folder, not the preset llama-3.1-8b" in r.stderr
    # a folder named like a preset that holds no config.json is no model folder: the preset, no note
    (work / "qwen3-32b").mkdir()
    r = invoke("footprint", "--model", "qwen3-32b", "--tokens", "100", "--format", "json")
    assert r.exit_code == 0, r.output
    # Qwen3-32B: 64 layers x 8 KV heads x 128 head dim x 2 (K and V) x 2 B = 262,144 B per token
    assert json.loads(r.stdout)["reference_bytes_per_token"] == 262144
    assert "note" not in r.stderr


@pytest.mark.parametrize("cmd", [("footprint", "--tokens", "100"), ("replay", "--compute", "infinite")])
def test_a_hugging_face_id_of_a_preset_is_the_preset(work, cmd):
    # meta-llama/Llama-3.1-8B is not on disk: the preset, as pcs.model.get_model reads the id (the API did; the
    # CLI took the "/" for a folder and said "No such file")
    r = invoke(*cmd, "--model", "meta-llama/Llama-3.1-8B", "--format", "json", "-q")
    assert r.exit_code == 0, r.output
    if cmd[0] == "footprint":
        # Llama-3.1-8B: 32 layers x 8 KV heads x 128 head dim x 2 (K and V) x 2 B = 131,072 B per token
        assert json.loads(r.stdout)["reference_bytes_per_token"] == 131072
    # an id of no preset, not on disk: says both (pcs reads no model from the network)
    assert_one_line_error(invoke(*cmd, "--model", "meta-llama/Nope-7B", "--format", "json"),
                          "--model meta-llama/Nope-7B: no such file or folder, and no preset of that name")
    # a missing config path still names the file
    assert_one_line_error(invoke(*cmd, "--model", "configs/x.json", "--format", "json"),
                          "configs/x.json: No such file or directory")


@pytest.mark.parametrize("value", ["/models/Llama-3.1-8B", "./Llama-3.1-8B", "a/b/Llama-3.1-8B"])
def test_a_missing_model_path_named_like_a_preset_is_no_preset(work, value):
    # only an id written org/name maps to a preset; a path that is not there names the file (it was silently the
    # preset, and its replay_command then read a folder of that name where one exists)
    assert_one_line_error(invoke("footprint", "--model", value, "--tokens", "100"), "No such file or directory")


@pytest.mark.parametrize("cmd", [("replay",), ("compare", "--policy", "lru", "--policy", "fifo"),
                                 ("footprint", "--tokens", "100")])
def test_an_empty_model_is_refused(work, cmd):
    # an empty --model ran the default model on replay and compare
    assert_one_line_error(invoke(*cmd, "--model", "", "-q"), "--model '': empty")


def test_an_output_on_the_file_behind_stdin_or_stdout_is_refused(work):
    from helpers import fresh_run
    import subprocess
    import sys

    before = open("t.jsonl", "rb").read()
    with open("t.jsonl", "rb") as stdin:   # `pcs curve - --html t.jsonl < t.jsonl`: stdin is the output's file
        r = subprocess.run([sys.executable, "-m", "pcs", "curve", "-", "--html", "t.jsonl", "-q"], stdin=stdin,
                           capture_output=True, text=True, env=__import__("helpers").fresh_env())
    assert r.returncode == 2 and "is also an input file of this run (TRACE)" in r.stderr, r.stderr
    assert open("t.jsonl", "rb").read() == before
    with open("out.txt", "w") as stdout:   # `--html /dev/stdout > out.txt`: the page renamed over the JSON
        r = subprocess.run([sys.executable, "-m", "pcs", "replay", "t.jsonl", "--html", "/dev/stdout", "--format",
                            "json", "-q"], stdout=stdout, stderr=subprocess.PIPE, text=True,
                           env=__import__("helpers").fresh_env())
    assert r.returncode == 2 and "is the file standard output is redirected to" in r.stderr, r.stderr
    assert fresh_run(["-m", "pcs", "replay", "t.jsonl", "--html", "page.html", "-q"]).returncode == 0


@pytest.mark.parametrize("trace", ["t.jsonl", "sub/t.parquet"])
def test_a_sweep_folder_refuses_only_inputs_it_would_read_as_results(work, trace):
    # the results folder is read as its *.parquet and _requests/*.parquet files: a JSONL trace in it, or a Parquet
    # trace in a subfolder of it, is never read as a point and is no reason to refuse
    (work / "R" / "sub").mkdir(parents=True)
    shutil.copy("t.jsonl", "R/t.jsonl")
    shutil.copy("t.parquet", "R/sub/t.parquet")
    (work / "R" / "plan.toml").write_text(f'[fixed]\ntrace = "{trace}"\nmodel = "llama-3.1-8b"\n'
                                          'tier = {gpu = "500blocks"}\ntiming = "sequential"\n[axes]\ntp = [1]\n')
    r = invoke("sweep", "run", "R/plan.toml", "-o", "R", "--jobs", "1", "-q")
    assert r.exit_code == 0, (trace, r.output)
    assert len(list((work / "R").glob("*.parquet"))) == 1          # the one point
