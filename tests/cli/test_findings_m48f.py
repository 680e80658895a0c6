"""mend48f: a new user's findings, each expectation worked out by hand from the documented rules.

1. A sweep plan asked for a block size its trace was not recorded at is told that a sweep cannot run it there,
   that pcs replay (pcs.trace.reblock.reblock in the API) re-blocks, outside the sweep, and how the plan runs at
   the recorded size -- nothing that reads as a plan reaching the size asked.
2. One re-block hint (pcs.trace.api.reblock_road) for JSONL and Parquet on every command.
"""
from __future__ import annotations

import shutil

import pytest

from helpers import ROOT, assert_one_line_error, invoke, plan_refusal

B16 = ROOT / "traces" / "sample_tokens_b16.jsonl"        # sample_tokens.jsonl's ids at 16-token blocks
MOONCAKE = ROOT / "traces" / "formats" / "mooncake_conv_8.jsonl"    # recorded at Mooncake's default, 512
# MOONCAKE's line 1: 7,322 tokens in 15 ids = ceil(7322 / 512); at 64 it would be ceil(7322 / 64) = 115
MC_LINE1 = ("field 'hash_ids': has 15 ids but ceil(7,322 / block size 64) = 115; was the trace recorded at another "
            "block size? (--block-size 512 fits)")
# the command line's road from 512 to 64 (64 divides 512: an interval), and the size that reads the file
ROAD_512 = ("pcs replay re-blocks a block-hash trace (exact at a multiple, an interval at a divisor); elsewhere give "
            "--block-size 512 or leave it out")


# 1. A plan is told it cannot reach 64, and how it runs at 16.

def test_a_plan_at_another_size_is_told_it_cannot_reach_it_and_how_to_run_at_the_recorded_one(tmp_path):
    shutil.copy(B16, tmp_path / "b16.jsonl")
    msg = plan_refusal(tmp_path, 'kind = "replay"\n[fixed]\ntrace = "b16.jsonl"\ntiming = "sequential"\n'
                                 'block-size = 64\ntier = {gpu = "500blocks"}\n')
    assert "a sweep replays a trace at its recorded block size and cannot run this trace at 64-token blocks" in msg
    assert msg.endswith("to sweep it at its recorded size, write block-size = 16"), msg
    assert "point the plan" not in msg and "block-size = 64 out" not in msg, msg


@pytest.mark.parametrize("trace", ["parquet", "jsonl"])
def test_a_plan_at_another_size_of_a_trace_read_at_512_names_pcs_replay_and_the_plans_road(tmp_path, trace):
    path = tmp_path / f"t.{trace}"
    if trace == "parquet":
        assert invoke("trace", "convert", MOONCAKE, path, "-q").exit_code == 0
    else:
        shutil.copy(MOONCAKE, path)
    msg = plan_refusal(tmp_path, f'kind = "replay"\n[fixed]\ntrace = "t.{trace}"\ntiming = "sequential"\n'
                                 'block-size = 64\ntier = {gpu = "500blocks"}\n')
    assert msg.endswith(
        "block-size = 64 is not the trace's recorded block size, 512 tokens; a sweep replays a trace at its recorded "
        "block size and cannot run it at another; outside the sweep, pcs replay TRACE --block-size N re-blocks a "
        "block-hash trace, as pcs.trace.reblock.reblock does in the API (exact at a multiple, an interval at a "
        "divisor); to sweep it at its recorded size, write block-size = 512 or leave it out"), msg


# 2. One hint on every command, for JSONL and Parquet alike.

@pytest.mark.parametrize("command", [["compare"], ["curve"], ["trace", "stats"]])
def test_the_jsonl_hint_names_pcs_replay_as_the_parquet_one_does(tmp_path, command):
    line = assert_one_line_error(invoke(*command, MOONCAKE, "--block-size", "64"))
    assert line == f"pcs: error: {MOONCAKE}:1: {MC_LINE1}; {ROAD_512}", line
    pq = tmp_path / "t.parquet"
    assert invoke("trace", "convert", MOONCAKE, pq, "-q").exit_code == 0
    line = assert_one_line_error(invoke(*command, pq, "--block-size", "64"))
    assert f"here: {ROAD_512}, or convert the token trace at 64" in line, line


def test_the_api_hint_of_a_jsonl_read_at_its_default_names_reblock():
    import pcs
    from pcs.errors import InputError

    with pytest.raises(InputError) as err:
        pcs.curve(str(MOONCAKE), block_size=64)
    assert err.value.problem.endswith(
        "(block_size=512 fits); pcs.trace.reblock.reblock(trace, block_size) re-blocks a block-hash trace opened at "
        "its own size, for pcs.replay (exact at a multiple, an interval at a divisor); elsewhere give block_size=512 "
        "or leave it out"), err.value.problem


