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
    from pcs.report.table import shown_path

    monkeypatch.chdir(ROOT)
    assert shown_path(ROOT / "traces" / "sample_chat.jsonl") == os.path.join("traces", "sample_chat.jsonl")
    assert shown_path("traces/x.jsonl") == "traces/x.jsonl"
    monkeypatch.chdir(ROOT / "traces")
    assert shown_path(ROOT / "README.md") == str(ROOT / "README.md")     # outside the working directory: as is
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
