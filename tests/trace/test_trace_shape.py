"""Prefix-tree shape, conversations, shared-prefix share and the reuse-distance histogram, by hand."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from pcs.trace import open_trace, trace_stats
from pcs.trace.request import concat_batches
from pcs.trace.stats import distance_histogram
from pcs.trace.synth import SynthSpec
from pcs.trace.tree import conversation_ids

FORMATS_DIR = Path(__file__).resolve().parents[2] / "traces" / "formats"


def test_mooncake_excerpt_tree_by_hand():
    # Ids are chained, so nodes = the 31 distinct ids; one root (every request starts with id 0).
    # Children: 0 -> {14, 820, 975, 1541}; 26 -> {27, 3868}; 820 -> {821, 5023}; 1544 -> {1545, 3753}; others one.
    # Leaves: 27 (depth 15), 821 (3), 977 (4), 1545 (6), 3753 (6), 3869 (16), 5025 (5): mean 55 / 7.
    # Inner nodes 31 - 7 = 24 carry the 30 non-root nodes: fan-out 30 / 24 = 1.25, max 4, 4 branching nodes.
    st = trace_stats(open_trace(FORMATS_DIR / "mooncake_conv_8.jsonl"))
    assert (st["prefix_tree_nodes"], st["prefix_tree_roots"], st["prefix_tree_leaves"]) == (31, 1, 7)
    assert (st["prefix_tree_depth_max"], st["prefix_tree_leaf_depth_mean"]) == (16, 55 / 7)
    assert (st["prefix_tree_fanout_mean"], st["prefix_tree_fanout_max"], st["prefix_tree_branching_nodes"]) == \
        (1.25, 4, 4)
    # shared blocks (in >= 2 requests): 0 in all 8 (8 x 512); 14..26 in two (13 x 2 x 512); 820 (2 x 512);
    # 975, 976 (2 x 2 x 512); 977 = the partial block of 1902 tokens (1902 - 1536 = 366) twice; 1541..1544 (4 x 2 x 512)
    shared = 8 * 512 + 13 * 2 * 512 + 2 * 512 + 2 * 2 * 512 + 2 * 366 + 4 * 2 * 512
    assert st["shared_prefix_token_share"] == shared / 28214
    # conversations: line 134 contains 1544, the last full block line 67 computed; 138 contains 26 (line 2's);
    # 192 contains 820 (line 31's); 262 contains 976 (line 41's): 4 conversations of 2 turns
    assert (st["conversations"], st["conversation_turns_mean"], st["conversation_turns_max"]) == (4, 2.0, 2)
    h = st["reuse_distance_histogram"]
    assert sum(x["count"] for x in h) == 59 - 31  # every re-access is counted once


def test_distance_histogram_buckets():
    h = distance_histogram(np.array([0, 1, 2, 3, 4, 7, 8, 1 << 40], dtype=np.int64))
    assert [(x["from_blocks"], x["to_blocks"], x["count"]) for x in h[:5]] == \
        [(0, 0, 1), (1, 1, 1), (2, 3, 2), (4, 7, 2), (8, 15, 1)]
    assert h[-1]["from_blocks"] == 1 << 40 and h[-1]["count"] == 1 and len(h) == 42
    assert distance_histogram(np.zeros(0, dtype=np.int64)) == []


def test_inferred_conversations_match_the_recorded_sessions(tmp_path):
    # the synthetic generator records each request's chat and parent: the inferred rule should find (nearly) the
    # same grouping from the ids alone
    from pcs.trace.convert import write_trace
    from pcs.trace.synth import synth_batches, synth_requests

    spec = SynthSpec(num_requests=600, seed=5)
    out = tmp_path / "s.parquet"
    write_trace(synth_batches(synth_requests(spec), 512), out, "parquet", block_size=512, remap_ids=True,
                source_format="synth", with_session=True)
    b = concat_batches(list(open_trace(out).iter_batches()))
    true = conversation_ids(b)
    inferred = conversation_ids(dataclasses.replace(b, session_id=None, parent_id=None))
    pairs = set(zip(true.tolist(), inferred.tolist()))
    # a partition agrees when each true conversation maps to one inferred one and back
    assert len(pairs) <= 1.02 * (true.max() + 1) and abs(int(true.max()) - int(inferred.max())) <= 0.02 * true.max()


def test_a_trace_whose_ids_cycle_has_no_leaf_and_says_so(tmp_path):
    """Ids [1, 2] then [2, 1]: nodes (root,1) (1,2) (root,2) (2,1); 1 and 2 are both parents, so no node is a leaf
    and there is no mean depth to a leaf: JSON null, a dash in the table, no mean of an empty slice."""
    import json
    import warnings

    from click.testing import CliRunner

    from pcs.cli.main import cli

    path = tmp_path / "cyc.jsonl"
    path.write_text('{"timestamp": 0, "input_length": 1024, "output_length": 3, "hash_ids": [1, 2]}\n'
                    '{"timestamp": 1, "input_length": 1024, "output_length": 3, "hash_ids": [2, 1]}\n')
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for native in ("python", "c"):
            st = trace_stats(open_trace(path), native=native) if native == "python" or _c_built() else None
            if st is not None:
                assert (st["prefix_tree_nodes"], st["prefix_tree_leaves"], st["prefix_tree_leaf_depth_mean"]) == (4, 0, None)
        table = CliRunner().invoke(cli, ["trace", "stats", str(path)])
        js = CliRunner().invoke(cli, ["trace", "stats", str(path), "--format", "json"])
    assert table.exit_code == 0 and js.exit_code == 0, table.output + js.output
    line = next(ln for ln in table.output.splitlines() if ln.startswith("tree depth max / mean to a leaf"))
    assert line.split()[-3:] == ["2", "/", "-"] and "nan" not in table.output
    assert json.loads(js.output)["prefix_tree_leaf_depth_mean"] is None


def _c_built() -> bool:
    from pcs import _native

    return _native.built("statscan")
