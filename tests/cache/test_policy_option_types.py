"""Plug-in option values are typed by the ``__init__`` default (docs/policies.md "Option values").

``NAME:OPTION=VALUE`` reads the value as an int, else a float, else text (``spec_value``); ``make_policy`` then
types it by the default of that keyword: a bool default takes true/false/1/0 (so ``keep_reused=false`` is False,
not the truthy text ``'false'``), an int default an integer, a float default a number; a value that does not
convert is refused in one line naming the policy and the option.
"""
from __future__ import annotations

import pytest

from pcs.cache import policies as reg
from pcs.cache.policies.lru import LRUPolicy
from pcs.errors import UserError


class KeepLRU(LRUPolicy):
    """A plug-in-like policy (defined outside ``pcs``) with a bool, an int and a float option."""

    name = "keep_lru"

    def __init__(self, capacity_blocks: int, keep_reused: bool = False, depth: int = 2, share: float = 0.5) -> None:
        super().__init__(capacity_blocks)
        self.keep_reused, self.depth, self.share = keep_reused, depth, share


@pytest.fixture
def keep_lru(monkeypatch):
    monkeypatch.setitem(reg._POLICIES, "keep_lru", KeepLRU)
    return "keep_lru"


@pytest.mark.parametrize("text, want", [("false", False), ("False", False), ("0", False),
                                        ("true", True), ("TRUE", True), ("1", True)])
def test_bool_option_from_text(keep_lru, text, want):
    p = reg.make_policy(f"keep_lru:keep_reused={text}", 10)
    assert p.keep_reused is want                # a real bool: 'false' must not arrive as truthy text


def test_int_and_float_options_typed(keep_lru):
    p = reg.make_policy("keep_lru:depth=7,share=1", 10)
    # depth's default is int -> 7 stays int; share's default is float -> the integer 1 arrives as 1.0
    assert (p.depth, type(p.depth), p.share, type(p.share)) == (7, int, 1.0, float)


@pytest.mark.parametrize("spec, want", [
    ("keep_lru:keep_reused=no", "eviction policy 'keep_lru' option keep_reused=no: expected true or false"),
    ("keep_lru:depth=2.5", "eviction policy 'keep_lru' option depth=2.5: expected an integer"),
    ("keep_lru:share=half", "eviction policy 'keep_lru' option share=half: expected a number")])
def test_value_that_does_not_convert_is_refused(keep_lru, spec, want):
    with pytest.raises(UserError) as err:
        reg.make_policy(spec, 10)
    assert str(err.value).startswith(want) and "\n" not in str(err.value)


def test_builtin_text_option_unchanged():
    # lfu's aging default is text ('dynamic'): the value is passed as read
    assert reg.make_policy("lfu:aging=none", 10).aging == "none"
