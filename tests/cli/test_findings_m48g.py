"""mend48g: review48p's findings on mend48d/mend48e, each expectation worked out by hand from the documented rules.

F1. A misspelt column of a CSV pcs reads (one that differs from a column of its format only in case, spacing or
    punctuation, or whose did-you-mean names one) is refused at line 1 with that hint, as main did: read past, a
    misspelt optional column (BurstGPT ``Session ID``) silently turned its meaning off (every hit ratio 0). A name
    that matches nothing the format knows (``''``, ``Unnamed: 0``, ``std``, ``Failed``) is read past with a note.
F1b. That note reaches every place the trace's other notes reach: trace stats' table (under -q too) and JSON
    (``header_note``), convert's and synth --azure-csv's summary.
F2. pcs budget's per-second operands follow the exact-digits rule of the product.
F3. --prefill-csv's misspelt time column is named with its did-you-mean (``second`` -> ``seconds``).
F4. Two empty header names (a pandas index column and a trailing comma) are no column twice: both read past.
F5. A list in one entry of an ``[axes]`` value is advised the form ``[axes]`` takes: one axis per tier key.
"""
from __future__ import annotations

import json

import pytest

from helpers import ROOT, assert_one_line_error, invoke, plan_refusal

TRACE = ROOT / "traces" / "sample_chat.jsonl"
BG_TAIL = "Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type"
BG_ROWS = ("5,s1,2.1,ChatGPT,40,10,50,Conversation log\n"
           "9,s1,1.0,ChatGPT,80,10,90,Conversation log\n")
BG_EXPECTED = ("(expected Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type, optionally with "
               "'Session ID','Elapsed time')")
PREFILL_COLUMNS = "(columns: tokens or prompt_tokens, new_tokens; seconds or prefill_s, time_s, s)"
EMPTY = "'' (an empty name: a pandas index column or a trailing comma)"


CASED = "'Session ID' differs only in case: column names are case-sensitive"


@pytest.mark.parametrize("name, hint", [("SessionID", "did you mean 'Session ID'?"), ("Session Id", CASED),
                                        ("session id", CASED), ("Session_ID", "did you mean 'Session ID'?"),
                                        ("SessionId", "did you mean 'Session ID'?")])
def test_a_misspelt_burstgpt_session_column_is_refused_at_line_1_with_its_hint(tmp_path, name, hint):
    p = tmp_path / "b.csv"
    p.write_text(f"Timestamp,{name},{BG_TAIL}\n{BG_ROWS}")
    for args in (("replay", p, "--timing", "sequential"), ("trace", "convert", p, tmp_path / "c.parquet"),
                 ("trace", "stats", p)):
        res = invoke(*args)
        assert assert_one_line_error(res) == (
            f"pcs: error: {p}:1: BurstGPT header has an unknown column '{name}' ({hint}) "
            f"{BG_EXPECTED}")


