"""The compiled step loop over the compiled hybrid hierarchy (pcs.engine.hybridnative) equals the Python
reference (pcs.engine.hybridstep.HybridStepEngine over pcs.cache.grouphier.GroupHierarchy), bit for bit
(docs/semantics.md §9, §10, §3.1, §15).

- hypothesis traces: full / window / chunk / state groups (one shared pool, 1-3 levels, tiny tiers: eviction,
  truncation, preemption), both write policies, fallback on and off, decode blocks, event skipping, the
  no-cache run; step costs of arbitrary (not dyadic) floats with plain pair attention or the windowed,
  chunked, linear and top-k attention of real model components (pcs.engine.chunkattn), LinkSpec links of
  arbitrary figures: identical per-request columns, ledger, counters, time-series samples, end state and
  residency (pages, peaks, the sampled series, per-request samples, restored / written / dropped);
- the attention terms of every hybrid preset reproduce the model's own attention_flops at arbitrary points;
- pcs.replay with the default settings on the samples and the Mooncake trace (skipped without ../shared):
  the compiled-hybrid row runs this loop and equals the ``hybrid`` row (the Python reference) but for the
  engine names.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import (BS, ROOT, STEP_TIME_S, assert_group_states_equal, group_sets, step_flags, step_setups, step_times,
                     without_engine_keys)
from pcs.blocks import BlockRules
from pcs.cache import Tier, make_policy
from pcs.cache.groups import CacheGroup
from pcs.cache.grouphier import GroupHierarchy
from pcs.cache.nativegroups import NativeGroupHierarchy, unsupported
from pcs.engine import stepnative
from pcs.engine.chunkattn import chunk_terms
from pcs.engine.hybridnative import HybridNativeStepEngine, hybrid_unsupported
from pcs.engine.hybridstep import HybridStepEngine
from pcs.engine.scheduler import StepEngine

pytestmark = pytest.mark.skipif(stepnative._stepsched is None or unsupported([], [], 1) is not None,
                                reason="the compiled step loop or hybrid hierarchy is not built")

NAMES = ("gpu", "cpu", "ssd")
HYBRIDS = ("gpt-oss-120b", "gemma-3-27b", "qwen3-next-80b-a3b")


class _Model:
    """A model of the given components: ModelSpec.attention_flops over them (the sum in component order)."""

    def __init__(self, components) -> None:
        self.components = tuple(components)

    def attention_flops(self, n, c=0):
        from pcs.model.spec import ModelSpec

        return ModelSpec.attention_flops(self, n, c)


@st.composite
def components(draw):
    """1-3 real KV components: full attention, a small window, a small chunk, top-k MLA, a linear state."""
    from pcs.model import get_model
    from pcs.model.components import ChunkedLocalAttention, FullAttention, SlidingWindow
    from dataclasses import replace

    heads = dict(num_layers=draw(st.integers(1, 64)), num_kv_heads=8, head_dim=draw(st.sampled_from([64, 128])),
                 num_q_heads=draw(st.sampled_from([8, 64])))
    pool = [FullAttention(**heads), SlidingWindow(**heads, window_tokens=draw(st.integers(1, 30))),
            ChunkedLocalAttention(**heads, chunk_tokens=draw(st.integers(1, 30))),
            replace(get_model("deepseek-v3.2").components[0], topk=draw(st.integers(1, 30))),
            get_model("qwen3-next-80b-a3b").components[1]]
    return [pool[i] for i in draw(st.lists(st.integers(0, 4), min_size=1, max_size=3))]


@st.composite
def runs(draw):
    from pcs.compute import StepCost, _ChunkAttention

    reqs, caps, budget, links = draw(step_setups(2, 4))
    chunked = draw(st.booleans())
    cost = StepCost(**draw(step_times()), attn_pair_s=None if chunked else draw(STEP_TIME_S),
                    layers=draw(st.integers(1, 80)),
                    chunk_attn_s=_ChunkAttention(_Model(draw(components())), draw(st.floats(1e9, 1e16)))
                    if chunked else None)
    kw = dict(budget=budget, seqs=draw(st.integers(1, 4)), **draw(step_flags(caps)),
              groups=draw(group_sets()), step_s=draw(st.sampled_from([0.01, 0.5])))
    return reqs, caps, cost, links, kw


def _run(compiled: bool, reqs, caps, cost, links, kw):
    from pcs.engine.chunks import iter_chunks
    from pcs.engine.schedconfig import SchedulerConfig
    from pcs.engine.turns import decode_blocks

    tiers = [Tier(n, c, make_policy("lru", c)) for n, c in zip(NAMES, caps)]
    pb = [[3 + j] for j in range(len(caps))]
    h = (NativeGroupHierarchy if compiled else GroupHierarchy)(tiers, kw["write_policy"], kw["groups"], 1, pb,
                                                               kw["step_s"])
    dec = decode_blocks(reqs) if kw["decode"] else None
    cfg = SchedulerConfig(max_num_batched_tokens=kw["budget"], max_num_seqs=kw["seqs"],
                          restore_fallback=kw["fallback"], max_preemptions=kw["max_preemptions"],
                          cache_decode_blocks=dec is not None, restore_timeout_per_token_s=0.0)
    # the reference: HybridStepEngine, or (no-cache run, as pcs.engine.runner) a plain StepEngine
    cls = HybridNativeStepEngine if compiled else (StepEngine if kw["no_cache"] else HybridStepEngine)
    eng = cls(h, links, kw["block_bytes"], cost, cfg, kw["last_token"], dec, no_cache=kw["no_cache"],
              skip=kw["skip"])
    for ch in iter_chunks(reqs, BlockRules(recompute_last_token=kw["last_token"]), None, False):
        eng.feed(ch)
    return eng, eng.close()


def _values(col):
    if isinstance(col, np.ndarray):     # the compiled step loop's columns: numpy over its own bytes
        return col
    return np.frombuffer(col, dtype={"q": np.int64, "d": np.float64, "b": np.int8}[col.typecode])


def _assert_same(py, c):
    (pe, pr), (ce, cr) = py, c
    assert list(pr.columns) == list(cr.columns)
    for name, col in pr.columns.items():
        a, b = _values(col), _values(cr.columns[name])
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), name
    assert pr.ledger == cr.ledger
    assert pe.stats == ce.stats
    assert json.dumps(pr.sampler.rows) == json.dumps(cr.sampler.rows)
    assert_group_states_equal(pe.h, ce.h)


@settings(max_examples=150, deadline=None)
@given(runs())
def test_compiled_loop_equals_the_reference_on_random_traces(run):
    reqs, caps, cost, links, kw = run
    _assert_same(_run(False, reqs, caps, cost, links, kw), _run(True, reqs, caps, cost, links, kw))


@pytest.mark.parametrize("model", HYBRIDS + ("deepseek-v3.2",))
def test_attention_terms_reproduce_each_preset(model):
    # the C loop sums coef x pairs per component (pcs/engine/_stepsched.c chunk_attn_s); the terms must give the
    # model's own attention_flops / flops_per_s bit for bit: the sum written out here in numpy's order
    from pcs.compute import ComputeModel
    from pcs.engine.chunkattn import _pairs

    cost = ComputeModel(model, "h100-sxm", tp=8, block_size=512).step_cost()
    terms, f = chunk_terms(cost)
    rng = np.random.default_rng(7)
    for n, c in zip(rng.integers(1, 200_000, 300), rng.integers(0, 3_000_000, 300)):
        total = 0.0
        for kind, coef, p in terms:
            total = total + coef * _pairs(kind, float(n), float(c), p)
        assert total / f == cost.chunk_attn_s(int(n), int(c))


def test_attention_terms_refuse_what_they_cannot_sum():
    from pcs.compute import StepCost, _ChunkAttention

    class Odd:                                  # a component kind the C loop does not know
        def attention_flops(self, n, c):
            return 3.0 * n

    base = dict(weights_active_s=0.0, weights_total_s=0.0, kv_seq_s=0.0, kv_token_s=0.0, token_s=1.0,
                attn_seq_s=0.0, attn_token_s=0.0)
    assert chunk_terms(StepCost(**base, attn_pair_s=1e-9)) is None          # plain: the pair form
    odd = StepCost(**base, attn_pair_s=None, chunk_attn_s=_ChunkAttention(_Model([Odd()]), 1e12))
    assert chunk_terms(odd) is None
    assert "pair" in stepnative.loop_unsupported(1, [None], odd, _Cfg())
    assert hybrid_unsupported(GroupHierarchy([Tier("gpu", 4, make_policy("lru", 4))], "back",
                                             [CacheGroup("f", "full", ("f",), BS)]), [None], odd, _Cfg())


class _Cfg:
    restore_policy = "layerwise"
    cache_blocks_at = "prefill-done"      # the default (SchedulerConfig): the compiled loops cache at prefill done


def _same_replays(trace, **kw) -> None:
    """The Python row (engine "hybrid" by name) and auto (compiled-hybrid: this C loop) give the same replay."""
    from pcs.engine.api import replay

    a = replay(trace, engine="hybrid", **kw)
    b = replay(trace, **kw)
    assert b.summary.engine == "compiled-hybrid" and "step loop in C" in b.summary.engine_reason, \
        b.summary.engine_reason
    assert json.dumps(without_engine_keys(a.summary.to_dict()), default=str) == \
        json.dumps(without_engine_keys(b.summary.to_dict()), default=str)
    assert a.requests.column_names == b.requests.column_names
    for name in a.requests.column_names:
        x, y = (t.column(name).to_numpy(zero_copy_only=False) for t in (a.requests, b.requests))
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name


@pytest.mark.parametrize("model", HYBRIDS)
@pytest.mark.parametrize("sample", ["sample_chat.jsonl", "sample_azure_conv.jsonl"])
def test_presets_on_the_samples(model, sample):
    _same_replays(str(ROOT / "traces" / sample), model=model, tiers=["gpu=20GB", "cpu=60GB"], residency_step_s=30.0)


@pytest.mark.parametrize("model,gpu", [("gpt-oss-120b", "40GB"), ("gemma-3-27b", "100GB")])
def test_mooncake(model, gpu):
    from conftest import MOONCAKE_CONV

    if not MOONCAKE_CONV.exists():
        pytest.skip("the Mooncake trace (../shared/traces) is not here")
    from pcs.trace import open_trace

    _same_replays(open_trace(MOONCAKE_CONV), model=model, tiers=[f"gpu={gpu}", "cpu=2TB"])


def test_the_no_cache_twin_follows_the_plan_not_the_reason_text(monkeypatch):
    """The no-cache twin of a compiled-hybrid run under the step scheduler runs the same step loop as the run (C
    here: the preset on the sample needs nothing the C loop lacks); the runner reads that from the plan's
    ``step_loop`` field, so a reason worded otherwise still runs the C loop for both (pcs/engine/select.py)."""
    from pcs.engine import hybridnative, loops
    from pcs.engine.api import replay

    made = []

    class Spy(HybridNativeStepEngine):
        def __init__(self, *args, **kwargs):
            made.append(bool(kwargs.get("no_cache")))
            super().__init__(*args, **kwargs)

    original = loops._hybrid_step_loop

    def reworded(plan, *args):
        cls = original(plan, *args)
        plan.reason = plan.reason.replace("step loop in C", "the loop of pcs/engine/_stepsched.c")
        return Spy if cls is HybridNativeStepEngine else cls

    monkeypatch.setattr(hybridnative, "HybridNativeStepEngine", Spy)
    monkeypatch.setattr(loops, "_hybrid_step_loop", reworded)
    res = replay(str(ROOT / "traces" / "sample_chat.jsonl"), model=HYBRIDS[0], tiers=["gpu=20GB", "cpu=60GB"],
                 residency_step_s=30.0)
    assert res.summary.engine == "compiled-hybrid" and "step loop in C" not in res.summary.engine_reason
    assert sorted(made) == [False, True]      # the run and its no-cache twin, both on the C loop
