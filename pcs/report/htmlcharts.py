"""The report's figures as Vega-Lite specifications: one function per figure, used by the page and by ``--plot``.

Each function takes JSON payloads (the dicts ``pcs replay/compare/curve
--format json`` print, documented in docs/replay.md and docs/curves.md) and
returns a :class:`Chart` or None when its data is absent. The same spec is
drawn by the browser in the HTML page (Vega and Vega-Lite inlined,
:mod:`pcs.report.html`) and converted to PNG/SVG by ``--plot``
(:mod:`pcs.report.htmlplot`), so a figure is defined once (docs/report.md
says why Vega-Lite).

Grey-scale: every series differs in dash pattern (lines) or shape (points)
as well as colour, and the palette's colours differ in lightness
(Okabe & Ito 2008, "Color Universal Design"). Axis titles carry units.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from pcs.errors import shown_name
from pcs.units import format_counted, format_rate, plural

__all__ = ["Chart", "PALETTE", "DASHES", "SHAPES", "waterfall_chart", "curve_chart", "ttft_chart",
           "restore_chart", "compare_chart", "compare_curve_chart", "footprint_chart"]

#: Series colours, in series order: black, orange, blue, grey, vermillion, sky blue (Okabe-Ito; distinct lightness).
PALETTE = ("#000000", "#e69f00", "#0072b2", "#999999", "#d55e00", "#56b4e9", "#009e73", "#cc79a7")
#: Dash patterns, in series order (solid first).
DASHES = ([1, 0], [6, 3], [2, 2], [8, 3, 2, 3], [12, 4], [1, 4], [4, 1], [10, 2, 2, 2])
#: Point shapes, in series order.
SHAPES = ("circle", "square", "triangle-up", "diamond", "cross", "triangle-down", "triangle-left", "wedge")

WIDTH_PX, HEIGHT_PX = 640, 300
#: legend labels' width limit in px: 0, none (Vega's default, 160, cut "LRU, estimated (SHARDS sample rate 0.0...")
LEGEND_LABEL_LIMIT = 0
_PCT = ".1%"


@dataclass(frozen=True, slots=True)
class Chart:
    """One figure.

    Attributes:
        id: HTML element id and the file stem under ``--plot DIR``.
        title: the figure's title (also in the spec).
        spec: the Vega-Lite specification (a JSON-able dict, data inlined).
        series: drawn mark groups the browser must show: one per line of a
            multi-line layer, one per other non-empty layer (checked by
            tests/report/test_html_browser.py).
        caption: one or two sentences under the figure: what it shows and how to read it.
    """

    id: str
    title: str
    spec: dict
    series: int
    caption: str


def _spec(title: str, layers: list[dict], datasets: dict[str, list], **extra: Any) -> dict:
    spec = {"title": {"text": title, "anchor": "start", "fontSize": 14}, "width": WIDTH_PX, "height": HEIGHT_PX,
            "datasets": datasets, "layer": layers,
            "config": {"view": {"stroke": None}, "axis": {"labelFontSize": 11, "titleFontSize": 12},
                       "legend": {"labelFontSize": 11, "orient": "right", "labelLimit": LEGEND_LABEL_LIMIT},
                       "background": "white"}}
    spec.update(extra)
    return spec


def _series_scales(names: Sequence[str]) -> dict[str, dict]:
    n = len(names)
    return {"color": {"domain": list(names), "range": list(PALETTE[:n])},
            "strokeDash": {"domain": list(names), "range": list(DASHES[:n])},
            "shape": {"domain": list(names), "range": list(SHAPES[:n])}}


def _lines(data: str, x: dict, y: dict, names: Sequence[str], title: str = "series") -> dict:
    """A multi-line layer: long rows {x, y, series}; colour and dash by series (a legend)."""
    sc = _series_scales(names)
    return {"data": {"name": data}, "mark": {"type": "line", "strokeWidth": 2, "tooltip": True},
            "encoding": {"x": x, "y": y,
                         "color": {"field": "series", "type": "nominal", "scale": sc["color"],
                                   "legend": {"title": title}},
                         "strokeDash": {"field": "series", "type": "nominal", "scale": sc["strokeDash"],
                                        "legend": {"title": title}}}}


def _q(field: str, title: str, **kw: Any) -> dict:
    return {"field": field, "type": "quantitative", "title": title, **kw}


def _log_ok(values: Sequence[float]) -> bool:
    return bool(values) and min(values) > 0


def _rows(xs: Sequence[float], ys: Sequence[float], series: str) -> list[dict]:
    return [{"x": x, "y": y, "series": series} for x, y in zip(xs, ys)
            if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)]


def _hrule(data: str, rule: dict, label: dict) -> list[dict]:
    """A horizontal rule at each row's ``y`` and its ``label`` text above it, left-aligned (two layers)."""
    y = {"field": "y", "type": "quantitative"}
    return [{"data": {"name": data}, "mark": {"type": "rule", **rule}, "encoding": {"y": y}},
            {"data": {"name": data}, "mark": {"type": "text", "align": "left", "x": 4, "dy": -6, **label},
             "encoding": {"y": y, "text": {"field": "label"}}}]


