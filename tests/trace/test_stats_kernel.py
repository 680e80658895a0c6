"""The compiled one-pass ``trace stats`` scan (pcs/trace/_statscan.c) against the numpy reference.

- ``trace_stats(native="c")`` and ``trace_stats(native="python")`` give the same JSON on the committed
  samples, hypothesis traces (chained and arbitrary ids, several batches, every rule set) and the
  Mooncake trace (skipped without ../shared/traces or $PCS_SHARED_TRACES);
- a hand-worked trace (values in the comments);
- :func:`linear_percentile` / :func:`counted_histogram` against numpy on the repeated values.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import ALL_RULES, SETTINGS, arbitrary_traces, chained_traces, req
from pcs import _native
from pcs.trace import open_trace
from pcs.trace.batches import as_batches
from pcs.trace.stats import counted_histogram, distance_histogram, trace_stats
from pcs.trace.statscan import linear_percentile

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "traces").glob("*.jsonl")) + sorted((ROOT / "traces" / "formats").glob("*.jsonl"))
from conftest import MOONCAKE_CONV as MOONCAKE  # noqa: E402  (../shared/traces or $PCS_SHARED_TRACES)
needs_c = pytest.mark.skipif(not _native.built("statscan"), reason="compiled pcs.trace._statscan not built")


class Batches:
    """A trace of request objects cut into batches of ``rows`` requests (the kernel streams across them)."""

    def __init__(self, reqs, rows: int = 3, block_size: int = 4) -> None:
        self.reqs, self.rows, self.block_size = reqs, rows, block_size

    def iter_batches(self):
        return as_batches(self.reqs, rows=self.rows)


def both(trace, rules=None) -> tuple[str, str]:
    kw = {} if rules is None else {"rules": rules}
    return json.dumps(trace_stats(trace, native="c", **kw)), json.dumps(trace_stats(trace, native="python", **kw))


@needs_c
@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_kernel_is_the_reference_on_samples(path):
    try:
        c, ref = both(open_trace(path))
    except Exception as exc:  # a sample some reader refuses (block size, format): not this test's business
        pytest.skip(f"{path.name}: {exc}")
    assert c == ref


@needs_c
@SETTINGS
@given(reqs=chained_traces() | arbitrary_traces(), which=st.integers(0, len(ALL_RULES) - 1),
       rows=st.integers(1, 5))
def test_kernel_is_the_reference_on_hypothesis_traces(reqs, which, rows):
    c, ref = both(Batches(reqs, rows), ALL_RULES[which])
    assert c == ref


def shifted(reqs, split: int, shift: int):
    """Requests from ``split`` on with every id + ``shift`` (beyond the kernel's direct-mode limit of 2**20)."""
    return [dataclasses.replace(r, block_hashes=r.block_hashes + np.uint64(shift)) if i >= split else r
            for i, r in enumerate(reqs)]


@needs_c
@SETTINGS
@given(reqs=chained_traces() | arbitrary_traces(), split=st.integers(0, 14), rows=st.integers(1, 4),
       shift=st.sampled_from([2**20, 2**40, 2**64 - 64]))
def test_kernel_leaving_direct_mode_is_the_reference(reqs, split, rows, shift):
    # Small ids run in direct mode (id = record number); the first batch holding a large id moves every id
    # seen into the hash table (split 0: hashed from the start). Same JSON as the reference either way.
    c, ref = both(Batches(shifted(reqs, split, shift), rows))
    assert c == ref


@needs_c
@pytest.mark.skipif(not MOONCAKE.exists(), reason="Mooncake trace not present (../shared/traces or $PCS_SHARED_TRACES)")
def test_kernel_is_the_reference_on_mooncake():
    c, ref = both(open_trace(MOONCAKE))
    assert c == ref


@needs_c
def test_hand_trace():
    # Three requests of two full 4-token blocks: [1, 2], [1, 3], [1, 2] -> accesses 1 2 1 3 1 2.
    s = trace_stats(Batches([req([1, 2], 0.0), req([1, 3], 1.0), req([1, 2], 3.0)], rows=2), native="c")
    # Re-accesses: 1 at 2 (saw {2}: 1), 1 at 4 (saw {3}: 1), 2 at 5 (saw {1, 3}: 2); times 1, 2, 3 s.
    assert (s["distinct_blocks"], s["reaccess_share"]) == (3, 0.5)
    assert (s["reuse_distance_blocks_p50"], s["reuse_time_s_p50"]) == (1.0, 2.0)
    assert [h["count"] for h in s["reuse_distance_histogram"]] == [0, 2, 1]
    # Tree: (root, 1), (1, 2), (1, 3): 3 nodes, 1 root, leaves 2 and 3 at depth 2, node 1 has two children.
    assert (s["prefix_tree_nodes"], s["prefix_tree_roots"], s["prefix_tree_leaves"]) == (3, 1, 2)
    assert (s["prefix_tree_fanout_mean"], s["prefix_tree_branching_nodes"], s["prefix_tree_leaf_depth_mean"]) == (2.0, 1, 2.0)
    # Hit cap (8 - 1) // 4 = 1 block: requests 2 and 3 hit block 1 -> 8 of 24 prompt tokens.
    assert s["single_sequence_hit_tokens"] == 8
    # Ids 1 (3 x 4 tokens) and 2 (2 x 4) are in two or more requests: 20 of 24 tokens.
    assert s["shared_prefix_token_share"] == 20 / 24
    # Conversations (rule 3): request 1 registers id 2, request 2 registers 3, request 3 ends on 2 -> conv 0.
    assert (s["conversations"], s["conversation_turns_max"]) == (2, 2)


@SETTINGS
@given(vals=st.lists(st.integers(0, 50), min_size=1, max_size=40), q=st.sampled_from([0, 1, 50, 90, 99, 100]),
       as_float=st.booleans())
def test_linear_percentile_is_numpy(vals, q, as_float):
    x = np.array(vals, dtype=np.float64) / 7 if as_float else np.array(vals, dtype=np.int64)
    v, c = np.unique(x, return_counts=True)
    assert linear_percentile(v, c.astype(np.int64), q) == float(np.percentile(x, q))


@SETTINGS
@given(vals=st.lists(st.integers(0, 5000), max_size=40))
def test_counted_histogram_is_distance_histogram(vals):
    x = np.array(vals, dtype=np.int64)
    v, c = np.unique(x, return_counts=True)
    assert counted_histogram(v, c.astype(np.int64)) == distance_histogram(x)
