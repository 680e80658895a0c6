"""``render_table(wrap=True)``: a last column of sentences wraps under itself so the table fits 100 columns.

Worked by hand: a first column 5 wide ("label") and its 2-space gap leave 100 - 7 = 93 columns; 30 words of
4 letters take 30 x 5 - 1 = 149; 18 words take 89 (19 would take 94 > 93), so the cell wraps as 18 + 12 words,
the second line indented 7 spaces, under its column.
"""
from __future__ import annotations

from pcs.report.table import render_table

WORDS = " ".join(["abcd"] * 30)


def test_a_long_last_cell_wraps_under_its_column():
    lines = render_table(["label", "what"], [["x", WORDS], ["y", "short"]], wrap=True).split("\n")
    assert lines[0] == "label  what"
    assert lines[1] == "-----  " + "-" * 89                    # the column's width: its longest line
    assert lines[2] == "x      " + " ".join(["abcd"] * 18)
    assert lines[3] == " " * 7 + " ".join(["abcd"] * 12)
    assert lines[4] == "y      short"
    assert max(map(len, lines)) <= 100


def test_a_table_that_fits_is_left_alone():
    rows = [["x", "a sentence of some words"]]
    assert render_table(["label", "what"], rows, wrap=True) == render_table(["label", "what"], rows)


def test_without_wrap_or_room_the_cell_stays_on_its_row():
    assert len(render_table(["label", "what"], [["x", WORDS]]).split("\n")) == 3
    wide = "w" * 80                                              # leaves 100 - 82 = 18 < 30 columns: no wrap
    assert len(render_table(["label", "what"], [[wide, WORDS]], wrap=True).split("\n")) == 3


def _wrapped_lines(cell: str) -> list[str]:
    """The lines of a one-row table whose first column (68 wide) leaves the wrapped column 30 columns of 100."""
    out = render_table(["name", "meaning"], [["n" * 68, cell]], wrap=True).split("\n")
    return [line[70:] for line in out[2:]]


def test_a_number_keeps_its_unit_on_its_line():
    # "the sequential replay's" is 23 columns; " (3.8" brings it to 28, " %)" would make 31 > 30: a wrap at spaces
    # alone gives "... (3.8" / "%) share" (the sample replay's capacity gap, 2026-12-04). The number and its unit
    # move together.
    assert _wrapped_lines("the sequential replay's (3.8 %) share") == ["the sequential replay's", "(3.8 %) share"]
    # every unit of the kind, with punctuation after it
    for unit in ("pts,", "GB)", "TB;", "blk", "ms.", "x,"):   # each 3+ columns with its space: 31 > 30
        lines = _wrapped_lines(f"the sequential replay's (3.8 {unit} share")
        assert lines == ["the sequential replay's", f"(3.8 {unit} share"], unit


def test_no_line_ends_with_a_bare_operator():
    # "ideal 37.7 % (no cap, part)" is 27 columns, " -" 29: a wrap at spaces alone ends the line with "-".
    assert _wrapped_lines("ideal 37.7 % (no cap, part) - single-sequence") == [
        "ideal 37.7 % (no cap, part)", "- single-sequence"]
    assert _wrapped_lines("sequential - real: in flight (< 0: cached outputs)") == [
        "sequential - real: in flight", "(< 0: cached outputs)"]


def test_a_word_that_is_not_a_unit_may_start_a_line():
    # "percent" is no unit: the wrap breaks at its space as before
    assert _wrapped_lines("the sequential replay's (3.8 percent) share") == [
        "the sequential replay's (3.8", "percent) share"]
