"""Run a replay and its sequential baseline on the engines :mod:`pcs.engine.select` chooses.

One call of :func:`run_replay` produces everything the summary needs: the
run (its ledger, per-request columns and end state), the ledger of the
sequential replay with the same tiers (the gap split's baseline,
``docs/semantics.md §12``) and the single-sequence and ideal results. Each
of the run and the baseline is placed by :func:`pcs.engine.select.choose`;
an ``lru-scan`` that finds the ids are not chained gives way to
:func:`pcs.engine.select.fall_back` (``auto`` only) and the reason records it.
When an event loop runs, the trace is decoded once (:class:`pcs.engine.decoded.Decoded`)
and the scan, the next-turn search and the engines' feed read the same batches.

Modeled timing with ``--compute step`` (``step`` given) runs the step
scheduler (:class:`pcs.engine.scheduler.StepEngine`, or its compiled twin
:class:`pcs.engine.stepnative.NativeStepEngine` on the ``compiled-step`` row) instead of the
instant-compute loop, and beside it the same scheduler with no cache (the
"without cache" latencies); decode blocks are found first when they may be
cached (:mod:`pcs.engine.turns`, a pass over the same decoded batches).

Threads (the rule): work that shares no mutable state with the run's loops goes on a worker thread
(:class:`pcs.beside.Beside`, one per kind of side work) while the caller's thread builds and runs the
loops, and is joined before the outcome is built -- the read of a trace file and the next-turn search, each on a
worker of its own, the search walking each batch while the reader decodes the next and the caller makes the
chunk pieces (:func:`pcs.engine.feed._decoded_once`, :class:`pcs.engine.decoded.Decoded`,
:class:`pcs.engine.turns.TurnWalk`), the two-tier one-pass scan (:func:`pcs.engine.scanjoin._two_tier_scan`), the
no-cache step loop (:func:`pcs.engine.feed._feed`, :func:`pcs.engine.loops._close_runs`; behind the two-tier scan on
the scan's worker when that scan runs, :class:`pcs.engine.scanjoin._Tail`: two runnable threads beside the run's
loop were one more than the 2-core machine has), a compiled hierarchy's
sequential baseline (:func:`pcs.engine.seqbase.begin_sequential`; the lean walk of two fifo / slru tiers takes the
single-sequence walk and the no-cache run behind it on its worker, :class:`pcs.engine.walkjoin.WalkJoin`, for the
same reason) and, beside compiled loops, the making of the next
chunk (:func:`pcs.trace.batches.read_ahead`, one in flight). Each reads only the decoded trace and frozen inputs and writes
only its own state, so the outcome is the one of running them in turn (the same JSON and per-request tables:
tests/engine/test_beside.py, tests/engine/test_scan_beside.py). A worker's exception is raised at its join, on
the caller's thread; when the loops fail first, each worker is waited for and its outcome dropped. ``PCS_THREADS=off``
(or a process on one CPU) runs everything inline (:func:`pcs.beside.threads_wanted`), and so does ``auto`` for a
small trace file (:func:`pcs.beside.sized` around the whole run: pcs/beside.py's module docstring).

Where each part lives (one responsibility a module; this one runs them in order): the plans and their placement,
the step scheduler's set-up and the engine names (:mod:`pcs.engine.placement`); the event loops built and closed
(:mod:`pcs.engine.loops`); the two-tier scan on its worker, the no-cache run behind it and the sequential baseline
(:mod:`pcs.engine.scanjoin`); the single-sequence results (:mod:`pcs.engine.singles`); the read once and the feed
(:mod:`pcs.engine.feed`). ``StepSetup`` stays importable from here, as do ``_resolve_step`` (pcs.fleet)
and the names tests import; a test that replaces a part patches the module the part lives in.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from pcs.blocks import BlockRules, SingleSequenceResult
from pcs.beside import Beside, sized, threads_wanted
from pcs.engine.decoded import Decoded
from pcs.engine.engine import EngineResult
from pcs.engine.feed import _decoded_once, _fed_loops
from pcs.engine.loops import HierarchyAhead
from pcs.engine.loops import _close_runs, _native_step_or_fallback, _settle_parts   # noqa: F401 (tests import it)
from pcs.engine.passes import SharedPasses
from pcs.engine.placement import StepSetup, _Plan, _engines, _place, _resolve_step, _scan   # noqa: F401 (_Plan: tests)
from pcs.engine.scanjoin import _baseline, _open_scan
from pcs.engine.singles import _early_singles, _joined_singles, single_with_decode
from pcs.engine.summary import CacheState
from pcs.engine.walkjoin import WalkJoin
from pcs._dataclass import dataclass

__all__ = ["Outcome", "StepSetup", "run_replay", "run_oracle"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What :func:`run_replay` produced.

    Attributes:
        result: the run's ledger and per-request columns.
        state: the run's tiers at the end.
        baseline: the sequential baseline's result (the run itself in sequential timing).
        single, ideal: single-sequence results under the run's rules and the ideal rules.
        engines: the summary's keys naming the engines (:data:`pcs.engine.select.SUMMARY_KEYS`) -> value: the
            run's engine (a :data:`pcs.engine.select.ENGINES` name) and why, the same for the baseline.
        scheduler: the step scheduler's ``(resolved config, counters, no-cache result, no-cache counters)``,
            or None (instant compute, sequential timing).
        single_with_decode: the decode-aware single-sequence result (:func:`single_with_decode`) when the
            run cached decode blocks, else None.
        decode: the next turns whose decode blocks that scan counted (:class:`pcs.engine.turns.DecodeBlocks`)
            when it ran, else None.
    """

    result: EngineResult
    state: CacheState
    baseline: EngineResult
    single: SingleSequenceResult
    ideal: SingleSequenceResult
    engines: dict[str, str]
    scheduler: tuple | None = None
    single_with_decode: SingleSequenceResult | None = None
    decode: Any = None


