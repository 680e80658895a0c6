"""mend47e: a new user's findings (README only), each expectation worked out by hand from the documented rules.

1. No trace named is the bundled sample traces/sample_chat.jsonl (docs/cli.md, pcs.trace.DEFAULT_TRACE), so it takes
   every road the same file named takes: ``--block-size 16`` re-blocks its 512-token Mooncake ids
   (docs/traces-formats.md "Re-blocking"), in pcs replay, a fleet's refusal and a sweep plan's refusal alike.
2. A JSONL file's re-block hint names, in Python, the API's own road: pcs.replay has no ``block_size``; a trace
   opened at the size it was recorded at is re-blocked by pcs.trace.reblock.reblock, whose streams pcs.replay takes.
3. pcs report on a sweep point's result_json (no ``trace_file``: the sweep leaves it out, docs/sweep.md) reads the
   trace its ``replay_command`` names (absolute), and its note says why the trace is unchecked.
4. pcs.compare and pcs.curve carry the trace's caveats in ``notes`` as pcs.replay does, in the API's words
   (``on_error='skip'``), while the commands print theirs (``--on-error skip``).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import pcs
from helpers import ROOT, SMALL_AZURE, SMALL_TRACE, assert_one_line_error, invoke, plan_refusal, sweep_point_json
from pcs.errors import InputError, UserError

SAMPLE = ROOT / "traces" / "sample_chat.jsonl"
B16 = ROOT / "traces" / "sample_tokens_b16.jsonl"        # sample_tokens.jsonl's ids at 16-token blocks
TOKENS = ROOT / "traces" / "sample_tokens.jsonl"
LENGTHS_ONLY = "this trace records lengths only: its prefix reuse is synthetic"


# 1. The default trace re-blocks as the same file named.

def test_the_plan_of_re_blocking_reads_the_default_trace():
    from pcs.trace.reblock import plan_engine_block_size

    # the sample's first line: 20,195 tokens in 40 ids = ceil(20,195 / 512); at 16 it would be 1,263 ids
    assert plan_engine_block_size(None, None, 16) == 512
    assert plan_engine_block_size(None, None, 1024) == 512     # coarser: exact, from 512
    assert plan_engine_block_size(None, None, 512) is None     # the size it was recorded at


def _interval(*trace):
    res = invoke("replay", *trace, "--block-size", "16", "--tier", "gpu=2000blocks", "--timing", "sequential",
                 "--format", "json", "-q")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_replay_of_the_default_trace_at_16_is_the_interval_of_the_sample_named(monkeypatch):
    monkeypatch.chdir(ROOT)
    default, named = _interval(), _interval("traces/sample_chat.jsonl")
    assert (default["trace_block_size"], default["block_size"]) == (512, 16)
    lo, up = default["hit_ratio_interval"]
    assert lo <= up
    # only the name differs: the default is shown by its absolute path
    assert json.dumps(default).replace(str(SAMPLE), "traces/sample_chat.jsonl") == json.dumps(named)


def test_a_fleet_of_the_default_trace_at_16_is_refused_as_the_sample_named():
    line = assert_one_line_error(invoke("replay", "--block-size", "16", "--instances", "2", "--timing", "sequential"))
    assert line == ("pcs: error: --instances replays the trace at its recorded block size; re-blocking a block-hash "
                    "trace (--block-size) is for single-instance replays"), line


@pytest.mark.parametrize("kind", ["replay", "compare"])
def test_a_sweep_point_of_the_default_trace_at_16_is_refused_as_the_sample_named(tmp_path, kind):
    message = plan_refusal(tmp_path, f'kind = "{kind}"\n\n[fixed]\ntiming = "sequential"\nblock-size = 16\n')
    assert ("block-size = 16 is not the trace's recorded block size, 512 tokens; a sweep replays a trace at its "
            "recorded block size and cannot run it at another") in message, message


# 2. The API's re-block hint names the API's road, and the command line's stays its own.

def test_the_api_hint_names_open_trace_and_reblock():
    with pytest.raises(InputError) as err:
        list(pcs.open_trace(str(B16), block_size=64).iter_batches())
    # line 1: 105 tokens in 7 ids = ceil(105 / 16); at 64 it would be 2
    assert err.value.problem == (
        "has 7 ids but ceil(105 / block size 64) = 2; was the trace recorded at another block size? (block_size=16 "
        "fits); to replay it re-blocked to 64-token blocks, open it with pcs.open_trace(path, block_size=16) at the "
        "size it was recorded at and re-block that with pcs.trace.reblock.reblock(trace, block_size=64), which "
        "returns the streams to give pcs.replay (keyed exact at a multiple, lower and upper at a divisor: an "
        "interval's bounds); elsewhere give block_size=16")


def test_the_command_line_hint_is_unchanged():
    line = assert_one_line_error(invoke("replay", B16, "--block-size", "64"))
    assert line.endswith("(--block-size 16 fits); to replay it re-blocked to 64-token blocks, convert it to Parquet "
                         "at --block-size 16 (trace convert: Parquet keeps the block size, which JSONL does not), then "
                         "pcs replay that with --block-size 64; elsewhere give --block-size 16"), line


def test_the_api_road_works_and_equals_hashing_the_tokens():
    from pcs.trace.reblock import reblock

    streams = reblock(pcs.open_trace(str(B16), block_size=16), block_size=64)
    assert list(streams) == ["exact"]                  # 64 = 4 x 16: coarser, exact
    run = dict(tiers=["gpu=30blocks"], timing="sequential")
    via = pcs.replay(streams["exact"], **run).summary
    tokens = pcs.replay(pcs.open_trace(str(TOKENS), block_size=64), **run).summary
    assert (via.hit_tokens, via.prompt_tokens) == (tokens.hit_tokens, tokens.prompt_tokens)


@pytest.mark.parametrize("asked, road", [
    (64, "pcs.trace.reblock.reblock(trace, block_size) re-blocks a block-hash trace opened at its own size, for "
         "pcs.replay (exact at a multiple, an interval at a divisor); elsewhere give block_size=16"),
    (24, "a block-hash trace is re-blocked only by a whole factor of 16 (pcs.trace.reblock.reblock, for "
         "pcs.replay); give block_size=16"),
])
def test_a_parquet_asked_another_size_names_the_api_road(tmp_path, asked, road):
    out = tmp_path / "t.parquet"
    assert invoke("trace", "convert", B16, out, "--block-size", "16", "-q").exit_code == 0
    with pytest.raises(UserError) as err:
        pcs.open_trace(str(out), block_size=asked)
    assert road in str(err.value) and "pcs replay" not in str(err.value), str(err.value)
    line = assert_one_line_error(invoke("curve", out, "--block-size", str(asked)))
    assert "pcs replay" in line and "pcs.trace.reblock" not in line, line       # the command line's road


# 3. pcs report finds a sweep point's trace as the sweep did.

def test_report_of_a_sweep_point_reads_the_trace_its_replay_command_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = sweep_point_json(tmp_path)
    plans = tmp_path / "plans"
    assert "trace_file" not in json.loads(text)            # left out by design (docs/sweep.md)
    (tmp_path / "point.json").write_text(text)
    monkeypatch.chdir(plans)                               # the plan's folder: the point's "trace" is not found here
    res = invoke("report", "../point.json", "-o", "../page.html")
    assert res.exit_code == 0, res.output
    assert res.stderr.strip() == (
        f"pcs: note: the replay JSON has no trace_file (a pcs sweep point's result_json: the sweep leaves it out): "
        f"trace {plans / 't8.jsonl'}, as its replay_command names it, is read unchecked (no size or hash "
        "recorded)"), res.stderr


def test_a_replay_command_naming_no_trace_reads_the_bundled_sample():
    from pcs.cli.rerun import command_trace

    assert command_trace("pcs replay --tier gpu=500blocks --timing sequential") == str(SAMPLE)
    assert command_trace("pcs replay /data/t.jsonl --sort") == "/data/t.jsonl"
    with pytest.raises(UserError):
        command_trace("pcs curve /data/t.jsonl")


# 4. The API's compare and curve carry the trace's caveats, in the API's words.

def test_compare_and_curve_carry_the_synthetic_reuse_note():
    res = pcs.compare(str(SMALL_AZURE), policies=["lru", "fifo"], tiers=["gpu=300blocks"], timing="sequential")
    assert len(res.notes) == 1 and res.notes[0].startswith(LENGTHS_ONLY), res.notes
    assert "notes" not in res.to_dict()                   # the JSON is the command's, which gives its own
    cur = pcs.curve(str(SMALL_AZURE), points=3)
    assert len(cur.notes) == 1 and cur.notes[0].startswith(LENGTHS_ONLY), cur.notes
    assert "notes" not in cur.to_dict()


def _bad_line_trace(tmp_path) -> Path:
    p = tmp_path / "t.jsonl"
    p.write_text('{"timestamp": 0, "input_length": 1024, "output_length": 5, "hash_ids": [1, 2]}\nnot json\n'
                 '{"timestamp": 1, "input_length": 1024, "output_length": 5, "hash_ids": [1, 3]}\n', encoding="utf-8")
    return p


def test_the_skipped_lines_note_is_in_the_api_words(tmp_path):
    t = pcs.open_trace(str(_bad_line_trace(tmp_path)), on_error="skip")
    run = dict(tiers=["gpu=300blocks"], timing="sequential")
    # by hand: line 2 is not JSON, so one line was skipped, then named
    for notes in (pcs.replay(t, **run).summary.notes, pcs.compare(t, policies=["lru", "fifo"], **run).notes,
                  pcs.curve(t, points=2).notes):
        assert notes[-2] == "1 bad trace line was skipped (on_error='skip')", notes
        assert notes[-1].startswith(f"skipped {t.name}:2: invalid JSON"), notes
    res = invoke("compare", t.path, "--on-error", "skip", "--policy", "lru", "--policy", "fifo", "--tier",
                 "gpu=300blocks", "--timing", "sequential", "--format", "json", "-q")
    assert "1 bad trace line was skipped (--on-error skip)" in json.loads(res.stdout)["notes"]   # the command's
