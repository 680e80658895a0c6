"""pcs deploy on hybrid models: the blocks and requests replay's page layout holds, page padding included.

Worked by hand (gemma-3-27b, TP 8 on h100-sxm, 512-token blocks, docs/semantics.md §13.1):
- weights 54.032e9 B / 8 = 6.754e9 per GPU; KV pool per GPU 80e9 x 0.9 - 6.754e9 - 5e9 = 60,246,000,000 B,
  x 8 = 481,968,000,000 B.
- a layer's block 512 tokens x 1,024 B (16 KV heads / 8 ranks x 128 x K+V x 2 B) = 524,288 B; G = 10 layers a
  page = 5,242,880 B; a block takes 1 full page + ceil(52 / 10) = 6 sliding pages = 7 pages = 36,700,160 B per
  rank, 293,601,280 B per TP group (payload 62 x 524,288 x 8 = 260,046,848 B).
- GPU-tier blocks: 481,968,000,000 // 293,601,280 = 1,641 (was // 260,046,848 = 1,853).
- a request of 8,192 tokens: 16 full pages + 3 window blocks (ceil(1,024 / 512) + 1) x 6 pages = 34 pages =
  178,257,920 B per rank (was 165,675,008 without the 3 x 4,194,304 B of padding); 60,246,000,000 // 178,257,920
  = 337 concurrent (was 363).
- longest request: 60,246,000,000 // 5,242,880 = 11,491 pages; minus the window's 18 pages = 11,473 full blocks
  = 5,874,176 tokens (was 5,875,200: 11,475 blocks beside 81,788,928 B of unpadded window).
qwen3-next-80b-a3b: a block is 1 full page + a state of 3 pages = 4 x 6,291,456 = 25,165,824 B per rank (was
11,231,232); 8,192 tokens hold 16 pages + one state of 3 = 19 x 6,291,456 = 119,537,664 B.
"""
from __future__ import annotations

import json

import pytest

from pcs.hardware import get_gpu
from pcs.model import get_model
from pcs.model.capacity import gpu_block_bytes, plan_deployment, request_bytes_of
from pcs.model.deploy import size_deployment


def _plan(name: str):
    spec = get_model(name).with_tp(8)
    return plan_deployment(spec, size_deployment(spec, get_gpu("h100-sxm"), 8), 512, 8_192)


def test_gemma_deploy_counts_whole_pages():
    p = _plan("gemma-3-27b")
    assert p.deployment.kv_bytes_per_gpu == 60_246_000_000 and p.deployment.kv_bytes == 481_968_000_000
    assert (p.bytes_per_block_per_rank, p.bytes_per_block) == (7 * 5_242_880, 293_601_280)
    assert p.gpu_blocks == 1_641
    assert p.request_bytes_per_rank == 34 * 5_242_880 == 178_257_920
    assert p.concurrent_requests == 337
    assert p.longest_request_tokens == 11_473 * 512 == 5_874_176


def test_qwen3_next_block_and_request_hold_the_state_pages():
    spec = get_model("qwen3-next-80b-a3b").with_tp(8)
    assert gpu_block_bytes(spec, 512) == (4 * 6_291_456, 8 * 4 * 6_291_456)
    assert request_bytes_of(spec, 512)(8_192) == 19 * 6_291_456 == 119_537_664


@pytest.mark.parametrize("name", ["llama-3.1-70b", "gpt-oss-120b"])
def test_no_padding_no_change(name):
    # llama-3.1-70b: 80 x 512 B per token per rank x 512 = 20,971,520; gpt-oss-120b: 36 x 256 x 512 = 4,718,592
    want = {"llama-3.1-70b": 20_971_520, "gpt-oss-120b": 4_718_592}[name]
    assert gpu_block_bytes(get_model(name).with_tp(8), 512) == (want, 8 * want)


def test_deploy_blocks_are_the_blocks_replay_holds(tmp_path):
    """The default GPU tier of a gemma-3-27b replay (the same deployment): its payload lens counts 1,641 whole
    blocks of 293,601,280 B, deploy's figures."""
    from pcs import replay

    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"timestamp": 0, "input_length": 1_024, "output_length": 1, "hash_ids": [1, 2]}) + "\n")
    s = replay(str(path), model="gemma-3-27b", tp=8).summary
    assert s.payload_lens.gpu_bytes_per_block[0] == 293_601_280
    assert s.payload_lens.gpu_capacity_blocks[0] == 1_641


def test_deploy_note_sets_the_payload_beside_the_pages():
    """Lesson 2 in deploy's notes (README: every report shows it), gemma-3-27b TP 8, B = 512, by hand (above):
    payload 62 layers x 524,288 = 32,505,856 B per rank against 7 pages = 36,700,160 B (4,194,304 B of page
    padding: 8 layers x 524,288); vLLM fp8 (1 B values, scales outside the pages) halves the pages: 18,350,080 B,
    481,968,000,000 // (8 x 18,350,080) = 3,283 GPU-tier blocks against 1,641."""
    from click.testing import CliRunner

    from pcs.cli.main import cli

    args = ["deploy", "--model", "gemma-3-27b", "--tp", "8", "--block-size", "512"]
    d = json.loads(CliRunner().invoke(cli, args + ["--format", "json"]).stdout)
    assert d["payload_bytes_per_block_per_rank"] == 62 * 524_288 == 32_505_856
    assert d["page_padding_bytes_per_block_per_rank"] == 8 * 524_288
    assert d["alt"] == {"dtype": "fp8", "layout": "fp8", "bytes_per_block_per_rank": 18_350_080, "gpu_blocks": 3_283}
    text = CliRunner().invoke(cli, args).stdout
    assert ("payload vs reserved: a block's payload (Reference) is 32,505,856 B per rank, its pages reserve "
            "36,700,160 B (x1.129: 4,194,304 B of page padding); fp8 for bf16: 18,350,080 B a block "
            "(x0.500), 3,283 GPU-tier blocks against 1,641") in " ".join(text.split())
