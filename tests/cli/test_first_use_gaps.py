"""Gaps a first user of the README met, each checked against the rule it follows.

Block arithmetic, worked by hand: llama-2-70b fp16 at block 512 (the default model and block) is 80 layers x 8 KV
heads x 128 x 2 (K, V) x 2 B x 512 tokens = 167,772,160 B per block; 200 GB holds floor(200e9 / 167,772,160) =
1,192 blocks = 199,984,414,720 B (199.98 GB), 1 TB holds 5,960 blocks = 999,922,073,600 B (999.92 GB).
"""
from __future__ import annotations

import pytest

from pcs.errors import UserError
from pcs.units import parse_capacity
from tests.helpers import assert_one_line_error, invoke, invoke_json

BLOCK = 80 * 8 * 128 * 2 * 2 * 512


# -- blocks spelled as the tables print them ("1,192 blk") -----------------------------------------------------------

@pytest.mark.parametrize("text", ["5000blk", "5000 blk", "5000BLK", "5000blocks", "5000 block"])
def test_blk_is_a_block_count_as_the_tables_print_it(text):
    assert parse_capacity(text).blocks == 5000


def test_blk_on_the_command_line_is_the_same_tier_as_blocks():
    a = invoke_json("replay", "--tier", "gpu=300blk", "--timing", "sequential")
    b = invoke_json("replay", "--tier", "gpu=300blocks", "--timing", "sequential")
    assert a["tiers"][0]["capacity_blocks"] == 300 == b["tiers"][0]["capacity_blocks"]
    assert a["hit_ratio"] == b["hit_ratio"]


@pytest.mark.parametrize("text", ["1.5blk", "-3blk", "5000blks", "5000bk"])
def test_blk_takes_the_rule_of_blocks(text):
    with pytest.raises(UserError):
        parse_capacity(text)


@pytest.mark.parametrize("cmd", ["replay", "compare"])
def test_a_comma_list_given_to_tier_points_at_repeating_it_and_at_tiers(cmd):
    line = assert_one_line_error(invoke(cmd, "--tier", "gpu=200GB,cpu=1TB"),
                                 "--tier gpu=200GB,cpu=1TB", "each --tier takes one NAME=SIZE; the option repeats",
                                 "--tier gpu=200GB --tier cpu=1TB", "--tiers")
    assert "bad tier size" not in line


# -- pcs report given a trace -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("trace, kind", [("traces/sample_chat.jsonl", "a trace"),
                                         ("traces/formats/vllm_kv_events_9.jsonl", "a trace"),
                                         ("traces/formats/openai_chat_4.jsonl", "a trace"),
                                         ("traces/formats/azure2023_conv_8.csv", "a CSV trace"),
                                         ("traces/formats/burstgpt1_4.csv", "a CSV trace")])
def test_report_given_a_trace_says_replay_it_first(trace, kind, tmp_path):
    assert_one_line_error(invoke("report", trace, "-o", tmp_path / "x.html"),
                          f"{trace}: {kind}, not pcs JSON: replay it with --format json first")
    assert not (tmp_path / "x.html").exists()


def test_report_given_a_one_request_trace_or_a_parquet_trace(tmp_path):
    line = open("traces/sample_chat.jsonl").readline()
    (tmp_path / "one.jsonl").write_text(line)            # one line: a single object, but a request's keys
    assert_one_line_error(invoke("report", tmp_path / "one.jsonl", "-o", tmp_path / "x.html"), "a trace, not pcs JSON")
    (tmp_path / "t.parquet").write_bytes(b"PAR1" + b"\0" * 16 + b"PAR1")   # the magic is all the check reads
    assert_one_line_error(invoke("report", tmp_path / "t.parquet", "-o", tmp_path / "x.html"),
                          "a Parquet trace, not pcs JSON")


def test_report_still_reads_pcs_json_on_one_line(tmp_path):
    import json

    d = invoke_json("replay", "--timing", "sequential")
    (tmp_path / "run.json").write_text(json.dumps(d))          # one line, as a user's re-dump would be
    r = invoke("report", tmp_path / "run.json", "-o", tmp_path / "x.html", "--no-curve", "-q")
    assert r.exit_code == 0, r.output
    (tmp_path / "other.json").write_text('{"a": 1}\n')          # not a trace: the old message stands
    assert_one_line_error(invoke("report", tmp_path / "other.json", "-o", tmp_path / "x.html"),
                          "not the JSON of pcs replay")


# -- trace outputs: the suffix picks Parquet only; pcs writes no CSV -------------------------------------------------

@pytest.mark.parametrize("cmd", [("trace", "convert", "traces/sample_chat.jsonl"),
                                 ("trace", "transform", "traces/sample_chat.jsonl", "--speed", "2"),
                                 ("trace", "synth", "--requests", "5")])
