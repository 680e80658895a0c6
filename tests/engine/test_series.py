"""The time-series sampler: a fixed step, at most max_samples samples, the state at each boundary."""
from __future__ import annotations

from pcs.engine.series import Sampler


def test_boundaries_state_and_doubling_by_hand():
    s = Sampler(base_step_s=1.0, max_samples=4)
    state = {"v": "a"}
    snap = lambda b: (state["v"],)  # noqa: E731 - the state between two calls is constant
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
            s.take(t, lambda b: ())
    assert len(s.rows) <= 512 and s.step_s == 0.001 * 2 ** round(__import__("math").log2(s.step_s / 0.001))
    # the kept boundaries are the grid t0 + k x step, k = 0, 1, ...
    assert [round((r[0] - s.t0) / s.step_s, 9) for r in s.rows] == list(range(len(s.rows)))
    assert s.rows[-1][0] <= t < s.next_s


def test_series_payload_by_hand():
    import numpy as np
    import pytest

    from pcs.engine.series import series_payload

    s = Sampler(base_step_s=1.0)
    s.t0, s.rows = 5.0, [(5.0, 0, 0, 0, (0, 0), (0, 0), (0.0, 0.0)),
                         (6.0, 2, 1, 1, (3, 1), (0, 16), (0.0, 0.5)),
                         (7.0, 3, 0, 2, (4, 2), (0, 40), (0.0, 0.0))]
    tiers = [{"name": "gpu", "bytes_per_block": 10, "bytes_per_block_by_component": {"a": 6, "b": 4},
              "link_bandwidth_bps": None},
             {"name": "cpu", "bytes_per_block": 8, "bytes_per_block_by_component": {"a": 8},
              "link_bandwidth_bps": 100.0}]
    out = series_payload(s, np.array([10, 20, 30, 40]), np.array([0, 5, 15, 40]), tiers)
    assert out["t_s"] == [0.0, 1.0, 2.0] and out["step_s"] == 1.0
    # requests admitted by each sample: 0, 2 (10 + 20 prompt, 0 + 5 hit), 3 (+30 prompt, +15 hit); the 4th is
    # after the last sample
    assert out["hit_ratio"] == [None, pytest.approx(5 / 30), pytest.approx(15 / 30)]
    assert out["hit_ratio_cumulative"] == [None, pytest.approx(5 / 30), pytest.approx(20 / 60)]
    assert out["resident_bytes"] == {"gpu": [0, 30, 40], "cpu": [0, 8, 16]}
    assert out["resident_bytes_by_component"] == {"gpu": {"a": [0, 18, 24], "b": [0, 12, 16]}}  # cpu: one component
    assert out["restore_bps"] == {"cpu": [0.0, 16.0, 24.0]} and out["link_bandwidth_bps"] == {"cpu": 100.0}
    assert out["waiting_requests"] == [0, 1, 0] and out["running_requests"] == [0, 1, 2]
    assert out["restore_backlog_s"] == {"cpu": [0.0, 0.5, 0.0]}
