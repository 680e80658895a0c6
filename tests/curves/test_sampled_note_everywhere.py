"""A sampled curve (``--sample-rate`` below 1: SHARDS) says its LRU values are estimates in every output: the
table (as before), the JSON's ``notes`` and the HTML page, ``pcs report`` of a curve JSON written without the note
too; an exact curve carries no such note. Before, only the table said so."""
from __future__ import annotations

import json

from pcs.trace.api import DEFAULT_TRACE as SAMPLE
from tests.helpers import invoke, invoke_json

NOTE = ("SHARDS sample rate 0.5: LRU values are estimates (docs/curves.md gives the measured error); Belady is not "
        "computed when sampling")


def test_json_notes_carry_it_when_sampled():
    payload = invoke_json("curve", SAMPLE, "--points", "3", "--sample-rate", "0.5")
    assert payload["sample_rate"] == 0.5 and payload["notes"].count(NOTE) == 1


def test_exact_json_has_no_estimate_note():
    payload = invoke_json("curve", SAMPLE, "--points", "3")
    assert not any("estimate" in n for n in payload.get("notes", []))


def test_table_says_it_once():
    r = invoke("curve", SAMPLE, "--points", "3", "--sample-rate", "0.5", "-q")
    assert r.exit_code == 0 and r.stdout.count(NOTE) == 1 and r.stdout.rstrip().endswith("note: " + NOTE)


def test_html_page_carries_it(tmp_path):
    page = tmp_path / "c.html"
    assert invoke("curve", SAMPLE, "--points", "3", "--sample-rate", "0.5", "-q", "--html", page).exit_code == 0
    assert page.read_text().count(NOTE) == 1
    exact = tmp_path / "e.html"
    assert invoke("curve", SAMPLE, "--points", "3", "-q", "--html", exact).exit_code == 0
    assert "LRU values are estimates" not in exact.read_text()


def test_report_of_a_json_without_the_note_adds_it(tmp_path):
    payload = invoke_json("curve", SAMPLE, "--points", "3", "--sample-rate", "0.5")
    payload["notes"] = [n for n in payload["notes"] if n != NOTE]     # as a pcs before the note wrote it
    if not payload["notes"]:
        del payload["notes"]
    src, page = tmp_path / "c.json", tmp_path / "r.html"
    src.write_text(json.dumps(payload))
    r = invoke("report", src, "-o", page, "-q")
    assert r.exit_code == 0, r.output
    assert page.read_text().count(NOTE) == 1
