"""The prefix tree of a trace and its conversations: shape statistics that transforms must keep.

Block hashes are chained (docs/semantics.md §1): a block's id stands for its
whole prefix, so the requests of a trace spell out a tree whose nodes are
(parent id, id) pairs, the parent being the previous id of the same request
(a fixed root for block 0). This module measures that tree and groups
requests into conversations.

Conversations (:func:`conversation_ids`), from the best evidence the trace has:

1. a ``parent_id`` column (Bailian ``parent_chat_id`` -> ``chat_id``): a
   request joins its parent's conversation;
2. else a ``session_id`` column: one conversation per session (-1: alone);
3. else inferred from the ids, by the chat-API convention that a later turn
   resends the earlier turns: request r *ends a turn* at its last full block
   when r computed that block first (its id appears for the first time
   there); a later request containing that id continues r's conversation
   (the longest such match wins); otherwise it opens a conversation. A block
   every request shares (a system prompt) ends no turn unless a request
   consisting of it alone came first, so it does not glue conversations.

Memory: a few int64 arrays of the trace's length in blocks.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pcs.trace.request import RequestBatch

__all__ = ["block_tokens", "conversation_ids", "recorded_conversations", "session_keys", "first_access", "prefix_tree_stats", "shared_prefix_token_share"]


def first_access(hashes: np.ndarray) -> np.ndarray:
    """bool, shape (n,): True where an id appears for the first time.

    >>> first_access(np.array([5, 7, 5], dtype=np.uint64)).tolist()
    [True, True, False]
    """
    _, idx = np.unique(hashes, return_index=True)
    out = np.zeros(hashes.size, dtype=bool)
    out[idx] = True
    return out


def block_tokens(b: RequestBatch) -> np.ndarray:
    """int64, shape (num block accesses,): tokens in each block (the partial last block holds the rest).

    >>> from pcs.trace.request import RequestBatch as RB
    >>> one = np.array([0, 3], dtype=np.int64)
    >>> block_tokens(RB(0, 16, np.zeros(1), np.array([40]), np.array([0]), one, np.arange(3, dtype=np.uint64))).tolist()
    [16, 16, 8]
    """
    n = b.num_blocks
    out = np.full(int(b.block_offsets[-1]), b.block_size, dtype=np.int64)
    last = b.block_offsets[1:][n > 0] - 1
    out[last] = b.prompt_tokens[n > 0] - (n[n > 0] - 1) * b.block_size
    return out


def _has_parent(b: RequestBatch) -> np.ndarray:
    """bool, shape (num block accesses,): False at each request's first block (its parent is the root).

    Told by position, not by a parent id standing for the root: every uint64 is some trace's real id."""
    out = np.ones(b.block_hashes.size, dtype=bool)
    out[b.block_offsets[:-1][b.num_blocks > 0]] = False
    return out


