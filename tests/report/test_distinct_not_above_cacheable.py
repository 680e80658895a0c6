"""A curve JSON whose distinct_cacheable_blocks exceeds its cacheable_blocks -- distinct ids among those blocks, so
at most their count -- was drawn by pcs report (found 2026-12-04); now refused like the other range errors:
'FILE: field ...: ...', exit 2, no page.

The trace: one request of 1,100 tokens with hash ids [7, 8, 9], block 512: the last token is never a hit, so 1,099
tokens can hit, 2 whole blocks: cacheable_blocks 2, distinct_cacheable_blocks 2.
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pcs.cli.main import cli


@pytest.fixture(scope="module")
def today(tmp_path_factory) -> dict:
    path = tmp_path_factory.mktemp("t") / "t.jsonl"
    path.write_text(json.dumps({"timestamp": 0, "input_length": 1100, "output_length": 1, "hash_ids": [7, 8, 9]})
                    + "\n")
    r = CliRunner().invoke(cli, ["curve", str(path), "--capacities", "4blocks", "--format", "json"])
    assert r.exit_code == 0, r.output
    payload = json.loads(r.stdout)
    assert (payload["cacheable_blocks"], payload["distinct_cacheable_blocks"]) == (2, 2)
    return payload


def _old(payload: dict) -> dict:
    """The file a pcs before 2026-12-04 wrote: cacheable_blocks under block_accesses, distinct under distinct_blocks."""
    names = {"cacheable_blocks": "block_accesses", "distinct_cacheable_blocks": "distinct_blocks"}
    return {names.get(k, k): v for k, v in payload.items() if k != "block_accesses"}


def _report(tmp_path, payload: dict):
    f = tmp_path / "c.json"
    f.write_text(json.dumps(payload))
    r = CliRunner().invoke(cli, ["report", str(f), "-o", str(tmp_path / "c.html")])
    return r, str(f)


def test_as_many_distinct_as_cacheable_blocks_is_drawn(tmp_path, today):
    r, _ = _report(tmp_path, today)
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("old", [False, True])
def test_more_distinct_than_cacheable_blocks_is_refused(tmp_path, today, old):
    bad = dict(today, distinct_cacheable_blocks=3)          # 3 distinct among 2 blocks: impossible
    r, f = _report(tmp_path, _old(bad) if old else bad)
    assert r.exit_code == 2, r.output
    assert (f"{f}: field 'distinct_cacheable_blocks': must be at most cacheable_blocks (2): distinct ids among "
            "the cacheable blocks, got 3") in r.output
    assert not (tmp_path / "c.html").exists()


def test_a_sampled_curves_null_distinct_count_is_not_compared(tmp_path, today):
    r, _ = _report(tmp_path, dict(today, distinct_cacheable_blocks=None))
    assert r.exit_code == 0, r.output