def _labelled_points(data: str, xs: dict, point: dict, label: dict, x_axis: dict | None = None) -> list[dict]:
    """Points at each row's (``x``, ``y``) and their ``label`` texts (two layers); ``x_axis`` on the points."""
    x = {"field": "x", "type": "quantitative", "scale": xs}
    y = {"field": "y", "type": "quantitative"}
    return [{"data": {"name": data}, "mark": {"type": "point", "tooltip": True, **point},
             "encoding": {"x": {**x, **({"axis": x_axis} if x_axis else {})}, "y": y}},
            {"data": {"name": data}, "mark": {"type": "text", **label},
             "encoding": {"x": x, "y": y, "text": {"field": "label"}}}]


def waterfall_chart(s: dict, oracle: dict | None) -> Chart | None:
    """The gap split (docs/semantics.md §12) as a waterfall: ideal -> single-sequence -> sequential -> real.

    Args:
        s: a replay payload (``ideal_hit_ratio``, ``single_sequence_hit_ratio``,
            ``sequential_hit_ratio``, ``hit_ratio``, ``gap``).
        oracle: ``{"hit_ratio", "capacity_blocks"}`` of Belady at the run's
            capacity (:mod:`pcs.report.htmlcurve`), drawn as a dashed rule; or None.
    """
    g = s["gap"]
    ss = s["single_sequence_hit_ratio"]
    if ss is None or s["hit_ratio"] is None:
        return None   # no prompt tokens: every ratio is 0/0 (null), nothing to draw
    from pcs.report.replay import payload_gap_texts
    from pcs.units import format_percent

    hyb = g.get("hybrid_rules") or 0.0   # a hybrid model's term, taken out of capacity and eviction (§12)
    shown = payload_gap_texts(s)         # each gap label the difference of the printed levels, as the text report
    steps = [("ideal", 0.0, s["ideal_hit_ratio"], "level"),
             ("block rounding", s["ideal_hit_ratio"], ss, shown["block_rounding"]),
             ("single-sequence", 0.0, ss, "level")]
    if hyb:
        steps.append(("hybrid rules (sequential replay)", ss, ss - hyb, shown["hybrid_rules"]))
    steps += [("capacity and eviction", ss - hyb, s["sequential_hit_ratio"], shown["capacity_eviction"]),
              ("sequential", 0.0, s["sequential_hit_ratio"], "level"),
              ("concurrency", s["sequential_hit_ratio"], s["hit_ratio"], shown["concurrency"]),
              ("real", 0.0, s["hit_ratio"], "level")]
    assert abs(s["ideal_hit_ratio"] - g["block_rounding"] - g["capacity_eviction"] - g["concurrency"] - hyb
               - s["hit_ratio"]) < 1e-9, "the gap terms sum to ideal - real (docs/semantics.md §12)"
    rows = [{"step": n, "lo": min(a, b), "hi": max(a, b), "kind": "level" if k == "level" else "gap",
             "label": format_percent(b) if k == "level" else k} for n, a, b, k in steps]
    order = [r["step"] for r in rows]
    x = {"field": "step", "type": "nominal", "sort": order, "title": None,
         "axis": {"labelAngle": 0, "labelExpr": "split(datum.label, ' ')"}}
    layers = [
        {"data": {"name": "steps"}, "mark": {"type": "bar", "tooltip": True, "stroke": "#000", "strokeWidth": 0.5},
         "encoding": {"x": x, "y": _q("lo", "hit ratio (share of prompt tokens)", axis={"format": _PCT}),
                      "y2": {"field": "hi"},
                      "color": {"field": "kind", "type": "nominal", "legend": None,
                                "scale": {"domain": ["level", "gap"], "range": ["#4d4d4d", "#d9d9d9"]}}}},
        {"data": {"name": "steps"}, "mark": {"type": "text", "dy": -7, "fontSize": 11},
         "encoding": {"x": x, "y": {"field": "hi", "type": "quantitative"}, "text": {"field": "label"}}},
    ]
    datasets = {"steps": rows}
    series = 2
    if oracle is not None and oracle.get("hit_ratio") is not None:
        datasets["oracle"] = [{"y": oracle["hit_ratio"],
                               "label": f"oracle (Belady at {format_counted(oracle['capacity_blocks'], 'block')}) "
                                        f"{100 * oracle['hit_ratio']:.1f} %"}]
        layers += _hrule("oracle", {"strokeDash": [6, 3], "color": "#d55e00", "strokeWidth": 2},
                         {"align": "right", "x": WIDTH_PX, "color": "#d55e00"})
        series += 2
    title = "Where the hits go: ideal to real"
    return Chart("gap", title, _spec(title, layers, datasets), series,
                 "Dark bars are hit ratios, light bars the gap terms between them, signed as the text report's gap "
                 "rows (level before - level after; they sum to ideal - real)."
                 + (" The dashed line is the offline optimum (Belady) with one cache of the run's total blocks."
                    if "oracle" in datasets else ""))


