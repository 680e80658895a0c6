"""pcs footprint --html / --plot draws the table: bytes per component stacked in each accounting mode.

gemma-3-27b, TP 8, B = 512, 10,000 tokens, one sequence (per rank: a layer's token 1,024 B; docs/semantics.md §13.1):
- Reference: full 10 layers x 10,000 x 1,024 = 102,400,000; sliding 52 x 1,024 held x 1,024 = 54,525,952;
  padding 0 -> 156,925,952.
- Reserved: full ceil(10,000 / 512) = 20 blocks x 5,242,880 = 104,857,600; sliding ceil(1,024 / 512) + 1 = 3 blocks
  x 27,262,976 = 81,788,928; padding 3 x 4,194,304 = 12,582,912 -> 199,229,440.
- Prefix store: floor(10,000 / 512) = 19 blocks x 7 pages x 5,242,880 = 697,303,040.
"""
import json

from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.report.htmlcharts import footprint_chart


def _payload():
    out = CliRunner().invoke(cli, ["footprint", "--model", "gemma-3-27b", "--tokens", "10000", "--block-size", "512",
                                   "--tp", "8", "--format", "json", "-q"])
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def test_bars_stack_to_the_tables_totals():
    chart = footprint_chart(_payload())
    rows = chart.spec["datasets"]["bars"]
    per_mode = {m: {r["series"]: r["y"] for r in rows if r["mode"] == m}
                for m in ("Reference", "Serialized", "Reserved", "Prefix store")}
    assert per_mode["Reference"] == {"full_attention": 102_400_000, "sliding_window": 54_525_952, "page padding": 0}
    assert per_mode["Reserved"] == {"full_attention": 104_857_600, "sliding_window": 81_788_928,
                                    "page padding": 12_582_912}
    assert sum(per_mode["Reserved"].values()) == 199_229_440
    assert sum(per_mode["Prefix store"].values()) == 19 * 7 * 5_242_880 == 697_303_040
    assert sum(per_mode["Reference"].values()) == 156_925_952


def test_page_carries_the_chart(tmp_path):
    page = tmp_path / "fp.html"
    out = CliRunner().invoke(cli, ["footprint", "--model", "gemma-3-27b", "--tokens", "10000", "--block-size", "512",
                                   "--tp", "8", "-q", "--html", str(page)])
    assert out.exit_code == 0, out.output
    text = page.read_text()
    assert 'data-chart="footprint_bytes"' in text and '<script type="application/json" id="pcs-charts">{}' not in text
