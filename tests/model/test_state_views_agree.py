"""A model with recurrent (SSM) state: pcs footprint's B/block and Prefix store are the pages pcs replay and pcs
deploy count (docs/semantics.md §13.1, "The views use the same pages"), not a whole state in every block.

Worked by hand from Qwen3-Next-80B-A3B's config.json (12 full-attention layers of 2 KV heads x 256, 36 gated
DeltaNet layers each holding conv 3 x 8,192 + state 32 x 128 x 128 values, bf16; vLLM page rules of §13.1):

- TP 8, B = 16. Attention: 2 KV heads over 8 ranks -> 1 per rank: 256 x (K, V) x 2 B = 1,024 B per token per
  layer; G = 12 layers a page (36 > 1.25 x 12): a page = 12 x 16 x 1,024 = 196,608 B. State per layer per rank:
  (3 x 1,024 + 4 x 128 x 128) x 2 B = 137,216 B; 36 layers = 4,939,776 B. Hybrid block size b_h =
  16 x ceil(137,216 / (16 x 1,024)) = 16 x 9 = 144 -> a checkpoint every 144 / 16 = 9 blocks, a state in the
  144-token page of each of 36 / 12 = 3 layer groups = 3 x 9 = 27 pages, 3 per block. A block: 1 + 3 pages =
  786,432 B; the state's share 4,939,776 / 9 = 548,864 B, the padding 786,432 - 196,608 - 548,864 = 40,960 B.
  10,000 tokens: floor(10,000 / 16) = 625 blocks, Prefix store 625 x 786,432 = 491,520,000 B.
- TP 1, B = 16: 2,048 B per token per layer, a page 12 x 16 x 2,048 = 393,216 B; state 8 x 137,216 = 1,097,728 B
  a layer; b_h = 16 x ceil(1,097,728 / 32,768) = 544 = 34 blocks; 3 x 34 = 102 pages a checkpoint, 3 a block:
  4 x 393,216 = 1,572,864 B; Prefix store 625 x 1,572,864 = 983,040,000 B (0.98 GB).
- TP 1, fp8 (vLLM per-tensor: 1 B values, the state stays bf16), B = 544: 1,024 B per token per layer, a page
  12 x 544 x 1,024 = 6,684,672 B; b_h = 16 x ceil(1,097,728 / 16,384) = 16 x 67 = 1,072 -> a checkpoint every
  ceil(1,072 / 544) = 2 blocks, 3 x 2 = 6 pages, 3 a block: 4 x 6,684,672 = 26,738,688 B;
  floor(10,000 / 544) = 18 blocks, 481,296,384 B.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pcs.model import footprint, get_model
from pcs.model.capacity import gpu_block_bytes

CONFIGS = Path(__file__).parent / "configs"
QWEN = "qwen3-next-80b-a3b"


def test_qwen3_next_tp8_b16_block_is_one_plus_three_pages():
    fp = footprint(get_model(QWEN).with_tp(8), 10_000, block_size=16)
    assert fp.per_block["serialized"] == fp.per_block["reserved"] == 4 * 196_608 == 786_432
    rows = {c["name"]: c for c in fp.components}
    assert rows["full_attention"]["serialized_bytes_per_block"] == 196_608
    assert rows["ssm_state"]["serialized_bytes_per_block"] == 4_939_776 // 9 == 548_864
    assert rows["page_padding"]["serialized_bytes_per_block"] == 40_960
    assert fp.totals["prefix_store_bytes"] == 625 * 786_432 == 491_520_000
    assert rows["ssm_state"]["prefix_store_bytes"] == 625 * 548_864
    assert fp.tp_group["bytes_per_block"]["reserved"] == 8 * 786_432
    # a running sequence still holds one whole state (Reserved and the token-exact modes are unchanged)
    assert rows["ssm_state"]["reserved_bytes"] == rows["ssm_state"]["serialized_bytes"] == 4_939_776


def test_qwen3_next_tp1_defaults_and_fp8():
    fp = footprint(QWEN, 10_000)                       # pcs footprint's defaults: TP 1, B = 16
    assert fp.per_block["reserved"] == 4 * 393_216 == 1_572_864
    assert fp.totals["prefix_store_bytes"] == 625 * 1_572_864 == 983_040_000
    fp8 = footprint(QWEN, 10_000, block_size=544, dtype="fp8")
    assert fp8.per_block["reserved"] == 4 * 6_684_672 == 26_738_688
    assert fp8.totals["prefix_store_bytes"] == 18 * 26_738_688 == 481_296_384


def _specs():
    yield QWEN, get_model(QWEN)
    for name in ("jamba", "nemotron_h", "qwen3_next"):
        yield name, get_model(str(CONFIGS / f"{name}.json"))


@pytest.mark.parametrize("name, spec", list(_specs()), ids=lambda x: x if isinstance(x, str) else "")
def test_footprint_block_is_deploys_block_every_state_model(name, spec):
    """Every state model we have, at several B and TP, bf16 and fp8: footprint's B/block = deploy's block (the
    replay's pages, ``HybridPlan.block_layout``), and its Prefix store = floor(T/B) of them."""
    for tp in (1, 2, 8):
        for b in (16, 80, 512, 544):
            for dtype in ("bf16", "fp8"):
                s = spec.with_tp(tp).with_dtype(dtype)
                fp = footprint(s, 4_000, block_size=b)
                per_rank, group = gpu_block_bytes(s, b)
                assert fp.per_block["reserved"] == fp.per_block["serialized"] == per_rank, (name, tp, b, dtype)
                assert fp.tp_group["bytes_per_block"]["reserved"] == group, (name, tp, b, dtype)
                assert fp.totals["prefix_store_bytes"] == (4_000 // b) * per_rank, (name, tp, b, dtype)
                assert sum(c["serialized_bytes_per_block"] for c in fp.components) == per_rank


@pytest.mark.parametrize("tp, b, dtype", [(8, 16, "bf16"), (1, 544, "fp8"), (2, 80, "bf16")])
def test_footprint_block_is_the_replays_payload_lens(tmp_path, tp, b, dtype):
    """The replay's payload lens (GPU and lower tier, the run's dtype and the other) in footprint's blocks x TP."""
    from pcs import replay

    path = tmp_path / "t.jsonl"
    rows = [{"timestamp": 1_000 * i, "input_length": 4 * b, "output_length": 1, "hash_ids": [1, 2, 3, 4]}
            for i in range(2)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    from pcs.trace.api import open_trace

    lens = replay(open_trace(str(path), block_size=b), model=QWEN, tp=tp, dtype=dtype,
                  tiers=["gpu=64blocks", "cpu=64blocks"]).summary.payload_lens
    spec = get_model(QWEN).with_tp(tp)
    for i, d in enumerate((lens.dtype, lens.alt_dtype)):
        want = footprint(spec, 4 * b, block_size=b, dtype=d).per_block
        assert lens.gpu_bytes_per_block[i] == want["reserved"] * tp, (i, d)
        assert lens.lower_bytes_per_block[i] == want["serialized"] * tp, (i, d)