def unit_label(value: str, unit: str) -> str:
    """A Vega expression labelling the number ``value`` (an expression) in decimal SI prefixes as the text reports
    write a size or a rate (:mod:`pcs.units`): three significant digits, a space, the prefix and the unit --
    ``16.8 GB``, ``400 GB``, ``1.5 kB``, ``900 B``, ``20 GB/s`` (d3's ``~s`` alone wrote ``16.8G B``; an axis
    ``format`` shares one prefix between its ticks, ``0.4T``)."""
    num = f"format({value}, '.3~s')"
    return (f"test(regexp('[kMGTPE]$'), {num}) ? replace({num}, regexp('([kMGTPE])$'), ' $1{unit}') "
            f": {num} + ' {unit}'")


def _decades(lo: float, hi: float) -> list[int]:
    """The powers of 10 in ``[lo, hi]`` (at least ``lo``'s decade when none is): the tick values both capacity
    axes share, so each bytes label on top sits over the block count below it."""
    out, v = [], 1
    while v <= hi:
        if v >= lo:
            out.append(v)
        v *= 10
    return out or [max(1, int(lo))]


def _capacity_axis(block_size: int, top_bytes_per_block: int | None,
                   domain: tuple[float, float] | None = None) -> tuple[dict, dict | None]:
    """The blocks axis (bottom) and, with bytes per block known, the same scale labelled in decimal bytes (top:
    ``16.8 GB``, a space before the unit as every text report prints it), both ticked at the powers of 10 of
    ``domain`` (blocks) so the labels line up; without ``domain`` Vega-Lite picks the ticks."""
    ticks = {"values": _decades(*domain)} if domain else {}
    bottom = {"title": f"capacity (blocks of {format_counted(block_size, 'token')}, log scale)", "format": "~s", "labelOverlap": "greedy",
              "labelSeparation": 6, **ticks}
    if not top_bytes_per_block:
        return bottom, None
    top = {"orient": "top", "grid": False,
           "title": f"capacity (decimal bytes; {top_bytes_per_block:,} B per block, log scale)",
           "labelExpr": unit_label(f"datum.value * {int(top_bytes_per_block)}", "B"), "labelOverlap": "greedy",
           "labelSeparation": 6, **ticks}
    return bottom, top


def _lru_points(curve: dict, rows: Sequence[dict]) -> tuple[list, bool]:
    """The LRU line's points and whether they sample every capacity: ``lru_dense`` (:func:`pcs.report.htmlcurve.
    lru_line`, through the rows and knees), else -- a curve JSON given to pcs report -- its rows and knees, where
    LRU is exact, so the knee circles sit on the line (never off it)."""
    dense = [(c, h) for c, h in curve.get("lru_dense") or [] if c >= 1]
    if dense:
        return dense, True
    at = {r["capacity_blocks"]: r["lru_hit_ratio"] for r in rows}
    at.update({k["capacity_blocks"]: k["lru_hit_ratio"] for k in (curve.get("knee") or {}).values()
               if k.get("capacity_blocks")})
    return sorted(at.items()), False