def run_replay(source: Any, rules: BlockRules, time_model: Any, make_tiers: Callable[[], list], timing: str,
               write_policy: str, links: Sequence, block_bytes: Sequence[int], requested: str = "auto",
               native: str | None = None, progress: Callable[[int], None] | None = None,
               step: StepSetup | None = None, hybrid: Any = None, step_s: float = 60.0,
               passes: SharedPasses | None = None, comparison: bool = False) -> Outcome:
    """Choose, run and collect the run and its sequential baseline.

    Args:
        source: a re-iterable request source (:func:`pcs.trace.batches.as_batches` reads it).
        rules: block rules; time_model: :class:`pcs.engine.timing.TimeModel`.
        make_tiers: returns a fresh list of empty :class:`pcs.cache.Tier` (one per engine that needs one).
        timing: ``sequential`` or ``modeled``; write_policy: ``back`` or ``through``.
        links, block_bytes: per tier, as :class:`pcs.engine.engine.ReplayEngine` takes them.
        requested: ``engine=`` of :func:`pcs.replay` (:data:`pcs.engine.select.REQUESTS`).
        native: ``auto``, ``c``, ``python`` or None (:mod:`pcs._native`).
        progress: called with the requests replayed since its previous call (increments), for the run only.
        step: the step scheduler's setup (modeled timing only), or None for instant compute.
        hybrid: a :class:`pcs.engine.hybrid.HybridPlan` (``make_tiers`` then returns its pools,
            level-major), or None; step_s: its residency series' step, simulated seconds.
        passes: the tier-independent passes shared by the runs of one replay (:mod:`pcs.engine.passes`;
            ``source`` is then its decoded trace), or None.
        comparison: a comparison run, read for its hit ratios and tier peaks only (a hybrid model's
            all-full-attention line): no no-cache step run (``Outcome.scheduler`` None) and no decode-aware
            single-sequence result.
    Raises:
        UserError: as :func:`pcs.engine.select.choose`; bad trace content;
            ``lru-scan`` requested on ids that are not chained.

    Threads: as :func:`pcs.beside.threads_wanted` says, within :func:`pcs.beside.sized` of ``source`` (``auto``
    mode runs the side work of a small trace file inline; the same outcome either way).
    """
    with sized(source):
        return _run(source, rules, time_model, make_tiers, timing, write_policy, links, block_bytes, requested,
                    native, progress, step, hybrid, step_s, passes, comparison)


