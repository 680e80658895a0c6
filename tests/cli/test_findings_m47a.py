"""Review 47's findings on option and plan values, mended (mend47a). Every expectation is worked out by hand:
99999999999999999999 (20 nines, 10^20 - 1) is 1e20 as a float64 (53 bits hold about 16 significant digits: it rounds
to 10^20), past a signed 64-bit integer (2^63 - 1 is about 9.22e18); a float64 holds at most about 1.7977e308, so
1e999 is past it; a duration of 1e20 s is past 2^63 - 1 ns (about 292 years); tinylfu's sample is a number in
(0, 1e6] (docs/policies.md); each router's options from ``pcs replay --help`` (least-loaded takes by=, cache-aware
overlap= and load=, prefix none)."""
from __future__ import annotations

import pytest

from helpers import SMALL_TRACE, assert_one_line_error, invoke

_FLOAT_RANGE = "out of range: a float holds at most about 1.7977e308 either side"
_TIERS = ("--tier", "gpu=500blocks", "--tier", "cpu=1GB")
_NINES = "99999999999999999999"


def _admit(value: str):
    return invoke("replay", str(SMALL_TRACE), *_TIERS, "--admit", value, "-q")


def _router(value: str):
    return invoke("replay", str(SMALL_TRACE), "--instances", "2", "--router", value, "-q")


# 1. An admission's float option (retain's duration, tinylfu's sample) and a router's (cache-aware's overlap) read a
# value as a policy's float option does (pcs.cache.policies.number_option): an integer past 64 bits is the float it
# is, which the option then bounds; a number past a float's range says so (was the 64-bit integer limit, or the
# value shown as text).

@pytest.mark.parametrize("value, words", [
    (f"cpu=retain:tokens=0-64,duration={_NINES}",
     "admission retain: duration=1e+20: invalid duration '1e+20': too large (more than 2^63 - 1 ns, about 292 years)"),
    (f"cpu=retain:tokens=0-64,duration=-{_NINES}",
     "admission retain: duration=-1e+20: invalid duration '-1e+20': must not be negative"),
    ("cpu=tinylfu:sample=1e999", f'admission tinylfu: sample: option value "1e999" is {_FLOAT_RANGE}'),
])
def test_an_admission_float_option_reads_a_long_integer_as_a_float(value, words):
    assert_one_line_error(_admit(value), words)


def test_a_router_float_option_past_a_float_range_says_so():
    assert_one_line_error(_router("cache-aware:overlap=1e999"),
                          f'router \'cache-aware\': option overlap: option value "1e999" is {_FLOAT_RANGE}')


# 2. tinylfu's sample past 64 bits: the number it is, bounded as any value of it (was the text '999...9').

@pytest.mark.parametrize("value, shown", [(_NINES, "1e+20"), (f"-{_NINES}", "-1e+20")])
def test_tinylfu_sample_past_64_bits_is_a_number(value, shown):
    assert_one_line_error(_admit(f"cpu=tinylfu:sample={value}"),
                          f"admission tinylfu: sample must be > 0 and <= 1e+06 (capacities), got {shown}")


# 3. A malformed option (no '=', an empty name or value) in one wording for policies, admissions and routers
# (pcs.choices.malformed_option): the kind and name, the option, the spec when it holds more, OPTION=VALUE, the
# options the name takes; a name that takes none says so (the router's 'least-loaded:x' was the model: unchanged).

@pytest.mark.parametrize("option, value, words", [
    ("--router", "cache-aware:=3", "router 'cache-aware': bad option '=3'; expected OPTION=VALUE; its options: "
                                   "overlap=, load="),
    ("--router", "cache-aware:overlap=", "router 'cache-aware': bad option 'overlap='; expected OPTION=VALUE; "
                                         "its options: overlap=, load="),
    ("--router", "prefix:=3", "router 'prefix' takes no options, got '=3'"),
    ("--policy", "slru:=3", "eviction policy 'slru': bad option '=3'; expected OPTION=VALUE; its options: "
                            "protected_share="),
    ("--policy", "slru:protected_share=0.5,x", "eviction policy 'slru': bad option 'x' in "
                                               "'slru:protected_share=0.5,x'; expected OPTION=VALUE; its options: "
                                               "protected_share="),
    ("--policy", "lru:x", "eviction policy 'lru' takes no options, got 'x'"),
    ("--admit", "cpu=reuse:=3", "admission 'reuse': bad option '=3'; expected OPTION=VALUE; its options: n="),
    ("--admit", "cpu=retain:tokens=0-64,duration=", "admission 'retain': bad option 'duration=' in "
                                                    "'retain:tokens=0-64,duration='; expected OPTION=VALUE; its "
                                                    "options: tokens=, duration="),
])
def test_a_malformed_option_in_one_wording(option, value, words):
    if option == "--router":
        r = _router(value)
    elif option == "--admit":
        r = _admit(value)
    else:
        r = invoke("replay", str(SMALL_TRACE), "--policy", value, "-q")
    assert_one_line_error(r, words)


# 4-6: a sweep plan's messages. PLAN_HEAD is 6 lines (kind, a blank line, [fixed], trace, timing, tier): a key
# written after it is on line 7. Paths as the readers name fields (pcs.keylines): a table's entry after a dot, a
# list's element by its 0-based index (fixed.x[0].a).

