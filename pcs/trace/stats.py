"""``trace_stats``: what a trace asks of a prefix cache, in one streaming pass.

Keys of the returned dict (flat, stable; documented in docs/traces.md):

- ``trace``, ``format``, ``block_size``, ``requests``, ``skipped``, ``skipped_lines`` (the first skipped lines
  named: :func:`pcs.trace.api.skipped_lines_json`), ``header_note`` (a CSV header's columns read past:
  :func:`pcs.trace.api.header_note`; None for none);
- ``time_span_s`` (last minus first arrival), ``arrival_rate_rps``
  (requests / time_span_s; None for a zero span);
- ``prompt_tokens_{mean,p50,p99,max,total}``, ``output_tokens_{mean,p50,p99,max,total}``,
  ``blocks_per_request_{mean,p50,p99,max}``;
- ``block_accesses`` (block hashes over all requests, partial last blocks
  included), ``distinct_blocks`` (distinct ids);
- ``single_sequence_hit_ratio`` (token-weighted, from
  :func:`pcs.blocks.single_sequence_hits`: infinite cache, requests in order,
  chain walk stops at the first miss, full blocks only, hits capped at
  ``prompt_tokens - 1`` tokens rounded down to blocks),
  ``single_sequence_hit_tokens``, ``requests_with_hit_share``;
- ``reaccess_share``: share of block accesses whose id was seen before;
- ``reuse_distance_blocks_{p50,p90,p99}``: over re-accesses, the number of
  *distinct* other ids accessed since the previous access of the same id
  (LRU stack distance minus one, Mattson et al. 1970: an LRU cache of
  ``d + 1`` blocks hits it); ``reuse_time_s_{p50,p90,p99}``: arrival time
  since that previous access. None when nothing is re-accessed;
- ``reuse_distance_histogram``: the distribution of those distances in
  power-of-two buckets, a list of ``{"from_blocks", "to_blocks", "count",
  "share"}`` (0, 1, 2-3, 4-7, ...; share of re-accesses);
- ``reuse``: where the ids' sharing comes from (``Trace.reuse``: recorded,
  hashed from token ids, or a synthesised assumption);
- the prefix tree's shape (:func:`pcs.trace.tree.prefix_tree_stats`:
  ``prefix_tree_{nodes,roots,leaves,depth_max,leaf_depth_mean,fanout_mean,
  fanout_max,branching_nodes}``), ``shared_prefix_token_share`` (prompt
  tokens in blocks two or more requests contain), ``conversations``,
  ``conversation_turns_{mean,max}`` (:func:`pcs.trace.tree.conversation_ids`).

Percentiles use numpy's default linear interpolation. Memory: 16 bytes per
request and 16 bytes per block access (ids and arrival), no Python objects
per request.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pcs import _native
from pcs.blocks import BlockRules, SingleSequenceResult, single_sequence_hits
from pcs.trace.request import concat_batches
from pcs.trace.tree import conversation_ids, prefix_tree_stats, recorded_conversations, shared_prefix_token_share

__all__ = ["trace_stats", "previous_occurrence", "reuse_distances", "reuse_distances_scan", "single_sequence_scan",
           "distance_histogram", "counted_histogram"]


def previous_occurrence(ids: np.ndarray) -> np.ndarray:
    """Index of the previous access of the same id, -1 for a first access.

    Args:
        ids: shape (n,), any integer dtype.
    Returns:
        int64, shape (n,).

    >>> previous_occurrence(np.array([5, 7, 5, 5])).tolist()
    [-1, -1, 0, 2]
    """
    order = np.argsort(ids, kind="stable")
    s = ids[order]
    same = s[1:] == s[:-1]
    prev = np.full(ids.size, -1, dtype=np.int64)
    prev[order[1:][same]] = order[:-1][same]
    return prev


def _count_below_before(a: np.ndarray, pos: np.ndarray, thr: np.ndarray) -> np.ndarray:
    """For each query k: #{j < pos[k] : a[j] < thr[k]} (a >= -1, thr >= 0).

    Dyadic decomposition of [0, pos): at level L a query whose pos has bit L
    set counts inside the aligned block of 2**L points ending at
    ``(pos >> L) << L``, by binary search in that level's (block, value)-sorted
    keys. O(n log^2 n) numpy work, no Python loop over points.
    """
    n = a.size
    m = np.int64(n + 2)
    out = np.zeros(pos.size, dtype=np.int64)
    j = np.arange(n, dtype=np.int64)
    a1 = a.astype(np.int64) + 1
    t1 = thr.astype(np.int64) + 1
    level = 0
    while (1 << level) <= n:
        has = (pos >> level) & 1 == 1
        if has.any():
            keys = np.sort((j >> level) * m + a1)
            blk = (pos[has] >> level) - 1
            out[has] += np.searchsorted(keys, blk * m + t1[has]) - np.searchsorted(keys, blk * m)
        level += 1
    return out


def reuse_distances(ids: np.ndarray, prev: np.ndarray | None = None) -> np.ndarray:
    """Distinct other ids between each re-access and the previous access of its id.

    Args:
        ids: shape (n,), the access sequence.
        prev: :func:`previous_occurrence` of ``ids`` if already computed.
    Returns:
        int64, one value per re-access (positions where prev >= 0), in order.

    Identity used: the distinct ids in (p, i) are the accesses j there whose
    own previous access is before p, so d = #{j < i : prev[j] < p} - (p + 1)
    (every j <= p has prev[j] < p).

    >>> reuse_distances(np.array([1, 2, 3, 2, 1, 1])).tolist()
    [1, 2, 0]
    """
    if prev is None:
        prev = previous_occurrence(ids)
    pos = np.flatnonzero(prev >= 0).astype(np.int64)
    p = prev[pos]
    return _count_below_before(prev, pos, p) - (p + 1)


def reuse_distances_scan(ids: np.ndarray, prev: np.ndarray | None = None) -> np.ndarray:
    """:func:`reuse_distances` through the compiled stack-depth kernel when it is built.

    Each access is a request of one block for :func:`pcs.curves.stackdist.stack_depths`,
    whose depth of a re-access is the number of distinct ids used since the
    previous access (Mattson et al. 1970) -- the same quantity; -1 marks a
    first access. O(N log N) in C instead of O(N log^2 N) numpy sorts.
    tests/trace/test_stats_scan.py diffs it against :func:`reuse_distances`.

    Args:
        ids: uint64-convertible, shape (n,); prev: used only by the numpy fallback.
    Returns:
        int64, one value per re-access, in order.
    """
    if not _native.built("stackdist") or ids.dtype != np.uint64:
        return reuse_distances(ids, prev)
    from pcs.curves.stackdist import stack_depths

    depths, _ = stack_depths(ids, np.arange(ids.size + 1, dtype=np.int64), kernel="c")
    return depths[depths >= 0]


def single_sequence_scan(whole, rules: BlockRules = BlockRules()) -> SingleSequenceResult:
    """:func:`pcs.blocks.single_sequence_hits` of a whole-trace batch, from the compiled curve kernel.

    The single-sequence replay is the LRU curve at infinite capacity
    (docs/semantics.md §12, §14): block i of a request hits iff its lead depth
    (:func:`pcs.curves.stackdist.stack_depths`, ``lead=True``) is >= 0 and i is
    below the request's hit cap; a request's hit tokens are the sum of its hit
    blocks' tokens, ``min(k * block_size, prompt_tokens)``. Falls back to the
    per-request reference when the kernel is not built; tests/trace/test_stats_scan.py
    diffs the two on hypothesis traces under every rule set.

    Args:
        whole: a :class:`pcs.trace.RequestBatch` (all requests).
        rules: the block rules.
    Returns:
        :class:`pcs.blocks.SingleSequenceResult`.
    """
    if not _native.built("stackdist"):
        return single_sequence_hits(whole.requests(), rules)
    from pcs.curves.stackdist import flatten_columns, stack_depths

    flat = flatten_columns(whole.prompt_tokens, whole.block_offsets, whole.block_hashes, whole.block_size, rules)
    lead, _ = stack_depths(flat.block_hashes, flat.req_offsets, kernel="c", lead=True)
    n = np.diff(flat.req_offsets)
    pos = np.arange(lead.size, dtype=np.int64) - np.repeat(flat.req_offsets[:-1], n)
    p = np.asarray(whole.prompt_tokens, dtype=np.int64)
    bs = int(whole.block_size)
    cap = rules.columns(p, np.diff(np.asarray(whole.block_offsets, dtype=np.int64)), bs)[1]
    hit = (lead >= 0) & (pos < np.repeat(cap, n))
    k = np.bincount(np.repeat(np.arange(n.size), n)[hit], minlength=n.size)
    hit_tokens = int(np.minimum(k * bs, p).sum())
    return SingleSequenceResult(hit_tokens, int(p.sum()), int(k.sum()), int((k > 0).sum()), int(n.size))


def distance_histogram(dist: np.ndarray) -> list[dict[str, Any]]:
    """Counts of reuse distances in power-of-two buckets: 0, 1, 2-3, 4-7, ...

    Args:
        dist: int64 distances in blocks (>= 0).
    Returns:
        one dict per bucket up to the largest non-empty one:
        ``{"from_blocks", "to_blocks", "count", "share"}`` (share of ``dist.size``).

    >>> [(h["from_blocks"], h["to_blocks"], h["count"]) for h in distance_histogram(np.array([0, 1, 2, 3, 5]))]
    [(0, 0, 1), (1, 1, 1), (2, 3, 2), (4, 7, 1)]
    """
    if dist.size == 0:
        return []
    k = np.zeros(dist.size, dtype=np.int64)
    pos = dist > 0
    k[pos] = np.floor(np.log2(dist[pos])).astype(np.int64) + 1  # bit length
    big = dist >= (1 << 52)  # log2 of a float64 may round up just below a power of two
    if big.any():
        k[big] = [int(d).bit_length() for d in dist[big].tolist()]
    counts = np.bincount(k)
    return [{"from_blocks": 0 if i == 0 else 1 << (i - 1), "to_blocks": 0 if i == 0 else (1 << i) - 1,
             "count": int(c), "share": float(c / dist.size)} for i, c in enumerate(counts.tolist())]


def _pcts(x: np.ndarray, name: str, qs=(50, 99), with_mean: bool = True, with_max: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if with_mean:
        out[f"{name}_mean"] = float(x.mean()) if x.size else None
    for q in qs:
        out[f"{name}_p{q}"] = float(np.percentile(x, q)) if x.size else None
    if with_max:
        out[f"{name}_max"] = int(x.max()) if x.size else None
    return out


def _cat(parts: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


def trace_stats(trace, rules: BlockRules = BlockRules(), native: str | None = None) -> dict[str, Any]:
    """The statistics behind ``pcs trace stats`` (keys in the module docstring).

    Args:
        trace: a :class:`pcs.trace.Trace` (anything with ``iter_batches()``), or its path (opened with the
            defaults of :func:`pcs.trace.open_trace`).
        rules: block rules for the single-sequence hit ratio.
        native: ``auto``, ``c``, ``python`` or None (:func:`pcs._native.resolve` of the ``statscan``
            twin): ``c`` streams the trace once through the compiled one-pass scan
            (:mod:`pcs.trace.statscan`; memory: per distinct id, not per access), ``python`` runs the
            numpy reference on the whole trace. The same dict either way (tests/trace/test_stats_kernel.py).
    Returns:
        a flat dict of JSON-able values.
    Raises:
        PathError: a path that is missing, a directory or not readable (:func:`pcs.trace.api.opened`).
        InputError: bad trace content (from the reader).
        UserError: unknown ``native``, or ``c`` without the compiled twin.
    """
    from pcs.trace.api import opened

    trace = opened(trace)
    if _native.resolve(native, "statscan") == "c":
        from pcs.trace import statscan
        from pcs.trace.parquet import expected_block_hashes

        try:
            s = statscan.scan_stats(trace.iter_batches(), rules, expected_block_hashes(trace))
        except statscan.TooLarge:
            s = None
        if s is not None and s["prompt_tokens"].size:
            return _from_scan(trace, s)
    return _reference(trace, rules)


def exact_total(tokens: np.ndarray) -> int:
    """The exact sum of the token counts ``tokens`` (int64 (n,), each in 0 .. 2**63 - 1), a Python int: numpy's
    int64 sum when it cannot wrap (n * max <= 2**63 - 1), else Python's (two output lengths of 2**63 - 1, which the
    readers take, summed to -2 in int64)."""
    if tokens.size and int(tokens.max()) > (2**63 - 1) // tokens.size:
        return sum(tokens.tolist())
    return int(tokens.sum())


def _head(trace, arrival: np.ndarray, prompt: np.ndarray, output: np.ndarray, blocks: np.ndarray) -> dict[str, Any]:
    """The keys up to ``blocks_per_request_max`` (per-request columns)."""
    from pcs.trace.api import header_note, skipped_lines_json

    n = arrival.size
    span = float(arrival.max() - arrival.min()) if n else 0.0
    out: dict[str, Any] = {
        "trace": getattr(trace, "name", None), "format": getattr(trace, "format", None),
        "block_size": trace.block_size, "reuse": getattr(trace, "reuse", "recorded"),
        "requests": n, "skipped": getattr(trace, "skipped", 0), "skipped_lines": skipped_lines_json(trace),
        "header_note": header_note(trace), "time_span_s": span, "arrival_rate_rps": n / span if span > 0 else None,
    }
    out.update(_pcts(prompt, "prompt_tokens"))
    out["prompt_tokens_total"] = exact_total(prompt)
    out.update(_pcts(output, "output_tokens"))
    out["output_tokens_total"] = exact_total(output)
    out.update(_pcts(blocks, "blocks_per_request"))
    return out


def _counted_pcts(values: np.ndarray, counts: np.ndarray, name: str) -> dict[str, Any]:
    """``_pcts(np.repeat(values, counts), name, (50, 90, 99), False, False)`` from the counts."""
    from pcs.trace.statscan import linear_percentile

    return {f"{name}_p{q}": linear_percentile(values, counts, q) if counts.size else None for q in (50, 90, 99)}


def counted_histogram(values: np.ndarray, counts: np.ndarray) -> list[dict[str, Any]]:
    """:func:`distance_histogram` of ``np.repeat(values, counts)`` (values int64 >= 0, < 2**52; counts int64)."""
    total = int(counts.sum())
    if total == 0:
        return []
    k = np.zeros(values.size, dtype=np.int64)
    pos = values > 0
    k[pos] = np.floor(np.log2(values[pos])).astype(np.int64) + 1  # bit length (exact below 2**52)
    per = np.bincount(k, weights=counts).astype(np.int64)  # exact: counts < 2**53
    return [{"from_blocks": 0 if i == 0 else 1 << (i - 1), "to_blocks": 0 if i == 0 else (1 << i) - 1,
             "count": int(c), "share": float(c / total)} for i, c in enumerate(per.tolist())]


def _from_scan(trace, s: dict) -> dict[str, Any]:
    """The :func:`trace_stats` dict from :func:`pcs.trace.statscan.scan_stats`' result."""
    out = _head(trace, s["arrival_s"], s["prompt_tokens"], s["output_tokens"], s["num_blocks"])
    n, acc, ss = s["arrival_s"].size, s["accesses"], s["single"]
    out.update({
        "block_accesses": acc, "distinct_blocks": s["distinct"],
        "single_sequence_hit_ratio": ss.hit_ratio if ss.prompt_tokens else None,   # 0/0: null
        "single_sequence_hit_tokens": ss.hit_tokens,
        "requests_with_hit_share": ss.requests_with_hit / n, "reaccess_share": s["reaccesses"] / acc if acc else None,
    })
    out.update(_counted_pcts(s["dist_values"], s["dist_counts"], "reuse_distance_blocks"))
    out.update(_counted_pcts(s["time_values"], s["time_counts"], "reuse_time_s"))
    out["reuse_distance_histogram"] = counted_histogram(s["dist_values"], s["dist_counts"])
    out.update(_tree_keys(s["tree"], int(s["num_blocks"].max()) if acc else 0))
    total = int(s["prompt_tokens"].sum())
    out["shared_prefix_token_share"] = s["shared_tokens"] / total if total else None
    conv = recorded_conversations(s["session_id"], s["parent_id"])
    turns = s["turns"] if conv is None else (np.bincount(conv) if conv.size else np.zeros(0, dtype=np.int64))
    out["conversations"] = int(turns.size)
    out["conversation_turns_mean"] = float(turns.mean()) if turns.size else None
    out["conversation_turns_max"] = int(turns.max()) if turns.size else None
    return out