def _belady_point(bel: list, layers: list, datasets: dict, xs: dict) -> int:
    """With one Belady capacity in ``bel`` ([(capacity_blocks, hit_ratio)]), its point and label added to
    ``layers`` and ``datasets`` (a point, not a line); the number of legend series added (2, or 0)."""
    if len(bel) != 1:
        return 0
    datasets["belady"] = [{"x": bel[0][0], "y": bel[0][1], "label": f"Belady {100 * bel[0][1]:.1f} %"}]
    layers += _labelled_points("belady", xs, {"shape": "diamond", "filled": True, "size": 90, "color": "#e69f00"},
                               {"align": "right", "dx": -8, "dy": -8, "color": "#b07800"})
    return 2


def curve_chart(curve: dict, marks: Sequence[dict] = (), chart_id: str = "curve") -> Chart | None:
    """Hit ratio against capacity: LRU, Belady, the ceiling, the knees and the run's capacities.

    Args:
        curve: a ``pcs curve`` payload (``rows``, ``knee``, ``ceiling_hit_ratio``,
            ``block_size``), optionally with ``lru_dense`` ([[capacity_blocks,
            lru_hit_ratio], ...], a finer LRU line) and ``bytes_per_block`` (GPU
            layout bytes of one block: adds the bytes axis on top).
        marks: the run's capacities, ``{"label", "capacity_blocks"}`` and
            optionally ``"hit_ratio"`` (the run's real hit ratio, a point).
        chart_id: element id / file stem.
    Returns:
        the chart, or None when the curve has no positive capacity or no defined ratio (a trace with no prompt
        tokens: every ratio 0/0, null, docs/semantics.md §12).
    """
    if curve.get("ceiling_hit_ratio") is None:
        return None
    rows = [r for r in curve["rows"] if r["capacity_blocks"] >= 1]
    dense, every = _lru_points(curve, rows)
    if not dense:
        return None
    bel = [(r["capacity_blocks"], r["belady_hit_ratio"]) for r in rows if r.get("belady_hit_ratio") is not None]
    from pcs.report.curve import lru_label

    rate = curve.get("sample_rate", 1.0)
    names = [lru_label(rate, "")] + (["Belady (offline optimum)"] if len(bel) > 1 else [])
    line_rows = _rows(*zip(*dense), names[0]) + (_rows(*zip(*bel), names[-1]) if len(bel) > 1 else [])
    caps = [c for c, _ in dense] + [m["capacity_blocks"] for m in marks if m["capacity_blocks"] >= 1]
    xs = {"type": "log", "domain": [min(caps), max(caps)]}
    bottom, top = _capacity_axis(curve["block_size"], curve.get("bytes_per_block") or curve.get("block_bytes"),
                                 (min(caps), max(caps)))
    x = _q("x", "", scale=xs, axis=bottom)
    y = _q("y", "hit ratio (share of prompt tokens)", axis={"format": _PCT})
    layers = [_lines("lines", x, y, names, "curve")]
    datasets: dict[str, list] = {"lines": line_rows,
                                 "ceiling": [{"y": curve["ceiling_hit_ratio"], "label": "single-sequence ceiling "
                                              f"{100 * curve['ceiling_hit_ratio']:.1f} %"}]}
    layers += _hrule("ceiling", {"strokeDash": [2, 2], "color": "#666"}, {})
    series = len(names) + 2 + _belady_point(bel, layers, datasets, xs)
    knees = [{"x": k["capacity_blocks"], "y": k["lru_hit_ratio"], "label": f"{k['percent_of_ceiling']} %"}
             for k in curve.get("knee", {}).values() if k.get("capacity_blocks")]
    if knees:
        datasets["knees"] = knees
        layers += _labelled_points("knees", xs, {"shape": "circle", "size": 50, "color": "#000"},
                                   {"dx": 8, "dy": 10, "align": "left"}, top)
        series += 2
    series += _mark_layers(layers, datasets, marks, xs)
    title = "Hit ratio at every capacity (one tier, sequential)"
    extra = {}
    if top and knees:  # the knee layer carries the bytes axis on top; the line layer the blocks axis below
        extra = {"resolve": {"axis": {"x": "independent"}}}
        for layer in layers[1:]:
            if "x" in layer["encoding"] and "axis" not in layer["encoding"]["x"]:
                layer["encoding"]["x"]["axis"] = None
    return Chart(chart_id, title, _spec(title, layers, datasets, **extra), series,
                 curve_caption(every, len(dense), bool(bel), knees, marks, rate))


