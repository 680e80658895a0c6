"""Every clock starts at the trace's first arrival (docs/semantics.md §9, clock start): a trace shifted in time,
negative arrivals included, replays as the same run shifted.

First a hand-worked pair through the CLI on every engine that replays modeled timing: two requests 50 s apart
at -100 s / -50 s give the TTFTs and hits of the same two at 0 / 50 s. Then hypothesis: random traces shifted by
+-1, +-1000 and +-1e6 s on the step scheduler (Python loop over the Python and the compiled hierarchy, the C
loop) and the infinite-compute engine (both hierarchies), with links: every per-request column, the ledger, the
step counters and the time-series rows equal, the times on the trace clock (arrival, finish, origin, end, sample
boundaries, links' free times) shifted by exactly the shift. Arrivals, costs and link times are powers of two
(multiples of 2**-32 s below 2**21 s), so every sum is exact and the shifted run equals to the bit.
"""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import DyadicCompute, DyadicLink, invoke, run, step_cost, step_run, traces
from pcs.cache import Tier, make_policy
from pcs.cache.native import available
from pcs.hardware import LinkSpec

COST = step_cost(token_s=2.0 ** -10, weights_s=2.0 ** -8, kv_token_s=2.0 ** -14, attn_pair_s=2.0 ** -16,
                 attn_token_s=2.0 ** -18, layers=4)
NATIVE = available([Tier("gpu", 1, make_policy("lru", 1))])
#: setup 2**-12 s, 2**20 B/s: dyadic restore times (the compiled loop takes a LinkSpec only)
LINK = LinkSpec("dyadic", 2.0 ** 20, 2.0 ** -12, None, None, "a test link")
SHIFTS = (1.0, -1.0, 1000.0, -1000.0, 1e6, -1e6)
#: per-request columns on the trace clock (the rest are durations or counts)
CLOCK_COLUMNS = ("arrival_s", "finish_s")


# -- the hand-worked pair through the CLI --------------------------------------------------------------------

