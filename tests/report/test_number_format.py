"""Statistics in tables are rounded once, from the value (``24.25`` -> ``24.25``, not ``24.2`` padded to ``24.20``):
``pcs trace stats`` and ``pcs trace transform`` tables agree with their JSON."""
from __future__ import annotations

import json

from helpers import invoke
from pcs.report.traceshape import number
from pcs.units import format_count


def test_format_count_by_hand():
    assert format_count(24.25) == "24.25"
    assert format_count(4.25) == "4.25"
    assert format_count(34.76) == "34.76"
    assert format_count(1234.567) == "1,234.57"
    assert format_count(288500) == "288,500"
    assert format_count(7.0) == "7"
    assert number(None) == "-" and number(0.5) == "0.50"


def _token_trace(path):
    # 4 requests at 0, 1, 2 and 3.5 s: prompts of 10, 20, 30, 37 tokens (97 in all), answers of 1, 2, 3, 11 tokens (17 in all)
    lines, tok = [], 0
    for i, (p, o) in enumerate(((10, 1), (20, 2), (30, 3), (37, 11))):
        lines.append(json.dumps({"timestamp": (0, 1000, 2000, 3500)[i], "output_length": o, "token_ids": list(range(tok, tok + p))}))
        tok += p
    path.write_text("\n".join(lines) + "\n")
    return path


def test_trace_stats_table_shows_the_json_values(tmp_path):
    t = _token_trace(tmp_path / "t.jsonl")
    st = json.loads(invoke("trace", "stats", t, "--format", "json", "-q").stdout)
    # by hand: prompt mean 97 / 4 = 24.25, p50 (20 + 30) / 2 = 25, p99 (numpy linear) at position 0.99 x 3 = 2.97:
    # 30 + 0.97 x (37 - 30) = 36.79, max 37; output mean 17 / 4 = 4.25, p50 2.5, p99 3 + 0.97 x 8 = 10.76, max 11
    assert st["prompt_tokens_mean"] == 24.25 and st["output_tokens_mean"] == 4.25
    table = invoke("trace", "stats", t, "-q").stdout
    row = {ln.split("  ")[0]: ln for ln in table.splitlines()}
    assert "24.25 / 25 / 36.79 / 37" in row["prompt tokens mean / p50 / p99 / max"]
    assert "4.25 / 2.50 / 10.76 / 11" in row["output tokens mean / p50 / p99 / max"]
    assert "24.20" not in table and "4.20" not in table


def test_transform_table_rounds_once(tmp_path):
    t = _token_trace(tmp_path / "t.jsonl")
    out = invoke("trace", "transform", t, tmp_path / "o.jsonl", "--speed", "4", "-q")
    assert out.exit_code == 0, out.output
    # time span: arrivals 0, 1, 2, 3.5 s -> 3.5 s before; at speed 4, 3.5 / 4 = 0.875 s -> 0.88 (one rounding)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("time span (s)")][0]
    assert line.split()[3:5] == ["3.50", "0.88"], line


def test_durations_group_thousands_like_counts():
    # the fleet's per-instance table printed "busy 3289.81 s" beside "prompt tokens 36,980,701";
    # a duration of 1,000 s or more groups its thousands as format_count does
    from pcs.units import format_duration

    assert format_duration(3289.81) == "3,289.81 s"
    assert format_duration(999.994) == "999.99 s" and format_duration(0.635) == "635.00 ms"
    assert format_duration(-1234.5) == "-1,234.50 s"


def test_fleet_busy_column_has_the_separator():
    from pcs.fleet import fleet_replay
    from pcs.report.fleet import render_fleet

    s = fleet_replay(None, instances=2, router="round-robin", timing="sequential").summary.to_dict()
    s["per_instance"][0]["busy_s"] = 3289.81          # the walkthrough's instance 0 figure
    row = next(line for line in render_fleet(s).splitlines() if line.lstrip().startswith("0 "))
    assert "3,289.81 s" in row
