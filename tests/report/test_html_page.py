"""The HTML report without a browser: page model, escaping, determinism, oracle, distributions, tables."""
from __future__ import annotations

import json
import re

import numpy as np
import pyarrow as pa
import pytest

from helpers import brute_force_opt, make_requests
from pcs.report.htmlpage import build_page, payload_kind, reproduce_command
from pcs.report.htmltables import best_columns, compare_table

jinja2 = pytest.importorskip("jinja2")


def _summary(**over) -> dict:
    """A hand-made replay payload: ideal 0.50 - rounding 0.05 - capacity 0.15 - concurrency 0.02 = real 0.28."""
    tier = dict(layout="reserved", policy="lru", bytes_per_block=1000, bytes_per_block_by_component={"full_attention": 1000},
                capacity_bytes=2000, hit_blocks=3, restored_bytes=0, written_bytes=0, evicted_blocks=1,
                resident_bytes_end=2000, resident_bytes_peak=2000, link=None, link_bandwidth_bps=None)
    s = dict(trace="t.jsonl", model="llama-2-70b", kv_dtype="fp16", gpu="h100-sxm", tp=8, block_size=4,
             timing="sequential", policy="lru", write_policy="back", cache_partial_blocks=False,
             recompute_last_token=True, hit_ratio=0.28, single_sequence_hit_ratio=0.45, ideal_hit_ratio=0.50,
             sequential_hit_ratio=0.30, gap={"block_rounding": 0.05, "capacity_eviction": 0.15, "concurrency": 0.02},
             reference_bytes_per_block=900, envelope={"links": []},
             tiers=[dict(tier, name="gpu", capacity_blocks=2),
                    dict(tier, name="cpu", layout="serialized", capacity_blocks=3, link="8x pcie-gen5-x16",
                         link_bandwidth_bps=4e11)], notes=["a note"])
    s.update(over)
    return s


def test_payload_kinds_and_unknown_json():
    assert payload_kind(_summary()) == "replay"
    assert payload_kind({"variants": []}) == "compare"
    assert payload_kind({"rows": [], "knee": {}, "ceiling_hit_ratio": 0.0}) == "curve"
    assert payload_kind({"components": [], "by_dtype": []}) == "footprint"
    for bad in ({"rows": []}, [1, 2], "x"):
        with pytest.raises(ValueError, match="not the JSON of pcs replay"):
            payload_kind(bad)


def test_headline_carries_the_json_values_and_the_oracle():
    page = build_page([_summary()], oracle={"capacity_blocks": 5, "hit_ratio": 0.4})
    assert [(h["key"], h["value"]) for h in page["headline"]] == [
        ("hit_ratio", 0.28), ("single_sequence_hit_ratio", 0.45), ("oracle_hit_ratio", 0.4)]
    assert page["headline"][0]["text"] == "28.0 %"
    gap = next(c for c in page["charts"] if c.id == "gap")
    steps = {r["step"]: (r["lo"], r["hi"]) for r in gap.spec["datasets"]["steps"]}
    # the waterfall by hand: ideal 0.50 -> rounding to 0.45 -> capacity to 0.30 -> concurrency to 0.28
    assert steps["block rounding"] == pytest.approx((0.45, 0.50))
    assert steps["capacity and eviction"] == pytest.approx((0.30, 0.45))
    assert steps["concurrency"] == pytest.approx((0.28, 0.30))
    assert gap.spec["datasets"]["oracle"][0]["y"] == 0.4 and gap.series == 4


def test_headline_cards_show_the_gap_charts_figures():
    # docs/semantics.md §12 "Printed figures add up": a card shows a ratio to 0.1 %, as the waterfall's levels
    # and the text report do; 0.2649 -> 26.5 %, 0.3734 -> 37.3 % (never 26.49 % beside a chart's 26.5 %)
    s = _summary(hit_ratio=0.2649, single_sequence_hit_ratio=0.3734, ideal_hit_ratio=0.40, sequential_hit_ratio=0.30,
                 single_sequence_with_decode_hit_ratio=0.3858,
                 gap={"block_rounding": 0.40 - 0.3734, "capacity_eviction": 0.3734 - 0.30, "concurrency": 0.30 - 0.2649})
    page = build_page([s], oracle={"capacity_blocks": 5, "hit_ratio": 0.31249})
    assert [h["text"] for h in page["headline"]] == ["26.5 %", "37.3 %", "31.2 %"]
    assert page["headline"][1]["note"].endswith("is 38.6 %")
    gap = next(c for c in page["charts"] if c.id == "gap")
    levels = {r["label"] for r in gap.spec["datasets"]["steps"] if r["kind"] == "level"}
    assert {"26.5 %", "37.3 %"} <= levels


