"""The time-series sampler: a fixed step, at most max_samples samples, the state at each boundary."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pcs.engine.series import Sampler, _fit, _last_boundary, sequential_samples


def test_boundaries_state_and_doubling_by_hand():
    s = Sampler(base_step_s=1.0, max_samples=4)
    state = {"v": "a"}
    snap = lambda: (state["v"],)  # noqa: E731 - the state between two calls is constant
    assert s.take(10.0, snap) == 11.0                      # t0 = 10: boundary 10 recorded
    state["v"] = "b"
    assert s.take(12.5, snap) == 13.0                      # boundaries 11 and 12 see state b
    assert s.rows == [(10.0, "a"), (11.0, "b"), (12.0, "b")]
    state["v"] = "c"
    # 17 - 10 = 7 s needs 8 one-second samples > 4: step 2 s, keep 10 and 12, add 14 and 16
    assert s.take(17.0, snap) == 18.0
    assert s.step_s == 2.0 and s.rows == [(10.0, "a"), (12.0, "b"), (14.0, "c"), (16.0, "c")]
    state["v"] = "d"
    # 30 - 10 = 20 s: step 4 needs 6, step 8 needs 3: keep 10 (index 0 of every halving), add 18 and 26
    assert s.take(30.0, snap) == 34.0
    assert s.step_s == 8.0 and s.rows == [(10.0, "a"), (18.0, "d"), (26.0, "d")]


def test_bounded_whatever_the_length():
    s = Sampler(base_step_s=0.001, max_samples=512)
    t = 0.0
    for i in range(20_000):
        t += 0.37 * (1 + i % 5)
        if t >= s.next_s:
            s.take(t, lambda: ())
    assert len(s.rows) <= 512 and s.step_s == 0.001 * 2 ** round(__import__("math").log2(s.step_s / 0.001))
    # the kept boundaries are the grid t0 + k x step, k = 0, 1, ...
    assert [round((r[0] - s.t0) / s.step_s, 9) for r in s.rows] == list(range(len(s.rows)))
    assert s.rows[-1][0] <= t < s.next_s


def test_presize_by_hand():
    # base 1 s, 4 samples: a span 10 -> 30 (20 s) needs step 8 (step 4 would need 6 samples); the same rows
    # as test_boundaries_state_and_doubling_by_hand reaches by doubling (there the calls at 12.5 and 17 come
    # before the next boundary 18 here: an engine makes 2 calls instead of 4)
    s = Sampler(base_step_s=1.0, max_samples=4)
    s.presize(10.0, 30.0)
    assert s.step_s == 8.0
    assert s.take(10.0, lambda: ("a",)) == 18.0
    assert s.take(30.0, lambda: ("d",)) == 34.0
    assert s.step_s == 8.0 and s.rows == [(10.0, "a"), (18.0, "d"), (26.0, "d")]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 50.0, allow_nan=False), min_size=1, max_size=60), st.integers(2, 6),
       st.sampled_from([0.001, 0.25, 1.0]))
# found on main: the doubling sampler counted boundaries by the rounded-down quotient (step 1.0, 3 rows > 2)
@example(gaps=[14.264324267410204, 2.0, 0.5], max_samples=2, base=0.25)
def test_presized_equals_doubling(gaps, max_samples, base):
    # check points at increasing times; each sampler is called, as an engine calls it, only at a check point
    # at or after its next boundary; the state is the check point's index. The presized sampler (span: the
    # first and the last check point) keeps the same rows and ends at the same step.
    times = np.cumsum(gaps).tolist()
    plain, sized = Sampler(base, max_samples), Sampler(base, max_samples)
    sized.presize(times[0], times[-1])
    for k, t in enumerate(times):
        for s in (plain, sized):
            if t >= s.next_s:
                s.take(t, lambda: (k,))
    assert (sized.step_s, sized.rows, sized.next_s) == (plain.step_s, plain.rows, plain.next_s)


T0 = 14.264324267410204
NOW = T0 + 2.0   # 16.264324267410203: the sum rounds down, so NOW - T0 is a hair under 2


def test_last_boundary_counts_by_the_row_times_not_the_quotient():
    # NOW - T0 = 1.9999999999999991 < 2, so the quotient's int is 1, yet boundary 2 at step 1 is T0 + 2 * 1.0,
    # the very sum NOW is: it is <= NOW, the last boundary is 2 (3 boundaries); at step 0.25 it is 8 (T0 + 8 *
    # 0.25 == T0 + 2.0); at step 2 it is 1 (T0 + 1 * 2.0)
    assert NOW - T0 < 2.0 and int((NOW - T0) / 1.0) == 1
    assert T0 + 2 * 1.0 == NOW
    assert _last_boundary(T0, 1.0, NOW) == 2
    assert _last_boundary(T0, 0.25, NOW) == 8 and _last_boundary(T0, 2.0, NOW) == 1
    # a time just before a boundary, and exactly on one: 10 + 2.5 = 12.5 is exact
    assert _last_boundary(10.0, 0.5, 12.49) == 4 and _last_boundary(10.0, 0.5, 12.5) == 5
    assert _last_boundary(10.0, 0.5, 10.0) == 0


def test_never_more_rows_than_max_samples_by_hand():
    # base 0.25 s, 2 samples, calls at T0 and NOW. Boundaries <= NOW (T0 + k x step <= NOW): step 0.25 -> 9
    # (k = 0..8), 0.5 -> 5, 1 -> 3, all > 2; step 2 -> 2 (T0 and T0 + 2.0 == NOW). So the step is 2.0, the rows
    # T0 (state "a") and NOW (state "b"), the next boundary T0 + 2 x 2.0. (The rounded quotient stopped at step 1,
    # 1.999... -> 1 + 1 = 2 boundaries, then recorded 3 rows.)
    s = Sampler(base_step_s=0.25, max_samples=2)
    assert s.take(T0, lambda: ("a",)) == T0 + 0.25
    assert s.take(NOW, lambda: ("b",)) == T0 + 2 * 2.0
    assert s.step_s == 2.0 and s.rows == [(T0, "a"), (NOW, "b")]
    sized = Sampler(base_step_s=0.25, max_samples=2)   # presize counts the same way: step 2 at once
    sized.presize(T0, NOW)
    assert sized.step_s == 2.0


def test_fit_by_hand_including_a_huge_quotient():
    # from step 0.25, 2 samples: 9, 5, 3 boundaries <= NOW at steps 0.25, 0.5, 1; 2 at step 2 -> 3 doublings, last 1
    assert _fit(T0, 0.25, 2, NOW) == (3, 1)
    # 1e20 s at 0.001 s, 4 samples: step 0.001 x 2^74 = 1.89e19 s leaves 1e20 / 1.89e19 = 5.3 -> 6 boundaries > 4,
    # 2^75 (3.78e19 s) 2.6 -> 3: 75 doublings, last index 2 (the count never walks from a quotient of 1e23)
    assert _fit(0.0, 0.001, 4, 1e20) == (75, 2)
    with pytest.raises(OverflowError):
        _fit(0.0, 0.001, 4, float("inf"))


@settings(max_examples=300, deadline=None)
@given(st.floats(0.0, 1e4, allow_nan=False), st.lists(st.floats(0.0, 20.0, allow_nan=False), max_size=40),
       st.integers(2, 5), st.sampled_from([0.001, 0.1, 0.25, 1.0]))
@example(T0, [2.0], 2, 0.25)
def test_rows_stay_within_max_samples_and_on_the_grid(t0, gaps, max_samples, base):
    # after every call: at most max_samples rows, each the float t0 + k x step_s (k = 0, 1, ...), all <= the time
    # taken, and the next boundary past it
    s, t = Sampler(base, max_samples), t0
    for g in [0.0, *gaps]:
        t += g
        if t >= s.next_s:
            s.take(t, lambda: ())
            assert 1 <= len(s.rows) <= max_samples
            assert [r[0] for r in s.rows] == [s.t0 + k * s.step_s for k in range(len(s.rows))]
            assert s.rows[-1][0] <= t < s.next_s


def test_series_payload_by_hand():
    import numpy as np
    import pytest

    from pcs.engine.series import series_payload

    s = Sampler(base_step_s=1.0)
    # the last column: when each tier's link is free (the cpu link is busy until 6.5 at the 6 s sample)
    s.t0, s.rows = 5.0, [(5.0, 0, 0, (0, 0), (0, 0), (0.0, 0.0)),
                         (6.0, 2, 1, (3, 1), (0, 16), (0.0, 6.5)),
                         (7.0, 3, 0, (4, 2), (0, 40), (0.0, 6.5))]
    tiers = [{"name": "gpu", "bytes_per_block": 10, "bytes_per_block_by_component": {"a": 6, "b": 4},
              "link_bandwidth_bps": None},
             {"name": "cpu", "bytes_per_block": 8, "bytes_per_block_by_component": {"a": 8},
              "link_bandwidth_bps": 100.0}]
    # finishes: request 0 at 5.5 (before the 6 s sample), request 1 at 7.0 (a sample at 7.0 is taken before
    # events at 7.0), request 2 at 9, request 3 at 9.5
    out = series_payload(s, np.array([10, 20, 30, 40]), np.array([0, 5, 15, 40]),
                         np.array([5.5, 7.0, 9.0, 9.5]), tiers).to_dict()
    assert out["t_s"] == [0.0, 1.0, 2.0] and out["step_s"] == 1.0
    # requests admitted by each sample: 0, 2 (10 + 20 prompt, 0 + 5 hit), 3 (+30 prompt, +15 hit); the 4th is
    # after the last sample
    assert out["hit_ratio"] == [None, pytest.approx(5 / 30), pytest.approx(15 / 30)]
    assert out["hit_ratio_cumulative"] == [None, pytest.approx(5 / 30), pytest.approx(20 / 60)]
    assert out["resident_bytes"] == {"gpu": [0, 30, 40], "cpu": [0, 8, 16]}
    assert out["resident_bytes_by_component"] == {"gpu": {"a": [0, 18, 24], "b": [0, 12, 16]}}  # cpu: one component
    assert out["restore_bps"] == {"cpu": [0.0, 16.0, 24.0]} and out["link_bandwidth_bps"] == {"cpu": 100.0}
    # running = admitted - finished before the boundary: 0; 2 - 1; 3 - 1
    assert out["waiting_requests"] == [0, 1, 0] and out["running_requests"] == [0, 1, 2]
    seq = series_payload(s, np.array([10, 20, 30, 40]), np.array([0, 5, 15, 40]), np.full(4, np.nan), tiers)
    assert seq.running_requests == (0, 0, 0)   # sequential timing: nothing runs between samples
    assert out["restore_backlog_s"] == {"cpu": [0.0, 0.5, 0.0]}


def test_engine_samples_waiting_running_and_resident_by_hand():
    """Modeled timing, one GPU tier of 28 blocks, 4-token blocks, prefill 1 ms/token, decode 10 ms/token.

    r0 (t = 0, blocks 1 2, 100 output tokens) holds its 2 blocks + ceil((8 + 100) / 4) - 2 = 25 output
    blocks; its prefill ends at 8 x 1 ms = 0.008 s (its blocks become cached), it finishes at
    0.008 + 100 x 10 ms = 1.008 s. r1 (t = 0.5, blocks 3 4) needs 2 slots, 1 is free: it waits until
    1.008, prefills until 1.016 and finishes then. The run spans 1.016 s: a 1 ms step would need 1,017
    samples, so the step is 2 ms (509 samples, then the end state at 1.018).
    """
    import numpy as np

    from helpers import LinearCompute, req, run
    from pcs.engine.series import series_payload

    res, _ = run([req([1, 2], 0.0, out=100), req([3, 4], 0.5, out=0)], [28], timing="modeled",
                 compute=LinearCompute())
    s = res.sampler
    assert (s.t0, s.step_s, len(s.rows)) == (0.0, 0.002, 510)
    cols = {k: np.frombuffer(res.columns[k], dtype=np.float64 if k == "finish_s" else np.int64)
            for k in ("prompt_tokens", "hit_tokens", "finish_s")}
    ts = series_payload(s, cols["prompt_tokens"], cols["hit_tokens"], cols["finish_s"],
                        [{"name": "gpu", "bytes_per_block": 1, "bytes_per_block_by_component": {"kv": 1},
                          "link_bandwidth_bps": None}])
    at = {round(t, 6): k for k, t in enumerate(ts.t_s)}
    pick = lambda t: (ts.waiting_requests[at[t]], ts.running_requests[at[t]], ts.resident_bytes["gpu"][at[t]])  # noqa: E731
    assert pick(0.0) == (0, 0, 0)       # before r0
    assert pick(0.6) == (1, 1, 2)       # r1 waits, r0 runs, r0's blocks cached
    assert pick(1.01) == (0, 1, 2)      # r0 done, r1 admitted (its blocks cached at 1.016)
    assert pick(1.018) == (0, 0, 4)     # the end state
    assert ts.t_s[-1] == 1.018


def test_series_agrees_with_the_summary_counters():
    """The last sample (the end state) equals what the summary counts by other means (ledger, tier state)."""
    import pytest

    import pcs

    s = pcs.replay(None, tiers=["gpu=300blocks", "cpu=900blocks"]).summary
    ts = s.series
    assert len(ts.t_s) <= 512 and ts.t_s[0] == 0.0
    assert all(abs(b - a - ts.step_s) < 1e-9 * max(1.0, b) for a, b in zip(ts.t_s, ts.t_s[1:]))
    assert ts.hit_ratio_cumulative[-1] == s.hit_ratio
    assert {t.name: ts.resident_bytes[t.name][-1] for t in s.tiers} == {t.name: t.resident_bytes_end for t in s.tiers}
    assert sum(ts.restore_bps["cpu"]) * ts.step_s == pytest.approx(s.bytes.restored_per_link["cpu"], rel=1e-12)
    assert ts.waiting_requests[-1] == ts.running_requests[-1] == 0
    assert max(ts.running_requests) >= 1
    # the fast path's twin of the sampling gives the event loop's series
    fast = pcs.replay(None, tiers=["gpu=300blocks"], timing="sequential", engine="fast").summary
    loop = pcs.replay(None, tiers=["gpu=300blocks"], timing="sequential", engine="general").summary
    assert fast.series == loop.series and fast.distributions == loop.distributions
    assert max(fast.series.resident_bytes["gpu"]) == 300 * fast.tiers[0].bytes_per_block


def _sampled_request_by_request(arrival_s, resident_after):
    """The plain reference of sequential_samples: the event loop's check, one request at a time."""
    s = Sampler()
    state = lambda i: (i, 0, [int(resident_after[i - 1]) if i else 0], [0], [0.0])  # noqa: E731
    nxt = float("-inf")
    for i in range(len(arrival_s)):
        if arrival_s[i] >= nxt:
            nxt = s.take(float(arrival_s[i]), lambda: state(i))
    s.take(s.take(max(float(arrival_s.max()), s.t0), lambda: state(len(arrival_s))), lambda: state(len(arrival_s)))
    return s


