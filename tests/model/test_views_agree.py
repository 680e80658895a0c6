"""The views agree with replay on a hybrid model's bytes: envelope's restore and footprint's page padding.

Expected values worked by hand from the models' shapes (one TP rank of 8, 512-token blocks):

- gemma-3-27b: 16 KV heads x 128 x (K+V) x 2 B = 8,192 B per token per layer, 1,024 per rank; a layer's
  block 512 x 1,024 = 524,288 B. 10 full layers, 52 sliding (window 1,024). vLLM's G = 10 (52 > 1.25 x 10):
  a page is 10 layers = 5,242,880 B; a sliding block takes ceil(52 / 10) = 6 pages, 8 layers of padding =
  4,194,304 B. A hit of 16 blocks reads 16 full blocks and the window's ceil(1,023 / 512) = 2 blocks:
  16 x 5,242,880 + 2 x 27,262,976 + 2 x 4,194,304 = 83,886,080 + 54,525,952 + 8,388,608 = 146,800,640 B.
- gpt-oss-120b: 8 KV heads x 64 x 2 x 2 B = 2,048 B per token per layer, one head per rank = 256 B;
  18 full + 18 sliding (window 128) layers, G = 18, no padding; a block of a kind 18 x 256 x 512 = 2,359,296 B.
  16 blocks: 16 full + ceil(127 / 512) = 1 window block = 17 x 2,359,296 = 40,108,032 B.
- qwen3-next-80b-a3b: 12 full layers, 2 KV heads x 256 (replicated: 1 per rank) x 2 x 2 B = 1,024 B per
  token per layer; page 12 x 1,024 x 512 = 6,291,456 B; 36 linear layers -> a state takes 3 pages
  (18,874,368 B for a 4,939,776 B state). 16 blocks: 16 pages + one state of 3 = 19 x 6,291,456 = 119,537,664 B;
  a block in the footprint: 4 pages = 25,165,824 B, padding 25,165,824 - 6,291,456 - 4,939,776 = 13,934,592 B.
"""
import json

import pytest
from click.testing import CliRunner

from pcs.analysis.envelope import restore_bytes_for_tokens, restore_for_tokens
from pcs.cli.main import cli
from pcs.model import footprint, get_model

RESTORE = {"gemma-3-27b": 146_800_640, "gpt-oss-120b": 40_108_032, "qwen3-next-80b-a3b": 119_537_664,
           "llama-3.1-70b": 335_544_320}


def test_llama_hand_value_is_whole_blocks():
    # 8 KV heads x 128 x 2 x 2 B = 4,096 B per layer per token; one head per rank: 512 B; x 80 layers x 8,192 tokens
    assert RESTORE["llama-3.1-70b"] == 8_192 * 80 * 512 == 335_544_320


@pytest.mark.parametrize("name", sorted(RESTORE))
def test_restore_bytes_are_the_pages_replay_restores(name):
    spec = get_model(name).with_tp(8)
    assert restore_bytes_for_tokens(spec, 8_192, 512) == RESTORE[name]
    assert restore_for_tokens(spec, 8_700, 512) == (8_192, RESTORE[name])   # rounded down to 16 blocks


def test_envelope_cli_d_and_group_bytes_for_a_hybrid():
    out = CliRunner().invoke(cli, ["envelope", "--restore-tokens", "8192", "--tokens", "8704", "--model", "gemma-3-27b",
                                   "--block-size", "512", "--bandwidth", "10GB/s", "--format", "json", "-q"])
    assert out.exit_code == 0, out.output
    d = json.loads(out.stdout)
    assert d["restore_bytes"] == 146_800_640 and d["restore_bytes_all_ranks"] == 8 * 146_800_640
    assert d["restored_tokens"] == 8_192


def test_replay_restores_what_envelope_says(tmp_path):
    """4 requests of 17 blocks, the 4th repeats the 1st: one restore of 16 blocks from cpu (the last block is
    recomputed); the TP group's restored bytes are 8 x envelope's per-rank D."""
    from pcs import replay

    rows = [{"timestamp": 20_000 * i, "input_length": 8_704, "output_length": 1,
             "hash_ids": [100 * (i % 3) + j for j in range(1, 18)]} for i in range(4)]
    path = tmp_path / "hyb.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    # a GPU tier too small to keep the 1st request until the 4th
    # (gemma-3-27b: 17 blocks x 8 x 36,700,160 B = 4.99 GB each)
    for name, gpu in (("gemma-3-27b", "10GB"), ("gpt-oss-120b", "700MB"), ("qwen3-next-80b-a3b", "4GB")):
        s = replay(str(path), model=name, tiers=[f"gpu={gpu}", "cpu=1TB"]).summary
        assert s.tiers[1].restored_bytes == 8 * RESTORE[name], name


def test_footprint_page_padding_row_gemma():
    fp = footprint(get_model("gemma-3-27b").with_tp(8), 10_000, block_size=512)
    pad = next(c for c in fp.components if c["name"] == "page_padding")
    assert pad["serialized_bytes_per_block"] == 4_194_304                   # 8 layers x 524,288
    assert pad["reserved_bytes"] == 3 * 4_194_304                          # the window reserves ceil(1024/512)+1 = 3
    assert pad["reserved_blocks"] == 3                                     # ... blocks, the padded group's: 3 x B/block
    assert pad["serialized_bytes"] == pad["reference_bytes"] == 0          # token-exact modes: no pages to pad
    assert pad["prefix_store_bytes"] == 19 * 4_194_304                     # floor(10,000 / 512) = 19 blocks
    assert fp.per_block["reserved"] == fp.per_block["serialized"] == 7 * 5_242_880
    assert fp.totals["reserved_bytes"] == 20 * 5_242_880 + 3 * 27_262_976 + 3 * 4_194_304
    assert fp.tp_group["bytes_per_block"]["reserved"] == 8 * 36_700_160   # replay's 293.60 MB block


