"""A sampled curve (``sample_rate`` below 1) is marked as an estimate in every output, from ``sample_rate`` alone:
the ``--plot`` legend and the HTML chart's LRU series and caption (they said "LRU (every capacity)" and "exact
there"), and ``pcs report``'s notes, which build the note from the rate and drop any SHARDS note the file's
``notes`` carry (a hand-edited rate gave two notes; a note pasted into an exact curve made its page claim
estimates). ``pcs report`` refuses a sampled curve with Belady values: pcs computes Belady only for an exact curve
(pcs.curves.api.curve: ``bel = ... if belady and exact else {}``)."""
from __future__ import annotations

import json

import pytest

from pcs.trace.api import DEFAULT_TRACE as SAMPLE
from tests.helpers import as_sampled, invoke, invoke_json


def _note(rate: str) -> str:
    return (f"SHARDS sample rate {rate}: LRU values are estimates (docs/curves.md gives the measured error); Belady "
            "is not computed when sampling")


def _legend(result) -> list[str]:
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from pcs.report.curve import curve_figure

    fig = curve_figure(result, None)
    try:
        return [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    finally:
        plt.close(fig)


def test_plot_legend_marks_a_sampled_lru_line():
    from pcs.curves.api import curve

    assert _legend(curve(SAMPLE, points=3, sample_rate=0.1)) == [
        "LRU, estimated (SHARDS sample rate 0.1)", "ceiling (infinite cache)"]   # no Belady when sampled
    assert _legend(curve(SAMPLE, points=3))[0] == "LRU (every capacity)"


def _report(tmp_path, payload: dict) -> tuple:
    src, page = tmp_path / "c.json", tmp_path / "r.html"
    src.write_text(json.dumps(payload))
    return invoke("report", src, "-o", page, "-q"), page, src


def test_report_builds_the_note_from_the_rate_alone(tmp_path):
    payload = invoke_json("curve", SAMPLE, "--points", "3", "--sample-rate", "0.1")
    assert payload["notes"].count(_note("0.1")) == 1
    payload["sample_rate"] = 0.5                    # edited by hand: the stored note's 0.1 is stale
    r, page, _ = _report(tmp_path, payload)
    assert r.exit_code == 0, r.output
    text = page.read_text()
    assert text.count(_note("0.5")) == 1 and "SHARDS sample rate 0.1" not in text
    assert "LRU, estimated (SHARDS sample rate 0.5)" in text          # the chart's LRU series
    assert "estimated there from a SHARDS sample at rate 0.5" in text  # its caption (a curve JSON: rows and knees)
    assert "exact there" not in text


def test_a_pasted_note_does_not_make_an_exact_curve_an_estimate(tmp_path):
    payload = invoke_json("curve", SAMPLE, "--points", "3")
    assert payload["sample_rate"] == 1.0
    payload["notes"] = [*payload.get("notes", []), _note("0.1")]
    r, page, _ = _report(tmp_path, payload)
    assert r.exit_code == 0, r.output
    text = page.read_text()
    assert "LRU values are estimates" not in text and "estimated" not in text
    assert "exact there" in text


@pytest.mark.parametrize("where, key, value", [
    (("rows", 1), "belady_hit_ratio", 0.1), (("rows", 0), "belady_block_misses", 3)])
def test_report_refuses_belady_values_in_a_sampled_curve(tmp_path, where, key, value):
    payload = as_sampled(invoke_json("curve", SAMPLE, "--points", "3"), 0.5, distinct_cacheable_blocks=None)
    assert _report(tmp_path, payload)[0].exit_code == 0          # as pcs writes a sampled curve: accepted
    payload[where[0]][where[1]][key] = value
    r, page, src = _report(tmp_path, payload)
    assert r.exit_code == 2, r.output
    assert r.output.strip() == (f"pcs: error: {src}: field '{where[0]}[{where[1]}].{key}': must be null when "
                                f"sample_rate is below 1 (pcs computes Belady only for an exact curve), got {value}")


def test_the_vega_legend_shows_the_whole_estimated_label():
    """Vega cuts legend labels at labelLimit, 160 px by default: "LRU, estimated (SHARDS sa..." lost the rate. The
    charts' spec sets no limit (0), and the LRU series keeps its whole name."""
    from pcs.report.htmlcharts import curve_chart

    payload = as_sampled(invoke_json("curve", SAMPLE, "--points", "3"), 0.999)
    chart = curve_chart(payload)
    assert chart.spec["config"]["legend"]["labelLimit"] == 0
    assert "LRU, estimated (SHARDS sample rate 0.999)" in json.dumps(chart.spec)


def test_a_rate_that_rounds_to_1_keeps_its_digits(tmp_path):
    """0.9999999 at 6 significant digits is "1", which would call an estimate rate 1: it is printed in full, in the
    note, the legend and the caption; 0.1 stays "0.1"."""
    from pcs.report.curve import lru_label, sampled_note
    from pcs.units import format_rate

    assert format_rate(0.9999999) == "0.9999999" and format_rate(0.1) == "0.1" and format_rate(1.0) == "1"
    assert sampled_note({"sample_rate": 0.9999999}) == _note("0.9999999")
    assert lru_label(0.9999999, "") == "LRU, estimated (SHARDS sample rate 0.9999999)"
    r, page, _ = _report(tmp_path, as_sampled(invoke_json("curve", SAMPLE, "--points", "3"), 0.9999999))
    assert r.exit_code == 0, r.output
    text = page.read_text()
    assert "SHARDS sample rate 1" not in text.replace("SHARDS sample rate 0.9999999", "")
    assert text.count(_note("0.9999999")) == 1


def test_a_pasted_note_with_leading_spaces_is_dropped_too(tmp_path):
    payload = invoke_json("curve", SAMPLE, "--points", "3")
    payload["notes"] = [*payload.get("notes", []), "  " + _note("0.5"), "\t" + _note("0.5") + " "]
    r, page, _ = _report(tmp_path, payload)
    assert r.exit_code == 0, r.output
    text = page.read_text()
    assert "LRU values are estimates" not in text and "SHARDS" not in text
