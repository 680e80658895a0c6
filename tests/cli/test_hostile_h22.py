"""A hostile tester's findings on main 1e166e3, fixed: each kind's right values, worked out by hand."""
from __future__ import annotations

import os

import pytest

from helpers import assert_one_line_error, invoke
from test_hostile_files import CHAT, T, TOKENIZER, work  # noqa: F401 - work: the fixture (cwd = tmp_path)


# -- F1: a settings input that is a FIFO blocked open() until a writer came: refused as not a regular file --------

FIFO_INPUTS = [
    ["footprint", "--model-config", "fifo.json", "--tokens", "10"],
    ["footprint", "--model", "fifo.json", "--tokens", "10"],
    ["deploy", "--model-config", "fifo.json"],
    ["envelope", "--model-config", "fifo.json", "--tokens", "100", "--restore-tokens", "50", "--bandwidth", "50GB/s"],
    ["envelope", "--model", "llama-3.1-8b", "--tokens", "100", "--restore-tokens", "50", "--bandwidth", "50GB/s",
     "--prefill-csv", "fifo.json"],
    ["replay", str(T), "-q", "--hardware-file", "fifo.json"],
    ["budget", "--workloads", "fifo.json"],
    ["sweep", "run", "fifo.json", "--out", "o"],
    ["report", "fifo.json", "-o", "p.html"],
    ["trace", "from-chat", str(CHAT), "o.jsonl", "--tokenizer", "fifo.json"],
]


@pytest.mark.parametrize("args", FIFO_INPUTS, ids=lambda a: " ".join(a[:3]))
def test_a_fifo_settings_input_is_refused_not_waited_on(work, args):
    os.mkfifo("fifo.json")
    r = invoke(*args)
    if args[0] == "trace":   # the tokenizers extra may be missing: then that error comes first
        pytest.importorskip("tokenizers")
    assert_one_line_error(r, "fifo.json: not a regular file")


# -- F5: a reserve given names itself, not vLLM's profiled default ---------------------------------------------

def test_a_given_kv_reserve_is_the_reserve_source(work):
    """2.9GB = 2,900,000,000 B: "2.90 GB per GPU (--kv-reserve)" in the note and the JSON; without it, the
    5 GB default names vLLM's profiled memory."""
    import json

    r = invoke("deploy", "--model", "llama-3.1-8b", "--kv-reserve", "2.9GB", "--format", "json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert (d["reserve_bytes_per_gpu"], d["reserve_source"]) == (2_900_000_000, "2.90 GB per GPU (--kv-reserve)")
    r = invoke("deploy", "--model", "llama-3.1-8b", "--kv-reserve", "2.9GB")
    assert "note: reserve: 2.90 GB per GPU (--kv-reserve)" in r.output and "profiled" not in r.output
    d = json.loads(invoke("deploy", "--model", "llama-3.1-8b", "--format", "json").stdout)
    assert d["reserve_source"].startswith("5 GB per GPU: vLLM's profiled")


# -- F10: the manager on a model without hybrid groups is the same run, with a note -----------------------------

@pytest.mark.parametrize("manager", ["vllm", "sglang", "disabled"])
def test_the_hybrid_manager_on_a_full_attention_model_is_a_noop_with_a_note(work, manager):
    """llama-2-70b has one full-attention group: every manager replays it alike, so a sweep may cross models with
    this axis. The JSON equals the run without the option but for one note saying so."""
    import json

    args = ("replay", T, "--model", "llama-2-70b", "--timing", "sequential", "--format", "json", "-q")
    base = json.loads(invoke(*args).stdout)
    r = invoke(*args, "--hybrid-kv-cache-manager", manager)
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    note = (f"hybrid KV cache manager '{manager}': no effect, llama-2-70b has no hybrid cache groups "
            "(one full-attention group, replayed alike by every manager)")
    notes = got.pop("notes")
    assert note in notes and [n for n in notes if n != note] == base.pop("notes")
    assert got == base
    # the manager's own options stay refused where they cannot apply
    r = invoke(*args, "--hybrid-kv-cache-manager", manager, "--mamba-cache-mode", "align")
    assert_one_line_error(r, "--mamba-cache-mode applies to hybrid models")
