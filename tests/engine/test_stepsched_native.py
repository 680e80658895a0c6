"""The compiled step scheduler (pcs.engine._stepsched) equals the Python reference StepEngine, bit for bit.

The C loop is a statement-for-statement twin of pcs/engine/scheduler.py (docs/semantics.md §9, §10, §15), so
every per-request column, every SchedulerCounters field, the ledger and the time-series samples must be
identical -- not approximately: the costs and link figures drawn here are arbitrary floats (not dyadic), so a
different order of floating-point operations would show. Hypothesis traces cover random arrivals and lengths,
1-3 tiers, both write policies, GPU tiers of a few blocks (preemption, truncation, head-of-line blocking),
fallback on and off, decode blocks, preemption bounds, event skipping on and off, the no-cache run. Then the
whole ``pcs.replay`` on every committed sample and the Mooncake trace: the engine ``compiled-step`` against
the Python loop on the same compiled hierarchy (``engine="compiled-hierarchy"``).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import STEP_TIME_S, in_fresh_process, step_flags, step_setups, step_times
from pcs.blocks import BlockRules
from pcs.cache import Tier, make_policy
from pcs.engine import stepnative

pytestmark = pytest.mark.skipif(stepnative._stepsched is None, reason="the compiled step scheduler is not built")

ROOT = Path(__file__).resolve().parents[2]
from conftest import MOONCAKE_CONV as MOONCAKE  # noqa: E402  (../shared/traces or $PCS_SHARED_TRACES)
ENGINE_KEYS = ("engine", "engine_reason", "baseline_engine", "baseline_engine_reason")


class _Prefill:
    """A vectorised prefill-time model for the chunks' tables: ``a x new + b x new x (cached + new)``."""

    def __init__(self, a: float, b: float) -> None:
        self.a, self.b = a, b

    def prefill_s(self, new, cached):
        new, cached = np.asarray(new, np.float64), np.asarray(cached, np.float64)
        return self.a * new + self.b * new * (cached + new)

    def decode_s_per_token(self, ctx):
        return np.asarray(ctx, np.float64) * 0.0


def _values(col):
    """A column as numpy: the reference's ``array.array``, the compiled loop's numpy array (its own bytes)."""
    if isinstance(col, np.ndarray):
        return col
    return np.frombuffer(col, dtype={"q": np.int64, "d": np.float64, "b": np.int8}[col.typecode])


#: The eviction policies with a compiled twin in the compiled hierarchy (docs/semantics.md §15).
COMPILED_POLICIES = ("lru", "fifo", "slru", "sieve", "2q", "s3fifo", "arc", "lfu")


@st.composite
def runs(draw):
    from pcs.compute import StepCost

    reqs, caps, budget, links = draw(step_setups(1, 1))
    cost = StepCost(**draw(step_times()), attn_pair_s=draw(STEP_TIME_S), layers=draw(st.integers(1, 80)))
    kw = dict(budget=budget, seqs=draw(st.integers(1, budget)), **draw(step_flags(caps)),
              prefill=draw(st.one_of(st.none(), st.builds(_Prefill, STEP_TIME_S, STEP_TIME_S))),
              policies=[draw(st.sampled_from(COMPILED_POLICIES)) for _ in caps])
    return reqs, caps, cost, links, kw


def _run(cls, reqs, caps, cost, links, kw):
    from pcs.cache.native import NativeHierarchy
    from pcs.engine.chunks import iter_chunks
    from pcs.engine.schedconfig import SchedulerConfig
    from pcs.engine.timing import TimeModel
    from pcs.engine.turns import decode_blocks

    names = ("gpu", "cpu", "ssd")[:len(caps)]
    pols = kw.get("policies") or ["lru"] * len(caps)
    h = NativeHierarchy([Tier(n, c, make_policy(p, c)) for n, c, p in zip(names, caps, pols)], kw["write_policy"])
    if kw.get("wrap"):   # a Python function in place of one bound C method: the C loop takes the Python calls
        h.finish = (lambda f: lambda adm: f(adm))(h.finish)
    dec = decode_blocks(reqs) if kw["decode"] else None
    cfg = SchedulerConfig(max_num_batched_tokens=kw["budget"], max_num_seqs=kw["seqs"],
                          restore_fallback=kw["fallback"], max_preemptions=kw["max_preemptions"],
                          cache_decode_blocks=dec is not None, restore_timeout_per_token_s=0.0)
    rules = BlockRules(recompute_last_token=kw["last_token"])
    lean = {"lean": kw.get("lean", False)} if issubclass(cls, stepnative.NativeStepEngine) else {}   # every column
    eng = cls(h, links, kw["block_bytes"], cost, cfg, kw["last_token"], dec, no_cache=kw["no_cache"], skip=kw["skip"],
              **lean)
    tm = TimeModel(kw["prefill"]) if kw["prefill"] is not None else None
    for ch in iter_chunks(reqs, rules, tm, False):
        if kw.get("one_by_one"):     # a fleet's one clock feeds one request a call (pcs.fleet.stepclock._one)
            from pcs.fleet.stepclock import _one

            for r in range(len(ch)):
                eng.feed(_one(ch, r))
        else:
            eng.feed(ch)
    return eng, eng.close()


def _assert_same(py, c):
    """Identical columns (NaN = NaN), ledger, counters, samples and end state."""
    (pe, pr), (ce, cr) = py, c
    assert list(pr.columns) == list(cr.columns)
    for name, col in pr.columns.items():
        a, b = _values(col), _values(cr.columns[name])
        assert a.dtype == b.dtype, name
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), name
    assert pr.ledger == cr.ledger
    assert pe.stats == ce.stats
    assert pe.stats.busy_per_s.typecode == ce.stats.busy_per_s.typecode == "d"   # one buffer each, no floats
    assert json.dumps(pr.sampler.rows) == json.dumps(cr.sampler.rows)
    assert pr.sampler.step_s == cr.sampler.step_s
    assert [len(t.resident) for t in pe.h.tiers] == [len(t.resident) for t in ce.h.tiers]
    assert [t.policy.order() for t in pe.h.tiers] == [t.policy.order() for t in ce.h.tiers]


@settings(max_examples=150, deadline=None)
@given(runs())
def test_native_equals_reference_on_random_traces(run):
    from pcs.engine.scheduler import StepEngine

    reqs, caps, cost, links, kw = run
    py = _run(StepEngine, reqs, caps, cost, links, kw)
    _assert_restored_rows_sum_to_the_links(py[1].columns["restored_bytes"], py[1].ledger.links)
    _assert_same(py, _run(stepnative.NativeStepEngine, reqs, caps, cost, links, kw))


def _at_block_size(reqs, bs):
    """The requests of a drawn trace (4-token blocks) at ``bs`` tokens a block: the same ids, the same number
    of blocks (prompt in ``((n - 1) * bs, n * bs]`` for n ids), the last block short by as many tokens as before,
    at most ``bs - 1``."""
    return [r._replace(prompt_tokens=len(r.block_hashes) * bs
                       - min(len(r.block_hashes) * r.block_size - r.prompt_tokens, bs - 1), block_size=bs)
            for r in reqs]


@settings(max_examples=80, deadline=None)
@given(runs(), st.sampled_from([1, 2, 3, 5, 6, 7, 8, 12, 16]))
def test_native_equals_reference_at_any_block_size(run, bs):
    # the C loop divides by the block size with a shift and a mask when it is a power of two (bdiv, bmod in
    # pcs/engine/_stepsched.c), with floor division otherwise: both equal the reference's // and %, including
    # the ceiling -(-tokens // bs) of an admission's extra slots and the next boundary (-kv) % bs of a decode
    from pcs.engine.scheduler import StepEngine

    reqs, caps, cost, links, kw = run
    reqs = _at_block_size(reqs, bs)
    _assert_same(_run(StepEngine, reqs, caps, cost, links, kw),
                 _run(stepnative.NativeStepEngine, reqs, caps, cost, links, kw))