def test_final_step_by_hand():
    # base 1 s, 4 samples, first arrival 10. Last arrival 13: take(13) has boundaries 10..13 (4, no doubling) and
    # returns 14; take(14) would make 5 > 4, so the step doubles to 2 (10, 12, 14). Last 12.5: take(12.5) keeps
    # 10..12 (3) and returns 13; take(13) makes 4: the step stays 1. Last 10: take(10) returns 11, 2 boundaries.
    from pcs.engine.series import _final_step

    assert _final_step(10.0, 13.0, 1.0, 4) == 2.0
    assert _final_step(10.0, 12.5, 1.0, 4) == 1.0
    assert _final_step(10.0, 10.0, 1.0, 4) == 1.0
    # 30 - 10 = 20 s: step 8 (3 boundaries, test_boundaries_state_and_doubling_by_hand), next 34: 4 boundaries
    assert _final_step(10.0, 30.0, 1.0, 4) == 8.0


@settings(max_examples=300, deadline=None)
@given(st.floats(-1e6, 1e9, allow_nan=False), st.floats(0.0, 1e7, allow_nan=False), st.integers(2, 9),
       st.sampled_from([0.001, 0.25, 1.0, 3.0]))
@example(t0=T0, span=2.0, max_samples=2, base=0.25)
@example(t0=10.0, span=3.0, max_samples=4, base=1.0)
def test_final_step_equals_the_three_takes(t0, span, max_samples, base):
    # the step sequential_samples samples at: what a Sampler's calls at the first arrival, the last and the
    # boundary the last call returns leave (the dry run the arithmetic replaced)
    from pcs.engine.series import _final_step

    last = t0 + span
    dry = Sampler(base, max_samples)
    dry.take(t0, tuple)
    dry.take(dry.take(last, tuple), tuple)
    assert _final_step(t0, last, base, max_samples) == dry.step_s


