"""mend48b: last round's findings, each expectation worked out by hand from the documented rules.

1. A CSV header is read by one rule in every CSV reader pcs has (Azure, BurstGPT -- the lengths-only traces --
   and the measured-prefill CSV): a column given twice and a column it lacks are each refused at line 1, naming
   the column (one it does not know is read past with a note since mend48d: tests/cli/test_findings_m48d.py); a header column that is not UTF-8 is named too (it is a CSV header still,
   not "not JSON"); the columns the format's docs allow (BurstGPT's ``Session ID`` and ``Elapsed time``, Azure's
   ``NumImages``) keep working.
"""
from __future__ import annotations

import json

import pytest

from helpers import ROOT, assert_one_line_error, invoke, plan_refusal

AZ_ROW = "2023-11-16 18:15:46.6805900"
BG_EXPECTED = ("(expected Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type, optionally with "
               "'Session ID','Elapsed time')")
AZ_EXPECTED = ("; expected TIMESTAMP,ContextTokens,GeneratedTokens or TIMESTAMP,NumImages,ContextTokens,"
               "GeneratedTokens (the columns in any order)")


def _stats(tmp_path, data: bytes, *opts):
    p = tmp_path / "t.csv"
    p.write_bytes(data)
    return invoke("trace", "stats", p, "--format", "json", "-q", *opts), p


# 1. One header rule for every CSV reader.

@pytest.mark.parametrize("fmt", [(), ("--trace-format", "burstgpt")])
def test_a_burstgpt_column_given_twice_is_named_at_line_1(tmp_path, fmt):
    res, p = _stats(tmp_path, b"Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type,Model\n"
                              b"1,ChatGPT,10,5,15,Conversation log,GPT-4\n", *fmt)
    assert assert_one_line_error(res) == f"pcs: error: {p}:1: BurstGPT header gives column 'Model' twice {BG_EXPECTED}"


@pytest.mark.parametrize("fmt", [(), ("--trace-format", "burstgpt")])
def test_a_burstgpt_column_it_does_not_know_is_read_past(tmp_path, fmt):
    # mend48d: an unknown column is read past with a note (tests/cli/test_findings_m48d.py), as on main
    res, p = _stats(tmp_path, b"Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type,Region\n"
                              b"1,ChatGPT,10,5,15,Conversation log,eu\n", *fmt)
    assert res.exit_code == 0 and json.loads(res.stdout)["requests"] == 1, res.output
    # the columns the docs allow still read: release 3's two, in another order; two requests of one session,
    # 10 then 30 prompt tokens
    res, _ = _stats(tmp_path, b"Elapsed time,Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type,"
                              b"Session ID\n0.5,1,ChatGPT,10,5,15,Conversation log,s1\n"
                              b"0.5,2,ChatGPT,30,5,35,Conversation log,s1\n")
    assert res.exit_code == 0, res.output
    st = json.loads(res.stdout)
    assert (st["format"], st["requests"], st["prompt_tokens_max"]) == ("burstgpt", 2, 30)


def test_an_azure_column_that_differs_only_in_case_is_refused(tmp_path):
    # the 2025 column is optional, so a header with the three others and 'numimages' lacks nothing; a column
    # misspelt for one of the format's is refused at line 1 with its hint (mend48g: read past, it would drop the
    # images in silence; test_findings_m48g.py)
    res, p = _stats(tmp_path, f"TIMESTAMP,ContextTokens,GeneratedTokens,numimages\n{AZ_ROW},10,5,1\n".encode())
    assert assert_one_line_error(res).startswith(
        f"pcs: error: {p}:1: Azure header has an unknown column 'numimages' ('NumImages' differs only in case: "
        "column names are case-sensitive)")
    # spelt as the docs spell it, it reads
    res, _ = _stats(tmp_path, f"NumImages,TIMESTAMP,ContextTokens,GeneratedTokens\n2,{AZ_ROW},4808,10\n".encode())
    assert res.exit_code == 0, res.output
    st = json.loads(res.stdout)
    assert (st["format"], st["requests"], st["prompt_tokens_max"]) == ("azure", 1, 4808)


@pytest.mark.parametrize("fmt", [(), ("--trace-format", "azure"), ("--on-error", "skip")])
def test_an_azure_header_column_not_utf8_is_named_not_called_not_json(tmp_path, fmt):
    # 'Größe' in Latin-1: o-umlaut is byte 0xf6, the 43rd of the line (TIMESTAMP,ContextTokens,GeneratedTokens, = 40
    # bytes, then 'G', 'r'); the two bad bytes (0xf6, 0xdf) read as two U+FFFD
    res, p = _stats(tmp_path, f"TIMESTAMP,ContextTokens,GeneratedTokens,Gr\xf6\xdfe\n{AZ_ROW},10,5,1\n"
                    .encode("latin-1"), *fmt)
    assert assert_one_line_error(res) == (f"pcs: error: {p}:1: header column 4 ('Gr\\xf6\\xdfe') is not UTF-8 "
                                          "(byte 0xf6 at byte 43 of the line): CSV traces are UTF-8, re-encode the file")