def test_block_sizes_of_the_drawn_trace_keep_the_blocks():
    # the conversion above, worked by hand: 2 ids of a 7-token prompt at 4 tokens a block (1 short) are a
    # 2 * 3 - 1 = 5-token prompt at 3, and 2 * 16 - 1 = 31 at 16; a 5-token prompt (3 short) at 3 is 2 * 3 - 2 = 4
    from helpers import Req

    r7 = Req(0.0, 7, 1, 4, np.array([1, 2], dtype=np.uint64))
    r5 = Req(0.0, 5, 1, 4, np.array([1, 2], dtype=np.uint64))
    assert [r.prompt_tokens for r in _at_block_size([r7, r5], 3)] == [5, 4]
    assert [r.prompt_tokens for r in _at_block_size([r7, r5], 16)] == [31, 29]
    assert [(r.prompt_tokens, r.block_size) for r in _at_block_size([r7], 1)] == [(2, 1)]


def _assert_restored_rows_sum_to_the_links(rows, links) -> None:
    """docs/semantics.md §11: the rows' restored_bytes (every admission's restores, re-admissions after a
    preemption included) sum to the bytes the links moved."""
    assert int(np.asarray(rows, dtype=np.int64).sum()) == sum(lk.restored_bytes for lk in links)   # a run's
    # links, or its summary's bytes (restored_bytes: every link's)


@settings(max_examples=60, deadline=None)
@given(runs())
def test_c_api_calls_equal_python_method_calls(run):
    # the C loop calls the compiled hierarchy through its C API (pcs/cache/_lruhier_api.h) when every method it
    # calls is the hierarchy's own bound C method, through the Python methods when one is wrapped: the C API's
    # functions are those methods' bodies, so both give the same replay, column for column
    reqs, caps, cost, links, kw = run
    c = _run(stepnative.NativeStepEngine, reqs, caps, cost, links, kw)
    py = _run(stepnative.NativeStepEngine, reqs, caps, cost, links, dict(kw, wrap=True))
    assert c[0]._s.c_api is True and py[0]._s.c_api is False
    _assert_same(py, c)


@settings(max_examples=60, deadline=None)
@given(runs())
def test_feeding_one_request_a_call_equals_feeding_chunks(run):
    # the C loop holds each feed's buffers until its requests have reached the queue's head (their rows are read
    # then, not copied at the feed): a request waiting across later feeds -- one request a call, as a fleet feeds
    # -- must replay as when its whole chunk came at once, and as the Python reference
    from pcs.engine.scheduler import StepEngine

    reqs, caps, cost, links, kw = run
    kw = dict(kw, prefill=kw["prefill"] or _Prefill(7e-6, 1e-9))     # a fleet's chunks have prefill tables
    one = _run(stepnative.NativeStepEngine, reqs, caps, cost, links, dict(kw, one_by_one=True))
    _assert_same(_run(StepEngine, reqs, caps, cost, links, kw), one)
    _assert_same(_run(stepnative.NativeStepEngine, reqs, caps, cost, links, kw), one)



def _run_out_of_order(cls, reqs, arrivals, cost, kw):
    """_run's run on a GPU tier of 16 blocks, the chunks' arrivals then set to ``arrivals`` (in any order: the
    file readers and iter_chunks refuse a decreasing one; a fleet's instance meets one, pcs/fleet/stepclock.py
    _arrivals: the engines take it as arriving with the one before)."""
    from pcs.cache.native import NativeHierarchy
    from pcs.engine.chunks import Chunk, iter_chunks
    from pcs.engine.schedconfig import SchedulerConfig
    from pcs.engine.timing import TimeModel
    from pcs.fleet.stepclock import _one

    h = NativeHierarchy([Tier("gpu", 16, make_policy("lru", 16))], "back")
    cfg = SchedulerConfig(max_num_batched_tokens=kw["budget"], max_num_seqs=8, restore_timeout_per_token_s=0.0)
    lean = {"lean": kw["lean"]} if issubclass(cls, stepnative.NativeStepEngine) else {}
    eng = cls(h, [None], [0], cost, cfg, True, None, no_cache=kw["lean"], skip=True, **lean)
    tm = TimeModel(_Prefill(7e-6, 1e-9))            # a fleet's chunks have prefill tables
    (c,) = iter_chunks(reqs, BlockRules(recompute_last_token=True), tm, False)
    ch = Chunk(c.first_request_id, c.block_size, list(arrivals), c.prompt_tokens, c.output_tokens, c.cacheable,
               c.max_hit_blocks, c.extra_blocks, c.offsets, c.block_hashes, c.prefill_s, c.prefill_offsets, c.decode_s)
    for part in ([_one(ch, r) for r in range(len(ch))] if kw["one_by_one"] else [ch]):
        eng.feed(part)
    return eng, eng.close()


@pytest.mark.parametrize("one_by_one", [False, True])
@pytest.mark.parametrize("lean", [False, True])
def test_an_arrival_out_of_order_is_taken_at_the_latest_one_when_it_reaches_the_queues_head(one_by_one, lean):
    # a request arriving before the one fed ahead of it is taken as arriving then (scheduler.py StepEngine.feed):
    # the C loop takes each request's arrival from its feed's buffer when it reaches the queue's head, clamped by
    # the arrivals before it, across feeds (one request a call) too. By hand: arrivals 0.0, 1.0, 0.4, 0.3 are
    # taken as 0.0, 1.0, 1.0, 1.0; a budget of 32 tokens runs one 32-token prompt a step, so requests 2 and 3 wait
    # behind request 1 (fed, not yet in a slot); each e2e_s is its finish less the arrival taken, under 0.1 s
    # (steps of ~1 ms; from 0.4 or 0.3 it would be ~0.6-0.7 s); finish_s (not kept by the lean no-cache run) and
    # every other value as the Python reference's
    from helpers import req
    from pcs.compute import StepCost
    from pcs.engine.scheduler import StepEngine

    reqs = [req([7 * k, 7 * k + 1], 0.0, prompt=32, out=3, bs=16) for k in range(4)]
    cost = StepCost(weights_active_s=3e-5, weights_total_s=1e-3, kv_seq_s=1e-6, kv_token_s=3e-8, token_s=7e-6,
                    attn_seq_s=2e-6, attn_token_s=1e-8, attn_pair_s=3e-10, layers=80)
    kw = dict(budget=32, one_by_one=one_by_one, lean=lean)
    arrivals = (0.0, 1.0, 0.4, 0.3)
    eng, res = _run_out_of_order(stepnative.NativeStepEngine, reqs, arrivals, cost, kw)
    e2e = list(_values(res.columns["e2e_s"]))
    assert all(0 < t < 0.1 for t in e2e)
    if not lean:
        fin = list(_values(res.columns["finish_s"]))
        assert e2e == [f - a for f, a in zip(fin, (0.0, 1.0, 1.0, 1.0))]
        assert fin[1] < fin[2] < fin[3]               # one prompt a step: they leave in order
        _assert_same(_run_out_of_order(StepEngine, reqs, arrivals, cost, kw), (eng, res))


def _good_feed():
    """The C loop's feed columns (``_stepsched.c`` sched_feed's order) of 2 requests of 32 tokens (blocks of 16):
    2 cacheable blocks each (ids 1, 2 and 3, 4), at most 1 hit, a prefill table of cap + 1 = 2 entries a row, no
    decode blocks."""
    f8, i8 = np.float64, np.int64
    return dict(arr=np.array([0.0, 0.5], f8), prompt=np.array([32, 32], i8), out=np.array([3, 3], i8),
                cache=np.array([2, 2], i8), cap=np.array([1, 1], i8), off=np.array([0, 2, 4], i8),
                hashes=np.array([1, 2, 3, 4], np.uint64), pre=np.array([1e-3, 5e-4, 1e-3, 5e-4], f8),
                preoff=np.array([0, 2, 4], i8), decoff=np.zeros(0, i8), dec=np.zeros(0, np.uint64))


