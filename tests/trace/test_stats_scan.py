"""The vectorised / compiled parts of ``trace_stats`` against their plain references.

- :func:`reuse_distances_scan` (the C stack-depth kernel) vs :func:`reuse_distances` (numpy) and a brute force;
- :func:`single_sequence_scan` (lead depths of the curve kernel) vs :func:`pcs.blocks.single_sequence_hits`;
- :func:`inferred_conversations` (numpy) vs :func:`inferred_conversations_reference` (the loop);
- :func:`prefix_tree_stats` vs a brute force over (parent, id) pairs with Python sets.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import ALL_RULES, SETTINGS, arbitrary_traces, chained_traces
from pcs import _native
from pcs.blocks import single_sequence_hits
from pcs.trace import open_trace
from pcs.trace.batches import as_batches
from pcs.trace.request import concat_batches
from pcs.trace.stats import reuse_distances, reuse_distances_scan, single_sequence_scan
from pcs.trace.tree import inferred_conversations, inferred_conversations_reference, prefix_tree_stats

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = [ROOT / "traces" / n for n in ("sample_chat.jsonl", "sample_exact.jsonl", "sample_azure_conv.jsonl",
                                         "formats/mooncake_conv_8.jsonl")]
needs_c = pytest.mark.skipif(not _native.built("stackdist"), reason="compiled stack-depth kernel not built")


def whole(reqs):
    return concat_batches(list(as_batches(reqs)), 4)


def brute_distances(ids):
    """Distinct other ids since the previous access of the same id, by slicing (hand rule, Mattson 1970)."""
    out = []
    for i, x in enumerate(ids):
        prev = [j for j in range(i) if ids[j] == x]
        if prev:
            out.append(len(set(ids[prev[-1] + 1:i]) - {x}))
    return out


@needs_c
@SETTINGS
@given(ids=st.lists(st.integers(0, 6), max_size=60))
def test_reuse_distances_scan_is_the_numpy_reference(ids):
    arr = np.array(ids, dtype=np.uint64)
    assert reuse_distances_scan(arr).tolist() == reuse_distances(arr).tolist() == brute_distances(ids)


def test_reuse_distances_scan_hand_example():
    # 1 2 3 2 1 1: the second 2 saw {3} -> 1; the second 1 saw {2, 3} -> 2; the third 1 saw nothing -> 0.
    assert reuse_distances_scan(np.array([1, 2, 3, 2, 1, 1], dtype=np.uint64)).tolist() == [1, 2, 0]


@needs_c
@SETTINGS
@given(reqs=chained_traces() | arbitrary_traces(), which=st.integers(0, len(ALL_RULES) - 1))
def test_single_sequence_scan_is_the_reference(reqs, which):
    rules = ALL_RULES[which]
    assert single_sequence_scan(whole(reqs), rules) == single_sequence_hits(reqs, rules)


@SETTINGS
@given(reqs=chained_traces() | arbitrary_traces())
def test_inferred_conversations_are_the_reference_loop(reqs):
    b = whole(reqs)
    assert inferred_conversations(b).tolist() == inferred_conversations_reference(b).tolist()


def brute_tree(reqs):
    """Prefix-tree shape from Python sets: nodes are (parent or None, id) pairs with their first depth."""
    nodes, depth = {}, []
    for r in reqs:
        ids = [int(x) for x in r.block_hashes]
        depth.append(len(ids))
        for i, h in enumerate(ids):
            nodes.setdefault((ids[i - 1] if i else None, h), i + 1)
    kids: dict = {}
    for par, _ in nodes:
        if par is not None:
            kids[par] = kids.get(par, 0) + 1
    leaves = [d for (_, h), d in nodes.items() if h not in kids]
    return {"prefix_tree_nodes": len(nodes), "prefix_tree_roots": sum(p is None for p, _ in nodes),
            "prefix_tree_leaves": len(leaves), "prefix_tree_depth_max": max(depth),
            # no leaf when ids cycle ([1, 1]): no mean, None (JSON null, "-" in the table)
            "prefix_tree_leaf_depth_mean": sum(leaves) / len(leaves) if leaves else None,
            "prefix_tree_fanout_mean": sum(kids.values()) / len(kids) if kids else 0.0,
            "prefix_tree_fanout_max": max(kids.values(), default=0),
            "prefix_tree_branching_nodes": sum(v >= 2 for v in kids.values())}


@SETTINGS
@given(reqs=chained_traces() | arbitrary_traces())
def test_prefix_tree_stats_match_a_brute_force(reqs):
    if not any(len(r.block_hashes) for r in reqs):
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)      # no mean of an empty slice
        got = prefix_tree_stats(whole(reqs))
    assert got == pytest.approx(brute_tree(reqs))


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_samples_agree_with_the_references(path):
    b = concat_batches(list(open_trace(path).iter_batches()))
    assert inferred_conversations(b).tolist() == inferred_conversations_reference(b).tolist()
    if _native.built("stackdist"):
        assert single_sequence_scan(b) == single_sequence_hits(b.requests())