def _tree_keys(t: dict, depth_max: int) -> dict[str, Any]:
    """:func:`pcs.trace.tree.prefix_tree_stats`' keys from the kernel's node counts."""
    if t["nodes"] == 0:
        return dict.fromkeys(("prefix_tree_nodes", "prefix_tree_roots", "prefix_tree_leaves", "prefix_tree_depth_max",
                              "prefix_tree_leaf_depth_mean", "prefix_tree_fanout_mean", "prefix_tree_fanout_max",
                              "prefix_tree_branching_nodes"))
    return {
        "prefix_tree_nodes": t["nodes"], "prefix_tree_roots": t["roots"], "prefix_tree_leaves": t["leaves"],
        "prefix_tree_depth_max": depth_max, "prefix_tree_leaf_depth_mean": t["leaf_depth_sum"] / t["leaves"] if t["leaves"] else None,  # no leaf
        "prefix_tree_fanout_mean": t["kids_sum"] / t["inner"] if t["inner"] else 0.0,
        "prefix_tree_fanout_max": t["kids_max"], "prefix_tree_branching_nodes": t["branching"],
    }


def _reference(trace, rules: BlockRules) -> dict[str, Any]:
    """:func:`trace_stats` in numpy on the whole trace (the reference of the compiled scan)."""
    whole = concat_batches(list(trace.iter_batches()), trace.block_size)
    arrival, prompt, output, hashes = whole.arrival_s, whole.prompt_tokens, whole.output_tokens, whole.block_hashes
    blocks = whole.num_blocks
    n = arrival.size
    ss = single_sequence_scan(whole, rules)
    prev = previous_occurrence(hashes)
    re = prev >= 0
    dist = reuse_distances_scan(hashes, prev)
    access_t = np.repeat(arrival, blocks)
    rtime = access_t[re] - access_t[prev[re]]
    out = _head(trace, arrival, prompt, output, blocks)
    out.update({
        "block_accesses": int(hashes.size),
        "distinct_blocks": int(hashes.size - re.sum()),
        "single_sequence_hit_ratio": ss.hit_ratio if ss.prompt_tokens else None,   # 0/0: null
        "single_sequence_hit_tokens": ss.hit_tokens,
        "requests_with_hit_share": ss.requests_with_hit / n if n else None,
        "reaccess_share": float(re.mean()) if hashes.size else None,
    })
    out.update(_pcts(dist, "reuse_distance_blocks", (50, 90, 99), False, False))
    out.update(_pcts(rtime, "reuse_time_s", (50, 90, 99), False, False))
    out["reuse_distance_histogram"] = distance_histogram(dist)
    out.update(_shape(whole))
    return out


def _shape(whole) -> dict[str, Any]:
    """Prefix tree, shared-prefix token share and conversations (keys in the module docstring)."""
    out = prefix_tree_stats(whole)
    out["shared_prefix_token_share"] = shared_prefix_token_share(whole)
    conv = conversation_ids(whole)
    turns = np.bincount(conv) if conv.size else np.zeros(0, dtype=np.int64)
    out["conversations"] = int(turns.size)
    out["conversation_turns_mean"] = float(turns.mean()) if turns.size else None
    out["conversation_turns_max"] = int(turns.max()) if turns.size else None
    return out