def test_sequential_columns_read_as_the_rows():
    # the fast path hands its samples over as columns (Sampler.set_columns); series_payload of them equals
    # series_payload of the request-by-request rows, value for value and type for type (Python ints and
    # floats in the JSON), and reading .rows afterwards still gives those rows
    import json

    from pcs.engine.series import series_payload

    tiers = [{"name": "gpu", "bytes_per_block": 2 ** 40, "bytes_per_block_by_component": {"k": 2 ** 39, "v": 2 ** 39},
              "link_bandwidth_bps": None}]
    rng = np.random.default_rng(11)
    for _ in range(50):
        m = int(rng.integers(1, 300))
        a = rng.uniform(0, 10 ** rng.uniform(-3, 4), m)
        r = np.minimum(2 ** 30, np.cumsum(rng.integers(0, 2 ** 28, m)))
        p, h = rng.integers(1, 100, m), rng.integers(0, 50, m)
        fast, ref = sequential_samples(a, r), _sampled_request_by_request(a, r)
        got, want = (series_payload(x, p, np.minimum(h, p), np.full(m, np.nan), tiers) for x in (fast, ref))
        assert got == want and json.dumps(got.to_dict()) == json.dumps(want.to_dict())
        assert all(type(v) is int for v in got.resident_bytes["gpu"] + got.waiting_requests + got.running_requests)
        assert (fast.rows, fast.next_s) == (ref.rows, ref.next_s)


