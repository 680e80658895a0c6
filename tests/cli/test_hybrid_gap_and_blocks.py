"""Hybrid models: ``pcs compare`` carries the hybrid-rules gap term as ``pcs replay`` does, and a tier given in
blocks holds the block ``pcs deploy`` counts (docs/semantics.md §12, §13.1).

The tiny trace (16-token blocks): R1 ids 1,2,3,4 (64 tokens); R2 5,6,7 (48); R3 1,2,3,4,9 (80); R4 1,2,3,4,10
(80): 272 prompt tokens. Single-sequence (infinite cache, same block rules): R3 and R4 each hit blocks 1-4 = 64
tokens (the last-token cap leaves a 5th block out anyway), 128 / 272 = 47.06 %; no partial blocks, so ideal =
single-sequence.

The tiny sliding-window model (gemma2-style, 2 window-32 + 2 full layers, 1 KV head x 128 dims, bf16): a layer's
16-token block is 2 (K, V) x 128 x 2 B x 16 = 8,192 B; vLLM's G = 2 layers per page -> a page of 16,384 B; each
group takes 1 page per block, so a block of the model is 2 pages = 32,768 B with no padding.

The tiny state model (Qwen3-Next-style, 1 full + 3 linear-attention layers, 2 KV heads x 256 dims, bf16): the full
layer's 16-token block is 2 x 2 x 256 x 2 B x 16 = 32,768 B = the page (G = 1); the state group takes 3 pages per
block (one per layer, the small state padded to the page), so a block of the model is 4 pages = 131,072 B.
"""
from __future__ import annotations

import json

import pytest

from helpers import invoke_json

T1 = [([1, 2, 3, 4], 64), ([5, 6, 7], 48), ([1, 2, 3, 4, 9], 80), ([1, 2, 3, 4, 10], 80)]
SWA = {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "head_dim": 128, "hidden_size": 1024,
       "intermediate_size": 4096, "num_attention_heads": 8, "num_hidden_layers": 4, "num_key_value_heads": 1,
       "sliding_window": 32, "cache_implementation": "hybrid", "vocab_size": 32000, "torch_dtype": "bfloat16",
       "max_position_embeddings": 8192}
SSM = {"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "hidden_size": 2048,
       "intermediate_size": 5120, "num_hidden_layers": 4, "num_attention_heads": 16, "num_key_value_heads": 2,
       "head_dim": 256, "full_attention_interval": 4, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 16,
       "linear_num_key_heads": 1, "linear_num_value_heads": 1, "linear_value_head_dim": 16,
       "moe_intermediate_size": 512, "num_experts": 8, "num_experts_per_tok": 2,
       "shared_expert_intermediate_size": 512, "attn_output_gate": True, "vocab_size": 151936,
       "torch_dtype": "bfloat16", "max_position_embeddings": 8192}


@pytest.fixture
def tiny(tmp_path):
    trace = tmp_path / "t1.jsonl"
    trace.write_text("".join(json.dumps({"timestamp": i * 100_000, "input_length": n, "output_length": 1,
                                         "hash_ids": ids}) + "\n" for i, (ids, n) in enumerate(T1)))
    models = {}
    for name, cfg in (("swa", SWA), ("ssm", SSM)):
        models[name] = tmp_path / f"tiny{name}.json"
        models[name].write_text(json.dumps(cfg))
    return trace, models


def test_compare_carries_the_hybrid_rules_gap_term(tiny):
    trace, models = tiny
    args = [trace, "--block-size", "16", "--model", models["swa"], "--tp", "1", "--timing", "sequential"]
    rep = invoke_json("replay", *args, "--tier", "gpu=5blocks")
    var, = invoke_json("compare", *args, "--tiers", "gpu=5blocks")["variants"]
    assert var["single_sequence_hit_ratio"] == 128 / 272                 # by hand, module docstring
    g = rep["gap"]
    assert g["hybrid_rules"] > 0                          # 5 blocks = 10 pages: window pages evicted under R2
    assert round(g["hybrid_rules"] * 272) % 16 == 0       # whole 16-token blocks refused
    for term in ("block_rounding", "capacity_eviction", "concurrency", "hybrid_rules"):
        assert var[f"gap_{term}"] == g[term]              # the same run, tolerance 0
    terms = sum(var[f"gap_{t}"] for t in ("block_rounding", "capacity_eviction", "concurrency", "hybrid_rules"))
    assert terms == pytest.approx(128 / 272 - var["hit_ratio"], abs=1e-12)   # ideal = single-sequence here


