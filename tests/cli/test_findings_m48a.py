"""Round 48a: one wording and one escaping rule for names and option values. Each value below is worked out by
hand from the rules (pcs.errors.printable: a byte 0xff that is not UTF-8 reaches Python as U+DCFF and is shown as
the four characters \\xff; a hidden character as its Python escape; the rest as typed), never copied from output.

1. every message shows a name's byte 0xff as \\xff, never \\udcff (options, tier names, policies, admissions,
   routers, paths, models and GPUs, click's own refusals, the API);
2. pcs.report.table's path helper is named for what it does (shown_relative_path), apart from pcs.errors.shown_path;
3. a tier name is checked by the escaping rule: a ZWJ emoji runs, a hidden character, a separator or a space is refused;
4. a list written into one TIER=VALUE entry is refused saying the option takes one entry and repeats;
5. the API's keyword refusals lead with KEYWORD=VALUE;
6. a router's out-of-range number is shown as read (got -1.5), as a policy's and an admission's are.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import pcs
from pcs.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
TRACE = str(ROOT / "traces" / "sample_tokens.jsonl")
TWO = ["--tier", "gpu=10blocks", "--tier", "cpu=10blocks"]


def _error(*args: str) -> str:
    """The one error line of ``pcs ARGS`` (exit 2, no traceback)."""
    r = CliRunner().invoke(cli, list(args))
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    lines = [line for line in r.output.splitlines() if line.startswith("pcs: error: ")]
    assert len(lines) == 1, r.output
    return lines[0]


def _api_error(**kw) -> str:
    with pytest.raises(ValueError) as exc:
        pcs.replay(TRACE, **kw)
    return str(exc.value)


# 1 -------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args, shown", [
    (["--policy", "x\udcff"], "--policy 'x\\xff': unknown eviction policy 'x\\xff'"),
    (["--tier-policy", "cpu=x\udcff"], "unknown eviction policy 'x\\xff'"),
    (["--admit", "cpu=x\udcff"], "unknown admission 'x\\xff'"),
    (["--policy", "slru:protected_share=x\udcff"], "option protected_share='x\\xff': expected a number"),
    (["--link", "cpu=x\udcff"], "--link 'cpu=x\\xff': neither a preset"),      # not U+00FF
    (["--tier", "c\udcff=1TB"], "bad tier name 'c\\xff'"),
    (["--gpu", "x\udcff"], "unknown GPU 'x\\xff'"),
    (["--timing", "x\udcff"], "'x\\xff' is not one of 'modeled', 'sequential'"),    # click's own refusal
    (["--html", "no\udcff/r.html"], "the folder 'no\\xff' does not exist"),
    (["--instances", "2", "--router", "cache-aware:load=x\udcff"], "got 'x\\xff'"),
])
def test_a_byte_that_is_not_utf8_shows_as_xff_in_every_message(args, shown):
    tiers = ["--tier", "gpu=10blocks"] if args[0] == "--tier" else TWO
    line = _error("replay", TRACE, *tiers, *args)
    assert shown in line and "\\udc" not in line, line


def test_the_api_shows_the_byte_as_xff_too():
    msg = _api_error(policy="x\udcff")
    assert "'x\\xff'" in msg and "\\udc" not in msg, msg


def test_shown_repr_keeps_repr_quotes_and_the_one_rule():
    from pcs.errors import shown_repr

    assert shown_repr("x\udcff") == "'x\\xff'"
    assert shown_repr("it's") == '"it\'s"'                               # repr's choice of quotes
    assert shown_repr("a\u3000b\u200dc\td") == "'a\u3000b\u200dc\\td'"   # U+3000 and ZWJ as typed, the tab escaped
    assert shown_repr(["x\udcff", "a\\udcff"]) == "['x\\xff', 'a\\\\udcff']"   # a typed backslash stays itself


# 2 -------------------------------------------------------------------------------------------------------------
def test_one_name_one_concept_for_paths():
    import pcs.errors
    import pcs.report.table as table

    assert not hasattr(table, "shown_path")
    assert table.shown_relative_path("traces/x\udcff.jsonl") == "traces/x\\xff.jsonl"
    assert pcs.errors.shown_path("a" * 201).endswith("... (201 characters)")


# 3 -------------------------------------------------------------------------------------------------------------
FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467"      # man ZWJ woman ZWJ girl: one emoji


def test_a_tier_named_by_an_emoji_zwj_sequence_runs():
    r = CliRunner().invoke(cli, ["replay", TRACE, "--tier", "gpu=10blocks", "--tier", f"{FAMILY}=10blocks",
                                 "--link", f"{FAMILY}=25GB/s", "--timing", "sequential", "-q"])
    assert r.exit_code == 0, r.output
    assert f"hits served by {FAMILY}" in r.output


@pytest.mark.parametrize("name, why", [
    ("a\u202eb", "it holds '\\u202e', which a message shows as its escape"),
    ("a\u200bb", "it holds '\\u200b', which a message shows as its escape"),
    ("a\u3000b", "it holds a space, '\u3000' (U+3000)"),
    ("a b", "it holds a space, ' ' (U+0020)"),
    ("a+b", "it holds '+', which the command line splits tier entries on"),
])
def test_a_tier_name_is_checked_by_the_escaping_rule(name, why):
    line = _error("replay", TRACE, "--tier", "gpu=10blocks", "--tier", f"{name}=10blocks")
    assert why in line, line


def test_a_tierspec_name_follows_the_same_rule():
    from pcs.engine.api import TierSpec

    msg = _api_error(tiers=[TierSpec("gpu", capacity_blocks=10), TierSpec("c\tpu", capacity_blocks=10)])
    assert "TierSpec name 'c\\tpu': it holds '\\t'" in msg, msg


# 4 -------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args, said", [
    (["--tier-policy", "cpu=lru,gpu=slru"],
     "--tier-policy cpu=lru,gpu=slru: each --tier-policy takes one TIER=POLICY; the option repeats: "
     "--tier-policy cpu=lru --tier-policy gpu=slru"),
    (["--tier-policy", "cpu=slru:protected_share=0.5,gpu=lru"],
     "the option repeats: --tier-policy cpu=slru:protected_share=0.5 --tier-policy gpu=lru"),
    (["--admit", "cpu=reuse:2,gpu=retain"],
     "--admit cpu=reuse:2,gpu=retain: each --admit takes one TIER=KIND[:ARGS]; the option repeats: --admit "
     "cpu=reuse:2 --admit gpu=retain (or join them with '+': cpu=reuse:2+gpu=retain)"),
    (["--link", "cpu=25GB/s,gpu=5GB/s"],
     "--link cpu=25GB/s,gpu=5GB/s: each --link takes one TIER=LINK; the option repeats: --link cpu=25GB/s "
     "--link gpu=5GB/s"),
])
def test_a_list_in_one_entry_says_the_option_repeats(args, said):
    assert said in _error("replay", TRACE, *TWO, *args)


@pytest.mark.parametrize("kw, said", [
    (dict(tier_policies={"cpu": "lru,gpu=slru"}),
     "tier_policies['cpu'] = 'lru,gpu=slru': each value of tier_policies= is one tier's; give each tier its own "
     "key: tier_policies={'cpu': 'lru', 'gpu': 'slru'}"),
    (dict(tiers=["gpu=10blocks,cpu=10blocks"]),
     "each item of tiers= takes one NAME=SIZE; give one item each: tiers=['gpu=10blocks', 'cpu=10blocks']"),
    (dict(admit=["cpu=reuse:2,gpu=retain"]),
     "admit='cpu=reuse:2,gpu=retain': each item of admit= takes one TIER=KIND[:ARGS]"),
])
def test_the_api_says_so_in_its_keywords(kw, said):
    kw.setdefault("tiers", ["gpu=10blocks", "cpu=10blocks"])
    assert said in _api_error(**kw)


# 5 -------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, lead", [
    (dict(admit=["cpu=bogus"]), "admit='cpu=bogus': unknown admission 'bogus'"),
    (dict(admit=["cpu"]), "admit='cpu': expected TIER=KIND[:ARGS]"),
    (dict(admit=["gpu=reuse:2"]), "admit='gpu=reuse:2': the GPU tier stores every block"),
    (dict(policy="bogus"), "policy='bogus': unknown eviction policy 'bogus'"),
    (dict(tier_policies={"cpu": "bogus"}), "tier_policies['cpu'] = 'bogus': unknown eviction policy 'bogus'"),
    (dict(timing="x"), "timing='x': unknown timing 'x'"),
    (dict(model="x"), "model='x': unknown model 'x'"),
    (dict(dtype="x"), "dtype='x': unknown dtype 'x'"),
    (dict(hardware="x"), "hardware='x': unknown GPU 'x'"),
    (dict(engine="x"), "engine='x': unknown engine 'x'"),
    (dict(kv_reserve="x"), "kv_reserve='x': invalid size 'x'"),
])
def test_an_api_refusal_starts_with_its_keyword_and_value(kw, lead):
    kw.setdefault("tiers", ["gpu=10blocks", "cpu=10blocks"])
    assert _api_error(**kw).startswith(lead)


def test_compare_curve_and_fleet_refusals_lead_with_their_keyword():
    with pytest.raises(ValueError, match=r"^policies\[1\]='bogus': unknown eviction policy 'bogus'"):
        pcs.compare(TRACE, policies=["lru", "bogus"])
    with pytest.raises(ValueError, match=r"^native='x': unknown kernel 'x'"):
        pcs.curve(TRACE, native="x")
    with pytest.raises(ValueError, match=r"^router='x': unknown router 'x'"):
        pcs.fleet_replay(TRACE, instances=2, router="x")


# 6 -------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec, got", [
    ("cache-aware:overlap=-1.50", "got -1.5"),              # a float option: the number as read
    ("cache-aware:load=2e6", "got 2000000.0"),
    ("consistent-hash:k=00", "got 0"),                      # an int option: 00 is 0
])
def test_a_router_value_out_of_range_is_shown_as_read(spec, got):
    line = _error("replay", TRACE, "--instances", "2", "--router", spec)
    assert line.endswith(got), line