def prefix_tree_stats(b: RequestBatch) -> dict[str, Any]:
    """Shape of the prefix tree (nodes = distinct (parent, id) pairs).

    Returns keys ``prefix_tree_nodes``, ``prefix_tree_roots`` (distinct first
    blocks), ``prefix_tree_leaves`` (nodes no request extends),
    ``prefix_tree_depth_max`` (blocks; the longest request),
    ``prefix_tree_leaf_depth_mean`` (blocks from the root to a leaf, mean over
    leaves), ``prefix_tree_fanout_mean`` / ``_max`` (children per inner
    node, the root excluded), ``prefix_tree_branching_nodes`` (inner nodes
    with >= 2 children: where requests diverge). None for an empty trace.
    """
    h, real = b.block_hashes, _has_parent(b)
    if h.size == 0:
        return dict.fromkeys(("prefix_tree_nodes", "prefix_tree_roots", "prefix_tree_leaves", "prefix_tree_depth_max",
                              "prefix_tree_leaf_depth_mean", "prefix_tree_fanout_mean", "prefix_tree_fanout_max",
                              "prefix_tree_branching_nodes"))
    depth = np.arange(h.size, dtype=np.int64) - np.repeat(b.block_offsets[:-1], b.num_blocks) + 1
    # Nodes as one int64 key per access (dense parent, dense id): one 1-D sort, not a 2-column np.unique.
    uniq, dense = np.unique(h, return_inverse=True)
    par_dense = np.zeros(h.size, dtype=np.int64)  # 0: the root
    par_dense[1:][real[1:]] = dense[:-1][real[1:]] + 1
    keys, idx = np.unique(par_dense * (uniq.size + 1) + dense, return_index=True)
    node_par, node_id, node_depth = keys // (uniq.size + 1), keys % (uniq.size + 1), depth[idx]
    is_root = node_par == 0
    inner_par, kids = np.unique(node_par[~is_root], return_counts=True)
    is_parent = np.zeros(uniq.size + 1, dtype=bool)
    is_parent[inner_par - 1] = True
    leaves = ~is_parent[node_id]
    pairs = keys
    return {
        "prefix_tree_nodes": int(pairs.size),
        "prefix_tree_roots": int(is_root.sum()),
        "prefix_tree_leaves": int(leaves.sum()),
        "prefix_tree_depth_max": int(depth.max()),
        "prefix_tree_leaf_depth_mean": float(node_depth[leaves].mean()) if leaves.any() else None,  # no leaf: ids cycle
        "prefix_tree_fanout_mean": float(kids.mean()) if kids.size else 0.0,
        "prefix_tree_fanout_max": int(kids.max()) if kids.size else 0,
        "prefix_tree_branching_nodes": int((kids >= 2).sum()),
    }


def shared_prefix_token_share(b: RequestBatch) -> float | None:
    """Share of prompt tokens lying in blocks that two or more requests contain.

    Token-weighted over block accesses (a partial last block counts its own
    tokens); None for a trace without prompt tokens. Ids are unique within a
    request, so "accessed twice" means "in two requests".
    """
    total = int(b.prompt_tokens.sum())
    if total == 0:
        return None
    _, inv, counts = np.unique(b.block_hashes, return_inverse=True, return_counts=True)
    return float(block_tokens(b)[counts[inv] >= 2].sum() / total)


def conversation_ids(b: RequestBatch) -> np.ndarray:
    """int64, shape (n,): a conversation number per request, dense in first-appearance order.

    Rules in the module docstring. Cost: one dict lookup per full block
    scanned (from the end of each request back to the first match).
    """
    recorded = recorded_conversations(b.session_id, b.parent_id)
    return recorded if recorded is not None else inferred_conversations(b)


def recorded_conversations(session_id: np.ndarray | None, parent_id: np.ndarray | None) -> np.ndarray | None:
    """Rules 1-2 of the module docstring: int64 (n,) conversation numbers from the session / parent
    columns (int64 (n,) each), or None when there is no session column (rule 3 applies)."""
    if parent_id is not None and session_id is not None:
        return _from_parents(session_id.tolist(), parent_id.tolist())
    if session_id is not None:
        return _dense([(s if s >= 0 else ("alone", i)) for i, s in enumerate(session_id.tolist())])
    return None


def session_keys(b: RequestBatch) -> np.ndarray | None:
    """int64, shape (n,): the id a session router keys on per request, -1 for a request without a session;
    None when the trace has no session column (or no request has a session).

    With a ``parent_id`` column (Bailian: ``session_id`` holds the per-turn ``chat_id``), a conversation's
    identity is its root chat: the ``chat_id`` of the conversation's first request, following
    ``parent_chat_id`` back (rule 1 of the module docstring, :func:`conversation_ids`); a turn whose parent is
    not an earlier request starts its own conversation. Otherwise the ``session_id`` itself (rule 2; -1 and
    other negative ids: no session). docs/semantics.md §17.
    """
    if b.session_id is None:
        return None
    sid = np.asarray(b.session_id, dtype=np.int64)
    if b.parent_id is not None:
        conv = _from_parents(sid.tolist(), b.parent_id.tolist())
        _, first = np.unique(conv, return_index=True)   # conv is dense: the first request of each
        sid = np.where(sid >= 0, sid[first[conv]], -1)
    return sid if bool((sid >= 0).any()) else None


