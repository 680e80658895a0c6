"""Sequential one-tier LRU replay without the event loop: the engine's result from three leading runs.

The most common baseline, ``replay(..., timing="sequential")`` with ONE tier
whose policy is ``lru``, is plain LRU on the flat stream "per request: blocks
head to tail, then tail to head" (docs/semantics.md §6).
:class:`pcs.engine.lruscan.SequentialLru` runs that LRU at the
tier's C slots in O(1) per access, streaming the trace batch by batch, and
gives per request (n cacheable blocks, hit cap ``cap``, ``BlockRules``):

- ``lead``: leading blocks resident at the request's start; ``hits =
  min(cap, lead)``; ``missed_blocks = n - lead``;
- lookup pins the lead, reserves ``min(n, C) - lead`` slots for new blocks
  (a request with ``n > C`` caches its head only and is ``truncated``);
  all slots are unpinned between sequential requests, so the reserve evicts
  ``max(0, inserted - free)`` blocks and the resident count after a request
  is ``min(C, resident before + inserted)``: a running ``min(C, cumsum)``;
- the slots a running request holds (pins + reservations) are ``min(n, C)``
  (``peak_reserved_blocks`` is their maximum);
- prefill / TTFT from the same compute model, called with the same
  (new, cached) token pairs as :class:`pcs.engine.engine.TimeModel`.

Those are :class:`pcs.cache.Hierarchy` / :class:`pcs.cache.Tier` step by
step when no id repeats among a request's cacheable blocks and no block after
the lead is resident (the resident blocks form a prefix): true for chained
hashes (every id always under the same parent). The scan checks both at the
run's capacity and raises :class:`NotApplicable` otherwise
(``replay(engine="auto")`` then runs the general engine).
tests/test_replay_fastpath.py checks summary and per-request table equality
with the engine.

The single-sequence and ideal ratios come from the same scan (``seen`` and
``ideal`` leading runs: looked up / stamped by an earlier request), exactly
:func:`pcs.blocks.single_sequence_hits` without its Python set.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from pcs.blocks import BlockRules, SingleSequenceResult
from pcs.engine.engine import EngineResult
from pcs.engine.ledger import ReplayLedger
from pcs.engine.lruscan import NotChained, SequentialLru
from pcs.engine.chunks import CHUNK_REQUESTS, rule_columns
from pcs.engine.summary import CacheState, TierState

__all__ = ["ENGINES", "NotApplicable", "Scan", "qualifies", "scan", "single_results", "run", "sequential_lru"]

#: ``replay(engine=...)``: ``auto`` = the fast path when it applies, ``general`` = the
#: event-loop engine always, ``fast`` = the fast path or a ValueError.
ENGINES = ("auto", "general", "fast")


class NotApplicable(ValueError):
    """The fast path does not apply (the message says why)."""


def qualifies(tiers, timing: str) -> bool:
    """True for sequential timing with exactly one tier whose policy is ``lru``."""
    return timing == "sequential" and len(tiers) == 1 and tiers[0].policy.name == "lru"


@dataclass(frozen=True, slots=True)
class Scan:
    """A trace's per-request columns after one sequential LRU scan at ``capacity_blocks``.

    Attributes:
        block_size: tokens per block.
        capacity_blocks: the scanned LRU's slots.
        arrival_s: float64 (R,); prompt_tokens, output_tokens: int64 (R,).
        num_blocks: int64 (R,): block ids per request (partial last block included).
        cacheable, cap: int64 (R,): ``BlockRules.cacheable_blocks`` / ``max_hit_blocks``.
        lead: int64 (R,): leading cacheable blocks resident at the request's start.
        seen_lead: int64 (R,): leading cacheable blocks cached by an earlier request (infinite cache).
        ideal_lead: int64 (R,): leading blocks seen before with every id cacheable.
        batch_sizes: requests per batch read (for ``progress``).
    """

    block_size: int
    capacity_blocks: int
    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    num_blocks: np.ndarray
    cacheable: np.ndarray
    cap: np.ndarray
    lead: np.ndarray
    seen_lead: np.ndarray
    ideal_lead: np.ndarray
    batch_sizes: tuple


def _batches(source: Any) -> Iterator[tuple]:
    """(block_size, arrival, prompt, output, block_offsets, hashes) per batch, checked as ``iter_chunks``."""
    if hasattr(source, "iter_batches"):
        for b in source.iter_batches():
            yield int(b.block_size), b.arrival_s, b.prompt_tokens, b.output_tokens, b.block_offsets, b.block_hashes
        return
    reqs = list(source)
    for s in range(0, len(reqs), CHUNK_REQUESTS):
        group = reqs[s:s + CHUNK_REQUESTS]
        sizes = list(dict.fromkeys(int(r.block_size) for r in group))
        if len(sizes) > 1:
            raise ValueError(f"all requests of a replay need one block size; got {sizes[0]} and {sizes[1]}")
        counts = np.fromiter((len(r.block_hashes) for r in group), dtype=np.int64, count=len(group))
        hashes = [np.asarray(r.block_hashes, dtype=np.uint64) for r in group]
        yield (sizes[0], np.array([float(r.arrival_s) for r in group], dtype=np.float64),
               np.array([int(r.prompt_tokens) for r in group], dtype=np.int64),
               np.array([int(getattr(r, "output_tokens", 0)) for r in group], dtype=np.int64),
               np.concatenate(([0], np.cumsum(counts))).astype(np.int64),
               np.concatenate(hashes) if int(counts.sum()) else np.zeros(0, np.uint64))


def _expected_ids(source: Any) -> int:
    """Block ids in a Parquet trace from its footer (0 when unknown): sizes the scan's table once."""
    if getattr(source, "format", None) != "parquet" or getattr(source, "sort", False):
        return 0
    try:
        import pyarrow.parquet as pq

        md = pq.ParquetFile(source.path).metadata
        cols = [j for j in range(md.num_columns) if md.schema.column(j).path.startswith("block_hashes.")]
        return sum(md.row_group(g).column(cols[0]).num_values for g in range(md.num_row_groups)) if cols else 0
    except Exception:  # a hint only: the table grows by itself
        return 0


