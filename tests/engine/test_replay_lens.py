"""The payload lens (lesson 2): values worked out by hand for llama-3.1-8b, 16-token blocks."""
import json
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.model import get_model
from pcs.engine.lens import alternative_dtype, payload_lens

# llama-3.1-8b: 32 layers x 8 KV heads x 128 dims x 2 (K, V)
BF16_BLOCK = 32 * 8 * 128 * 2 * 2 * 16            # 2,097,152 B per 16-token block
FP8_PAYLOAD = BF16_BLOCK // 2                     # 1,048,576 B
# vLLM fp8: per-tensor scales (2 fp32 per layer) live outside the pages, so a block is payload only
FP8_BLOCK = FP8_PAYLOAD                           # 1,048,576 B


def test_lens_by_hand():
    links = [SimpleNamespace(restores=2, restored_blocks=10, setup_s=0.001, bandwidth_bps=1e9)]
    lens = payload_lens(get_model("llama-3.1-8b"), 16, 100_000_000, links, prefill_s=3.0, ttft_mean_s=0.1,
                        requests=4)
    assert (lens.dtype, lens.alt_dtype) == ("bf16", "fp8")
    assert lens.reference_bytes_per_block == (BF16_BLOCK, FP8_PAYLOAD)
    assert lens.gpu_bytes_per_block == (BF16_BLOCK, FP8_BLOCK)
    assert lens.lower_bytes_per_block == (BF16_BLOCK, FP8_BLOCK)
    assert lens.gpu_capacity_blocks == (100_000_000 // BF16_BLOCK, 100_000_000 // FP8_BLOCK)  # 47, 92
    assert lens.restored_bytes == (10 * BF16_BLOCK, 10 * FP8_BLOCK)
    t_bf16 = 2 * 0.001 + 10 * BF16_BLOCK / 1e9       # 0.02297152 s
    t_fp8 = 2 * 0.001 + 10 * FP8_BLOCK / 1e9         # 0.01281344 s
    assert lens.restore_transfer_s == pytest.approx((t_bf16, t_fp8))
    assert lens.prefill_s == (3.0, 3.0)
    assert lens.ttft_mean_s == pytest.approx((0.1, 0.1 - (t_bf16 - t_fp8) / 4))
    # the lesson: the stored block halves with per-tensor scales, the restore time does not (setup)
    assert FP8_BLOCK / BF16_BLOCK == 0.5 and t_fp8 / t_bf16 > FP8_BLOCK / BF16_BLOCK


def test_alternative():
    assert alternative_dtype("bf16") == "fp8" and alternative_dtype("fp16") == "fp8"
    assert alternative_dtype("fp8") == "bf16" and alternative_dtype("int4") == "bf16"


def test_replay_report_shows_the_lens():
    result = CliRunner().invoke(cli, ["replay", "--quiet", "--format", "json"])
    assert result.exit_code == 0, result.output
    lens = json.loads(result.output)["payload_lens"]
    # llama-2-70b (fp16 config) at 512-token blocks: 80 x 8 x 128 x 2 x 2 B x 512 = 167,772,160 B
    assert lens["reference_bytes_per_block"] == [167_772_160, 83_886_080]
    # vLLM fp8 stored: payload only (per-tensor scales outside the pages) = 83,886,080 B
    assert lens["gpu_bytes_per_block"] == [167_772_160, 83_886_080]
    assert lens["prefill_s"][0] == lens["prefill_s"][1]
    table = CliRunner().invoke(cli, ["replay", "--quiet"]).output
    assert "Payload is not everything" in table


def test_a_narrow_run_says_why_its_16_bit_baseline_is_bf16():
    # The default run (llama-2-70b, an fp16 checkpoint) reads "KV fp16 vs fp8" and an fp8 run
    # "KV fp8 vs bf16": two 16-bit names for one width. bf16 and fp16 both store 2 bytes a value, so the fp8
    # run's bf16 column is the default run's fp16 column: 80 layers x 8 KV heads x 128 x 2 (K, V) x 2 B x 512
    # tokens = 167,772,160 B a block; fp8: half, 83,886,080 B. The fp8 line says so; the 16-bit line is unchanged.
    fp8 = json.loads(CliRunner().invoke(cli, ["replay", "--quiet", "--dtype", "fp8", "--format", "json"]).output)
    default = json.loads(CliRunner().invoke(cli, ["replay", "--quiet", "--format", "json"]).output)
    assert (fp8["payload_lens"]["dtype"], fp8["payload_lens"]["alt_dtype"]) == ("fp8", "bf16")
    assert fp8["payload_lens"]["reference_bytes_per_block"] == [83_886_080, 167_772_160]
    assert default["payload_lens"]["reference_bytes_per_block"] == [167_772_160, 83_886_080]
    lines = CliRunner().invoke(cli, ["replay", "--quiet", "--dtype", "fp8"]).output.splitlines()
    # the why is a note under the table (in the title it took the line past 100 columns: 105 here)
    assert "Payload is not everything: KV fp8 vs bf16" in lines
    assert "note: bf16 = any 16-bit KV: fp16 stores the same 2 bytes a value" in lines
    default_lines = CliRunner().invoke(cli, ["replay", "--quiet"]).output.splitlines()
    assert "Payload is not everything: KV fp16 vs fp8" in default_lines
    assert not any("16-bit KV" in line for line in default_lines)


def test_the_bytes_per_block_are_kept_and_an_unhashable_model_is_worked_out():
    # the eight blocks' bytes of a lens (pcs.model.group_block_bytes of the run's dtype and the other) are kept per
    # (model, block size, layout) for the next replay; a model that cannot be hashed gets the same values anyway
    import dataclasses

    from pcs.engine import lens

    links = [SimpleNamespace(restores=2, restored_blocks=10, setup_s=0.001, bandwidth_bps=1e9)]
    model = get_model("llama-3.1-8b")
    lens._kept_group_bytes.cache_clear()
    first = payload_lens(model, 16, 100_000_000, links, prefill_s=3.0, ttft_mean_s=0.1, requests=4)
    misses = lens._kept_group_bytes.cache_info().misses
    again = payload_lens(model, 16, 100_000_000, links, prefill_s=3.0, ttft_mean_s=0.1, requests=4)
    assert again == first and lens._kept_group_bytes.cache_info().misses == misses == 3   # three layouts, once
    assert first.reference_bytes_per_block == (BF16_BLOCK, FP8_PAYLOAD)
    assert first.gpu_bytes_per_block == first.lower_bytes_per_block == (BF16_BLOCK, FP8_BLOCK)
    unhashable = dataclasses.replace(model, assumptions=["a list: no hash"])
    with pytest.raises(TypeError):
        hash(unhashable)
    assert payload_lens(unhashable, 16, 100_000_000, links, prefill_s=3.0, ttft_mean_s=0.1, requests=4) == first
