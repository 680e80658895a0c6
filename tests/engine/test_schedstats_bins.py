"""The step scheduler's utilisation bins: bounded memory, the same report, far runs refused (hostile F5)."""
from __future__ import annotations

import json
from array import array

import pytest

from helpers import assert_one_line_error, invoke
from pcs.engine.schedstats import COARSE_S, FINE_LIMIT_S, MAX_SPAN_S, SchedulerCounters, utilisation_bins


def test_fine_bins_then_folded_hour_bins():
    c = SchedulerCounters(origin_s=100.0)
    # busy 0.5 .. 2.5 s after the first arrival: 1-second bins [0.5, 1, 0.5]
    c.add_busy(100.5, 2.0)
    assert (c.bin_s, c.busy_per_s.tolist()) == (1, [0.5, 1.0, 0.5])
    # busy 200,000 .. 207,200 s: past FINE_LIMIT_S (172,800) -> folded to 3,600-s bins, bin 0 = 0.5 + 1 + 0.5 = 2;
    # 200,000 / 3600 = 55.56 -> bin 55 gets (56 x 3600 - 200,000) = 1,600 s, bin 56 all 3,600 s,
    # bin 57 the rest 207,200 - 57 x 3600 = 2,000 s
    c.add_busy(100.0 + 200_000, 7200.0)
    assert c.bin_s == COARSE_S and len(c.busy_per_s) == 58
    assert c.busy_per_s[0] == 2.0
    assert c.busy_per_s[55:].tolist() == pytest.approx([1600.0, 3600.0, 2000.0])
    assert sum(c.busy_per_s[1:55]) == 0.0 and c.busy_s == pytest.approx(7202.0)
    # the scheduler's inline 1-second fast path indexes int(t) >= FINE_LIMIT_S, past the folded list: falls through
    assert len(c.busy_per_s) < FINE_LIMIT_S
    # report over span 207,200 s: width 3,600 (207,200 / 1,800 = 115 bins > 60; / 3,600 = 57.6 <= 60), 58 bins
    width, series = utilisation_bins(c.busy_per_s, 207_200.0, c.bin_s)
    assert width == 3600 and len(series) == 58
    assert series[0] == round(2 / 3600, 6) and series[55:] == [round(1600 / 3600, 6), 1.0, round(2000 / 3600, 6)]


def test_utilisation_bins_read_an_array_as_a_list():
    # busy 0.5, 1, 0.5 s in the first three 1-second bins. Over a 4-s span: width 1 s (4 bins <= 60), the shares
    # as given; over 120 s: width 2 s (120 / 1 = 120 bins > 60, 120 / 2 = 60), bin 0 = (0.5 + 1) / 2 = 0.75,
    # bin 1 = 0.5 / 2 = 0.25, the other 58 bins 0. The compiled loop's array('d') and a list read the same.
    for busy in (array("d", [0.5, 1.0, 0.5]), [0.5, 1.0, 0.5]):
        assert utilisation_bins(busy, 4.0) == (1, [0.5, 1.0, 0.5, 0.0])
        assert utilisation_bins(busy, 120.0) == (2, [0.75, 0.25] + [0.0] * 58)
    assert utilisation_bins(array("d"), 3.0) == (1, [0.0, 0.0, 0.0])     # no busy bins: every share 0


def test_a_run_past_366_days_is_refused():
    c = SchedulerCounters(origin_s=0.0)
    with pytest.raises(ValueError, match="366 days"):
        c.add_busy(MAX_SPAN_S - 1.0, 2.0)            # ends 1 s past the limit
    with pytest.raises(ValueError, match="366 days"):
        c.add_busy(0.0, float("inf"))


@pytest.mark.parametrize("second, out", [(1e300, 10), (2 ** 62, 10), (10 ** 11, 10), (0, 10 ** 12)])
def test_far_timestamps_and_huge_outputs_are_one_line_errors(tmp_path, second, out):
    # hostile F5: two 1,024-token requests, the second at `second` ms (1e11 ms = 3.2 years > 366 days), or one
    # output of 10^12 tokens (years of decode steps): a MemoryError/OverflowError traceback or GBs before
    f = tmp_path / "t.jsonl"
    rows = [{"timestamp": 0, "input_length": 1024, "output_length": out, "hash_ids": [0, 1]},
            {"timestamp": second, "input_length": 1024, "output_length": 10, "hash_ids": [2, 3]}]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    if second / 1000 > 2 ** 32:
        # past 2**32 s (136 years) the trace itself is refused, in every compute model: a float64 clock there
        # loses microseconds (pcs.trace.batches.MAX_ARRIVAL_S)
        for extra in ((), ("--compute", "infinite")):
            assert_one_line_error(invoke("replay", f, "-q", *extra), "t.jsonl:2: field 'timestamp': arrival",
                                  "beyond +-2**32 s")
        return
    assert_one_line_error(invoke("replay", f, "-q"), "366 days", "--compute infinite")
    # the same file runs with the infinite compute model (no utilisation bins)
    assert invoke("replay", f, "-q", "--compute", "infinite").exit_code == 0
