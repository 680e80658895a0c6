"""mend48d: review48h's findings on mend48a/mend48b, each expectation worked out by hand from the documented rules.

1. A tier's name meets the one rule of tier names (docs/replay.md "Tiers": no character a message shows as its
   escape, none of ``= , +``, no space) before any other rule of a tier, on every road (``--tier``, compare's
   ``--tiers``, a plan's ``tier``), in that rule's one wording -- where a byte that is not UTF-8 ended in a traceback
   and a hidden character or a space got "unknown lower tier" with a ``--link`` hint the name rule then refused.
2. A list written into one entry of a sweep plan's ``tier``, ``link``, ``tier-policy`` or ``admit`` is refused at
   the line it is written on, in the plan's words (one key per tier, one item each), where it lost its line and got
   the command line's advice ("the option repeats: --link ...").
3. An unknown column in a CSV pcs reads (a measured-prefill CSV, BurstGPT, Azure: a pandas index, a trailing
   comma, a column of its own) is read past with a note naming it (stderr on the command line, ``notes`` in the
   API), with a hint when it is close to a known column; a column given twice or one missing is still refused.
4. A user's text in a message by the one escaping rule (shown_repr: a byte not UTF-8 as ``\\xff``).
5. The API folds the case of ``links=`` and ``tier_policies=`` keys, as ``tiers=`` and the command line do.
6. compare's ``--tiers`` speaks its own words: a ``+`` or a space between two tiers of one list is refused as a list
   joined the wrong way (``--tiers gpu=1GB,cpu=2GB``); a space between two ``--tier`` entries is a list too.
7. A TOML date under a name a ``tier.NAME`` option lacks gets that name's refusal, the date shown bare.
"""
from __future__ import annotations

import pytest

from helpers import ROOT, assert_one_line_error, fresh_run, invoke, plan_refusal

TRACE = ROOT / "traces" / "sample_chat.jsonl"
KNOWN = "known: cpu, host, dram, ssd, nvme, disk, remote, rdma"
TIER_EXAMPLE = "e.g. gpu=400GB, gpu=5000blocks or gpu=auto"
ESCAPE = "which a message shows as its escape"


def test_a_lower_tier_name_holding_a_byte_not_utf8_is_the_name_rules_refusal_not_a_traceback():
    r = fresh_run(["-m", "pcs", "replay", str(TRACE), "--tier", "gpu=100blocks", "--tier", "c\udcffpu=1GB"])
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[-1] == (
        r"pcs: error: --tier 'c\xffpu=1GB': bad tier name 'c\xffpu' in 'c\xffpu=1GB': it holds '\xff', "
        f"{ESCAPE}; {TIER_EXAMPLE}")


@pytest.mark.parametrize("text, name, problem", [
    ("c pu=2GB", "c pu", "it holds a space, ' ' (U+0020), which separates tier entries in what pcs writes (pcs "
                         "compare's variant lru gpu=400GB cpu=2TB)"),
    ("c\u202epu=1GB", "c\\u202epu", f"it holds '\\u202e', {ESCAPE}"),
])
def test_a_lower_tier_name_close_to_a_known_one_meets_the_name_rule_first(text, name, problem):
    # was "unknown lower tier ...; did you mean 'cpu'? ... --link c pu=25GB/s", a link the name rule refuses
    shown = f"'{text}'" if "\u202e" not in text else "'c\\u202epu=1GB'"
    lead = "c pu=2GB" if " " in text else shown
    res = invoke("replay", TRACE, "--tier", "gpu=1GB", "--tier", text)
    assert assert_one_line_error(res) == (
        f"pcs: error: --tier {lead}: bad tier name '{name}' in {shown}: {problem}; {TIER_EXAMPLE}")


def test_a_quote_in_a_tier_name_leaves_no_api_words_on_the_command_line():
    # a quote is a name's text (the name rule allows it, as the API and --link do): the name has no default link,
    # so the refusal asks for one, in the command line's words, the name in repr's double quotes
    res = invoke("replay", TRACE, "--tier", "gpu=1GB", "--tier", "cpu'=2GB")
    assert assert_one_line_error(res) == (
        f"""pcs: error: --tier "cpu'=2GB": unknown lower tier "cpu'"; did you mean 'cpu'? ({KNOWN}; a tier of your """
        """own names its link: --link "cpu'=25GB/s")""")