def test_compare_of_a_full_attention_model_has_no_hybrid_term(tiny):
    trace, _ = tiny
    var, = invoke_json("compare", trace, "--block-size", "16", "--tiers", "gpu=5blocks",
                       "--timing", "sequential")["variants"]
    assert "gap_hybrid_rules" not in var


@pytest.mark.parametrize("model, pages_per_block, page_bytes", [("swa", 2, 16_384), ("ssm", 4, 32_768)])
def test_a_tier_in_blocks_holds_the_padded_blocks_deploy_counts(tiny, model, pages_per_block, page_bytes):
    trace, models = tiny
    dep = invoke_json("deploy", "--model", models[model], "--tp", "1", "--block-size", "16")
    assert dep["bytes_per_block"] == pages_per_block * page_bytes     # the module docstring's block
    rep = invoke_json("replay", trace, "--block-size", "16", "--model", models[model], "--tp", "1",
                      "--tier", "gpu=100blocks", "--timing", "sequential")
    gpu = rep["tiers"][0]
    assert gpu["capacity_blocks"] == 100 * pages_per_block            # pages of the shared pool
    assert gpu["capacity_bytes"] == 100 * pages_per_block * page_bytes
    assert rep["payload_lens"]["gpu_capacity_blocks"][0] == 100       # the lens counts the same 100 blocks


def test_deploys_gpu_blocks_are_the_replay_tier_of_gemma3():
    # gemma-3-27b TP 8, 512-token blocks: a page 10 layers x 524,288 B x 8 ranks = 41,943,040 B; a block 1 full +
    # ceil(52 / 10) = 6 sliding pages = 7 pages = 293,601,280 B (deploy's bytes per block)
    dep = invoke_json("deploy", "--model", "gemma-3-27b", "--tp", "8", "--block-size", "512")
    assert dep["bytes_per_block"] == 7 * 41_943_040
    from pcs.engine.api import replay
    from pcs.trace import open_trace
    from helpers import ROOT

    s = replay(open_trace(ROOT / "traces" / "sample_chat.jsonl"), model="gemma-3-27b",
               tiers=[f"gpu={dep['gpu_blocks']}blocks"], timing="sequential").summary
    assert s.tiers[0].capacity_blocks == dep["gpu_blocks"] * 7
    assert s.tiers[0].capacity_bytes == dep["gpu_blocks"] * 293_601_280


def test_hybrid_html_report_has_the_text_reports_hybrid_table(tiny):
    # The HTML page's hybrid table is the text one (one source, pcs.report.replay.hybrid_rows): the same rows and
    # notes, the all-full-attention hit ratio and this run's hit tokens lost to the rules among them.
    from pcs.report.htmltables import hybrid_table
    from pcs.report.replay import hybrid_rows

    trace, models = tiny
    s = invoke_json("replay", trace, "--block-size", "16", "--model", models["swa"], "--tp", "1",
                    "--tier", "gpu=5blocks", "--timing", "sequential")
    t = hybrid_table(s)
    title, headers, rows, notes = hybrid_rows(s)
    assert (t["title"], t["headers"], t["notes"]) == (title, headers, notes)
    assert [[c["text"] for c in r] for r in t["rows"]] == rows
    assert [r[:2] for r in rows] == [["gpu", "full_attention"], ["gpu", "sliding_window"]]
    assert any("every layer as full attention: hit ratio" in n for n in notes)
    assert any(f"{s['hybrid']['lost_tokens']} hit tokens of this run lost" in n for n in notes)
    assert hybrid_table({k: v for k, v in s.items() if k != "hybrid"}) is None


