"""Every ``benchmarks/*.py`` runs with its smallest arguments on a committed sample, so a script that breaks
(an API it calls changed) fails the suite; and the scripts' one argument rule (benchmarks/common.py).

The sample is ``traces/formats/mooncake_conv_8.jsonl`` (8 Mooncake rows), given as PCS_MOONCAKE_TRACE.
Not run here, and why:

- ``bench_sweep.py``: a fixed 256-point sweep plan (minutes whatever its arguments);
- ``snapshot.py`` is run as ``--quick`` on the sample (82 runs) and ``--diff``, not its full 160 runs;
- ``compare_libcachesim.py`` / ``bench_user.py``: skipped where libCacheSim is not installed.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from helpers import fresh_run

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
SAMPLE = ROOT / "traces" / "formats" / "mooncake_conv_8.jsonl"

#: script -> its smallest arguments ({tmp}: a temporary directory; {sample}: the sample trace).
SMALLEST = {
    "bench_admission.py": ["--repeat", "1", "--copies", "1", "--gpu-blocks", "4", "--cpu-blocks", "8"],
    "bench_curve.py": ["--repeat", "1", "--min-accesses", "10", "--capacities", "3", "--skip-replays"],
    "bench_default_replay.py": ["--replicas", "1", "--pairs", "1"],
    "bench_engine_pair.py": ["--rounds", "1", "--copies", "1", "--repeat", "1"],
    "bench_floor.py": ["{sample}", "--repeat", "1", "--gpu", "4", "--cpu", "8"],
    "bench_fleet.py": ["--repeat", "1", "--instances", "2", "--routers", "round-robin"],
    "bench_html.py": ["--repeat", "1"],
    "bench_hybrid.py": ["--repeat", "1", "--rounds", "1", "--skip-table", "--skip-loops", "--modes", "sequential"],
    "bench_ingest.py": ["--min-blocks", "10", "--repeat", "1"],
    "bench_jsonl_parsers.py": ["--copies", "1", "--rounds", "1"],
    "bench_memory.py": ["--replicas", "1", "--runs", "2"],
    "bench_native.py": ["--repeat", "1"],
    "bench_phases.py": ["{sample}", "--calls", "1"],
    "bench_policies.py": ["--repeat", "1", "--compute", "infinite", "--policy", "lru", "--no-reference"],
    "bench_reference.py": ["--rounds", "1", "--case", "sequential:lru"],
    "bench_replay.py": ["--copies", "1", "--repeat", "1"],
    "bench_startup.py": ["--runs", "1"],
    "bench_steady.py": ["{sample}", "--pairs", "1", "--calls", "1"],
    "bench_sweep_summary.py": ["--peer-python", sys.executable, "--points", "1", "--rounds", "1"],
    "bench_trace_stats.py": ["--copies", "1", "--rounds", "1"],
    "bench_user.py": ["--copies", "1", "--rounds", "1", "--warmup", "0", "--capacity", "16"],
    "compare_libcachesim.py": ["--pairs", "1", "--min-accesses", "0"],
    "fleet_digest.py": ["{tmp}/digest.json"],
    "fleet_tables.py": ["--instances", "2", "--routers", "round-robin", "--tables", "routers"],
    "policies_table.py": [],
    "policy_calls.py": ["--repeat", "1", "--policy", "py_lru"],
    "shards_sample_size.py": ["--trace", "{sample}", "--rates", "0.5", "--seeds", "1"],
    "snapshot.py": ["{tmp}/snap.json", "--quick"],
}
NOT_RUN = {"bench_sweep.py": "a fixed 256-point sweep plan: minutes whatever its arguments",
           "common.py": "the helpers, not a script"}
NEEDS_LIBCACHESIM = {"bench_user.py", "compare_libcachesim.py"}


def _run(script: str, args: list[str], env_trace: Path | str = SAMPLE, cwd: Path = ROOT):
    return fresh_run([str(BENCH / script), *args], cwd, 300, PCS_MOONCAKE_TRACE=str(env_trace))


def test_every_script_is_smoke_tested_or_says_why_not():
    scripts = {p.name for p in BENCH.glob("*.py")}
    assert scripts == set(SMALLEST) | set(NOT_RUN)


@pytest.fixture(scope="module")
def bench_memory_run(tmp_path_factory):
    """bench_memory.py with its smallest arguments (both formats, 2 fresh processes each), run once for the smoke
    test and the test of its output."""
    return _run("bench_memory.py", SMALLEST["bench_memory.py"], cwd=tmp_path_factory.mktemp("bench_memory"))


@pytest.mark.parametrize("script", sorted(SMALLEST))
def test_script_runs_on_the_sample(script, tmp_path, request):
    if script in NEEDS_LIBCACHESIM:
        pytest.importorskip("libcachesim")
    args = [a.format(tmp=tmp_path, sample=SAMPLE) for a in SMALLEST[script]]
    r = request.getfixturevalue("bench_memory_run") if script == "bench_memory.py" else _run(script, args, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.strip().splitlines()
    assert isinstance(json.loads(lines[-1]), dict)         # the one JSON line, last (benchmarks/README.md) ...
    assert [x for x in lines[:-1] if _is_json(x)] == []    # ... and no other (bench_user.py printed two)


def _is_json(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return line.lstrip().startswith(("{", "["))


def test_snapshot_diff_of_a_file_with_itself_is_zero(tmp_path):
    f = tmp_path / "s.json"
    f.write_text('{"a": 1}\n')
    r = _run("snapshot.py", ["--diff", str(f), str(f)])
    assert r.returncode == 0 and json.loads(r.stdout)["differences"] == 0


@pytest.mark.parametrize("script,args,says", [
    ("bench_admission.py", ["--copies", "0"], "argument --copies: must be >= 1, got 0"),
    ("bench_trace_stats.py", ["--copies", "-3"], "argument --copies: must be >= 1, got -3"),
    ("bench_jsonl_parsers.py", ["--copies", "abc"], "must be a whole number >= 1, got 'abc'"),
    ("bench_replay.py", ["--repeat", "0"], "argument --repeat: must be >= 1, got 0"),
    ("fleet_tables.py", ["--instances", "4,0"], "argument --instances: must be >= 1, got 0"),
    ("bench_hybrid.py", ["--sizes", "0GB"], "argument --sizes: must be more than 0 bytes"),
    ("bench_hybrid.py", ["--sizes", "abc"], "argument --sizes: invalid size 'abc'"),
    ("fleet_digest.py", [], "the following arguments are required: out"),
    ("snapshot.py", ["--diff", "nope1", "nope2"], "--diff: no such file: nope1"),
    ("shards_sample_size.py", ["--rates", "0.1,1"], "argument --rates: must be rates in (0, 1), got 1"),
    ("shards_sample_size.py", ["--seeds", "0"], "argument --seeds: must be >= 1, got 0"),
])
def test_bad_arguments_are_one_argparse_line(script, args, says):
    r = _run(script, args)
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize("script,args", [("bench_admission.py", []), ("bench_replay.py", []),
                                         ("bench_fleet.py", []), ("bench_phases.py", ["{missing}"]), ("bench_floor.py", ["{missing}"]),
                                         ("bench_steady.py", ["{missing}"]),
                                         ("bench_reference.py", []), ("bench_engine_pair.py", [])])
def test_a_missing_trace_is_one_line_naming_it(script, args, tmp_path):
    missing = tmp_path / "nope.jsonl"
    r = _run(script, [a.format(missing=missing) for a in args], env_trace=missing)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert f"trace not found: {missing}" in lines[0] and "PCS_MOONCAKE_TRACE" in lines[0]


def test_a_user_error_in_a_script_is_one_line(tmp_path):
    # ids up to 2^64 - 1 cannot be copied: the replica refuses (UserError), the script prints it as one line
    t = tmp_path / "u64.jsonl"
    t.write_text('{"timestamp": 0, "input_length": 512, "output_length": 1, "hash_ids": [7, 18446744073709551615]}\n')
    r = _run("bench_ingest.py", ["--trace", str(t), "--min-blocks", "4", "--repeat", "1"])
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "past 2^64 - 1" in lines[0], r.stderr


def test_bench_memory_prints_on_stdout_the_spread_and_the_decoded_trace(bench_memory_run):
    """bench_memory.py: one human line per case on stdout, then the JSON line; each figure as min <= median <= max
    over the runs; the decoded trace counted as documented (pcs.engine.decoded: 8 B per block hash plus 32 B per
    request -- arrival, prompt, output, offset -- and the offsets' closing entry), worked out from the file."""
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    ids = sum(len(r["hash_ids"]) for r in rows)                  # 59 hash ids over 8 requests
    r = bench_memory_run                                         # --replicas 1 --runs 2, jsonl and parquet
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 3 and lines[0].startswith("jsonl x1: 2 runs, min/median/max: peak ")
    assert lines[1].startswith("parquet x1: 2 runs, min/median/max: peak ")
    case = json.loads(lines[-1])["cases"]["jsonl_x1"]
    assert case["runs"] == 2 and len(case["each_run"]) == 2
    assert case["decoded_trace_bytes"] == 8 * ids + 32 * len(rows) + 8 == 736
    assert case["distinct_ids"] == len({h for r in rows for h in r["hash_ids"]})
    for f in ("peak_bytes", "call_bytes", "target_bytes", "target_bytes_per_id"):
        assert case[f]["min"] <= case[f]["median"] <= case[f]["max"], f
    run = case["each_run"][0]
    assert run["target_bytes"] == run["peak_bytes"] - run["rss_after_import_bytes"] - 736
    # the first read of a trace in a process (two requests), counted apart: the target's figure less its median
    once = case["first_read_bytes"]
    assert once["min"] <= once["median"] <= once["max"] and "first read of a trace" in lines[0]
    assert case["target_less_first_read_bytes_per_id"]["median"] == \
        round((case["target_bytes"]["median"] - once["median"]) / case["distinct_ids"], 1)