def _dense(keys: list) -> np.ndarray:
    num: dict = {}
    return np.array([num.setdefault(k, len(num)) for k in keys], dtype=np.int64)


def _from_parents(chat: list[int], parent: list[int]) -> np.ndarray:
    conv: dict[int, int] = {}
    out = np.empty(len(chat), dtype=np.int64)
    n = 0
    for i, (c, p) in enumerate(zip(chat, parent)):
        if p >= 0 and p in conv:
            out[i] = conv[p]
        else:
            out[i] = n
            n += 1
        conv.setdefault(c, int(out[i]))
    return out


def inferred_conversations(b: RequestBatch) -> np.ndarray:
    """Rule 3 of the module docstring, vectorised: the same numbers as :func:`inferred_conversations_reference`.

    A turn-ending id is registered by the one request where it first appears
    (ids are distinct within a request), so any later occurrence belongs to a
    later request: request r continues the conversation of the registrant of
    the last registered id among its full blocks, else opens one. Parents
    precede children, so conversation numbers follow from the roots' order
    (pointer jumping, O(log depth) passes). tests/trace/test_stats_scan.py
    diffs it against the reference loop.
    """
    h, offs = b.block_hashes, b.block_offsets
    r_n = len(b)
    if h.size == 0:
        return np.arange(r_n, dtype=np.int64)
    num = b.num_blocks
    full = np.minimum(b.prompt_tokens // b.block_size, num)
    _, first_idx, dense = np.unique(h, return_index=True, return_inverse=True)
    first = np.zeros(h.size, dtype=bool)
    first[first_idx] = True
    req_of = np.repeat(np.arange(r_n, dtype=np.int64), num)
    last = (offs[:-1] + full - 1)[full > 0]
    reg = last[first[last]]
    registrant = np.full(first_idx.size, -1, dtype=np.int64)
    registrant[dense[reg]] = req_of[reg]
    in_full = (np.arange(h.size, dtype=np.int64) - np.repeat(offs[:-1], num)) < np.repeat(full, num)
    m = registrant[dense]
    hit = np.flatnonzero(in_full & (m >= 0) & (m != req_of))
    parent = np.full(r_n, -1, dtype=np.int64)
    parent[req_of[hit]] = m[hit]  # ascending positions: the last (longest) match per request wins
    root = np.where(parent < 0, np.arange(r_n, dtype=np.int64), parent)
    while True:
        nxt = root[root]
        if np.array_equal(nxt, root):
            break
        root = nxt
    number = np.cumsum(parent < 0) - 1
    return number[root]


def inferred_conversations_reference(b: RequestBatch) -> np.ndarray:
    """Rule 3 of the module docstring, one request at a time (the reference of :func:`inferred_conversations`)."""
    first = first_access(b.block_hashes)
    hl = b.block_hashes.tolist()
    offs = b.block_offsets.tolist()
    full = np.minimum(b.prompt_tokens // b.block_size, b.num_blocks).tolist()
    ends: dict[int, int] = {}
    out = np.empty(len(full), dtype=np.int64)
    n = 0
    for r, f in enumerate(full):
        lo = offs[r]
        conv = -1
        for j in range(lo + f - 1, lo - 1, -1):
            conv = ends.get(hl[j], -1)
            if conv >= 0:
                break
        if conv < 0:
            conv, n = n, n + 1
        out[r] = conv
        if f and first[lo + f - 1]:
            ends[hl[lo + f - 1]] = conv
    return out