def _json_refusal(tmp_path, text: str) -> str:
    """The message of the UserError pcs.sweep.api.prepare raises for a plan p.json holding ``text``."""
    from pcs.errors import UserError
    from pcs.sweep.api import prepare

    plan = tmp_path / "p.json"
    plan.write_text(text)
    with pytest.raises(UserError) as err:
        prepare(plan, tmp_path / "out")
    return str(err.value).replace(str(plan), "P")


def _toml_refusal(tmp_path, extra: str) -> str:
    from helpers import PLAN_HEAD, plan_refusal

    return plan_refusal(tmp_path, PLAN_HEAD + extra).replace(str(tmp_path / "p.toml"), "P")


_AXIS = '[axes]\npolicy = ["lru", "fifo"]\n'


# 4. Every message names a plan key as the plan writes it, with dashes (docs/sweep.md), never its underscore form.

@pytest.mark.parametrize("extra, words", [
    ('requests-out = "x.csv"\n' + _AXIS, "option 'requests-out' shapes a command's output only"),
    ('gap-orcle = true\n' + _AXIS, "unknown option 'gap-orcle' for pcs replay; did you mean 'gap-oracle'?"),
    ('"write-policy.x" = "back"\n' + _AXIS, "'write-policy.x': only NAME=VALUE options (link, tier, tier-policy) "
                                            "take an entry after a dot"),
    ('block-size = 32\n' + _AXIS, "block-size = 32 is not the trace's recorded block size, 512 tokens"),
])
def test_a_plan_key_is_named_with_dashes(tmp_path, extra, words):
    message = _toml_refusal(tmp_path, extra)
    assert words in message, message


# 5. A number that is not finite is refused as such at its line and key (was: click's "not an integer in ASCII
# digits", or "invalid JSON").

@pytest.mark.parametrize("written, shown", [("nan", "nan"), ("+nan", "+nan"), ("inf", "inf"), ("-inf", "-inf")])   # as written (mend47d)
def test_a_toml_number_not_finite_is_refused_at_its_key(tmp_path, written, shown):
    message = _toml_refusal(tmp_path, f"tp = {written}\n" + _AXIS)
    assert message == f"P:7: [fixed]: option 'tp': {shown} is not finite; give a finite number", message


def test_a_toml_axis_value_not_finite_is_named_by_its_index(tmp_path):
    message = _toml_refusal(tmp_path, '[axes]\ntp = [1, -inf]\n')       # [axes] on line 7, tp on line 8
    assert message == "P:8: [axes]: option 'tp[1]': -inf is not finite; give a finite number", message


@pytest.mark.parametrize("written", ["NaN", "Infinity", "-Infinity"])
def test_a_json_number_not_finite_is_refused_at_its_key(tmp_path, written):
    text = '{"kind": "replay",\n "fixed": {"trace": "t.jsonl",\n   "tp": %s}}\n' % written      # tp on line 3
    assert _json_refusal(tmp_path, text) == f"P:3: field 'fixed.tp': {written} is not finite (and not a JSON number)"


# 6. A value's path in the plan, whole: a quoted key by its name, the table it is in, a list's element by index.

_FLOAT_TEXT = f"number 1e999 is {_FLOAT_RANGE}"


@pytest.mark.parametrize("extra, field, problem", [
    ('a.b."c" = 1e999\n', "fixed.a.b.c", _FLOAT_TEXT),                  # was 'a.b."c' (its quote lost)
    ("x = [{a = 1e999}]\n", "fixed.x[0].a", _FLOAT_TEXT),               # was 'a'
    ("seed = " + "9" * 5000 + "\n", "fixed.seed", "number too long (5,000 digits)"),     # was 'seed'
])
def test_a_toml_value_is_named_by_its_whole_path(tmp_path, extra, field, problem):
    assert _toml_refusal(tmp_path, extra) == f"P:7: field '{field}': {problem}"


@pytest.mark.parametrize("value, field, problem", [
    ("9" * 5000, "fixed.seed", "number too long (5,000 digits)"),                   # was 'seed'
    ("[1, %s]" % ("9" * 5000), "fixed.seed[1]", "number too long (5,000 digits)"),  # was 'seed': element 1: ...
    ("[{\"a\": 1e999}]", "fixed.seed[0].a", _FLOAT_TEXT),       # was 'invalid JSON: number 1e999 is out of range'
])
def test_a_json_value_is_named_by_its_whole_path(tmp_path, value, field, problem):
    text = '{"kind": "curve",\n "fixed": {"trace": "t.jsonl",\n   "seed": %s}}\n' % value      # seed on line 3
    assert _json_refusal(tmp_path, text) == f"P:3: field '{field}': {problem}"


def test_a_toml_date_in_a_list_is_named_by_its_index(tmp_path):
    message = _toml_refusal(tmp_path, "admit = [\"all\", 1979-05-27]\n" + _AXIS)      # a key that is an option
    assert message.startswith("P:7: [fixed]: option 'admit[1]': a TOML date/time (1979-05-27)"), message
    # mend48b: a date under a name its option lacks ('a': admit takes values, not tables) is refused by that name
    # first, as every key's name is (tests/cli/test_findings_m48b.py): here, the table where a value goes
    message = _toml_refusal(tmp_path, "admit = [{a = 1979-05-27}]\n" + _AXIS)
    assert message.startswith("P:7: [fixed] 'admit': expected a value or a list of values"), message