PREFILL_COLUMNS = "(columns: tokens or prompt_tokens, new_tokens; seconds or prefill_s, time_s, s)"


@pytest.mark.parametrize("header, row, problem", [
    ("tokens,seconds,tokens", "100,1ms,200", "gives column 'tokens' twice"),
    ("tokens,prompt_tokens,seconds", "100,200,1ms", "gives tokens twice (columns 'tokens' and 'prompt_tokens')"),
])
def test_a_measured_prefill_header_names_the_column(tmp_path, header, row, problem):
    p = tmp_path / "m.csv"
    p.write_text(f"{header}\n{row}\n")
    res = invoke("envelope", "--restore-bytes", "2GB", "--restore-tokens", "8192", "--tokens", "8704",
                 "--prefill-csv", p)
    assert assert_one_line_error(res) == f"pcs: error: {p}:1: header {problem} {PREFILL_COLUMNS}"
    # one column of each by its other names still reads: (0, 0) is added, 100 tokens in 2 ms
    from pcs.compute import MeasuredPrefill

    p.write_text("prefill_s,new_tokens\n2ms,100\n")
    m = MeasuredPrefill.from_csv(p)
    assert (list(m.tokens), list(m.seconds)) == ([0.0, 100.0], [0.0, 0.002])


# 2. A re-block hint names the road its caller can take.

B16 = ROOT / "traces" / "sample_tokens_b16.jsonl"        # sample_tokens.jsonl's ids at 16-token blocks
# its line 1: 105 tokens in 7 ids = ceil(105 / 16); at 64 it would be ceil(105 / 64) = 2
B16_LINE1 = "field 'hash_ids': has 7 ids but ceil(105 / block size 64) = 2; was the trace recorded at another block size? "


@pytest.mark.parametrize("command", [["replay"], ["compare"], ["curve"], ["trace", "stats"]])
def test_the_command_line_hint_names_pcs_replay_the_one_command_that_re_blocks(command):
    # compare, curve and trace stats refuse --block-size 64 on the Parquet file at 16 too: only pcs replay re-blocks
    line = assert_one_line_error(invoke(*command, B16, "--block-size", "64"))
    assert line == (f"pcs: error: {B16}:1: {B16_LINE1}(--block-size 16 fits); to replay it re-blocked to 64-token "
                    "blocks, convert it to Parquet at --block-size 16 (trace convert: Parquet keeps the block size, "
                    "which JSONL does not), then pcs replay that with --block-size 64; elsewhere give --block-size 16")


def test_a_plans_hint_names_the_road_a_plan_can_take(tmp_path, monkeypatch):
    import shutil

    shutil.copy(B16, tmp_path / "b16.jsonl")
    msg = plan_refusal(tmp_path, 'kind = "replay"\n[fixed]\ntrace = "b16.jsonl"\ntiming = "sequential"\n'
                                 'block-size = 64\ntier = {gpu = "500blocks"}\n')
    assert msg.endswith(
        f"b16.jsonl:1: {B16_LINE1}(block-size = 16 fits); a sweep replays a trace at its recorded block size and "
        "cannot run this trace at 64-token blocks; outside the sweep, convert it to Parquet at block-size = 16 "
        "(pcs trace convert: Parquet keeps the block size, which JSONL does not), then pcs replay re-blocks that to "
        "block-size = 64 (pcs.trace.reblock.reblock in the API); to sweep it at its recorded size, write "
        "block-size = 16"), msg
    # the plan road it names, taken: block-size = 16 in the plan runs, at 16 (the hint names no road to 64 in a plan)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.toml").write_text('kind = "replay"\n[fixed]\ntrace = "b16.jsonl"\ntiming = "sequential"\n'
                                     'block-size = 16\ntier = {gpu = "500blocks"}\n')
    res = invoke("sweep", "run", "p.toml", "-o", "out", "-q")
    assert res.exit_code == 0, res.output
    import pyarrow.parquet as pq

    row = pq.read_table(next((tmp_path / "out").rglob("*.parquet"))).to_pylist()[0]
    assert json.loads(row["result_json"])["block_size"] == 16


# 3. A TOML date under a name its option lacks: the name is refused first, as every key's name is.

