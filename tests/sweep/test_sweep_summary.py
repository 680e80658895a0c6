"""pcs sweep summarize: best points and the Pareto front, on rows whose answers are worked out by hand."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.sweep.store import encode_row, write_point
from pcs.sweep.summary import pareto_front, summarize

GB = 10**9


def _write(out, row):
    write_point(out, row["point_id"], encode_row(row))


def _row(pid, policy, gpu_gb, cpu_gb, hit, ttft99, tiers=("gpu", "cpu")):
    row = {"point_id": pid, "kind": "replay", "option.policy": policy, "option.model": "llama-3.1-8b",
           "hit_ratio": hit, "envelope.ttft_p50_s": ttft99 / 2, "envelope.ttft_p99_s": ttft99,
           "envelope.wait_p99_s": 0.0}
    for name, gb in zip(tiers, (gpu_gb, cpu_gb)):
        row[f"tiers.{name}.capacity_bytes"] = gb * GB
    return row


#: (id, policy, GPU GB, CPU GB, hit ratio, TTFT p99 s)
ROWS = [("a", "lru", 40, 0, 0.30, 2.0),
        ("b", "lru", 40, 100, 0.50, 1.0),
        ("c", "fifo", 40, 100, 0.45, 0.9),    # b has a higher hit ratio for the same bytes: c is dominated
        ("d", "lru", 80, 0, 0.50, 1.5),       # as good as b with no CPU bytes but more GPU bytes: on the front
        ("e", "lru", 80, 100, 0.50, 1.2),     # b is as good with fewer GPU bytes: dominated
        ("f", "lru", 80, 200, 0.60, 0.8)]


@pytest.fixture()
def results(tmp_path):
    for r in ROWS:
        _write(tmp_path, _row(*r))
    _write(tmp_path, {"point_id": "z", "kind": "footprint", "option.model": "llama-3.1-8b"})
    return tmp_path


def test_pareto_front_by_hand():
    # minimise both: (1, [1]) and (0, [2]) trade off; (1, [2]) is dominated by (1, [1]); duplicates stay
    obj = np.array([1.0, 0.0, 1.0, 0.0])
    costs = np.array([[1], [2], [2], [2]])
    assert pareto_front(obj, costs).tolist() == [True, True, False, True]


def test_front_and_best_points_of_a_results_directory(results):
    s = summarize(results)
    assert (s.points, s.replay_points, s.tiers) == (7, 6, ("gpu", "cpu"))
    assert [p.point_id for p in s.front] == ["a", "d", "b", "f"]       # least total bytes first: 40, 80, 140, 280 GB
    assert s.front[2].capacity_bytes == {"gpu": 40 * GB, "cpu": 100 * GB}
    best = {b.metric: (b.point_id, b.value) for b in s.best}
    assert best["hit_ratio"] == ("f", 0.60)
    assert best["envelope.ttft_p99_s"] == ("f", 0.8)
    assert best["envelope.wait_p99_s"] == ("a", 0.0)                  # all tie at 0: the fewest bytes wins
    assert s.best[0].options == {"policy": "lru"}           # only the options that vary


def test_ttft_objective(results):
    s = summarize(results, "ttft-p99")
    # lower is better: a (2.0 s, 40+0) ; b (1.0 s, 40+100) beats c? no: c is 0.9 s at the same bytes -> c, not b;
    # d (1.5 s, 80+0); e (1.2 s, 80+100) is worse than c at more bytes; f (0.8 s, 80+200)
    assert [p.point_id for p in s.front] == ["a", "d", "c", "f"]


def test_tiers_a_point_lacks_cost_nothing(tmp_path):
    _write(tmp_path, _row("g1", "lru", 40, 0, 0.2, 1.0, tiers=("gpu",)))
    _write(tmp_path, _row("g2", "lru", 40, 50, 0.4, 1.0))
    s = summarize(tmp_path)
    assert [(p.point_id, p.capacity_bytes["cpu"]) for p in s.front] == [("g1", 0), ("g2", 50 * GB)]


def test_summarize_command(results):
    res = CliRunner().invoke(cli, ["sweep", "summarize", str(results), "--format", "json"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    assert [p["point_id"] for p in payload["front"]] == ["a", "d", "b", "f"]
    table = CliRunner().invoke(cli, ["sweep", "summarize", str(results)]).stdout
    assert "Pareto front: hit ratio (max) against gpu and cpu bytes (4 of 6 points)" in table
    csv = CliRunner().invoke(cli, ["sweep", "summarize", str(results), "--format", "csv"]).stdout
    assert csv.splitlines()[0] == "point_id,hit_ratio,gpu_bytes,cpu_bytes,policy"


def test_an_empty_directory_has_no_points(tmp_path):
    res = CliRunner().invoke(cli, ["sweep", "summarize", str(tmp_path), "--format", "json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["points"] == 0


def test_summarize_errors(tmp_path):
    missing = CliRunner().invoke(cli, ["sweep", "summarize", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and missing.stderr.startswith("pcs: error:")
    with pytest.raises(ValueError, match="unknown objective"):
        summarize(tmp_path, "cost")


@pytest.mark.parametrize("chunk", [1024, 7])      # 7: the 120 rows fold through the front in 18 batches
def test_streamed_front_equals_the_batch_front_on_random_rows(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr("pcs.sweep.summary._CHUNK", chunk)
    # summarize keeps the front while the files stream by; pareto_front takes all rows at once: the same set
    # (ties included: hit ratios and bytes drawn from few values so equal points occur), and a tier only some
    # points have counts 0 bytes in the others
    rng = np.random.default_rng(7)
    rows = []
    for i in range(120):
        tiers = ("gpu", "cpu") if i % 3 else ("gpu",)
        row = _row(f"p{i:03d}", "lru", int(rng.integers(1, 5)) * 10, int(rng.integers(0, 4)) * 50,
                   float(rng.integers(0, 6)) / 10, 1.0, tiers=tiers)
        rows.append(row)
        _write(tmp_path, row)
    s = summarize(tmp_path)
    costs = np.array([[r["tiers.gpu.capacity_bytes"], r.get("tiers.cpu.capacity_bytes", 0)] for r in rows])
    keep = pareto_front(-np.array([r["hit_ratio"] for r in rows]), costs)
    assert sorted(p.point_id for p in s.front) == sorted(r["point_id"] for r, k in zip(rows, keep) if k)
    assert s.points == s.replay_points == 120 and s.tiers == ("gpu", "cpu")