@pytest.mark.parametrize("kind", ["sorted", "shuffled", "on_the_grid", "ties"])
def test_sequential_samples_equal_the_request_by_request_loop(kind):
    # the fast path's twin samples on the final grid from the start and searches the running maximum of the
    # arrivals; arrivals rounded to 1 ms land on (or a float error beside) grid boundaries
    rng = np.random.default_rng(7)
    for _ in range(300):
        m = int(rng.integers(1, 200))
        a = {"sorted": lambda: np.sort(rng.uniform(0, 10 ** rng.uniform(-3, 5), m)),
             "shuffled": lambda: rng.uniform(0, 10 ** rng.uniform(-3, 5), m),
             "on_the_grid": lambda: np.round(np.sort(rng.uniform(0, 5, m)), 3) + 0.002,
             "ties": lambda: rng.integers(0, 20, m) * 0.001 * int(rng.integers(1, 3000))}[kind]()
        r = np.minimum(50, np.cumsum(rng.integers(0, 5, m)))
        fast, ref = sequential_samples(a, r), _sampled_request_by_request(a, r)
        assert (fast.step_s, fast.t0, fast.rows) == (ref.step_s, ref.t0, ref.rows)


def test_cdf_quantiles_equal_numpy_inverted_cdf():
    # the one-sort quantiles of request_distributions against numpy's definition (inverted_cdf)
    from pcs.engine.series import CDF_LEVELS, _quantiles

    rng = np.random.default_rng(3)
    for n in (1, 2, 3, 7, 199, 200, 201, 1000, 132_341):
        for v in (rng.uniform(0, 5, n), np.round(rng.uniform(0, 5, n), 2), rng.integers(0, 3, n) * 1.0):
            v = np.where(rng.uniform(size=n) < 0.05, np.nan, v)  # non-finite values are left out
            finite = v[np.isfinite(v)]
            want = np.quantile(finite, CDF_LEVELS, method="inverted_cdf").tolist() if len(finite) else []
            assert _quantiles(v) == want