def test_a_case_only_misspelt_azure_column_says_names_are_case_sensitive(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text("TIMESTAMP,ContextTokens,GeneratedTokens,numimages\n2023-11-16 18:17:03.9799600,4808,10,1\n")
    res = invoke("trace", "stats", p)
    assert assert_one_line_error(res).startswith(
        f"pcs: error: {p}:1: Azure header has an unknown column 'numimages' ('NumImages' differs only in case: "
        "column names are case-sensitive); expected ")


@pytest.mark.parametrize("header, column, meant", [
    ("tokens,second", "second", "'seconds'"),             # F3
    ("tokens,time_ms", "time_ms", "'time_s'"),
    # difflib's ratio: new_tokens 18/19, tokens 10/15 (>= 0.6, CLOSE_CUTOFF), prompt_tokens 12/22 (below)
    ("tokens,seconds,new_token", "new_token", "one of: 'new_tokens', 'tokens'"),
])
def test_a_misspelt_prefill_csv_column_is_named_with_its_did_you_mean(tmp_path, header, column, meant):
    p = tmp_path / "m.csv"
    p.write_text(f"{header}\n512,0.01,1\n".replace(",1\n", ",1\n" if header.count(",") == 2 else "\n"))
    res = invoke("envelope", "--restore-bytes", "2GB", "--restore-tokens", "8192", "--tokens", "8704",
                 "--prefill-csv", p, "--bandwidth", "10GB/s")
    assert assert_one_line_error(res) == (
        f"pcs: error: {p}:1: header has an unknown column '{column}' (did you mean {meant}?) {PREFILL_COLUMNS}")


def _burstgpt_with_failed(tmp_path):
    p = tmp_path / "b.csv"
    p.write_text(f"Timestamp,Session ID,{BG_TAIL},Failed\n" + BG_ROWS.replace("log\n", "log,0\n"))
    note = (f"{p}:1: column 'Failed' read past: not a column pcs reads (its columns: Timestamp, Model, Request "
            "tokens, Response tokens, Total tokens, Log Type, Session ID, Elapsed time)")
    return p, note


def test_trace_stats_carries_the_read_past_note_in_its_table_under_q_and_in_its_json(tmp_path):
    p, note = _burstgpt_with_failed(tmp_path)
    res = invoke("trace", "stats", p, "-q")
    assert res.exit_code == 0, res.output
    assert f"note: {note}" in res.stdout.splitlines()
    res = invoke("trace", "stats", p, "--format", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["header_note"] == note and res.stderr == ""


def test_trace_convert_says_which_column_it_read_past(tmp_path):
    p, note = _burstgpt_with_failed(tmp_path)
    for quiet in ((), ("-q",)):
        res = invoke("trace", "convert", p, tmp_path / "c.parquet", *quiet)
        assert res.exit_code == 0, res.output
        assert f"note: {note}" in res.stdout.splitlines()
    res = invoke("trace", "convert", p, tmp_path / "c.parquet", "--format", "json", "-q")
    assert json.loads(res.stdout)["header_note"] == note


def test_trace_synth_says_which_column_of_azure_csv_it_read_past(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text("TIMESTAMP,ContextTokens,GeneratedTokens,Failed\n2023-11-16 18:17:03.9799600,4808,10,0\n")
    res = invoke("trace", "synth", tmp_path / "s.jsonl", "--azure-csv", p, "-q")
    assert res.exit_code == 0, res.output
    assert (f"note: {p}:1: column 'Failed' read past: not a column pcs reads (its columns: TIMESTAMP, ContextTokens, "
            "GeneratedTokens, NumImages)") in res.stdout.splitlines()


def test_an_index_column_and_a_trailing_comma_are_both_read_past_with_one_note(tmp_path):
    # F4: the points (0, 0) (added), (512, 0.01 s), (1024, 0.03 s): 8704 tokens extrapolate the last slope,
    # 0.02 s / 512 tokens: 0.03 + 7680 / 512 x 0.02 = 0.33 s
    p = tmp_path / "m.csv"
    p.write_text(",tokens,seconds,\n0,512,0.01,\n1,1024,0.03,\n")
    res = invoke("envelope", "--restore-bytes", "2GB", "--restore-tokens", "8192", "--tokens", "8704",
                 "--prefill-csv", p, "--bandwidth", "10GB/s", "--format", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["full_prefill_s"] == pytest.approx(0.33)
    assert res.stderr.strip() == (
        f"pcs: note: {p}:1: column {EMPTY} read past: not a column pcs reads (its columns: tokens, prompt_tokens, "
        "new_tokens, seconds, prefill_s, time_s, s)")
    b = tmp_path / "b.csv"
    b.write_text(f",Timestamp,Session ID,{BG_TAIL},\n"
                 + "".join(f"{i},{row}," + "\n" for i, row in enumerate(BG_ROWS.splitlines())))
    res = invoke("trace", "stats", b, "--format", "json")
    assert res.exit_code == 0, res.output
    st = json.loads(res.stdout)
    assert (st["requests"], st["prompt_tokens_total"]) == (2, 120)     # 40 + 80 tokens
    assert st["header_note"].startswith(f"{b}:1: column {EMPTY} read past")


def test_budget_restore_rate_operand_keeps_its_digits():
    # 0.333333333333/s x 1 GB = 333,333,333.333 B/s: 333.333333 MB/s to the byte (mend48e's exact())
    res = invoke("budget", "--restores-per-s", "0.333333333333", "--restore-size", "1GB", "--transfer-size",
                 "100MB", "--link-bandwidth", "3GB/s")
    assert res.exit_code == 0, res.output
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("average bandwidth"))
    assert line.split("  ")[0] == "average bandwidth: 0.333333333333/s x 1.00 GB"
    assert line.split()[-2:] == ["333.333333", "MB/s"]


PLAN_HEAD = ('kind = "replay"\n[fixed]\ntrace = "{trace}"\nmodel = "llama-3.1-8b"\ntp = 1\n'
             'tier = {{gpu = "500blocks", cpu = "1GB", ssd = "2GB"}}\n')


def test_a_list_in_an_axis_entry_is_advised_one_axis_per_tier_which_axes_takes(tmp_path):
    from pcs.sweep.api import prepare

    msg = plan_refusal(tmp_path, PLAN_HEAD.format(trace=TRACE) + '[axes]\n"link.cpu" = ["25GB/s", "1GB/s,ssd=2GB/s"]\n')
    assert msg == (f"{tmp_path / 'p.toml'}:8: [axes] 'link.cpu[1]': each entry of link is one tier's; in [axes] give "
                   'each tier its own axis: "link.cpu" = ["1GB/s", ...] and "link.ssd" = ["2GB/s", ...]')
    # the advice followed: two axes, 2 x 1 points
    (tmp_path / "q.toml").write_text(PLAN_HEAD.format(trace=TRACE)
                                     + '[axes]\n"link.cpu" = ["25GB/s", "1GB/s"]\n"link.ssd" = ["2GB/s"]\n')
    assert len(prepare(tmp_path / "q.toml", tmp_path / "out").plan.points) == 2