def test_compare_tiers_meets_the_name_rule_first():
    res = invoke("compare", TRACE, "--tiers", "gpu=1GB,c\u202epu=2GB")
    assert assert_one_line_error(res) == (
        "pcs: error: --tiers 'gpu=1GB,c\\u202epu=2GB': bad tier name 'c\\u202epu' in 'c\\u202epu=2GB': it holds "
        f"'\\u202e', {ESCAPE}; {TIER_EXAMPLE}")


# 6. compare's --tiers in its own words; a space between two entries is a list.

@pytest.mark.parametrize("joined", ["gpu=1GB+cpu=2GB", "gpu=1GB cpu=2GB"])
def test_compare_tiers_joined_the_wrong_way_names_its_own_option(joined):
    res = invoke("compare", TRACE, "--tiers", joined)
    assert assert_one_line_error(res) == (
        f"pcs: error: --tiers {joined}: a --tiers list joins its tiers with ',', one NAME=SIZE each: "
        "--tiers gpu=1GB,cpu=2GB")


def test_compare_tiers_with_an_escaped_size_leads_with_tiers_not_the_api_keyword():
    res = invoke("compare", TRACE, "--tiers", "gpu=1\udcffGB")
    assert assert_one_line_error(res) == (
        "pcs: error: --tiers 'gpu=1\\xffGB': bad tier size '1\\xffGB' for tier 'gpu': invalid capacity '1\\xffGB': "
        "expected a size with a unit (400GB, 1.5TiB) or a block count (5000blocks)")


def test_a_space_between_two_tier_entries_is_a_list():
    res = invoke("replay", TRACE, "--tier", "gpu=1GB cpu=2GB")
    assert assert_one_line_error(res) == (
        "pcs: error: --tier gpu=1GB cpu=2GB: each --tier takes one NAME=SIZE; the option repeats: --tier gpu=1GB "
        "--tier cpu=2GB (a comma list of tiers is pcs compare's --tiers, one tier list to compare per --tiers)")


# 2. A list written into one entry of a plan's NAME=VALUE option or admit list: refused at its line, in the plan's
#    words (a table with one key per tier, a list with one item each), never the command line's "the option repeats".

PLAN_HEAD = ('kind = "replay"\n[fixed]\ntrace = "{trace}"\nmodel = "llama-3.1-8b"\ntp = 1\n'
             'tier = {{gpu = "500blocks", cpu = "1000blocks"}}\n')


@pytest.mark.parametrize("rest, line, key, advice", [
    ('link = {cpu = "25GB/s,ssd=1GB/s"}\n[axes]\npolicy = ["lru"]\n', 7, "[fixed] 'link.cpu'",
     'each entry of link is one tier\'s; give each tier its own key: link = {cpu = "25GB/s", ssd = "1GB/s"}'),
    ('[axes]\n"link.cpu" = ["25GB/s", "1GB/s,x=2GB/s"]\n', 8, "[axes] 'link.cpu[1]'",
     'each entry of link is one tier\'s; in [axes] give each tier its own axis: "link.cpu" = ["1GB/s", ...] and '
     '"link.x" = ["2GB/s", ...]'),
    ('tier-policy = {cpu = "fifo,gpu=lru"}\n[axes]\npolicy = ["lru"]\n', 7, "[fixed] 'tier-policy.cpu'",
     'each entry of tier-policy is one tier\'s; give each tier its own key: tier-policy = {cpu = "fifo", gpu = "lru"}'),
    ('admit = ["cpu=reuse:2,gpu=retain"]\n[axes]\npolicy = ["lru"]\n', 7, "[fixed] 'admit'",
     'each item of admit takes one TIER=KIND[:ARGS]; give one item each: admit = ["cpu=reuse:2", "gpu=retain"] '
     '(or join them with \'+\': "cpu=reuse:2+gpu=retain")'),
    ('[axes]\n"tier.cpu" = ["1GB", "1GB ssd=2GB"]\n', 8, "[axes] 'tier.cpu[1]'",
     'each entry of tier is one tier\'s; in [axes] give each tier its own axis: "tier.cpu" = ["1GB", ...] and '
     '"tier.ssd" = ["2GB", ...]'),
])
def test_a_list_in_one_plan_entry_is_refused_at_its_line_in_the_plans_words(tmp_path, rest, line, key, advice):
    msg = plan_refusal(tmp_path, PLAN_HEAD.format(trace=TRACE) + rest)
    assert msg == f"{tmp_path / 'p.toml'}:{line}: {key}: {advice}"


