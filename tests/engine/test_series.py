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