@pytest.mark.parametrize("name", ["out.csv", "OUT.TSV", "out.csv.gz"])
def test_a_csv_output_name_is_refused_without_to(cmd, name, tmp_path):
    out = tmp_path / name
    args = [*cmd[:2], *([cmd[2]] if cmd[1] != "synth" else []), out, *cmd[3 if cmd[1] != "synth" else 2:]]
    assert_one_line_error(invoke(*args, "-q"), f"OUT {out}", "pcs writes no", "--to mooncake")
    assert not out.exists()


def test_to_mooncake_writes_jsonl_under_a_csv_name(tmp_path):
    import json

    out = tmp_path / "out.csv"
    r = invoke("trace", "convert", "traces/sample_chat.jsonl", out, "--to", "mooncake", "-q")
    assert r.exit_code == 0, r.output
    first = json.loads(out.read_text().splitlines()[0])         # JSONL, as asked, the sample's first request
    assert first == json.loads(open("traces/sample_chat.jsonl").readline())


def test_convert_help_and_the_traces_doc_say_parquet_is_uncompressed():
    text = " ".join(invoke("trace", "convert", "--help").stdout.split())
    assert "Parquet is written uncompressed" in text and "23 % fewer instructions" in text
    assert "*.csv or *.tsv name needs --to" in text
    doc = " ".join(open("docs/traces.md").read().split())
    assert "Parquet is written **uncompressed**" in doc and "23 % fewer instructions" in doc
    assert 1 - 180.6 / 234.0 == pytest.approx(0.23, abs=0.005)     # the read's figures the two quote
    assert 7.36 / 2.09 == pytest.approx(3.5, abs=0.05) and 798 / 232 == pytest.approx(3.4, abs=0.05)
    assert 34 / 7.36 == pytest.approx(4.6, abs=0.05) and 3.03e6 / 798e3 == pytest.approx(3.8, abs=0.05)


# -- retain's duration= reads units as every duration option -------------------------------------------------------



@pytest.mark.parametrize("text, seconds", [("60s", 60.0), ("1min", 60.0), ("2minutes", 120.0), ("500ms", 0.5),
                                           ("0.5h", 1800.0), ("60", 60.0), ("0.25", 0.25)])
def test_retain_duration_takes_the_duration_units_and_a_plain_number_is_seconds(text, seconds):
    from pcs.cache.admission_retention import _duration_s
    from pcs.cache.admission import parse_admission

    value = parse_admission(f"retain:tokens=0-4096,duration={text}")[1]["duration"]
    assert _duration_s(value) == seconds


def test_retain_duration_spellings_give_one_run():
    runs = [invoke_json("replay", "--admit", f"gpu=retain:tokens=0-4096,duration={d}", "--timing", "sequential")
            for d in ("60s", "1min", "60")]
    assert runs[0]["hit_ratio"] == runs[1]["hit_ratio"] == runs[2]["hit_ratio"]


@pytest.mark.parametrize("text, needle", [("60x", "unknown unit 'x'"), ("1m", "unit 'm' may be minutes or milliseconds"),
                                          ("-5s", "must not be negative"), ("0s", "must be > 0"),
                                          ("0", "must be > 0")])
def test_retain_duration_refusals_name_the_option_and_the_rule(text, needle):
    assert_one_line_error(invoke("replay", "--admit", f"gpu=retain:tokens=0-4096,duration={text}"),
                          f"duration={text}", needle)


# -- compare's notes name the variant they describe ------------------------------------------------------------------

def test_variant_notes_once_when_shared_else_one_per_variant_that_has_it():
    from types import SimpleNamespace as NS

    from pcs.report.compare import variant_notes

    res = NS(variants=[NS(variant="a", summary=NS(notes=["shared", "busy 58 of 59"])),
                       NS(variant="b", summary=NS(notes=["shared", "over HBM", "busy 30 of 31"])),
                       NS(variant="c", summary=NS(notes=["shared", "over HBM"])),
                       NS(variant="d", summary=None)])
    assert variant_notes(res) == ("a: shared", "a: busy 58 of 59", "b: shared", "b: over HBM", "b: busy 30 of 31",
                                  "c: shared", "c: over HBM")
    res.variants.pop()                                    # without the summary-less variant, "shared" is everyone's
    assert variant_notes(res) == ("shared", "a: busy 58 of 59", "b: over HBM", "b: busy 30 of 31", "c: over HBM")


def test_compare_names_the_variant_whose_gpu_tier_is_above_the_deployment():
    # gpu=auto is the deployment's own size (398.05 GB), so only 5000 blocks x 167,772,160 B = 838.86 GB exceeds it
    assert 5000 * BLOCK == 838_860_800_000
    r = invoke("compare", "--tiers", "gpu=auto,cpu=1TB", "--tiers", "gpu=5000blocks", "--timing", "sequential")
    assert r.exit_code == 0, r.output
    over = [ln for ln in r.stdout.splitlines() if "more than this deployment leaves for KV" in ln]
    assert over == [ln for ln in over if ln.startswith("note: lru gpu=5000blocks: the GPU tier (838.86 GB)")]
    assert len(over) == 1
    defaults = [ln for ln in r.stdout.splitlines() if ln.startswith("note: defaults: model llama-2-70b")]
    assert len(defaults) == 1                              # a note both variants have: once, unlabelled