def test_everything_is_escaped_and_nothing_is_fetched(tmp_path):
    from pcs.report.html import render_html

    evil = "</script><script>alert(1)</script><b>x&y"
    page = build_page([_summary(trace=evil, notes=[evil])], command=["pcs", "replay", evil])
    text = render_html(page, "0")
    assert "<script>alert(1)" not in text and "<b>x&y" not in text
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in text  # the tables and inputs show it, escaped
    data = re.search(r'<script type="application/json" id="pcs-charts">(.*?)</script>', text, re.S).group(1)
    assert "</" not in data and json.loads(data)  # the chart JSON cannot end its script element
    # self-contained: no external scripts, styles, fonts or images
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert "<link" not in text and "@import" not in text and "url(" not in text.split("<script>")[0]


def test_page_is_deterministic():
    from pcs.report.html import render_html

    a = render_html(build_page([_summary()], command=["pcs", "x"]), "1")
    b = render_html(build_page([_summary()], command=["pcs", "x"]), "1")
    assert a == b


def test_best_cells():
    assert best_columns([0.1, 0.3, 0.2], "max") == {1}
    assert best_columns([3, 1, 1], "min") == {1, 2}        # ties: both marked
    assert best_columns([2, 2, 2], "min") == set()         # all equal: nothing is best
    assert best_columns([1, None, 2], "max") == set()      # a missing value: no mark
    assert best_columns([1, 2], None) == set()             # no direction (e.g. restored bytes)


def test_compare_table_marks_the_best_hit_ratio_and_smallest_ttft():
    base = dict(tiers="gpu=2blocks", policy="lru", single_sequence_hit_ratio=0.5, gap_block_rounding=0.0,
                gap_capacity_eviction=0.1, gap_concurrency=0.0, lower_tier_hit_ratio=0.0, restored_bytes=0,
                written_bytes=0, share_slower=None, ttft_p50_s=1.0, ttft_p99_s=2.0, wait_p99_s=0.0,
                requests_truncated=0)
    c = {"trace": "t", "model": "m", "timing": "modeled",
         "variants": [dict(base, variant="lru", hit_ratio=0.4, ttft_p50_s=0.9),
                      dict(base, variant="fifo", hit_ratio=0.3, ttft_p50_s=0.8)]}
    t = compare_table(c)
    rows = {r[0]["text"]: [x["best"] for x in r[1:]] for r in t["rows"]}
    assert rows["hit ratio (real, token-weighted)"] == [True, False]
    assert rows["TTFT p50"] == [False, True]
    assert rows["restored bytes"] == [False, False] and rows["TTFT p99"] == [False, False]
    assert t["headers"] == ["metric", "lru", "fifo"]


def test_reproduce_command_names_tiers_in_blocks():
    cmd = reproduce_command(_summary())
    assert cmd == ("pcs replay t.jsonl --model llama-2-70b --gpu h100-sxm --tp 8 --dtype fp16 --block-size 4 "
                   "--tier gpu=2blocks --tier cpu=3blocks --link cpu=pcie-gen5-x16 --policy lru "
                   "--timing sequential --write-policy back")


def test_reproduce_command_reruns_the_same_numbers(tmp_path):
    from click.testing import CliRunner

    from pcs.cli.main import cli

    args = ["replay", "-q", "--format", "json", "--tier", "gpu=300blocks", "--tier", "cpu=900blocks",
            "--policy", "slru", "--timing", "sequential"]
    first = json.loads(CliRunner().invoke(cli, args).stdout)
    again = reproduce_command(first).split()[1:] + ["-q", "--format", "json"]
    second = json.loads(CliRunner().invoke(cli, again).stdout)
    assert second["hit_ratio"] == first["hit_ratio"] and second["tiers"] == first["tiers"]