def test_footprint_page_padding_qwen3_next_state():
    fp = footprint(get_model("qwen3-next-80b-a3b").with_tp(8), 10_000, block_size=512)
    pad = next(c for c in fp.components if c["name"] == "page_padding")
    assert pad["serialized_bytes_per_block"] == 13_934_592
    assert fp.per_block["serialized"] == 25_165_824
    assert pad["reserved_bytes"] == 13_934_592                             # one state slot, 3 pages
    assert pad["reserved_blocks"] == 1                                     # the slot: 1 x 13,934,592


@pytest.mark.parametrize("name", ["llama-3.1-70b", "gpt-oss-120b", "deepseek-v3"])
def test_no_padding_row_without_padding(name):
    fp = footprint(get_model(name).with_tp(8), 10_000, block_size=512)
    assert all(c["name"] != "page_padding" for c in fp.components)


def test_footprint_tp_keyword_as_the_cli():
    import pcs
    from pcs.errors import UserError

    # llama-3.1-70b: 80 layers x 8 KV heads x 128 x (K+V) x 2 B = 327,680 B per token; one head per rank of 8
    assert pcs.footprint("llama-3.1-70b", 1_000, tp=8).per_token["reference"] == 327_680 // 8 == 40_960
    assert pcs.footprint(get_model("llama-3.1-70b").with_tp(8), 1_000, tp=8).tp == 8   # its own TP: kept
    with pytest.raises(UserError, match="already split over 4 ranks"):
        pcs.footprint(get_model("llama-3.1-70b").with_tp(4), 1_000, tp=8)


def test_envelope_tp_null_without_a_compute_model_and_no_hbm_capacity_in_help():
    out = CliRunner().invoke(cli, ["envelope", "--restore-bytes", "1GB", "--full-prefill", "100ms",
                                   "--bandwidth", "1GB/s", "--format", "json"])
    assert json.loads(out.stdout)["tp"] is None
    assert "--hbm-capacity" not in CliRunner().invoke(cli, ["envelope", "--help"]).stdout


def test_views_md_dtype_table_is_the_layout_table():
    from pathlib import Path

    from pcs.model import KV_DTYPES, get_layout

    text = (Path(__file__).resolve().parents[2] / "docs" / "views.md").read_text()
    for d in KV_DTYPES:
        assert f"| `{d}` | {get_layout(d).to_dict()['describe']} |" in text, d
    assert "fp8/int8 one fp32 per token per head" not in text     # vLLM's fp8 is per tensor


def test_deepseek_v32_fp8_row_is_named_fp8_ds_mla():
    fp = footprint(get_model("deepseek-v3.2").with_tp(8), 10_000, block_size=512)
    names = [r["layout"] for r in fp.by_dtype]
    assert names == ["bf16", "fp8_ds_mla"]       # fp8 runs as fp8_ds_mla; no per-token-head MLA form
    row = fp.by_dtype[1]
    assert row["asked"] == row["dtype"] == "fp8"      # the value type; the layout is fp8_ds_mla
    # Reference per token: latent 61 layers x (512 fp8 + 64 bf16 rope = 640 B) = 39,040 (bf16: 61 x 576 x 2 =
    # 70,272) + indexer keys 61 x 128 fp8 = 7,808 in both: 46,848 / 78,080 = 0.600
    assert round(row["reference_ratio_vs_bf16"], 3) == round(46_848 / 78_080, 3) == 0.6


def test_fleet_past_context_notes_summed_once_with_per_instance_counts():
    from types import SimpleNamespace

    from pcs.fleet.fleet import fleet_notes

    def note(over, reqs, prompt_only, longest):
        return (f"{over:,} of {reqs:,} requests run past the model's context, 4,096 tokens (config.json "
                f"max_position_embeddings), prompt + output ({prompt_only:,} by the prompt alone, longest prompt "
                f"{longest:,}): replayed anyway, as if the model took them")

    runs = [SimpleNamespace(notes=(note(200, 288, 195, 123_401), "alike")),
            SimpleNamespace(notes=(note(214, 276, 204, 111_426), "alike")), None]
    out = fleet_notes((), runs)
    # 200 + 214 = 414 of 288 + 276 = 564; 195 + 204 = 399 by the prompt; longest max(123,401, 111,426)
    assert out == ("414 requests run past the model's context, 4,096 tokens (config.json max_position_embeddings), "
                   "prompt + output (399 by the prompt alone, longest prompt 123,401); per instance: instance 0 200 "
                   "of 288, instance 1 214 of 276 (414 of 564): replayed anyway, as if the model took them", "alike")


def test_router_compare_header_names_the_deployment():
    from pcs.report.fleet import compare_title

    rows = [{"instances": 8, "router_stale_s": 0.0, "router": "round-robin"}]
    dep = "llama-2-70b, KV fp16 on 8x h100-sxm (TP=8) | block 512 tokens"
    assert compare_title("t.jsonl", rows, dep).startswith(f"pcs compare: t.jsonl | {dep} | 8 instances")