def _pair(tmp_path, t0_ms: int, engine: str, compute: str) -> list[dict]:
    """Requests at t0 and t0 + 50 s (2048 tokens = 4 blocks of 512; the second shares the first three)."""
    path = tmp_path / f"pair_{t0_ms}.jsonl"
    rows = [(t0_ms, [1, 2, 3, 4]), (t0_ms + 50_000, [1, 2, 3, 5])]
    path.write_text("".join(json.dumps({"timestamp": t, "input_length": 2048, "output_length": 10, "hash_ids": h})
                            + "\n" for t, h in rows))
    out = tmp_path / f"ro_{t0_ms}_{engine}_{compute}.csv"
    r = invoke("replay", path, "-q", "--engine", engine, "--compute", compute, "--requests-out", out,
               "--format", "json")
    assert r.exit_code == 0, r.output
    with open(out, newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("engine,compute", [("auto", "step"), ("reference", "step"), ("compiled-hierarchy", "step"),
                                            ("auto", "infinite"), ("reference", "infinite")])
def test_a_pair_at_minus_100_s_is_the_pair_at_0(tmp_path, engine, compute):
    neg, pos = _pair(tmp_path, -100_000, engine, compute), _pair(tmp_path, 0, engine, compute)
    # by hand: the requests are 50 s apart and each prefill takes well under a second, so neither waits; the
    # second finds the first's three leading blocks (1, 2, 3) cached: 3 hit blocks, 3 x 512 = 1536 hit tokens
    assert [(r["hit_blocks"], r["hit_tokens"]) for r in neg] == [("0", "0"), ("3", "1536")]
    assert [(r["hit_blocks"], r["hit_tokens"]) for r in pos] == [("0", "0"), ("3", "1536")]
    assert [float(r["arrival_s"]) for r in neg] == [-100.0, -50.0]
    for a, b in zip(neg, pos):
        assert float(a["ttft_s"]) == pytest.approx(float(b["ttft_s"]), rel=1e-9, abs=1e-9)
        assert float(a["ttft_s"]) < 1.0                 # not the 100 s of a clock that started at 0
        assert float(a["wait_s"]) == float(b["wait_s"]) == 0.0
        assert float(a["finish_s"]) - float(a["arrival_s"]) == pytest.approx(
            float(b["finish_s"]) - float(b["arrival_s"]), rel=1e-9, abs=1e-9)


# -- hypothesis: exact shifts on every engine ---------------------------------------------------------------

@st.composite
def shifted_runs(draw):
    reqs = draw(traces(max_requests=12))
    reqs = [r._replace(arrival_s=round(r.arrival_s * 1024) / 1024) for r in reqs]   # dyadic arrivals
    caps = [draw(st.integers(4, 24)), draw(st.integers(0, 40))]
    bb = [draw(st.sampled_from([256, 4096, 16384]))] * 2
    return reqs, caps, bb, draw(st.sampled_from(SHIFTS))


def _values(col):
    if isinstance(col, np.ndarray):     # the compiled step loop's columns: numpy over its own bytes
        return col
    return np.frombuffer(col, dtype={"q": np.int64, "d": np.float64, "b": np.int8}[col.typecode])


def _assert_columns_shifted(a, b, s: float) -> None:
    """EngineResults ``a`` (the trace) and ``b`` (shifted by ``s``): equal but for the clock columns, + s."""
    assert a.ledger == b.ledger
    assert list(a.columns) == list(b.columns)
    for name in a.columns:
        x, y = _values(a.columns[name]), _values(b.columns[name])
        if name in CLOCK_COLUMNS:
            x = x + s
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name


def _assert_samples_shifted(a, b, s: float) -> None:
    """The time series: the same step and states; the boundaries ``t0 + k x step`` (the step need not be dyadic:
    compared from t0, as the summary prints them, to rounding) and the links' free times moved by ``s``."""
    ra, rb, sa, sb = a.sampler.rows, b.sampler.rows, a.sampler, b.sampler
    assert sa.step_s == sb.step_s and len(ra) == len(rb)
    assert (sa.t0 is None) == (sb.t0 is None)
    for x, y in zip(ra, rb):
        assert y[0] - sb.t0 == pytest.approx(x[0] - sa.t0, rel=1e-12, abs=1e-9)
        assert (tuple(x[1:5]), [f + s for f in x[5]], tuple(x[6:])) == (tuple(y[1:5]), list(y[5]), tuple(y[6:]))


def _step(reqs, caps, bb, native_h: bool, c_loop: bool):
    """The step scheduler over LRU tiers of ``caps`` blocks (the second behind a DyadicLink): the Python loop over
    the Python or the compiled hierarchy, or the C loop (``c_loop``); returns the engine, closed."""
    from pcs.blocks import BlockRules
    from pcs.cache.native import NativeHierarchy
    from pcs.engine.chunks import iter_chunks
    from pcs.engine.schedconfig import SchedulerConfig
    from pcs.engine.stepnative import NativeStepEngine

    if not c_loop:
        return step_run(reqs, caps, COST, budget=8, seqs=4, links=[None, LINK], block_bytes=bb,
                        native=native_h)
    h = NativeHierarchy([Tier(n, c, make_policy("lru", c)) for n, c in zip(("gpu", "cpu"), caps)], "back")
    cfg = SchedulerConfig(max_num_batched_tokens=8, max_num_seqs=4, restore_timeout_per_token_s=0.0)
    eng = NativeStepEngine(h, [None, LINK], bb, COST, cfg, True, None)
    for ch in iter_chunks(reqs, BlockRules(), None, False):
        eng.feed(ch)
    eng.result = eng.close()
    return eng


def _shifted(reqs, s):
    return [r._replace(arrival_s=r.arrival_s + s) for r in reqs]


STEP_ENGINES = [(False, False)] + ([(True, False), (True, True)] if NATIVE else [])


@settings(max_examples=40, deadline=None, derandomize=True)
@given(shifted_runs())
def test_the_step_scheduler_is_shift_invariant(drawn):
    reqs, caps, bb, s = drawn
    for native_h, c_loop in STEP_ENGINES:
        a, b = _step(reqs, caps, bb, native_h, c_loop), _step(_shifted(reqs, s), caps, bb, native_h, c_loop)
        _assert_columns_shifted(a.result, b.result, s)
        _assert_samples_shifted(a.result, b.result, s)
        sa, sb = a.stats, b.stats
        assert (sa.origin_s + s, sa.end_s + s) == (sb.origin_s, sb.end_s)
        assert (sa.busy_s, sa.stall_s, sa.in_system_area_s, sa.busy_per_s.tolist()) == \
            (sb.busy_s, sb.stall_s, sb.in_system_area_s, sb.busy_per_s.tolist())


@settings(max_examples=40, deadline=None, derandomize=True)
@given(shifted_runs())
def test_infinite_compute_is_shift_invariant(drawn):
    from pcs.cache.native import NativeHierarchy

    reqs, caps, bb, s = drawn
    kinds = [None] + ([NativeHierarchy] if NATIVE else [])
    for kind in kinds:
        kw = dict(timing="modeled", block_bytes=bb, compute=DyadicCompute(), links=[None, DyadicLink()])
        if kind is None:
            (a, _), (b, _) = run(reqs, caps, **kw), run(_shifted(reqs, s), caps, **kw)
        else:
            a, b = (_native_run(kind, r, caps, **kw) for r in (reqs, _shifted(reqs, s)))
        _assert_columns_shifted(a, b, s)
        _assert_samples_shifted(a, b, s)


def _native_run(kind, reqs, caps, timing, block_bytes, compute, links):
    from helpers import UNIT_RULES
    from pcs.engine.chunks import iter_chunks
    from pcs.engine.engine import ReplayEngine
    from pcs.engine.timing import TimeModel

    h = kind([Tier(n, c, make_policy("lru", c)) for n, c in zip(("gpu", "cpu"), caps)], "back")
    eng = ReplayEngine(h, timing, links=links, block_bytes=block_bytes)
    for ch in iter_chunks(reqs, UNIT_RULES, TimeModel(compute)):
        eng.feed(ch)
    return eng.close()


@pytest.mark.parametrize("engine", ["auto", "reference"])
def test_the_366_day_limit_counts_from_the_first_arrival(tmp_path, engine):
    """Arrivals near -4e9 s (within +-2**32 s of the trace's zero) spanning 50 s: the step scheduler's clock starts
    at the first arrival, so the run spans seconds, not the 4e9 s to the trace's zero (once refused as past 366
    days). The hits are the pair's (3 blocks, 1536 tokens); the TTFTs those of the pair at 0 / 50 s to the
    rounding of a time near 4e9 s (its float64 step is 2**-21 s, about 0.5 us)."""
    far, zero = _pair(tmp_path, -4_000_000_000_000, engine, "step"), _pair(tmp_path, 0, engine, "step")
    assert [(r["hit_blocks"], r["hit_tokens"]) for r in far] == [("0", "0"), ("3", "1536")]
    for a, b in zip(far, zero):
        assert float(a["ttft_s"]) == pytest.approx(float(b["ttft_s"]), abs=2e-6)