def scan(source: Any, capacity_blocks: int, rules: BlockRules = BlockRules(), kernel: str = "auto",
         check: bool = True) -> Scan:
    """Stream ``source`` once through a sequential LRU of ``capacity_blocks`` slots.

    Args:
        source: a Trace (``iter_batches``) or an iterable of request-like objects.
        capacity_blocks: LRU slots (>= 0).
        rules: block rules of the run.
        kernel: :data:`pcs.curves.stackdist.KERNELS`.
        check: raise :class:`NotApplicable` when the fast path's premise fails.
    Returns:
        :class:`Scan`. Cost: O(1) per block id; memory: per-request columns,
        16 B per distinct id and a bit per stamp above the LRU pointer; the
        trace itself is held one batch at a time.
    Raises:
        ValueError: block sizes differ or < 1, negative token counts or
            capacity, an empty trace.
        NotApplicable: (``check``) an id repeats within a request, or the
            resident blocks of a request are not a prefix.
    """
    lru = SequentialLru(capacity_blocks, kernel, check, _expected_ids(source))
    bs0, cols = None, []
    for bs, arrival, prompt, output, offsets, hashes in _batches(source):
        if bs < 1:
            raise ValueError(f"block size must be >= 1 token, got {bs}")
        if bs0 is not None and bs != bs0:
            raise ValueError(f"all requests of a replay need one block size; got {bs0} and {bs}")
        bs0 = bs
        prompt, output = np.asarray(prompt, np.int64), np.asarray(output, np.int64)
        if (prompt < 0).any() or (output < 0).any():
            raise ValueError("token counts must be >= 0")
        offsets = np.asarray(offsets, np.int64)
        counts = np.diff(offsets)
        n, cap, _ = rule_columns(prompt, counts, output, bs, rules)
        try:
            runs = lru.feed(hashes, offsets - offsets[0], n)
        except NotChained as exc:
            raise NotApplicable(str(exc)) from None
        cols.append((np.asarray(arrival, np.float64), prompt, output, counts, n, cap) + runs)
    if not cols or sum(c[1].shape[0] for c in cols) == 0:
        raise ValueError("the trace has no requests")
    cat = [np.concatenate([c[k] for c in cols]) for k in range(9)]
    return Scan(bs0, int(capacity_blocks), *cat, tuple(c[1].shape[0] for c in cols))