def test_step_scheduler_samples_by_hand():
    """The step scheduler's samples (docs/semantics.md §11) on the timeline of
    tests/engine/test_scheduler_timeline.py::test_three_requests_budget_four (1 ms per token, budget 4 tokens,
    block size 2, distinct ids): R0 (t = 0, prompt 6, output 3), R1 (1 ms, prompt 3, output 2), R2 (1.5 ms,
    prompt 2, output 1). Steps: [0, 4) R0 admitted; [4, 8) R1 admitted (R2 waits, budget spent); [8, 12) R2
    admitted, R2 finishes at 12; [12, 14) R0 and R1 decode and finish at 14.

    Rule: a boundary b in a step or idle gap (s, e] records the state during it (after the admissions at s,
    before the finishes at e); an arrival inside a step shows from the step's end, where the scheduler first
    sees it. The run spans 14 ms, so the step stays 1 ms (15 boundaries <= 512) and close adds the end state
    at 15 ms. Per boundary (admitted at least once, waiting, running):
    0: (0, 0, 0) the first arrival, before it; 1-4 ms: (1, 0, 1) R1 and R2 arrive during step 1;
    5-8 ms: (2, 1, 2); 9-12 ms: (3, 0, 3); 13-14 ms: (3, 0, 2) R2 done at 12; 15 ms: (3, 0, 0).
    Resident GPU blocks: 0 at t0; at the end the full prompt blocks stay cached: R0 3, R1 1 (3 tokens: one
    full block, §2), R2 1 = 5.
    """
    from helpers import req, step_cost, step_run

    ms = 0.001
    reqs = [req([1, 2, 3], 0.0, prompt=6, out=3, bs=2), req([11, 12], 1 * ms, prompt=3, out=2, bs=2),
            req([21], 1.5 * ms, prompt=2, out=1, bs=2)]
    s = step_run(reqs, [100], step_cost(token_s=ms), budget=4, seqs=4).result.sampler
    assert s.t0 == 0.0 and s.step_s == ms
    assert [round(r[0] / ms, 9) for r in s.rows] == list(range(16))
    got = [(r[1], r[2], r[6]) for r in s.rows]
    assert got == [(0, 0, 0)] + [(1, 0, 1)] * 4 + [(2, 1, 2)] * 4 + [(3, 0, 3)] * 4 + [(3, 0, 2)] * 2 + [(3, 0, 0)]
    assert s.rows[0][3] == [0] and s.rows[-1][3] == [5]


