"""pcs.compute.StepCost: the step roofline, the closed-form decode runs, and its agreement with ComputeModel."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import step_cost
from pcs.compute import ComputeModel


def test_llama_70b_on_8_h100():
    # llama-2-70b (68.98e9 active params, bf16 weights), 8 x H100 SXM (989.4 TFLOP/s dense bf16, 3.35 TB/s), MFU 0.5:
    # matmuls 2 x 68.98e9 / (8 x 989.4e12 x 0.5) = 34.86 us per token; weights 68.98e9 x 2 / 8 / 3.35e12 = 5.148 ms
    # per step; KV: 80 layers x 8 kv heads x 128 x 2 (K, V) x 2 B / 8 ranks = 40,960 B per token and rank:
    # 40,960 / 3.35e12 = 12.23 ns per context token
    cm = ComputeModel("llama-2-70b", "h100-sxm", tp=8, block_size=512)
    c = cm.step_cost()
    assert c.token_s == pytest.approx(2 * cm.model.active_params / (8 * 989.4e12 * 0.5))
    assert c.token_s == pytest.approx(34.86e-6, rel=1e-3)
    assert c.weights_active_s == pytest.approx(5.148e-3, rel=1e-3) and c.weights_total_s == c.weights_active_s
    assert c.kv_token_s == pytest.approx(40_960 / 3.35e12) and c.kv_seq_s == pytest.approx(0.0, abs=1e-15)
    assert c.attn_pair_s is not None and c.layers == 80
    # a lone prefill is compute bound and costs what prefill_s says
    for n, ctx in ((8192, 0), (3000, 9000), (512, 100_000)):
        assert c.prefill_s(n, ctx) == pytest.approx(cm.prefill_s(n, ctx), rel=1e-12)
    # one decode step at a whole number of blocks is decode_s_per_token (memory bound, KV of whole blocks)
    assert c.decode_run_s(1, 10_240, 1) == pytest.approx(cm.decode_s_per_token(10_240), rel=1e-12)


def test_windowed_model_uses_its_own_attention():
    # gemma-3 style sliding windows: attention is not k x causal pairs, so chunks call attention_flops itself
    cm = ComputeModel("gemma-3-27b", "h100-sxm", tp=2, block_size=16)
    c = cm.step_cost()
    assert c.attn_pair_s is None and c.chunk_attn_s is not None
    assert c.prefill_s(4096, 20_000) == pytest.approx(cm.prefill_s(4096, 20_000), rel=1e-12)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 400), st.integers(0, 10**7), st.integers(1, 300), st.sampled_from([0.0, 1e-3, 5e-3]),
       st.sampled_from([1e-9, 1e-8]))
def test_decode_run_is_the_sum_of_its_steps(d, context, k, weights_s, kv_token_s):
    # memory and compute are affine in the step index: the max switches side at most once
    c = step_cost(token_s=3.5e-5, weights_s=weights_s, kv_token_s=kv_token_s, attn_token_s=6.6e-10)
    steps = sum(c.step_s(0.0, 0.0, 0, d, context + j * d) for j in range(k))
    assert c.decode_run_s(d, context, k) == pytest.approx(steps, rel=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 300), st.integers(0, 10**6), st.floats(1e-4, 10.0), st.integers(1, 500))
def test_decode_steps_within(d, context, seconds, most):
    c = step_cost(token_s=3.5e-5, weights_s=5e-3, kv_token_s=1.2e-8)
    k = c.decode_steps_within(d, context, seconds, most)
    assert 1 <= k <= most
    if k < most or c.decode_run_s(d, context, most) >= seconds:
        assert c.decode_run_s(d, context, k) >= seconds      # step k - 1 ends at or after the limit ...
        assert k == 1 or c.decode_run_s(d, context, k - 1) < seconds    # ... and step k - 2 before it
