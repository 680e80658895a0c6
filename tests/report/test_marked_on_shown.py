"""The marked best cell of a compare or runs table agrees with the figures the cells show (docs/report.md,
:data:`pcs.report.htmltables.MARKED_NOTE`): a gap cell shows the difference of the printed ratios, so the mark is
chosen on the shown figures too, not on the exact JSON values.

Hand case (one decimal of a percent): run A sequential 0.34649 (34.6 %), real 0.34251 (34.3 %): gap: concurrency
shows 34.6 - 34.3 = +0.3 pts (exact 0.398); run B sequential 0.34551 (34.6 %), real 0.34249 (34.2 %): shows
+0.4 pts (exact 0.302). Nearest 0 as shown is A's +0.3 (the exact values would mark B's +0.4). Hit ratio: A
34.3 %, B 34.2 %: A marked. A third run C with sequential 0.34648 (34.6 %), real 0.34252 (34.3 %) shows +0.3
pts (exact 0.396) and 34.3 % as A does: both marked (the exact values would mark C's 0.396 alone, and C's
0.34252 alone as the hit ratio).
"""
from __future__ import annotations

import copy

from pcs.report.htmltables import compare_table, runs_table, shown_number

A, B, C = (0.34649, 0.34251), (0.34551, 0.34249), (0.34648, 0.34252)


def _run(sample_replay: dict, seq: float, real: float) -> dict:
    s = copy.deepcopy(sample_replay)
    s.update(sequential_hit_ratio=seq, hit_ratio=real)
    s["gap"] = dict(s["gap"], concurrency=seq - real)
    return s


def _marks(table: dict) -> dict[str, list[tuple[str, bool]]]:
    return {r[0]["text"]: [(x["text"], x["best"]) for x in r[1:]] for r in table["rows"]}


def test_runs_table_marks_the_shown_best(sample_replay):
    t = _marks(runs_table([_run(sample_replay, *A), _run(sample_replay, *B)]))
    assert t["gap: concurrency"] == [("+0.3 pts", True), ("+0.4 pts", False)]
    assert t["hit ratio (real, token-weighted)"] == [("34.3 %", True), ("34.2 %", False)]
    t = _marks(runs_table([_run(sample_replay, *A), _run(sample_replay, *B), _run(sample_replay, *C)]))
    assert t["gap: concurrency"] == [("+0.3 pts", True), ("+0.4 pts", False), ("+0.3 pts", True)]
    assert t["hit ratio (real, token-weighted)"] == [("34.3 %", True), ("34.2 %", False), ("34.3 %", True)]
    t = _marks(runs_table([_run(sample_replay, *A), _run(sample_replay, *C)]))
    assert t["gap: concurrency"] == [("+0.3 pts", False), ("+0.3 pts", False)]     # all show the same: none


def test_compare_table_marks_the_shown_best():
    base = dict(tiers="gpu=2blocks", policy="lru", single_sequence_hit_ratio=0.5, gap_block_rounding=0.0,
                gap_capacity_eviction=0.1, lower_tier_hit_ratio=0.0, restored_bytes=0, written_bytes=0,
                share_slower=None, ttft_p50_s=1.0, ttft_p99_s=2.0, wait_p99_s=0.0, requests_truncated=0)
    c = {"trace": "t", "model": "m", "timing": "modeled",
         "variants": [dict(base, variant=n, hit_ratio=real, gap_concurrency=seq - real,
                           ttft_p50_s=ttft) for n, (seq, real), ttft in
                      (("a", A, 0.221444), ("b", B, 0.2214), ("c", C, 0.2215))]}
    t = _marks(compare_table(c))
    assert t["gap: concurrency"] == [("+0.3 pts", True), ("+0.4 pts", False), ("+0.3 pts", True)]
    assert t["hit ratio (real, token-weighted)"] == [("34.3 %", True), ("34.2 %", False), ("34.3 %", True)]
    # 221.44 ms, 221.40 ms, 221.50 ms: b is the smallest shown; a's exact 221.444 is no tie with it
    assert t["TTFT p50"] == [("221.44 ms", False), ("221.40 ms", True), ("221.50 ms", False)]


def test_shown_number_reads_every_marked_kind():
    assert shown_number("+0.4 pts") == shown_number("0.4 pts") and shown_number("-0.3 pts") < 0
    assert shown_number("6.0 %") == 6 and shown_number("1,204") == 1204
    assert shown_number("221.44 ms") == 221_440_000 and shown_number("1.02 s") == 1_020_000_000
    assert shown_number("1.50 GB") == 1_500_000_000 and shown_number("0 B") == 0
    assert shown_number("-") is None and shown_number(None) is None


def test_a_nan_cell_marks_nothing():
    # a compare JSON with one variant's ttft_p50_s NaN (its cell 'nan ...'): Decimal('NaN') orders against
    # nothing (max/min raised decimal.InvalidOperation); read as no figure, like '-': the row is not marked.
    assert shown_number("nan ms") is None and shown_number("nan %") is None
    base = dict(tiers="gpu=2blocks", policy="lru", single_sequence_hit_ratio=0.5, gap_block_rounding=0.0,
                gap_capacity_eviction=0.1, lower_tier_hit_ratio=0.0, restored_bytes=0, written_bytes=0,
                share_slower=None, ttft_p99_s=2.0, wait_p99_s=0.0, requests_truncated=0, hit_ratio=0.3,
                gap_concurrency=0.0)
    c = {"trace": "t", "model": "m", "timing": "modeled",
         "variants": [dict(base, variant="a", ttft_p50_s=float("nan")), dict(base, variant="b", ttft_p50_s=1.0),
                      dict(base, variant="c", ttft_p50_s=2.0)]}
    t = _marks(compare_table(c))
    assert [marked for _, marked in t["TTFT p50"]] == [False, False, False]
