"""Every CSV pcs writes guards its text cells against spreadsheet formulas (OWASP "CSV injection"): a text cell
starting with = + - @ tab or CR is written with a leading ', numbers (negative ones too) unchanged
(pcs.csvcells, one guard: --format csv through pcs.cli.common.emit, --requests-out FILE.csv)."""
from __future__ import annotations

import csv
import io
import json

import pytest

from helpers import SMALL_TRACE, invoke
from pcs.csvcells import guard_cell, guard_table


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


@pytest.mark.parametrize("value, written", [
    ("=cmd|x", "'=cmd|x"), ("+x", "'+x"), ("-x", "'-x"), ("@SUM(A1)", "'@SUM(A1)"), ("\tx", "'\tx"), ("\rx", "'\rx"),
    ("lru", "lru"), ("a=b", "a=b"),                       # only the first character counts
    (-3, -3), (-1.5, -1.5), ("-3", "-3"), ("+1.5e3", "+1.5e3"), ("-.5", "-.5"),   # numbers, as text too
    (None, None), (True, True),
])
def test_the_guard_quotes_formula_text_and_leaves_numbers(value, written):
    assert guard_cell(value) == written


def test_budget_csv_names_are_guarded_and_numbers_kept():
    r = invoke("budget", "--workload", "=cmd|x:1GB:1GB/s", "--workload", "@x:2GB:1GB/s", "--workload",
               "-3:1GB:1GB/s", "--capacity-have", "80GB", "--bandwidth-have", "1TB/s", "--format", "csv", "-q")
    assert r.exit_code == 0, r.output
    rows = _rows(r.stdout)
    # name, capacity_need_bytes: 1 GB = 10^9 bytes, written as the number
    assert [row[:2] for row in rows[1:4]] == [["'=cmd|x", "1000000000"], ["'@x", "2000000000"], ["-3", "1000000000"]]


def test_sweep_summary_csv_guards_an_option_value(tmp_path):
    # a trace file named "=t.jsonl" on an axis: the points' trace column is a text cell of the summary's CSV
    for name in ("=t.jsonl", "t2.jsonl"):
        (tmp_path / name).write_bytes(SMALL_TRACE.read_bytes())
    plan = tmp_path / "p.toml"
    plan.write_text('kind = "replay"\n[fixed]\ntier = {gpu = "100blocks"}\n[axes]\ntrace = ["=t.jsonl", "t2.jsonl"]\n')
    assert invoke("sweep", plan, "-o", tmp_path / "out", "--jobs", "1", "-q").exit_code == 0
    r = invoke("sweep", "summarize", tmp_path / "out", "--format", "csv")
    assert r.exit_code == 0, r.output
    rows = _rows(r.stdout)
    assert sorted(row[rows[0].index("trace")] for row in rows[1:]) == ["'=t.jsonl", "t2.jsonl"], r.stdout


def test_requests_out_csv_guards_text_columns(tmp_path):
    import pyarrow as pa

    from pcs.cli.replay import write_requests

    out = tmp_path / "r.csv"
    write_requests(pa.table({"tenant": ["=cmd|x", "ok", "-2"], "wait_s": [-0.5, 1.0, 2.0]}), str(out))
    assert out.read_text().splitlines() == ['"tenant","wait_s"', "\"'=cmd|x\",-0.5", '"ok",1', '"-2",2']


def test_a_table_without_text_is_unchanged():
    import pyarrow as pa

    t = pa.table({"n": [-1, 2]})
    assert guard_table(t).equals(t)


def test_json_output_is_not_guarded():
    # the guard is for CSV only: JSON keeps the name as given
    r = invoke("budget", "--workload", "=cmd|x:1GB:1GB/s", "--capacity-have", "80GB", "--bandwidth-have", "1TB/s",
               "--format", "json", "-q")
    assert json.loads(r.stdout)["name"] == "=cmd|x"


def test_the_cell_and_table_guards_agree_on_non_ascii_digits():
    # '-٣' (Arabic-Indic three) is no number a spreadsheet reads: a text cell starting with '-', guarded by both
    # the per-cell rule (Python's re) and the per-column rule (pyarrow's RE2), which read \d differently
    import pyarrow as pa

    from pcs.csvcells import guard_cell, guard_table

    cells = ["-\u0663", "+\u0661.5", "-3", "-1e5"]
    want = ["'-\u0663", "'+\u0661.5", "-3", "-1e5"]
    assert [guard_cell(c) for c in cells] == want
    assert guard_table(pa.table({"c": cells})).column("c").to_pylist() == want


def test_an_object_or_list_cell_is_json_text():
    # pcs compare's hit_ratio_per_tier ({"gpu": 0.5}) and payload_lens (lists inside) were written as Python's repr
    # ({'gpu': 0.5}: single quotes, no CSV or JSON reader takes it); as JSON text they read back to the same values
    import csv
    import io
    import json

    from pcs.cli.common import _csv_text

    rows = [{"variant": "lru", "hit_ratio_per_tier": {"gpu": 0.5, "cpu": 0.25}, "lens": {"bytes": [1, 2]},
             "tiers": ["gpu", "=x"], "none": None}]
    text = _csv_text(rows)
    (got,) = csv.DictReader(io.StringIO(text))
    assert json.loads(got["hit_ratio_per_tier"]) == {"gpu": 0.5, "cpu": 0.25}
    assert json.loads(got["lens"]) == {"bytes": [1, 2]}
    assert json.loads(got["tiers"]) == ["gpu", "=x"]       # starts with '[': no formula, kept as written
    assert got["none"] == "" and got["variant"] == "lru"