# 3. Every public function's keyword refusal leads with KEYWORD=VALUE (an item: KEYWORD[i]=VALUE; an entry of a
#    mapping: KEYWORD['NAME'] = VALUE), pcs.argcheck's numbers included.

def _refusal(call) -> str:
    import pcs  # noqa: F401  (the calls below name it)
    from pcs.errors import UserError

    with pytest.raises(UserError) as err:
        call()
    return str(err.value)


@pytest.mark.parametrize("call, lead", [
    (lambda pcs: pcs.footprint("llama-9", 100), "model='llama-9': unknown model 'llama-9'"),
    (lambda pcs: pcs.footprint("llama-3.1-8b", 100, dtype="fp7"), "dtype='fp7': unknown dtype 'fp7'"),
    # llama-3.1-8b has 32 attention heads: 32 % 3 = 2
    (lambda pcs: pcs.footprint("llama-3.1-8b", 100, tp=3), "tp=3: tensor-parallel size 3 does not divide the 32"),
    (lambda pcs: pcs.replay(None, tiers=["gpu=500blocks"], tier_policies={"ssd": "lru"}),
     "tier_policies['ssd'] = 'lru': names tier 'ssd', which is not among the tiers: gpu"),
    (lambda pcs: pcs.replay(None, tiers=["gpu=500blocks", "hôte=1GB"]),
     "tiers[1]='hôte=1GB': no default link for tier 'hôte'"),
    (lambda pcs: pcs.compare(None, policies=["lru", "lruu"]), "policies[1]='lruu': unknown eviction policy 'lruu'"),
    (lambda pcs: pcs.envelope(-1, 1.0, 0.5, 0.0, [1e9]), "restore_bytes=-1: must be >= 0"),
    (lambda pcs: pcs.envelope(10, 1.0, 0.5, 0.0, [-1]), "bandwidths_bps[0]=-1.0: must be >= 0"),
    (lambda pcs: pcs.budget(-1, 10, 1.0, 1.0), "capacity_need_bytes=-1: must be >= 0"),
    (lambda pcs: pcs.curve(None, capacities=[-1]), "capacities[0]=-1: must be >= 0"),
    (lambda pcs: pcs.fleet_replay(None, instances=0), "instances=0: must be in [1, 4096]"),
])
def test_an_api_refusal_leads_with_its_keyword(call, lead):
    import pcs

    text = _refusal(lambda: call(pcs))
    assert text.startswith(lead), text


def test_the_command_line_names_the_option_of_the_tier_item():
    line = assert_one_line_error(invoke("replay", "--tier", "gpu=500blocks", "--tier", "hôte=1GB"))
    assert line.startswith("pcs: error: --tier hôte=1GB: no default link for tier 'hôte'"), line


# 4. A plan's advice is written as the plan writes it (TOML), on the line of the entry.

def test_a_plan_tier_without_a_link_names_its_line_and_the_toml_link(tmp_path):
    msg = plan_refusal(tmp_path, f'kind = "replay"\n[fixed]\ntrace = "{MOONCAKE}"\ntiming = "sequential"\n'
                                 'tier = {gpu = "500blocks", "hôte" = "1GB"}\n')
    assert msg.startswith(f"{tmp_path / 'p.toml'}:5: point "), msg
    assert msg.endswith('tier = {"hôte" = "1GB"}: no default link for tier \'hôte\'; known tiers: cpu, host, dram, '
                        'ssd, nvme, disk, remote, rdma; or name its link: link = {"hôte" = "pcie-gen5-x16"} or '
                        'link = {"hôte" = "25GB/s"}'), msg


# 5. The policies of a run are shown per tier, in tier order (GPU first), when the tiers differ.

TIER_POLICIES = ["--tier", "gpu=500blocks", "--tier", "cpu=1GB", "--tier-policy", "gpu=slru", "--tier-policy",
                 "cpu=lru", "--timing", "sequential"]


def test_the_replay_header_lists_each_tiers_policy_in_tier_order():
    res = invoke("replay", *TIER_POLICIES)
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[0].endswith("| gpu=slru/cpu=lru, write-back"), res.stdout.splitlines()[0]
    same = invoke("replay", "--tier", "gpu=500blocks", "--tier", "cpu=1GB", "--timing", "sequential")
    assert same.stdout.splitlines()[0].endswith("| lru, write-back"), same.stdout.splitlines()[0]


def test_a_compare_column_names_each_tiers_policy():
    res = invoke("compare", *TIER_POLICIES)
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[1].split() == ["metric", "gpu=slru/cpu=lru"], res.stdout.splitlines()[1]
