"""The bundled default sample and the synth knobs behind it: shaped like the real trace, sized against the default tiers."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.trace import DEFAULT_TRACE, open_trace, trace_stats
from pcs.trace.synth import SynthSpec, synth_requests

# Default tiers of `pcs replay`, worked out by hand: a llama-2-70b block of 512 tokens holds
# 80 layers x 2 (K and V) x 8 KV heads x 128 dims x 2 bytes (bf16) x 512 tokens = 167,772,160 B
# (LLaMA-2 paper, Table 1 / HF config: 80 layers, GQA with 8 KV heads, head dim 8192/64 = 128).
BLOCK_BYTES = 80 * 2 * 8 * 128 * 2 * 512
GPU_BLOCKS = 400 * 10**9 // BLOCK_BYTES      # gpu=400GB -> 2,384 blocks
CPU_BLOCKS = 2 * 10**12 // BLOCK_BYTES       # cpu=2TB   -> 11,920 blocks


@pytest.fixture(scope="module")
def sample_stats():
    return trace_stats(open_trace(DEFAULT_TRACE))


def test_hand_worked_tier_sizes():
    assert (BLOCK_BYTES, GPU_BLOCKS, CPU_BLOCKS) == (167_772_160, 2384, 11920)


def test_default_sample_overflows_the_default_tiers(sample_stats):
    st = sample_stats
    # more distinct blocks than both tiers hold: some reuses must miss in any replay of these tiers
    assert st["distinct_blocks"] > 1.5 * (GPU_BLOCKS + CPU_BLOCKS)
    # the median reuse is farther back than the GPU tier holds (LRU stack distance), but within both tiers
    assert GPU_BLOCKS < st["reuse_distance_blocks_p50"] < GPU_BLOCKS + CPU_BLOCKS
    assert st["reuse_distance_blocks_p99"] > GPU_BLOCKS + CPU_BLOCKS
    assert 0.35 <= st["single_sequence_hit_ratio"] <= 0.60


def test_default_replay_shows_the_capacity_gap_and_cpu_restores():
    from pcs.engine.api import replay

    two = replay().summary                          # the defaults: gpu=400GB, cpu=2TB
    gpu_only = replay(tiers=["gpu=400GB"]).summary
    assert two.hit_ratio < two.single_sequence_hit_ratio - 0.02
    assert two.hit_ratio_per_tier["cpu"] > two.hit_ratio_per_tier["gpu"] > 0
    assert two.bytes.restored_per_link["cpu"] > 0
    link = two.envelope.links[0]
    assert link.restores > 0 and link.break_even_bps is not None
    assert gpu_only.hit_ratio < two.hit_ratio - 0.1


def test_default_sample_resembles_the_real_conversation_trace(sample_stats, mooncake_conv):
    real, st = trace_stats(open_trace(mooncake_conv)), sample_stats
    for key in ("arrival_rate_rps", "prompt_tokens_mean", "prompt_tokens_p50", "blocks_per_request_mean",
                "output_tokens_mean", "reaccess_share", "single_sequence_hit_ratio"):
        assert st[key] == pytest.approx(real[key], rel=0.15), key
    # reuse: shorter than the whole trace's (1/7 of its span) but the same order of magnitude
    for key in ("reuse_distance_blocks_p50", "reuse_time_s_p50"):
        assert real[key] / 3 < st[key] < real[key], key


def test_cli_defaults_are_the_spec_defaults():
    from pcs.cli.trace import synth

    spec = SynthSpec()
    opts = {p.name: p.default for p in synth.params}
    assert opts["num_requests"] == spec.num_requests and opts["seed"] == spec.seed
    assert opts["rate_rps"] == spec.rate_rps and opts["block_size"] == spec.block_size
    assert opts["think_s"] == spec.chat_think_s and opts["turns_mean"] == spec.chat_turns_mean
    assert opts["first_tokens"] == spec.chat_first_median_tokens
    shares = dict(part.split("=") for part in opts["mix"].split(","))
    assert tuple(float(shares[k]) for k in ("chat", "agent", "oneoff")) == spec.mix


def test_think_times_are_lognormal_around_the_median():
    spec = SynthSpec(num_requests=3000, seed=4, rate_rps=4.0, mix=(1.0, 0.0, 0.0), chat_think_s=10.0,
                     chat_turns_mean=4.0, block_size=16, length_scale=0.01)
    reqs = list(synth_requests(spec))
    by_id = {r.chat_id: r for r in reqs}
    end = reqs[-1].arrival_s
    # parents early enough that a gap of 20 medians (P = 0.13 % at sigma 1) still lands inside the trace
    gaps = np.array([r.arrival_s - by_id[r.parent_chat_id].arrival_s for r in reqs
                     if r.parent_chat_id >= 0 and by_id[r.parent_chat_id].arrival_s < end - 200.0])
    assert gaps.size > 1000
    logs = np.log(np.maximum(gaps, 1e-3))            # arrivals are whole milliseconds
    assert math.exp(np.median(logs)) == pytest.approx(10.0, rel=0.1)   # lognormal median = e^mu
    assert np.std(logs) == pytest.approx(spec.think_sigma, rel=0.1)


def test_think_s_and_turns_options_move_the_reuse(tmp_path):
    runner = CliRunner()
    stats = {}
    for name, extra in (("fast", ["--think-s", "10"]), ("slow", ["--think-s", "100"]),
                        ("one", ["--think-s", "10", "--turns", "1"])):
        out = tmp_path / f"{name}.jsonl"
        res = runner.invoke(cli, ["trace", "synth", str(out), "--requests", "400", "--rate", "1", "--seed", "3", *extra])
        assert res.exit_code == 0, res.output
        stats[name] = trace_stats(open_trace(out))
    # 10x the think time: session reuses (most re-accessed blocks) come back ~10x later
    assert stats["slow"]["reuse_time_s_p50"] > 4 * stats["fast"]["reuse_time_s_p50"]
    # one request per chat session: only the shared system prompt and agent prefixes are reused
    assert stats["one"]["single_sequence_hit_ratio"] < stats["fast"]["single_sequence_hit_ratio"] / 2


@pytest.mark.parametrize("field, value", [("chat_turns_mean", 0.5), ("chat_think_s", 0.0), ("think_sigma", -1.0),
                                          ("agent_steps_mean", 0.0)])
def test_spec_rejects_bad_session_knobs(field, value):
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(SynthSpec(), **{field: value})
