"""A curve JSON holding an old count name beside its new one (names30 renamed block_accesses -> cacheable_blocks
and distinct_blocks -> distinct_cacheable_blocks; block_accesses now counts every block hash) was read under the
new name with the old one ignored, whatever it said (found 2026-12-04). Now: refused when the two disagree, naming
the file and both fields; read when they agree. A file whose block_accesses and cacheable_blocks differ is today's
(they were one count before), so one lacking distinct_cacheable_blocks is told that field is missing.

The curve (tests/conftest.py one_request_curve): one request of 1,100 tokens with hash ids [7, 8, 9], block 512: 3
block accesses; the last token is never a hit, so 1,099 tokens can hit, 2 whole blocks (1,024 tokens):
cacheable_blocks 2, both distinct.
"""
from __future__ import annotations

import pytest

from helpers import old_curve
from pcs.curves.result import upgrade_curve_payload
from pcs.errors import UserError


@pytest.fixture
def today(one_request_curve) -> dict:
    """The one-request curve of tests/conftest.py: block_accesses 3, cacheable_blocks 2, distinct 2."""
    return one_request_curve


def test_todays_names_with_an_equal_old_distinct_blocks_are_read(tmp_path, today, report_json):
    both = dict(today, distinct_blocks=2)
    up = upgrade_curve_payload(both)
    assert "distinct_blocks" not in up and up["distinct_cacheable_blocks"] == 2 and up["block_accesses"] == 3
    r, _ = report_json(both)
    assert r.exit_code == 0, r.output


def test_todays_names_with_a_different_old_distinct_blocks_are_refused(tmp_path, today, report_json):
    r, f = report_json(dict(today, distinct_blocks=1))
    assert r.exit_code == 2, r.output
    assert (f"{f}: the curve has both distinct_blocks (its name before 2026-12-04) and distinct_cacheable_blocks "
            "(today's name), which disagree: 1 and 2") in r.output
    assert not (tmp_path / "page.html").exists()


def test_an_old_file_given_cacheable_blocks_is_read_when_it_agrees(tmp_path, today, report_json):
    mixed = dict(old_curve(today), cacheable_blocks=2)          # old block_accesses 2 == cacheable_blocks 2
    up = upgrade_curve_payload(mixed)
    assert (up["cacheable_blocks"], up["distinct_cacheable_blocks"]) == (2, 2)
    assert "block_accesses" not in up and "distinct_blocks" not in up     # the old meaning is not today's count
    r, _ = report_json(mixed)
    assert r.exit_code == 0, r.output


def _distinct_renamed(payload: dict) -> dict:
    """``payload`` with its distinct count under the old name, distinct_blocks, in place (the rest as they are)."""
    return {("distinct_blocks" if k == "distinct_cacheable_blocks" else k): v for k, v in payload.items()}


@pytest.mark.parametrize("make, counts", [
    # today's file: block_accesses 3 (every hash) beside cacheable_blocks 2, its distinct count under the old name
    (_distinct_renamed, "block_accesses (3) and a different cacheable_blocks (2)"),
    # the old file (block_accesses 2, the cacheable count then) given a cacheable_blocks of 3
    (lambda p: dict(old_curve(p), cacheable_blocks=3), "block_accesses (2) and a different cacheable_blocks (3)"),
])
def test_a_file_lacking_distinct_cacheable_blocks_is_told_so(tmp_path, today, report_json, make, counts):
    # F5 (review, 2026-12-04): was "both block_accesses ... and cacheable_blocks ..., which disagree": a message
    # about two other fields. Before 2026-12-04 block_accesses WAS the cacheable count, so a file whose two
    # differ is no file of then: the field it lacks is today's distinct_cacheable_blocks
    r, f = report_json(make(today))
    assert r.exit_code == 2, r.output
    assert [ln for ln in r.output.splitlines() if ln.strip()] == [
        f"pcs: error: {f}: field 'distinct_cacheable_blocks': missing (pcs curve always writes it); the file has "
        f"distinct_blocks, its name before 2026-12-04, but beside today's {counts}, which a pcs before then never "
        "wrote apart (its block_accesses counted the cacheable blocks): not that pcs's file"]
    assert not (tmp_path / "page.html").exists()


def test_todays_file_alone_is_untouched(today):
    # block_accesses 3 beside cacheable_blocks 2: both today's names (every hash vs cacheable), no old key
    assert upgrade_curve_payload(today) is today


@pytest.mark.parametrize("disguised, shown", [(2.0, "2.0"), (True, "true")])
def test_an_old_name_equal_only_by_python_equality_is_refused(tmp_path, today, report_json, disguised, shown):
    # the fixture's distinct_cacheable_blocks is 2 (1 and 2 differ above); 2.0 == 2 and True == 1 in Python, but
    # neither is the count 2 as written: a float or a bool must not pass as agreeing (found by a review, 2026-12-04)
    assert today["distinct_cacheable_blocks"] == 2
    value = dict(today, distinct_cacheable_blocks=1) if disguised is True else today
    r, f = report_json(dict(value, distinct_blocks=disguised))
    assert r.exit_code == 2, r.output
    want = 1 if disguised is True else 2
    assert f"which disagree: {shown} and {want}" in r.output
    assert not (tmp_path / "page.html").exists()
