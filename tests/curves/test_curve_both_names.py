"""A curve JSON holding an old count name beside its new one (names30 renamed block_accesses -> cacheable_blocks
and distinct_blocks -> distinct_cacheable_blocks; block_accesses now counts every block hash) was read under the
new name with the old one ignored, whatever it said (found 2026-12-04). Now: refused when the two disagree, naming
the file and both fields; read when they agree.

The trace: one request of 1,100 tokens with hash ids [7, 8, 9], block 512: 3 block accesses; the last token is
never a hit, so 1,099 tokens can hit, 2 whole blocks (1,024 tokens): cacheable_blocks 2, both distinct.
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli
from pcs.curves.result import upgrade_curve_payload
from pcs.errors import UserError


@pytest.fixture(scope="module")
def today(tmp_path_factory) -> dict:
    path = tmp_path_factory.mktemp("t") / "t.jsonl"
    path.write_text(json.dumps({"timestamp": 0, "input_length": 1100, "output_length": 1, "hash_ids": [7, 8, 9]})
                    + "\n")
    r = CliRunner().invoke(cli, ["curve", str(path), "--capacities", "4blocks", "--format", "json"])
    assert r.exit_code == 0, r.output
    payload = json.loads(r.stdout)
    assert (payload["block_accesses"], payload["cacheable_blocks"], payload["distinct_cacheable_blocks"]) == (3, 2, 2)
    return payload


def _old(payload: dict) -> dict:
    """The file a pcs before 2026-12-04 wrote: cacheable_blocks under block_accesses, distinct under distinct_blocks,
    no count of every hash."""
    names = {"cacheable_blocks": "block_accesses", "distinct_cacheable_blocks": "distinct_blocks"}
    return {names.get(k, k): v for k, v in payload.items() if k != "block_accesses"}


def _report(tmp_path, payload: dict):
    f = tmp_path / "c.json"
    f.write_text(json.dumps(payload))
    r = CliRunner().invoke(cli, ["report", str(f), "-o", str(tmp_path / "c.html")])
    return r, str(f)


def test_todays_names_with_an_equal_old_distinct_blocks_are_read(tmp_path, today):
    both = dict(today, distinct_blocks=2)
    up = upgrade_curve_payload(both)
    assert "distinct_blocks" not in up and up["distinct_cacheable_blocks"] == 2 and up["block_accesses"] == 3
    r, _ = _report(tmp_path, both)
    assert r.exit_code == 0, r.output


def test_todays_names_with_a_different_old_distinct_blocks_are_refused(tmp_path, today):
    r, f = _report(tmp_path, dict(today, distinct_blocks=1))
    assert r.exit_code == 2, r.output
    assert (f"{f}: the curve has both distinct_blocks (its name before 2026-12-04) and distinct_cacheable_blocks "
            "(today's name), which disagree: 1 and 2") in r.output
    assert not (tmp_path / "c.html").exists()


def test_an_old_file_given_cacheable_blocks_is_read_when_it_agrees(tmp_path, today):
    mixed = dict(_old(today), cacheable_blocks=2)          # old block_accesses 2 == cacheable_blocks 2
    up = upgrade_curve_payload(mixed)
    assert (up["cacheable_blocks"], up["distinct_cacheable_blocks"]) == (2, 2)
    assert "block_accesses" not in up and "distinct_blocks" not in up     # the old meaning is not today's count
    r, _ = _report(tmp_path, mixed)
    assert r.exit_code == 0, r.output


def test_an_old_file_given_a_different_cacheable_blocks_is_refused(today):
    with pytest.raises(UserError, match=r"both block_accesses \(its name before 2026-12-04\) and cacheable_blocks "
                                        r"\(today's name\), which disagree: 2 and 3"):
        upgrade_curve_payload(dict(_old(today), cacheable_blocks=3))


def test_todays_file_alone_is_untouched(today):
    # block_accesses 3 beside cacheable_blocks 2: both today's names (every hash vs cacheable), no old key
    assert upgrade_curve_payload(today) is today


@pytest.mark.parametrize("disguised, shown", [(2.0, "2.0"), (True, "true")])
def test_an_old_name_equal_only_by_python_equality_is_refused(tmp_path, today, disguised, shown):
    # the fixture's distinct_cacheable_blocks is 2 (1 and 2 differ above); 2.0 == 2 and True == 1 in Python, but
    # neither is the count 2 as written: a float or a bool must not pass as agreeing (found by a review, 2026-12-04)
    assert today["distinct_cacheable_blocks"] == 2
    value = dict(today, distinct_cacheable_blocks=1) if disguised is True else today
    r, f = _report(tmp_path, dict(value, distinct_blocks=disguised))
    assert r.exit_code == 2, r.output
    want = 1 if disguised is True else 2
    assert f"which disagree: {shown} and {want}" in r.output
    assert not (tmp_path / "c.html").exists()
