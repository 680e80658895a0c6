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
