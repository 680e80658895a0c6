"""``pcs compare`` on a hybrid model (docs/hybrid.md "Not on hybrid models").

Every curve column is replayed under the same (cache-group) rules, lru too, so each equals ``pcs replay`` of that
policy on one tier of that many whole-model blocks, sequential timing; the one-pass columns (belady, the ceiling)
are left out, since the one-pass curves apply the all-full-attention rules. The tiers row gives the tiers as
given, which passed back give the same pages (pages are no capacity unit, and under the sglang manager a tier's
pages times their bytes is a smaller tier with fewer pages per pool): gemma-3-27b (10 full + 52 sliding layers,
16 KV heads x 128 dims, bf16; vLLM's page holds 10 layers of 512 tokens) has pages of 10 x 512 x (2 x 16 x 128 x
2 B) = 41,943,040 B, so 40 GB holds floor(40e9 / 41,943,040) = 953 pages (954 pages = 40.01e9 B > 40e9) and
200 GB floor(4,768.4) = 4,768.
"""
from pathlib import Path

from click.testing import CliRunner

import pcs
from pcs.cli.main import cli

SAMPLE = Path(__file__).resolve().parents[2] / "traces" / "sample_chat.jsonl"
CAPS = [100, 1000]


def _seq(policy, blocks, **kw):
    return pcs.replay(SAMPLE, model="gemma-3-27b", policy=policy, tiers=[f"gpu={blocks}blocks"],
                      timing="sequential", **kw).summary.hit_ratio


def test_hybrid_curve_columns_are_replays_under_the_hybrid_rules():
    res = pcs.compare(SAMPLE, model="gemma-3-27b", policies=["lru", "fifo"], tiers=["gpu=40GB"],
                      curve_capacities=CAPS)
    assert "belady and the ceiling left out" in res.curve_note
    for row in res.curve:
        assert row.belady_hit_ratio is None and row.ceiling_hit_ratio is None
        for pol in ("lru", "fifo"):
            assert row.policy_hit_ratios[pol] == _seq(pol, row.capacity_blocks), (pol, row.capacity_blocks)
    # the all-full rules (what the one-pass lru column was) give another number here: the test can fail
    allfull = _seq("lru", 1000, hybrid_kv_cache_manager="disabled")
    assert res.curve[1].policy_hit_ratios["lru"] != allfull
    js = res.to_dict()
    assert js["curve"][0]["belady_hit_ratio"] is None and js["curve_note"] == res.curve_note


def _pages(tiers, manager):
    s = pcs.replay(SAMPLE, model="gemma-3-27b", tiers=tiers, hybrid_kv_cache_manager=manager).summary
    return [t.capacity_blocks for t in s.tiers], [t.capacity_bytes for t in s.tiers]


def test_hybrid_tiers_row_passes_back_to_the_same_pages():
    for manager, want in (("vllm", [953, 4768]), ("sglang", None)):
        res = pcs.compare(SAMPLE, model="gemma-3-27b", policies=["lru"], tiers=["gpu=40GB", "cpu=200GB"],
                          hybrid_kv_cache_manager=manager)
        v = res.variants[0]
        assert v.tiers == "gpu=40GB cpu=200GB" == res.to_dict()["variants"][0]["tiers"]
        ran = [t.capacity_blocks for t in v.summary.tiers]
        pages, nbytes = _pages(v.tiers.split(), manager)
        assert pages == ran
        if want:
            assert pages == want
        else:   # the pages' bytes are no way back under sglang: its per-pool split of fewer bytes loses pages
            assert _pages([f"gpu={nbytes[0]}B", f"cpu={nbytes[1]}B"], manager)[0] != pages


def test_a_non_hybrid_curve_keeps_its_bounds():
    res = pcs.compare(SAMPLE, policies=["lru"], tiers=["gpu=40GB"], curve_capacities=[100])
    assert res.curve_note is None and res.curve[0].ceiling_hit_ratio is not None
    assert res.to_dict().get("curve_note", None) is None


def test_pcs_curve_refuses_a_hybrid_model():
    from helpers import assert_one_line_error

    r = CliRunner().invoke(cli, ["curve", str(SAMPLE), "--model", "gpt-oss-120b", "--capacities", "100blocks"])
    assert_one_line_error(r, "ignore hybrid model gpt-oss-120b's cache-group rules", "run compare with --model gpt-oss-120b and --curve-capacities")
