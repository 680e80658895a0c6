"""Sequential one-tier LRU replay without the event loop: the engine's result from three leading runs.

The most common baseline, ``replay(..., timing="sequential")`` with ONE tier
whose policy is ``lru``, is plain LRU on the flat stream "per request: blocks
head to tail, then tail to head" (docs/semantics.md §6).
:class:`pcs.engine.lruscan.SequentialLru` runs that LRU at the
tier's C slots in O(1) per access, streaming the trace batch by batch, and
gives per request (n cacheable blocks, ``max_hit_blocks``, ``BlockRules``):

- ``prefix_hit_blocks``: leading blocks resident at the request's start;
  ``hits = min(max_hit_blocks, prefix_hit_blocks)``; ``missed_blocks = n -
  prefix_hit_blocks``;
- lookup pins the prefix hits, reserves ``min(n, C) - prefix_hit_blocks`` slots for new blocks
  (a request with ``n > C`` caches its head only and is ``truncated``);
  all slots are unpinned between sequential requests, so the reserve evicts
  ``max(0, inserted - free)`` blocks and the resident count after a request
  is ``min(C, resident before + inserted)``: a running ``min(C, cumsum)``;
- the slots a running request holds (pins + reservations) are ``min(n, C)``
  (``peak_reserved_blocks`` is their maximum);
- prefill / TTFT from the same compute model, called with the same
  (new, cached) token pairs as :class:`pcs.engine.engine.TimeModel`.

Those are :class:`pcs.cache.Hierarchy` / :class:`pcs.cache.Tier` step by
step when no block hash repeats among a request's cacheable blocks and no
block after the prefix hits is resident (the resident blocks form a prefix):
true for chained hashes (every block hash always under the same parent). The
scan checks both at the run's capacity and raises :class:`NotApplicable`
otherwise (``replay(engine="auto")`` then falls back to the next row of
:mod:`pcs.engine.select`, and says so in ``engine_reason``).
tests/engine/test_replay_fastpath.py checks summary and per-request table
equality with the reference engine.

The single-sequence and ideal ratios come from the same scan (``seen`` and
``ideal`` leading runs: looked up / stamped by an earlier request), exactly
:func:`pcs.blocks.single_sequence_hits` without its Python set.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable

import numpy as np

from pcs.blocks import BlockRules, SingleSequenceResult
from pcs.engine.engine import EngineResult
from pcs.engine.series import sequential_samples
from pcs.engine.ledger import ReplayLedger
from pcs.engine.lruscan import NotChained, SequentialLru
from pcs.engine.chunks import rule_columns
from pcs.engine.summary import CacheState, TierState
from pcs.errors import UserError
from pcs.trace.batches import as_batches
from pcs.trace.parquet import expected_block_hashes
from pcs._dataclass import dataclass

__all__ = ["NotApplicable", "Scan", "scan", "single_results", "decode_result", "run"]

class NotApplicable(UserError):
    """The fast path does not apply (the message says why).

    A :class:`pcs.errors.UserError`: it reaches the user when an engine that needs the premise was asked for by
    name (``engine='lru-scan'``); ``engine='auto'`` catches it and falls back."""


@dataclass(frozen=True, slots=True)
class Scan:
    """A trace's per-request columns after one sequential LRU scan at ``capacity_blocks``.

    Attributes:
        block_size: tokens per block.
        capacity_blocks: the scanned LRU's slots.
        arrival_s: float64 (R,); prompt_tokens, output_tokens: int64 (R,).
        num_blocks: int64 (R,): block hashes per request (partial last block included).
        cacheable_blocks, max_hit_blocks: int64 (R,): ``BlockRules.cacheable_blocks`` /
            ``max_hit_blocks`` (``docs/semantics.md §2, §4``).
        prefix_hit_blocks: int64 (R,): leading cacheable blocks resident at the request's start.
        seen_lead: int64 (R,): leading cacheable blocks cached by an earlier request (infinite cache).
        ideal_lead: int64 (R,): leading blocks seen before with every id cacheable.
        batch_sizes: requests per batch read (for ``progress``).
        baseline_hits: int64 (R,): with ``lower_blocks``, the two-tier sequential baseline's hit blocks
            (:class:`pcs.engine.lruscan.SequentialLru`); None without, or when its premise failed.
        seen_decode: int64 (R,): with ``decode``, leading cacheable blocks cached by an earlier request's
            prompt or decode blocks (:mod:`pcs.engine.decodescan`); None without.
    """

    block_size: int
    capacity_blocks: int
    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    num_blocks: np.ndarray
    cacheable_blocks: np.ndarray
    max_hit_blocks: np.ndarray
    prefix_hit_blocks: np.ndarray
    seen_lead: np.ndarray
    ideal_lead: np.ndarray
    batch_sizes: tuple
    baseline_hits: np.ndarray | None = None
    seen_decode: np.ndarray | None = None


def scan(source: Any, capacity_blocks: int, rules: BlockRules = BlockRules(), native: str | None = "auto",
         check: bool = True, lower_blocks: int | None = None, decode: Any = None) -> Scan:
    """Stream ``source`` once through a sequential LRU of ``capacity_blocks`` slots.

    Args:
        source: any source :func:`pcs.trace.batches.as_batches` reads.
        capacity_blocks: LRU slots (>= 0).
        rules: block rules of the run.
        native: ``auto``, ``c``, ``python`` or None (:func:`pcs._native.resolve`
            of the ``lruscan`` twin).
        check: raise :class:`NotApplicable` when the fast path's premise fails.
        lower_blocks: None, or a lower LRU tier's slots: the scan also gives the two-tier sequential
            baseline (``Scan.baseline_hits``; compiled kernel only).
        decode: None, or :class:`pcs.engine.turns.DecodeBlocks` of ``source``: the scan also gives the
            decode-aware single-sequence walk (``Scan.seen_decode``; :func:`decode_result`).
    Returns:
        :class:`Scan`. Cost: O(1) per block hash; memory: per-request columns,
        8-16 B per distinct block hash (pcs.engine.lruscan) and a bit per stamp above the LRU pointer;
        the trace itself is held one batch at a time.
    Raises:
        UserError: as :func:`pcs.trace.batches.as_batches`; negative
            capacity; an empty trace.
        NotApplicable: (``check``) a block hash repeats within a request, or
            the resident blocks of a request are not a prefix.
    """
    lru = SequentialLru(capacity_blocks, native, check, expected_block_hashes(source), lower_blocks)
    bs0, cols, first = None, [], 0
    # the next batch decoded while lru_feed runs (no GIL), every batch on one worker, ended on every path
    with contextlib.closing(as_batches(source, read_ahead=True, linger=True)) as batches:
        for b in batches:
            bs0, first = _fed(lru, b, rules, decode, first, cols)
    if not cols or sum(c[1].shape[0] for c in cols) == 0:
        raise UserError("the trace has no requests")
    tiers, hold, sizes = lru.tiers, lru.tiers_hold(), tuple(c[1].shape[0] for c in cols)
    del lru          # its tables (8-16 B per distinct id) freed before the columns are joined, not beside the copies
    per = [list(k) for k in zip(*cols)]
    del cols
    cat = []
    for k in range(len(per)):   # one column's batches joined, then dropped: one column copied at a time
        cat.append(_joined(per[k]))
        per[k] = None
    seen_dec = cat.pop() if decode is not None else None
    base = cat.pop() if tiers else None         # the two-tier baseline's column: kept if its premise held
    return Scan(bs0, int(capacity_blocks), *cat, sizes, base if hold else None, seen_dec)


def _fed(lru: SequentialLru, b: Any, rules: BlockRules, decode: Any, first: int, cols: list) -> tuple[int, int]:
    """One batch ``b`` of :func:`scan` fed to ``lru``: its per-request columns appended to ``cols``; returns (its
    block size, the index of the next batch's first request). ``first``: this batch's first request's index.

    Raises:
        NotApplicable: the premise of the fast path fails in this batch (``NotChained``)."""
    bs0 = int(b.block_size)
    prompt, output = np.asarray(b.prompt_tokens, np.int64), np.asarray(b.output_tokens, np.int64)
    offsets = np.asarray(b.block_offsets, np.int64)
    counts = np.diff(offsets)
    n, max_hit, _ = rule_columns(prompt, counts, output, bs0, rules)
    dec = None if decode is None else decode.arrays(first, prompt.shape[0])
    try:
        runs = lru.feed(b.block_hashes, offsets - offsets[0], n, max_hit, dec)
    except NotChained as exc:
        raise NotApplicable(str(exc)) from None
    cols.append((np.asarray(b.arrival_s, np.float64), prompt, output, counts, n, max_hit) + runs)
    return bs0, first + prompt.shape[0]


def _joined(parts: list) -> np.ndarray:
    """One column from its batches' pieces (1-D arrays of one dtype): a single piece is kept as a read-only view
    (no copy: the whole decoded trace is often one batch), several are joined with ``numpy.concatenate``."""
    if len(parts) == 1:
        view = parts[0].view()
        view.flags.writeable = False
        return view
    return np.concatenate(parts)


def _single(hits: np.ndarray, prompt: np.ndarray, bs: int) -> SingleSequenceResult:
    tokens = np.minimum(hits * bs, prompt)
    return SingleSequenceResult(int(tokens.sum()), int(prompt.sum()), int(hits.sum()), int((hits > 0).sum()),
                                int(prompt.shape[0]))


def single_results(sc: Scan) -> tuple[SingleSequenceResult, SingleSequenceResult]:
    """(single-sequence under the run's rules, ideal) as :func:`pcs.blocks.single_sequence_hits` gives them."""
    return (_single(np.minimum(sc.max_hit_blocks, sc.seen_lead), sc.prompt_tokens, sc.block_size),
            _single(sc.ideal_lead, sc.prompt_tokens, sc.block_size))


def decode_result(sc: Scan) -> SingleSequenceResult | None:
    """The decode-aware single-sequence result (:func:`pcs.engine.decodescan.decode_aware_hits`) of a scan
    given ``decode``, else None."""
    if sc.seen_decode is None:
        return None
    return _single(np.minimum(sc.max_hit_blocks, sc.seen_decode), sc.prompt_tokens, sc.block_size)


#: Requests per ``prefill_s`` call: its temporaries stay in cache instead of a dozen arrays of the whole trace
#: (page faults grow faster than the trace: 9.3 ns per access at 50x Mooncake, 1.9 at 10x; docs/performance.md).
_SLICE = 1 << 15


def _times(compute: Any, prompt: np.ndarray, hit_tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(prefill_s with the hits, prefill_s from scratch), float64 (R,), via ``compute.prefill_s``.

    ``prefill_s`` is element-wise (as :meth:`pcs.engine.timing.TimeModel.tables` uses it), so it runs on slices of
    :data:`_SLICE` requests, each call given the slice's (new, cached) pairs with hits, then from scratch.
    """
    m = prompt.shape[0]
    if compute is None:
        return np.zeros(m), np.zeros(m)
    hit, full = np.empty(m), np.empty(m)
    for i in range(0, m, _SLICE):
        p, h = prompt[i:i + _SLICE], hit_tokens[i:i + _SLICE]
        k = p.shape[0]
        new, cached = np.concatenate((p - h, p)), np.concatenate((h, np.zeros(k, np.int64)))
        both = np.broadcast_to(np.asarray(compute.prefill_s(new, cached), dtype=np.float64), (2 * k,))
        hit[i:i + k], full[i:i + k] = both[:k], both[k:]
    return hit, full


def _columns(prep: Scan, tier_name: str, compute: Any) -> dict:
    """Per-request columns, names and dtypes as :class:`pcs.engine.engine.ReplayEngine` makes them."""
    m = prep.prompt_tokens.shape[0]
    lead = prep.prefix_hit_blocks
    hits = np.minimum(prep.max_hit_blocks, lead)
    ht = np.minimum(hits * prep.block_size, prep.prompt_tokens)
    pf, full = _times(compute, prep.prompt_tokens, ht)
    zero_f = np.zeros(m)
    return {"request_id": np.arange(m, dtype=np.int64), "arrival_s": prep.arrival_s,
            "prompt_tokens": prep.prompt_tokens, "output_tokens": prep.output_tokens, "hit_blocks": hits,
            "missed_blocks": prep.cacheable_blocks - lead, "hit_tokens": ht, f"hit_tokens_{tier_name}": ht,
            "restored_bytes": np.zeros(m, np.int64), "restore_s": zero_f, "prefill_s": pf, "wait_s": zero_f,
            "ttft_s": 0.0 + pf, "prefill_no_cache_s": full, "finish_s": np.full(m, np.nan),
            "truncated": np.zeros(m, np.int8)}


def run(prep: Scan, tier_name: str = "gpu", write_policy: str = "back",
        compute: Any = None, progress: Callable[[int], None] | None = None) -> tuple[EngineResult, CacheState]:
    """The sequential one-tier LRU replay of a :class:`Scan` (at its ``capacity_blocks``).

    Args:
        prep: from :func:`scan`.
        tier_name: the tier's name (column ``hit_tokens_<name>``).
        write_policy: ``back``: evicted blocks are dropped (counted in
            ``dropped_blocks``); ``through``: dropped uncounted (a copy was
            written below), as :class:`pcs.cache.Hierarchy` with one tier.
        compute: object with ``prefill_s(new_tokens, cached_tokens)`` or None (0 s).
        progress: called with each batch's request count at the end.
    Returns:
        (:class:`EngineResult` with numpy columns, :class:`CacheState`) --
        what ``ReplayEngine.close()`` and ``cache_state(hierarchy)`` give.
    """
    c = prep.capacity_blocks
    lead = prep.prefix_hit_blocks
    cols = _columns(prep, tier_name, compute)
    n = prep.cacheable_blocks
    held = np.minimum(n, c)
    inserted = int((held - lead).sum())
    resident = min(c, inserted)
    cols["truncated"] = (n > c).astype(np.int8)
    L = ReplayLedger(num_tiers=1)
    hits, ht = cols["hit_blocks"], cols["hit_tokens"]
    L.num_requests = int(n.shape[0])
    L.prompt_tokens = int(prep.prompt_tokens.sum())
    L.hit_tokens = int(ht.sum())
    L.hit_blocks = int(hits.sum())
    L.block_accesses = int(prep.num_blocks.sum())
    L.cacheable_blocks = int(n.sum())
    L.block_misses = int(cols["missed_blocks"].sum())
    L.computed_tokens = L.prompt_tokens - L.hit_tokens
    L.requests_with_hit = int((hits > 0).sum())
    L.requests_truncated = int(cols["truncated"].sum())
    L.tier_hit_blocks, L.tier_hit_tokens = [L.hit_blocks], [L.hit_tokens]
    L.peak_reserved_blocks = max(0, int(held.max()))
    evicted = inserted - resident
    state = CacheState((TierState(tier_name, "lru", c, resident, resident, evicted, 0),),
                       evicted if write_policy == "back" else 0)
    if progress is not None:
        for k in prep.batch_sizes:
            progress(k)
    samples = sequential_samples(prep.arrival_s, np.minimum(c, np.cumsum(held - lead)))  # evictions only when full
    return EngineResult(L, cols, samples), state
