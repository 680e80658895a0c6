"""Alignment of plain-text tables (pcs.report.table.render_table)."""
import os

from helpers import ROOT, invoke
from pcs.report.table import render_table


def test_a_name_that_starts_with_a_digit_stays_with_the_names():
    # `pcs policies` printed "                2q" right-aligned among left-aligned names (lru, slru, ...)
    out = render_table(["policy", "hits"], [["slru", "10"], ["2q", "7"]]).splitlines()
    assert out[2] == "slru      10" and out[3] == "2q         7"


def test_a_first_column_of_numbers_is_right_aligned():
    out = render_table(["blocks", "hit"], [["100", "3.8 %"], ["1,000", "6.4 %"]]).splitlines()
    assert out[2] == "   100  3.8 %" and out[3] == " 1,000  6.4 %"


def test_headers_show_the_bundled_trace_relative_to_the_working_directory(monkeypatch):
    # from a clone, `pcs trace stats` / `pcs replay` printed /abs/clone/traces/sample_chat.jsonl
    # where the README shows traces/sample_chat.jsonl; the header is relative under the working directory, else
    # as given (the JSON keeps the path read)
    from pcs.report.table import shown_relative_path

    monkeypatch.chdir(ROOT)
    assert shown_relative_path(ROOT / "traces" / "sample_chat.jsonl") == os.path.join("traces", "sample_chat.jsonl")
    assert shown_relative_path("traces/x.jsonl") == "traces/x.jsonl"
    monkeypatch.chdir(ROOT / "traces")
    assert shown_relative_path(ROOT / "README.md") == str(ROOT / "README.md")     # outside the working directory: as is
    for words in (["trace", "stats"], ["replay", "--quiet", "--tier", "gpu=100blocks"]):
        monkeypatch.chdir(ROOT)
        out = invoke(*words).stdout
        assert "traces/sample_chat.jsonl" in out.splitlines()[0] and str(ROOT) not in out, words


def test_text_columns_left_align_a_detail_that_starts_with_a_count():
    # "12 tokens" looks numeric (a digit first, two words): right-aligned by default under a 22-column header's
    # cells, left-aligned in a column of prose
    rows = [["x", "12 tokens"], ["y", "a longer sentence here"]]
    default = render_table(["a", "detail"], rows).split("\n")
    assert default[2] == "x  " + " " * 13 + "12 tokens"
    prose = render_table(["a", "detail"], rows, text_columns=(1,)).split("\n")
    assert prose[2] == "x  12 tokens" and prose[3] == "y  a longer sentence here"


def test_wide_characters_take_two_columns():
    # 存储层: 3 CJK characters, East Asian Width W: 6 terminal columns (Unicode Standard Annex 11); the column is 6 wide
    out = render_table(["tier", "x"], [["存储层", "1"], ["gpu", "2"]]).split("\n")
    assert out == ["tier    x", "------  -", "存储层  1", "gpu     2"]


def test_a_column_of_no_values_puts_its_dashes_where_numbers_stand():
    # Review 44c: pcs curve --no-belady's Belady columns (every cell None) printed '-' at the left while a
    # column of mostly numbers right-aligns its '-' (pcs replay); "Belady" is 6 wide, so the '-' is 5 spaces in;
    # a prose column (text_columns) and the first column of names keep theirs at the left
    out = render_table(["blocks", "LRU", "Belady"], [["1", "12.7 %", None], ["10", "23.6 %", None]]).splitlines()
    assert out[2] == "     1  12.7 %       -" and out[3] == "    10  23.6 %       -"
    out = render_table(["name", "why"], [["a", None]], text_columns=(1,)).splitlines()
    assert out[2] == "a     -"
    out = render_table(["policy", "n"], [[None, "3"], ["lru", "4"]]).splitlines()
    assert out[2] == "-       3"


def test_the_curve_without_belady_right_aligns_its_dashes():
    from helpers import SMALL_TRACE

    r = invoke("curve", SMALL_TRACE, "--no-belady", "--capacities", "1blocks")
    assert r.exit_code == 0, r.output
    header, row = r.stdout.splitlines()[1], r.stdout.splitlines()[3]
    # each '-' ends where its header ends (right-aligned), as the numbers do
    for name in ("Belady", "Belady block misses"):
        end = header.index(name) + len(name)
        assert row[end - 1] == "-" and row[end - 2] == " ", (header, row)
