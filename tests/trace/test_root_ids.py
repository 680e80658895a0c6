"""A request's first block has the root as its parent, told by its position, never by an id standing for "no parent":
every uint64 is some trace's real id (the readers take 0 .. 2**64 - 1), so 0, 2**64 - 1 or a hashing constant
in a trace must give the same answers as any other id. Values worked out by hand in each test."""
from __future__ import annotations

import json

import numpy as np
import pytest

from pcs.trace.reblock import check_chained, reblock_batch
from pcs.trace.request import RequestBatch
from pcs.trace.tree import prefix_tree_stats

#: Ids an implementation might take for "no parent": 0, 2**64 - 1, the golden-ratio constant (the reblock
#: module's old root), 2**63; 1 and 12345 as plain ids.
IDS = [0, 1, 12345, 2**63, 0x9E3779B97F4A7C15, 2**64 - 1]


def batch(rows: list[list[int]], prompts: list[int], bs: int = 512) -> RequestBatch:
    offs = np.concatenate(([0], np.cumsum([len(r) for r in rows]))).astype(np.int64)
    n = len(rows)
    return RequestBatch(0, bs, np.arange(n, dtype=np.float64), np.array(prompts, dtype=np.int64),
                        np.ones(n, dtype=np.int64), offs, np.array([i for r in rows for i in r], dtype=np.uint64))


@pytest.mark.parametrize("x", IDS)
def test_prefix_tree_with_any_id_as_a_parent(x):
    # rows [x, 5] (1,024 tokens) and [7]: nodes (root, x), (x, 5), (root, 7); roots x and 7; leaves 5 (depth 2) and
    # 7 (depth 1); x is the only inner node, with one child
    s = prefix_tree_stats(batch([[x, 5], [7]], [1024, 512]))
    assert s["prefix_tree_nodes"] == 3 and s["prefix_tree_roots"] == 2 and s["prefix_tree_leaves"] == 2
    assert s["prefix_tree_leaf_depth_mean"] == 1.5 and s["prefix_tree_depth_max"] == 2
    assert (s["prefix_tree_fanout_mean"], s["prefix_tree_fanout_max"], s["prefix_tree_branching_nodes"]) == (1.0, 1, 0)


@pytest.mark.parametrize("x", IDS)
def test_check_chained_with_any_id_as_a_parent(x):
    from pcs.errors import UserError

    check_chained(batch([[x, 5], [x, 5], [x]], [1024, 1024, 512]))   # 5 always follows x, x always the root
    with pytest.raises(UserError, match="not chained"):
        check_chained(batch([[5], [x, 5]], [512, 1024]))             # 5 follows the root, then x
    with pytest.raises(UserError, match="not chained"):
        check_chained(batch([[x], [7, x]], [512, 1024]))             # x follows the root, then 7


@pytest.mark.parametrize("x", IDS)
def test_upper_bound_ids_distinct_within_a_request(x):
    # [x, 2] at 512 -> 256: four parts a row; upper: block x's first part is shared with every root sibling
    # (family of the first blocks), block 2's first part is derived from its parent x; the two must differ
    up = reblock_batch(batch([[x, 2], [x, 2]], [1024, 1024]), 256, "upper")
    rows = np.split(up.block_hashes, up.block_offsets[1:-1])
    assert [r.size for r in rows] == [4, 4] and len(set(rows[0].tolist())) == 4
    assert rows[0].tolist() == rows[1].tolist()


@pytest.mark.parametrize("x", [1, 0x9E3779B97F4A7C15, 2**64 - 1])
def test_replay_interval_with_any_id_as_a_parent(tmp_path, x):
    from click.testing import CliRunner

    from pcs.cli.main import cli

    # two requests [x, 2] of 1,024 tokens at 256-token blocks: the second hits (1024 - 1) // 256 = 3 blocks
    # (the last prompt token is always computed), 768 of the 2,048 prompt tokens: 0.375 at both ends (one id
    # renamed changes nothing, so the bounds meet as they do for x = 1)
    path = tmp_path / "two.jsonl"
    row = {"input_length": 1024, "output_length": 1, "hash_ids": [x, 2]}
    path.write_text("".join(json.dumps({"timestamp": t, **row}) + "\n" for t in (0, 1)))
    res = CliRunner().invoke(cli, ["replay", str(path), "--block-size", "256", "--tier", "gpu=100blocks",
                                   "--timing", "sequential", "--format", "json", "-q"])
    assert res.exit_code == 0, res.output
    p = json.loads(res.output)
    assert p["hit_ratio_interval"] == [0.375, 0.375]
    assert p["single_sequence_hit_ratio_interval"] == [0.375, 0.375]


@pytest.mark.parametrize("x", IDS)
def test_trace_stats_prefix_tree_with_any_id_as_a_parent(tmp_path, x):
    from click.testing import CliRunner

    from pcs.cli.main import cli

    # the same two requests as above through `pcs trace stats` (the compiled one-pass scan, pcs/trace/_statscan.c)
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"timestamp": 0, "input_length": 1024, "output_length": 1, "hash_ids": [x, 5]}) + "\n"
                    + json.dumps({"timestamp": 1, "input_length": 512, "output_length": 1, "hash_ids": [7]}) + "\n")
    res = CliRunner().invoke(cli, ["trace", "stats", str(path), "--format", "json", "-q"])
    assert res.exit_code == 0, res.output
    s = json.loads(res.output)
    assert (s["prefix_tree_nodes"], s["prefix_tree_roots"], s["prefix_tree_leaves"]) == (3, 2, 2)
    assert (s["prefix_tree_leaf_depth_mean"], s["prefix_tree_fanout_mean"], s["prefix_tree_fanout_max"]) == (1.5, 1.0, 1)
