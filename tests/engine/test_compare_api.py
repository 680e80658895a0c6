"""``pcs.compare``: several replays side by side as a plain function, worked by hand on a tiny trace.

Trace (4-token blocks, one block per request, every id may hit: no
last-token cap), ids 1 2 1 3 1, 20 prompt tokens; one tier, sequential:

- capacity 1: every request evicts the previous block -> 0 hits for LRU, FIFO and MIN
  (MIN must insert each missed block, docs/semantics.md §5: nothing survives);
- capacity 2, LRU: 1, 2 | 1 hits (1 becomes MRU) | 3 evicts 2 | 1 hits -> 8 / 20 = 0.4;
- capacity 2, FIFO: 1, 2 | 1 hits (no move) | 3 evicts 1 (first in) | 1 misses -> 4 / 20 = 0.2;
- capacity 2, MIN: 3 evicts 2 (never used again) -> 0.4; ceiling (infinite cache) 0.4.
"""
import inspect
import json
import pydoc
import types

import pytest
from click.testing import CliRunner

import pcs
from pcs.cli.main import cli
from helpers import UNIT_RULES, LinearCompute, req

TRACE = [req([i], t=k) for k, i in enumerate((1, 2, 1, 3, 1))]
KW = dict(timing="sequential", rules=UNIT_RULES, compute=LinearCompute())


def test_is_a_plain_function_with_signature_and_help():
    assert isinstance(pcs.compare, types.FunctionType)
    params = inspect.signature(pcs.compare).parameters
    assert {"trace", "policies", "tier_sets", "curve_capacities", "replay_kwargs"} <= set(params)
    assert "Replay one trace under several policies" in pydoc.render_doc(pcs.compare, renderer=pydoc.plaintext)


def test_hand_worked_variants_and_curve():
    res = pcs.compare(TRACE, policies=["lru", "fifo"], tier_sets=[["gpu=1blocks"], ["gpu=2blocks"]],
                      curve_capacities=[1, 2], **KW)
    got = [(v.variant, v.policy, v.tiers, v.hit_ratio) for v in res.variants]
    assert got == [("lru gpu=1blocks", "lru", "gpu=1blocks", 0.0), ("fifo gpu=1blocks", "fifo", "gpu=1blocks", 0.0),
                   ("lru gpu=2blocks", "lru", "gpu=2blocks", 0.4), ("fifo gpu=2blocks", "fifo", "gpu=2blocks", 0.2)]
    assert res.variants[2].summary.hit_tokens == 8 and res.variants[3].summary.hit_tokens == 4
    assert all(v.single_sequence_hit_ratio == 0.4 for v in res.variants)
    assert all(v.lower_tier_hit_ratio == 0 and v.restored_bytes == 0 for v in res.variants)   # one tier
    rows = [(r.capacity_blocks, r.policy_hit_ratios, r.belady_hit_ratio, r.ceiling_hit_ratio) for r in res.curve]
    assert rows == [(1, {"lru": 0.0, "fifo": 0.0}, 0.0, 0.4), (2, {"lru": 0.4, "fifo": 0.2}, 0.4, 0.4)]
    d = res.to_dict()
    assert list(d) == ["trace", "model", "timing", "variants", "curve"] and d["timing"] == "sequential"
    # capacity_bytes: 2 blocks x 4 tokens x 327,680 B per token (the default llama-2-70b: 80 layers x 8 KV heads
    # x 128 x K and V x 2 B bf16, the TP group's shares together) = 2,621,440 B
    assert d["curve"][1] == {"capacity_blocks": 2, "capacity_bytes": 2_621_440, "lru_hit_ratio": 0.4, "fifo_hit_ratio": 0.2,
                             "belady_hit_ratio": 0.4, "ceiling_hit_ratio": 0.4}
    assert "summary" not in d["variants"][0]


def test_defaults_one_variant_and_no_curve():
    res = pcs.compare(TRACE, tiers=["gpu=2blocks"], **KW)
    assert [(v.variant, v.hit_ratio) for v in res.variants] == [("lru", 0.4)]
    assert res.curve is None and "curve" not in res.to_dict()


def test_argument_errors():
    with pytest.raises(ValueError, match="not both"):
        pcs.compare(TRACE, tier_sets=[["gpu=1blocks"]], tiers=["gpu=2blocks"], **KW)
    with pytest.raises(ValueError, match="policies="):
        pcs.compare(TRACE, policy="fifo", **KW)
    with pytest.raises(ValueError, match=">= 0"):
        pcs.compare(TRACE, curve_capacities=[-1], **KW)


def test_cli_json_and_csv_are_the_api_result():
    api = pcs.compare(None, policies=["lru", "fifo"], tiers=["gpu=300blocks"], timing="sequential")
    args = ["compare", "--policy", "lru", "--policy", "fifo", "--tier", "gpu=300blocks", "--timing", "sequential",
            "--quiet"]
    out = CliRunner().invoke(cli, args + ["--format", "json"])
    assert out.exit_code == 0, out.output
    printed = json.loads(out.stdout)
    # the CLI adds "notes" about the trace (docs/json.md, "Keys pcs compare adds"): the bundled sample is synthetic
    assert any("prefix reuse is synthetic" in n for n in printed.pop("notes"))
    assert printed.pop("skipped") == 0      # and how many bad lines the read skipped (same section): none here
    # and each variant's "tier_capacities" (same section): the one 300-block GPU tier, in whole blocks of bytes
    for row in printed["variants"]:
        caps = row.pop("tier_capacities")
        assert list(caps) == ["gpu"] and caps["gpu"]["capacity_blocks"] == 300
        assert caps["gpu"]["capacity_bytes"] > 0 and caps["gpu"]["capacity_bytes"] % 300 == 0
    assert printed == json.loads(json.dumps(api.to_dict()))
    csv_lines = CliRunner().invoke(cli, args + ["--format", "csv"]).stdout.splitlines()
    assert csv_lines[0].startswith("variant,policy,tiers,hit_ratio,") and len(csv_lines) == 3


def test_protected_share_goes_to_the_slru_runs_only():
    res = pcs.compare(TRACE, policies=["lru", "slru"], tiers=["gpu=2blocks"], protected_share=0.5, **KW)
    lru, slru = (v.summary.tiers[0] for v in res.variants)
    assert lru.policy == "lru" and lru.protected_share is None
    assert slru.policy == "slru" and slru.protected_share == 0.5
    with pytest.raises(ValueError, match="protected_share"):   # no compared run takes it: the registry's error
        pcs.compare(TRACE, policies=["lru", "fifo"], protected_share=0.5, **KW)


def test_each_variant_says_which_engine_ran_and_why():
    """docs/semantics.md §15's table: lru on one tier in sequential timing is the lru-scan row; belady is not lru,
    so it takes the next row that applies, the compiled hierarchy (belady is a compiled policy); with
    native='python' no compiled row applies and belady runs on the reference."""
    res = pcs.compare(TRACE, policies=["lru", "belady"], tier_sets=[["gpu=2blocks"]], **KW)
    assert [v.engine for v in res.variants] == ["lru-scan", "compiled-hierarchy"]
    variants = res.to_dict()["variants"]
    assert [v["engine"] for v in variants] == ["lru-scan", "compiled-hierarchy"]
    assert "not lru-scan: it needs policy lru, got gpu:belady" in variants[1]["engine_reason"]
    res = pcs.compare(TRACE, policies=["belady"], tier_sets=[["gpu=2blocks"]], native="python", **KW)
    assert res.to_dict()["variants"][0]["engine"] == "reference"