@pytest.mark.parametrize("column, index, value", [
    ("off", 0, -1),             # a row's ids start before the hash buffer
    ("off", 2, 5),              # ... end past it (4 ids)
    ("cache", 1, 3),            # 3 cacheable blocks in a row of 2 ids
    ("cache", 0, -1),
    ("cap", 0, 3),              # a hit cap past the cacheable blocks
    ("cap", 1, -1),
    ("preoff", 1, 3),           # row 1's table (preoff 3, cap + 1 = 2 entries) ends past the table's 4 entries
    ("preoff", 0, -2),          # row 0's starts before the table (read out of bounds before this check)
    ("preoff", 0, 2 ** 63 - 1),     # ... far past it: preoff + cap + 1 wraps below 0 in 64 bits (as above)
])
def test_a_feed_with_offsets_out_of_its_buffers_is_refused(column, index, value):
    # the C loop reads a request's row from the feed's buffers when it reaches the queue's head, so the feed
    # checks every row's offsets and counts against the buffers' lengths first: ValueError, the loop untouched
    # (the same loop then takes the good columns and replays both requests)
    from pcs.cache.native import NativeHierarchy
    from pcs.compute import StepCost
    from pcs.engine.schedconfig import SchedulerConfig

    cost = StepCost(weights_active_s=3e-5, weights_total_s=1e-3, kv_seq_s=1e-6, kv_token_s=3e-8, token_s=7e-6,
                    attn_seq_s=2e-6, attn_token_s=1e-8, attn_pair_s=3e-10, layers=80)
    h = NativeHierarchy([Tier("gpu", 16, make_policy("lru", 16))], "back")
    cfg = SchedulerConfig(max_num_batched_tokens=64, max_num_seqs=8, restore_timeout_per_token_s=0.0)
    eng = stepnative.NativeStepEngine(h, [None], [0], cost, cfg, True, None, no_cache=False, skip=True)
    good = _good_feed()
    bad = dict(good, **{column: good[column].copy()})
    bad[column][index] = value
    with pytest.raises(ValueError, match="feed: inconsistent column lengths or offsets"):
        eng._s.feed(16, *bad.values())
    eng._s.feed(16, *good.values())
    assert eng._s.close() > 0.5 and eng._s.counters()["prefill_steps"] == 2

#: the counters a lean no-cache run keeps (stepnative.NativeStepEngine's ``lean``), as the full run makes them
_LEAN_COUNTERS = ("busy_s", "origin_s", "end_s", "preemptions", "steps", "prefill_steps", "stall_s", "recompute_tokens")


def _assert_lean_equals_full(full, lean):
    """The lean no-cache run's columns (ttft_s, e2e_s, tpot_s, nothing else), counters and request count are the
    full run's."""
    (fe, fr), (le, lr) = full, lean
    assert list(lr.columns) == ["ttft_s", "e2e_s", "tpot_s"] == list(stepnative.LEAN_COLUMNS)
    for name, col in lr.columns.items():
        a, b = _values(fr.columns[name]), _values(col)
        assert b.dtype == np.float64 and np.array_equal(a, b, equal_nan=True), name
    for name in _LEAN_COUNTERS:
        assert getattr(le.stats, name) == getattr(fe.stats, name), name
    assert lr.ledger.num_requests == fr.ledger.num_requests == len(fr.columns["ttft_s"])
    assert len(le.stats.busy_per_s) == 0 and le.stats.in_system_area_s == 0.0      # not made: no bins, no area
    assert le._last_event_s() == fe._last_event_s() == max(fr.columns["finish_s"], default=None)


@settings(max_examples=100, deadline=None)
@given(runs())
def test_lean_no_cache_run_keeps_the_full_runs_values(run):
    # the no-cache run is lean by default (only what the replay's summary reads of it: _stepsched.c "the lean
    # no-cache run"); the full run equals the Python reference (the tests above), so the lean one must equal it
    # in everything it keeps -- tiny GPU tiers preempt and truncate, so the re-admissions are covered
    # The lean run counts its GPU slots in the loop (_stepsched.c "the no-cache run's slots") when it is on the
    # hierarchy's C API; the full run and a lean run told not to count call the hierarchy: all three must agree
    reqs, caps, cost, links, kw = run
    kw = dict(kw, no_cache=True, block_bytes=kw["block_bytes"][:1])
    full = _run(stepnative.NativeStepEngine, reqs, caps[:1], cost, links[:1], kw)
    lean = _run(stepnative.NativeStepEngine, reqs, caps[:1], cost, links[:1], dict(kw, lean=True))
    assert lean[0]._slots_counted == lean[0]._s.c_api and not full[0]._slots_counted
    _assert_lean_equals_full(full, lean)
    _assert_lean_equals_full(full, _run(_HierarchySlots, reqs, caps[:1], cost, links[:1], dict(kw, lean=True)))


class _HierarchySlots(stepnative.NativeStepEngine):
    """NativeStepEngine whose lean no-cache run calls the hierarchy for its GPU slots (no count of its own)."""

    _count_slots = False


def _slot_engine(cls=stepnative.NativeStepEngine, gpu_blocks=4, h=None):
    """A lean no-cache engine over a compiled LRU GPU tier of ``gpu_blocks`` (or hierarchy ``h``)."""
    from pcs.cache.native import NativeHierarchy
    from pcs.compute import StepCost
    from pcs.engine.schedconfig import SchedulerConfig

    cost = StepCost(weights_active_s=3e-5, weights_total_s=1e-3, kv_seq_s=1e-6, kv_token_s=3e-8, token_s=7e-6,
                    attn_seq_s=2e-6, attn_token_s=1e-8, attn_pair_s=3e-10, layers=80)
    cfg = SchedulerConfig(max_num_batched_tokens=256, max_num_seqs=8, restore_timeout_per_token_s=0.0)
    h = h or NativeHierarchy([Tier("gpu", gpu_blocks, make_policy("lru", gpu_blocks))])
    return cls(h, [None], [0], cost, cfg, no_cache=True)


def test_the_no_cache_runs_counted_slots_wait_truncate_and_free_as_the_hierarchy():
    # By hand (docs/semantics.md §5, a GPU tier of 4 blocks of 16 tokens, nothing cached): A (64 tokens, 1 output
    # token) takes the 4 slots and finishes at its prefill's end; B (16 tokens), arriving with it, needs 1 slot and
    # none is free, so it waits for A's finish: B's first token comes after A's end. C (96 tokens: 6 blocks, more
    # than the tier) is admitted truncated to the 4 slots once the tier is free (it does not wait for ever), and
    # finishes. The same run with the hierarchy counting gives the same columns and counters.
    from helpers import req
    from pcs.engine.chunks import iter_chunks

    reqs = [req([1, 2, 3, 4], 0.0, prompt=64, out=1, bs=16), req([5], 0.0, prompt=16, out=1, bs=16),
            req([6, 7, 8, 9, 10, 11], 1.0, prompt=96, out=1, bs=16)]
    done = []
    for cls in (stepnative.NativeStepEngine, _HierarchySlots):
        eng = _slot_engine(cls)
        for ch in iter_chunks(reqs, BlockRules(), None, False):
            eng.feed(ch)
        done.append((eng, eng.close()))
    (ce, cr), (he, hr) = done
    assert ce._slots_counted and not he._slots_counted
    ttft, e2e = cr.columns["ttft_s"], cr.columns["e2e_s"]
    assert ttft[0] == e2e[0] and ttft[1] > e2e[0] > 0           # B waits for A's 4 slots
    assert 1.0 < 1.0 + e2e[2] < 2.0                             # C (arrives at 1 s): truncated, admitted, done
    for name in stepnative.LEAN_COLUMNS:
        assert np.array_equal(cr.columns[name], hr.columns[name], equal_nan=True), name
    assert ce.stats == he.stats and ce._last_event_s() == he._last_event_s()
    assert ce.h._h.gpu_held() == he.h._h.gpu_held() == 0


