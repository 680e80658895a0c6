"""The new-user walkthrough's findings (round 19): HTML tables that agree with their text twins, notes and labels
that say what the numbers are; each checked against values worked out by hand in the comments."""
from __future__ import annotations

import json
from pathlib import Path

from helpers import invoke, invoke_json

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "traces" / "sample_chat.jsonl"


def _gemma(*extra):
    return invoke_json("replay", str(SAMPLE), "--model", "gemma-3-27b", "--tier", "gpu=20GB", "--tier",
                       "cpu=100GB", "-q", *extra)


def _rows(table):
    return {r[0]["text"]: [c["text"] for c in r[1:]] for r in table["rows"]}


def test_html_all_components_is_the_whole_block():
    # gemma-3-27b on 8x h100 (TP 8), bf16: 62 layers (10 full attention, 52 sliding window), 8,192 B per token and
    # layer per TP group (2 x 16 KV heads x 128 x 2 B). Payload = 62 x 512 x 8,192 = 260,046,848 B = 260.05 MB;
    # full attention 10 x 512 x 8,192 = 41.94 MB, sliding window 52 x 512 x 8,192 = 218.10 MB. vLLM's page is 10
    # layers of 512 tokens = 41,943,040 B; a block is 1 + ceil(52 / 10) = 7 pages = 293,601,280 B = 293.60 MB,
    # so the padding is 293,601,280 - 260,046,848 = 33,554,432 B = 33.55 MB. It read "41.94 MB" (one page).
    from pcs.report.htmltables import footprint_tables
    (t,) = footprint_tables(_gemma())
    rows = _rows(t)
    assert rows["full_attention"] == ["41.94 MB", "41.94 MB"]
    assert rows["sliding_window"] == ["218.10 MB", "218.10 MB"]
    assert rows["page padding (up to whole pages)"] == ["33.55 MB", "33.55 MB"]
    assert rows["all components"] == ["293.60 MB", "293.60 MB"]
    assert rows["payload (Reference)"][0] == "260.05 MB"


def test_html_all_components_sglang_and_plain_models():
    # SGLang: one pool per kind of layer, a page per block in each: 41.94 + 218.10 = 260.05 MB, no padding row.
    # A plain model (llama-2-70b, 80 layers x 512 x 2 x 8 KV heads x 128 x 2 B = 167,772,160 B = 167.77 MB): the
    # tier's bytes per block, as before.
    from pcs.report.htmltables import footprint_tables
    (t,) = footprint_tables(_gemma("--hybrid-kv-cache-manager", "sglang"))
    rows = _rows(t)
    assert rows["all components"] == ["260.05 MB", "260.05 MB"] and "page padding (up to whole pages)" not in rows
    (t,) = footprint_tables(invoke_json("replay", str(SAMPLE), "--tier", "gpu=20GB", "--tier", "cpu=100GB", "-q"))
    assert _rows(t)["all components"] == ["167.77 MB", "167.77 MB"]


def test_html_tier_table_is_the_text_one():
    # The HTML tier table has the text table's title, headers (hybrid: "hit model blocks"), rows and notes (the
    # pages note among them): both come from one function.
    from pcs.report.htmltables import tier_table
    from pcs.report.replay import tier_rows
    s = _gemma()
    t = tier_table(s)
    title, headers, rows, notes = tier_rows(s)
    assert t["title"] == title and t["headers"] == headers and t["notes"] == notes
    assert [[c["text"] for c in r] for r in t["rows"]] == rows
    assert "hit model blocks" in t["headers"] and "hit blocks" not in t["headers"]
    assert any("count pages of the shared pool" in n for n in t["notes"])
    text = invoke("replay", str(SAMPLE), "--model", "gemma-3-27b", "--tier", "gpu=20GB", "--tier", "cpu=100GB",
                  "-q").stdout
    assert "hit model blocks" in text and all(n.split(";")[0] in text for n in notes)