# -- the curve chart's caption names only what is drawn ---------------------------------------------------------------

def test_curve_caption_names_the_run_marks_only_when_drawn():
    from pcs.report.htmlcharts import curve_caption

    knees = [{"label": "50 %"}, {"label": "90 %"}, {"label": "99 %"}]
    alone = curve_caption(True, 0, True, knees, [])
    assert alone == ("LRU from one pass over the trace (every capacity), Belady where computed, the single-sequence "
                     "ceiling; circles mark where LRU reaches 50/90/99 % of the ceiling.")
    lines = curve_caption(True, 0, True, knees, [{"label": "gpu", "capacity_blocks": 1192}])
    assert lines.endswith("; vertical lines are the run's capacities (GPU tier, all tiers).")
    square = curve_caption(True, 0, True, knees, [{"label": "gpu", "capacity_blocks": 1192, "hit_ratio": 0.3}])
    assert square.endswith("(GPU tier, all tiers) and the square the run's real hit ratio.")
    assert curve_caption(False, 15, False, [], [{"label": "gpu", "capacity_blocks": 0}]) == (
        "LRU at the curve's 15 capacities and knees (exact there, straight between: a curve JSON holds no more), "
        "the single-sequence ceiling.")                   # a 0-block mark is not drawn (log axis), so not named


def test_the_curve_page_without_a_replay_names_no_run_marks(tmp_path):
    r = invoke("curve", "traces/sample_chat.jsonl", "--model", "llama-3.1-8b", "--html", tmp_path / "c.html", "-q")
    assert r.exit_code == 0, r.output
    page = (tmp_path / "c.html").read_text()
    assert "circles mark where LRU reaches" in page
    assert "vertical lines" not in page and "the square" not in page


# -- the HTML compare table gives tiers in bytes beside blocks, as the text table -----------------------------------

def _tier_cells(table):
    return {r[0]["text"]: [c["text"] for c in r[1:]] for r in table["rows"] if r[0]["text"].startswith("tier")}


def test_html_compare_table_gives_bytes_beside_blocks_from_tier_capacities():
    from pcs.report.htmltables import compare_table

    d = invoke_json("compare", "--tiers", "gpu=200GB,cpu=1TB", "--tiers", "gpu=5000blocks", "--timing", "sequential")
    assert _tier_cells(compare_table(d)) == {
        "tier gpu": ["199.98 GB = 1,192 blk", "838.86 GB = 5,000 blk"],     # 5000 x 167,772,160 = 838,860,800,000 B
        "tier cpu": ["999.92 GB = 5,960 blk", "-"]}                         # the second list has no cpu tier
    for v in d["variants"]:
        del v["tier_capacities"]                     # a compare JSON written before they were added: the tiers text
    assert _tier_cells(compare_table(d)) == {"tiers": ["gpu=1192blocks cpu=5960blocks", "gpu=5000blocks"]}


def test_compare_html_and_report_of_its_json_show_the_text_tables_tier_cells(tmp_path):
    import json

    args = ("compare", "--policy", "lru", "--policy", "fifo", "--tier", "gpu=200GB", "--tier", "cpu=1TB",
            "--timing", "sequential", "-q")
    assert invoke(*args, "--html", tmp_path / "c.html").exit_code == 0
    (tmp_path / "c.json").write_text(json.dumps(invoke_json(*args[:-1])))
    assert invoke("report", tmp_path / "c.json", "-o", tmp_path / "r.html", "-q").exit_code == 0
    row = ('<tr><td class="">tier gpu</td><td class="">199.98 GB = 1,192 blk</td>'
           '<td class="">199.98 GB = 1,192 blk</td></tr>')
    for page in ("c.html", "r.html"):
        text = (tmp_path / page).read_text()
        assert row in text and "999.92 GB = 5,960 blk" in text and ">gpu=1192blocks cpu=5960blocks<" not in text
    csv = invoke(*args, "--format", "csv", "--html", tmp_path / "d.html")     # the page's extra key stays off CSV
    assert csv.exit_code == 0 and "tier_capacities" not in csv.stdout


def test_compare_saturation_notes_each_lead_with_their_variant():
    # modeled timing, the default llama-2-70b on 8 H100s: the sample saturates the instance under either tier list
    # (one note used to stand for both); each has its own bins, so each note names its variant
    r = invoke("compare", "--tiers", "gpu=auto,cpu=1TB", "--tiers", "gpu=5000blocks")
    assert r.exit_code == 0, r.output
    busy = [ln for ln in r.stdout.splitlines() if "was busy >= 99 %" in ln]
    assert [ln.split(": the instance", 1)[0] for ln in busy] == ["note: lru gpu=auto cpu=1TB", "note: lru gpu=5000blocks"]