def test_slots_are_counted_only_from_an_empty_gpu_tier_and_without_decode_blocks():
    from pcs.cache.native import NativeHierarchy

    h = NativeHierarchy([Tier("gpu", 4, make_policy("lru", 4))])
    a = h.start([42], 1, 1, 0)                 # one block cached: resident on the GPU tier
    h.prefill_done(a)
    h.finish(a)
    assert not _slot_engine(h=h)._slots_counted      # the hierarchy is called (a resident block: not an empty tier)
    eng = _slot_engine()
    assert eng._slots_counted
    with pytest.raises(ValueError, match="capacity"):
        eng._s.count_slots(-1)
    i8 = np.int64
    rows = (np.zeros(1), np.array([16], i8), np.array([1], i8), np.array([1], i8), np.array([0], i8),
            np.array([0, 1], i8), np.array([5], np.uint64), np.zeros(0), np.zeros(0, i8))
    with pytest.raises(ValueError, match="decode blocks"):
        eng._s.feed(16, *rows, np.array([0, 1], i8), np.array([9], np.uint64))
    with pytest.raises(RuntimeError, match="before every fed request"):
        eng._s.feed(16, *rows, np.zeros(0, i8), np.zeros(0, np.uint64))
        eng._s.columns()


def test_lean_is_the_no_cache_runs_default_and_refused_with_a_cache():
    from pcs.cache.native import NativeHierarchy
    from pcs.compute import StepCost
    from pcs.engine.schedconfig import SchedulerConfig

    cost = StepCost(weights_active_s=3e-5, weights_total_s=1e-3, kv_seq_s=1e-6, kv_token_s=3e-8, token_s=7e-6,
                    attn_seq_s=2e-6, attn_token_s=1e-8, attn_pair_s=3e-10, layers=80)
    cfg = SchedulerConfig(max_num_batched_tokens=64, max_num_seqs=8, restore_timeout_per_token_s=0.0)

    def engine(**kw):
        return stepnative.NativeStepEngine(NativeHierarchy([Tier("gpu", 20, make_policy("lru", 20))]), [None], [0],
                                           cost, cfg, **kw)

    assert engine(no_cache=True)._lean and not engine()._lean and not engine(no_cache=True, lean=False)._lean
    with pytest.raises(ValueError, match="lean"):
        engine(lean=True)


def test_lean_no_cache_run_meets_the_span_limit_as_the_full_run():
    # the lean run keeps no busy bins, but a run past 366 days is the same one-line ValueError (busy_slow)
    from helpers import req
    from pcs.compute import StepCost

    cost = StepCost(weights_active_s=3e-5, weights_total_s=1e-3, kv_seq_s=1e-6, kv_token_s=3e-8, token_s=7e-6,
                    attn_seq_s=2e-6, attn_token_s=1e-8, attn_pair_s=3e-10, layers=80)
    kw = dict(budget=64, seqs=8, fallback=True, max_preemptions=2, decode=False, skip=True, write_policy="back",
              no_cache=True, block_bytes=[0], prefill=_Prefill(7e-6, 1e-9), last_token=True)
    near = [req([1, 2], 0.0, prompt=32, out=4, bs=16), req([3, 4], 3e5, prompt=32, out=4, bs=16)]   # folds the bins
    _assert_lean_equals_full(_run(stepnative.NativeStepEngine, near, [6], cost, [None], kw),
                             _run(stepnative.NativeStepEngine, near, [6], cost, [None], dict(kw, lean=True)))
    far = [req([1, 2], 0.0, prompt=32, out=4, bs=16), req([3, 4], 4e7, prompt=32, out=4, bs=16)]
    msgs = []
    for lean in (False, True):
        with pytest.raises(ValueError, match=r"ran past 366 days \(31,622,400 s\) after the first arrival") as err:
            _run(stepnative.NativeStepEngine, far, [6], cost, [None], dict(kw, lean=lean))
        msgs.append(str(err.value))
    assert msgs[0] == msgs[1]


def test_the_columns_are_the_loops_own_arrays_handed_out_once():
    # close() takes the C loop's per-request columns as they are (numpy arrays over the loop's own bytes, no copy):
    # one per request, of the reference's types ('q' int64, 'd' float64, 'b' truncated), and the loop then refuses
    # to run on (it no longer owns the buffers it would grow)
    from helpers import req
    from pcs.compute import StepCost

    reqs = [req([7 * k, 7 * k + 1], 0.5 * k, prompt=32, out=3, bs=16) for k in range(3)]
    cost = StepCost(weights_active_s=3e-5, weights_total_s=1e-3, kv_seq_s=1e-6, kv_token_s=3e-8, token_s=7e-6,
                    attn_seq_s=2e-6, attn_token_s=1e-8, attn_pair_s=3e-10, layers=80)
    kw = dict(budget=64, seqs=8, fallback=True, max_preemptions=2, decode=False, skip=True, write_policy="back",
              no_cache=False, block_bytes=[0], prefill=None, last_token=True)
    eng, res = _run(stepnative.NativeStepEngine, reqs, [16], cost, [None], kw)
    for name in ("hit_blocks", "ttft_s", "truncated", "tpot_s", "hit_tokens_gpu"):
        col = res.columns[name]
        code = {"truncated": "b"}.get(name, "d" if name.endswith("_s") else "q")
        assert isinstance(col, np.ndarray) and len(col) == 3 and col.dtype == np.dtype(code), name
    # 3 requests of 32 tokens 0.5 s apart, 3 output tokens each: 3 steps of at most ~1.1 ms each (weights 1 ms, the
    # rest microseconds), so each finishes within 0.1 s of its arrival, before the next one arrives
    assert all(a < f < a + 0.1 for f, a in zip(res.columns["finish_s"], (0.0, 0.5, 1.0)))
    with pytest.raises(RuntimeError, match="handed out its columns"):
        eng._s.close()


class _Reserving(stepnative.NativeStepEngine):
    """NativeStepEngine whose C loop is told, before its first feed, that ``ahead`` requests will come."""

    ahead = 0

    def feed(self, chunk):
        if not self._fed:
            self._s.reserve(self.ahead)
        return super().feed(chunk)


