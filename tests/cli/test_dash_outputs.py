"""``-`` as an output, one rule for every output option: a file output says pcs writes files and
names what works instead (``/dev/stdout`` into a pipe; ``--requests-out`` a name ending .parquet or .csv, since its
suffix picks the format); a folder output (``--plot``, ``pcs sweep run -o``) is refused, never made into a folder
named ``-`` (pcs.outfile.check_outputs, refuse_dash_folder)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from helpers import ROOT, assert_one_line_error, invoke

T = ROOT / "traces" / "sample_chat.jsonl"
FORMATS = ROOT / "traces" / "formats"
FILE = "pcs writes this output to a file, not to stdout; give a file name, or /dev/stdout to stream it into a pipe"


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("args,option", [
    (["replay", T, "-q", "--html", "-"], "--html"),
    (["compare", T, "-q", "--html", "-"], "--html"),
    (["curve", T, "-q", "--capacities", "100blocks", "--html", "-"], "--html"),
    (["footprint", "--model", "llama-3.1-8b", "--tokens", "1000", "-q", "--html", "-"], "--html"),
    (["trace", "convert", T, "-"], "OUT"),
    (["trace", "synth", "-", "--requests", "3"], "OUT"),
    (["trace", "synth", "s.jsonl", "--requests", "3", "--tokens-out", "-"], "--tokens-out"),
    (["trace", "transform", T, "-", "--speed", "2"], "OUT"),
    (["trace", "from-chat", FORMATS / "openai_chat_4.jsonl", "-", "--tokenizer",
      FORMATS / "tiny_wordlevel_tokenizer.json"], "OUT"),
])
def test_dash_as_a_file_output_names_dev_stdout(work, args, option):
    assert_one_line_error(invoke(*args), f"{option} -: {FILE}")
    assert list(work.iterdir()) == []


def test_dash_as_requests_out_names_the_suffixes(work):
    assert_one_line_error(invoke("replay", T, "-q", "--requests-out", "-"),
                          "--requests-out -: pcs writes this output to a file, not to stdout; give a file name "
                          "ending .parquet or .csv")


@pytest.mark.parametrize("args,option,what", [
    (["replay", T, "-q", "--plot", "-"], "--plot", "figures"),
    (["curve", T, "-q", "--capacities", "100blocks", "--plot", "-"], "--plot", "figures"),  # no suffix: a folder
    (["sweep", "run", ROOT / "traces" / "sweep_sample.toml", "-o", "-"], "-o", "results"),
])
def test_dash_as_a_folder_output_is_refused_not_made(work, args, option, what):
    assert_one_line_error(invoke(*args), f"{option} -: names a folder of {what}, not stdout; give a folder name")
    assert list(work.iterdir()) == []


def test_dev_stdout_streams_a_file_output_into_a_pipe(tmp_path):
    """What the message offers works: 3 synthetic requests written to /dev/stdout (a pipe here) are 3 JSONL lines
    (beside synth's own "wrote 3 requests ..." line on the same stdout)."""
    r = subprocess.run([sys.executable, "-m", "pcs", "trace", "synth", "/dev/stdout", "--requests", "3", "-q"],
                       capture_output=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.decode().splitlines()
    assert len([ln for ln in lines if ln.startswith('{"timestamp": ')]) == 3
    assert lines[-1].startswith("wrote 3 requests") and lines[-1].endswith("to /dev/stdout")
