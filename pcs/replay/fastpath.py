"""Sequential one-tier LRU replay from LRU stack depths: the engine's result without a per-block loop.

The most common baseline, ``replay(..., timing="sequential")`` with ONE tier
whose policy is ``lru``, is plain LRU on the flat stream "per request: blocks
head to tail, then tail to head" (team brief, "Shared replay semantics",
rule 4). Block i of a request is resident at the request's start iff its LRU
stack depth d_i (:func:`pcs.replay.stackdist.stack_depths`, Mattson et al.
1970) is < C, so with C slots, per request (n cacheable blocks, hit cap
``cap``, ``BlockRules``):

- ``lead = #{i : 0 <= d_i < C}`` (the resident blocks form a prefix: depths
  strictly increase along a chain); ``hits = min(cap, lead)``;
  ``missed_blocks = n - lead``;
- lookup pins the lead, reserves ``min(n, C) - lead`` slots for new blocks
  (a request with ``n > C`` caches its head only and is ``truncated``);
  all slots are unpinned between sequential requests, so the reserve evicts
  ``max(0, inserted - free)`` blocks and the resident count after a request
  is ``min(C, resident before + inserted)``: a running ``min(C, cumsum)``;
- the slots a running request holds (pins + reservations) are ``min(n, C)``
  (``peak_reserved_blocks`` is their maximum);
- prefill / TTFT from the same compute model, called with the same
  (new, cached) token pairs as :class:`pcs.replay.engine.TimeModel`.

Those are :class:`pcs.cache.Hierarchy` / :class:`pcs.cache.Tier` step by
step when no block of a request after its lead is resident and no id repeats
within a request: true for chained hashes (every id always under the same
parent). :func:`prepare` checks it on the depths -- non-negative depths
strictly increasing along each request, no non-negative depth after a cold
block, and as many cold accesses as distinct ids -- and raises
:class:`NotApplicable` otherwise (``replay(engine="auto")`` then runs the
general engine). tests/test_replay_fastpath.py checks summary and
per-request table equality with the engine.

The single-sequence and ideal ratios come from the same kind of pass: a
block is in the infinite cache iff its depth is >= 0 (seen in an earlier
request), exactly :func:`pcs.blocks.single_sequence_hits`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from pcs.blocks import BlockRules, SingleSequenceResult
from pcs.replay import stackdist
from pcs.replay.engine import EngineResult
from pcs.replay.ledger import ReplayLedger
from pcs.replay.stream import CHUNK_REQUESTS, rule_columns
from pcs.replay.summary import CacheState, TierState

__all__ = ["ENGINES", "NotApplicable", "Prepared", "qualifies", "prepare", "single_results", "run", "sequential_lru"]

#: ``replay(engine=...)``: ``auto`` = the fast path when it applies, ``general`` = the
#: event-loop engine always, ``fast`` = the fast path or a ValueError.
ENGINES = ("auto", "general", "fast")
_IDEAL = BlockRules(cache_partial_blocks=True, recompute_last_token=False)


class NotApplicable(ValueError):
    """The fast path does not apply (the message says why)."""


def qualifies(tiers, timing: str) -> bool:
    """True for sequential timing with exactly one tier whose policy is ``lru``."""
    return timing == "sequential" and len(tiers) == 1 and tiers[0].policy.name == "lru"


@dataclass(frozen=True, slots=True)
class Prepared:
    """A trace as numpy columns plus its stack depths (one pass; any number of capacities).

    Attributes:
        block_size: tokens per block.
        arrival_s: float64 (R,); prompt_tokens, output_tokens: int64 (R,).
        num_blocks: int64 (R,): block ids per request (partial last block included).
        cacheable, cap: int64 (R,): ``BlockRules.cacheable_blocks`` / ``max_hit_blocks``.
        flat_offsets: int64 (R + 1,): request r's cacheable accesses in ``depths``.
        depths: int64 (N,): LRU stack depth at request start of every cacheable
            access (-1 = never used before), :func:`pcs.replay.stackdist.stack_depths`.
        ideal_lead: int64 (R,): leading blocks seen before with every id cacheable.
        batch_sizes: requests per batch read (for ``progress``).
    """

    block_size: int
    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    num_blocks: np.ndarray
    cacheable: np.ndarray
    cap: np.ndarray
    flat_offsets: np.ndarray
    depths: np.ndarray
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


def _read(source: Any) -> tuple:
    """The whole trace as columns: (block_size, arrival, prompt, output, offsets, hashes, batch sizes)."""
    parts = list(_batches(source))
    sizes = list(dict.fromkeys(p[0] for p in parts))
    if sizes and sizes[0] < 1:
        raise ValueError(f"block size must be >= 1 token, got {sizes[0]}")
    if len(sizes) > 1:
        raise ValueError(f"all requests of a replay need one block size; got {sizes[0]} and {sizes[1]}")
    if not parts:
        return 1, np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(1, np.int64), \
            np.zeros(0, np.uint64), ()
    cat = lambda k, dt: np.concatenate([np.asarray(p[k], dtype=dt) for p in parts])  # noqa: E731
    prompt, output = cat(2, np.int64), cat(3, np.int64)
    if (prompt < 0).any() or (output < 0).any():
        raise ValueError("token counts must be >= 0")
    counts = np.concatenate([np.diff(np.asarray(p[4], dtype=np.int64)) for p in parts])
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return sizes[0], cat(1, np.float64), prompt, output, offsets, cat(5, np.uint64), tuple(len(p[2]) for p in parts)


def _keep_heads(offsets: np.ndarray, counts: np.ndarray, n: np.ndarray) -> np.ndarray | None:
    """Bool mask over all ids keeping each request's first ``n`` (None when that is every id)."""
    drop = counts - n
    total = int(drop.sum())
    if total == 0:
        return None
    keep = np.ones(int(offsets[-1]), dtype=bool)
    ranks = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(drop) - drop, drop)
    keep[np.repeat(offsets[:-1] + n, drop) + ranks] = False
    return keep


