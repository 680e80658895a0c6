"""The tier table of a hybrid model counts pages of the shared pool, and says so (it said "blk")."""
from pathlib import Path

from helpers import unwrapped

from click.testing import CliRunner

from pcs.cli.main import cli

SAMPLE = Path(__file__).resolve().parents[2] / "traces" / "sample_chat.jsonl"


def test_hybrid_tiers_are_labelled_in_pages():
    # gemma-3-27b on 8x h100 (TP 8): a page is 10 layers of 512 tokens, 41,943,040 B per TP group (the note
    # of the run prints it); 20 GB / 41,943,040 B = 476.8 -> 476 pages. A block of the model is 1 full-attention
    # page + 6 sliding-window pages, so "476 blk" overstated the blocks about 6x.
    out = CliRunner().invoke(cli, ["replay", str(SAMPLE), "--model", "gemma-3-27b", "--tier", "gpu=20GB",
                                   "--tier", "cpu=100GB", "-q"]).stdout
    assert "= 476 pages" in out and "bytes/page" in out and "476 blk" not in out
    plain = CliRunner().invoke(cli, ["replay", str(SAMPLE), "--tier", "gpu=20GB", "-q"]).stdout
    assert "bytes/block" in plain and " blk " in plain and "pages" not in plain.split("Tiers")[1].split("\n\n")[0]


def test_hybrid_bytes_table_counts_pages():
    # The same run: the peak Reserved and the last tier's drops are counted in pages of 41,943,040 B (above),
    # so peak_reserved_bytes / peak_reserved_blocks is that page, and the Bytes table must say "pages".
    import json
    args = ["replay", str(SAMPLE), "--model", "gemma-3-27b", "--tier", "gpu=20GB", "--tier", "cpu=100GB", "-q"]
    b = json.loads(CliRunner().invoke(cli, args + ["--format", "json"]).stdout)["bytes"]
    assert b["peak_reserved_blocks"] > 0 and b["peak_reserved_bytes"] == 41_943_040 * b["peak_reserved_blocks"]
    out = CliRunner().invoke(cli, args).stdout.split("Bytes")[1]
    assert "GPU pages pinned or reserved" in out and "GPU blocks" not in out
    assert " blk " not in out


def test_html_tier_table_and_inputs_count_pages():
    # The same 476-page run (above) in the HTML page's tier table and inputs row: pages, as in the text table.
    import json

    from pcs.report.htmlpage import inputs_rows
    from pcs.report.htmltables import tier_table
    args = ["replay", str(SAMPLE), "--model", "gemma-3-27b", "--tier", "gpu=20GB", "--tier", "cpu=100GB", "-q"]
    s = json.loads(CliRunner().invoke(cli, args + ["--format", "json"]).stdout)
    table = tier_table(s)
    assert "bytes/page" in table["headers"]
    assert table["rows"][1][3]["text"].endswith("= 476 pages")   # row 0: the payload row, as in the text table
    (tiers,) = [text for label, text in inputs_rows([s], None, None) if label == "tiers"]
    assert tiers.startswith("gpu 476 pages (") and "blocks" not in tiers


def test_hybrid_figures_name_the_run_they_describe():
    # gap.hybrid_rules is a term of the sequential replay's gap (docs/semantics.md §12); hybrid.lost_tokens counts
    # this run's hit tokens lost to the rules. Side by side ("0.0 pts" beside "16,896 hit tokens") each says which run.
    out = CliRunner().invoke(cli, ["replay", str(SAMPLE), "--model", "gemma-3-27b", "--tier", "gpu=40GB",
                                   "--tier", "cpu=200GB", "-q"]).stdout
    (gap,) = [line for line in out.splitlines() if line.startswith("gap: hybrid rules")]
    assert "in the sequential replay" in gap
    (note,) = [line for line in out.splitlines() if "lost to the hybrid rules" in line]
    assert "hit tokens of this run lost" in note


def test_hybrid_page_draws_no_one_pass_curve_nor_pages_as_blocks(tmp_path):
    # The same 476-page run (above): the one-pass LRU curve and Belady apply the all-full-attention rules, and its
    # "476" are pages (a block is 7 of them), so the page drew another model's curve with a mark "gpu 476 blk" and
    # a bytes axis of 41,943,040 B "per block"; now no curve, no oracle and no marks, as pcs curve --model refuses.
    import json

    from pcs.report.htmlcurve import replay_curve
    from pcs.report.htmlpage import _run_marks
    args = ["replay", str(SAMPLE), "--model", "gemma-3-27b", "--tier", "gpu=20GB", "--tier", "cpu=100GB", "-q"]
    s = json.loads(CliRunner().invoke(cli, args + ["--format", "json"]).stdout)
    assert replay_curve(str(SAMPLE), s) == (None, None) and _run_marks(s) == []
    page = tmp_path / "g.html"
    assert CliRunner().invoke(cli, args + ["--html", str(page)]).exit_code == 0
    text = page.read_text()
    assert 'data-chart="curve"' not in text and "476 blk" not in text


