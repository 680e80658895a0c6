"""``pcs sweep summarize``: a best point tied with others on the metric says so and is picked by one rule (the least
bytes over all tiers, then the smaller point id), whatever order the rows stream in."""
from __future__ import annotations

import itertools

from pcs.report.sweep import TIE_NOTE, _tie
from pcs.sweep.summary import _keep_best


def _row(pid: str, hit: float, cpu: int, p99: float) -> dict:
    return {"point_id": pid, "kind": "replay", "hit_ratio": hit, "envelope.ttft_p50_s": None,
            "envelope.ttft_p99_s": p99, "envelope.wait_p99_s": 0.0,
            "tiers.gpu.capacity_bytes": 100, "tiers.cpu.capacity_bytes": cpu}


# by hand: hit ratios 0.5, 0.5, 0.5, 0.25 -> the best 0.5 is tied by 3 points: tied = 2 others; of those, "b" and
# "c" hold 100 + 10 = 110 bytes, "a" 100 + 50 = 150, so "b" (smaller id than "c" at equal bytes) is picked.
# TTFT p99 (min): 2.0, 1.0, 3.0, 1.0 -> 1.0 by "b" and "d" (tied = 1 other); "d" holds 100 + 0 bytes: "d".
# wait p99: 0.0 everywhere -> tied = 3 others, "d" (the fewest bytes).
ROWS = [_row("a", 0.5, 50, 2.0), _row("b", 0.5, 10, 1.0), _row("c", 0.5, 10, 3.0), _row("d", 0.25, 0, 1.0)]


def test_ties_are_counted_and_picked_the_same_in_every_order():
    for order in itertools.permutations(ROWS):
        best: dict = {}
        for r in order:
            _keep_best(best, r)
        got = {m: (v[1]["point_id"], v[2]) for m, v in best.items()}
        assert got == {"hit_ratio": ("b", 2), "envelope.ttft_p99_s": ("d", 1), "envelope.wait_p99_s": ("d", 3)}


def test_the_tie_is_written_after_the_value():
    assert _tie(0) == "" and _tie(1) == " (tied with 1 other)" and _tie(3) == " (tied with 3 others)"
    assert "least bytes over all tiers, then the smaller point id" in TIE_NOTE
