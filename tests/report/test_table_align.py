"""Alignment of plain-text tables (pcs.report.table.render_table)."""
from pcs.report.table import render_table


def test_a_name_that_starts_with_a_digit_stays_with_the_names():
    # `pcs policies` printed "                2q" right-aligned among left-aligned names (lru, slru, ...)
    out = render_table(["policy", "hits"], [["slru", "10"], ["2q", "7"]]).splitlines()
    assert out[2] == "slru      10" and out[3] == "2q         7"


def test_a_first_column_of_numbers_is_right_aligned():
    out = render_table(["blocks", "hit"], [["100", "3.8 %"], ["1,000", "6.4 %"]]).splitlines()
    assert out[2] == "   100  3.8 %" and out[3] == " 1,000  6.4 %"
