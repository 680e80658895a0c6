"""The replay report's Compute section (step scheduler): figures as given, the overload note by its rule."""
from pcs.engine.schedresult import saturation_note
from pcs.report.replay import _scheduler_table, ttft_note


def _lat(ttft, busy, makespan, preempt):
    p = {"p50": ttft, "p90": ttft, "p99": 2 * ttft}
    return {"ttft_s": p, "tpot_s": {"p50": 0.05, "p90": 0.05, "p99": 0.1}, "e2e_s": p, "makespan_s": makespan,
            "busy_s": busy, "utilisation": busy / makespan, "preemptions": preempt}


def _sched(bins):
    zero = {"p50": 0.0, "p90": 0.0, "p99": 0.0}
    return {"max_num_batched_tokens": 8192, "max_num_seqs": 256, "restore_policy": "layerwise",
            "restore_fallback": True, "steps": 1234, "with_cache": _lat(0.5, 30.0, 60.0, 0),
            "no_cache": _lat(2.0, 45.0, 60.0, 3), "utilisation_bin_s": 15, "utilisation_over_time": bins,
            "share_losing": 0.25, "restores_losing": 1, "restores_considered": 4, "restores_skipped": 1,
            "requests_preempted": 0, "preempted_recompute_tokens": 0, "decode_blocks_cached": 7,
            "wait_kv_s": zero, "wait_compute_s": zero, "wait_link_s": zero}


def test_section_shows_both_runs_side_by_side():
    text = _scheduler_table({"scheduler": _sched([0.5, 0.5, 0.5, 0.5])})
    # TTFT p50/p99: 0.5 s / 1 s with the cache, 2 s / 4 s without; utilisation 30/60 = 50 %, 45/60 = 75 %
    assert "500.00 ms / 1.00 s" in text and "2.00 s / 4.00 s" in text
    assert "50.0 %" in text and "75.0 %" in text
    assert "1 of 4 (25.0 %)" in text and "7 decode blocks" in text


def test_saturation_note_when_at_least_half_the_bins_are_saturated():
    # 2 of 4 bins at >= 0.99 is half: noted; 1 of 4 is not; 0.989 does not count as busy
    assert saturation_note([1.0, 0.99, 0.2, 0.1], 15).startswith("the instance was busy >= 99 % in 2 of 4 15-s")
    assert saturation_note([1.0, 0.989, 0.2, 0.1], 15) is None
    assert saturation_note([], 15) is None


def testttft_note_compares_like_for_like():
    env = {"ttft_p50_s": 0.5, "ttft_p99_s": 1.0, "ttft_no_cache_alone_p50_s": 0.25, "ttft_no_cache_alone_p99_s": 0.75}
    # scheduled: the no-cache run's TTFT (2 s / 4 s) first, each prefill alone (250 ms / 750 ms) in brackets
    note = ttft_note({"envelope": env, "scheduler": _sched([0.5])})
    assert note.startswith("TTFT p50 500.00 ms / p99 1.00 s with the cache; 2.00 s / 4.00 s without it (the same")
    assert "no queue: 250.00 ms / 750.00 ms)" in note
    assert ttft_note({"envelope": env}).endswith("; 250.00 ms / 750.00 ms without it (each prefill alone, no queue, no wait)")
