"""A curve sweep folder written before 2026-12-04 (the curve's ``block_accesses`` then counted the cacheable
blocks, ``distinct_blocks`` the distinct ones among them: docs/json.md): resuming it must not mix the two meanings
in one column (found 2026-12-04: ``block_accesses`` read back [40856, 42553, 42553]). An old point is not done
(``pcs sweep run`` runs it again under today's names) and :func:`pcs.sweep.read_results` reads it under today's names.

The counts are worked from the trace itself: every hash id (``block_accesses``) and the full prompt blocks
(``cacheable_blocks``: ``input_length // 512`` per request, the default block rules, docs/semantics.md).
"""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.sweep import read_results

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "traces" / "sample_chat.jsonl"


def _counts() -> tuple[int, int]:
    rows = [json.loads(line) for line in TRACE.read_text().splitlines() if line.strip()]
    return sum(len(r["hash_ids"]) for r in rows), sum(r["input_length"] // 512 for r in rows)


def _old_layout(path: Path) -> None:
    """Rewrite one point file as pcs wrote it before 2026-12-04."""
    t = pq.read_table(path)
    cacheable, distinct = t.column("cacheable_blocks")[0].as_py(), t.column("distinct_cacheable_blocks")[0].as_py()
    t = t.drop_columns(["block_accesses", "cacheable_blocks", "distinct_cacheable_blocks"])
    t = t.append_column("block_accesses", pa.array([cacheable], pa.int64()))
    t = t.append_column("distinct_blocks", pa.array([distinct], pa.int64()))
    payload = json.loads(t.column("result_json")[0].as_py())
    payload["block_accesses"], payload["distinct_blocks"] = payload.pop("cacheable_blocks"), payload.pop(
        "distinct_cacheable_blocks")
    i = t.column_names.index("result_json")
    t = t.set_column(i, "result_json", pa.array([json.dumps(payload)], t.schema.field(i).type))
    pq.write_table(t, path)


def _sweep(plan: Path, out: Path) -> dict:
    res = CliRunner().invoke(cli, ["sweep", "run", str(plan), "-o", str(out), "--jobs", "1", "--format", "json",
                                   "-q"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_an_old_curve_point_is_run_again_and_read_under_todays_names(tmp_path):
    every_id, cacheable = _counts()
    assert (every_id, cacheable) == (42553, 40856)      # the sample: 1,700 requests
    plan = tmp_path / "plan.toml"
    plan.write_text(f'kind = "curve"\n[fixed]\ntrace = "{TRACE}"\n[axes]\npoints = [4, 6]\n')
    out = tmp_path / "out"
    assert _sweep(plan, out)["ran"] == 2
    old = sorted(out.glob("*.parquet"))[0]
    _old_layout(old)
    # read before the resume: the old point under today's names, its every-id count unknown (null)
    rows = {r["point_id"]: r for r in read_results(out).to_pylist()}
    assert rows[old.stem]["cacheable_blocks"] == cacheable and rows[old.stem]["block_accesses"] is None
    assert "distinct_blocks" not in read_results(out).column_names
    assert json.loads(rows[old.stem]["result_json"])["cacheable_blocks"] == cacheable
    # the resume runs the old point again; then every row holds today's meanings
    again = _sweep(plan, out)
    assert (again["ran"], again["skipped_points"]) == (1, 1)
    table = read_results(out)
    assert table.column("block_accesses").to_pylist() == [every_id, every_id]
    assert table.column("cacheable_blocks").to_pylist() == [cacheable, cacheable]
    assert "distinct_blocks" not in table.column_names


def test_a_new_curve_json_missing_one_key_is_not_taken_for_an_old_one():
    from pcs.curves.result import upgrade_curve_payload

    new = {"block_accesses": 42553, "distinct_cacheable_blocks": 25144}   # cacheable_blocks lost: today's file
    assert upgrade_curve_payload(new) is new
    old = {"block_accesses": 40856, "distinct_blocks": 25144}
    assert upgrade_curve_payload(old) == {"cacheable_blocks": 40856, "distinct_cacheable_blocks": 25144}
