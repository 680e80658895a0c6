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


def _run_at(cls, times, base_s: float, max_samples: int, sample_in_c: bool = True):
    """One single-block request at each of ``times`` (s) through ``cls``, its sampler set to ``base_s`` and
    ``max_samples`` before the first feed (not presized: the loop coarsens on its own)."""
    from pcs.blocks import BlockRules
    from pcs.cache import Tier, make_policy
    from pcs.cache.native import NativeHierarchy
    from pcs.compute import StepCost
    from pcs.engine.chunks import iter_chunks
    from pcs.engine.schedconfig import SchedulerConfig

    h = NativeHierarchy([Tier("gpu", 8, make_policy("lru", 8))], "back")
    cost = StepCost(token_s=1e-4, weights_active_s=1e-3, weights_total_s=1e-3, kv_seq_s=1e-6, kv_token_s=1e-8,
                    attn_seq_s=1e-6, attn_token_s=1e-8, attn_pair_s=1e-8, layers=1)
    eng = cls(h, [None], [4096], cost, SchedulerConfig(max_num_batched_tokens=64, max_num_seqs=4,
                                                       restore_timeout_per_token_s=0.0))
    eng.sampler.step_s, eng.sampler.max_samples = base_s, max_samples
    if not sample_in_c:
        eng._sample_here = lambda: None
    for ch in iter_chunks([req([k % 3], t, out=1) for k, t in enumerate(times)], BlockRules(), None, False):
        eng.feed(ch)
    return eng, eng.close()


_T0 = 14.264324267410204


@pytest.mark.parametrize("times, base_s, max_samples", [
    # the case found in tests/engine/test_series.py: at _T0 + 2.0 (16.264324267410203) the quotient by step 1 is
    # 1.999... -> int 1, yet boundary _T0 + 2 x 1.0 is that very sum: 3 boundaries > 2 at step 1, so step 2
    ([_T0, _T0 + 2.0, _T0 + 2.0 + 0.5], 0.25, 2),
    ([0.0, 0.3, 0.7, 1.9, 3.2, 3.3, 7.0], 0.1, 3),
    ([float(x) for x in np.cumsum(np.random.default_rng(32).exponential(0.7, 60))], 0.001, 5),
])
def test_the_c_sampler_counts_boundaries_as_the_reference(times, base_s, max_samples):
    from pcs.engine.scheduler import StepEngine

    (pe, pr), (ce, cr), (ke, kr) = (_run_at(StepEngine, times, base_s, max_samples),
                                    _run_at(stepnative.NativeStepEngine, times, base_s, max_samples),
                                    _run_at(stepnative.NativeStepEngine, times, base_s, max_samples, False))
    assert ce._samples_here and not ke._samples_here
    assert 2 <= len(pr.sampler.rows) <= max_samples
    for got in (cr, kr):
        assert json.dumps(got.sampler.rows) == json.dumps(pr.sampler.rows)
        assert (got.sampler.t0, got.sampler.step_s, got.sampler.next_s) == \
            (pr.sampler.t0, pr.sampler.step_s, pr.sampler.next_s)


def test_the_c_sampler_by_hand_at_the_rounded_sum():
    # requests at _T0, _T0 + 2.0 (16.264324267410203), _T0 + 2.5, each done within ms; base 0.25 s, 2 samples.
    # The first arrival is t0: row (_T0, 0 admitted). The next call is at the second arrival: boundaries <= it at
    # step 0.25 are 9, at 0.5 5, at 1 3 (_T0 + 2 x 1.0 is that very sum, though the quotient is 1.999...), at 2
    # two: step 2.0, rows _T0 and _T0 + 2.0 (1 admitted), next boundary _T0 + 2 x 2.0. The third arrival is before
    # it. The end state is taken at that boundary, a third one <= it at step 2: step 4.0, rows _T0 and _T0 + 4.0
    # (all 3 admitted), next boundary _T0 + 2 x 4.0. (main: step 2.0 and 3 rows.)
    from pcs.engine.scheduler import StepEngine

    times = [_T0, _T0 + 2.0, _T0 + 2.5]
    for cls, in_c in ((StepEngine, True), (stepnative.NativeStepEngine, True), (stepnative.NativeStepEngine, False)):
        sp = _run_at(cls, times, 0.25, 2, in_c)[1].sampler
        assert (sp.step_s, sp.next_s) == (4.0, _T0 + 2 * 4.0)
        assert [r[:3] for r in sp.rows] == [(_T0, 0, 0), (_T0 + 4.0, 3, 0)]


def test_the_series_read_off_the_c_records_equals_the_reference_rows():
    # the C loop takes the end state's two samples itself (sample_end) and hands its rows over as records
    # (Sampler.set_block), which the summary reads as columns without making a tuple a row; the TimeSeries must be
    # the reference's, field for field (JSON), and reading ``rows`` afterwards gives the reference's rows
    from pcs.engine.scheduler import StepEngine
    from pcs.engine.series import series_payload
    from pcs.schema import to_dict

    (pe, pr), (ce, cr) = _run(StepEngine), _run(stepnative.NativeStepEngine)
    assert ce._end_sampled and cr.sampler._block is not None       # kept as records through the close
    tiers = [{"name": "gpu", "bytes_per_block": 4096, "bytes_per_block_by_component": {"k": 2048, "v": 2048},
              "link_bandwidth_bps": None},
             {"name": "cpu", "bytes_per_block": 4096, "bytes_per_block_by_component": {"kv": 4096},
              "link_bandwidth_bps": 3e8}]

    def payload(res):
        c = {k: np.asarray(res.columns[k]) for k in ("prompt_tokens", "hit_tokens", "finish_s")}
        return series_payload(res.sampler, c["prompt_tokens"], c["hit_tokens"], c["finish_s"], tiers)

    got, want = payload(cr), payload(pr)
    assert cr.sampler._block is not None                            # the payload made no rows
    assert json.dumps(to_dict(got)) == json.dumps(to_dict(want))
    assert len(got.t_s) > MAX_SAMPLES // 2 and max(got.restore_bps["cpu"]) > 0
    assert (cr.sampler.t0, cr.sampler.step_s, cr.sampler.next_s) == (pr.sampler.t0, pr.sampler.step_s,
                                                                      pr.sampler.next_s)
    assert json.dumps(cr.sampler.rows) == json.dumps(pr.sampler.rows) and cr.sampler._block is None
