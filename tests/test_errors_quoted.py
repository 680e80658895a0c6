"""pcs.errors.quoted: a user's value in a message, whole when short, else cut with '...', its closing quote and
its length (review 45, item 1: ``json.dumps(v)[:40]`` lost the closing quote and said nothing). Expected texts
counted by hand."""
from __future__ import annotations

import pytest

from pcs.errors import InputError, UserError, quoted
from pcs.trace import open_trace
from pcs.units import ascii_int


@pytest.mark.parametrize("value, kwargs, shown", [
    ("abc", {}, '"abc"'),                                         # short: json.dumps, as before
    ("a" * 40, {}, '"' + "a" * 40 + '"'),                         # 40 characters: still whole
    ("a" * 41, {}, '"' + "a" * 40 + '..." (41 characters)'),
    ("a" * 1203, {}, '"' + "a" * 40 + '..." (1,203 characters)'),
    ("ab", {"limit": 1, "show": repr}, "'a...' (2 characters)"),
    # review 45d: the shown text is bounded too (limit 2: one escape, 4 characters, at least; not two)
    (b"\x00" * 5, {"limit": 2, "show": repr}, "b'\\x00...' (5 bytes)"),
    ([1, 2, 3], {"limit": 5}, "[1, 2...] (9 characters of JSON)"),    # '[1, 2, 3]' is 9 characters
    (12345678, {"limit": 4}, "1234... (8 characters of JSON)"),   # a number has no closing quote
    ("é" * 3, {"limit": 2}, '"\\u00e9..." (3 characters)'),  # no escape cut in two; one shown at least
])
def test_quoted(value, kwargs, shown):
    assert quoted(value, **kwargs) == shown


def test_a_long_trace_value_is_cut_with_its_closing_quote(tmp_path):
    p = tmp_path / "t.jsonl"
    # the JSON text of the salt is '["' + 60 x + '"]': 64 characters, the first 40 '["' and 38 x
    p.write_text('{"token_ids": [1, 2, 3], "cache_salt": ["' + "x" * 60 + '"]}\n')
    with pytest.raises(InputError) as err:
        list(open_trace(p))
    assert str(err.value).endswith('must be a string, got ["' + "x" * 38 + '...] (64 characters of JSON)')


def test_a_long_number_text_is_cut_with_its_closing_quote():
    with pytest.raises(UserError) as err:
        ascii_int("9" * 30 + "x" * 30, "count")
    assert str(err.value) == "invalid count '" + "9" * 30 + "x" * 10 + "...' (60 characters): expected ASCII digits 0-9"
    with pytest.raises(UserError) as err:
        ascii_int("12x", "count")
    assert str(err.value) == "invalid count '12x': expected ASCII digits 0-9"


def test_a_long_argument_of_the_wrong_type_is_cut_with_a_sign():
    """An API argument of the wrong type: the message was cut at 300 characters mid-value; now the value is cut
    with '...', its closing bracket and its length. repr(list(range(200))): 10 + 90 x 2 + 100 x 3 = 490 digits,
    199 separators ', ' (398), 2 brackets = 890 characters."""
    import pcs
    from pcs.errors import ArgumentTypeError

    with pytest.raises(ArgumentTypeError) as err:
        pcs.replay("unused.jsonl", tiers=[list(range(200))])
    msg = str(err.value)
    assert msg.startswith("tiers must be a sequence of 'NAME=SIZE' strings or TierSpec") and "got an item of type list: [0, 1, 2" in msg
    assert msg.endswith("...] (890 characters of text)"), msg
    with pytest.raises(ArgumentTypeError) as err:
        pcs.replay("unused.jsonl", tiers=[[1]])
    assert str(err.value).endswith("got an item of type list: [1]")      # short: whole, as before


@pytest.mark.parametrize("value, shown", [
    # review 45d: json.dumps raised TypeError on bytes; a value JSON cannot write is shown by Python's repr
    (b"\x00\x01", "b'\\x00\\x01'"),
    ([b"\x00\x01", [], 0], "[b'\\x00\\x01', [], 0]"),
    ({"k": (1, b"x")}, "{'k': (1, b'x')}"),
    (2**70, "1180591620717411303424"),                   # past 2^64: JSON writes it (22 digits)
])
def test_any_value_is_shown_never_raised_on(value, shown):
    assert quoted(value) == shown


def test_an_int_past_the_digit_limit_is_named_by_its_size():
    # str(10**5000) raises ValueError (Python's 4,300-digit limit); 10**5000 has 5,001 digits
    assert quoted(10**5000) == "<int of about 5,001 digits>"


@pytest.mark.parametrize("value, shown", [
    # review 45d: short values printed whole once escaped: 40 NULs were 242 characters. Now the shown text between
    # the quotes is at most 40: \u0000 is 6 characters, 6 of them 36, 7 would be 42
    ("\x00" * 40, '"' + "\\u0000" * 6 + '..." (40 characters)'),
    # one emoji is a surrogate pair in JSON, 12 characters: 3 are 36, and a pair is never split
    ("\U0001F600" * 40, '"' + "\\ud83d\\ude00" * 3 + '..." (40 characters)'),
    ("x" * 37 + "\U0001F600" * 3, '"' + "x" * 37 + '..." (40 characters)'),
    # a list cut at an escape boundary: '["' (2) + 6 x '\u00e9' (36) = 38; the 7th would end at 44 > 40. Its JSON
    # text is 2 + 30 x 6 + 2 = 184 characters, counted as such and said so
    (["é" * 30], '["' + "\\u00e9" * 6 + '...] (184 characters of JSON)'),
])
def test_the_shown_text_is_bounded_and_cut_between_escapes(value, shown):
    assert quoted(value) == shown
