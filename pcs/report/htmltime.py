"""The replay over simulated time as Vega-Lite figures (from the summary's ``series``; see :mod:`pcs.report.htmlcharts`).

Input: the ``series`` object of a replay summary (docs/replay.md): ``step_s``,
``t_s`` (end of each step, simulated seconds) and columns of one value per
step. Each function returns a :class:`pcs.report.htmlcharts.Chart` or None when
its columns are absent or empty.
"""
from __future__ import annotations

from typing import Sequence

from pcs.report.htmlcharts import _PCT, Chart, _hrule, _lines, _q, _rows, _spec, unit_label

__all__ = ["time_charts", "utilisation_chart", "hybrid_residency_chart"]


def _time_x(ts: dict) -> dict:
    return _q("x", f"simulated time (s; one sample per {ts['step_s']:g} s)")


def _time_lines(chart_id: str, title: str, ts: dict, columns: dict[str, Sequence], y: dict, legend: str,
                caption: str, extra_layers: Sequence[dict] = (), extra_data: dict | None = None,
                extra_series: int = 0) -> Chart | None:
    names = [n for n, col in columns.items() if any(v is not None for v in col)]
    if not names:
        return None
    data = [r for n in names for r in _rows(ts["t_s"], columns[n], n)]
    layers = [_lines("lines", _time_x(ts), y, names, legend), *extra_layers]
    return Chart(chart_id, title, _spec(title, layers, {"lines": data, **(extra_data or {})}),
                 len(names) + extra_series, caption)


def time_charts(ts: dict | None) -> list[Chart]:
    """The replay over simulated time, from the summary's ``series`` (docs/replay.md, docs/semantics.md §11).

    Charts: hit ratio per step; resident bytes per tier (and per KV component
    when a tier holds more than one); restore bandwidth per link against the
    link's bandwidth; queue lengths (requests waiting for KV space and
    running; restores queued per link, in seconds). Absent or empty series
    give no charts.
    """
    if not ts or not ts.get("t_s"):
        return []
    out = []
    y_pct = _q("y", "hit ratio (share of prompt tokens)", axis={"format": _PCT})
    out.append(_time_lines("ts_hit", "Hit ratio over time", ts,
                           {"per step": ts["hit_ratio"], "cumulative": ts["hit_ratio_cumulative"]}, y_pct, "hit ratio",
                           "Token-weighted hit ratio of the requests admitted in each step, and since the start."))
    res = dict(ts["resident_bytes"])
    for tier, comps in ts["resident_bytes_by_component"].items():
        res.update({f"{tier}: {c}": col for c, col in comps.items()})
    out.append(_time_lines("ts_resident", "Resident bytes per tier", ts, res,
                           _q("y", "resident (bytes)", axis={"labelExpr": unit_label("datum.value", "B")}), "tier",
                           "Bytes of the blocks each tier holds at the end of each step (JSON series.resident_bytes), "
                           "and per KV component (series.resident_bytes_by_component) for models whose every block "
                           "holds each component. A hybrid model's tier holds pages of different cache groups: its "
                           "components are in \"Resident bytes per component\" (hybrid.series)."))
    out.append(_restore_bw_chart(ts))
    out.append(_time_lines("ts_queue", "Requests waiting and running", ts,
                           {"waiting for admission": ts["waiting_requests"], "running": ts["running_requests"]},
                           _q("y", "requests"), "requests",
                           "Requests arrived and not admitted (FIFO admission: waiting for KV space, and under "
                           "the step scheduler for a step's token budget or a preemption), and requests running, "
                           "at each sample (docs/semantics.md §9, §11)."))
    out.append(_time_lines("ts_backlog", "Restore queue per link", ts,
                           {f"{k} link": v for k, v in ts["restore_backlog_s"].items()},
                           _q("y", "queued restore time (s)"), "link",
                           "Seconds of restores waiting on each link (its FIFO queue) at each sample."))
    return [c for c in out if c is not None]


def hybrid_residency_chart(hybrid: dict | None) -> Chart | None:
    """A hybrid model's resident bytes per tier and component over simulated time, from the summary's
    ``hybrid.series`` (docs/semantics.md §13.1): per tier, ``t_s`` (the trace's clock, s: every ``step_s`` and
    the tier's peak) and bytes per component, ``page_padding`` among them, which add up to the tier's bytes at
    each point. None for a model that is not hybrid or an empty series."""
    hs = (hybrid or {}).get("series") or {}
    cols = {f"{tier}: {c}": (t["t_s"], v) for tier, t in hs.get("tiers", {}).items()
            for c, v in t.items() if c not in ("t_s", "kind")}
    names = [n for n, (xs, _) in cols.items() if xs]
    if not names:
        return None
    title = "Resident bytes per component"
    x = _q("x", f"simulated time (s, the trace's clock; one sample per {hs['step_s']:g} s and at each tier's peak)")
    y = _q("y", "resident (bytes)", axis={"labelExpr": unit_label("datum.value", "B")})
    data = [r for n in names for r in _rows(*cols[n], n)]
    return Chart("hybrid_resident", title, _spec(title, [_lines("lines", x, y, names, "tier: component")],
                                                 {"lines": data}), len(names),
                 "Bytes each tier holds per KV component (JSON hybrid.series: pages per cache group x the "
                 "component's share of a page; page_padding is the rest of the pages), every --residency-step "
                 "and at each tier's peak; the components add up to the tier's bytes at every point.")


def utilisation_chart(sched: dict | None) -> Chart | None:
    """The step scheduler's busy share per bin (the summary's ``scheduler.utilisation_over_time``, bins of
    ``utilisation_bin_s`` seconds from the first arrival); None without it (compute infinite, sequential)."""
    util = (sched or {}).get("utilisation_over_time")
    if not util:
        return None
    w = sched["utilisation_bin_s"]
    ts = {"t_s": [k * w for k in range(len(util))], "step_s": w}
    return _time_lines("ts_util", "Instance utilisation over time", ts, {"busy share": list(util)},
                       _q("y", "busy share of each bin", axis={"format": _PCT}), "instance",
                       "Share of each bin the instance spent running steps (the step scheduler, docs/semantics.md "
                       "§9; x: the bin's start).")


def _restore_bw_chart(ts: dict) -> Chart | None:
    bw = ts.get("link_bandwidth_bps") or {}
    cols = {f"from {k}": v for k, v in ts["restore_bps"].items()}
    caps = [{"y": b, "label": f"{k} link {b / 1e9:,.1f} GB/s"} for k, b in bw.items() if b]
    layers = _hrule("caps", {"strokeDash": [2, 2], "color": "#666"}, {}) if caps else []
    return _time_lines("ts_restore", "Restore bandwidth per link", ts, cols,
                       _q("y", "restore bandwidth (bytes/s)", axis={"labelExpr": unit_label("datum.value", "B/s")}),
                       "link",
                       "Bytes restored over each link per step / step length, against the link's bandwidth "
                       "(dotted; all TP ranks together).", layers, {"caps": caps}, 2 if caps else 0)
