"""Compute model against a tiny stand-in ModelSpec, and measured-prefill interpolation."""
from dataclasses import dataclass

import numpy as np
import pytest

from pcs.compute import DEFAULT_UTILISATION, ComputeModel, MeasuredPrefill
from pcs.errors import InputError
from pcs.hardware import GPUSpec, get_gpu


@dataclass(frozen=True)
class StandInSpec:
    """The ModelSpec interface the compute model uses, with round numbers.

    attention_flops: 4 x layers x width x n x (c + n/2) (QK^T and PV, 2 FLOPs per MAC).
    """

    active_params: int = 10**9
    weight_dtype_bytes: float = 2.0
    num_layers: int = 2
    width: int = 1024

    def attention_flops(self, n, c):
        n, c = np.asarray(n, dtype=float), np.asarray(c, dtype=float)
        return 4.0 * self.num_layers * self.width * n * (c + n / 2)

    def with_tp(self, tp):
        return self


GPU = GPUSpec("test-gpu", 80 * 10**9, 2e12, 1e15, 2e15, "round numbers for tests")


def test_prefill_hand_computed():
    cm = ComputeModel(StandInSpec(), GPU, utilisation=0.5)
    # FLOPs = 2 x 1e9 x 1000 + 4 x 2 x 1024 x 1000 x (0 + 500) = 2e12 + 4.096e9 = 2.004096e12
    # time  = 2.004096e12 / (1 x 1e15 x 0.5) = 4.008192e-3 s
    assert cm.prefill_s(1000) == pytest.approx(4.008192e-3, rel=1e-12)
    # after 3000 cached: attention 4 x 2 x 1024 x 1000 x 3500 = 2.8672e10; total 2.028672e12 -> 4.057344e-3 s
    assert cm.prefill_s(1000, 3000) == pytest.approx(4.057344e-3, rel=1e-12)
    assert cm.prefill_s(0) == 0.0


def test_prefill_tp_dtype_and_default_utilisation():
    base = ComputeModel(StandInSpec(), GPU)
    assert base.utilisation == DEFAULT_UTILISATION == 0.5
    tp2 = ComputeModel(StandInSpec(), GPU, tp=2)
    assert tp2.prefill_s(1000) == pytest.approx(base.prefill_s(1000) / 2)       # FLOPs split over 2 GPUs
    fp8 = ComputeModel(StandInSpec(), GPU, dtype="fp8")
    assert fp8.prefill_s(1000) == pytest.approx(base.prefill_s(1000) / 2)       # 2e15 vs 1e15 peak
    with pytest.raises(ValueError, match="no FP8"):
        ComputeModel(StandInSpec(), get_gpu("a100-80gb"), dtype="fp8")
    for bad in (dict(tp=0), dict(utilisation=0.0), dict(utilisation=1.5), dict(dtype="int2")):
        with pytest.raises(ValueError):
            ComputeModel(StandInSpec(), GPU, **bad)


def test_prefill_broadcasts():
    cm = ComputeModel(StandInSpec(), GPU)
    n = np.array([[1000], [2000]])        # shape (2, 1)
    c = np.array([0, 3000, 6000])         # shape (3,)
    out = cm.prefill_s(n, c)
    assert out.shape == (2, 3)
    assert out[0, 1] == pytest.approx(cm.prefill_s(1000, 3000))
    with pytest.raises(ValueError):
        cm.prefill_s(-1)


def test_decode_memory_bound_with_kv_function():
    cm = ComputeModel(StandInSpec(), GPU, kv_read_bytes=lambda c: 1000 * c)
    # memory: (1e9 x 2 B + 1000 x 4096 B) / 2e12 B/s = (2e9 + 4.096e6) / 2e12 = 1.002048e-3 s
    # compute: (2e9 + 4 x 2 x 1024 x 1 x 4096.5) / 5e14 = ~4.07e-6 s  -> memory bound
    assert cm.decode_s_per_token(4096) == pytest.approx(1.002048e-3, rel=1e-12)
    tp2 = ComputeModel(StandInSpec(), GPU, tp=2, kv_read_bytes=lambda c: 500 * c)
    # (2e9 / 2 + 500 x 4096) / 2e12 = 5.01024e-4 s
    assert tp2.decode_s_per_token(4096) == pytest.approx(5.01024e-4, rel=1e-12)
    assert cm.decode_s_per_token(np.array([0, 4096])).shape == (2,)


def test_decode_compute_bound_when_hbm_is_fast():
    fast_hbm = GPUSpec("fast", 10**12, 1e18, 1e15, None, "test")
    cm = ComputeModel(StandInSpec(), fast_hbm, kv_read_bytes=lambda c: 0)
    # compute: (2e9 + 4 x 2 x 1024 x 1 x (0 + 0.5)) / 5e14 = (2e9 + 4096) / 5e14
    assert cm.decode_s_per_token(0) == pytest.approx((2e9 + 4096) / 5e14, rel=1e-12)


def _csv(tmp_path, text):
    path = tmp_path / "prefill.csv"
    path.write_text(text)
    return path


def test_measured_prefill_interpolates_and_extrapolates(tmp_path):
    m = MeasuredPrefill.from_csv(_csv(tmp_path, "tokens,seconds\n# a comment\n1000,0.1\n\n2000,300ms\n"))
    assert m.total_s(500) == pytest.approx(0.05)     # between the added (0, 0) and (1000, 0.1)
    assert m.total_s(1500) == pytest.approx(0.2)     # midway 0.1 .. 0.3
    assert m.total_s(3000) == pytest.approx(0.5)     # last slope 0.2 s / 1000 tokens beyond 2000
    assert m.prefill_s(1000, 1000) == pytest.approx(0.2)  # total(2000) - total(1000)
    assert m.prefill_s(np.array([0, 1000])).tolist() == pytest.approx([0.0, 0.1])


