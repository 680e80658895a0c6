"""``pcs curve`` without a model: the block-count curve, a note saying what --model adds (no note about bytes it
does not show), and a refusal of a size in bytes that says why; the plots name their units and put a space before
each unit, and the bytes axis is ticked over the blocks axis's ticks.

Worked by hand: llama-2-70b fp16 at 512-token blocks is 167,772,160 B per block (2 x 80 layers x 8 KV heads x 128 x
2 B x 512), so the blocks ticks 1, 10, 100, 1,000, 10,000 sit under 167.77 MB, 1.68 GB, 16.78 GB, 167.77 GB and
1.68 TB (decimal, two decimals as every text report prints bytes).
"""
from __future__ import annotations

import pytest

from tests.helpers import invoke

BB = 167_772_160


def test_no_model_says_what_model_adds_and_nothing_about_bytes():
    r = invoke("curve", "--capacities", "1000blocks,5000blocks")
    assert r.exit_code == 0, r.output
    assert "capacities in blocks of 512 tokens: the curve needs no model; --model NAME adds each capacity's bytes" \
        in r.stdout
    assert "capacity in bytes uses stored (Reserved) bytes" not in r.stdout
    with_model = invoke("curve", "--capacities", "1000blocks", "--model", "llama-2-70b")
    assert "capacity in bytes uses stored (Reserved) bytes" in with_model.stdout
    assert "the curve needs no model" not in with_model.stdout


def test_a_size_without_a_model_says_what_model_would_do():
    r = invoke("curve", "--capacities", "200GB")
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert r.output.strip() == (
        "pcs: error: --capacities '200GB': a size in bytes needs --model NAME (pcs replay's default is "
        "llama-2-70b), whose bytes per block turn 200GB into blocks and add a bytes column; or give blocks, e.g. "
        "5000blocks")


def test_the_html_curve_axes_share_ticks_and_space_the_unit():
    from pcs.report.htmlcharts import _capacity_axis

    bottom, top = _capacity_axis(512, BB, (1, 33_000))
    assert bottom["values"] == top["values"] == [1, 10, 100, 1_000, 10_000]
    assert top["labelExpr"].endswith("+ ' B'")           # "16.8 GB", not "16.8GB"
    assert "decimal bytes" in top["title"] and "blocks of 512 tokens" in bottom["title"]


def test_the_png_bytes_ticks_sit_over_the_block_ticks():
    pytest.importorskip("matplotlib")
    from pcs.cli.curve import _load
    from pcs.curves.api import curve
    from pcs.model import get_model
    from pcs.report.curve import curve_figure

    (flat, _), _ = _load(None, (None, None, "raise", False), True)
    res = curve(flat, [1, 10, 1000, 20000], None, get_model("llama-2-70b"), belady=False)
    assert res.block_bytes == BB
    fig = curve_figure(res, "llama-2-70b")
    ax, top = fig.axes[0], fig.axes[0].child_axes[0]
    lo, hi = ax.get_xlim()
    below = [t for t in ax.get_xticks() if lo <= t <= hi]
    assert below == [1, 10, 100, 1_000, 10_000]
    assert [t.get_text() for t in top.get_xticklabels()] == ["167.77 MB", "1.68 GB", "16.78 GB", "167.77 GB",
                                                             "1.68 TB"]
    assert list(top.get_xticks()) == [b * BB for b in below]
    assert ax.get_xlabel() == "capacity (blocks of 512 tokens, log scale)"
    assert ax.get_ylabel() == "hit ratio (% of prompt tokens)"
    import matplotlib.pyplot as plt
    plt.close(fig)