def test_headline_title_and_caption_follow_what_is_drawn():
    # A hybrid run has no oracle (htmlcurve.replay_curve gives none: Belady counts whole-model blocks): the
    # headline is titled without "oracle", says why, and the waterfall's caption has no dashed line to explain.
    # A plain run with an oracle keeps both; one without (--no-curve) says it was not computed.
    from pcs.engine.api import replay
    from pcs.report.htmlpage import NO_ORACLE_HYBRID, NO_ORACLE_NOT_COMPUTED, build_page

    def headline(s, oracle):
        sec = next(x for x in build_page([s], None, oracle)["sections"] if x and x["id"] == "headline")
        return sec["title"], sec["intro"], sec["charts"][0].caption

    hyb = replay(SAMPLE, model="gemma-3-27b", tiers=["gpu=20GB", "cpu=100GB"], timing="sequential").summary.to_dict()
    title, intro, caption = headline(hyb, None)
    assert "oracle" not in title and intro == NO_ORACLE_HYBRID and "dashed" not in caption
    plain = replay(SAMPLE, tiers=["gpu=300blocks"], timing="sequential").summary.to_dict()
    title, intro, caption = headline(plain, {"capacity_blocks": 300, "hit_ratio": 0.25})
    assert title == "Hit ratio: real, single-sequence, oracle" and intro == "" and "dashed line" in caption
    title, intro, caption = headline(plain, None)
    assert "oracle" not in title and intro == NO_ORACLE_NOT_COMPUTED and "dashed" not in caption
    # given a pcs curve JSON beside the run (pcs report run.json curve.json), the trace is not read: the page says
    # that, not --no-curve, which the user did not give
    from pcs.report.htmlpage import NO_ORACLE_CURVE_GIVEN

    from pcs.curves.api import curve as hit_curve

    curve = hit_curve(SAMPLE, capacities=[300]).to_dict()
    sec = next(x for x in build_page([plain, curve])["sections"] if x and x["id"] == "headline")
    assert sec["intro"] == NO_ORACLE_CURVE_GIVEN and "--no-curve" not in sec["intro"]


def test_all_full_attention_line_says_the_padding_it_includes():
    # qwen3-next-80b-a3b pads its state to the 12-layer attention page (docs/hybrid.md): the comparison with every
    # layer as full attention differs from the run by the rules AND by the capacity the padding takes, which the gap
    # counts under capacity and eviction. The JSON puts the padding at each tier's peak beside the comparison (the
    # tiers' own page_padding component), the text's comparison line says it in the GPU tier's bytes.
    import json

    from pcs.units import format_bytes
    args = ["replay", str(SAMPLE), "--model", "qwen3-next-80b-a3b", "--tier", "gpu=40GB", "--timing", "sequential",
            "-q"]
    s = json.loads(CliRunner().invoke(cli, args + ["--format", "json"]).stdout)
    full, gpu = s["hybrid"]["full_attention"], s["tiers"][0]
    pad = gpu["resident_bytes_peak_by_component"]["page_padding"]
    assert pad > 0 and full["page_padding_bytes_peak"] == {"gpu": pad}
    (line,) = [x for x in CliRunner().invoke(cli, args).stdout.splitlines() if "every layer as full attention" in x]
    assert f"the difference includes the page padding, {format_bytes(pad)} of gpu's " \
           f"{format_bytes(gpu['capacity_bytes'])} at its peak" in line and "capacity and eviction" in line


def test_hybrid_hits_per_tier_say_their_rule():
    # docs/replay.md "hits per tier (hybrid models)": the tier table's title and the first "hits served by" row say
    # a hybrid model's rule (the lowest tier any page a hit reads came from); a plain model keeps its own title.
    from pcs.report.replay import HYBRID_TIER_TITLE, TIER_TITLE
    args = ["replay", str(SAMPLE), "--tier", "gpu=20GB", "--tier", "cpu=100GB", "-q"]
    out = CliRunner().invoke(cli, args[:1] + args[1:] + ["--model", "gemma-3-27b"]).stdout
    assert HYBRID_TIER_TITLE in out and TIER_TITLE not in out
    (row,) = [x for x in unwrapped(out).splitlines() if "hits served by gpu" in x]   # the meaning may wrap
    assert "lowest tier any page it reads came from" in row
    plain = CliRunner().invoke(cli, args).stdout
    assert TIER_TITLE in plain and "lowest tier" not in plain
