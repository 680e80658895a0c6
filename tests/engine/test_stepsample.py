"""The time series kept in C by the compiled step loop (pcs/engine/_stepsample.h) equals Sampler.take's.

``NativeStepEngine`` lets its loop keep the samples (``sample_here``) when the loop runs without the GIL and the
sampler is a plain :class:`pcs.engine.series.Sampler`; the rows then come from C at close. The rule
(docs/semantics.md §11): a boundary every ``step_s`` from the first arrival, at most ``max_samples`` of them (the
step doubles, every other row kept). Here a trace long enough for the step to double many times is replayed by
the Python reference StepEngine and by the C loop (its samples kept in C, and through the Python callback), and
the rows, steps and next boundaries must be the same.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from helpers import req
from pcs.engine import stepnative
from pcs.engine.series import BASE_STEP_S, MAX_SAMPLES

pytestmark = pytest.mark.skipif(stepnative._stepsched is None, reason="the compiled step scheduler is not built")


def _reqs(n: int = 400):
    # one request every 7.3 s for n requests (2,912 s): 2,912 s / 0.001 s = 2.9 M base steps, so the step doubles
    # until 2,912 / step + 1 <= 512 -> step = 0.001 x 2^13 = 8.192 s (2,912 / 4.096 = 711 > 511); ids repeat every
    # 5 requests so the tiers hold and restore blocks between samples
    return [req([k % 5 * 10 + j for j in range(1 + k % 3)], 7.3 * k, out=2 + k % 4) for k in range(n)]


def _run(cls, sample_in_c: bool = True):
    from pcs.blocks import BlockRules
    from pcs.cache import Tier, make_policy
    from pcs.cache.native import NativeHierarchy
    from pcs.compute import StepCost
    from pcs.engine.chunks import iter_chunks
    from pcs.engine.schedconfig import SchedulerConfig
    from pcs.hardware import LinkSpec

    h = NativeHierarchy([Tier("gpu", 4, make_policy("lru", 4)), Tier("cpu", 8, make_policy("lru", 8))], "back")
    cost = StepCost(token_s=0.013, weights_active_s=0.02, weights_total_s=0.02, kv_seq_s=1e-4, kv_token_s=1e-6,
                    attn_seq_s=1e-4, attn_token_s=1e-6, attn_pair_s=1e-6, layers=4)
    cfg = SchedulerConfig(max_num_batched_tokens=64, max_num_seqs=4, restore_timeout_per_token_s=0.0)
    eng = cls(h, [None, LinkSpec("t", 3e8, 1e-4, None, None, "tests")], [4096, 4096], cost, cfg)
    if not sample_in_c:
        eng._sample_here = lambda: None
    for ch in iter_chunks(_reqs(), BlockRules(), None, False):
        eng.feed(ch)
    return eng, eng.close()


def test_the_series_kept_in_c_equals_the_reference_across_coarsening():
    from pcs.engine.scheduler import StepEngine

    (pe, pr), (ce, cr), (ke, kr) = _run(StepEngine), _run(stepnative.NativeStepEngine), \
        _run(stepnative.NativeStepEngine, sample_in_c=False)
    assert ce._samples_here and not ke._samples_here
    assert pr.sampler.step_s == BASE_STEP_S * 2 ** 13 == cr.sampler.step_s == kr.sampler.step_s
    assert len(pr.sampler.rows) <= MAX_SAMPLES and len(pr.sampler.rows) > MAX_SAMPLES // 2
    for got in (cr, kr):
        assert json.dumps(got.sampler.rows) == json.dumps(pr.sampler.rows)
        assert (got.sampler.t0, got.sampler.next_s) == (pr.sampler.t0, pr.sampler.next_s)
    # the samples saw restores: the CPU link's cumulative restored bytes grow
    assert np.diff([r[4][1] for r in cr.sampler.rows]).max() > 0
