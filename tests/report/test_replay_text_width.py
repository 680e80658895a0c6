"""pcs replay's text: the tier table (11 columns, 132 wide on the bundled sample) and the envelope table (10
columns, 167 wide) fit 100 columns, as the hit-ratio table does: render_table(split=...) shows a table too wide
as consecutive tables that repeat the row names (the tier, then its traffic; the restores, then vs recompute).

Worked by hand for the unit cases: columns 1, 60 and 40 wide take 1 + 60 + 40 + 2 x 2 = 105 > 100; column 0 with
column 1 takes 1 + 2 + 60 = 63, adding column 2 would take 105, so it starts the second table: [0, 1], [0, 2].
"""
from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.report.table import render_table

A, B = "a" * 60, "b" * 40


def test_a_table_too_wide_is_shown_as_tables_that_repeat_the_first_column():
    out = render_table(["n", A, B], [["x", "1", "2"]], title="T", notes=["why"], split=True).split("\n")
    assert out == ["T", f"n  {A}", "-  " + "-" * 60, "x  " + " " * 59 + "1",
                   f"n  {B}", "-  " + "-" * 40, "x  " + " " * 39 + "2", "note: why"]


def test_a_given_start_begins_a_new_table_even_where_more_would_fit():
    # columns 30 wide: 1 + 4 x 32 = 129 > 100; a start at 3 gives [0, 1, 2] (65 wide) and [0, 3, 4]
    heads = ["n", *(c * 30 for c in "abcd")]
    out = render_table(heads, [["x", "1", "2", "3", "4"]], split=(3,)).split("\n")
    assert [line.split()[1:] for line in out if line.startswith("n ")] == [[heads[1], heads[2]], [heads[3], heads[4]]]


def test_a_table_that_fits_is_left_alone():
    rows = [["gpu", "1", "2"]]
    assert render_table(["tier", "hit", "evicted"], rows, split=(2,)) == render_table(["tier", "hit", "evicted"], rows)


@pytest.fixture(scope="module")
def text() -> str:
    r = CliRunner().invoke(cli, ["replay", "-q"])
    assert r.exit_code == 0, r.output
    return r.stdout


def _section(text: str, title: str) -> list[str]:
    start = next(i for i, line in enumerate(text.split("\n")) if line.startswith(title))
    lines = text.split("\n")[start:]
    return lines[:lines.index("")] if "" in lines else lines


def _headers(lines: list[str], first: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line) for line in lines if line.startswith(first + " ")]


def test_tier_and_envelope_tables_fit_100_columns(text):
    for title in ("Tiers", "Bandwidth envelope"):
        table = [line for line in _section(text, title) if not line.startswith("note: ")]
        assert max(map(len, table)) <= 100, "\n".join(table)


def test_the_tier_table_shows_the_tier_then_its_traffic(text):
    lines = _section(text, "Tiers")
    assert _headers(lines, "tier") == [["tier", "layout", "bytes/block", "capacity", "policy"],
                                       ["tier", "hit blocks", "restored", "written", "evicted", "resident end",
                                        "resident peak"]]
    assert [line.split()[0] for line in lines if line.startswith(("payload", "gpu", "cpu"))] == \
        ["payload", "gpu", "cpu"] * 2                       # every row in both tables, in the same order


def test_the_envelope_shows_the_restores_then_the_comparison_with_recompute(text):
    lines = _section(text, "Bandwidth envelope")
    assert _headers(lines, "link") == [["link", "bandwidth", "restores", "bytes", "transfer time", "queueing"],
                                       ["link", "prefill saved", "slower than recompute", "break-even (TP group)",
                                        "break-even per GPU"]]
    assert sum(line.startswith("cpu -> gpu") for line in lines) == 2


def _cells(lines: list[str], widths: list[int]) -> list[list[str]]:
    """Each line cut into its columns of ``widths`` (two spaces between), trailing spaces dropped."""
    out = []
    for line in lines:
        at, cells = 0, []
        for w in widths:
            cells.append(line[at:at + w].rstrip())
            at += w + 2
        out.append(cells)
    return out


def test_each_group_aligns_each_column_as_the_whole_table():
    # render_table(split=...)'s docstring: every column as wide and on the same side as in the whole table.
    # Column widths by hand: "n"/"10"/"x" -> 2 (the names, numeric: "10" and "x" are not all numbers -> left);
    # A (60) over "1" (right), None and "word" (left): "-" goes right only where more than half the column's
    # values are numbers, here one of two: left; B (40) over "2.5 %", "text", "3".
    headers, rows = ["n", A, B], [["10", "1", "2.5 %"], ["x", None, "text"], ["y", "word", "3"]]
    whole = render_table(headers, rows).split("\n")
    parts = render_table(headers, rows, split=True).split("\n")
    assert [len(p) for p in (whole[0], parts[0])] == [2 + 2 + 60 + 2 + 40, 2 + 2 + 60]     # 106 > 100: split
    first, second = parts[:5], parts[5:]
    assert _cells(first, [2, 60]) == [row[:2] for row in _cells(whole, [2, 60, 40])]
    assert _cells(second, [2, 40]) == [[row[0], row[2]] for row in _cells(whole, [2, 60, 40])]
    assert _cells(first, [2, 60])[2:] == [["10", " " * 59 + "1"], ["x", "-"], ["y", "word"]]