@pytest.mark.parametrize("ahead, one_by_one", [(10, False), (0, True), (2, True), (10, True)])
def test_columns_held_ahead_are_cut_to_the_requests_fed(ahead, one_by_one):
    # the C loop's columns may hold rows past the requests fed (reserve(): the trace's total, or 1.5x growth when a
    # fleet feeds one request a call); columns() hands out exactly one row per request fed, its values the run's.
    # By hand: 3 requests of 32 tokens = 2 full blocks of 16 (cacheable 2), distinct block ids (7k, 7k + 1), so no
    # hit (hit_blocks 0, missed_blocks 2, restored_bytes 0, not truncated); 3 output tokens each on a ~1 ms step,
    # arrivals 0.5 s apart: each finishes within 0.1 s of its arrival, so TTFT and e2e are < 0.1 s; the prefill
    # table's no-cache time a x 32 + b x 32 x 32 (the input column the loop's feed copies beside)
    from helpers import req
    from pcs.compute import StepCost

    reqs = [req([7 * k, 7 * k + 1], 0.5 * k, prompt=32, out=3, bs=16) for k in range(3)]
    cost = StepCost(weights_active_s=3e-5, weights_total_s=1e-3, kv_seq_s=1e-6, kv_token_s=3e-8, token_s=7e-6,
                    attn_seq_s=2e-6, attn_token_s=1e-8, attn_pair_s=3e-10, layers=80)
    kw = dict(budget=64, seqs=8, fallback=True, max_preemptions=2, decode=False, skip=True, write_policy="back",
              no_cache=False, block_bytes=[0], prefill=_Prefill(7e-6, 1e-9), last_token=True, one_by_one=one_by_one)
    cls = type("R", (_Reserving,), {"ahead": ahead})
    eng, res = _run(cls, reqs, [16], cost, [None], kw)
    c = {k: list(_values(v)) for k, v in res.columns.items()}
    assert all(len(v) == 3 for v in res.columns.values())
    assert c["hit_blocks"] == [0, 0, 0] and c["missed_blocks"] == [2, 2, 2] and c["truncated"] == [0, 0, 0]
    assert c["restored_bytes"] == [0, 0, 0] and c["prompt_tokens"] == [32, 32, 32]
    assert all(a < f < a + 0.1 for f, a in zip(c["finish_s"], (0.0, 0.5, 1.0)))
    assert all(0 < t < 0.1 for t in c["ttft_s"]) and all(0 < t < 0.1 for t in c["e2e_s"])
    assert c["prefill_no_cache_s"] == pytest.approx([7e-6 * 32 + 1e-9 * 32 * 32] * 3)    # _Prefill, nothing cached
    _assert_same(_run(stepnative.NativeStepEngine, reqs, [16], cost, [None], kw), (eng, res))


def _three_requests_reserved(ahead):
    """The hand-worked run of test_columns_held_ahead_are_cut_to_the_requests_fed, ``ahead`` rows reserved."""
    from helpers import req
    from pcs.compute import StepCost

    reqs = [req([7 * k, 7 * k + 1], 0.5 * k, prompt=32, out=3, bs=16) for k in range(3)]
    cost = StepCost(weights_active_s=3e-5, weights_total_s=1e-3, kv_seq_s=1e-6, kv_token_s=3e-8, token_s=7e-6,
                    attn_seq_s=2e-6, attn_token_s=1e-8, attn_pair_s=3e-10, layers=80)
    kw = dict(budget=64, seqs=8, fallback=True, max_preemptions=2, decode=False, skip=True, write_policy="back",
              no_cache=False, block_bytes=[0], prefill=_Prefill(7e-6, 1e-9), last_token=True)
    return _run(type("R", (_Reserving,), {"ahead": ahead}), reqs, [16], cost, [None], kw)


def test_a_dead_results_columns_are_the_next_runs_pages():
    in_fresh_process(__file__, "_a_dead_results_columns_are_the_next_runs_pages")


def _a_dead_results_columns_are_the_next_runs_pages():
    # pcs/engine/_stepcols.h, pcs/_kept.h: 20,000 rows reserved make each 8-byte column 160,000 B, past
    # KEPT_MIN_BYTES (131,072), so a mapping of ceil(160,000 / 4,096) = 40 pages = 163,840 B; the int8 column
    # (20,000 B) is malloc'd. Dropping the result keeps the mappings (the pool grows by 163,840 B each); the same run
    # again takes those very mappings (the same addresses: each kept one is an exact fit) and the pool shrinks back;
    # the values are the hand-worked ones of the test above (3 rows; no hit, 2 missed blocks each, 32 prompt tokens).
    import gc

    mod = stepnative._stepsched

    def mapped(res):
        cols = [v for v in res.columns.values() if isinstance(getattr(getattr(v, "base", None), "obj", None), mod.Column)]
        return {v.ctypes.data for v in cols if v.itemsize == 8}, len([v for v in cols if v.itemsize == 8])

    gc.collect()
    mod.kept_clear()             # an empty pool: earlier tests' columns could fit this run's, or fill the pool
    eng, res = _three_requests_reserved(20000)
    first, n8 = mapped(res)
    assert n8 >= 10 and len(first) == n8                       # every 8-byte column of the loop: its own mapping
    if getattr(res, "latency", None) is not None:
        res.latency.get()    # the summary's percentiles, made on a worker that holds the columns until it is done
    gc.collect()
    before = mod.kept_bytes()
    del eng, res                                  # the engine holds the columns too
    gc.collect()
    assert mod.kept_bytes() - before == n8 * 163840
    _, res = _three_requests_reserved(20000)
    again, _ = mapped(res)
    assert again == first
    assert mod.kept_bytes() == before
    c = {k: list(_values(v)) for k, v in res.columns.items()}
    assert all(len(v) == 3 for v in res.columns.values())
    assert c["hit_blocks"] == [0, 0, 0] and c["missed_blocks"] == [2, 2, 2] and c["truncated"] == [0, 0, 0]
    assert c["restored_bytes"] == [0, 0, 0] and c["prompt_tokens"] == [32, 32, 32]
    assert len(res.columns["hit_blocks"].base.obj) == 3 * 8    # len(): the bytes of the rows handed out, not reserved


def test_small_columns_are_not_mapped():
    in_fresh_process(__file__, "_small_columns_are_not_mapped")


def _small_columns_are_not_mapped():
    # below KEPT_MIN_BYTES (10 rows reserved: 80 B a column) a column is malloc'd as a bytearray's bytes were: a
    # dead result's columns leave the pool as it was (no mapping each: vm.max_map_count)
    import gc

    mod = stepnative._stepsched
    gc.collect()
    before = mod.kept_bytes()
    eng, res = _three_requests_reserved(10)
    assert all(len(v) == 3 for v in res.columns.values())
    del eng, res
    gc.collect()
    assert mod.kept_bytes() == before


def test_preemption_and_decode_blocks_equal_reference():
    # a conversation whose turns grow on a GPU tier of 6 blocks: the running requests outgrow it while decoding,
    # so the youngest is preempted (vLLM FCFS) and re-admitted; both loops must agree on every column
    from helpers import req
    from pcs.compute import StepCost
    from pcs.engine.scheduler import StepEngine

    reqs = [req(list(range(100 * k, 100 * k + 2)), 0.001 * k, prompt=2 * 16, out=40, bs=16) for k in range(6)]
    cost = StepCost(weights_active_s=3e-5, weights_total_s=1e-3, kv_seq_s=1e-6, kv_token_s=3e-8, token_s=7e-6,
                    attn_seq_s=2e-6, attn_token_s=1e-8, attn_pair_s=3e-10, layers=80)
    kw = dict(budget=64, seqs=8, fallback=True, max_preemptions=2, decode=True, skip=True, write_policy="back",
              no_cache=False, block_bytes=[0, 0], prefill=_Prefill(7e-6, 1e-9), last_token=True)
    py = _run(StepEngine, reqs, [6, 20], cost, [None, None], kw)
    assert py[0].stats.preemptions > 0, "the case must preempt"
    _assert_same(py, _run(stepnative.NativeStepEngine, reqs, [6, 20], cost, [None, None], kw))


