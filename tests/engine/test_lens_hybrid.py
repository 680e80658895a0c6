"""The payload lens of a hybrid model reads the run's own page layout.

Values worked out by hand from the configs and vLLM's uniform page size (docs/semantics.md §13.1,
pcs/engine/hybrid.py), 512-token blocks of the bundled sample, GPU tier 100 GB (1e11 B).

gemma-3-27b: 62 layers (10 full attention, 52 sliding window), 16 KV heads x 128 dims, K and V.
  one layer's block in bf16: 2 x 16 x 128 x 2 B x 512 tokens = 4,194,304 B; fp8: 2,097,152 B
  vLLM's G = the fewest layers of a kind = 10 (52 is not within 1.25x of 10), so a page is 10 layers:
  bf16 page 41,943,040 B, fp8 page 20,971,520 B
  pages per block: full ceil(10 / 10) = 1, sliding ceil(52 / 10) = 6 -> 7 (8 layers of padding)
  Reserved bytes per block = 7 x page: bf16 293,601,280 B, fp8 146,800,640 B
  (the payload, 62 layers, is 260,046,848 / 130,023,424 B: the padding is the difference)
  GPU pages: 1e11 // 41,943,040 = 2,384 (bf16), 1e11 // 20,971,520 = 4,768 (fp8)
  whole blocks: 2,384 // 7 = 340 (bf16), 4,768 // 7 = 681 (fp8); the all-full-attention block would
  have given 1e11 // 260,046,848 = 384 and 768.
"""
import json
from types import SimpleNamespace

from click.testing import CliRunner

from pcs.cache.groups import CacheGroup
from pcs.cli.main import cli
from pcs.engine.hybrid import HybridPlan

PAGE_BF16, PAGE_FP8 = 41_943_040, 20_971_520


def _json(*args):
    r = CliRunner().invoke(cli, ["replay", "--quiet", "--format", "json", "--tier", "gpu=100GB",
                                 "--tier", "cpu=1TB", *args])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_gemma_lens_reserved_and_blocks_are_the_page_layout_both_dtypes():
    bf16 = _json("--model", "gemma-3-27b")
    lens = bf16["payload_lens"]
    assert lens["reference_bytes_per_block"] == [260_046_848, 130_023_424]
    assert lens["gpu_bytes_per_block"] == [7 * PAGE_BF16, 7 * PAGE_FP8] == [293_601_280, 146_800_640]
    assert lens["lower_bytes_per_block"] == [293_601_280, 146_800_640]   # the cpu tier's pages are the same size
    assert lens["gpu_capacity_blocks"] == [340, 681]
    assert bf16["tiers"][0]["capacity_blocks"] == 2_384                   # pages of the run itself
    # a real --dtype fp8 run holds 4,768 pages = 681 whole blocks, the lens' fp8 column; its own lens
    # gives back the bf16 run's 340
    fp8 = _json("--model", "gemma-3-27b", "--dtype", "fp8")
    assert fp8["tiers"][0]["capacity_blocks"] == 4_768
    assert fp8["payload_lens"]["gpu_capacity_blocks"] == [681, 340]
    assert fp8["payload_lens"]["gpu_bytes_per_block"] == [146_800_640, 293_601_280]


def test_hybrid_lens_restored_bytes_are_the_runs():
    # "(this run)" is the run's bytes.restored exactly (pages x page bytes); the other dtype's is the same
    # pages at its page size: gemma x 20,971,520 / 41,943,040 = x0.5 exactly (fp8: scales outside the pages)
    for model in ("gemma-3-27b", "gpt-oss-120b"):
        d = _json("--model", model)
        restored = d["payload_lens"]["restored_bytes"]
        assert restored[0] == d["bytes"]["restored"] > 0, model
        assert restored[1] * 2 == restored[0], model


def _group(name, rule, pages, pool=0, span=0):
    return CacheGroup(name, rule, (name,), 16, span_tokens=span, pages=pages, pool=pool, layers=1)


def test_block_layout_by_hand():
    # one shared pool of 100-byte pages, 50 pages: a block = full 1 + window 2 + a state of 3 pages every
    # 2 blocks (32 tokens / 16) -> ceil(3 / 2) = 2 pages a block -> 5 pages = 500 B; 50 // 5 = 10 blocks
    shared = HybridPlan("vllm", (_group("f", "full", 1), _group("w", "window", 2, span=32),
                                 _group("s", "state", 3, span=32)), 1, ((100,),), ((50,),), ((),), 1, None, 32, ())
    assert shared.block_pages() == (5,) and shared.block_layout(0) == (500, 10)
    # SGLang: one pool per group, a page = one block of its group; whole blocks = the fewest any pool holds:
    # full 30 pages of 40 B, window 12 pages of 10 B -> 50 B a block, min(30, 12) = 12 blocks
    sep = HybridPlan("sglang", (_group("f", "full", 1, 0), _group("w", "window", 1, 1, span=32)), 2,
                     ((40, 10),), ((30, 12),), ((),), None, None, None, ())
    assert sep.block_pages() == (1, 1) and sep.block_layout(0) == (50, 12)


def test_non_hybrid_lens_unchanged_without_pages():
    # links without restored_bytes: the non-hybrid path counts restored blocks x the Serialized block
    from pcs.engine.lens import payload_lens
    from pcs.model import get_model

    links = [SimpleNamespace(restores=1, restored_blocks=3, setup_s=0.0, bandwidth_bps=1e9)]
    lens = payload_lens(get_model("llama-3.1-8b"), 16, 10 * 2_097_152, links, 1.0, 0.1, 1)
    assert lens.restored_bytes == (3 * 2_097_152, 3 * 1_048_576)   # 32 x 8 x 128 x 2 x 2 B x 16 tokens
    assert lens.gpu_capacity_blocks == (10, 20)


def test_state_payload_and_tier_split_are_the_pages_share(tmp_path):
    """qwen3-next-80b-a3b, TP 8, 16-token blocks (docs/semantics.md §13.1), per rank: 1,024 B per token per
    attention layer (1 KV head x 256 x K, V x 2 B), a page of 12 layers x 16 tokens = 196,608 B; a state of 36 x
    137,216 = 4,939,776 B checkpointed every 144 tokens = 9 blocks in 27 pages, 3 a block: a block is 4 pages =
    786,432 B, the state's share 4,939,776 / 9 = 548,864 B. The TP group's (x 8): payload 8 x (196,608 + 548,864)
    = 5,963,776 B (not 8 x (196,608 + 4,939,776) = 41,091,072 with a whole state a block), split full_attention
    1,572,864 + ssm_state 4,390,912; with no lower tier the Serialized block is the pages too, 6,291,456 B."""
    from pcs import replay
    from pcs.trace.api import open_trace

    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"timestamp": 0, "input_length": 64, "output_length": 1, "hash_ids": [1, 2, 3, 4]})
                    + "\n")
    s = replay(open_trace(str(path), block_size=16), model="qwen3-next-80b-a3b", tp=8, tiers=["gpu=64blocks"]).summary
    assert s.reference_bytes_per_block == s.payload_lens.reference_bytes_per_block[0] == 5_963_776
    assert s.tiers[0].bytes_per_block_by_component == {"full_attention": 1_572_864, "ssm_state": 4_390_912}
    assert s.payload_lens.gpu_bytes_per_block[0] == s.payload_lens.lower_bytes_per_block[0] == 8 * 786_432
