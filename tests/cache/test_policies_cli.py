"""The policy options of the CLI: --policy specs, --admit, --gap-oracle, pcs policies, pcs compare."""
from __future__ import annotations

import json

import pytest

from helpers import ROOT, assert_one_line_error, invoke

T = ROOT / "traces" / "sample_chat.jsonl"
TIERS = ("--tier", "gpu=1000blocks", "--tier", "cpu=3000blocks")


@pytest.mark.parametrize("args,needles", [
    (["--admit", "cpu=bogus"], ["--admit", "unknown admission 'bogus'"]),
    (["--admit", "cpu"], ["--admit", "expected TIER=KIND"]),
    (["--admit", "gpu=reuse:2"], ["GPU tier stores every block"]),
    (["--admit", "ssd=reuse:2"], ["not among the tiers: gpu, cpu"]),
    (["--admit", "cpu=reuse:0"], ["N must be an int >= 1"]),
    (["--policy", "lfu:aging=sometimes"], ["lfu aging must be one of dynamic, none"]),
    (["--policy", "s3fifo:smal_share=0.2"], ["takes no option 'smal_share'", "small_share"]),
    # a malformed option in the one wording of policies, admissions and routers (pcs.choices.malformed_option)
    (["--policy", "lfu:aging"], ["eviction policy 'lfu': bad option 'aging'; expected OPTION=VALUE; its options: aging="]),
])
def test_bad_policy_and_admission_options_are_one_line_errors(args, needles):
    assert_one_line_error(invoke("replay", T, *TIERS, "-q", *args), *needles)


def test_gap_oracle_splits_capacity_and_policy():
    r = invoke("replay", T, *TIERS, "--timing", "sequential", "--gap-oracle", "--format", "json", "-q")
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    g = s["gap"]
    assert g["capacity"] == pytest.approx(s["single_sequence_hit_ratio"] - s["oracle_hit_ratio"])
    assert g["policy"] == pytest.approx(s["oracle_hit_ratio"] - s["hit_ratio"])
    # sequential timing: real = sequential, so capacity + policy = the old capacity_eviction term
    assert g["capacity"] + g["policy"] == pytest.approx(g["capacity_eviction"])
    assert g["policy"] > 0 and s["oracle_hit_ratio"] <= s["single_sequence_hit_ratio"]
    plain = json.loads(invoke("replay", T, *TIERS, "--timing", "sequential", "--format", "json", "-q").stdout)
    assert "oracle_hit_ratio" not in plain and "capacity" not in plain["gap"]          # old keys, unchanged
    assert s["replay_command"] == plain["replay_command"].replace(" --timing", " --gap-oracle --timing")
    assert {k: v for k, v in s.items() if k not in ("oracle_hit_ratio", "gap", "replay_command")} == \
        {k: v for k, v in plain.items() if k not in ("gap", "replay_command")}


def test_replay_with_admission_reports_it_per_tier():
    r = invoke("replay", T, *TIERS, "--admit", "cpu=reuse:2", "--format", "json", "-q")
    assert r.exit_code == 0, r.output
    gpu, cpu = json.loads(r.stdout)["tiers"]
    assert "admission" not in gpu and cpu["admission"] == "reuse:2" and cpu["refused_blocks"] > 0
    table = invoke("replay", T, *TIERS, "--admit", "cpu=reuse:2", "-q").stdout
    assert "lru +reuse:2" in table and "cpu admission reuse:2:" in table


def test_compare_runs_policy_by_admission():
    r = invoke("compare", T, *TIERS, "--policy", "lru", "--policy", "sieve", "--admit", "none", "--admit",
               "cpu=reuse:2+cpu=tinylfu", "--timing", "sequential", "--format", "json", "-q")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["variants"]
    assert [(v["policy"], v.get("admission")) for v in rows] == [
        ("lru", "none"), ("lru", "cpu=reuse:2+cpu=tinylfu"), ("sieve", "none"), ("sieve", "cpu=reuse:2+cpu=tinylfu")]
    assert rows[0]["variant"] == "lru none" and rows[0]["hit_ratio"] != rows[1]["hit_ratio"]