@pytest.mark.parametrize("text, line, refusal", [
    # tp takes one value: 'x' is no name of tp, so the table is refused (its shape), not the date inside it; a date shown bare, as the plan wrote it (mend48d)
    ('[fixed]\ntrace = "t.jsonl"\ntp = {x = 1979-05-27}\n', 4,
     "[fixed] 'tp': expected one value: a string or a number, got a table {\"x\": 1979-05-27}"),
    ('[fixed]\ntrace = "t.jsonl"\ntp.x = 1979-05-27\n', 4,
     "[fixed] 'tp': expected one value: a string or a number, got a table {\"x\": 1979-05-27}"),
    ('[fixed]\ntrace = "t.jsonl"\n[axes]\ntp = [{x = 07:32:00}]\n', 5,
     "[axes] 'tp': value 1 of the axis (one point's value): expected one value: a string or a number, got a table "
     "{\"x\": 07:32:00}"),
    # a range's keys are from, to and step or times: 'bogus' is none of them
    ('[fixed]\ntrace = "t.jsonl"\n[axes]\ntp = {from = 1, to = 2, bogus = 1979-05-27}\n', 5,
     "axis 'tp': a range is {from, to, step} or {from, to, times}, got {bogus, from, to}"),
])
def test_a_date_under_a_name_its_option_lacks_is_refused_by_the_name(tmp_path, text, line, refusal):
    (tmp_path / "t.jsonl").write_text((ROOT / "traces" / "sample_chat.jsonl").read_text())
    msg = plan_refusal(tmp_path, 'kind = "replay"\n' + text)
    assert msg == f"{tmp_path / 'p.toml'}:{line}: {refusal}", msg


# 4. Every refusal of a plan's value names the line that value is written on.

_T = '[fixed]\ntrace = "t.jsonl"\n'          # lines 2 and 3, after kind on line 1


@pytest.mark.parametrize("kind, text, line, words", [
    # an unknown tier policy in each form a plan writes it: a table's entry, a list's string, an axis's element
    ("replay", _T + 'tier = {gpu = "1GB"}\ntier-policy = {gpu = "p10"}\n', 5, "unknown eviction policy 'p10'"),
    ("replay", _T + 'tier = {gpu = "1GB", cpu = "2GB"}\ntier-policy = ["cpu=p10"]\n', 5,
     "unknown eviction policy 'p10'"),
    ("replay", _T + 'tier = {gpu = "1GB", cpu = "2GB"}\n[axes]\n"tier-policy.cpu" = ["lru", "p10"]\n', 6,
     "unknown eviction policy 'p10'"),
    ("compare", _T + 'tier = {gpu = "1GB", cpu = "2GB"}\ntier-policy = {cpu = "p10"}\n', 5,
     "unknown eviction policy 'p10'"),
    # a tier name the run refuses: the first not the GPU tier, a mistyped lower tier
    ("replay", _T + 'tier = {bogus = "1GB"}\n', 4, "the first tier is the GPU tier, named gpu"),
    ("replay", _T + 'tier = {gpu = "1GB"}\n"tier.cpux" = "2GB"\n', 5, "unknown lower tier 'cpux'"),
    # two options that do not go together: the line of the second, the one the message says to drop or add to
    ("compare", _T + 'tier = {gpu = "1GB"}\ntiers = ["gpu=1GB"]\n', 5, "give either tier (one tier list) or tiers"),
    ("curve", _T + 'capacities = "1GB"\npoints = 3\n', 5, "give capacities or points, not both"),
    ("curve", _T + 'dtype = "fp8"\n', 4, "dtype sets the KV dtype of the model's bytes; give model too"),
    ("replay", _T + 'instances = 2\n', 4, "instances: pcs sweep replays one instance"),
    # the API's refusals of a value: tp 3 does not divide llama-3.1-8b's 32 heads; a share no slru tier takes
    ("replay", _T + 'model = "llama-3.1-8b"\n[axes]\ntp = [1, 3]\n', 6, "tensor-parallel size 3 does not divide"),
    ("replay", _T + 'protected-share = 0.3\n', 4, "sizes the protected segment of slru tiers, and no tier uses slru"),
])
def test_a_plan_refusal_of_a_value_names_its_line(tmp_path, kind, text, line, words):
    (tmp_path / "t.jsonl").write_text((ROOT / "traces" / "sample_chat.jsonl").read_text())
    msg = plan_refusal(tmp_path, f'kind = "{kind}"\n' + text)
    assert msg.startswith(f"{tmp_path / 'p.toml'}:{line}: point "), msg
    assert words in msg, msg
