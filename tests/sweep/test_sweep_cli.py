"""pcs sweep on the command line: PLAN alone means run, plan-relative paths, every kind equal to its
command alone, one-line errors."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.sweep import read_results

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_PLAN = ROOT / "traces" / "sweep_sample.toml"
AZURE = ROOT / "traces" / "sample_azure_conv.jsonl"
AZURE_CSV = ROOT / "traces" / "formats" / "azure2023_conv_8.csv"     # lengths only: pcs replay notes synthetic reuse


def _pcs(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_the_sample_plan_runs_and_a_second_run_skips_it(tmp_path):
    first = _pcs("sweep", SAMPLE_PLAN, "-o", tmp_path, "--jobs", "1", "--format", "json", "-q")
    assert first.exit_code == 0, first.output
    p = json.loads(first.stdout)
    # 2 policies x cpu 0, 50, 100 GB (the plan's axes)
    assert (p["points"], p["ran"], p["skipped_points"], p["summary"]["replay_points"]) == (6, 6, 0, 6)
    # review 45: the run's points already done are skipped_points; skipped is each row's count of bad trace lines
    assert "skipped" not in p
    rows = read_results(tmp_path).to_pylist()
    assert [r["skipped"] for r in rows] == [0] * 6
    assert {r["trace"] for r in rows} == {str(ROOT / "traces" / "sample_chat.jsonl")}   # relative to the plan
    again = _pcs("sweep", "run", SAMPLE_PLAN, "-o", tmp_path, "--format", "json", "-q")
    assert (json.loads(again.stdout)["ran"], json.loads(again.stdout)["skipped_points"]) == (0, 6)


@pytest.mark.parametrize("kind,fixed,axis,pick,alone", [
    ("replay", f'trace = "{AZURE_CSV}"\nmodel = "llama-3.1-8b"\ntp = 1\ntier = ["gpu=20blocks"]',
     'policy = ["lru", "fifo"]', ("option.policy", "fifo"),
     ["replay", AZURE_CSV, "--model", "llama-3.1-8b", "--tp", "1", "--tier", "gpu=20blocks", "--policy", "fifo"]),
    ("compare", f'trace = "{AZURE}"\nmodel = "llama-3.1-8b"\ntp = 1\npolicy = ["lru", "fifo"]\n'
                'curve_capacities = ["10blocks", "1GB"]', 'tier = ["gpu=100blocks", "gpu=200blocks"]',
     ("option.tier.gpu", "200blocks"),
     ["compare", AZURE, "--model", "llama-3.1-8b", "--tp", "1", "--policy", "lru", "--policy", "fifo",
      "--curve-capacities", "10blocks,1GB", "--tier", "gpu=200blocks"]),
    ("compare", f'trace = "{AZURE}"\nmodel = "llama-3.1-8b"\ntp = 1\npolicy = ["lru", "fifo"]\n'
                'tier = {gpu = "20blocks", cpu = "0blocks"}', 'timing = ["sequential", "modeled"]',
     ("option.timing", "sequential"),       # a size-0 cpu tier: pcs compare's note on it is in the sweep's too
     ["compare", AZURE, "--model", "llama-3.1-8b", "--tp", "1", "--policy", "lru", "--policy", "fifo",
      "--tier", "gpu=20blocks", "--tier", "cpu=0blocks", "--timing", "sequential"]),
    ("curve", f'trace = "{AZURE}"\ncapacities = "10blocks,100blocks,40GB"', 'model = ["llama-3.1-8b", "qwen3-32b"]',
     ("option.model", "qwen3-32b"),
     ["curve", AZURE, "--capacities", "10blocks,100blocks,40GB", "--model", "qwen3-32b"]),
    ("footprint", 'model = "llama-3.1-8b"\ntp = 2', 'tokens = {from = 1024, to = 4096, times = 2}',
     ("option.tokens", 4096),
     ["footprint", "--model", "llama-3.1-8b", "--tp", "2", "--tokens", "4096"]),
])
def test_every_kind_gives_what_its_command_prints_alone(tmp_path, kind, fixed, axis, pick, alone):
    plan = tmp_path / "p.toml"
    plan.write_text(f'kind = "{kind}"\n[fixed]\n{fixed}\n[axes]\n{axis}\n', encoding="utf-8")
    res = _pcs("sweep", plan, "-o", tmp_path / "out", "--jobs", "1", "-q")
    assert res.exit_code == 0, res.output
    rows = read_results(tmp_path / "out").to_pylist()
    printed = json.loads(_pcs(*alone, "--format", "json", "-q").stdout)
    if kind == "curve":
        printed.pop("dtype"), printed.pop("layout")   # pcs curve adds the --dtype it was given (an option column here)
    if kind == "replay":
        printed.pop("trace_file")              # pcs replay adds the trace file it read, for pcs report to check
    # review 47a: the rest is all there -- a replay's replay_command, each compare variant's tier_capacities
    # (docs/sweep.md: "the whole result as the command prints it with --format json, less the trace_file key")
    (row,) = [r for r in rows if r[pick[0]] == pick[1]]
    assert json.loads(row["result_json"]) == printed
    if kind == "replay":                       # the note pcs replay adds about a lengths-only trace is there too
        assert any("prefix reuse is synthetic" in n for n in printed["notes"])
    if "cpu=0blocks" in alone:
        assert any(n.startswith("tier cpu has size 0") for n in printed["notes"])
    assert len(rows) == (3 if kind == "footprint" else 2)      # 1024, 2048, 4096 tokens


@pytest.mark.parametrize("plan_text,words", [
    ("[fixed]\npolcy = 'lru'\n", "unknown option 'polcy' for pcs replay"),
    ("[axes]\npolicy = ['lru', 'mru']\n", 'policy = "mru": unknown eviction policy'),   # the plan's word, not the flag
    ("[fixed]\nformat = 'json'\n", "option 'format' shapes a command's output only"),
    # plot and html were accepted, stored as options and silently ignored
    ("[fixed]\nplot = 'figs'\n", "option 'plot' shapes a command's output only"),
    ("[fixed]\nhtml = 'r.html'\n", "option 'html' shapes a command's output only"),
    ("kind = 'curve'\n[fixed]\nplot = 'c.png'\n", "option 'plot' shapes a command's output only"),
    ("[fixed]\ncache_partial_blocks = 'yes'\n", "is a flag"),
    ("[fixed]\ntrace = 'missing.jsonl'\n", "p.toml:2: field 'fixed.trace': 'missing.jsonl' (from the plan's folder: "),
    ("kind = 'curve'\n[fixed]\ncapacities = '40GB'\n", "a size in bytes needs --model"),
    ("kind = 'compare'\n[fixed]\npolicy = ['slru', 'protected']\n", "name the same policy"),
    # one duration in two spellings (2 s = 2,000 ms): two equal points ran
    ("[axes]\nttft-slo = ['2 seconds', '2000ms']\n", "axis 'ttft-slo': '2000ms' and '2 seconds' are the same duration"),
    # hostile F8: a sweep point replays one instance; fleet keys used to be dropped and the row mislabelled
    ("[fixed]\ninstances = 2\n[axes]\nrouter = ['prefix', 'nope']\n", "does not run fleets"),
    ("[axes]\nrouter = ['round-robin', 'random']\n", "router: pcs sweep replays one instance"),
    ("[fixed]\nrouter_stale_s = 1\n", "router-stale-s: pcs sweep"),
    ("kind = 'compare'\n[fixed]\ninstances = 2\n", "instances: pcs sweep"),
    ("[fixed]\nshared_tier = 'remote=1TB'\n", "shared-tier: pcs sweep replays one instance"),
    # a compare plan's tiers lists under pcs compare --tiers' tier-name rule: the first tier is named gpu, a lower
    # tier's typo gets the closest known name (it ran as a GPU tier 'gpuu', or failed while running)
    ("kind = 'compare'\n[fixed]\ntiers = ['gpuu=500blocks', 'gpu=500blocks']\n",
     "tiers gpuu=500blocks: the first tier is the GPU tier, named gpu"),
    ("kind = 'compare'\n[fixed]\ntiers = ['gpu=500blocks,sdd=1000blocks']\n", "did you mean 'ssd'?"),
])
def test_bad_plans_are_one_line_errors_before_anything_runs(tmp_path, plan_text, words):
    plan = tmp_path / "p.toml"
    plan.write_text(plan_text, encoding="utf-8")
    res = _pcs("sweep", plan, "-o", tmp_path / "out", "--jobs", "1")
    assert res.exit_code == 2 and words in res.stderr, res.output
    assert res.stderr.startswith("pcs: error:") and len(res.stderr.splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("kind", ["replay", "compare"])
def test_unknown_option_lists_no_refused_fleet_option(tmp_path, kind):
    # the valid: list after an unknown key offered instances, router, router_stale_s, shared_tier, which a sweep
    # point then refuses (a sweep point replays one instance)
    plan = tmp_path / "p.toml"
    plan.write_text(f"kind = '{kind}'\n[fixed]\npolcy = 'lru'\n", encoding="utf-8")
    res = _pcs("sweep", plan, "-o", tmp_path / "out", "--jobs", "1")
    assert res.exit_code == 2 and "valid: " in res.stderr, res.output
    valid = res.stderr.split("valid: ", 1)[1].strip().split(", ")
    assert "policy" in valid or "policies" in valid
    assert not {"instances", "router", "router-stale-s", "shared-tier", "router_stale_s", "shared_tier"} & set(valid)


@pytest.mark.parametrize("key,meant", [("teir", "tier"), ("polcy", "policy"), ("gap_orcle", "gap-oracle"),
                                       ("write_polcy", "write-policy")])
def test_an_unknown_key_gets_the_suggestion_the_cli_gives_in_the_plans_spelling(tmp_path, key, meant):
    # the plan's keys are the long options without the dashes (docs/sweep.md): the refused key is quoted as the
    # plan writes it (write_polcy), every other name in the plan's words (write-policy, never --write-policy), and a
    # typo gets the "did you mean" that `pcs replay --teir` gets from click for --tier
    plan = tmp_path / "p.toml"
    plan.write_text(f"[fixed]\ntp = 1\n{key} = 'x'\n", encoding="utf-8")
    res = _pcs("sweep", plan, "-o", tmp_path / "out", "--jobs", "1")
    assert res.exit_code == 2 and len(res.stderr.splitlines()) == 1, res.output
    assert f"unknown option '{key}' for pcs replay; did you mean " in res.stderr     # the key as the plan writes it
    assert f"'{meant}'" in res.stderr.split("did you mean ", 1)[1].split("?", 1)[0]
    assert f"p.toml:3: [fixed]: unknown option '{key}'" in res.stderr   # the plan's key at its line, before any point
    valid = res.stderr.split("(valid: ", 1)[1].strip().rstrip(")").split(", ")
    assert "gap-oracle" in valid and "write-policy" in valid and "max-num-seqs" in valid
    assert not [v for v in valid if v.startswith("-") or "_" in v]
    cli = _pcs("replay", "--" + meant[:-1] + "x")      # the CLI's own suggestion for the same kind of typo
    assert f"--{meant}" in cli.stderr


def test_a_click_refusal_names_the_plan_key_not_the_flag(tmp_path):
    plan = tmp_path / "p.toml"
    plan.write_text("[fixed]\nmax-num-seqs = 0\n", encoding="utf-8")
    res = _pcs("sweep", plan, "-o", tmp_path / "out", "--jobs", "1")
    assert res.exit_code == 2 and "Invalid value for 'max-num-seqs'" in res.stderr, res.output


def test_jobs_and_ray_together_are_refused(tmp_path):
    res = _pcs("sweep", SAMPLE_PLAN, "-o", tmp_path, "--jobs", "2", "--ray")
    assert res.exit_code == 2 and "not both" in res.stderr


@pytest.mark.parametrize("words", [("sweep", "--ray"), ("sweep", "run", "--ray")])
def test_a_bare_ray_before_the_plan_is_a_local_ray_not_an_address(tmp_path, words):
    # `--ray PLAN`: PLAN is an existing file, never a Ray address, so --ray is bare (a local Ray) and PLAN the
    # plan; with --jobs too the refusal proves the plan was parsed (it used to be "Missing argument 'PLAN'")
    res = _pcs(*words, SAMPLE_PLAN, "-o", tmp_path, "--jobs", "2")
    assert res.exit_code == 2 and "not both" in res.stderr, res.output


def test_a_ray_address_that_is_not_a_file_stays_an_address(tmp_path):
    res = _pcs("sweep", "--ray", "auto", "-o", tmp_path)
    assert res.exit_code == 2 and "Missing argument 'PLAN'" in res.stderr


def test_a_bad_threads_switch_is_refused_once_before_any_point(tmp_path, monkeypatch):
    """PCS_THREADS=bogus is none of auto/on/off and their aliases: one error naming the environment variable,
    printed once (not once per point), no point file written, nothing about the plan."""
    monkeypatch.setenv("PCS_THREADS", "bogus")
    res = _pcs("sweep", "run", SAMPLE_PLAN, "-o", tmp_path / "out", "--jobs", "1", "-q")
    assert res.exit_code != 0
    assert res.output.count("environment variable PCS_THREADS='bogus'") == 1
    assert "plan" not in res.output and "failed" not in res.output
    assert not list((tmp_path / "out").glob("*.parquet"))
