"""pcs report on a replay JSON whose gap split holds a null term beside numbers (a run with prompt tokens has every
term a number; null is only for a run with no ratios, docs/semantics.md §12): exit 2 naming the term, no traceback.
Found by a hostile-input review (2026-12-04): the sample's block_rounding is 0.0, so a null there passed the sum
check (null read as 0) and the waterfall then subtracted None (an internal-error traceback, exit 1). Also: a
threads object saying mode off and used true (off never hands work to a thread) is refused. The replay JSON:
tests/conftest.py sample_replay."""
import pytest


@pytest.mark.parametrize("term", ["block_rounding", "capacity_eviction", "concurrency"])
def test_null_term_beside_numbers_refused(sample_replay, report_json, term):
    res, path = report_json(dict(sample_replay, gap=dict(sample_replay["gap"], **{term: None})))
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and "internal error" not in res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert lines == [f"pcs: error: {path}: field 'gap.{term}': must be a difference of two ratios, in [-1, 1] when "
                     "hit_ratio is one (null only when every ratio is: no prompt tokens), got null"]


def test_zero_term_still_drawn(sample_replay, report_json):
    # the sample fits its cache blocks whole: ideal = single-sequence, so block_rounding is exactly 0.0
    assert sample_replay["gap"]["block_rounding"] == 0.0
    res, _ = report_json(sample_replay)
    assert res.exit_code == 0, res.output


def test_mode_off_used_true_refused(sample_replay, report_json):
    res, path = report_json(dict(sample_replay, threads={"mode": "off", "used": True, "reason": "x"}))
    assert res.exit_code == 2
    assert [ln for ln in res.output.splitlines() if ln.strip()] == [
        f"pcs: error: {path}: field 'threads.used': must be false when threads.mode is off (PCS_THREADS=off runs "
        "every part on the calling thread), got true"]
    assert report_json(dict(sample_replay, threads={"mode": "off", "used": False, "reason": "x"}))[0].exit_code == 0
