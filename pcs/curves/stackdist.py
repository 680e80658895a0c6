"""Prefix-aware LRU stack depths: the one pass behind every LRU curve.

Mattson, Gecsei, Slutz & Traiger (1970, "Evaluation techniques for storage
hierarchies") showed that LRU is a stack algorithm: a reference hits in an LRU
cache of C blocks iff its stack depth (the number of distinct blocks used
since its previous use) is < C, so one pass over the stream gives the hit
ratio at every capacity. Here the stream is the prefix-cache stream of
docs/semantics.md §3-§6:

- per request, the ``n`` cacheable blocks (:class:`pcs.blocks.BlockRules`)
  are looked up head to tail; the depth of each is taken at the START of the
  request (before any of the request's own blocks are touched);
- then the request's blocks are stamped tail first, head last, so the head is
  the most recently used (vLLM frees a finished request's blocks in reverse
  order, ``kv_cache_manager``/``block_pool``). A parent is therefore always
  more recent than its child and depths strictly increase along a chain of
  chained hashes.

Block ``i`` of a request hits at capacity C iff every block ``0..i`` has
depth < C, i.e. iff its *lead depth* (the running maximum of depths along the
request, :func:`lead_depths`) is < C; for chained ids the running maximum is
the depth itself. This equals the sequential one-tier LRU replay with pins and
truncation exactly (tests/curves/test_curve.py checks it against an OrderedDict
replay on hypothesis traces and the real Mooncake trace).

Two kernels compute the depths, both with a Fenwick tree over logical access
times (Bennett & Kruskal 1975) counting dead times ("holes"), so a first use
costs no tree work: ``pcs.curves._stackdist`` (C, built by ``pip install -e .``,
optional) and a pure-Python fallback that mirrors it line for line.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from pcs.blocks import BlockRules

from pcs import _native
from pcs.errors import UserError

__all__ = ["KERNELS", "FlatAccesses", "available_kernel", "flatten_columns", "concat",
           "stack_depths", "lead_depths", "depth_histograms", "resolve_kernel"]

#: Kernel names accepted by :func:`stack_depths` ("auto" picks "c" when built): :data:`pcs._native.MODES`.
KERNELS = _native.MODES


@dataclass(frozen=True, slots=True)
class FlatAccesses:
    """The cacheable block accesses of a trace, flattened in request order.

    Attributes:
        block_hashes: ``np.ndarray[np.uint64]``, shape (N,): block hashes, request by
            request, head to tail; only the ``n`` cacheable blocks per request.
        req_offsets: ``np.ndarray[np.int64]``, shape (R + 1,): request r owns
            ``block_hashes[req_offsets[r]:req_offsets[r + 1]]``.
        hit_weight_tokens: ``np.ndarray[np.int64]``, shape (N,): prompt tokens
            the access adds to the request's hit tokens when it hits; 0 at
            positions >= the request's hit cap (last-token rule), so
            ``sum(hit_weight_tokens[first hits])`` equals
            ``BlockRules.hit_tokens(min(cap, lead), P, block_size)``.
        prompt_tokens: sum of prompt tokens over all R requests (the
            denominator of token-weighted hit ratios).
        block_size: tokens per block.
        block_accesses: every block hash of the R requests, partial last
            blocks included (the replay's ``block_accesses``); ``num_accesses``
            counts the cacheable ones kept here (the replay's ``cacheable_blocks``).
    """

    block_hashes: np.ndarray
    req_offsets: np.ndarray
    hit_weight_tokens: np.ndarray
    prompt_tokens: int
    block_size: int
    block_accesses: int

    @property
    def num_requests(self) -> int:
        """Number of requests R (those with no cacheable block included)."""
        return int(self.req_offsets.shape[0] - 1)

    @property
    def num_accesses(self) -> int:
        """Number of cacheable block accesses N."""
        return int(self.block_hashes.shape[0])


def flatten_columns(prompt_tokens: np.ndarray, block_offsets: np.ndarray, block_hashes: np.ndarray,
                    block_size: int, rules: BlockRules = BlockRules()) -> FlatAccesses:
    """Keep each request's cacheable blocks and weight each by its hit tokens.

    Args:
        prompt_tokens: int64, shape (R,): prompt tokens per request.
        block_offsets: int64, shape (R + 1,): request r's block hashes are
            ``block_hashes[block_offsets[r]:block_offsets[r + 1]]``
            (a :class:`pcs.trace.RequestBatch`'s columns).
        block_hashes: uint64, shape (block_offsets[-1],), partial last blocks
            included.
        block_size: tokens per block (> 0).
        rules: cacheable / hit-cap rules, applied vectorised exactly as
            ``BlockRules.cacheable_blocks`` / ``max_hit_blocks`` / ``hit_tokens``.
    Returns:
        :class:`FlatAccesses`.
    Raises:
        UserError: ``block_size`` <= 0 or inconsistent column lengths.
    """
    if block_size <= 0:
        raise UserError(f"block_size must be > 0 tokens, got {block_size}")
    p = np.asarray(prompt_tokens, dtype=np.int64)
    off = np.asarray(block_offsets, dtype=np.int64)
    hashes = np.asarray(block_hashes, dtype=np.uint64)
    if off.shape != (p.shape[0] + 1,) or off[0] != 0 or off[-1] != hashes.shape[0]:
        raise UserError("block_offsets must have shape (R + 1,), start at 0 and end at len(block_hashes)")
    num = np.diff(off)
    n, cap = rules.columns(p, num, block_size)
    if np.array_equal(n, num):
        kept = hashes
    else:
        keep = np.ones(hashes.shape[0], dtype=bool)
        keep[np.repeat(off[:-1] + n, num - n) + _ranks(num - n)] = False
        kept = hashes[keep]
    req_offsets = np.concatenate(([0], np.cumsum(n))).astype(np.int64)
    return FlatAccesses(kept, req_offsets, _hit_weights(p, n, cap, req_offsets, block_size), int(p.sum()),
                        int(block_size), int(hashes.shape[0]))


def _hit_weights(p: np.ndarray, n: np.ndarray, cap: np.ndarray, req_offsets: np.ndarray, bs: int) -> np.ndarray:
    """Tokens of block ``pos`` of each request: ``min((pos+1) bs, P) - min(pos bs, P)``, 0 from ``cap`` on.

    When every block but the last is full (``(n - 1) * bs <= P``, always so for
    trace readers' ids) only the last block of a request and the blocks from
    ``cap`` on differ from ``bs``: O(R) work besides one fill.
    """
    has = n > 0
    if bool(np.all((n[has] - 1) * bs <= p[has])):
        w = np.full(int(req_offsets[-1]), bs, dtype=np.int64)
        w[req_offsets[1:][has] - 1] = np.minimum(bs, p[has] - (n[has] - 1) * bs)
    else:
        pos = np.arange(int(req_offsets[-1]), dtype=np.int64) - np.repeat(req_offsets[:-1], n)
        req_p = np.repeat(p, n)
        w = np.minimum((pos + 1) * bs, req_p) - np.minimum(pos * bs, req_p)
    w[np.repeat(req_offsets[:-1] + cap, n - cap) + _ranks(n - cap)] = 0
    return w


def _ranks(counts: np.ndarray) -> np.ndarray:
    """0..c-1 for every c in ``counts``, concatenated (int64)."""
    total = int(counts.sum())
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    return np.arange(total, dtype=np.int64) - starts


def concat(parts: Iterable[FlatAccesses]) -> FlatAccesses:
    """Join flattened batches of one trace, in order (block sizes must agree).

    Raises:
        UserError: the parts have different block sizes.
    """
    parts = list(parts)
    if not parts:
        return FlatAccesses(np.zeros(0, np.uint64), np.zeros(1, np.int64), np.zeros(0, np.int64), 0, 1, 0)
    sizes = {f.block_size for f in parts}
    if len(sizes) != 1:
        raise UserError(f"batches of one trace must share a block size, got {sorted(sizes)}")
    if len(parts) == 1:
        return parts[0]
    shifts = np.cumsum([0] + [f.num_accesses for f in parts[:-1]])
    offsets = np.concatenate([parts[0].req_offsets[:1]] + [f.req_offsets[1:] + s for f, s in zip(parts, shifts)])
    return FlatAccesses(np.concatenate([f.block_hashes for f in parts]), offsets.astype(np.int64),
                        np.concatenate([f.hit_weight_tokens for f in parts]),
                        sum(f.prompt_tokens for f in parts), parts[0].block_size,
                        sum(f.block_accesses for f in parts))


def available_kernel() -> str:
    """``"c"`` when the compiled kernel ``pcs.curves._stackdist`` is importable, else ``"python"``."""
    return "c" if _native.built("stackdist") else "python"


def resolve_kernel(kernel: str) -> str:
    """``"c"`` or ``"python"`` for a kernel name: :func:`pcs._native.resolve` of the ``stackdist`` twin.

    Raises:
        UserError: unknown name, or ``"c"`` when it is not built.
    """
    return _native.resolve(kernel, "stackdist", "kernel")


def stack_depths(block_hashes: np.ndarray, req_offsets: np.ndarray, kernel: str = "auto",
                 lead: bool = False) -> tuple[np.ndarray, int]:
    """LRU stack depth of every access at the start of its request.

    Args:
        block_hashes: uint64, shape (N,): block hashes in request order, head to tail.
        req_offsets: int64, shape (R + 1,): request boundaries in ``block_hashes``.
        kernel: ``"auto"`` (C when built, else Python with a RuntimeWarning),
            ``"c"`` or ``"python"``.
        lead: return :func:`lead_depths` of the depths instead (computed in
            the same pass).
    Returns:
        ``(depths, num_distinct)``: depths int64, shape (N,), the number of
        distinct blocks used more recently than the block's last use, or -1
        for a block never used before (earlier in the same request does not
        count); ``num_distinct`` the number of distinct block hashes.
    Raises:
        UserError: unknown kernel, ``"c"`` when it is not built, bad offsets.

    Cost: O(N log N) time, O(N + distinct) memory.

    >>> d, k = stack_depths(np.array([7, 8, 7, 9, 7, 8], np.uint64), np.array([0, 2, 4, 6]), "python")
    >>> d.tolist(), k
    ([-1, -1, 0, -1, 0, 2], 3)
    """
    which = resolve_kernel(kernel)
    hashes = np.ascontiguousarray(block_hashes, dtype=np.uint64)
    offs = np.ascontiguousarray(req_offsets, dtype=np.int64)
    if offs.ndim != 1 or offs.shape[0] < 1 or offs[0] != 0 or offs[-1] != hashes.shape[0] or np.any(np.diff(offs) < 0):
        raise UserError("req_offsets must be non-decreasing, start at 0 and end at len(block_hashes)")
    if which == "python":
        depths, distinct = _stack_depths_python(hashes, offs)
        return (lead_depths(depths, offs) if lead else depths), distinct
    out = np.empty(hashes.shape[0], dtype=np.int64)
    distinct = _native.module("stackdist").stack_depths(hashes, offs, out, bool(lead))
    return out, int(distinct)


def depth_histograms(lead: np.ndarray, weights: np.ndarray, kernel: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """Histograms of lead depths: weighted by ``weights`` and plain counts.

    Args:
        lead: int64, shape (N,): lead depths (-1 = never hits, skipped).
        weights: int64, shape (N,).
        kernel: as in :func:`stack_depths`.
    Returns:
        ``(hist_w, hist_b)``, int64, shape (max(lead) + 1,) (empty when no
        lead depth is >= 0): ``hist_w[d] = sum(weights[lead == d])``,
        ``hist_b[d] = count(lead == d)``.

    >>> [h.tolist() for h in depth_histograms(np.array([1, -1, 1, 0]), np.array([5, 7, 2, 3]), "python")]
    [[3, 7], [1, 2]]
    """
    which = resolve_kernel(kernel)
    lead = np.ascontiguousarray(lead, dtype=np.int64)
    weights = np.ascontiguousarray(weights, dtype=np.int64)
    size = int(lead.max()) + 1 if lead.shape[0] else 0
    if size <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if which == "python":
        hit = lead >= 0
        hist_b = np.bincount(lead[hit], minlength=size).astype(np.int64)
        hist_w = np.zeros(size, np.int64)
        np.add.at(hist_w, lead[hit], weights[hit])  # exact int64 sums
        return hist_w, hist_b
    hist_w, hist_b = np.empty(size, np.int64), np.empty(size, np.int64)
    _native.module("stackdist").histograms(lead, weights, hist_w, hist_b)
    return hist_w, hist_b


def _stack_depths_python(block_hashes: np.ndarray, req_offsets: np.ndarray) -> tuple[np.ndarray, int]:
    """Pure-Python kernel: the C kernel's depths (pcs/curves/_stackdist.c) with a plain Fenwick tree over times."""
    n = int(block_hashes.shape[0])
    hashes_l = block_hashes.tolist()
    off = req_offsets.tolist()
    fen = [0] * (n + 1)  # Fenwick tree of holes (dead times), 1-based
    last: dict[int, int] = {}
    out = [-1] * n
    t = holes = 0
    for r in range(len(off) - 1):
        a, b = off[r], off[r + 1]
        for i in range(a, b):
            lt = last.get(hashes_l[i], -1)
            if lt >= 0:
                j, before = lt + 1, 0
                while j > 0:
                    before += fen[j]
                    j &= j - 1
                out[i] = (t - 1 - lt) - (holes - before)
        for i in range(b - 1, a - 1, -1):
            k = hashes_l[i]
            lt = last.get(k, -1)
            if lt >= 0:
                j = lt + 1
                while j <= n:
                    fen[j] += 1
                    j += j & -j
                holes += 1
            last[k] = t
            t += 1
    return np.array(out, dtype=np.int64), len(last)


def lead_depths(depths: np.ndarray, req_offsets: np.ndarray) -> np.ndarray:
    """Running maximum of depths along each request; -1 from the first cold block on.

    Block i of a request hits at capacity C iff ``lead[i] >= 0`` and
    ``lead[i] < C`` (the lookup stops at the first block that misses).

    Args:
        depths: int64, shape (N,), from :func:`stack_depths` (-1 = cold).
        req_offsets: int64, shape (R + 1,).
    Returns:
        int64, shape (N,). For chained ids (each id always under the same
        parent) this is ``depths`` itself; otherwise a segmented running max.

    >>> lead_depths(np.array([0, 3, 2, 1, -1, 0]), np.array([0, 3, 6])).tolist()
    [0, 3, 3, 1, -1, -1]
    """
    n = depths.shape[0]
    if n == 0:
        return depths.copy()
    big = int(depths.max()) + 2  # cold -> big - 1, larger than any depth
    d = np.where(depths < 0, big - 1, depths)
    starts = np.zeros(n, dtype=bool)
    starts[req_offsets[:-1][np.diff(req_offsets) > 0]] = True
    steps_up = (d[1:] >= d[:-1]) | starts[1:]
    if bool(steps_up.all()):
        return depths.copy()
    req = np.cumsum(starts) - 1
    shifted = np.maximum.accumulate(req.astype(np.int64) * big + d) - req * big
    return np.where(shifted == big - 1, -1, shifted)
