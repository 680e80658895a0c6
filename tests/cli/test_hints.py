"""Hints name what this project offers: a missing optional package says how to install the extra from the clone
(never ``pip install 'pcs[...]'``: the PyPI package named pcs is another project), and a chat log or a KV-event
capture given where a trace is expected names the command that reads it."""
from __future__ import annotations

import builtins
import re
from pathlib import Path

import pytest

from helpers import assert_one_line_error, invoke
from pcs.extras import EXTRAS, install_hint, missing_extra

ROOT = Path(__file__).resolve().parents[2]
CHAT = ROOT / "traces" / "formats" / "openai_chat_4.jsonl"
EVENTS = ROOT / "traces" / "formats" / "vllm_kv_events_9.jsonl"


def test_the_extras_are_pyprojects():
    text = (ROOT / "pyproject.toml").read_text()
    block = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    declared = set(re.findall(r"^(\w+) = \[", block, flags=re.M))
    assert set(EXTRAS) == declared
    assert install_hint("ray") == "pip install -e '.[ray]' in the pcs clone"
    with pytest.raises(KeyError):
        install_hint("nonsense")


def test_no_hint_names_the_pypi_package():
    # every source, doc and help text: no `pcs[extra]` install spelling left
    files = list((ROOT / "pcs").rglob("*.py")) + list((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
    bad = [str(p) for p in files if p.name != "extras.py" and re.search(r"pip install '?pcs\[", p.read_text())]
    assert bad == []


@pytest.fixture()
def without(monkeypatch):
    """Make ``import NAME`` fail, as on a machine without the extra."""
    real = builtins.__import__

    def block(*names):
        def fake(name, *a, **k):
            if name.split(".")[0] in names:
                raise ImportError(name)
            return real(name, *a, **k)
        monkeypatch.setattr(builtins, "__import__", fake)
    return block


def test_missing_matplotlib_names_the_plot_extra(tmp_path, without):
    without("matplotlib")
    r = invoke("curve", "--points", "2", "--plot", tmp_path / "c.png", "-q")
    assert_one_line_error(r, "--plot", "'matplotlib'", "pip install -e '.[plot]'")


def test_missing_ray_names_the_ray_extra(tmp_path, without):
    without("ray")
    r = invoke("sweep", ROOT / "traces" / "sweep_sample.toml", "-o", tmp_path / "o", "--ray", "-q")
    assert r.exit_code == 2
    assert "pip install -e '.[ray]'" in r.stderr and "pcs[" not in r.stderr


def test_missing_msgpack_and_tokenizers(tmp_path, without):
    without("msgpack", "tokenizers")
    cap = tmp_path / "ev.bin"
    cap.write_bytes(b"\x93\xcb" + b"\x00" * 8 + b"\x90\x00")    # msgpack [0.0, [], 0]
    assert_one_line_error(invoke("trace", "events", cap), "'msgpack'", "pip install -e '.[events]'")
    r = invoke("trace", "from-chat", CHAT, tmp_path / "o.jsonl", "--tokenizer",
               ROOT / "traces" / "formats" / "tiny_wordlevel_tokenizer.json")
    assert_one_line_error(r, "'tokenizers'", "pip install -e '.[chat]'")
    assert missing_extra("x", "jinja2", "chat") == "x needs the 'jinja2' package: pip install -e '.[chat]' in the pcs clone"


@pytest.mark.parametrize("args", [["trace", "stats"], ["replay"], ["curve"], ["compare"]])
def test_chat_log_and_events_point_to_their_commands(args, tmp_path):
    line = assert_one_line_error(invoke(*args, CHAT), "chat log", f"pcs trace from-chat {CHAT}")
    assert "--trace-format" not in line
    line = assert_one_line_error(invoke(*args, EVENTS), "KV-cache events", f"pcs trace events {EVENTS}")
    assert "--trace-format" not in line
    arr = tmp_path / "arr.jsonl"           # the array encoding of a batch: [ts, events, rank]
    arr.write_text('[1.0, [["AllBlocksCleared"]], 0]\n')
    assert_one_line_error(invoke(*args, arr), "KV-cache events", "pcs trace events")
    cap = tmp_path / "ev.bin"
    cap.write_bytes(b"\x93\xcb" + b"\x00" * 8 + b"\x90\x00")
    assert_one_line_error(invoke(*args, cap), "msgpack", "pcs trace events")


def test_a_real_trace_is_not_mistaken(tmp_path):
    assert invoke("trace", "stats", ROOT / "traces" / "formats" / "mooncake_conv_8.jsonl", "-q").exit_code == 0
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"foo": 1}\n')          # unknown shape: still the --trace-format hint
    assert_one_line_error(invoke("trace", "stats", bad), "--trace-format")
