"""Every benchmark script refuses a bad argument before it runs anything: exit 2, one line (the last on stderr)
naming the option, no traceback, nothing written (benchmarks/common.py: check_out, need_tree, choices, whole,
child_json, mooncake_rows). The inputs are the hostile ones that once ran for minutes, overwrote a trace or ended
in a traceback."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from helpers import fresh_run

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
SAMPLE = ROOT / "traces" / "formats" / "mooncake_conv_8.jsonl"
CHAT = ROOT / "traces" / "sample_chat.jsonl"

#: (script, arguments ({tmp}: the test's directory, {chat}: a bundled trace), what the one line says)
CASES = [
    ("snapshot.py", ["{chat}"], "OUT is one of the inputs"),
    ("snapshot.py", ["{tmp}"], "OUT is a directory"),
    ("snapshot.py", ["--diff", "{chat}", "{chat}"], "is not a snapshot file"),
    ("fleet_digest.py", ["{tmp}"], "OUT is a directory"),
    ("bench_policies.py", ["--trace", "{chat}", "--admit", "cpu=bogus"], "unknown admission 'bogus'"),
    ("bench_engine_pair.py", ["--child", "x"], "--child: x is not a pcs source tree"),
    ("bench_engine_pair.py", ["--tree", "{tmp}"], "is not a pcs source tree"),
    ("bench_reference.py", ["--case", "nope"], "--case 'nope'"),
    ("bench_ingest.py", ["--trace", "{tmp}/garbage.jsonl"], "garbage.jsonl:1: not a JSON object"),
    ("bench_startup.py", ["--peer", "{tmp}/missing"], "--peer"),
    ("bench_admission.py", ["--policy", "nope"], "--policy: unknown 'nope'"),
    ("fleet_tables.py", ["--tables", "zzz"], "--tables: unknown 'zzz'"),
    ("fleet_tables.py", ["--routers", "nope"], "--routers: unknown 'nope'"),
    ("bench_hybrid.py", ["--modes", "bogus"], "--modes: unknown 'bogus'"),
    ("bench_user.py", ["--cases", "nope"], "--cases: unknown 'nope'"),
    ("bench_user.py", ["--warmup", "-1"], "must be >= 0, got -1"),
    ("compare_libcachesim.py", ["--trace", "{tmp}"], "is a directory, not a trace file"),   # with or without libcachesim
    ("bench_memory.py", ["--formats", "csv"], "--formats: unknown 'csv'"),
    ("snapshot.py", ["{tmp}/s.json", "--extra-replay-args", " --bogus"], "No such option '--bogus'"),
]


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.mark.parametrize("script,args,needle", CASES, ids=[f"{c[0]}:{' '.join(c[1])}" for c in CASES])
def test_a_bad_argument_is_one_line_exit_2_before_anything_runs(tmp_path, script, args, needle):
    (tmp_path / "garbage.jsonl").write_text("not json\n")
    before = _digest(CHAT)
    listing = sorted(p.name for p in tmp_path.iterdir())
    r = fresh_run([str(BENCH / script), *[a.format(tmp=tmp_path, chat=CHAT) for a in args]], tmp_path, 120,
                  PCS_MOONCAKE_TRACE=str(SAMPLE))
    assert r.returncode == 2, (r.returncode, r.stderr[-1000:])
    assert "Traceback" not in r.stderr
    assert needle in r.stderr.strip().splitlines()[-1], r.stderr
    assert _digest(CHAT) == before                                    # the bundled trace is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == listing      # nothing written, no temporary file
