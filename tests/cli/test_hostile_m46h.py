"""Review 46h's findings, mended. Every expectation is worked out by hand: lines counted in the file texts below,
the float limit from IEEE 754 double precision (largest finite value 1.7976931348623157e308; a decimal above the halfway
point to the next power, about 1.7976931348623158e308, reads as infinity), admission ``none`` from
docs/policies.md (no admission on that tier: nothing to set)."""
from __future__ import annotations

import pytest

from helpers import SMALL_TRACE, assert_one_line_error, invoke
from pcs.errors import InputError, UserError

_RANGE = "out of range: a float holds at most about 1.7977e308 either side"


def _hardware_error(tmp_path, text: str, suffix: str = ".toml") -> str:
    from pcs.hardware import load_hardware_file

    hw = tmp_path / f"hw{suffix}"
    hw.write_text(text)
    with pytest.raises(InputError) as err:
        load_hardware_file(hw)
    return str(err.value).replace(str(hw), "HW")


# LOW 1: a number the TOML reader refuses is found where it is written as a value, never in a comment or a string
# written before it (the first match of its text used to win: line 1, no field).

@pytest.mark.parametrize("head", [
    "# try 1e999 here\n\n",                     # a comment
    'name = "1e999"\n\n',                       # a one-line string
    'note = """\n1e999\n"""\n',                 # a multi-line string spanning lines 1-3 (the value on line 4)
])
def test_a_toml_float_out_of_range_is_found_past_comments_and_strings(tmp_path, head):
    text = head + '[gpu."mine"]\nbf16_flops = 1e999\n'        # the value's line: the head's lines + 2
    line = head.count("\n") + 2
    message = _hardware_error(tmp_path, text)
    assert message.startswith(f"HW:{line}: field 'gpu.mine.bf16_flops': number 1e999 is {_RANGE}"), message[:200]


def test_a_toml_integer_too_long_is_found_past_a_comment(tmp_path):
    text = "# " + "7" * 5000 + "\n" + '[gpu."mine"]\n' + "hbm_bytes = " + "9" * 5000 + "\n"   # the value on line 3
    assert _hardware_error(tmp_path, text) == "HW:3: field 'gpu.mine.hbm_bytes': number too long (5,000 digits)"


def test_a_json_integer_too_long_is_found_past_a_string(tmp_path):
    from pcs.jsondepth import NumberTooLongError, loads

    text = '{"note": "' + "7" * 5000 + '",\n "x": [1,\n  ' + "9" * 5000 + "]}"     # the integer on line 3
    with pytest.raises(NumberTooLongError) as err:
        loads(text)
    assert err.value.lineno == 3, (err.value.lineno, str(err.value)[:200])


def test_code_only_keeps_offsets_and_lines():
    from pcs.jsondepth import code_only

    text = 'a = "x#1"  # c 2\nb = \'\'\'\n3\n\'\'\'\nc = 4\n'
    out = code_only(text, "toml")
    assert len(out) == len(text) and out.count("\n") == text.count("\n")
    assert out.split("\n")[0].rstrip() == "a =" and "3" not in out and out.endswith("c = 4\n")


# LOW 2: admission none takes no options.

@pytest.mark.parametrize("value", ["cpu=none:n=2", "cpu=NONE:", "cpu=none:x"])
def test_admission_none_with_options_is_refused(value):
    r = invoke("replay", SMALL_TRACE, "--tier", "gpu=500blocks", "--tier", "cpu=1GB", "--admit", value)
    spec = value.partition("=")[2]
    assert_one_line_error(r, f"bad admission '{spec}': none (no admission) takes no options; give none alone")


# Trivia: the float limit said right at its edge; one page said as one.

@pytest.mark.parametrize("value, refused", [
    ("1.7976931348623157e308", False),      # the largest finite float64
    ("1.7976931348623159e308", True),       # past the halfway point: reads as infinity
])
def test_the_float_limit_at_its_edge(value, refused):
    from pcs.cache.policies import spec_value

    if refused:     # kept as text, refused by the option's type check (mend46d): a float option says this
        assert spec_value(value).problem == f'option value "{value}" is {_RANGE}'
    else:
        assert spec_value(value) == 1.7976931348623157e308


def test_one_page_a_group_block_is_said_as_one_page():
    from pcs.cache.nativegroups import size_unsupported

    # slab 1 (one page a group block): a tier may hold 2**30 = 1,073,741,824 pages
    assert size_unsupported([("gpu", 2**30 + 1)], [1]) == (
        "it needs tiers of at most 1,073,741,824 pages with group blocks of 1 page, tier gpu has more")
    assert size_unsupported([("gpu", 2**29 + 1)], [2]) == (
        "it needs tiers of at most 536,870,912 pages with group blocks of 2 pages, tier gpu has more")