def test_oracle_is_belady_at_the_total_capacity():
    """Requests of one cacheable block (prompt 5 tokens, 4-token blocks: 4 hit tokens each), ids a b c a b c.

    Two slots (gpu 1 + cpu 1). By hand, Belady: a, b miss; c misses and evicts b (next use 5th, after a's
    4th); a hits; b misses and evicts a (never used again); c hits: 2 hits x 4 tokens = 8 of 30 prompt
    tokens. LRU at 2 slots hits nothing on this cycle; the single-sequence ceiling is 3 x 4 / 30.
    """
    from pcs.report.htmlcurve import replay_curve

    reqs = make_requests([([x, 100 + i], 5) for i, x in enumerate([1, 2, 3, 1, 2, 3])])
    s = _summary(block_size=4)
    s["tiers"][0]["capacity_blocks"], s["tiers"][1]["capacity_blocks"] = 1, 1
    curve, oracle = replay_curve(reqs, s)
    assert oracle == {"capacity_blocks": 2, "hit_ratio": pytest.approx(8 / 30)}
    assert oracle["hit_ratio"] * 30 == brute_force_opt(reqs, 2)
    assert curve["ceiling_hit_ratio"] == pytest.approx(12 / 30)
    assert dict(curve["lru_dense"])[2] == 0.0
    assert curve["bytes_per_block"] == 1000


def test_request_distributions_by_hand(monkeypatch):
    from pcs.engine import series

    t = pa.table({"ttft_s": [4.0, 1.0, 3.0, 2.0, float("nan")],
                  "prefill_no_cache_s": [5.0, 5.0, 5.0, 5.0, 5.0], "prefill_s": [1.0, 2.0, 3.0, 4.0, 5.0],
                  "restore_s": [0.1, 0.0, 0.3, 0.4, 0.5], "restored_bytes": [10, 0, 30, 40, 50]})
    monkeypatch.setattr(series, "MAX_POINTS", 3)
    d = series.request_distributions({n: t.column(n) for n in t.column_names}).to_dict()
    levels, ttft = d["ttft_cdf"]["quantiles"], d["ttft_cdf"]["with_cache_s"]
    # inverted CDF over {1, 2, 3, 4} (the NaN dropped): the smallest TTFT whose share of requests reaches
    # the level; levels[i] = i / 200
    assert [levels[i] for i in (0, 50, 100, 101, 200)] == pytest.approx([0, 0.25, 0.5, 0.505, 1])
    assert [ttft[i] for i in (0, 50, 100, 101, 200)] == [1.0, 1.0, 2.0, 3.0, 4.0]
    assert d["ttft_cdf"]["without_cache_s"] == [5.0] * 201
    rr = d["restore_vs_recompute"]
    # restored: requests 0, 2, 3, 4; three kept, evenly spaced: 0, 3, 4 (linspace 0..3 in 3 -> 0, 1.5 -> 2, 3)
    assert (rr["requests"], rr["sampled"]) == (4, 3)
    assert rr["restore_s"] == [0.1, 0.4, 0.5] and rr["prefill_saved_s"] == [4.0, 1.0, 0.0]
    assert len(series.CDF_LEVELS) == 201 and np.isclose(series.CDF_LEVELS[1], 0.005)


def test_scheduled_no_cache_cdf_by_hand():
    """The like-for-like no-cache line: the no-cache run's TTFTs {10, 30, 20, 40} (NaN dropped) at the
    inverted-CDF levels: level 0 -> 10, 0.25 -> 10 (ceil(4 x 0.25) = 1st), 0.505 -> 30 (ceil(2.02) = 3rd),
    1 -> 40. Without a no-cache run the key is empty and the chart has the two old lines."""
    from pcs.engine import series
    from pcs.report import htmlcharts as hc

    cols = {"ttft_s": [4.0, 1.0, 3.0, 2.0, 5.0], "prefill_no_cache_s": [5.0] * 5, "prefill_s": [1.0] * 5,
            "restore_s": [0.0] * 5, "restored_bytes": [0] * 5}
    d = series.request_distributions(cols, np.array([10.0, 30.0, float("nan"), 20.0, 40.0])).to_dict()
    sched = d["ttft_cdf"]["without_cache_scheduled_s"]
    assert [sched[i] for i in (0, 50, 101, 200)] == [10.0, 10.0, 30.0, 40.0]
    chart = hc.ttft_chart(d)
    assert chart.series == 3
    names = {r["series"] for r in chart.spec["datasets"]["cdf"]}
    assert names == {"with the cache", "without the cache (same instance, scheduled)",
                     "without the cache (each prefill alone, no queue)"}
    plain = series.request_distributions(cols).to_dict()
    assert plain["ttft_cdf"]["without_cache_scheduled_s"] == []
    assert {r["series"] for r in hc.ttft_chart(plain).spec["datasets"]["cdf"]} == {
        "with the cache", "without the cache (full prefill)"}