@pytest.mark.parametrize("compute", ["step", "infinite"])
def test_series_end_state_equals_the_summary(compute):
    """Both modeled computes: the last sample (the end state) equals the summary's counters, and the
    restored bytes summed over the series equal the ledger's."""
    import pcs

    s = pcs.replay(None, model="llama-3.1-8b", tiers=["gpu=2GB", "cpu=20GB"],
                   compute_mode=compute).summary
    ts = s.series
    assert s.compute == compute and ts is not None and 2 <= len(ts.t_s) <= 512
    assert ts.hit_ratio_cumulative[-1] == s.hit_ratio
    assert {t.name: ts.resident_bytes[t.name][-1] for t in s.tiers} == {t.name: t.resident_bytes_end for t in s.tiers}
    assert sum(ts.restore_bps["cpu"]) * ts.step_s == pytest.approx(s.bytes.restored_per_link["cpu"], rel=1e-12)
    assert s.bytes.restored_per_link["cpu"] > 0
    assert ts.waiting_requests[-1] == ts.running_requests[-1] == 0 and max(ts.running_requests) >= 1


def test_cdf_read_off_columns_sorted_by_the_caller():
    # ``ordered`` stands for the sort of ttft_s / prefill_no_cache_s: the CDF reads it, level q -> the ceil(4 q)-th
    # of [1, 2, 3, 4] (the first at q = 0): q = 0 -> 1, 0.245 -> 1, 0.255 -> 2, 0.495 -> 2, 0.505 -> 3, 1 -> 4;
    # the columns themselves (here other numbers) are not read for those two
    from pcs.engine.series import CDF_LEVELS, request_distributions

    cols = {"ttft_s": np.full(4, 9.0), "prefill_no_cache_s": np.full(4, 9.0), "prefill_s": np.zeros(4),
            "restore_s": np.zeros(4), "restored_bytes": np.zeros(4, np.int64)}
    ordered = {"ttft_s": np.array([1.0, 2.0, 3.0, 4.0]), "prefill_no_cache_s": np.array([5.0, 6.0, 7.0, 8.0])}
    cdf = request_distributions(cols, None, ordered).ttft_cdf
    at = {round(q, 3): (w, wo) for q, w, wo in zip(CDF_LEVELS.tolist(), cdf.with_cache_s, cdf.without_cache_s)}
    assert [at[q] for q in (0.0, 0.245, 0.255, 0.495, 0.505, 1.0)] == [(1, 5), (1, 5), (2, 6), (2, 6), (3, 7), (4, 8)]