def _leading(ok: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per request, the number of leading True entries of ``ok`` (int64, shape (R,))."""
    bad = np.flatnonzero(~ok)
    first = np.append(bad, ok.shape[0])[np.searchsorted(bad, offsets[:-1])]
    return np.minimum(first, offsets[1:]) - offsets[:-1]


def _check_chained(depths: np.ndarray, offsets: np.ndarray, distinct: int) -> None:
    """Raise NotApplicable unless depths rise strictly along each request and no id repeats in one."""
    if int((depths < 0).sum()) != distinct:
        raise NotApplicable("an id repeats within a request (not chained hashes); use engine='general'")
    m = depths.shape[0]
    if m < 2:
        return
    warm = np.where(depths < 0, np.iinfo(np.int64).max, depths)
    ok = (warm[1:] > warm[:-1]) | (depths[1:] < 0)
    bounds = offsets[1:-1]
    ok[bounds[(bounds > 0) & (bounds < m)] - 1] = True
    if not bool(ok.all()):
        raise NotApplicable("block ids are not chained (a cached block follows an uncached one, or depths "
                            "do not rise along a request); use engine='general'")


def prepare(source: Any, rules: BlockRules = BlockRules(), kernel: str = "auto") -> Prepared:
    """Read ``source`` once into columns and compute the stack depths the fast path needs.

    Args:
        source: a Trace (``iter_batches``) or an iterable of request-like objects.
        rules: block rules of the run.
        kernel: stack-depth kernel (:data:`pcs.replay.stackdist.KERNELS`).
    Returns:
        :class:`Prepared`. Cost: one or two O(N log N) kernel passes (two when
        partial blocks are not cacheable: the ideal ratio needs every id).
    Raises:
        ValueError: block sizes differ, negative token counts, an empty trace.
        NotApplicable: the ids are not chained (see the module docstring).
    """
    bs, arrival, prompt, output, offsets, hashes, batch_sizes = _read(source)
    if prompt.shape[0] == 0:
        raise ValueError("the trace has no requests")
    counts = np.diff(offsets)
    n, cap, _ = rule_columns(prompt, counts, output, bs, rules)
    keep = _keep_heads(offsets, counts, n)
    ideal_lead = None
    if keep is not None:  # the ideal pass first, so every id can be dropped before the run's pass
        ideal_lead = _leading(stackdist.stack_depths(hashes, offsets, kernel)[0] >= 0, offsets)
        hashes = hashes[keep]
        offsets = np.concatenate(([0], np.cumsum(n))).astype(np.int64)
    depths, distinct = stackdist.stack_depths(hashes, offsets, kernel)
    del hashes
    _check_chained(depths, offsets, distinct)
    if ideal_lead is None:
        ideal_lead = _leading(depths >= 0, offsets)
    return Prepared(bs, arrival, prompt, output, counts, n, cap, offsets, depths, ideal_lead, batch_sizes)


def _single(hits: np.ndarray, prompt: np.ndarray, bs: int) -> SingleSequenceResult:
    tokens = np.minimum(hits * bs, prompt)
    return SingleSequenceResult(int(tokens.sum()), int(prompt.sum()), int(hits.sum()), int((hits > 0).sum()),
                                int(prompt.shape[0]))


def single_results(prep: Prepared) -> tuple[SingleSequenceResult, SingleSequenceResult]:
    """(single-sequence under the run's rules, ideal) as :func:`pcs.blocks.single_sequence_hits` gives them."""
    seen = _leading(prep.depths >= 0, prep.flat_offsets)
    return (_single(np.minimum(prep.cap, seen), prep.prompt_tokens, prep.block_size),
            _single(prep.ideal_lead, prep.prompt_tokens, prep.block_size))


def _times(compute: Any, prompt: np.ndarray, hit_tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(prefill_s with the hits, prefill_s from scratch), float64 (R,), via ``compute.prefill_s``."""
    m = prompt.shape[0]
    if compute is None:
        return np.zeros(m), np.zeros(m)
    new = np.concatenate((prompt - hit_tokens, prompt))
    cached = np.concatenate((hit_tokens, np.zeros(m, np.int64)))
    both = np.broadcast_to(np.asarray(compute.prefill_s(new, cached), dtype=np.float64), (2 * m,))
    return both[:m].copy(), both[m:].copy()


def _columns(prep: Prepared, tier_name: str, lead: np.ndarray, compute: Any) -> dict:
    """Per-request columns, names and dtypes as :class:`pcs.replay.engine.ReplayEngine` makes them."""
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


def run(prep: Prepared, capacity_blocks: int, tier_name: str = "gpu", write_policy: str = "back",
        compute: Any = None, progress: Callable[[int], None] | None = None) -> tuple[EngineResult, CacheState]:
    """The sequential one-tier LRU replay of ``prep`` at ``capacity_blocks`` slots.

    Args:
        prep: from :func:`prepare` (reusable across capacities).
        capacity_blocks: tier slots, >= 0.
        tier_name: the tier's name (column ``hit_tokens_<name>``).
        write_policy: ``back``: evicted blocks are dropped (counted in
            ``dropped_blocks``); ``through``: dropped uncounted (a copy was
            written below), as :class:`pcs.cache.Hierarchy` with one tier.
        compute: object with ``prefill_s(new_tokens, cached_tokens)`` or None (0 s).
        progress: called with each batch's request count at the end.
    Returns:
        (:class:`EngineResult` with numpy columns, :class:`CacheState`) --
        what ``ReplayEngine.close()`` and ``cache_state(hierarchy)`` give.
    Raises:
        ValueError: negative capacity.
    """
    c = int(capacity_blocks)
    if c < 0:
        raise ValueError(f"tier {tier_name!r}: capacity must be >= 0 blocks, got {c}")
    d = prep.depths
    lead = _leading((d >= 0) & (d < c), prep.flat_offsets)
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
        prep = prepare(source, rules)
    except NotApplicable:
        if engine == "fast":
            raise
        return None
    out = run(prep, tiers[0].capacity_blocks, tiers[0].name, write_policy, compute,
              progress if timing == "sequential" else None)
    return out, single_results(prep)