# Review 46k: a TOML multi-line basic string continued by a backslash at a line's end (TOML 1.0 "line ending
# backslash") is passed over whole: the refused number is the real value written after it.

def test_a_toml_number_past_a_backslash_continued_string(tmp_path):
    text = ('note = """\\\n  a note \\\n  """\n'        # lines 1-3: one string, two lines continued by a backslash
            '[gpu."mine"]\nbf16_flops = 1e999\n'          # line 5: the value refused
            'tag = """x"""\nhbm_bps = 1e999\n')           # line 7: the same text again, after another string
    assert _hardware_error(tmp_path, text).startswith(f"HW:5: field 'gpu.mine.bf16_flops': number 1e999 is {_RANGE}")


# Review 46k: a policy option whose default is None (a plug-in's) gets no number that no option holds as text:
# refused as before this round; a str default gets the number's text as a plain str (docs/policies.md).

def test_a_plugin_option_of_text_refuses_a_number_out_of_range(monkeypatch):
    from pcs.cache import policies as reg

    class Labelled(reg.LRUPolicy):
        name = "h46_label"

        def __init__(self, capacity_blocks: int, label: str = "a", limit: object = None) -> None:
            super().__init__(capacity_blocks)

    monkeypatch.setattr(reg, "_POLICIES", {**reg._POLICIES, "h46_label": Labelled})
    monkeypatch.setattr(reg, "POLICY_ORIGINS", {**reg.POLICY_ORIGINS, "h46_label": "test"})
    for spec, value in (("h46_label:limit=1e999", "1e999"), ("h46_label:limit=" + "9" * 20, "9" * 20)):
        with pytest.raises(UserError) as err:       # a None default: the type unknown, a number refused as before
            reg.check_policy(spec)
        assert str(err.value).startswith(f"eviction policy 'h46_label' option limit: option value \"{value}\" is "
                                         "out of range"), str(err.value)
    reg.check_policy("h46_label:limit=12,label=b")      # in range: accepted as before
    # a str default takes the digits as its text, a plain str (no subclass reaches the policy)
    cls, given = reg._arguments("h46_label:label=" + "9" * 20, {})
    assert given == {"label": "9" * 20} and type(given["label"]) is str


# Review 46m: a float out of range shown whole (its exponent is why); a router's refused option in the one wording
# of eviction policies and admissions (pcs.choices.no_such_option); a long option mistyped only in case: that one.

def test_a_float_out_of_range_keeps_its_exponent():
    r = invoke("trace", "events", str(SMALL_TRACE), "--at", "123456789012345678901234")
    # 123456789012345678901234 as a float64 is 1.2345678901234569e+23 (17 significant digits, round to nearest)
    assert_one_line_error(r, "'--at': 1.2345678901234569e+23 is not in the range "
                             "-1,000,000,000,000,000,000<=x<=1,000,000,000,000,000,000")


@pytest.mark.parametrize("router, words", [
    ("round-robin:x=1", "router 'round-robin' takes no options, got 'x'"),
    ("random:k=3", "router 'random' takes no option 'k'; 'k' is an option of consistent-hash, not of random; its "
                   "options: seed="),
])
def test_a_router_option_it_does_not_take(router, words):
    r = invoke("replay", str(SMALL_TRACE), "--tier", "gpu=500blocks", "--instances", "2", "--router", router)
    assert_one_line_error(r, words)


@pytest.mark.parametrize("typed", ["--TIER", "--Tier"])
def test_an_option_mistyped_in_case_suggests_it_alone(typed):
    r = invoke("replay", str(SMALL_TRACE), typed, "gpu=500blocks")
    assert_one_line_error(r, f"No such option '{typed}'; did you mean '--tier'?")


# Review 46k (left last round): an integer past 64 bits given to a float option is the float it reads as
# (99999999999999999999 = 1e20 to float64's precision), which the option then bounds; past a float's range too
# (400 digits > 308), out of range.

@pytest.mark.parametrize("value, words", [
    ("-99999999999999999999", "protected share must be within [0, 1], got -1e+20"),
    ("99999999999999999999", "protected share must be within [0, 1], got 1e+20"),
    ("9" * 400, f"(400 characters) is {_RANGE}"),
])
def test_a_long_integer_for_a_float_option_is_a_float(value, words):
    r = invoke("replay", str(SMALL_TRACE), "--tier", "gpu=500blocks", "--policy", f"slru:protected_share={value}")
    assert_one_line_error(r, words)
