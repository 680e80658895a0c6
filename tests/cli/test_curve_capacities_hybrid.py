"""compare --curve-capacities on a hybrid model: a row at a size is the run ``pcs replay --tier gpu=SIZE`` makes.

gemma-3-27b, TP 8, 512-token blocks (docs/semantics.md §13.1): whole-model block 62 layers x 524,288 B x 8
ranks = 260,046,848 B; a page 10 layers x 524,288 x 8 = 41,943,040 B. 40GB // 260,046,848 = 153: the row's
``capacity_blocks`` (whole-model blocks). The row replays ``gpu=40GB`` itself: 40e9 // 41,943,040 = 953 pages
(954 x 41,943,040 = 40.01e9 > 40e9) = 39,971,717,120 B, the bytes ``--tier gpu=40GB`` holds. Replaying
``gpu=153blocks`` (as before) gave 153 x 260,046,848 = 39,787,167,744 B = 948 pages: one whole-model block
(5 pages) short, a smaller tier and another hit ratio.

gpt-oss-120b (18 full + 18 sliding layers, 8 KV heads x 64 dims, bf16: 2,048 B per token per layer; a page holds
18 layers of 512 tokens = 18,874,368 B): 40e9 // 18,874,368 = 2,119 pages (2,120 x 18,874,368 = 40.01e9 > 40e9)
= 39,994,785,792 B.
"""
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli

SAMPLE = Path(__file__).resolve().parents[2] / "traces" / "sample_chat.jsonl"
FORTY_GB_BYTES = {"gemma-3-27b": 953 * 41_943_040, "gpt-oss-120b": 2_119 * 18_874_368}


def _json(args):
    out = CliRunner().invoke(cli, args + ["--format", "json", "-q"])
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def _same_run(trace, model):
    """The compare row at 40GB and ``pcs replay --tier gpu=40GB``, both sequential on one tier: one run."""
    row, = _json(["compare", str(trace), "--model", model, "--tier", "gpu=40GB", "--timing", "sequential",
                  "--curve-capacities", "40GB"])["curve"]
    rep = _json(["replay", str(trace), "--model", model, "--tier", "gpu=40GB", "--timing", "sequential"])
    gpu = rep["tiers"][0]
    assert gpu["capacity_bytes"] == gpu["resident_bytes_peak"] == FORTY_GB_BYTES[model]   # the tier fills
    assert row["capacity_bytes"] == FORTY_GB_BYTES[model]
    assert row["lru_hit_ratio"] == rep["hit_ratio"]          # tolerance 0: the same run
    return row


@pytest.mark.parametrize("model", ["gemma-3-27b", "gpt-oss-120b"])
def test_a_size_row_is_the_replay_at_that_size_on_the_sample(model):
    row = _same_run(SAMPLE, model)
    assert row["capacity_blocks"] == {"gemma-3-27b": 136, "gpt-oss-120b": 1_059}[model]


def test_a_size_row_is_the_replay_at_that_size_on_mooncake(mooncake_conv):
    _same_run(mooncake_conv, "gemma-3-27b")


def test_a_block_count_row_is_the_replay_of_that_many_padded_model_blocks():
    row, = _json(["compare", str(SAMPLE), "--model", "gemma-3-27b", "--timing", "sequential",
                  "--curve-capacities", "153blocks"])["curve"]
    assert row["capacity_bytes"] == 153 * 7 * 41_943_040    # 153 blocks x 7 pages (1 full + 6 sliding)


def test_unsorted_capacities_keep_each_replayed_column_on_its_row():
    """Rows come sorted by capacity; a replayed column (fifo) listed 238blocks,100blocks used to land on the other
    row. llama-3.1-70b: each fifo cell equals pcs replay --policy fifo at that row's capacity."""
    rows = _json(["compare", str(SAMPLE), "--model", "llama-3.1-70b", "--timing", "sequential", "--policy", "lru",
                  "--policy", "fifo", "--curve-capacities", "238blocks,100blocks"])["curve"]
    assert [r["capacity_blocks"] for r in rows] == [100, 238]
    for r in rows:
        rep = _json(["replay", str(SAMPLE), "--model", "llama-3.1-70b", "--timing", "sequential", "--policy", "fifo",
                     "--tier", f"gpu={r['capacity_blocks']}blocks"])
        assert r["fifo_hit_ratio"] == rep["hit_ratio"]
        assert r["capacity_bytes"] == rep["tiers"][0]["capacity_bytes"] == r["capacity_blocks"] * 167_772_160
