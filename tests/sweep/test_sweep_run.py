"""Running a plan: the same rows in-process and in a process pool, each equal to pcs replay alone;
a killed sweep keeps its finished points and a rerun runs only the rest."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.sweep import read_results, run_sweep

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DOZEN = HERE / "dozen.toml"                                       # 12 points; its trace path is relative to it
SAMPLE = HERE / "../../traces/sample_azure_conv.jsonl"             # so its rows name the trace so
CHAT = ROOT / "traces" / "sample_chat.jsonl"


@pytest.fixture(scope="module")
def dozen_plan() -> Path:
    return DOZEN


@pytest.fixture(scope="module")
def dozen_rows(tmp_path_factory) -> list[dict]:
    """The dozen plan's rows run in this process (--jobs 1), ordered by point id."""
    run = run_sweep(DOZEN, tmp_path_factory.mktemp("jobs1"), jobs=1)
    assert (run.points, run.ran, run.failed) == (12, 12, 0)
    return read_results(run.out).to_pylist()


def _replay_json(policy: str, cpu: str) -> dict:
    """pcs replay alone, the options typed by hand as a user would."""
    res = CliRunner().invoke(cli, ["replay", str(SAMPLE), "--model", "llama-3.1-8b", "--tp", "1",
                                   "--tier", "gpu=300blocks", "--tier", f"cpu={cpu}", "--policy", policy,
                                   "--format", "json", "-q"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    out.pop("trace_file")     # the file's identity pcs replay adds for pcs report; a sweep row keeps the summary
    return out


def test_a_pool_of_two_gives_the_same_rows(dozen_plan, dozen_rows, tmp_path):
    run = run_sweep(dozen_plan, tmp_path, jobs=2)
    assert (run.backend, run.ran, run.skipped_points) == ("2 processes", 12, 0)
    assert read_results(tmp_path).to_pylist() == dozen_rows


def test_each_row_is_what_pcs_replay_prints_alone(dozen_rows):
    assert len(dozen_rows) == 12 and len({r["point_id"] for r in dozen_rows}) == 12
    cpus = {"0B": "0GB", "10GB": "10GB", "20GB": "20GB", "30GB": "30GB"}
    for row in dozen_rows:
        alone = _replay_json(row["option.policy"], cpus[row["option.tier.cpu"]])
        got = json.loads(row["result_json"])
        # the command line that reruns the point, its cpu size as the plan writes it (docs/sweep.md)
        assert got.pop("replay_command") == alone.pop("replay_command").replace(
            f"cpu={cpus[row['option.tier.cpu']]}", f"cpu={row['option.tier.cpu']}")
        assert got == alone
        assert "replay_command" not in row           # in the JSON only, never a column
        assert row["hit_ratio"] == alone["hit_ratio"]
        assert row["envelope.ttft_p99_s"] == alone["envelope"]["ttft_p99_s"]
        assert row["tiers.cpu.hit_blocks"] == alone["tiers"][1]["hit_blocks"]


def test_columns_hold_the_options_and_the_tier_sizes_worked_by_hand(dozen_rows):
    row = next(r for r in dozen_rows if r["option.policy"] == "fifo" and r["option.tier.cpu"] == "10GB")
    assert (row["kind"], row["option.tp"], row["option.tier.gpu"]) == ("replay", 1, "300blocks")
    # llama-3.1-8b bf16: 2 (K, V) x 32 layers x 8 KV heads x 128 dims x 2 B = 131,072 B per token;
    # a 512-token block = 67,108,864 B; 10 GB = 10^10 B holds floor(10^10 / 67,108,864) = 149 blocks
    assert row["tiers.cpu.bytes_per_block"] == 67_108_864
    assert row["tiers.cpu.capacity_blocks"] == 149
    assert row["tiers.cpu.capacity_bytes"] == 149 * 67_108_864
    assert row["tiers.gpu.capacity_blocks"] == 300 and row["tiers.cpu.policy"] == "fifo"
    assert json.loads(row["notes"]) == json.loads(row["result_json"])["notes"]


def test_a_rerun_skips_done_points_and_force_reruns_them(dozen_plan, dozen_rows, tmp_path):
    first = run_sweep(dozen_plan, tmp_path, jobs=1)
    again = run_sweep(dozen_plan, tmp_path, jobs=1)
    assert (first.ran, again.ran, again.skipped_points) == (12, 0, 12)
    forced = run_sweep(dozen_plan, tmp_path, jobs=1, force=True)
    assert (forced.ran, forced.skipped_points) == (12, 0)
    assert read_results(tmp_path).to_pylist() == dozen_rows       # each point once


def test_a_point_file_holding_another_points_row_is_not_done(dozen_plan, dozen_rows, tmp_path):
    # a copied point file (b's row under a's name) would count b twice and never run a: it is not done, the
    # summary and the results refuse it, and a rerun runs a again and writes its own row
    import shutil

    from pcs.errors import UserError
    from pcs.sweep import summarize

    run_sweep(dozen_plan, tmp_path, jobs=1)
    a, b = sorted(tmp_path.glob("*.parquet"))[:2]
    shutil.copy(b, a)
    for read in (read_results, summarize):
        with pytest.raises(UserError, match=f"holds the row of point '{b.stem}', not of '{a.stem}'"):
            read(tmp_path)
    again = run_sweep(dozen_plan, tmp_path, jobs=1)
    assert (again.ran, again.skipped_points) == (1, 11)
    assert read_results(tmp_path).to_pylist() == dozen_rows       # each point once, a's own row back


def test_requests_tables_are_kept_per_point(tmp_path):
    plan = tmp_path / "p.toml"
    plan.write_text(f'[fixed]\ntrace = "{SAMPLE}"\nmodel = "llama-3.1-8b"\ntp = 1\ntier = {{gpu = "300blocks"}}\n'
                    '[axes]\npolicy = ["lru", "fifo"]\n', encoding="utf-8")
    run_sweep(plan, tmp_path / "out", jobs=1, requests=True)
    ids = sorted(p.stem for p in (tmp_path / "out").glob("*.parquet"))
    tables = [pq.read_table(tmp_path / "out" / "_requests" / f"{i}.parquet") for i in ids]
    assert [t.num_rows for t in tables] == [200, 200]             # the sample's 200 requests
    assert [set(t.column("point_id").to_pylist()) for t in tables] == [{i} for i in ids]
    assert read_results(tmp_path / "out").num_rows == 2           # _requests/ is not read as points


def test_a_failing_point_is_reported_and_the_others_are_written(tmp_path):
    # llama-2-70b weights (137.95 GB) do not fit one 80 GB GPU: the default GPU tier cannot be sized at TP 1
    plan = tmp_path / "p.toml"
    plan.write_text(f'[fixed]\ntrace = "{SAMPLE}"\nmodel = "llama-2-70b"\ntiming = "sequential"\n'
                    '[axes]\ntp = [1, 8]\n', encoding="utf-8")
    res = CliRunner().invoke(cli, ["sweep", str(plan), "-o", str(tmp_path / "out"), "--jobs", "1", "-q"])
    assert res.exit_code == 2
    assert "does not fit on 1 x h100-sxm" in res.stderr and "1 of 2 points failed" in res.stderr
    assert read_results(tmp_path / "out").column("option.tp").to_pylist() == [8]


def _wait_for(path: Path, n: int, proc: subprocess.Popen, limit_s: float = 60.0) -> int:
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s and proc.poll() is None:
        k = len(list(path.glob("*.parquet")))
        if k >= n:
            return k
        time.sleep(0.01)
    raise AssertionError(f"the sweep ended or stalled before {n} points were written")


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_killed_sweep_keeps_its_points_and_a_rerun_runs_only_the_rest(tmp_path, jobs):
    # 12 points of about 0.1 s on the 1,700-request sample: SIGTERM lands after the third
    plan = tmp_path / "p.toml"
    plan.write_text(f'[fixed]\ntrace = "{CHAT}"\nmodel = "llama-3.1-8b"\ntp = 1\ntier = {{gpu = "300blocks"}}\n'
                    '[axes]\n"tier.cpu" = {from = "0GB", to = "55GB", step = "5GB"}\n', encoding="utf-8")
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "pcs", "sweep", str(plan), "-o", str(out), "--jobs", jobs, "-q"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _wait_for(out, 3, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    before = read_results(out).to_pylist()
    assert 3 <= len(before) < 12, "the sweep finished before SIGTERM: nothing was interrupted"
    assert f"{len(before)} of 12 points are in" in err
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []     # no temporary file left
    rerun = run_sweep(plan, out, jobs=1)
    assert (rerun.skipped_points, rerun.ran) == (len(before), 12 - len(before))       # only the missing points ran
    after = read_results(out).to_pylist()
    assert len(after) == 12 and len({r["point_id"] for r in after}) == 12      # each point once
    assert [r for r in after if r in before] == before                         # the finished ones untouched
    assert {r["option.tier.cpu"] for r in after} == {"0B"} | {f"{g}GB" for g in range(5, 60, 5)}


def test_pool_from_a_script_that_is_not_a_file_is_refused(monkeypatch, tmp_path):
    """run_sweep(..., jobs=2) from a script piped into `python -` (__main__.__file__ is
    '<stdin>') hung: each spawned worker failed to import it and the pool restarted them forever. Now a
    ValueError before any point runs; jobs=1 still runs there."""
    from pcs.sweep import run_sweep

    plan = Path(__file__).resolve().parents[2] / "traces" / "sweep_sample.toml"
    with monkeypatch.context() as m:
        m.setattr(sys.modules["__main__"], "__file__", "<stdin>", raising=False)
        with pytest.raises(ValueError, match="<stdin> is not a file"):
            run_sweep(plan, tmp_path / "pool", jobs=2)
    assert not list((tmp_path / "pool").glob("*.parquet"))
    assert run_sweep(plan, tmp_path / "one", jobs=1).ran == 6


def test_the_stopped_line_says_what_running_again_does():
    # A sweep stopped after its last point's file was written said "run it again to do the rest" with nothing left
    # (a review); running it again then only summarizes (every point is in: none to run).
    from pcs.cli.sweep import stopped_line

    assert stopped_line(1, 2, "sw") == "pcs: sweep stopped: 1 of 2 points is in sw; run it again to do the rest"
    assert stopped_line(0, 1, "sw") == "pcs: sweep stopped: 0 of 1 point are in sw; run it again to do the rest"
    assert stopped_line(2, 2, "sw") == ("pcs: sweep stopped: 2 of 2 points are in sw; run it again for the summary "
                                        "(nothing left to run)")