# 3. An unknown column of a user's or a third party's CSV (a pandas index, a trailing comma, a column of its own) is
#    read past with a note naming it, in every CSV reader; a column twice or one missing is still refused.

PREFILL_KNOWN = "(its columns: tokens, prompt_tokens, new_tokens, seconds, prefill_s, time_s, s)"
EMPTY = "'' (an empty name: a pandas index column or a trailing comma)"


@pytest.mark.parametrize("text, noted", [
    ("tokens,seconds,std\n1024,0.05,0.001\n4096,0.2,0.002\n", "column 'std'"),
    (",tokens,seconds\n0,1024,0.05\n1,4096,0.2\n", f"column {EMPTY}"),
    ("tokens,seconds,\n1024,0.05,\n4096,0.2,\n", f"column {EMPTY}"),
])
def test_a_prefill_csv_with_an_extra_column_reads_with_a_note(tmp_path, text, noted):
    import json

    from pcs.compute import MeasuredPrefill

    p = tmp_path / "m.csv"
    p.write_text(text)
    # points (0, 0), (1024, 0.05 s), (4096, 0.2 s): 8192 tokens extrapolate the last slope, 0.15 s / 3072 tokens,
    # 4096 tokens on: 0.2 + 0.2 = 0.4 s
    res = invoke("envelope", "--restore-bytes", "1GB", "--tokens", "8192", "--prefill-csv", p, "--bandwidth",
                 "10GB/s", "--format", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["full_prefill_s"] == pytest.approx(0.4)
    note = f"{p}:1: {noted} read past: not a column pcs reads {PREFILL_KNOWN}"
    assert res.stderr.strip() == f"pcs: note: {note}"
    assert MeasuredPrefill.from_csv(p).notes == (note,)
    # a column given twice is still refused (docs/views.md: each quantity by one of its names, once;
    # prompt_tokens and new_tokens are both tokens)
    p.write_text("prompt_tokens,new_tokens,prefill_s\n100,100,1ms\n")
    res = invoke("envelope", "--restore-bytes", "1GB", "--tokens", "8192", "--prefill-csv", p)
    assert assert_one_line_error(res) == (
        f"pcs: error: {p}:1: header gives tokens twice (columns 'prompt_tokens' and 'new_tokens') (columns: tokens "
        "or prompt_tokens, new_tokens; seconds or prefill_s, time_s, s)")


BG = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"
BG_KNOWN = f"(its columns: {BG.replace(',', ', ')}, Session ID, Elapsed time)"


def test_a_burstgpt_csv_with_a_pandas_index_and_extra_columns_reads_with_a_note(tmp_path):
    import json

    p = tmp_path / "b.csv"
    p.write_text(f"Unnamed: 0,{BG},Failed,Region\n0,5,ChatGPT,472,18,490,Conversation log,0,s\n")
    res = invoke("trace", "stats", p, "--format", "json")
    assert res.exit_code == 0, res.output
    st = json.loads(res.stdout)
    assert (st["format"], st["requests"], st["prompt_tokens_max"]) == ("burstgpt", 1, 472)
    # the note is the statistics' own (mend48g: JSON header_note, a table note), as their other notes
    assert st["header_note"] == (
        f"{p}:1: columns 'Unnamed: 0', 'Failed' and 'Region' read past: not columns pcs reads {BG_KNOWN}")


def test_an_azure_csv_column_it_does_not_know_is_a_note_in_the_apis_notes(tmp_path):
    import pcs

    p = tmp_path / "a.csv"
    p.write_text("TIMESTAMP,ContextTokens,GeneratedTokens,Region\n2023-11-16 18:17:03.9799600,4808,10,eu\n")
    notes = pcs.replay(str(p), timing="sequential").summary.notes
    # ('numimages' here is refused since mend48g: a misspelt column, test_findings_m48g.py)
    assert [n for n in notes if "read past" in n] == [
        f"{p}:1: column 'Region' read past: not a column pcs reads (its columns: TIMESTAMP, ContextTokens, "
        "GeneratedTokens, NumImages)"]


# 4. A user's text in a message by the one escaping rule (pcs.errors.shown_repr): a byte that is not UTF-8 as \xff,
#    never repr's \udcff.

def test_a_router_options_text_shows_a_byte_not_utf8_as_its_escape():
    res = invoke("replay", TRACE, "--instances", "2", "--router", "cache-aware:overlap=1_\udcff")
    assert assert_one_line_error(res) == (
        "pcs: error: --router 'cache-aware:overlap=1_\\xff': router 'cache-aware': option overlap has spaces or '_' "
        "separators, got '1_\\xff'")


def test_an_api_keywords_text_shows_a_byte_not_utf8_as_its_escape():
    from pcs.errors import UserError
    from pcs.trace.transform import TransformSpec

    with pytest.raises(UserError) as err:
        TransformSpec(tenant_mode="x\udcff")
    assert str(err.value).startswith("tenant_mode must be one of copy, split, got 'x\\xff'"), str(err.value)


# 5. The API folds the case of a tier's name on every keyed road, as tiers= and admit= do and the command line does.

def test_the_api_folds_the_case_of_links_and_tier_policies_keys():
    import pcs
    from pcs.errors import UserError

    r = pcs.replay(str(TRACE), tiers=["gpu=100blocks", "CPU=500blocks"], tier_policies={"CPU": "fifo"},
                   links={"Cpu": "10GB/s"}, timing="sequential")
    assert [(t["name"], t["policy"]) for t in r.summary.to_dict()["tiers"]] == [("gpu", "lru"), ("cpu", "fifo")]
    with pytest.raises(UserError) as err:
        pcs.replay(str(TRACE), tiers=["gpu=100blocks", "cpu=500blocks"], links={"CPU": "1GB/s", "cpu": "2GB/s"})
    assert str(err.value) == ("links= names tier 'cpu' twice ('CPU' and 'cpu': tier names are case-folded); give "
                              "each tier once")


# 7. A TOML date under a name a tier.NAME option lacks is refused by that name first (the shape's or the range's
#    refusal), as tp = {x = <date>} is; a shape refusal shows a date as the plan wrote it, bare.

DATE_HEAD = ('kind = "replay"\n[fixed]\ntrace = "{trace}"\nmodel = "llama-3.1-8b"\ntiming = "sequential"\ntp = 1\n')
PAIRS = 'a table of NAME = value (strings or numbers), a list of "NAME=VALUE" strings or one such string'


@pytest.mark.parametrize("rest, refusal", [
    ('tier = {gpu = "500blocks", cpu = {x = 1979-05-27}}\n[axes]\npolicy = ["lru"]\n',
     f'7: [fixed] \'tier\': expected {PAIRS}, got a table {{"gpu": "500blocks", "cpu": {{"x": 1979-05-27}}}}'),
    ('tier = {gpu = "500blocks", cpu = "1000blocks"}\n[axes]\n'
     '"tier.cpu" = {from = "0GB", to = "100GB", step = "50GB", when = 1979-05-27}\n',
     "9: axis 'tier.cpu': a range is {from, to, step} or {from, to, times}, got {from, step, to, when}"),
    ('tier = {gpu = "500blocks", cpu = "1000blocks"}\n[axes]\n"tier.cpu" = [{x = 1979-05-27}]\n',
     "9: [axes] 'tier.cpu': value 1 of the axis (one point's value): expected one value: a string or a number, "
     'got a table {"x": 1979-05-27}'),
])
def test_a_date_under_a_name_a_tier_option_lacks_is_refused_by_that_name(tmp_path, rest, refusal):
    msg = plan_refusal(tmp_path, DATE_HEAD.format(trace=TRACE) + rest)
    assert msg == f"{tmp_path / 'p.toml'}:{refusal}"