def curve_caption(every: bool, lru_points: int, belady: bool, knees: Sequence[dict], marks: Sequence[dict],
                  sample_rate: float = 1.0) -> str:
    """The curve chart's caption, naming only what :func:`curve_chart` draws: Belady when computed, the knee
    circles when there are knees, and the run's capacity lines and real-hit square only with a run (a ``pcs curve``
    page has no run: neither is drawn, so neither is named).

    Args:
        every: LRU drawn at every capacity (one pass) rather than at ``lru_points`` capacities of a curve JSON;
        belady: a Belady point or line is drawn; knees: the knee points drawn (``label`` "50 %" ...);
        marks: the run's capacities as given to :func:`curve_chart` (only those >= 1 block are drawn);
        sample_rate: the curve's SHARDS rate: below 1, its LRU values are called estimates, never exact.
    """
    sampled = isinstance(sample_rate, (int, float)) and sample_rate < 1.0
    rate = format_rate(sample_rate) if sampled else None
    where = f"estimated there from a SHARDS sample at rate {rate}" if sampled else "exact there"
    text = (("LRU from one pass over the trace (every capacity" + (f", estimated: SHARDS sample rate {rate})"
                                                                    if sampled else ")")) if every else
            f"LRU at the curve's {format_counted(lru_points, 'capacity', 'capacities')} and knees ({where}, straight "
            "between: a curve JSON holds no more)") + (", Belady where computed" if belady else "") + \
        ", the single-sequence ceiling"
    if knees:
        shares = "/".join(k["label"].removesuffix(" %") for k in knees)
        text += f"; circles mark where LRU reaches {shares} % of the ceiling"
    drawn = [m for m in marks if m["capacity_blocks"] >= 1]
    if drawn:
        text += "; vertical lines are the run's capacities (GPU tier, all tiers)"
        if any(m.get("hit_ratio") is not None for m in drawn):
            text += " and the square the run's real hit ratio"
    return text + "."


def _mark_layers(layers: list[dict], datasets: dict, marks: Sequence[dict], xs: dict) -> int:
    """Vertical rules at the run's capacities and a square at its real hit ratio; returns the groups added."""
    marks = [m for m in marks if m["capacity_blocks"] >= 1]
    if not marks:
        return 0
    datasets["marks"] = [{"x": m["capacity_blocks"], "label": m["label"]} for m in marks]
    x = {"field": "x", "type": "quantitative", "scale": xs}
    layers += [{"data": {"name": "marks"}, "mark": {"type": "rule", "color": "#0072b2", "strokeDash": [8, 3, 2, 3]},
                "encoding": {"x": x}},
               {"data": {"name": "marks"}, "mark": {"type": "text", "angle": 270, "align": "left", "baseline": "top",
                                                    "y": HEIGHT_PX - 4, "dy": 3, "color": "#0072b2"},
                "encoding": {"x": x, "text": {"field": "label"}}}]
    real = [{"x": m["capacity_blocks"], "y": m["hit_ratio"], "label": m["label"]} for m in marks
            if m.get("hit_ratio") is not None]
    if not real:
        return 2
    datasets["real"] = real
    layers.append({"data": {"name": "real"}, "mark": {"type": "point", "shape": "square", "filled": True, "size": 80,
                                                      "color": "#0072b2", "tooltip": True},
                   "encoding": {"x": x, "y": {"field": "y", "type": "quantitative"}}})
    return 3