def _single(hits: np.ndarray, prompt: np.ndarray, bs: int) -> SingleSequenceResult:
    tokens = np.minimum(hits * bs, prompt)
    return SingleSequenceResult(int(tokens.sum()), int(prompt.sum()), int(hits.sum()), int((hits > 0).sum()),
                                int(prompt.shape[0]))


def single_results(sc: Scan) -> tuple[SingleSequenceResult, SingleSequenceResult]:
    """(single-sequence under the run's rules, ideal) as :func:`pcs.blocks.single_sequence_hits` gives them."""
    return (_single(np.minimum(sc.cap, sc.seen_lead), sc.prompt_tokens, sc.block_size),
            _single(sc.ideal_lead, sc.prompt_tokens, sc.block_size))


def _times(compute: Any, prompt: np.ndarray, hit_tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(prefill_s with the hits, prefill_s from scratch), float64 (R,), via ``compute.prefill_s``."""
    m = prompt.shape[0]
    if compute is None:
        return np.zeros(m), np.zeros(m)
    new = np.concatenate((prompt - hit_tokens, prompt))
    cached = np.concatenate((hit_tokens, np.zeros(m, np.int64)))
    both = np.broadcast_to(np.asarray(compute.prefill_s(new, cached), dtype=np.float64), (2 * m,))
    return both[:m].copy(), both[m:].copy()


def _columns(prep: Scan, tier_name: str, lead: np.ndarray, compute: Any) -> dict:
    """Per-request columns, names and dtypes as :class:`pcs.engine.engine.ReplayEngine` makes them."""
    m = prep.prompt_tokens.shape[0]
    hits = np.minimum(prep.cap, lead)
    ht = np.minimum(hits * prep.block_size, prep.prompt_tokens)
    pf, full = _times(compute, prep.prompt_tokens, ht)
    zero_f = np.zeros(m)
    return {"request_id": np.arange(m, dtype=np.int64), "arrival_s": prep.arrival_s,
            "prompt_tokens": prep.prompt_tokens, "output_tokens": prep.output_tokens, "hit_blocks": hits,
            "missed_blocks": prep.cacheable - lead, "hit_tokens": ht, f"hit_tokens_{tier_name}": ht,
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
    lead = prep.lead
    cols = _columns(prep, tier_name, lead, compute)
    n = prep.cacheable
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
    return EngineResult(L, cols), state


def sequential_lru(source: Any, rules: BlockRules, tiers: list, timing: str, write_policy: str, compute: Any,
                   progress: Callable[[int], None] | None, engine: str = "auto"):
    """The fast path's sequential one-LRU-tier replay for ``replay(engine=...)``, or None.

    Args:
        source: the run's request source; rules: its block rules.
        tiers: the run's :class:`pcs.cache.Tier` list (read, not used).
        timing: the run's timing; the result is the run itself when
            ``sequential``, its sequential baseline when ``modeled``.
        write_policy, compute: as :func:`run`.
        progress: as :func:`run`.
        engine: one of :data:`ENGINES`.
    Returns:
        ``((EngineResult, CacheState), (single, ideal))``, or None when
        ``engine`` is ``general``, the tiers are not one ``lru`` tier, or
        (``auto``) the ids are not chained. ``progress`` is reported only when
        the result is the run itself (sequential timing).

    Raises:
        ValueError: ``engine="fast"`` and the run does not qualify.
    """
    if engine == "fast" and not qualifies(tiers, timing):
        raise ValueError(f"engine 'fast' needs timing 'sequential' and exactly one tier with policy 'lru'; got "
                         f"timing {timing!r} and tiers {', '.join(f'{t.name}:{t.policy.name}' for t in tiers)}; "
                         "use engine='auto' or 'general'")
    if engine == "general" or not qualifies(tiers, "sequential"):
        return None
    try:
        prep = scan(source, tiers[0].capacity_blocks, rules)
    except NotApplicable:
        if engine == "fast":
            raise
        return None
    out = run(prep, tiers[0].name, write_policy, compute,
              progress if timing == "sequential" else None)
    return out, single_results(prep)
