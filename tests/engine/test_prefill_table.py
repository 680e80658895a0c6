"""The compiled prefill table (``pcs/engine/_prefill.c``) against the numpy reference and a hand-worked row.

Every compiled value must equal the reference's bit for bit (the same float64 operations in the same order): the
step loop reads these seconds, and a last-bit difference would move event times.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcs import _native
from pcs.compute import ComputeModel
from pcs.engine import timing
from pcs.hardware import get_gpu
from pcs.model import get_model

pytestmark = pytest.mark.skipif(not _native.built("prefill"), reason="pcs.engine._prefill not built")

#: presets whose every component is k x causal pairs (full attention, dense MLA) and some that are not.
CAUSAL = ["llama-3.1-8b", "llama-2-70b", "qwen3-32b", "deepseek-v3"]
NOT_CAUSAL = ["gpt-oss-120b", "gemma-3-27b", "qwen3-next-80b-a3b"]


def _compute(name: str, tp: int = 1, bs: int = 512) -> ComputeModel:
    return ComputeModel(get_model(name).with_tp(tp), get_gpu("h100-sxm"), tp=tp, block_size=bs)


def _layout(prompt: np.ndarray, cap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    counts = cap.astype(np.int64) + 1
    offsets = np.zeros(len(prompt) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return counts, offsets


def _both(compute, prompt, cap, bs) -> tuple[np.ndarray, np.ndarray]:
    prompt = np.asarray(prompt, dtype=np.int64)
    counts, offsets = _layout(prompt, np.asarray(cap, dtype=np.int64))
    tm = timing.TimeModel(compute)
    return tm._prefill_table(prompt, counts, offsets, bs), timing.prefill_table_numpy(compute, prompt, counts,
                                                                                        offsets, bs)


def test_hand_row_llama():
    # llama-3.1-8b: 2 x active params = 2 x 8,030,261,248 FLOPs per new token; attention 32 layers x 2 x 32 heads
    # x (128 + 128) = 524,288 FLOPs per (query, key) pair. Prompt 1,024 tokens, bs 512, 3 entries (h = 0, 1, 2):
    # h=0: n 1024, c 0: pairs 1024 x 1025 / 2 = 524,800; h=1: n 512, c 512: 512 x 512 + 512 x 513 / 2 = 393,472;
    # h=2: n 0, c 1024: 0 pairs, 0 FLOPs.
    compute = _compute("llama-3.1-8b")
    assert timing.causal_terms(compute) == (2.0 * 8030261248, compute.flops_per_s, (524288.0,))
    got, _ = _both(compute, [1024], [2], 512)
    flops = [2 * 8030261248 * 1024 + 524288 * 524800, 2 * 8030261248 * 512 + 524288 * 393472, 0]
    assert got.tolist() == pytest.approx([f / compute.flops_per_s for f in flops], rel=1e-15)
    assert got[2] == 0.0


def test_hand_row_long_enough_for_packed_lanes():
    # A row of 10 entries runs the compiled one-term loop's packed body (2 or 4 entries a step) and its tail: each
    # entry must still be (a2 n + (0.0 + k pairs)) / fps in float64, the reference's operations in its order, bit
    # for bit. llama-3.1-8b as above; prompt 4,608 tokens (9 blocks of 512), 10 entries h = 0..9, c = 512 h,
    # n = 4,608 - c, pairs = n c + n (n + 1) / 2 (by hand): 10,619,136; 10,487,808; 10,094,336; 9,438,720;
    # 8,520,960; 7,341,056; 5,899,008; 4,194,816; 2,228,480; 0 (h = 9: nothing new to compute).
    compute = _compute("llama-3.1-8b")
    a2, fps, (k,) = timing.causal_terms(compute)
    n = [4608 - 512 * h for h in range(10)]
    pairs = [10619136, 10487808, 10094336, 9438720, 8520960, 7341056, 5899008, 4194816, 2228480, 0]
    got, ref = _both(compute, [4608], [9], 512)
    want = [(a2 * float(nn) + (0.0 + k * float(pp))) / fps for nn, pp in zip(n, pairs)]
    assert got.tolist() == want and ref.tolist() == want
    assert got[9] == 0.0


@pytest.mark.parametrize("name", NOT_CAUSAL)
def test_other_attention_has_no_terms(name):
    # sliding windows and recurrent state are not k x causal pairs: those tables stay on the numpy reference
    assert timing.causal_terms(_compute(name)) is None


def test_sparse_mla_has_no_terms():
    # DeepSeek-V3.2's MLA attends to min(p, topk) keys (windowed pairs), not causal pairs
    assert timing.causal_terms(_compute("deepseek-v3.2")) is None


@pytest.mark.parametrize("name", CAUSAL)
def test_mooncake_tables_equal(name, exact_trace):
    # the committed sample_exact.jsonl (a fresh clone) and the real Mooncake trace (skips where absent)
    import json

    rows = [json.loads(line) for line in open(exact_trace)]
    prompt = np.array([r["input_length"] for r in rows], dtype=np.int64)
    cap = np.array([len(r["hash_ids"]) for r in rows], dtype=np.int64)
    got, want = _both(_compute(name), prompt, cap, 512)
    assert len(got) == int((cap + 1).sum()) and np.array_equal(got, want)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 300_000), st.integers(0, 700)), min_size=0, max_size=40),
       st.sampled_from([1, 16, 512]), st.sampled_from(CAUSAL), st.sampled_from([1, 2, 8]))
def test_hypothesis_tables_equal(rows, bs, name, tp):
    compute = _compute(name, tp, bs)
    prompt = [p for p, _ in rows]
    cap = [c for _, c in rows]
    got, want = _both(compute, prompt, cap, bs)
    assert np.array_equal(got, want)


def test_bad_layout_refused():
    # offsets that do not end at the table's length are refused, not read out of bounds
    prefill = _native.module("prefill")
    out = np.empty(3, dtype=np.float64)
    with pytest.raises(ValueError, match="offsets"):
        prefill.prefill_table(out, np.array([5], np.int64), np.array([0, 4], np.int64), 512, 1.0, 1.0, (1.0,))


@pytest.mark.parametrize("native, numpy_calls", [("python", 1), ("c", 0), ("auto", 0)])
def test_native_switch_picks_the_table(monkeypatch, native, numpy_calls):
    # --native python runs the plain numpy reference; c and auto (the twin built) the compiled pass
    calls = []
    real = timing.prefill_table_numpy
    monkeypatch.setattr(timing, "prefill_table_numpy", lambda *a: calls.append(1) or real(*a))
    prompt = np.array([1024, 700], dtype=np.int64)
    counts, offsets = _layout(prompt, np.array([2, 1], dtype=np.int64))
    got = timing.TimeModel(_compute("llama-3.1-8b"), native)._prefill_table(prompt, counts, offsets, 512)
    assert len(calls) == numpy_calls and len(got) == 5


@pytest.mark.parametrize("ks, fps, want", [((1.0, 2.0), 1.0, [21.0, 10.0, 0.0]), ((2.0,), 2.0, [7.5, 3.5, 0.0])])
def test_hand_rows_one_and_two_terms(ks, fps, want):
    # block size 2, prompt 3 tokens, a2 = 1, hit blocks h = 0, 1, 2 (c = min(2 h, 3) cached, n = 3 - c new):
    # h = 0: c 0, n 3, pairs 0 + 3 x 4 / 2 = 6; h = 1: c 2, n 1, pairs 2 + 1 = 3; h = 2: c 3 (the hit passes the
    # prompt), n 0, pairs 0. Two terms (1, 2), fps 1: (3 + 6 + 12) = 21, (1 + 3 + 6) = 10, 0. One term (2), fps 2:
    # (3 + 12) / 2 = 7.5, (1 + 6) / 2 = 3.5, 0 (the one-term loop and the general one).
    out = np.full(3, np.nan)
    _native.module("prefill").prefill_table(out, np.array([3], np.int64), np.array([0, 3], np.int64), 2, 1.0, fps, ks)
    assert out.tolist() == want