def ttft_chart(dist: dict | None) -> Chart | None:
    """CDF of TTFT with the cache and without it, from ``distributions.ttft_cdf``.

    Under the step scheduler the like-for-like line is the same trace scheduled on the same instance with no
    cache (``without_cache_scheduled_s``); each prefill alone with no queue is a third line, so queueing is
    not mistaken for the cache's effect (docs/semantics.md §9, §10).
    """
    cdf = (dist or {}).get("ttft_cdf")
    if not cdf or not cdf["quantiles"]:
        return None
    scheduled = cdf.get("without_cache_scheduled_s") or ()
    series = [("with the cache", cdf["with_cache_s"])]
    if scheduled:
        series.append(("without the cache (same instance, scheduled)", scheduled))
        series.append(("without the cache (each prefill alone, no queue)", cdf["without_cache_s"]))
    else:
        series.append(("without the cache (full prefill)", cdf["without_cache_s"]))
    names = [n for n, _ in series]
    rows = [r for n, values in series for r in _rows(values, cdf["quantiles"], n)]
    log = _log_ok([r["x"] for r in rows])
    x = _q("x", "time to first token (s" + (", log scale)" if log else ")"), scale={"type": "log"} if log else {})
    y = _q("y", "share of requests with TTFT <= x", axis={"format": ".0%"})
    title = "Time to first token: with and without the cache"
    text = ("Empirical CDF over the requests (quantiles at 0.5 % steps). " +
            ("Like for like: both scheduled on the same instance (the step scheduler); the third line is each "
             "prefill alone with no queue. " if scheduled else
             "Without the cache = the prefill of the whole prompt with no wait for KV space. ") +
            "(docs/semantics.md §9, §10)")
    return Chart("ttft", title, _spec(title, [_lines("cdf", x, y, names, "TTFT")], {"cdf": rows}), len(names), text)


def restore_chart(dist: dict | None) -> Chart | None:
    """Per request with a restore: restore time (queueing included) against the prefill its hits save, with y = x."""
    rr = (dist or {}).get("restore_vs_recompute")
    if not rr or not rr["restore_s"]:
        return None
    pts = [{"x": a, "y": b} for a, b in zip(rr["prefill_saved_s"], rr["restore_s"]) if a > 0 and b > 0]
    if not pts:
        return None
    lo = min(min(p["x"], p["y"]) for p in pts)
    hi = max(max(p["x"], p["y"]) for p in pts)
    xs = {"type": "log", "domain": [lo, hi]}
    layers = [
        {"data": {"name": "points"}, "mark": {"type": "point", "shape": "circle", "size": 14, "opacity": 0.6,
                                              "color": "#0072b2", "tooltip": True},
         "encoding": {"x": _q("x", "prefill the request's hits save (s, log scale)", scale=xs),
                      "y": _q("y", "restore time, queueing included (s, log scale)", scale=xs)}},
        {"data": {"name": "even"}, "mark": {"type": "line", "color": "#000", "strokeDash": [6, 3]},
         "encoding": {"x": {"field": "x", "type": "quantitative", "scale": xs},
                      "y": {"field": "y", "type": "quantitative", "scale": xs}}},
        {"data": {"name": "even_label"}, "mark": {"type": "text", "align": "right", "dy": -8},
         "encoding": {"x": {"field": "x", "type": "quantitative", "scale": xs},
                      "y": {"field": "y", "type": "quantitative", "scale": xs}, "text": {"field": "label"}}},
    ]
    datasets = {"points": pts, "even": [{"x": lo, "y": lo}, {"x": hi, "y": hi}],
                "even_label": [{"x": hi, "y": hi, "label": "break-even: restore = recompute"}]}
    shown = f"{rr['sampled']:,} of {rr['requests']:,}" if rr["sampled"] < rr["requests"] else f"all {rr['requests']:,}"
    title = "Restore or recompute, per request"
    return Chart("restore", title, _spec(title, layers, datasets), 3,
                 f"One point per request that restored blocks ({shown}). Above the dashed line the restore took "
                 "longer than recomputing what it brought back would have (docs/semantics.md §10).")


