"""mend48d: review48h's findings on mend48a/mend48b, each expectation worked out by hand from the documented rules.

1. A tier's name meets the one rule of tier names (docs/replay.md "Tiers": no character a message shows as its
   escape, none of ``= , +``, no space) before any other rule of a tier, on every road (``--tier``, compare's
   ``--tiers``, a plan's ``tier``), in that rule's one wording -- where a byte that is not UTF-8 ended in a traceback
   and a hidden character or a space got "unknown lower tier" with a ``--link`` hint the name rule then refused.
2. A list written into one entry of a sweep plan's ``tier``, ``link``, ``tier-policy`` or ``admit`` is refused at
   the line it is written on, in the plan's words (one key per tier, one item each), where it lost its line and got
   the command line's advice ("the option repeats: --link ...").
6. compare's ``--tiers`` speaks its own words: a ``+`` or a space between two tiers of one list is refused as a list
   joined the wrong way (``--tiers gpu=1GB,cpu=2GB``); a space between two ``--tier`` entries is a list too.
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
     'each entry of link is one tier\'s; give each tier its own key: link = {cpu = "1GB/s", x = "2GB/s"}'),
    ('tier-policy = {cpu = "fifo,gpu=lru"}\n[axes]\npolicy = ["lru"]\n', 7, "[fixed] 'tier-policy.cpu'",
     'each entry of tier-policy is one tier\'s; give each tier its own key: tier-policy = {cpu = "fifo", gpu = "lru"}'),
    ('admit = ["cpu=reuse:2,gpu=retain"]\n[axes]\npolicy = ["lru"]\n', 7, "[fixed] 'admit'",
     'each item of admit takes one TIER=KIND[:ARGS]; give one item each: admit = ["cpu=reuse:2", "gpu=retain"] '
     '(or join them with \'+\': "cpu=reuse:2+gpu=retain")'),
    ('[axes]\n"tier.cpu" = ["1GB", "1GB ssd=2GB"]\n', 8, "[axes] 'tier.cpu[1]'",
     'each entry of tier is one tier\'s; give each tier its own key: tier = {cpu = "1GB", ssd = "2GB"}'),
])
def test_a_list_in_one_plan_entry_is_refused_at_its_line_in_the_plans_words(tmp_path, rest, line, key, advice):
    msg = plan_refusal(tmp_path, PLAN_HEAD.format(trace=TRACE) + rest)
    assert msg == f"{tmp_path / 'p.toml'}:{line}: {key}: {advice}"
