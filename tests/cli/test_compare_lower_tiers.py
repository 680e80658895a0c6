"""``pcs compare``'s "hits served by lower tiers" row is the sum of the lower tiers' rows ``pcs replay`` of the same
run prints (their apportioned parts, :func:`pcs.units.split_percent_sum`), not the exact sum rounded alone.

The reviewer's run (sample_chat.jsonl, gpu 800, cpu 20, ssd 10 blocks, sequential): replay prints 5.8 / 0.1 / 0.1 %
(tests/report/test_split_percent_floor.py works the steps out by hand), so the lower tiers' row is 0.1 + 0.1 =
0.2 %; the exact sum 0.1030 % rounds to 0.1 %, which compare printed before.
"""
from __future__ import annotations

from helpers import ROOT, invoke

TIERS = ("--tier", "gpu=800blocks", "--tier", "cpu=20blocks", "--tier", "ssd=10blocks", "--timing", "sequential")


def _row(text: str, label: str) -> list[str]:
    line = next(ln for ln in text.splitlines() if ln.strip().startswith(label))
    return line.split(label, 1)[1].split()


def test_compare_lower_tiers_row_is_the_sum_of_replays_printed_rows():
    trace = ROOT / "traces" / "sample_chat.jsonl"
    rep = invoke("replay", trace, *TIERS)
    cmp = invoke("compare", trace, *TIERS, "--policy", "lru", "--policy", "fifo")
    assert rep.exit_code == 0 and cmp.exit_code == 0, rep.output + cmp.output
    assert _row(rep.stdout, "hits served by cpu") == ["0.1", "%"]
    assert _row(rep.stdout, "hits served by ssd") == ["0.1", "%"]
    assert _row(cmp.stdout, "hits served by lower tiers") == ["0.2", "%", "0.2", "%"]


def test_compare_html_page_and_report_print_the_text_tables_lower_tiers_row(tmp_path):
    # The HTML page is made from the compare JSON: it printed the exact sum rounded (0.1 %) beside the text table's
    # 0.2 % for the same run (review37d finding 2); each variant's JSON now carries hit_ratio_per_tier.
    import json
    import re

    trace = ROOT / "traces" / "sample_chat.jsonl"
    page, doc, again = tmp_path / "c.html", tmp_path / "c.json", tmp_path / "r.html"
    r = invoke("compare", trace, *TIERS, "--policy", "lru", "--policy", "fifo", "--html", page, "--format", "json")
    assert r.exit_code == 0, r.output
    doc.write_text(r.stdout)
    assert json.loads(r.stdout)["variants"][0]["hit_ratio_per_tier"].keys() == {"gpu", "cpu", "ssd"}
    assert invoke("report", doc, "-o", again).exit_code == 0
    for html in (page, again):
        text = re.sub(r"<[^>]+>", " ", html.read_text())
        row = text.split("hits served by lower tiers", 1)[1].split()[:4]
        assert row == ["0.2", "%", "0.2", "%"], row
