"""The HTML report in a real headless Chromium: no console error, no request, every chart drawn, right numbers.

Each page is written by the command line (``--html`` or ``pcs report``), opened
from its file by Debian's ``chromium`` over the DevTools pipe
(:mod:`pcs.report.htmlbrowser`); the page must ask for nothing but itself,
log no error, draw every chart with the number of series the page declares
(lines count one path each; other layers one mark group each), show the
headline numbers of the JSON, and give a screenshot that is not blank.
Skipped only where Chromium is not installed (``.ci/run`` installs it).
"""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.report.htmlbrowser import Browser, find_chromium, load_page
from pcs.units import format_percent

pytest.importorskip("jinja2")

#: In the page: for every chart, [id, series drawn, series declared, svg width, svg height].
CHARTS_JS = """window.pcsRendered.then(ids => Array.from(document.querySelectorAll('div.chart')).map(el => {
  let n = 0;
  el.querySelectorAll('g.role-mark').forEach(g => {
    const cls = g.getAttribute('class') || '';
    if (cls.includes('mark-line') || cls.includes('mark-area')) {
      n += Array.from(g.querySelectorAll(':scope > path')).filter(p => (p.getAttribute('d') || '').length > 1).length;
    } else if (g.children.length > 0) { n += 1; }
  });
  const svg = el.querySelector('svg');
  const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
  return [el.dataset.chart, n, +el.dataset.series, box.width, box.height];
}))"""
HEADLINE_JS = """Array.from(document.querySelectorAll('.number[data-key]')).map(el =>
  [el.dataset.key, el.dataset.value, el.querySelector('.value').textContent.trim()])"""
TABLE_BEST_JS = """Array.from(document.querySelectorAll('section[id^=compare] tr')).map(tr =>
  Array.from(tr.children).map(td => [td.textContent.trim(), td.classList.contains('best')]))"""


@pytest.fixture(scope="module")
def browser():
    exe = find_chromium()
    if exe is None:
        pytest.skip("headless Chromium is not installed (Debian: apt-get install chromium; .ci/run installs it)")
    with Browser(exe) as b:
        yield b


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, tuple[Path, dict]]:
    """name -> (page, the JSON the same command printed)."""
    d = tmp_path_factory.mktemp("pages")
    runs = {
        "replay": ["replay", "-q", "--format", "json"],
        "compare": ["compare", "-q", "--format", "json", "--policy", "lru", "--policy", "fifo", "--policy", "slru",
                    "--tier", "gpu=1000blocks", "--tier", "cpu=3000blocks", "--curve-capacities", "500blocks,2000blocks,8000blocks"],
        "curve": ["curve", "-q", "--format", "json", "--model", "llama-2-70b", "--points", "6"],
        "footprint": ["footprint", "-q", "--format", "json", "--model", "llama-3.1-8b", "--tokens", "4096"],
    }
    out = {}
    for name, args in runs.items():
        page = d / f"{name}.html"
        r = CliRunner().invoke(cli, [*args, "--html", str(page)])
        assert r.exit_code == 0, r.output
        out[name] = (page, json.loads(r.stdout))
    (d / "run.json").write_text(json.dumps(out["replay"][1]))
    (d / "curve.json").write_text(json.dumps(out["curve"][1]))
    r = CliRunner().invoke(cli, ["report", "-q", str(d / "run.json"), str(d / "run.json"), str(d / "curve.json"),
                                 "-o", str(d / "report.html")])
    assert r.exit_code == 0, r.output
    out["report"] = (d / "report.html", out["replay"][1])
    return out


#: the charts each page must draw (ids), in page order
TIME = ["ts_hit", "ts_resident", "ts_restore", "ts_queue", "ts_backlog", "ts_util"]  # ts_util: compute step
EXPECTED = {"replay": ["gap", "curve", *TIME, "ttft", "restore"], "compare": ["compare", "compare_curve"],
            "curve": ["curve"], "footprint": ["footprint_bytes"], "report": ["gap", "curve", *TIME, "ttft", "restore"]}


def _not_blank(png: bytes) -> float:
    """Share of pixels that are not white (the screenshot shows something)."""
    from PIL import Image

    img = Image.open(io.BytesIO(png)).convert("L")
    hist = img.histogram()
    return 1.0 - hist[255] / sum(hist)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_page_loads_clean_and_draws_every_chart(browser, pages, name):
    page, _ = pages[name]
    run = load_page(page, CHARTS_JS, browser=browser)
    assert run.console_errors == [] and run.failed_requests == []
    assert run.requests == [page.resolve().as_uri()]  # the page asks for nothing but itself
    assert [c[0] for c in run.value] == EXPECTED[name]
    for chart_id, drawn, declared, width, height in run.value:
        assert drawn == declared > 0, (chart_id, drawn, declared)
        assert width > 200 and height > 100, chart_id
    assert run.screenshot_png[:8] == b"\x89PNG\r\n\x1a\n" and run.height_px > 600
    assert _not_blank(run.screenshot_png) > 0.03


@pytest.mark.parametrize("name", ["replay", "report"])
def test_headline_numbers_equal_the_json(browser, pages, name):
    page, s = pages[name]
    run = load_page(page, HEADLINE_JS, browser=browser, screenshot=False)
    shown = {k: (json.loads(v), text) for k, v, text in run.value}
    for key in ("hit_ratio", "single_sequence_hit_ratio"):
        assert shown[key] == (s[key], format_percent(s[key]))  # 0.1 %, as the gap chart shows it
    if name == "replay":  # the oracle: Belady with the run's total blocks lies between real LRU and the ceiling
        oracle = shown["oracle_hit_ratio"][0]
        assert s["sequential_hit_ratio"] <= oracle <= s["single_sequence_hit_ratio"]


def test_compare_marks_the_best_hit_ratio(browser, pages):
    page, c = pages["compare"]
    run = load_page(page, TABLE_BEST_JS, browser=browser, screenshot=False)
    row = next(r for r in run.value if r and r[0][0] == "hit ratio (real, token-weighted)")
    # judged on the shown figures (docs/report.md): every variant showing the best hit ratio, none if all show it
    shown = [format_percent(v["hit_ratio"]) for v in c["variants"]]
    best = max(shown, key=lambda t: float(t.removesuffix(" %")))
    marked = [v["variant"] for v, (_, is_best) in zip(c["variants"], row[1:]) if is_best]
    assert marked == ([] if len(set(shown)) == 1 else [v["variant"] for v, t in zip(c["variants"], shown) if t == best])
