"""Figure tick labels in the text reports' style (pcs.units: a space, then the decimal prefix and the unit):
16.78e9 B reads "16.8 GB" (three significant digits), 4e11 B "400 GB" (not "0.4T"), 1,500 B "1.5 kB",
900 B "900 B", 2e11 B/s "200 GB/s". Rendered by Vega-Lite itself (vl-convert, the plot extra)."""
from __future__ import annotations

import re

import pytest

from pcs.report.htmlcharts import _capacity_axis, unit_label

VALUES = {0: "0 B", 900: "900 B", 1500: "1.5 kB", 16.78e9: "16.8 GB", 4e11: "400 GB", 1.68e12: "1.68 TB",
          2e12: "2 TB"}


def _labels(values, expr, unit):
    vlc = pytest.importorskip("vl_convert")
    spec = {"data": {"values": [{"x": i, "y": v} for i, v in enumerate(values)]}, "mark": "point",
            "encoding": {"x": {"field": "x", "type": "ordinal"},
                         "y": {"field": "y", "type": "quantitative", "axis": {"values": list(values),
                                                                              "labelExpr": expr}}}}
    return re.findall(rf">([0-9][^<>]*{re.escape(unit)})</text>", vlc.vegalite_to_svg(spec))


def test_byte_ticks_read_as_the_text_reports_write_them():
    assert sorted(_labels(VALUES, unit_label("datum.value", "B"), "B")) == sorted(VALUES.values())


def test_rates_take_the_same_rule():
    assert set(_labels([2e11, 1e12], unit_label("datum.value", "B/s"), "B/s")) == {"200 GB/s", "1 TB/s"}


def test_the_curves_bytes_axis_uses_it_over_the_block_decades():
    # 167,772,160 B per block (llama-2-70b fp16, 512 tokens): 100 blocks = 16.8 GB, 1,000 = 168 GB, 10^4 = 1.68 TB
    _, top = _capacity_axis(512, 167_772_160, (50, 20_000))
    assert top["values"] == [100, 1000, 10000]
    assert top["labelExpr"] == unit_label("datum.value * 167772160", "B")
    got = _labels([v * 167_772_160 for v in top["values"]], unit_label("datum.value", "B"), "B")
    assert sorted(got) == sorted(["16.8 GB", "168 GB", "1.68 TB"])
