"""pcs replay / pcs compare from the command line (CliRunner)."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from helpers import invoke_json, unwrapped

from pcs.cli.main import cli

SAMPLE_TOKENS = Path(__file__).resolve().parents[2] / "traces" / "sample_tokens.jsonl"


def _run(*args):
    return CliRunner().invoke(cli, list(args))


def test_acceptance_llama31_70b_protected_modeled_prints_the_envelope(mooncake_conv):
    r = _run("replay", str(mooncake_conv), "--model", "llama-3.1-70b", "--tier", "gpu=400GB", "--tier", "cpu=2TB",
             "--policy", "protected", "--quiet")
    assert r.exit_code == 0, r.output
    out = unwrapped(r.stdout)                 # the hit table's meanings wrap under their column: one row a line
    lines = out.splitlines()
    # lesson 1 in the first lines after the notes: the real hit ratio beside the single-sequence one
    head = "\n".join([ln for ln in lines if not ln.startswith("note: ")][:8])
    assert "hit ratio (real, token-weighted)" in head and "single-sequence hit ratio" in head
    assert "Bandwidth envelope" in out and "cpu -> gpu" in out and "break-even" in out
    assert "TTFT p50" in out and "modeled timing" in lines[0] and "slru" in lines[0]   # protected = slru


def test_default_run_names_its_defaults_and_reason():
    r = _run("replay", "--format", "json")
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    assert s["model"] == "llama-2-70b" and s["tp"] == 8 and s["timing"] == "modeled"
    assert [t["name"] for t in s["tiers"]] == ["gpu", "cpu"]
    assert "Mooncake" in s["notes"][0]
    assert "Mooncake" in r.stderr                      # printed beside JSON on stderr (not --quiet)
    r = _run("replay", "--quiet")
    assert r.exit_code == 0 and "note: defaults:" in r.stdout.splitlines()[1]


@pytest.mark.parametrize("args, needle", [
    (["--policy", "arc9"], "valid: lru, slru, fifo, arc, s3fifo, sieve, lfu, 2q, gdsf, belady (alias protected = slru)"),
    (["--tier", "gpu400GB"], "expected NAME=VALUE"),
    (["--tier", "gpu=lots"], "bad tier size 'lots'"),
    (["--tier", "gpu=-5GB"], "must not be negative"),
    (["--tier", "gpu=1GB", "--tier", "gpu=2GB"], "distinct"),
    (["--tier", "gpu=1GB", "--tier", "zz=1TB"], "--link zz="),
    (["--tier-policy", "ssd=lru"], "not among the tiers"),
    (["--tier-policy", "cpu=mru"], "--tier-policy cpu=mru: unknown eviction policy 'mru'"),
    (["--tier-policy", "cpu"], "expected NAME=VALUE"),
    (["--link", "gpu=25GB/s"], "GPU tier"),
    (["--link", "cpu=warp-drive"], "neither a preset"),
    (["--timing", "fast"], "'fast' is not one of 'modeled', 'sequential'"),
    (["--write-policy", "sideways"], "'sideways' is not one of 'back', 'through'"),
    (["--tp", "0"], "'--tp': 0 is not in the range 1<=x<=1,024 (see"),     # separators, no period (mend46e)
    (["--protected-share", "2", "--policy", "protected"], "'--protected-share': 2.0 is not in the range"),
    (["--protected-share", "0.5"], "no tier uses slru (policies: lru)"),
    (["--protected-share", "0.5", "--policy", "fifo", "--tier-policy", "gpu=lru"], "policies: fifo, lru"),
    (["--dtype", "fp7"], "unknown dtype 'fp7'"),
    (["--trace-format", "csv"], "'csv' is not one of"),
    (["--model", "gpt-17"], "gpt-17"),
    (["--requests-out", "rows.txt"], ".parquet or .csv"),
])
def test_bad_settings_one_line_exit_2(args, needle):
    r = _run("replay", "--quiet", *args)
    assert r.exit_code == 2, r.output
    assert r.stdout == ""
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pcs: error:") and needle in err[0], err


def test_requests_out_parquet_and_csv(tmp_path):
    for name in ("rows.parquet", "rows.csv"):
        path = tmp_path / name
        r = _run("replay", "--quiet", "--timing", "sequential", "--requests-out", str(path), "--format", "json")
        assert r.exit_code == 0, r.output
        s = json.loads(r.stdout)
        t = pq.read_table(path) if name.endswith("parquet") else pacsv.read_csv(path)
        assert t.num_rows == s["requests"]
        for col in ("request_id", "arrival_s", "prompt_tokens", "hit_tokens", "hit_tokens_gpu", "hit_tokens_cpu",
                    "restored_bytes", "restore_s", "prefill_s", "wait_s", "ttft_s"):
            assert col in t.column_names
        assert sum(t.column("hit_tokens").to_pylist()) == s["hit_tokens"]
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []   # no temp left


def test_help_has_units_and_examples():
    for cmd in ("replay", "compare"):
        r = _run(cmd, "--help")
        assert r.exit_code == 0 and "Example" in r.stdout and "5000blocks" in r.stdout


def test_compare_side_by_side_matches_single_runs():
    rows = invoke_json("compare", "--policy", "lru", "--policy", "protected", "--tier", "gpu=300blocks",
                       "--timing", "sequential")["variants"]
    assert [v["policy"] for v in rows] == ["lru", "slru"]          # the alias is written as the registered name
    for v in rows:
        single = invoke_json("replay", "--policy", v["policy"], "--tier", "gpu=300blocks", "--timing", "sequential")
        assert single["hit_ratio"] == v["hit_ratio"]
    r = _run("compare", "--tiers", "gpu=100blocks", "--tiers", "gpu=300blocks", "--timing", "sequential", "--quiet")
    assert r.exit_code == 0 and "gpu=100blocks" in r.stdout and "gpu=300blocks" in r.stdout
    r = _run("compare", "--tiers", "gpu=1blocks", "--tier", "gpu=2blocks", "--quiet")
    assert r.exit_code == 2 and "not both" in r.stderr


def test_same_input_same_output_bytes():
    a = _run("replay", "--format", "json", "--quiet").stdout
    b = _run("replay", "--format", "json", "--quiet").stdout
    assert a == b


def test_fp8_halves_the_payload_not_everything():
    from pcs.engine.api import replay

    bf16 = replay(tiers=["gpu=20GB", "cpu=200GB"]).summary
    fp8 = replay(tiers=["gpu=20GB", "cpu=200GB"], dtype="fp8_per_token_head").summary
    assert fp8.reference_bytes_per_block * 2 == bf16.reference_bytes_per_block   # payload halves
    # the stored form carries per-token-head scales: more than half
    assert fp8.tiers[1].bytes_per_block * 2 > bf16.tiers[1].bytes_per_block
    # prefill compute does not depend on the KV dtype: the no-cache TTFT does not move at all
    assert fp8.envelope.ttft_no_cache_alone_p50_s == bf16.envelope.ttft_no_cache_alone_p50_s


@pytest.mark.parametrize("extra", [["--policy", "{p}"], ["--tier-policy", "cpu={p}", "--protected-share", "0.5"]])
def test_protected_and_slru_are_one_policy(extra):
    """`protected` is an alias of `slru`, input only: the same numbers, and every output names `slru`."""
    out = {}
    for p in ("protected", "slru"):
        r = _run("replay", str(SAMPLE_TOKENS), "--tier", "gpu=20blocks", "--tier", "cpu=60blocks",
                 *[a.format(p=p) for a in extra], "--format", "json", "--quiet")
        assert r.exit_code == 0, r.output
        out[p] = json.loads(r.stdout)
    assert [t["policy"] for t in out["protected"]["tiers"]][-1] == "slru"       # the object's registered name
    if extra[0] == "--policy":
        assert (out["protected"]["policy"], out["slru"]["policy"]) == ("slru", "slru")
    # the command that reruns each repeats its options as typed (pcs/cli/rerun.py): the alias there too
    assert {**out["protected"], "policy": None, "replay_command": None} == \
        {**out["slru"], "policy": None, "replay_command": None}
    assert out["slru"]["hit_ratio"] > 0


def test_protected_share_without_an_slru_tier_is_an_error_in_replay_not_in_compare():
    r = _run("replay", "--quiet", "--protected-share", "0.5", "--policy", "lru")
    assert r.exit_code == 2 and "no tier uses slru" in r.stderr
    r = _run("compare", "--policy", "lru", "--policy", "slru", "--protected-share", "0.5", "--tier",
             "gpu=300blocks", "--timing", "sequential", "--format", "json", "--quiet")
    assert r.exit_code == 0, r.output               # the share goes to the slru run only
    lru, slru = json.loads(r.stdout)["variants"]
    single = _run("replay", "--policy", "slru", "--protected-share", "0.5", "--tier", "gpu=300blocks", "--timing",
                  "sequential", "--format", "json", "--quiet")
    assert json.loads(single.stdout)["hit_ratio"] == slru["hit_ratio"]
