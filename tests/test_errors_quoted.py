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
    (b"\x00" * 5, {"limit": 2, "show": repr}, "b'\\x00\\x00...' (5 bytes)"),
    ([1, 2, 3], {"limit": 5}, "[1, 2...] (9 characters)"),        # '[1, 2, 3]' is 9 characters
    (12345678, {"limit": 4}, "1234... (8 characters)"),           # a number has no closing quote
    ("é" * 3, {"limit": 2}, '"\\u00e9\\u00e9..." (3 characters)'),  # cut before quoting: no escape cut in two
])
def test_quoted(value, kwargs, shown):
    assert quoted(value, **kwargs) == shown


def test_a_long_trace_value_is_cut_with_its_closing_quote(tmp_path):
    p = tmp_path / "t.jsonl"
    # the JSON text of the salt is '["' + 60 x + '"]': 64 characters, the first 40 '["' and 38 x
    p.write_text('{"token_ids": [1, 2, 3], "cache_salt": ["' + "x" * 60 + '"]}\n')
    with pytest.raises(InputError) as err:
        list(open_trace(p))
    assert str(err.value).endswith('must be a string, got ["' + "x" * 38 + '...] (64 characters)')


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
    assert msg.endswith("...] (890 characters)"), msg
    with pytest.raises(ArgumentTypeError) as err:
        pcs.replay("unused.jsonl", tiers=[[1]])
    assert str(err.value).endswith("got an item of type list: [1]")      # short: whole, as before
