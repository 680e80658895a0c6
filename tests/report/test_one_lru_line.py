"""One LRU line for both renderers: the page's curve chart and the matplotlib figure of
`pcs curve --plot FILE` draw the same points, and the knee circles sit on the line. LRU is a step function of
the capacity (a block hits when its stack depth < capacity), so a point drawn at a knee's own capacity is on the
line only when the line has a vertex there; the check is exact equality with the one-pass curve's value.
"""
from __future__ import annotations

import pytest

import pcs
from pcs.report.htmlcharts import curve_chart
from pcs.report.htmlcurve import curve_line, lru_line


def _result():
    return pcs.curve(None, points=8, belady=False)         # the bundled sample, 8 grid capacities (as --points 8)


def _line_points(chart):
    return {(d["x"], d["y"]) for d in chart.spec["datasets"]["lines"] if d["series"] == "LRU"}


def test_the_line_passes_through_every_row_and_knee_at_its_exact_value():
    res = _result()
    line = dict(curve_line(res))
    knees = [k for k in res.to_dict()["knee"].values() if k["capacity_blocks"]]
    assert knees                                           # the sample reaches 50/90/99 % of its ceiling
    for k in knees:
        assert line[k["capacity_blocks"]] == k["lru_hit_ratio"]
    for r in res.rows:
        if r.capacity_blocks >= 1:
            assert line[r.capacity_blocks] == r.lru_hit_ratio
    assert float(res.lru.hit_ratio([max(line)])[0]) == line[max(line)]


def test_lru_line_is_geometric_from_one_block_and_keeps_exact_capacities():
    class Stairs:      # hit ratio = capacity / 1000, capped at 1: easy to check by hand
        @staticmethod
        def hit_ratio(caps):
            import numpy as np
            return np.minimum(np.asarray(caps, dtype=float) / 1000, 1.0)

    pts = lru_line(Stairs, 100, exact=[37, 0, None, 37])
    caps = [c for c, _ in pts]
    assert caps[0] == 1 and caps[-1] == 150                # 1 block to 1.5 x 100
    assert caps == sorted(set(caps)) and 37 in caps and 0 not in caps
    assert dict(pts)[37] == pytest.approx(0.037)


def test_the_page_and_the_matplotlib_figure_draw_the_same_points():
    pytest.importorskip("matplotlib")
    from pcs.report.curve import curve_figure

    res = _result()
    payload = {**res.to_dict(), "trace": "sample", "lru_dense": curve_line(res)}
    chart = curve_chart(payload)
    fig = curve_figure(res, None)
    xs, ys = fig.axes[0].lines[0].get_data()
    import matplotlib.pyplot as plt
    plt.close(fig)
    page = sorted(_line_points(chart))
    assert [int(x) for x in xs] == [c for c, _ in page]
    assert [y / 100 for y in ys] == pytest.approx([h for _, h in page], rel=1e-12)
    knees = {(k["x"], k["y"]) for k in chart.spec["datasets"]["knees"]}
    assert knees and knees <= _line_points(chart)          # every knee circle is a vertex of the LRU line
    assert "every capacity" in chart.caption


def test_a_curve_json_without_the_line_draws_lru_through_its_rows_and_knees():
    payload = {**_result().to_dict(), "trace": "sample"}   # what pcs report reads from a pcs curve JSON
    chart = curve_chart(payload)
    knees = {(k["x"], k["y"]) for k in chart.spec["datasets"]["knees"]}
    assert knees and knees <= _line_points(chart)
    assert "exact there, straight between" in chart.caption
