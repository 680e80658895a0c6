"""A trace made by ``pcs trace synth`` (or converted from a lengths-only trace) carries the fact that its prefix
reuse is synthetic, in every output format, and every command that reads it says so (docs/traces-formats.md).

Members of the kind: synth to Mooncake JSONL, Bailian JSONL, Parquet and the token JSONL (--tokens-out); the
bundled samples; Azure CSV -> trace convert -> JSONL; trace transform of a synthetic trace; and the four
readers (replay, compare, curve, trace stats). A recorded trace (Mooncake excerpt) gets no note.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import SMALL_AZURE, SMALL_TRACE, assert_one_line_error, invoke
from pcs.trace import open_trace
from pcs.trace.hashids import MOONCAKE, SYNTH_REUSE, ReadState, read_hashid_jsonl

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ["sample_chat.jsonl", "sample_exact.jsonl", "sample_azure_conv.jsonl", "sample_tokens.jsonl",
           "sample_tokens_b16.jsonl"]


def _reuse_after_reading(path, **kw) -> str:
    t = open_trace(path, **kw)
    for _ in t.iter_batches():
        pass
    return t.reuse


def _notes(*args) -> list[str]:
    r = invoke(*args, "--format", "json", "-q")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout).get("notes") or []


def _synthetic(notes) -> bool:
    return any("prefix reuse is synthetic" in n for n in notes)


@pytest.mark.parametrize("name", SAMPLES)
def test_every_bundled_sample_is_marked(name):
    # every sample is a `pcs trace synth` output (traces/README.md): each of its lines says so
    lines = (ROOT / "traces" / name).read_text().splitlines()
    assert lines and all('"reuse": "synthetic"' in ln for ln in lines)
    bs = 16 if name == "sample_tokens_b16.jsonl" else None          # made with --block-size 16
    assert _reuse_after_reading(ROOT / "traces" / name, block_size=bs) == SYNTH_REUSE


@pytest.mark.parametrize("to", ["mooncake", "bailian", "parquet"])
def test_synth_output_in_every_format_is_flagged(tmp_path, to):
    out = tmp_path / ("s.parquet" if to == "parquet" else "s.jsonl")
    tok = tmp_path / "tok.jsonl"
    r = invoke("trace", "synth", out, "--to", to, "--requests", "20", "--length-scale", "0.02", "--block-size", "16",
               "--tokens-out", tok, "-q")
    assert r.exit_code == 0, r.output
    assert _reuse_after_reading(out, block_size=16) == SYNTH_REUSE
    assert _reuse_after_reading(tok, block_size=16) == SYNTH_REUSE
    assert _synthetic(_notes("replay", out, "--tier", "gpu=50blocks", "--block-size", "16"))


def test_replay_compare_curve_and_stats_note_the_default_sample():
    assert _synthetic(_notes("replay"))
    assert _synthetic(_notes("compare", "--tier", "gpu=1000blocks"))
    assert _synthetic(_notes("curve", "--points", "2"))
    st = invoke("trace", "stats", "--format", "json", "-q")
    assert json.loads(st.stdout)["reuse"] == SYNTH_REUSE
    # the tables too, as `note:` lines
    for args in (["replay"], ["compare", "--tier", "gpu=1000blocks"], ["curve", "--points", "2"], ["trace", "stats"]):
        out = invoke(*args, "-q").stdout
        assert "synthetic" in out.split("note:", 1)[1], args


def test_recorded_trace_has_no_note():
    assert not _synthetic(_notes("replay", SMALL_TRACE, "--tier", "gpu=5blocks"))
    assert not _synthetic(_notes("compare", SMALL_TRACE, "--tier", "gpu=5blocks"))
    assert not _synthetic(_notes("curve", SMALL_TRACE, "--points", "2"))
    assert _reuse_after_reading(SMALL_TRACE) == "recorded"


def test_flag_survives_convert_and_transform(tmp_path):
    conv = tmp_path / "az.jsonl"
    assert invoke("trace", "convert", SMALL_AZURE, conv, "-q").exit_code == 0      # lengths-only -> JSONL
    assert _synthetic(_notes("replay", conv, "--tier", "gpu=5blocks", "--block-size", "16"))  # Azure: 16-token ids
    tr = tmp_path / "fast.jsonl"
    assert invoke("trace", "transform", ROOT / "traces" / "sample_chat.jsonl", tr, "--speed", "2", "-q").exit_code == 0
    assert _reuse_after_reading(tr) == SYNTH_REUSE


def _mooncake_line(extra: str) -> str:
    # 600 tokens at 512-token blocks: ceil(600 / 512) = 2 ids
    return '{"timestamp": 0, "input_length": 600, "output_length": 1, ' + extra + '"hash_ids": [1, 2]}\n'


@pytest.mark.parametrize("fast", [True, False])
def test_reader_counts_marked_rows_on_both_paths(tmp_path, fast):
    p = tmp_path / "m.jsonl"
    # 3 rows: one unmarked, one "recorded", one "synthetic" -> 1 synthetic row
    p.write_text(_mooncake_line("") + _mooncake_line('"reuse": "recorded", ') + _mooncake_line('"reuse": "synthetic", '))
    state = ReadState()
    assert sum(len(b) for b in read_hashid_jsonl(p, "m.jsonl", MOONCAKE, None, state, fast=fast)) == 3
    assert state.synthetic_rows == 1


@pytest.mark.parametrize("value", ['"made up"', "true", "1"])
def test_bad_reuse_value_names_line_and_field(tmp_path, value):
    p = tmp_path / "bad.jsonl"
    p.write_text(_mooncake_line("") + _mooncake_line(f'"reuse": {value}, '))
    assert_one_line_error(invoke("trace", "stats", p), "bad.jsonl:2", "reuse")
    tok = tmp_path / "badtok.jsonl"
    tok.write_text('{"token_ids": [1, 2, 3], "reuse": ' + value + '}\n')
    assert_one_line_error(invoke("trace", "stats", tok), "badtok.jsonl:1", "reuse")


def test_fleet_replay_and_router_compare_note_it_too():
    assert _synthetic(_notes("replay", "--instances", "2"))
    assert _synthetic(_notes("compare", "--instances", "2", "--router", "round-robin", "--router", "prefix"))
    assert "synthetic" in invoke("replay", "--instances", "2", "-q").stdout


@pytest.mark.parametrize("first, fmt, reuse", [
    ('"reuse": "synthetic", ', None, SYNTH_REUSE),   # detected: the line detection read says synthetic
    ('"reuse": "recorded", ', None, "recorded"),     # detected: the key there, another value
    ("", None, "recorded"),                          # detected: no key in the first row (the second's not read)
    ('"reuse": "synthetic", ', "mooncake", SYNTH_REUSE),   # format given: no detection, the file's head read
])
def test_open_reads_the_first_row_once(tmp_path, monkeypatch, first, fmt, reuse):
    # open_trace reads a JSON-lines file's head once: format detection's first line is where Trace looks for the
    # "reuse" key (pcs/trace/api.py _detected, _first_row_reuse's first_line); before, a second read of the head.
    # With format= given there is no detection: one read, Trace's own. Either way the reuse is the first row's.
    from pcs.trace import api, open_trace

    p = tmp_path / "m.jsonl"
    p.write_text(_mooncake_line(first) + _mooncake_line('"reuse": "synthetic", '))
    heads = []
    real = api._head_lines
    monkeypatch.setattr(api, "_head_lines", lambda *a: heads.append(a[2]) or real(*a))
    trace = open_trace(p, format=fmt)
    assert trace.reuse == reuse and trace.format == "mooncake"
    assert heads == [1]                              # one head read of one line
