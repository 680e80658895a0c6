"""Stack depths: both kernels against a move-to-front list, and against each other.

The reference is the definition itself: an explicit LRU stack (a python
list, most recent first) where a block's depth is its index at the start of
its request, and the request's blocks are then moved to the front tail
first, head last.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcs import _native
from pcs.curves import stackdist
from pcs.curves.stackdist import concat, depth_histograms, flatten_columns, lead_depths, stack_depths
from helpers import arbitrary_traces, rules_strategy

needs_c = pytest.mark.skipif(stackdist.available_kernel() != "c", reason="compiled kernel not built")


def reference_depths(requests: list[list[int]]) -> list[int]:
    stack: list[int] = []  # most recent first
    out = []
    for ids in requests:
        out.extend(stack.index(k) if k in stack else -1 for k in ids)
        for k in reversed(ids):  # tail first ... head last: the head ends on top
            if k in stack:
                stack.remove(k)
            stack.insert(0, k)
    return out


def _flat(requests: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    keys = np.array([k for ids in requests for k in ids], dtype=np.uint64)
    offsets = np.concatenate(([0], np.cumsum([len(ids) for ids in requests]))).astype(np.int64)
    return keys, offsets


def test_hand_trace():
    # [7 8] -> both cold; stack 7 8.  [7 9] -> 7 at depth 0, 9 cold; stack 7 9 8.
    # [7 8] -> 7 at depth 0, 8 below 7 and 9: depth 2.
    reqs = [[7, 8], [7, 9], [7, 8]]
    assert reference_depths(reqs) == [-1, -1, 0, -1, 0, 2]
    for kernel in ("python", stackdist.available_kernel()):
        depths, distinct = stack_depths(*_flat(reqs), kernel)
        assert depths.tolist() == [-1, -1, 0, -1, 0, 2] and distinct == 3


requests_strategy = st.lists(st.lists(st.sampled_from([0, 1, 2, 3, 5, 8, 2**63, 2**64 - 1]), max_size=6),
                             min_size=0, max_size=25)


@settings(max_examples=300, deadline=None)
@given(requests_strategy)
def test_kernels_match_the_definition(reqs):
    expected = reference_depths(reqs)
    keys, offsets = _flat(reqs)
    py, n_py = stack_depths(keys, offsets, "python")
    assert py.tolist() == expected and n_py == len({k for ids in reqs for k in ids})
    lead = lead_depths(np.array(expected, dtype=np.int64), offsets).tolist()
    assert stack_depths(keys, offsets, "python", lead=True)[0].tolist() == lead
    if stackdist.available_kernel() == "c":
        c, n_c = stack_depths(keys, offsets, "c")
        assert c.tolist() == expected and n_c == n_py
        assert stack_depths(keys, offsets, "c", lead=True)[0].tolist() == lead


@needs_c
def test_kernels_agree_on_a_large_random_stream():
    # 60k accesses over 20k ids: grows the C hash table past its 4096 start
    rng = np.random.default_rng(7)
    lens = rng.integers(0, 40, 3000)
    offsets = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
    keys = (rng.zipf(1.3, offsets[-1]) % 20_000).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    c, n_c = stack_depths(keys, offsets, "c")
    py, n_py = stack_depths(keys, offsets, "python")
    assert np.array_equal(c, py) and n_c == n_py == len(np.unique(keys))
    lead_c, _ = stack_depths(keys, offsets, "c", lead=True)
    assert np.array_equal(lead_c, lead_depths(py, offsets))
    weights = rng.integers(0, 600, keys.shape[0])
    for mine, ref in zip(depth_histograms(lead_c, weights, "c"), depth_histograms(lead_c, weights, "python")):
        assert np.array_equal(mine, ref)


def test_depth_histograms_by_hand():
    # lead 1 1 0 -1 2 with weights 5 2 3 7 4: depth 0 -> 3 (1 access), 1 -> 7 (2), 2 -> 4 (1); -1 skipped
    for kernel in ("python", stackdist.available_kernel()):
        w, b = depth_histograms(np.array([1, 1, 0, -1, 2]), np.array([5, 2, 3, 7, 4]), kernel)
        assert w.tolist() == [3, 7, 4] and b.tolist() == [1, 2, 1]
        w, b = depth_histograms(np.array([-1, -1]), np.array([1, 1]), kernel)
        assert w.shape == b.shape == (0,)


@needs_c
def test_kernels_agree_on_a_trace(exact_trace):
    from pcs.curves.api import load_accesses
    from pcs.trace import open_trace

    flat, _ = load_accesses(open_trace(exact_trace))
    c, n_c = stack_depths(flat.block_hashes, flat.req_offsets, "c")
    py, n_py = stack_depths(flat.block_hashes, flat.req_offsets, "python")
    assert np.array_equal(c, py) and n_c == n_py == len(np.unique(flat.block_hashes))
    # chained ids: depths strictly increase along every request until the first cold block
    assert np.array_equal(lead_depths(c, flat.req_offsets), c)


def test_lead_depths_running_max():
    # request 1: 0 3 2 -> 0 3 3; request 2: 1 cold 0 -> 1 cold cold
    assert lead_depths(np.array([0, 3, 2, 1, -1, 0]), np.array([0, 3, 6])).tolist() == [0, 3, 3, 1, -1, -1]
    # empty requests in between are fine
    assert lead_depths(np.array([5, 0]), np.array([0, 0, 1, 1, 2])).tolist() == [5, 0]


@settings(max_examples=200, deadline=None)
@given(arbitrary_traces(), rules_strategy)
def test_flatten_applies_block_rules_per_request(reqs, rules):
    p = np.array([r.prompt_tokens for r in reqs], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum([len(r.block_hashes) for r in reqs])))
    hashes = np.concatenate([r.block_hashes for r in reqs])
    flat = flatten_columns(p, offsets, hashes, reqs[0].block_size, rules)
    assert flat.prompt_tokens == int(p.sum()) and flat.num_requests == len(reqs)
    for i, r in enumerate(reqs):
        bs, pt, h = r.block_size, r.prompt_tokens, r.block_hashes
        n = rules.cacheable_blocks(pt, len(h), bs)
        cap = rules.max_hit_blocks(pt, len(h), bs)
        a, b = flat.req_offsets[i], flat.req_offsets[i + 1]
        assert b - a == n and np.array_equal(flat.block_hashes[a:b], h[:n])
        w = flat.hit_weight_tokens[a:b]
        for hits in range(0, n + 1):  # any lead: the weights add up to hit_tokens(min(cap, lead))
            assert w[:hits].sum() == rules.hit_tokens(min(cap, hits), pt, bs)
    halves = concat([flatten_columns(p[:1], offsets[:2], hashes[:offsets[1]], reqs[0].block_size, rules),
                     flatten_columns(p[1:], offsets[1:] - offsets[1], hashes[offsets[1]:], reqs[0].block_size, rules)])
    assert np.array_equal(halves.block_hashes, flat.block_hashes) and np.array_equal(halves.req_offsets, flat.req_offsets)
    assert np.array_equal(halves.hit_weight_tokens, flat.hit_weight_tokens)


def test_input_errors(monkeypatch):
    keys, offsets = _flat([[1, 2], [3]])
    with pytest.raises(ValueError, match="kernel"):
        stack_depths(keys, offsets, "gpu")
    with pytest.raises(ValueError, match="req_offsets"):
        stack_depths(keys, np.array([0, 2, 1, 3]))
    with pytest.raises(ValueError, match="req_offsets"):
        stack_depths(keys, np.array([0, 2]))
    with pytest.raises(ValueError, match="block_size"):
        flatten_columns(np.array([4]), np.array([0, 1]), keys[:1], 0)
    monkeypatch.setitem(_native._loaded, "stackdist", None)
    with pytest.raises(ValueError, match="not built"):
        stack_depths(keys, offsets, "c")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # auto without the twin falls back silently: the CLI notes it once per run
        depths, _ = stack_depths(keys, offsets, "auto")
    assert depths.tolist() == [-1, -1, -1]


@needs_c
def test_c_kernel_rejects_bad_buffers():
    from pcs.curves import _stackdist

    keys, offsets = _flat([[1, 2], [3]])
    with pytest.raises(ValueError):
        _stackdist.stack_depths(keys, offsets, np.empty(2, np.int64))  # out too short
    with pytest.raises(ValueError):
        _stackdist.stack_depths(keys, np.array([0, 3, 2, 3], np.int64), np.empty(3, np.int64))
    with pytest.raises(ValueError):
        _stackdist.stack_depths(keys, np.array([1, 3], np.int64), np.empty(3, np.int64))
    with pytest.raises(ValueError):  # a depth beyond the histogram
        _stackdist.histograms(np.array([0, 3]), np.array([1, 1]), np.empty(2, np.int64), np.empty(2, np.int64))


def test_hit_weights_fast_and_general_forms_agree():
    """The O(R) weight fill equals min((pos+1) bs, P) - min(pos bs, P) zeroed from cap on,
    computed here per block in plain Python, on random (also malformed: more ids than
    ceil(P / bs)) requests."""
    from pcs.curves.stackdist import _hit_weights

    rng = np.random.default_rng(3)
    for _ in range(200):
        bs = int(rng.integers(1, 6))
        r = int(rng.integers(1, 7))
        p = rng.integers(0, 20, r).astype(np.int64)
        n = rng.integers(0, 8, r).astype(np.int64)
        cap = np.array([int(rng.integers(0, k + 1)) for k in n], np.int64)
        offs = np.concatenate(([0], np.cumsum(n))).astype(np.int64)
        want = [0 if pos >= c else min((pos + 1) * bs, P) - min(pos * bs, P)
                for P, k, c in zip(p.tolist(), n.tolist(), cap.tolist()) for pos in range(k)]
        assert _hit_weights(p, n, cap, offs, bs).tolist() == want
