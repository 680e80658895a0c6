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
