"""Every table a command prints fits 100 columns: its title, its header, its rows (notes wrap in the terminal and
are not held to it). ``pcs curve``'s title was 123-161 columns (the counts and the model in it) and ``pcs
envelope``'s 146-354 (every input's source); each now names what the table is and moves the rest to its first
note, as the lens title did (tests/report/test_lens_labels.py).

The tables are caught where they are made (every ``render_table`` of pcs.report), over one typical run of each
command. A few tables were wider before this check and are listed in :data:`KNOWN_WIDE` (by their first header):
a new table, or a listed one grown wider, fails.
"""
from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path

import pytest

import pcs.report
import pcs.report.table as table_mod
from tests.helpers import all_commands, invoke

ROOT = Path(__file__).resolve().parents[2]
TRACE = "traces/sample_chat.jsonl"
WIDTH = 100

#: tables wider than 100 columns before this check, by first header: their widest line on these runs. Left as they
#: are (a number table read across a row: the footprint's components, a budget's workloads; a list of presets and
#: policies with prose columns; the fleet's first table, whose title is the replay header line). Review 48k (K2) headed
#: the footprint's layout columns ``layout``, not ``dtype``: one column wider, the by-layout table keyed ``layout``.
KNOWN_WIDE = {"workload": 126, "component": 125, "layout": 101, "name": 195, "policy": 346, "admission": 223,
              "fleet": 197}