def test_a_config_file_is_named_by_its_path_in_headers_and_suggestions(tiny):
    # A config's spec is named by its model_type ("gemma2"), which --model does not take back; the headers and
    # pcs curve's suggestion name the file the user gave, the JSON keeps model and adds model_file.
    from helpers import invoke

    trace, models = tiny
    args = [trace, "--block-size", "16", "--model", models["swa"], "--tp", "1", "--tier", "gpu=5blocks", "-q"]
    assert invoke("replay", *args).stdout.splitlines()[0].startswith(
        f"pcs replay: {trace} | {models['swa']} (gemma2), KV bf16")
    assert invoke("compare", *args).stdout.splitlines()[0].startswith(f"pcs compare: {trace} | {models['swa']} (gemma2)")
    s = invoke_json("replay", *args[:-1])
    assert (s["model"], s["model_file"]) == ("gemma2", str(models["swa"]))
    assert "model_file" not in invoke_json("replay", trace, "--block-size", "16", "--tier", "gpu=5blocks")
    err = invoke("curve", trace, "--block-size", "16", "--model", models["swa"]).stderr
    assert f"compare with --model {models['swa']} and --curve-capacities" in err


def test_a_hybrid_tier_in_blocks_is_held_to_int64_bytes_of_its_padded_blocks():
    # gemma-3-27b TP 8: a block 7 pages = 293,601,280 B in either layout (bf16, no scales); (2^63 - 1) // 293,601,280
    # = 31,414,617,936 blocks. 35,468,117,025 blocks passed the unpadded bound (x 260,046,848 B < 2^63) but its
    # pages would hold 1.04e19 B, past the int64 capacity_bytes of the result: refused naming the tier.
    from helpers import ROOT, assert_one_line_error, invoke

    r = invoke("replay", ROOT / "traces" / "sample_chat.jsonl", "--model", "gemma-3-27b", "--tier", "gpu=100blocks",
               "--tier", "cpu=35468117025blocks", "--timing", "sequential", "-q")
    assert_one_line_error(r, "tier 'cpu'", "293,601,280 B per block", "give at most 31,414,617,936 blocks")


def test_html_side_by_side_tables_carry_the_hybrid_term_and_count_pages(tiny):
    # The HTML compare table and the table of several replays show gap: hybrid rules for a hybrid model (left out
    # without one, as the text table), and a hybrid run's tiers as pages: 5 blocks x 2 pages = 10, 4 x 2 = 8,
    # written as a --tier value pcs replay accepts (pages are no unit): their bytes, 10 x 16,384 B and 8 x 16,384 B
    # (a page: 2 layers of 16 tokens x K and V x 1 head x 128 dims x 2 B = 2 x 16 x 512 B).
    from pcs.report.htmltables import compare_table, runs_table

    trace, models = tiny
    args = [trace, "--block-size", "16", "--tp", "1", "--timing", "sequential"]
    runs = [invoke_json("replay", *args, "--model", models["swa"], "--tier", f"gpu={n}blocks") for n in (5, 4)]
    t = runs_table(runs)
    assert [r["tiers"][0]["capacity_blocks"] for r in runs] == [10, 8] and runs[0]["tiers"][0]["bytes_per_block"] == 16384
    assert [c["text"] for c in t["rows"][0][1:]] == ["gpu=163840B", "gpu=131072B"]
    (hyb,) = [r for r in t["rows"] if r[0]["text"] == "gap: hybrid rules"]
    assert hyb[1]["text"] == f"{100 * runs[0]['gap']['hybrid_rules']:+.1f} pts"
    plain = [invoke_json("replay", *args, "--tier", f"gpu={n}blocks") for n in (5, 4)]
    assert all(r[0]["text"] != "gap: hybrid rules" for r in runs_table(plain)["rows"])
    cmp_h = compare_table(invoke_json("compare", *args, "--model", models["swa"], "--tiers", "gpu=5blocks"))
    cmp_p = compare_table(invoke_json("compare", *args, "--tiers", "gpu=5blocks"))
    assert any(r[0]["text"] == "gap: hybrid rules" for r in cmp_h["rows"])
    assert all(r[0]["text"] != "gap: hybrid rules" for r in cmp_p["rows"])
