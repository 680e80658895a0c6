"""The sequential baseline of a modeled run through a compiled hierarchy, with no Python loop per request.

The gap split (``docs/semantics.md §12``) needs the hit ratio of the same
tiers replayed sequentially: requests in trace order, each started, prefilled
and finished before the next (:class:`pcs.engine.engine.ReplayEngine`,
timing ``sequential``). When the engine-selection table places that baseline
on ``compiled-hierarchy`` (every tier ``lru``) or ``compiled-hybrid`` (a
hybrid model's cache groups, ``§3.1``), the same three calls run inside the
hierarchy's ``run_sequential``: one C call for the whole trace, the same
admissions (``pcs/cache/_lruhier.c`` ``seq_one``, ``pcs/cache/_grouphier.c``
``seq_one``). The rules per request are the engine's: the cacheable head and
the hit cap from :func:`pcs.engine.chunks.rule_columns` (§2, §4); hit tokens
``min(hits x block_size, prompt)`` (§11); a hybrid request's tokens the rules
refused ``lost x block_size`` (§12, ``hybrid_lost_tokens``).
``tests/engine/test_seqbase.py`` diffs both against the event loop.
Two tiers that both run ``fifo`` or ``slru`` sharing one table (write-back, no
admission, retain or hosted policy: ``pcs/cache/_lruhier_polshare.h``) take the
lean walk ``pcs/engine/_seqpol.c`` instead (:func:`policy_walk`): the same rules
with only the hit counts kept, no second hierarchy's mechanism
(``tests/engine/test_seqpol.py`` diffs it against ``run_sequential`` and the
Python reference).
The baseline is one C call over the whole trace (:func:`begin_sequential`), which
releases the GIL when the hierarchy runs no Python code (``releases_gil``: no
hosted Python policy, no followed clock): the runner starts it on a worker
thread and runs the step loop meanwhile (``pcs/engine/runner.py``); each touches
only its own hierarchy and arrays, so the result is the one of running them in
turn.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from pcs.blocks import BlockRules
from pcs.beside import Beside
from pcs.engine.chunks import rule_columns
from pcs.engine.engine import EngineResult
from pcs.engine.ledger import ReplayLedger
from pcs.trace.batches import as_batches

__all__ = ["sequential_baseline", "begin_sequential", "sequential_call", "baseline_from_scan", "policy_walk",
           "POLICY_WALK_REASON"]

#: What the baseline's engine reason adds when :func:`begin_sequential` runs the lean walk (the JSON's
#: ``baseline_engine_reason``): the row stays ``compiled-hierarchy``, whose rules the walk follows.
POLICY_WALK_REASON = ("run as the lean walk of two fifo / slru tiers sharing one table (pcs/engine/_seqpol.c: the "
                      "hierarchy's sequential rules, not a second hierarchy pass)")


def policy_walk(hierarchy: Any) -> tuple | None:
    """The arguments the lean walk (``pcs.engine._seqpol.run``) takes after the trace's arrays -- (policy names,
    capacities in blocks, slru protected sizes in blocks), GPU then CPU -- when ``hierarchy`` is exactly what the walk
    models: a :class:`pcs.cache.native.NativeHierarchy` of two tiers, each ``fifo`` or ``slru``, sharing one table
    (write-back, no admission gate, retain pool or hosted policy: ``ps_open`` in
    ``pcs/cache/_lruhier_polshare.h``), the walk built; else None (the hierarchy's own ``run_sequential`` runs).
    A protected size is ``floor(protected_share x capacity)``, the rule of :class:`pcs.cache.policies.slru.SLRUPolicy`
    (0 for fifo, unread)."""
    h = getattr(hierarchy, "_h", None)
    tiers = getattr(hierarchy, "tiers", ())
    if h is None or hasattr(hierarchy, "groups") or getattr(hierarchy, "write_through", True) or len(tiers) != 2:
        return None
    names = tuple(t.policy.name for t in tiers)
    if any(n not in ("fifo", "slru") for n in names) or not h.shared_table():
        return None
    try:
        from pcs.engine import _seqpol  # noqa: F401  (the walk built)
    except ImportError:
        return None
    caps = tuple(int(t.capacity_blocks) for t in tiers)
    prot = tuple(math.floor(float(t.policy.protected_share) * c) if n == "slru" else 0
                 for t, n, c in zip(tiers, names, caps))
    return names, caps, prot


def sequential_baseline(source: Any, hierarchy: Any, rules: BlockRules) -> EngineResult:
    """Replay ``source`` sequentially through ``hierarchy`` (a fresh compiled hierarchy).

    Args:
        source: anything :func:`pcs.trace.batches.as_batches` reads (in a replay: the decoded trace).
        hierarchy: empty tiers with ``run_sequential``: :class:`pcs.cache.native.NativeHierarchy`, or
            :class:`pcs.cache.nativegroups.NativeGroupHierarchy` (it has ``groups``; its clock follows the
            arrivals, seconds, as the event loop ticks it).
        rules: block rules of the run.
    Returns:
        :class:`EngineResult` with a ledger holding what the hit counts give: requests, prompt / hit /
        computed tokens, hit blocks, requests with a hit, block accesses and cacheable blocks (the summary
        reads a baseline's ``hit_ratio`` only); per-tier hits, misses, truncations, links and peaks stay 0.
        Its columns: none, or for cache groups ``hybrid_lost_tokens`` (int64, one per request, trace order).
    Raises:
        UserError: as :func:`pcs.trace.batches.as_batches`; :class:`pcs.errors.PolicyError` (a ValueError) when a
            hosted Python policy raises.
    """
    return begin_sequential(source, hierarchy, rules, Beside(False))()


def begin_sequential(source: Any, hierarchy: Any, rules: BlockRules, beside: Beside,
                     lean: bool = True, side_work: bool = False) -> Callable[[], EngineResult]:
    """Start :func:`sequential_baseline`: the whole trace in one ``run_sequential`` call of ``hierarchy`` (a fresh
    :class:`pcs.cache.native.NativeHierarchy` or :class:`pcs.cache.nativegroups.NativeGroupHierarchy`), on
    ``beside``'s worker thread when ``beside`` is threaded and the call releases the GIL (``releases_gil``: the
    caller's step loop runs meanwhile, ``pcs/cache/_lruhier.c``, ``pcs/cache/_grouphier.c``), else now on this
    thread, its errors raised here. The same requests in the same order as one call per batch, so the result is
    the same (``tests/engine/test_seqbase.py``). With ``lean`` (the default) a hierarchy :func:`policy_walk` takes
    runs the lean walk instead of its ``run_sequential`` (the same hit counts; the hierarchy stays empty).
    With ``side_work`` (a replay's runner) the lean walk begun on the worker comes back as a
    :class:`pcs.engine.walkjoin.WalkJoin`, behind which the replay queues its single-sequence walk and no-cache run
    on the same worker; the caller must then hand both over (or close ``beside``) before it waits.

    Returns:
        the call that waits for the baseline and gives its :class:`EngineResult` (as
        :func:`sequential_baseline`); call it once, before ``beside`` serves anything else (a WalkJoin: as often
        as wanted).
    Raises:
        UserError: as :func:`pcs.trace.batches.as_batches`, here; the hierarchy's errors (a hosted policy's
            :class:`pcs.errors.PolicyError`, a ValueError), here when run on this thread, else from the call
            returned.
    Memory: the trace's hashes and per-request columns copied into one set of arrays (8 B per block access,
    48 B per request) until the call returned has run.
    """
    run, args, finish, walked = sequential_call(source, hierarchy, rules, lean)
    if not (beside.threaded and getattr(hierarchy, "releases_gil", False)):
        run(*args)
        res = finish()
        return lambda: res
    if walked and side_work:
        from pcs.engine.walkjoin import WalkJoin   # (imports pcs.engine.scanjoin, which imports this module)
        return WalkJoin(beside, run, args, finish)
    beside.start(run, *args)

    def result() -> EngineResult:
        beside.join()
        return finish()
    return result


def sequential_call(source: Any, hierarchy: Any, rules: BlockRules,
                    lean: bool = True) -> tuple[Callable[..., Any], tuple, Callable[[], EngineResult], bool]:
    """``(run, args, finish, walked)``: :func:`begin_sequential`'s call made ready but not run -- ``run(*args)`` is
    the whole trace's ``run_sequential`` of ``hierarchy`` (or, with ``lean``, the lean walk :func:`policy_walk`
    takes: ``pcs.engine._seqpol.run``; ``walked`` says which), releasing the GIL when the hierarchy's
    ``releases_gil`` says so; ``finish()``, once it has run, gives the :class:`EngineResult` (as
    :func:`sequential_baseline`).

    Raises:
        UserError: as :func:`pcs.trace.batches.as_batches`, here; ``run``: the hierarchy's errors.
    """
    parts, call = _whole_call(source, rules)
    run, extra = hierarchy.run_sequential, None
    if not hasattr(hierarchy, "groups"):
        call = call[:5]                 # NativeHierarchy.run_sequential: hashes, offsets, cacheable, max_hit, out
        extra = policy_walk(hierarchy) if lean else None
        if extra is not None:
            from pcs.engine import _seqpol
            run = _seqpol.run           # releases the GIL, as run_sequential here
    return run, call + (extra or ()), lambda: _result(hierarchy, parts, call), extra is not None


def _result(hierarchy: Any, parts: list, call: tuple) -> EngineResult:
    """The baseline's :class:`EngineResult` once ``run_sequential(*call)`` has run (:func:`_whole_call`'s
    ``parts`` and arrays); a hosted Python policy first gets its last queued calls (``sync``:
    pcs/cache/_pol_py.c), so an error it raises there surfaces."""
    sync = getattr(hierarchy, "sync", None)
    if sync is not None:
        sync()
    hits, lost = call[4], call[5] if len(call) > 5 else None
    L, lost_tokens, r = ReplayLedger(num_tiers=len(hierarchy.tiers)), [], 0
    for bs, prompt, n, accesses in parts:
        k = prompt.shape[0]
        _count(L, prompt, hits[r:r + k], bs, accesses, n)
        if lost is not None:
            lost_tokens.append(lost[r:r + k] * bs)
        r += k
    L.computed_tokens = L.prompt_tokens - L.hit_tokens
    if lost is None:
        return EngineResult(L, {})
    return EngineResult(L, {"hybrid_lost_tokens": np.concatenate(lost_tokens) if lost_tokens
                            else np.zeros(0, np.int64)})


def _whole_call(source: Any, rules: BlockRules) -> tuple[list, tuple]:
    """(per batch (block size, prompt tokens, cacheable blocks, block accesses), the arguments of one
    ``run_sequential`` call over every batch: hashes u64, offsets i64 (R+1,), cacheable, max_hit, hits and
    lost (int64 (R,), filled by the call), arrival f64 (R,))."""
    parts, cols, base = [], ([], [], [], [], []), 0
    for b in as_batches(source):
        bs, off, prompt, n, cap = _columns(b, rules)
        parts.append((bs, prompt, n, int(off[-1])))
        for col, x in zip(cols, (np.ascontiguousarray(b.block_hashes, np.uint64), off[:-1] + base, n, cap,
                                 np.asarray(b.arrival_s, np.float64))):
            col.append(x)
        base += int(off[-1])
    keys, off, n, cap, arrival = (np.concatenate(c) if c else np.zeros(0, t)
                                  for c, t in zip(cols, (np.uint64, np.int64, np.int64, np.int64, np.float64)))
    off = np.append(off, np.int64(base)).astype(np.int64)
    r = n.shape[0]
    return parts, (keys, off, n, cap, np.empty(r, np.int64), np.empty(r, np.int64), arrival)


def _columns(b: Any, rules: BlockRules) -> tuple:
    """(block size, offsets from 0 (int64 (R+1,)), prompt tokens, cacheable blocks, hit cap (int64 (R,)))
    of one batch (:func:`pcs.engine.chunks.rule_columns`: §2, §4)."""
    bs = int(b.block_size)
    off = np.asarray(b.block_offsets, np.int64)
    off = off - off[0]
    prompt = np.asarray(b.prompt_tokens, np.int64)
    n, cap, _ = rule_columns(prompt, np.diff(off), np.asarray(b.output_tokens, np.int64), bs, rules)
    return bs, off, prompt, np.ascontiguousarray(n, np.int64), np.ascontiguousarray(cap, np.int64)


def _count(L: ReplayLedger, prompt: np.ndarray, hits: np.ndarray, bs: int, accesses: int, n: np.ndarray) -> None:
    """Add requests with ``prompt`` tokens and ``hits`` hit blocks (int64 (R,)) to ``L``; hit tokens
    ``min(hits x block_size, prompt)`` (§11)."""
    L.num_requests += int(prompt.shape[0])
    L.prompt_tokens += int(prompt.sum())
    L.hit_tokens += int(np.minimum(hits * bs, prompt).sum())
    L.hit_blocks += int(hits.sum())
    L.requests_with_hit += int((hits > 0).sum())
    L.block_accesses += accesses
    L.cacheable_blocks += int(n.sum())


def baseline_from_scan(sc: Any, num_tiers: int) -> EngineResult:
    """The same :class:`EngineResult` as :func:`sequential_baseline` from a scan that ran the two tiers
    (:func:`pcs.engine.fastpath.scan` with ``lower_blocks``; ``sc.baseline_hits`` not None): per request the
    hit blocks the compiled hierarchy's ``run_sequential`` gives (tests/engine/test_seqbase.py)."""
    L = ReplayLedger(num_tiers=num_tiers)
    _count(L, sc.prompt_tokens, sc.baseline_hits, sc.block_size, int(sc.num_blocks.sum()), sc.cacheable_blocks)
    L.computed_tokens = L.prompt_tokens - L.hit_tokens
    return EngineResult(L, {})
