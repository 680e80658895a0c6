"""The hybrid residency series (docs/semantics.md §13.1): a series cut at its sample limit says so in a note."""
from __future__ import annotations

from pcs.cache.residency import Residency


def _ticked(times, max_samples):
    r = Residency(["gpu"], [[1]], step_s=1.0, max_samples=max_samples)
    for t in times:
        r.tick(t)
    return r


def test_a_series_cut_at_its_limit_says_where_and_which_step_fits():
    # step 1 s, at most 3 samples: ticks at 0 and 5 s take samples at 0, 1, 2 s and stop; the samples due at
    # 3, 4, 5 s are lost. A step covering 0..5 s in 3 samples is (5 - 0) / (3 - 1) = 2.5 s
    r = _ticked([0.0, 5.0], 3)
    assert [t for t, _ in r.samples] == [0.0, 1.0, 2.0]
    note = r.cut_note()
    assert "3-sample limit at t = 2 s (--residency-step 1 s)" in note
    assert "last step at 5 s" in note and "at least 2.5 s" in note


def test_a_series_that_reaches_the_end_has_no_note():
    # ticks at 0 and 2 s: samples at 0, 1, 2 s -- the limit is reached, but nothing after it was due
    assert _ticked([0.0, 2.0], 3).cut_note() is None
    assert _ticked([0.0, 5.0], 100).cut_note() is None          # 6 samples, far below the limit
    assert _ticked([], 3).cut_note() is None                    # never ticked
