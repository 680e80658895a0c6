"""A curve JSON whose distinct_cacheable_blocks exceeds its cacheable_blocks -- distinct ids among those blocks, so
at most their count -- was drawn by pcs report (found 2026-12-04); now refused like the other range errors:
'FILE: field ...: ...', exit 2, no page; in a file of a pcs before 2026-12-04 the two fields are named as that file
holds them (distinct_blocks, block_accesses).

The fixture (tests/conftest.py one_request_curve): cacheable_blocks 2, distinct_cacheable_blocks 2.
"""
from __future__ import annotations

import pytest

from helpers import old_curve


def test_as_many_distinct_as_cacheable_blocks_is_drawn(one_request_curve, report_json):
    r, _ = report_json(one_request_curve)
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("old, distinct, cacheable", [(False, "distinct_cacheable_blocks", "cacheable_blocks"),
                                                      (True, "distinct_blocks", "block_accesses")])
def test_more_distinct_than_cacheable_blocks_is_refused(tmp_path, one_request_curve, report_json, old, distinct,
                                                        cacheable):
    bad = dict(one_request_curve, distinct_cacheable_blocks=3)          # 3 distinct among 2 blocks: impossible
    r, f = report_json(old_curve(bad) if old else bad)
    assert r.exit_code == 2, r.output
    assert (f"{f}: field '{distinct}': must be at most {cacheable} (2): distinct ids among the cacheable blocks, "
            "got 3") in r.output
    assert not (tmp_path / "page.html").exists()


def test_a_sampled_curves_null_distinct_count_is_not_compared(one_request_curve, report_json):
    from tests.helpers import as_sampled

    r, _ = report_json(as_sampled(one_request_curve, 0.5, distinct_cacheable_blocks=None))
    assert r.exit_code == 0, r.output