def _run(source: Any, rules: BlockRules, time_model: Any, make_tiers: Callable[[], list], timing: str,
         write_policy: str, links: Sequence, block_bytes: Sequence[int], requested: str, native: str | None,
         progress: Callable[[int], None] | None, step: StepSetup | None, hybrid: Any, step_s: float,
         passes: SharedPasses | None, comparison: bool) -> Outcome:
    """:func:`run_replay`'s work, its arguments as it takes them."""
    tiers0 = make_tiers()
    plans = _place(tiers0, timing, requested, native, hybrid, step)
    ahead = HierarchyAhead.of(plans, tiers0, write_policy, hybrid) if passes is None else None
    source = passes.source if passes is not None else _decoded_once(source, plans, step, timing, native, rules,
                                                                     time_model, None if ahead is None else ahead.build,
                                                                     keep_worker=True)
    # side work on worker threads; the two-tier scan's on the next-turn walk's, idle once the trace is decoded (one
    # thread start fewer on this thread's path: docs/performance.md, "The 1x call's fixed costs")
    walker = source.take_worker() if passes is None and isinstance(source, Decoded) else None
    seq_side, scan_side = Beside(threads_wanted()), walker or Beside(threads_wanted())
    done = no_cache_result = go = None
    try:
        resolved = _resolve_step(step, timing, source, rules, native, passes)
        scan2, go = _open_scan(plans, source, rules, tiers0, write_policy, requested, resolved, scan_side)
        base = _baseline(scan2, plans, source, rules, make_tiers, write_policy, hybrid, block_bytes, step_s, seq_side)
        plans, all_plans = (plans[:1], plans) if base is not None else (plans, plans)
        scans = [_scan(p, source, rules, tiers0, requested) if p.row.kind == "scan" else None for p in plans]
        walk = base if isinstance(base, WalkJoin) else None     # the lean walk's worker: the side work queues there
        early, go = _early_singles(scans, scan2, go, (source, rules, native, resolved, passes), plans, scan_side,
                                   walk)
        loops, no_cache, beside = _fed_loops(
            (plans, make_tiers, tiers0, write_policy, links, block_bytes, resolved, hybrid, step_s, not comparison),
            source, rules, time_model, progress, resolved is None and timing == "modeled", passes, go,
            scan2 if walk is None else walk, ahead)
        done, no_cache_result = _close_runs(scans, loops, no_cache, beside, hybrid, tiers0, write_policy,
                                            time_model, progress)
        singles, scan, ready = _joined_singles(early, scans, scan2, source, rules, native, resolved, passes)
        (result, state), baseline = done[0], (base() if base is not None else done[-1][0])
    except BaseException:
        _settle_parts(done, no_cache_result)   # the runs' summary parts still made beside: no worker outlives the error
        raise
    finally:
        _stop_side_work(scan_side, seq_side)
    sched = None if no_cache is None else (resolved[1], loops[0].stats, no_cache_result, no_cache.stats)
    with_decode = single_with_decode(resolved, source, native, scan, passes, scanned_only=comparison, ready=ready)
    with_decode = None if comparison else with_decode     # a comparison line keeps its scan's for the run
    return Outcome(result, state, baseline, singles[0], singles[1], _engines(plans[0], all_plans[-1]), sched,
                   with_decode, resolved[2] if with_decode is not None else None)


def _stop_side_work(scan_side: Beside, seq_side: Beside) -> None:
    """After the runs, or when an error stopped them: wait for the two-tier scan (or the singles walk) and the
    sequential baseline still running on their workers -- a call still waiting at its gate is let go first
    (:attr:`pcs.beside.Beside.opener`) -- closing the second even when closing the first raises (a stop signal
    there)."""
    try:
        scan_side.close()
    finally:
        seq_side.close()


def run_oracle(source: Any, rules: BlockRules, time_model: Any, make_tiers: Callable[[], list], timing: str,
               write_policy: str, links: Sequence, block_bytes: Sequence[int],
               step: StepSetup | None = None, native: str | None = None) -> EngineResult:
    """The gap split's oracle run (docs/semantics.md §12): ``make_tiers()`` (the run's tiers with every
    policy ``belady``, no admission) with the run's timing, write policy and, in modeled timing with ``step``,
    its step scheduler; on the engine :func:`pcs.engine.select.choose` picks (``compiled-step`` /
    ``compiled-hierarchy`` run belady in C, equal to the Python reference:
    tests/cache/test_native_oracle_policies.py), ``native`` as :func:`run_replay` takes it."""
    return run_replay(source, rules, time_model, make_tiers, timing, write_policy, links, block_bytes,
                      "auto", native, None, step).result