def test_scheduled_no_cache_cdf_matches_the_scheduler_summary():
    """End to end on the bundled sample (step scheduler, the default): the scheduler section's no-cache TTFT
    p50 (np.percentile, linear: the mean of the n/2-th and n/2+1-th smallest for even n, the middle one for odd
    n) lies between the CDF's levels 0.5 and 0.505 (the ceil(0.5 n)-th and ceil(0.505 n)-th smallest), and its
    p99 between levels 0.98 and 1."""
    from pathlib import Path

    import pcs

    s = pcs.replay(Path(__file__).resolve().parents[2] / "traces" / "sample_chat.jsonl").summary.to_dict()
    sched = s["distributions"]["ttft_cdf"]["without_cache_scheduled_s"]
    assert len(sched) == 201
    nc = s["scheduler"]["no_cache"]["ttft_s"]
    assert sched[100] <= nc["p50"] <= sched[101] and sched[196] <= nc["p99"] <= sched[200]
    assert sched[100] > s["distributions"]["ttft_cdf"]["without_cache_s"][100]   # queueing: the sample saturates
    inf = pcs.replay(Path(__file__).resolve().parents[2] / "traces" / "sample_chat.jsonl", compute_mode="infinite")
    assert inf.summary.to_dict()["distributions"]["ttft_cdf"]["without_cache_scheduled_s"] == []


def test_vendored_vega_is_the_version_the_page_names():
    from pcs.report.html import STATIC_DIR, VEGA_LITE_VERSION, VEGA_VERSION

    assert f'var n="{VEGA_LITE_VERSION}"' in (STATIC_DIR / "vega-lite.min.js").read_text()[:400]
    assert f'"{VEGA_VERSION}"' in (STATIC_DIR / "vega.min.js").read_text()
    for name in ("LICENSE-vega.txt", "LICENSE-vega-lite.txt"):
        assert "BSD 3-Clause" in (STATIC_DIR / name).read_text() or "Redistribution" in (STATIC_DIR / name).read_text()


def test_time_series_charts_and_their_series():
    series = {"step_s": 2.0, "t_s": [0.0, 2.0, 4.0], "hit_ratio": [None, 0.5, 0.25],
              "hit_ratio_cumulative": [None, 0.5, 0.4], "resident_bytes": {"gpu": [0, 10, 20], "cpu": [0, 0, 8]},
              "resident_bytes_by_component": {"gpu": {"a": [0, 6, 12], "b": [0, 4, 8]}},
              "restore_bps": {"cpu": [0.0, 4.0, 0.0]}, "link_bandwidth_bps": {"cpu": 100.0},
              "waiting_requests": [0, 1, 0], "running_requests": [0, 2, 1], "restore_backlog_s": {"cpu": [0, 0.5, 0]}}
    page = build_page([_summary(series=series)])
    counts = {c.id: c.series for c in page["charts"] if c.id.startswith("ts_")}
    # lines: per step + cumulative; gpu, cpu, gpu: a, gpu: b; one link + its bandwidth rule and label;
    # waiting + running; one link's backlog
    assert counts == {"ts_hit": 2, "ts_resident": 4, "ts_restore": 3, "ts_queue": 2, "ts_backlog": 1}
    hit = next(c for c in page["charts"] if c.id == "ts_hit")
    assert [r for r in hit.spec["datasets"]["lines"] if r["series"] == "per step"] == [
        {"x": 2.0, "y": 0.5, "series": "per step"}, {"x": 4.0, "y": 0.25, "series": "per step"}]
    assert "one sample per 2 s" in hit.spec["layer"][0]["encoding"]["x"]["title"]


def test_utilisation_chart_by_hand():
    """The step scheduler's busy share per bin: bins of 15 s from the first arrival, x = each bin's start."""
    from pcs.report.htmltime import utilisation_chart

    c = utilisation_chart({"utilisation_bin_s": 15, "utilisation_over_time": [1.0, 0.5, 0.25]})
    assert c.id == "ts_util" and c.series == 1
    assert [(r["x"], r["y"]) for r in c.spec["datasets"]["lines"]] == [(0, 1.0), (15, 0.5), (30, 0.25)]
    assert utilisation_chart(None) is None and utilisation_chart({"utilisation_over_time": []}) is None