def test_requests_finishing_in_one_step_leave_in_admission_order():
    # 40 requests arrive together (2 full blocks of 16 tokens each, distinct ids, 5 output tokens): one step of
    # 40 x 32 = 1280 tokens prefills them all, so the 40 finish at the same step and each needs its third block at
    # the same step (its 33rd token). Both event queues then hold 40 entries with one step, ordered by admission
    # (seq): one bucket of the compiled loop's ring of steps, a list 40 long. Finishing in admission order
    # releases request k's blocks before request k + 1's, so the GPU tier's LRU order (least recent first, as
    # LRUPolicy.order lists it) holds request 0's two blocks first and request 39's last; the finish times are
    # equal. The Python reference (heapq of tuples) must agree on every column and on the tiers' order.
    from helpers import req
    from pcs.compute import StepCost
    from pcs.engine.scheduler import StepEngine

    n = 40
    reqs = [req([1000 + 2 * k, 1001 + 2 * k], 0.0, prompt=2 * 16, out=5, bs=16) for k in range(n)]
    cost = StepCost(weights_active_s=3e-5, weights_total_s=1e-3, kv_seq_s=1e-6, kv_token_s=3e-8, token_s=7e-6,
                    attn_seq_s=2e-6, attn_token_s=1e-8, attn_pair_s=3e-10, layers=80)
    kw = dict(budget=n * 32, seqs=64, fallback=True, max_preemptions=2, decode=False, skip=True,
              write_policy="back", no_cache=False, block_bytes=[0, 0], prefill=None, last_token=True)
    c = _run(stepnative.NativeStepEngine, reqs, [200, 200], cost, [None, None], kw)
    finish = _values(c[1].columns["finish_s"])
    assert len(set(finish.tolist())) == 1 and c[0].stats.steps == 5      # 1 prefill step + 4 decode steps
    order = c[0].h.tiers[0].policy.order()
    assert [sorted(order[2 * k:2 * k + 2]) for k in range(n)] == [[1000 + 2 * k, 1001 + 2 * k] for k in range(n)]
    _assert_same(_run(StepEngine, reqs, [200, 200], cost, [None, None], kw), c)


@pytest.mark.parametrize("skip", [True, False])
def test_a_finish_past_the_event_ring_and_one_within_it_at_the_same_step_leave_in_admission_order(skip):
    # The compiled loop's event queues (pcs/engine/_stepheap.h) keep the entries due within 4096 steps of the last
    # one popped in a ring of steps and the later ones in a heap beside it. A, B, C (2 blocks of 16 tokens each,
    # distinct ids) arrive together; max_num_seqs 2, so C waits for a slot. Step 1 prefills A and B (64 tokens,
    # the budget): A (5000 output tokens) is due to finish at step 1 + 4999 = 5000, more than 4096 steps ahead
    # (the heap); B (1000) at step 1000 (the ring). B finishes at step 1000, C takes its slot: step 1001 prefills
    # C (32 tokens) beside A's decode token, and C (4000 output tokens) is due at 1001 + 3999 = 5000 -- now
    # within the ring's window (from step 1000, the last finish popped). A and C finish together at step 5000:
    # A (admitted first) must leave first, so the GPU tier's LRU order holds B's blocks (step 1000), then A's,
    # then C's. Steps: 1 + 999 decode + 1 + 3999 decode = 5000, two of them prefill steps. The Python reference
    # (a heapq of tuples) must agree on every column.
    from helpers import req
    from pcs.compute import StepCost
    from pcs.engine.scheduler import StepEngine

    reqs = [req([2000 + 2 * k, 2001 + 2 * k], 0.0, prompt=2 * 16, out=out, bs=16)
            for k, out in enumerate((5000, 1000, 4000))]
    cost = StepCost(weights_active_s=3e-5, weights_total_s=1e-3, kv_seq_s=1e-6, kv_token_s=3e-8, token_s=7e-6,
                    attn_seq_s=2e-6, attn_token_s=1e-8, attn_pair_s=3e-10, layers=80)
    kw = dict(budget=64, seqs=2, fallback=True, max_preemptions=2, decode=False, skip=skip, write_policy="back",
              no_cache=False, block_bytes=[0, 0], prefill=None, last_token=True)
    c = _run(stepnative.NativeStepEngine, reqs, [600, 600], cost, [None, None], kw)
    assert (c[0].stats.steps, c[0].stats.prefill_steps) == (5000, 2)
    finish = _values(c[1].columns["finish_s"])
    assert finish[0] == finish[2] > finish[1]
    order = c[0].h.tiers[0].policy.order()
    assert [sorted(order[2 * j:2 * j + 2]) for j in range(3)] == [[2002, 2003], [2000, 2001], [2004, 2005]]
    _assert_same(_run(StepEngine, reqs, [600, 600], cost, [None, None], kw), c)


@pytest.mark.parametrize("skip", [True, False])
def test_preempted_long_decodes_across_the_event_ring_equal_reference(skip):
    # decodes of 1,200-6,500 tokens (finishes due inside and outside the 4096-step ring, pcs/engine/_stepsched.c's
    # event queues) on a GPU tier of 500 blocks of 16 tokens: three running requests outgrow it, so the youngest is
    # preempted and re-admitted, leaving stale entries in the ring and in the heap beside it; decode blocks cached
    from helpers import req
    from pcs.compute import StepCost
    from pcs.engine.scheduler import StepEngine

    outs = (6500, 1200, 5200, 4100, 6000, 3500)
    reqs = [req([3000 + 2 * k, 3001 + 2 * k], 0.05 * k, prompt=2 * 16, out=o, bs=16) for k, o in enumerate(outs)]
    cost = StepCost(weights_active_s=3e-5, weights_total_s=1e-3, kv_seq_s=1e-6, kv_token_s=3e-8, token_s=7e-6,
                    attn_seq_s=2e-6, attn_token_s=1e-8, attn_pair_s=3e-10, layers=80)
    kw = dict(budget=64, seqs=3, fallback=True, max_preemptions=3, decode=True, skip=skip, write_policy="back",
              no_cache=False, block_bytes=[0, 0], prefill=None, last_token=True)
    py = _run(StepEngine, reqs, [500, 2000], cost, [None, None], kw)
    assert py[0].stats.preemptions > 0, "the case must preempt"
    _assert_same(py, _run(stepnative.NativeStepEngine, reqs, [500, 2000], cost, [None, None], kw))


def _same_replay(path: str, **kw) -> None:
    from pcs.engine.api import replay

    ref, fast = replay(path, engine="compiled-hierarchy", **kw), replay(path, **kw)
    assert fast.summary.engine == "compiled-step" and ref.summary.engine == "compiled-hierarchy"
    a, b = ref.summary.to_dict(), fast.summary.to_dict()
    for key in ENGINE_KEYS:
        a.pop(key), b.pop(key)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    ta, tb = ref.requests, fast.requests
    for res in (ref, fast):
        rows = res.requests["restored_bytes"].to_numpy()
        _assert_restored_rows_sum_to_the_links(rows, [res.summary.bytes])
    assert ta.column_names == tb.column_names
    for name in ta.column_names:
        x, y = ta[name].to_numpy(zero_copy_only=False), tb[name].to_numpy(zero_copy_only=False)
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name


@pytest.mark.parametrize("name", ["sample_chat.jsonl", "sample_exact.jsonl", "sample_azure_conv.jsonl",
                                  "sample_tokens.jsonl"])
def test_native_equals_reference_on_samples(name):
    _same_replay(str(ROOT / "traces" / name))
    _same_replay(str(ROOT / "traces" / name), write_policy="through", tiers=["gpu=300blocks", "cpu=2000blocks", "ssd=5000blocks"])


@pytest.mark.parametrize("policy", COMPILED_POLICIES)
def test_native_equals_reference_with_each_compiled_policy(policy):
    """The C step loop over the compiled hierarchy's other policies (pcs/cache/_pol_NAME.c) equals the Python
    step loop over the same hierarchy: the loop only calls the hierarchy, so every policy must agree."""
    _same_replay(str(ROOT / "traces" / "sample_chat.jsonl"), policy=policy, tiers=["gpu=300blocks", "cpu=2000blocks"])


@pytest.mark.skipif(not MOONCAKE.exists(), reason="no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES")
def test_native_equals_reference_on_mooncake():
    _same_replay(str(MOONCAKE))


@pytest.mark.parametrize("model", ["gpt-oss-120b", "gemma-3-27b", "qwen3-next-80b-a3b", "deepseek-v3.2"])
def test_windowed_attention_without_cache_groups_equals_the_python_loop(model):
    """A model with windowed / chunked prefill attention on one full-attention cache (vLLM's hybrid manager
    disabled: every layer keeps every block) runs the C loop, which sums the attention terms of
    pcs.engine.chunkattn; it equals the Python step loop over the same compiled hierarchy."""
    for name in ("sample_chat.jsonl", "sample_tokens.jsonl"):
        _same_replay(str(ROOT / "traces" / name), model=model, hybrid_kv_cache_manager="disabled",
                     tiers=["gpu=40GB", "cpu=200GB"])


