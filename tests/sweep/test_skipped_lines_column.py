"""Every point of a plan that reads a trace has the ``skipped_lines`` column (mend46b item 6): ``[]`` for a clean
read, as its ``skipped`` is 0, where a clean point's cell was null beside a point that skipped lines (and plain
pyarrow, which takes the first file's columns, lost the column when a clean point came first). Its
``result_json`` still leaves the key out, as ``--format json`` does (docs/sweep.md, docs/json.md).

Hand-worked: dirty.jsonl is the sample's first 3 lines, one line ``{bad`` (line 4), then the rest: skipping it
skips 1 line, line 4; clean.jsonl skips none."""
from __future__ import annotations

import json

from helpers import ROOT, invoke


def test_a_clean_point_has_an_empty_list_not_a_null(tmp_path):
    lines = (ROOT / "traces" / "sample_chat.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "clean.jsonl").write_text("".join(lines))
    (tmp_path / "dirty.jsonl").write_text("".join(lines[:3]) + "{bad\n" + "".join(lines[3:]))
    plan = tmp_path / "plan.toml"
    plan.write_text('kind = "replay"\n[fixed]\nmodel = "llama-3.1-8b"\ntier = {gpu = "500blocks"}\n'
                    'on-error = "skip"\n[axes]\ntrace = ["clean.jsonl", "dirty.jsonl"]\n')
    out = tmp_path / "out"
    r = invoke("sweep", "run", plan, "-o", out, "--jobs", "1", "-q")
    assert r.exit_code == 0, r.output
    import pyarrow.parquet as pq

    from pcs.sweep import read_results

    rows = {row["option.trace"]: row for row in read_results(out).to_pylist()}
    clean, dirty = rows["clean.jsonl"], rows["dirty.jsonl"]
    assert (clean["skipped"], clean["skipped_lines"]) == (0, "[]")
    assert dirty["skipped"] == 1 and [e["line"] for e in json.loads(dirty["skipped_lines"])] == [4]
    assert "skipped_lines" not in json.loads(clean["result_json"])
    assert "skipped_lines" in json.loads(dirty["result_json"])
    for f in out.glob("*.parquet"):          # each file has the column, so any file may come first
        assert "skipped_lines" in pq.read_schema(f).names, f
