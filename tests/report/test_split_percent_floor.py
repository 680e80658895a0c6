"""Parts printed under a total (`hits served by` each tier under the real hit ratio) never hide a tier that
served hits as 0.0 % when the total's 0.1 % steps give every non-zero part one (docs/semantics.md §12,
:func:`pcs.units.split_percent`).

Hand cases (one decimal of a percent, steps of 0.1 %):

- the reviewer's run (gpu 800, cpu 20, ssd 10 blocks, sequential): shares 5.9298 / 0.0527 / 0.0503 %, total
  6.0328 % printed 6.0 % = 60 steps. Floors 59 + 0 + 0; cpu and ssd are above 0 and 60 steps >= 3 parts, so
  both are raised to 1 step: 59 + 1 + 1 = 61, one over 60: the step is taken from gpu (the only part of 2 steps
  or more): 5.8 % + 0.1 % + 0.1 % = 6.0 %. Before: 5.9 + 0.1 + 0.0 (ssd hidden).
- 3.9 / 0.04 / 0.03 / 0.03 % of 4.0 %: floors 39 + 0 + 0 + 0, raised 39 + 1 + 1 + 1 = 42, two over 40: both
  from the first part: 3.7 + 0.1 + 0.1 + 0.1 (3.7 is 0.2 below 3.9: the two steps it gave).
- 0.04 / 0.04 / 0.02 % of 0.1 % (1 step, 3 parts above 0): too few steps to raise them; plain largest
  remainder: the step to the first of the two tied largest remainders: 0.1 + 0.0 + 0.0.
- 2.06 / 0.02 / 0.02 % of 2.1 %: floors 20 + 0 + 0, raised 20 + 1 + 1 = 22, one over 21: 1.9 + 0.1 + 0.1.
- a step above its own rounding: 5.94 / 2.03 % of 7.97 % (80 steps): floors 59 + 20, the step left to the
  larger remainder (.4 against .3): 6.0 + 2.0, where 5.94 alone rounds to 5.9.
"""
from __future__ import annotations

from decimal import Decimal

from hypothesis import given, settings, strategies as st

from pcs.units import percent_units, split_percent, split_percent_sum


def _steps(texts: list[str]) -> list[int]:
    return [int(Decimal(t.removesuffix(" %")) * 10) for t in texts]


def test_a_part_that_served_hits_is_not_hidden_by_hand():
    assert split_percent([0.059298, 0.000527, 0.000503], 0.060328) == ["5.8 %", "0.1 %", "0.1 %"]
    assert split_percent([0.039, 0.0004, 0.0003, 0.0003], 0.040) == ["3.7 %", "0.1 %", "0.1 %", "0.1 %"]
    assert split_percent([0.0004, 0.0004, 0.0002], 0.001) == ["0.1 %", "0.0 %", "0.0 %"]
    assert split_percent([0.0206, 0.0002, 0.0002], 0.021) == ["1.9 %", "0.1 %", "0.1 %"]
    assert split_percent([0.0594, 0.0203], 0.0797) == ["6.0 %", "2.0 %"]
    assert split_percent([0.0, 0.0004, 0.0206], 0.021) == ["0.0 %", "0.1 %", "2.0 %"]   # a part of 0 stays 0


_PART = st.one_of(st.just(0.0), st.floats(0.0, 0.002), st.floats(0.0, 1.0))


@settings(max_examples=3000, deadline=None)
@given(st.lists(_PART, min_size=2, max_size=4))
def test_split_properties(parts):
    """Any 2-4 parts summing to at most 1: the printed steps sum to the printed total's; none below 0 or above
    the total; a part above 0 is at least one step when the total's steps are at least the parts above 0; each
    part less than a step above its exact value and less than (1 + parts raised) steps below it (less than one
    when no part was raised); equal parts differ by at most a step."""
    s = sum(parts)
    if s > 1.0:
        parts = [p / s for p in parts]
        s = sum(parts)
    target = percent_units(s)
    got = _steps(split_percent(parts, s))
    exact = [p * 1000.0 for p in parts]
    positive = sum(x > 0 for x in exact)
    raised = sum(0 < x < 1 for x in exact) if positive <= target else 0
    assert sum(got) == target
    for u, x in zip(got, exact):
        assert 0 <= u <= target
        assert u < x + 1 + 1e-9
        assert u > x - 1 - raised - 1e-9
        if x == 0:
            assert u == 0
        elif positive <= target:
            assert u >= 1
    for i in range(len(parts)):
        for j in range(len(parts)):
            if parts[i] == parts[j]:
                assert abs(got[i] - got[j]) <= 1


def test_a_part_below_zero_counts_as_zero():
    # float noise of a sum (-1e-12): before, it floored to -1 step, printed -0.1 % and the step went to another
    # part (5.1 %). Counted as 0: 5.0 + 0.0 + 1.0 = 6.0 %, each part its own rounding.
    assert split_percent([0.05, -1e-12, 0.01], 0.06) == ["5.0 %", "0.0 %", "1.0 %"]
    assert split_percent([-1e-12], 0.0) == ["0.0 %"]


def test_the_sum_of_the_lower_parts_is_the_sum_of_their_printed_steps():
    # the reviewer's run: cpu and ssd print 0.1 % each (hand case above), so their sum prints 0.2 %, though the
    # exact sum 0.1030 % rounds to 0.1 %; parts that fall back (not summing to the total) give the exact sum.
    assert split_percent_sum([0.059298, 0.000527, 0.000503], 0.060328, 1) == "0.2 %"
    assert split_percent_sum([0.039, 0.0004, 0.0003, 0.0003], 0.040, 1) == "0.3 %"
    assert split_percent_sum([0.05, 0.01], 0.5, 1) == "1.0 %"
    assert split_percent_sum([0.05, None], None, 1) == "-"