@pytest.mark.skipif(not MOONCAKE.exists(), reason="no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES")
def test_windowed_attention_without_cache_groups_on_mooncake():
    _same_replay(str(MOONCAKE), model="gpt-oss-120b", hybrid_kv_cache_manager="disabled",
                 tiers=["gpu=100GB", "cpu=2TB"])


def test_selection_places_only_the_default_configuration():
    # the compiled loop runs the layerwise step scheduler on tiers whose policies are compiled or hosted (a
    # registered plug-in: tests/engine/test_select.py::test_auto_hosts_a_registered_plugin); anything else (other
    # restore policies, retain in front of a policy other than lru / slru) takes the Python loop
    from pcs.engine import select

    tiers = (("gpu", "lru", 100), ("cpu", "lru", 1000))
    pick = lambda **kw: select.choose(select.RunConfig(**{"timing": "modeled", "tiers": tiers, **kw}))[0].name  # noqa
    assert pick(scheduler="layerwise") == "compiled-step"
    assert pick(scheduler="wait") == "compiled-hierarchy"
    assert pick(scheduler="layerwise+chunk-attention") == "compiled-hierarchy"
    assert pick(scheduler=None) == "compiled-hierarchy"
    assert pick(scheduler="layerwise", native="python") == "reference"
    assert pick(scheduler="layerwise", tiers=(("gpu", "slru", 100),)) == "compiled-step"
    assert pick(scheduler="layerwise", tiers=(("gpu", "gdsf", 100), ("cpu", "belady", 100))) == "compiled-step"
    assert pick(scheduler="layerwise", tiers=(("gpu", "gdsf+reuse:2", 100),)) == "compiled-step"
    assert pick(scheduler="layerwise", tiers=(("gpu", "fifo+retain:tokens=0-64,duration=5", 100),)) == "compiled-step"
    two = "fifo+retain:tokens=0-64,duration=5+retain:tokens=64-128,duration=5"     # one retain per tier compiled
    assert pick(scheduler="layerwise", tiers=(("gpu", two, 100),)) == "reference"
    assert select.choose(select.RunConfig("sequential", tiers, scheduler="layerwise"))[0].name != "compiled-step"
    # auto's reason lists the compiled step loop only for runs with the step scheduler
    assert "compiled-step" not in select.choose(select.RunConfig("modeled", tiers))[1]
    assert "not compiled-step: it takes one retain per tier, in front of a compiled eviction policy" in select.choose(
        select.RunConfig("modeled", (("gpu", two, 100),), scheduler="layerwise"))[1]


def test_coarse_busy_bins_and_the_span_limit_equal_reference():
    # arrivals 50,000 s apart run past FINE_LIMIT_S (2 days), so the busy bins fold into 3,600-s bins
    # (SchedulerCounters.add_busy); a run reaching past MAX_SPAN_S (366 days = 31,622,400 s) is the same one-line
    # ValueError from both loops
    from helpers import req
    from pcs.compute import StepCost
    from pcs.engine.scheduler import StepEngine

    cost = StepCost(weights_active_s=3e-5, weights_total_s=1e-3, kv_seq_s=1e-6, kv_token_s=3e-8, token_s=7e-6,
                    attn_seq_s=2e-6, attn_token_s=1e-8, attn_pair_s=3e-10, layers=80)
    kw = dict(budget=64, seqs=8, fallback=True, max_preemptions=2, decode=True, skip=True, write_policy="back",
              no_cache=False, block_bytes=[0, 0], prefill=_Prefill(7e-6, 1e-9), last_token=True)
    reqs = [req(list(range(100 * k, 100 * k + 2)), 50_000.0 * k + 0.3, prompt=32, out=40, bs=16) for k in range(8)]
    py = _run(StepEngine, reqs, [6, 20], cost, [None, None], kw)
    assert py[0].stats.bin_s == 3600
    _assert_same(py, _run(stepnative.NativeStepEngine, reqs, [6, 20], cost, [None, None], kw))
    # past the span limit; past 2**32 s (and int64: the C loop must never see it) the trace is refused first
    for second, needle in ((4e7, r"ran past 366 days \(31,622,400 s\) after the first arrival"),
                           (2.0 ** 62, r"request 1: arrival .* beyond \+-2\*\*32 s"),
                           (1e300, r"request 1: arrival .* beyond \+-2\*\*32 s")):
        far = [req([1, 2], 0.0, prompt=32, out=4, bs=16), req([3, 4], second, prompt=32, out=4, bs=16)]
        msgs = []
        for cls in (StepEngine, stepnative.NativeStepEngine):
            with pytest.raises(ValueError, match=needle) as err:
                _run(cls, far, [6, 20], cost, [None, None], kw)
            msgs.append(str(err.value))
        assert msgs[0] == msgs[1]


def test_a_fold_leaves_no_fine_bin_behind_for_the_coarse_bins_to_find():
    # the C loop keeps its bins past the last one at 0 (so a clock entering a new second only counts it); the fold
    # into 3,600-s bins must then clear the fine bins it leaves. Arrivals (from the first, the origin): 0 s and
    # 100 s (fine bins 0 and 100, a few ms each), 199,900 s (past 172,800 s: the fold; hour 199,900 // 3,600 = 55)
    # and 399,900 s (hour 111): busy in hours 0, 55 and 111 alone, 112 bins. A fine bin 100 left over would show
    # as hour 100 once the bins grow past it.
    from helpers import req
    from pcs.compute import StepCost
    from pcs.engine.scheduler import StepEngine

    cost = StepCost(weights_active_s=3e-5, weights_total_s=1e-3, kv_seq_s=1e-6, kv_token_s=3e-8, token_s=7e-6,
                    attn_seq_s=2e-6, attn_token_s=1e-8, attn_pair_s=3e-10, layers=80)
    kw = dict(budget=64, seqs=8, fallback=True, max_preemptions=2, decode=False, skip=True, write_policy="back",
              no_cache=False, block_bytes=[0, 0], prefill=None, last_token=True)
    reqs = [req([10 * k, 10 * k + 1], t + 0.25, prompt=32, out=4, bs=16)
            for k, t in enumerate((0.0, 100.0, 199_900.0, 399_900.0))]
    c = _run(stepnative.NativeStepEngine, reqs, [6, 20], cost, [None, None], kw)
    bins = np.frombuffer(c[0].stats.busy_per_s, np.float64)
    assert c[0].stats.bin_s == 3600 and len(bins) == 112
    assert np.flatnonzero(bins).tolist() == [0, 55, 111]
    assert bins.sum() == pytest.approx(c[0].stats.busy_s, rel=1e-12)
    _assert_same(_run(StepEngine, reqs, [6, 20], cost, [None, None], kw), c)