def test_measured_prefill_keeps_a_zero_token_point(tmp_path):
    m = MeasuredPrefill.from_csv(_csv(tmp_path, "prompt_tokens,time_s\n0,0.01\n1000,0.11\n"))
    assert m.total_s(0) == pytest.approx(0.01) and m.total_s(500) == pytest.approx(0.06)


@pytest.mark.parametrize("text,where", [
    ("tokens,seconds\n1000,0.1\nabc,0.2\n", ":3: field 'tokens'"),
    ("tokens,seconds\n1000,0.1\n-5,0.2\n", ":3: field 'tokens'"),
    ("tokens,seconds\n1000,0.1\n2000,5 parsecs\n", ":3: field 'seconds'"),
    ("tokens,seconds\n1000,0.1\n1000,0.2\n", ":3: field 'tokens'"),
    ("tokens,seconds\n1000,0.3\n2000,0.2\n", ":3: field 'seconds'"),
    ("tokens,seconds\n1000\n", ":2: expected 2 fields"),
    ("tok,sec\n1,2\n", ":1: header"),
    ("tokens,seconds\n", "no data rows"),
    ("", "empty file"),
    ("tokens,seconds\n0,0.1\n", "tokens > 0"),
])
def test_measured_prefill_errors_locate_file_line_field(tmp_path, text, where):
    path = _csv(tmp_path, text)
    with pytest.raises(InputError) as err:
        MeasuredPrefill.from_csv(path)
    assert str(path) in str(err.value) and where in str(err.value)


def test_decode_with_real_preset_uses_reserved_kv_bytes():
    model_pkg = pytest.importorskip("pcs.model")
    cm = ComputeModel(model_pkg.get_model("llama-3.1-8b"), get_gpu("h100-sxm"))
    # weights 8,030,261,248 params x 2 B = 16,060,522,496 B
    # KV held at 4096 tokens: 256 blocks x 16 x 131,072 B = 536,870,912 B
    # (16,060,522,496 + 536,870,912) B / 3.35e12 B/s = 4.95444e-3 s  (compute ~3.3e-5 s: memory bound)
    assert cm.decode_s_per_token(4096) == pytest.approx((16_060_522_496 + 536_870_912) / 3.35e12, rel=1e-12)
    # 1-token prefill: (2 x 8,030,261,248 + 524,288) FLOPs / (989.4e12 x 0.5) FLOP/s
    assert cm.prefill_s(1) == pytest.approx(16_061_046_784 / (989.4e12 * 0.5), rel=1e-12)


def _one_layer_kind(component, max_context_tokens=None):
    from pcs.model.spec import ModelSpec

    return ModelSpec("t", (component,), num_layers=2, active_params=10**9, total_params=10**9,
                     max_context_tokens=max_context_tokens)


def test_window_longer_than_every_context_costs_full_attention():
    """docs/semantics.md §10: a window >= the longest context never acts; a shorter one is the intercept."""
    from pcs.model.components import FullAttention, SlidingWindow

    shape = dict(num_layers=2, num_kv_heads=1, head_dim=64, num_q_heads=1)
    # 2 layers x 1 KV head x (64 + 64) x 2 B = 512 B per token; 2e12 B/s -> 2.56e-10 s per context token.
    # attention: 2 x 1 q head x (64 + 64) x 2 layers = 512 FLOPs per pair, decode at context c sees c + 1
    # keys; 1e15 x 0.5 = 5e14 FLOP/s -> 1.024e-12 s per sequence and per context token.
    full = ComputeModel(_one_layer_kind(FullAttention(**shape), 4000), GPU).step_cost()
    assert (full.kv_seq_s, full.kv_token_s) == (0.0, pytest.approx(2.56e-10, rel=1e-12))
    assert full.attn_seq_s == pytest.approx(1.024e-12, rel=1e-12)
    assert full.attn_token_s == pytest.approx(1.024e-12, rel=1e-12)
    for window, ctx, given in ((4096, 4000, None), (10**6, 4000, None), (4000, 4000, None), (4096, None, 4000)):
        cost = ComputeModel(_one_layer_kind(SlidingWindow(**shape, window_tokens=window), ctx), GPU).step_cost(given)
        for name in ("kv_seq_s", "kv_token_s", "attn_seq_s", "attn_token_s", "weights_active_s", "token_s"):
            assert getattr(cost, name) == pytest.approx(getattr(full, name), rel=1e-12, abs=1e-25), (window, name)
    # a window of 2048 < 4000 acts: ceil(2048 / 16) + 1 = 129 pages x 16 x 512 B = 1,056,768 B per sequence
    # -> 5.28384e-7 s, nothing per token; attention 2048 keys x 512 FLOPs / 5e14 = 2.097152e-9 s per sequence.
    cost = ComputeModel(_one_layer_kind(SlidingWindow(**shape, window_tokens=2048), 4000), GPU).step_cost()
    assert cost.kv_seq_s == pytest.approx(5.28384e-7, rel=1e-12) and cost.kv_token_s == pytest.approx(0, abs=1e-25)
    assert cost.attn_seq_s == pytest.approx(2.097152e-9, rel=1e-12)
    assert cost.attn_token_s == pytest.approx(0, abs=1e-25)