def test_step_scheduler_running_count_is_read_not_derived():
    # rows with a 7th field (the step scheduler's running requests): those counts, whatever finish_s says
    # (here every request finished before the first sample: derived, running would be 0, 0)
    from pcs.engine.series import series_payload

    s = Sampler(base_step_s=1.0)
    s.t0, s.rows = 0.0, [(0.0, 1, 0, (1,), (0,), (0.0,), 1), (1.0, 2, 0, (2,), (0,), (0.0,), 2)]
    tiers = [{"name": "gpu", "bytes_per_block": 1, "bytes_per_block_by_component": {"a": 1},
              "link_bandwidth_bps": None}]
    out = series_payload(s, np.array([4, 4]), np.array([0, 2]), np.array([-1.0, -1.0]), tiers)
    assert out.running_requests == (1, 2)


def test_series_columns_ratios_and_bytes_by_hand():
    """The helpers of the column-wise series_payload: rows transposed once (per-tier fields one tuple per tier),
    h / p as Python floats with None where p is 0, resident blocks x bytes as Python ints (no int64 bound)."""
    from pcs.engine.series import _ratios, _row_columns, _times

    rows = [(5.0, 0, 0, (0, 0), (0, 0), (0.0, 0.0), 0), (6.0, 2, 1, (3, 1), (0, 16), (0.0, 6.5), 1)]
    cols = _row_columns(rows, 2)
    assert cols[0] == (5.0, 6.0) and cols[1] == (0, 2) and cols[2] == (0, 1) and cols[6] == (0, 1)
    assert cols[3] == [(0, 3), (0, 1)] and cols[4] == [(0, 0), (0, 16)] and cols[5] == [(0.0, 0.0), (0.0, 6.5)]
    assert _row_columns([], 2) == [(), (), (), [(), ()], [(), ()], [(), ()]]
    # 0/0 -> None; 5/30; 30/30 = 1.0; 7/2 = 3.5
    assert _ratios(np.array([0, 5, 30, 7]), np.array([0, 30, 30, 2])) == (None, 5 / 30, 1.0, 3.5)
    assert _ratios(np.array([], dtype=np.int64), np.array([], dtype=np.int64)) == ()
    assert _times((0, 3, 4), 10) == (0, 30, 40)
    assert _times((2 ** 40,), 2 ** 40) == (2 ** 80,)      # past int64: Python ints, as r[3][j] * bytes was


def test_series_payload_backlog_and_no_rows_by_hand():
    """restore_backlog_s is max(0, busy until - boundary) per sample: a link free before the boundary is 0.0, a
    NaN busy time too (max(0.0, nan) is 0.0); with no rows every column is empty."""
    from pcs.engine.series import series_payload

    tiers = [{"name": "gpu", "bytes_per_block": 10, "bytes_per_block_by_component": {"a": 10},
              "link_bandwidth_bps": None},
             {"name": "cpu", "bytes_per_block": 8, "bytes_per_block_by_component": {"a": 8},
              "link_bandwidth_bps": 100.0}]
    s = Sampler(base_step_s=2.0)
    # busy until: 4.0 at 5 s (free: 0.0), 8.5 at 7 s (1.5 s queued), NaN at 9 s (0.0)
    s.t0, s.rows = 5.0, [(5.0, 0, 0, (0, 0), (0, 0), (0.0, 4.0)), (7.0, 1, 0, (2, 1), (0, 8), (0.0, 8.5)),
                         (9.0, 1, 0, (2, 1), (0, 8), (0.0, float("nan")))]
    out = series_payload(s, np.array([10]), np.array([4]), np.array([np.nan]), tiers)
    assert out.restore_backlog_s == {"cpu": (0.0, 1.5, 0.0)}
    # restored bytes 0, 8, 8 cumulative: 0, 8, 0 a step of 2 s -> 0.0, 4.0, 0.0 bytes/s
    assert out.restore_bps == {"cpu": (0.0, 4.0, 0.0)}
    # one request of 10 prompt tokens, 4 hits, admitted by the 7 s sample
    assert out.hit_ratio == (None, 0.4, None) and out.hit_ratio_cumulative == (None, 0.4, 0.4)
    assert out.resident_bytes == {"gpu": (0, 20, 20), "cpu": (0, 8, 8)} and out.waiting_requests == (0, 0, 0)
    empty = series_payload(Sampler(), np.array([10]), np.array([4]), np.array([np.nan]), tiers)
    assert empty.t_s == () and empty.resident_bytes == {"gpu": (), "cpu": ()} and empty.restore_bps == {"cpu": ()}
    assert empty.restore_backlog_s == {"cpu": ()} and empty.hit_ratio == () and empty.running_requests == ()