def test_steps_over_several_seconds_split_into_the_bins_as_the_reference():
    # a step longer than a second is split over the bins it covers (SchedulerCounters.add_busy): the C loop does so
    # inline once the bins are allocated (the first step allocates them, out of line). 0.1 s per token, nothing
    # else costs: a 32-token prefill is 3.2 s and each decode step 0.1 s. Arrivals 0 s (the origin) and 10 s from
    # it, 4 output tokens each (the prefill gives the first, 3 decode steps): busy [0, 3.5) and [10, 13.5), so
    # bins 0-2 and 10-12 are 1 s each, bins 3 and 13 0.2 + 0.3 = 0.5 s, 14 bins.
    from helpers import req
    from pcs.compute import StepCost
    from pcs.engine.scheduler import StepEngine

    cost = StepCost(weights_active_s=0.0, weights_total_s=0.0, kv_seq_s=0.0, kv_token_s=0.0, token_s=0.1,
                    attn_seq_s=0.0, attn_token_s=0.0, attn_pair_s=0.0, layers=1)
    kw = dict(budget=64, seqs=8, fallback=True, max_preemptions=2, decode=False, skip=True, write_policy="back",
              no_cache=False, block_bytes=[0, 0], prefill=None, last_token=True)
    reqs = [req([10 * k, 10 * k + 1], t + 0.25, prompt=32, out=4, bs=16) for k, t in enumerate((0.0, 10.0))]
    c = _run(stepnative.NativeStepEngine, reqs, [6, 20], cost, [None, None], kw)
    bins = np.frombuffer(c[0].stats.busy_per_s, np.float64)
    want = [1.0, 1.0, 1.0, 0.5] + [0.0] * 6 + [1.0, 1.0, 1.0, 0.5]
    assert c[0].stats.bin_s == 1 and bins.tolist() == pytest.approx(want, abs=1e-12)
    _assert_same(_run(StepEngine, reqs, [6, 20], cost, [None, None], kw), c)


def test_a_link_the_c_loop_does_not_model_falls_back_to_the_python_loop():
    # the table cannot see the links; the runner asks NativeStepEngine (pcs.engine.stepnative.unsupported) and
    # moves the run to the next row, saying why; the numbers are the Python loop's
    from helpers import DyadicLink
    from pcs.cache.native import NativeHierarchy
    from pcs.engine.schedconfig import SchedulerConfig
    from pcs.engine.runner import _Plan, _native_step_or_fallback
    from pcs.engine import select
    from pcs.engine.scheduler import StepEngine
    from helpers import step_cost

    tiers = [Tier("gpu", 8, make_policy("lru", 8)), Tier("cpu", 16, make_policy("lru", 16))]
    cfg = select.RunConfig.of(tiers, "modeled", None, None, "layerwise")
    row, reason = select.choose(cfg)
    assert row.name == "compiled-step"
    plan = _Plan("modeled", cfg, row, reason)
    cls = _native_step_or_fallback(plan, NativeHierarchy(tiers), [None, DyadicLink()], step_cost(attn_pair_s=1e-9),
                                   SchedulerConfig(max_num_batched_tokens=8, max_num_seqs=8))
    assert cls is StepEngine and plan.row.name == "compiled-hierarchy"
    assert "not compiled-step: a link is not a LinkSpec with bandwidth > 0 (found at set-up)" in plan.reason


def test_compiled_step_by_name_runs_with_its_baseline_on_the_compiled_hierarchy():
    """engine="compiled-step" asked for by name (hostile check: it failed, the sequential baseline cannot run
    the step loop): the run is compiled-step, its baseline compiled-hierarchy, numbers as auto's."""
    from pcs.engine.api import replay

    path = str(ROOT / "traces" / "sample_chat.jsonl")
    named, auto = replay(path, engine="compiled-step"), replay(path)
    assert (named.summary.engine, named.summary.baseline_engine) == ("compiled-step", "compiled-hierarchy")
    assert named.summary.hit_ratio == auto.summary.hit_ratio
    assert named.summary.sequential_hit_ratio == auto.summary.sequential_hit_ratio


@pytest.mark.parametrize("max_preemptions, preemptions, outgrown, recompute", [
    (0, 0, 0, 0),    # held whole from the first admission: 16 + 100 - 1 = 115 tokens = 8 blocks > 4 - 1 pinned
    (1, 1, 1, 49),   # re-admitted holding its whole sequence (8 blocks): truncated there
    (5, 1, 1, 49),   # re-admitted growing: 65 tokens = 5 blocks, 4 new > 4 - 1 pinned: truncated there
])
def test_a_readmission_that_outgrows_the_gpu_tier_counts_as_truncated(max_preemptions, preemptions, outgrown,
                                                                       recompute):
    # docs/semantics.md §5, §9. Blocks of 16 tokens; a GPU tier of 4 blocks; one request: a 16-token prompt
    # (block id 1) and 100 output tokens. With max_preemptions 0 it holds all its blocks at its first admission:
    # 1 hit-less block + 7 extra > 4, truncated there and never grows (no preemption). Otherwise its prompt fits
    # (1 block, whole admission); it decodes until its KV holds 4 full blocks (64 tokens) and the next token needs
    # a 5th slot: it preempts itself with 1 + (64 - 16) = 49 tokens out. Re-admitted with prompt 16 + 49 = 65
    # tokens: block 1 is a hit (cached after its prefill; pinned), the rest needs 4 slots (growing: ceil(65/16)
    # - 1) or 7 (whole sequence, max_preemptions 1) of the 3 left: truncated; it recomputes 65 - 16 = 49 tokens.
    # Either way the request counts once in the truncated column; requests_outgrown counts it only when its
    # first admission was whole.
    from helpers import req
    from pcs.compute import StepCost
    from pcs.engine.scheduler import StepEngine

    reqs = [req([1], 0.0, prompt=16, out=100, bs=16)]
    cost = StepCost(weights_active_s=3e-5, weights_total_s=1e-3, kv_seq_s=1e-6, kv_token_s=3e-8, token_s=7e-6,
                    attn_seq_s=2e-6, attn_token_s=1e-8, attn_pair_s=3e-10, layers=80)
    kw = dict(budget=64, seqs=8, fallback=True, max_preemptions=max_preemptions, decode=False, skip=True,
              write_policy="back", no_cache=False, block_bytes=[0], prefill=None, last_token=False)
    py = _run(StepEngine, reqs, [4], cost, [None], kw)
    eng, res = py
    assert list(_values(res.columns["truncated"])) == [1]
    assert res.ledger.requests_truncated == 1
    assert (eng.stats.preemptions, eng.stats.requests_outgrown, eng.stats.recompute_tokens) == (
        preemptions, outgrown, recompute)
    _assert_same(py, _run(stepnative.NativeStepEngine, reqs, [4], cost, [None], kw))


def test_stop_with_makes_groups_of_one_level():
    # a group is one loop and the loops that stop with it (pcs/engine/_stepsched.c stop_with): a twin points to
    # the run's loop once; a chain (a loop with followers following another, or a follower re-pointed) and a
    # loop pointing to itself or to a follower are refused, the links already made left as they were
    from pcs.cache.native import NativeHierarchy
    from pcs.compute import StepCost
    from pcs.engine.schedconfig import SchedulerConfig

    cost = StepCost(weights_active_s=3e-5, weights_total_s=1e-3, kv_seq_s=1e-6, kv_token_s=3e-8, token_s=7e-6,
                    attn_seq_s=2e-6, attn_token_s=1e-8, attn_pair_s=3e-10, layers=80)
    cfg = SchedulerConfig(max_num_batched_tokens=64, max_num_seqs=8, restore_timeout_per_token_s=0.0)
    run, twin, other = (stepnative.NativeStepEngine(NativeHierarchy([Tier("gpu", 16, make_policy("lru", 16))]),
                                                    [None], [0], cost, cfg, True, None, no_cache=False, skip=True)
                        for _ in range(3))
    twin.stop_with(run)
    with pytest.raises(ValueError, match="already stops with another, or others with it"):
        run._s.stop_with(other._s)          # run has a follower: it leads its group
    with pytest.raises(ValueError, match="already stops with another"):
        twin._s.stop_with(other._s)         # twin follows run already
    with pytest.raises(TypeError, match="one that stops with no other"):
        other._s.stop_with(twin._s)         # twin follows another: no chain through it
    with pytest.raises(TypeError, match="another StepScheduler"):
        other._s.stop_with(other._s)
    with pytest.raises(TypeError, match="another StepScheduler"):
        other._s.stop_with(None)
    other._s.stop_with(run._s)              # a second follower of the same loop: one level still