def _runs() -> dict[str, list[list[str]]]:
    """Each command's arguments, run in a folder holding ``traces`` (the repository's) and the files written."""
    Path("plan.toml").write_text(f'kind = "curve"\n[fixed]\ntrace = "{TRACE}"\n[axes]\npoints = [4, 6]\n')
    return {
        "budget": [["--workload", "A:30GB:1000GB/s", "--workload", "B:10GB:500GB/s", "--capacity-have", "80GB",
                    "--bandwidth-have", "2000GB/s"]],
        "compare": [[TRACE, "--policy", "lru", "--policy", "fifo"],
                    [TRACE, "--policy", "lru", "--curve-capacities", "100blocks,1000blocks"]],
        "curve": [[TRACE, "--capacities", "10blocks,100blocks"],
                  [TRACE, "--capacities", "10blocks,100blocks", "--model", "llama-3.1-8b"],
                  [TRACE, "--points", "5", "--sample-rate", "0.5", "--model", "deepseek-v3"]],
        "deploy": [["--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "8", "--request-tokens", "32768"]],
        "envelope": [["--restore-tokens", "8192", "--tokens", "8704", "--model", "llama-3.1-70b", "--gpu",
                      "h100-sxm", "--tp", "4", "--overhead", "1ms", "--bandwidth", "50GB/s", "--overlap", "2ms"],
                     ["--restore-bytes", "1GB", "--full-prefill", "100ms", "--remaining-compute", "30ms",
                      "--overhead", "5ms", "--bandwidth", "10GB/s", "--bandwidth", "20GB/s"],
                     ["--tokens", "100000", "--model", "qwen3-next-80b-a3b", "--bandwidth", "50GB/s"]],
        "footprint": [["--model", "gemma-3-27b", "--tokens", "32768"]],
        "hardware": [[]], "models": [[]], "policies": [[]],
        "replay": [[], [TRACE, "--dtype", "int8_per_token_head"], [TRACE, "--instances", "2"]],
        "report": [],
        "sweep run": [["plan.toml", "-o", "out", "--jobs", "1"]],
        "sweep summarize": [["out"]],
        "trace convert": [[TRACE, "t.parquet"]],
        "trace events": [["traces/formats/vllm_kv_events_9.jsonl", "--at", "103.2"]],
        "trace from-chat": [["traces/formats/openai_chat_4.jsonl", "chat.jsonl", "--tokenizer",
                             "traces/formats/tiny_wordlevel_tokenizer.json"]],
        "trace stats": [[TRACE]],
        "trace synth": [["s.jsonl", "--requests", "50", "--seed", "7"]],
        "trace transform": [[TRACE, "f.jsonl", "--speed", "2"]],
    }


@pytest.fixture
def tables(monkeypatch) -> list[str]:
    """Every table rendered from now on (each module's render_table replaced by a recorder)."""
    made: list[str] = []
    real = table_mod.render_table

    def record(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    for info in pkgutil.iter_modules(pcs.report.__path__):
        module = importlib.import_module(f"pcs.report.{info.name}")
        if getattr(module, "render_table", None) is real:
            monkeypatch.setattr(module, "render_table", record)
    return made


def test_every_command_s_tables_fit_100_columns(tmp_path, monkeypatch, tables):
    monkeypatch.chdir(tmp_path)     # the bundled traces and the files written by short names, as the README runs them
    (tmp_path / "traces").symlink_to(ROOT / "traces")
    runs = _runs()
    assert sorted(runs) == sorted(" ".join(p) for p, _ in all_commands())   # every command, none forgotten
    widest: dict[str, int] = {}
    for command, arg_lists in runs.items():
        for args in arg_lists:
            quiet = [] if command in ("hardware", "models", "policies") else ["--quiet"]
            r = invoke(*command.split(), *args, *quiet)
            assert r.exit_code == 0, (command, args, r.output[-400:])
    assert tables
    for text in tables:
        lines = [ln for ln in text.split("\n") if not ln.startswith("note: ")]
        rule = next(i for i, ln in enumerate(lines) if ln and set(ln) <= set("- "))   # the header's underline
        first = lines[rule - 1].split("  ")[0]
        widest[first] = max(widest.get(first, 0), max(map(len, lines)))
    over = {k: w for k, w in widest.items() if w > WIDTH and w > KNOWN_WIDE.get(k, WIDTH)}
    assert not over, over


@pytest.mark.parametrize("args", [
    ["curve", TRACE, "--capacities", "10blocks,100blocks", "--model", "llama-3.1-8b"],
    ["envelope", "--restore-tokens", "8192", "--tokens", "8704", "--model", "llama-3.1-70b", "--gpu", "h100-sxm",
     "--tp", "4", "--overhead", "1ms", "--bandwidth", "50GB/s", "--overlap", "2ms"],
])
def test_the_curve_and_envelope_titles_fit_and_their_first_note_keeps_the_rest(monkeypatch, args):
    monkeypatch.chdir(ROOT)
    r = invoke(*args, "--quiet")
    assert r.exit_code == 0, r.output
    lines = r.stdout.split("\n")
    table = lines[:lines.index(next(ln for ln in lines if ln.startswith("note: ")))]
    assert max(map(len, table)) <= WIDTH, table
    first_note = next(ln for ln in lines if ln.startswith("note: "))
    if args[0] == "curve":      # the counts and the model, as the title held them
        assert table[0] == "Hit ratio by capacity: traces/sample_chat.jsonl"
        assert first_note == ("note: 1,700 requests, 42,553 block accesses, 40,856 cacheable, block 512 tokens; "
                              "llama-3.1-8b 67.11 MB/block reserved")
    else:                       # each input's source and the margin: 670.87 - 42.24 - 1.00 = 627.63 ms
        assert table[0] == "restore 671.09 MB per GPU; full prefill 670.87 ms; remaining 42.24 ms; overhead 1.00 ms"
        assert first_note.startswith("note: restore 671.09 MB of bf16 KV in 16-token blocks per GPU (TP 4: 2.68 GB")
        assert first_note.endswith("; overhead 1.00 ms; margin T_full - T_remaining - T_overhead = 627.63 ms")


def test_the_curve_title_cuts_a_long_trace_path_and_the_json_keeps_it(tmp_path):
    """A trace path of 135 characters: the title keeps ``...`` and the path's last whole components in 100
    columns; the JSON names the whole path."""
    folder = tmp_path / ("a" * 60) / ("b" * 50)
    folder.mkdir(parents=True)
    trace = folder / "trace.jsonl"
    trace.symlink_to(ROOT / TRACE)
    head = "Hit ratio by capacity: "                                       # 23 columns
    r = invoke("curve", trace, "--capacities", "10blocks,100blocks", "--quiet")
    assert r.exit_code == 0, r.output
    title = r.stdout.split("\n")[0]
    # 77 columns for the path: '...' then its last 74 characters cut back to a '/': the 50 b's and the name (62)
    assert title == head + ".../" + "b" * 50 + "/trace.jsonl" and len(title) == 23 + 3 + 63 <= WIDTH
    j = invoke("curve", trace, "--capacities", "10blocks,100blocks", "--quiet", "--format", "json")
    assert json.loads(j.stdout)["trace"] == str(trace)
