"""The second read of a trace -- the replay page's curve and oracle (``pcs replay --html/--plot``, ``pcs report`` of
the run's JSON) -- reads it as the run did: with ``--on-error skip`` the bad line the run skipped is skipped again,
not a ``TRACE:LINE: invalid JSON`` error (exit 2) after the run's own note that it was skipped.

Compare reads the trace once (its page is built from its JSON), pcs curve once, a sweep's points with the sweep's
own open options (pcs.sweep.kinds): no second read there.
"""
from __future__ import annotations

import json

from helpers import SMALL_TRACE, invoke


def _bad_trace(tmp_path):
    lines = SMALL_TRACE.read_text().splitlines()
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines[:4] + ['{"timestamp": oops'] + lines[4:]) + "\n")
    return path


def test_replay_html_reads_the_trace_again_skipping_the_bad_line(tmp_path):
    trace, page = _bad_trace(tmp_path), tmp_path / "x.html"
    r = invoke("replay", trace, "--on-error", "skip", "--html", page, "--format", "json")
    assert r.exit_code == 0, r.output
    assert page.stat().st_size > 0
    assert "1 bad trace line was skipped (--on-error skip)" in json.loads(r.stdout)["notes"]


def test_report_of_the_runs_json_reads_the_trace_as_the_run_did(tmp_path):
    trace, page = _bad_trace(tmp_path), tmp_path / "y.html"
    run = tmp_path / "run.json"
    r = invoke("replay", trace, "--on-error", "skip", "--format", "json")
    assert r.exit_code == 0, r.output
    run.write_text(r.stdout)
    r = invoke("report", run, "-o", page)
    assert r.exit_code == 0, r.output
    assert page.stat().st_size > 0


def _oracle(page):
    import re

    found = re.findall(r"Belady at [0-9,]+ blocks\) [0-9.]+ %", page.read_text())
    assert found, "no oracle on the page"
    return found[0]


def test_report_reads_a_token_trace_again_at_the_runs_block_size(tmp_path):
    # A token trace is blocked when it is opened: read again with --sort for the report page, it must be blocked at
    # the run's --block-size 64, as the run's own page reads it (it was blocked at the default 16 and drew that
    # block size's oracle at the 64-token run's capacity: a wrong figure without an error, review37d finding 1).
    from helpers import ROOT

    trace = ROOT / "traces" / "sample_tokens.jsonl"
    own, run, page = tmp_path / "own.html", tmp_path / "run.json", tmp_path / "report.html"
    r = invoke("replay", trace, "--block-size", "64", "--sort", "--html", own, "--format", "json")
    assert r.exit_code == 0, r.output
    run.write_text(r.stdout)
    assert invoke("report", run, "-o", page).exit_code == 0
    default = tmp_path / "b16.html"
    assert invoke("replay", trace, "--sort", "--html", default, "-q").exit_code == 0
    assert _oracle(page) == _oracle(own)
    assert _oracle(own).split(")")[1] != _oracle(default).split(")")[1]     # the block size moves the oracle's ratio