def compare_chart(variants: Sequence[dict], chart_id: str = "compare") -> Chart | None:
    """Real and single-sequence hit ratio per compared variant (grouped bars)."""
    if not variants:
        return None
    names = ["real", "single-sequence"]
    rows = [{"variant": v["variant"], "series": n, "y": v[k]}
            for v in variants for n, k in zip(names, ("hit_ratio", "single_sequence_hit_ratio"))]
    layer = {"data": {"name": "bars"}, "mark": {"type": "bar", "tooltip": True, "stroke": "#000", "strokeWidth": 0.5},
             "encoding": {"x": {"field": "variant", "type": "nominal", "sort": None, "title": None,
                                "axis": {"labelAngle": 0}},
                          "xOffset": {"field": "series", "type": "nominal", "sort": names},
                          "y": _q("y", "hit ratio (share of prompt tokens)", axis={"format": _PCT}),
                          "color": {"field": "series", "type": "nominal", "legend": {"title": None},
                                    "scale": {"domain": names, "range": ["#4d4d4d", "#d9d9d9"]}}}}
    title = "Hit ratio per variant"
    return Chart(chart_id, title, _spec(title, [layer], {"bars": rows}), 1,
                 "Real hit ratio of each variant beside the single-sequence ceiling of the same block rules.")


def compare_curve_chart(rows: Sequence[dict], chart_id: str = "compare_curve") -> Chart | None:
    """``pcs compare --curve-capacities`` rows: one line per policy, Belady and the ceiling, against capacity."""
    rows = [r for r in rows if r["capacity_blocks"] >= 1]
    if not rows:
        return None
    keys = [k for k in rows[0] if k.endswith("_hit_ratio")]
    names = [k[: -len("_hit_ratio")] for k in keys]
    data = [{"x": r["capacity_blocks"], "y": r[k], "series": n} for r in rows for k, n in zip(keys, names)
            if r[k] is not None]
    x = _q("x", "capacity (blocks, log scale)", scale={"type": "log"}, axis={"format": "~s"})
    y = _q("y", "hit ratio (share of prompt tokens)", axis={"format": _PCT})
    title = "Hit ratio against capacity per policy (one tier, sequential)"
    present = [n for n in names if any(d["series"] == n for d in data)]
    return Chart(chart_id, title, _spec(title, [_lines("lines", x, y, present, "policy")], {"lines": data}),
                 len(present), "Rows of pcs compare --curve-capacities: each policy replayed at each capacity.")



#: A footprint's accounting modes as its table names them (label, the component rows' key), docs/semantics.md §13.
FOOTPRINT_MODES = (("Reference", "reference_bytes"), ("Serialized", "serialized_bytes"),
                   ("Reserved", "reserved_bytes"), ("Prefix store", "prefix_store_bytes"))


def footprint_chart(p: dict, chart_id: str = "footprint") -> Chart | None:
    """A ``pcs footprint`` payload's table as a figure: one bar per accounting mode (Reference, Serialized, Reserved,
    Prefix store), stacked by component (a hybrid model's page padding a component, as the table has it), bytes
    per rank for all the sequences: each bar's top is the table's total of that mode. None without components."""
    comps = p.get("components") or []
    if not comps:
        return None
    names = [c["name"].replace("page_padding", "page padding") for c in comps]
    rows = [{"mode": label, "series": n, "y": c[key], "order": i}
            for label, key in FOOTPRINT_MODES for i, (n, c) in enumerate(zip(names, comps))]
    colours = PALETTE[1:]       # no black: the bars' outlines stay visible; lightness differs between neighbours
    layer = {"data": {"name": "bars"}, "mark": {"type": "bar", "tooltip": True, "stroke": "#000", "strokeWidth": 0.5},
             "encoding": {"x": {"field": "mode", "type": "nominal", "sort": [m for m, _ in FOOTPRINT_MODES],
                                "title": None, "axis": {"labelAngle": 0}},
                          "y": _q("y", f"bytes per rank ({p['sequences']:,} sequence{'s' * (p['sequences'] != 1)})",
                                  stack="zero", axis={"labelExpr": unit_label("datum.value", "B")}),
                          "color": {"field": "series", "type": "nominal", "legend": {"title": "component"},
                                    "scale": {"domain": names, "range": [colours[i % len(colours)]
                                                                         for i in range(len(names))]}},
                          "order": {"field": "order", "type": "quantitative"}}}
    title = f"KV bytes by accounting mode: {shown_name(p['model'])}, {format_counted(p['tokens'], 'token')}, block {p['block_size']}, tp {p['tp']}"
    return Chart(chart_id, title, _spec(title, [layer], {"bars": rows}), 1,
                 "The table's bytes per component in each accounting mode, stacked (docs/semantics.md §13): Reference "
                 "is the payload, Serialized adds scales and padding in the rows, Reserved the whole blocks a running "
                 "sequence holds, Prefix store its floor(T/B) full blocks kept as cache objects.")