def test_pcs_policies_lists_every_policy_and_admission():
    r = invoke("policies", "--format", "json")
    assert r.exit_code == 0
    d = json.loads(r.stdout)
    names = [p["name"] for p in d["policies"]]
    assert names[:10] == ["lru", "slru", "fifo", "arc", "s3fifo", "sieve", "lfu", "2q", "gdsf", "belady"]
    assert all(p["source"] and p["summary"] for p in d["policies"])
    assert [a["kind"] for a in d["admission"]] == ["reuse", "selective", "tinylfu", "retain"]
    assert next(p for p in d["policies"] if p["name"] == "slru")["aliases"] == ["protected"]
    assert "Admission policies" in invoke("policies").stdout


@pytest.mark.parametrize("timing", ["sequential", "modeled"])
def test_gap_oracle_is_the_same_run_in_c_and_in_python(timing):
    # the oracle run takes the engine the selection table picks (compiled belady, C step loop) unless
    # --native python: the same oracle hit ratio either way (tests/cache/test_native_oracle_policies.py)
    args = ("replay", T, *TIERS, "--timing", timing, "--gap-oracle", "--format", "json", "-q")
    c = json.loads(invoke(*args).stdout)
    py = json.loads(invoke(*args, "--native", "python").stdout)
    assert c["oracle_hit_ratio"] == py["oracle_hit_ratio"] and c["gap"] == py["gap"]


def test_policies_csv_is_plain_text_with_the_admission_rows():
    """The CSV once showed options as a Python repr ({'protected_share': 0.8}, []) and had no admission
    rows. Expected, from the policies' documented defaults: slru's protected segment 0.8 (Caffeine's), alias
    protected; lru no options; belady reads the future; the four admission kinds reuse (n=2, vLLM's store
    threshold), selective (k=2), tinylfu (sample=10), retain (tokens=0-4096, duration=60.0) after them."""
    import csv
    import io

    r = invoke("policies", "--format", "csv")
    assert r.exit_code == 0, r.output
    rows = {(x["type"], x["name"]): x for x in csv.DictReader(io.StringIO(r.stdout))}
    assert (rows["eviction", "slru"]["options"], rows["eviction", "slru"]["aliases"]) == ("protected_share=0.8",
                                                                                           "protected")
    assert rows["eviction", "lru"]["options"] == "" and rows["eviction", "belady"]["needs"] == "future"
    assert [(k[1], x["options"]) for k, x in rows.items() if k[0] == "admission"] == [
        ("reuse", "n=2"), ("selective", "k=2"), ("tinylfu", "sample=10"), ("retain", "tokens=0-4096, duration=60.0")]
    assert not any(c in r.stdout for c in "{}[]")          # no dict or list repr in any cell


def test_one_name_for_slru_in_replay_compare_and_policies(tmp_path):
    # --policy protected printed slru (replay), protected (compare) and "slru (= protected)"
    # (policies). The registered name slru is the one printed (pcs.cache.policies.canonical_spec); protected is
    # an alias, accepted as input and listed as such.
    trace = "traces/sample_chat.jsonl"
    rep = invoke("replay", trace, "--policy", "protected", "--tier", "gpu=100blocks", "--quiet")
    assert rep.exit_code == 0, rep.output
    assert "slru" in rep.stdout.splitlines()[0] and "protected" not in rep.stdout.splitlines()[0]
    cmp = invoke("compare", trace, "--policy", "lru", "--policy", "protected", "--tier", "gpu=100blocks",
                 "--curve-capacities", "100blocks", "--format", "json", "--quiet")
    assert cmp.exit_code == 0, cmp.output
    d = json.loads(cmp.stdout)
    assert [(v["variant"], v["policy"]) for v in d["variants"]] == [("lru", "lru"), ("slru", "slru")]
    assert "slru_hit_ratio" in d["curve"][0] and "protected_hit_ratio" not in d["curve"][0]
    pol = invoke("policies")
    assert "slru (alias protected)" in pol.stdout
