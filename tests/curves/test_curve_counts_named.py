"""One name, one count: ``block_accesses`` and ``cacheable_blocks`` mean the same in the curve and the replay.

``block_accesses`` is every hash id the requests name, the partial last block
included; ``cacheable_blocks`` the full blocks a cache may hold
(docs/semantics.md §2). Worked by hand: a prompt of 1,100 tokens at 512-token
blocks names ceil(1100 / 512) = 3 ids, of which floor(1100 / 512) = 2 are full.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import pcs
from pcs.cli.main import cli
from pcs.curves.result import upgrade_curve_payload
from pcs.trace import Request

TIERS = ["gpu=16blocks"]


def _one_request() -> list[Request]:
    return [_request(0)]


def _request(i: int) -> Request:
    return Request(i, float(i), 1100, 1, np.array([7, 8, 9], dtype=np.uint64), 512)


def test_one_request_of_1100_tokens_counts_three_ids_and_two_full_blocks():
    c = pcs.curve(_one_request(), capacities=[4])
    assert (c.block_accesses, c.cacheable_blocks, c.distinct_cacheable_blocks) == (3, 2, 2)
    s = pcs.replay(_one_request(), tiers=TIERS, timing="sequential").summary
    assert (s.block_accesses, s.cacheable_blocks) == (3, 2)


def test_repeated_request_counts_every_access_and_distinct_full_blocks_once():
    """Twice the same 1,100-token prompt: 6 ids, 4 full, 2 distinct full ids (7 and 8; 9 is partial)."""
    reqs = [_request(0), _request(1)]
    d = pcs.curve(reqs, capacities=[4]).to_dict()
    assert (d["block_accesses"], d["cacheable_blocks"], d["distinct_cacheable_blocks"]) == (6, 4, 2)


def test_mooncake_curve_and_replay_agree(mooncake_conv):
    """The Mooncake conversation trace: 288,500 hash ids, 276,491 of them full blocks (docs/semantics.md §2)."""
    c = pcs.curve(str(mooncake_conv), capacities=[16384], belady=False)
    assert (c.requests, c.block_accesses, c.cacheable_blocks) == (12031, 288500, 276491)
    s = pcs.replay(str(mooncake_conv), tiers=["gpu=16384blocks"], timing="sequential").summary
    assert (s.block_accesses, s.cacheable_blocks) == (288500, 276491)


def test_text_title_names_both_counts(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"timestamp": 0, "input_length": 1100, "output_length": 1, "hash_ids": [7, 8, 9]})
                    + "\n")
    r = CliRunner().invoke(cli, ["curve", str(path), "--capacities", "4blocks"])
    assert r.exit_code == 0, r.output
    assert "1 request, 3 block accesses, 2 cacheable, block 512 tokens" in r.output


def test_old_curve_json_reads_under_todays_names():
    """A curve JSON before 2026-12-04 counted the cacheable blocks under block_accesses."""
    old = {"trace": "t", "block_size": 512, "requests": 1, "block_accesses": 2, "distinct_blocks": 2,
           "prompt_tokens": 1100}
    new = upgrade_curve_payload(old)
    assert new == {"trace": "t", "block_size": 512, "requests": 1, "cacheable_blocks": 2,
                   "distinct_cacheable_blocks": 2, "prompt_tokens": 1100}
    assert list(new) == ["trace", "block_size", "requests", "cacheable_blocks", "distinct_cacheable_blocks",
                         "prompt_tokens"]
    today = {"block_accesses": 3, "cacheable_blocks": 2}
    assert upgrade_curve_payload(today) is today


def test_report_draws_an_old_curve_json(tmp_path):
    pytest.importorskip("jinja2")
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"timestamp": 0, "input_length": 1100, "output_length": 1, "hash_ids": [7, 8, 9]})
                    + "\n")
    r = CliRunner().invoke(cli, ["curve", str(path), "--capacities", "4blocks", "--format", "json"])
    new = json.loads(r.stdout)
    old = {("block_accesses" if k == "cacheable_blocks" else "distinct_blocks" if k == "distinct_cacheable_blocks"
            else k): v for k, v in new.items() if k != "block_accesses"}
    for name, payload in (("new.json", new), ("old.json", old)):
        (tmp_path / name).write_text(json.dumps(payload))
        out = CliRunner().invoke(cli, ["report", str(tmp_path / name), "-o", str(tmp_path / (name + ".html"))])
        assert out.exit_code == 0, out.output


def test_the_old_distinct_blocks_attribute_names_its_new_one():
    """``.distinct_blocks`` was renamed on 2026-12-04: reading it raises AttributeError naming
    ``distinct_cacheable_blocks``, which holds the count (ids 7 and 8 of one 1,100-token request: 2)."""
    c = pcs.curve(_one_request(), capacities=[4])
    with pytest.raises(AttributeError, match="distinct_cacheable_blocks"):
        c.distinct_blocks
    assert not hasattr(c, "distinct_blocks") and c.distinct_cacheable_blocks == 2
    assert "distinct_blocks" not in c.to_dict()
