"""pcs sweep: failed points give a non-zero exit with their reasons on stderr (also under -q, without Python
class names); the points of one plan read as one Parquet dataset with plain pyarrow (docs/sweep.md)."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from click.testing import CliRunner

from pcs.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_PLAN = ROOT / "traces" / "sweep_sample.toml"
SMALL = ROOT / "traces" / "formats" / "mooncake_conv_8.jsonl"


def _pcs(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_every_point_failing_exits_2_with_reasons_even_quiet(tmp_path):
    plan = tmp_path / "p.toml"
    # a GPU tier of 1 MB holds no 512-token block of llama-2-70b (167,772,160 B): replay refuses it once it knows
    # the trace's block size, so both points fail while the sweep runs (user input: exit 2); none is written
    plan.write_text(f'kind = "replay"\n[fixed]\ntrace = "{SMALL}"\n[axes]\ntier = ["gpu=1MB", "gpu=2MB"]\n')
    for quiet in ((), ("-q",)):
        res = _pcs("sweep", plan, "-o", tmp_path / "out", "--jobs", "1", *quiet)
        assert res.exit_code == 2, res.output
        # named by the plan (no line: the refused value is an entry of the tier table, never a guessed line)
        errs = [ln for ln in res.stderr.splitlines() if ln.startswith(f"pcs: error: {plan}: point ")]
        assert len(errs) == 2, res.stderr
        assert "Error:" not in res.stderr and "Exception" not in res.stderr   # no ValueError:, InputError: ...
        assert "2 of 2 points failed" in res.stderr and "no point is in" in res.stderr
        assert "the others are in" not in res.stderr


def test_replay_checks_run_before_any_point(tmp_path):
    # no GPU tier: pcs.replay's rule (the GPU tier comes first) needs no trace, so the plan is refused before any
    # point runs, naming the first point, in the plan's words (tier = {...}); nothing is written
    plan = tmp_path / "p.toml"
    plan.write_text(f'kind = "replay"\n[fixed]\ntrace = "{SMALL}"\n[axes]\n"tier.cpu" = ["1TB", "2TB"]\n')
    res = _pcs("sweep", plan, "-o", tmp_path / "out", "--jobs", "2")
    assert res.exit_code == 2, res.output
    (line,) = res.stderr.splitlines()
    assert line.startswith("pcs: error: ") and "point " in line and "tier.cpu=1TB" in line
    assert "the GPU tier comes first in tier, but the first is named 'cpu'" in line
    assert 'tier = {gpu = "auto", cpu = "..."}' in line
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.parquet"))


def test_one_failing_point_of_two_still_exits_2(tmp_path):
    plan = tmp_path / "p.toml"
    # gpu=1MB holds no block (it fails while running, as above); gpu=10blocks runs
    plan.write_text(f'kind = "replay"\n[fixed]\ntrace = "{SMALL}"\n[axes]\ntier = ["gpu=10blocks", "gpu=1MB"]\n')
    res = _pcs("sweep", plan, "-o", tmp_path / "out", "--jobs", "1", "-q", "--format", "json")
    assert res.exit_code == 2
    assert (json.loads(res.stdout)["ran"], json.loads(res.stdout)["failed"]) == (1, 1)
    assert f"1 of 2 points failed (listed above); the rest (1) are in {tmp_path / 'out'}" in res.stderr


def test_one_plan_reads_with_plain_pyarrow(tmp_path):
    out = tmp_path / "out"
    res = _pcs("sweep", SAMPLE_PLAN, "-o", out, "--jobs", "1", "-q")
    assert res.exit_code == 0, res.output
    # the plan's cpu=0GB points restore nothing: share_slower is null there ("null without restores",
    # pcs/engine/result.py) and a number in the cpu=50GB / 100GB points, which restore
    for table in (ds.dataset(out).to_table(), pq.read_table(out)):
        assert table.num_rows == 6
        assert table.schema.field("envelope.links.cpu.share_slower").type == pa.float64()
        assert table.schema.field("envelope.links.cpu.break_even_bps").type == pa.float64()
        rows = table.select(["option.tier.cpu", "envelope.links.cpu.restores",
                             "envelope.links.cpu.share_slower"]).to_pylist()
        empty = [r for r in rows if r["option.tier.cpu"] == "0B"]
        full = [r for r in rows if r["option.tier.cpu"] != "0B"]
        assert len(empty) == 2 and len(full) == 4
        assert all(r["envelope.links.cpu.restores"] == 0 and r["envelope.links.cpu.share_slower"] is None
                   for r in empty)
        assert all(r["envelope.links.cpu.restores"] > 0 and 0.0 <= r["envelope.links.cpu.share_slower"] <= 1.0
                   for r in full)


def test_declared_types_follow_the_annotations():
    import pcs
    from pcs.sweep.columns import declared_types, typed_table

    s = pcs.replay(SMALL, tiers=["gpu=2blocks", "cpu=20blocks"], timing="sequential").summary
    types = declared_types(s)
    # LinkEnvelope.share_slower: float | None; TierSummary.capacity_blocks: int; ReplaySummary.trace: str
    assert types["envelope.links.cpu.share_slower"] == "float64"
    assert types["tiers.cpu.capacity_blocks"] == "int64"
    assert types["trace"] == "string"
    t = typed_table({"a.share_slower": None, "b": None, "c": 1}, {"a.share_slower": "float64"})
    assert [str(f.type) for f in t.schema] == ["double", "null", "int64"]   # undeclared nulls stay null
