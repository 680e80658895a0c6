"""The step scheduler's conservation laws over random traces (hypothesis), and its twins.

Every drawn run checks: every request finishes; the busy time equals the sum of
step times; no step computes more tokens than the budget; Little's law (the
integral of requests in the system equals the sum of their end-to-end times);
no block is counted twice (the hierarchy's invariants after every event, hits
split over tiers without remainder, nothing pinned or reserved at the end);
one instance is never more than 100 % busy. Then the twins: event skipping
equals one step at a time, and the compiled hierarchy equals the Python one
(docs/semantics.md §9, §15). Costs and link times are powers of two, so the
closed-form sums equal the step-by-step ones exactly.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import BS, DyadicLink, step_cost, step_run, traces
from pcs.cache.native import available
from pcs.cache import Tier, make_policy
from pcs.engine.restores import RESTORE_POLICIES
from pcs.engine.turns import decode_blocks

COST = step_cost(token_s=2.0 ** -10, weights_s=2.0 ** -8, kv_token_s=2.0 ** -14, attn_pair_s=2.0 ** -16,
                 attn_token_s=2.0 ** -18, layers=4)
NATIVE = available([Tier("gpu", 1, make_policy("lru", 1))])


def _values(col):
    if isinstance(col, np.ndarray):     # the compiled step loop's columns: numpy over its own bytes
        return col
    return np.frombuffer(col, dtype={"q": np.int64, "d": np.float64, "b": np.int8}[col.typecode])


@st.composite
def runs(draw):
    reqs = draw(traces(max_requests=16))
    reqs = [r._replace(arrival_s=round(r.arrival_s * 1024) / 1024) for r in reqs]   # dyadic arrivals
    budget = draw(st.integers(2, 16))
    kw = dict(budget=budget, seqs=draw(st.integers(1, budget)), restore_policy=draw(st.sampled_from(RESTORE_POLICIES)),
              restore_fallback=draw(st.booleans()), max_preemptions=draw(st.integers(0, 3)),
              restore_timeout_s=draw(st.sampled_from([0.0, 2.0 ** -12])))
    caps = [draw(st.integers(4, 24))] + ([draw(st.integers(0, 40))] if draw(st.booleans()) else [])
    dec = decode_blocks(reqs) if draw(st.booleans()) else None
    kw["block_bytes"] = [draw(st.sampled_from([256, 4096, 16384]))] * len(caps)   # restores win, tie, lose
    return reqs, caps, dec, kw


def _run(reqs, caps, dec, kw, **extra):
    links = [None, DyadicLink()][:len(caps)]
    return step_run(reqs, caps, COST, links=links, decode=dec, **kw, **extra)


@settings(max_examples=60, deadline=None)
@given(runs())
def test_conservation(run):
    reqs, caps, dec, kw = run
    eng = _run(reqs, caps, dec, kw)
    c = eng.result.columns
    n = len(reqs)
    finish, arrival = _values(c["finish_s"]), _values(c["arrival_s"])
    assert len(finish) == n and np.isfinite(finish).all(), "every request finishes"
    st_ = eng.stats
    log = eng.steps_log
    assert st_.busy_s == pytest.approx(sum(s for _, s, *_ in log), rel=1e-12, abs=1e-15)
    assert st_.steps == sum(entry[-1] for entry in log)
    assert all(tokens <= kw["budget"] for *_, tokens, _d, _c, _n in log), "a step over the budget"
    assert st_.in_system_area_s == pytest.approx(float((finish - arrival).sum()), rel=1e-9, abs=1e-12)
    span = st_.end_s - st_.origin_s
    assert st_.busy_s <= span * (1 + 1e-12) + 1e-15
    L = eng.result.ledger
    hit = _values(c["hit_tokens"])
    assert sum(L.tier_hit_tokens) == L.hit_tokens == int(hit.sum())
    assert sum(L.tier_hit_blocks) == L.hit_blocks
    assert (hit <= _values(c["prompt_tokens"])).all()
    gpu = eng.h.tiers[0]
    assert gpu.num_pinned == 0 and gpu.reserved_blocks == 0, "a block still held"
    assert (_values(c["ttft_s"]) <= finish - arrival + 1e-12).all()


def _same_columns(run, **other):
    """The run as drawn and with ``other`` options (the twin under test): every per-request column equal, NaN
    equal to NaN in float columns; both runs returned."""
    reqs, caps, dec, kw = run
    x, y = _run(reqs, caps, dec, kw), _run(reqs, caps, dec, kw, **other)
    for name, col in x.result.columns.items():
        a, b = _values(col), _values(y.result.columns[name])
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), name
    return x, y


@settings(max_examples=40, deadline=None)
@given(runs())
def test_event_skipping_equals_one_step_at_a_time(run):
    fast, slow = _same_columns(run, skip=False)
    assert fast.stats.busy_s == slow.stats.busy_s and fast.stats.steps == slow.stats.steps


@pytest.mark.skipif(not NATIVE, reason="the compiled hierarchy is not built")
@settings(max_examples=40, deadline=None)
@given(runs())
def test_compiled_hierarchy_equals_python(run):
    py, c = _same_columns(run, native=True)
    assert py.result.ledger == c.result.ledger


def test_busy_instance_is_fully_used():
    # 40 requests of 64 new tokens arriving at once on a budget of 16: the instance never idles from the first
    # arrival to the last finish, so the utilisation is 1 (up to the two float sums)
    from helpers import req

    reqs = [req(list(range(100 * k, 100 * k + 16)), 0.0, prompt=16 * BS, out=3, bs=BS) for k in range(40)]
    eng = step_run(reqs, [10_000], COST, budget=16, seqs=16)
    st_ = eng.stats
    assert math.isclose(st_.busy_s, st_.end_s - st_.origin_s, rel_tol=1e-12)
