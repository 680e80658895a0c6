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
chunk pieces (:func:`_decoded_once`, :class:`pcs.engine.decoded.Decoded`, :class:`pcs.engine.turns.TurnWalk`),
the two-tier one-pass scan (:func:`_two_tier_scan`), the no-cache step loop (:func:`_feed`, :func:`_close_runs`;
behind the two-tier scan on the scan's worker when that scan runs, :class:`_Tail`: two runnable threads beside
the run's loop were one more than the 2-core machine has), a compiled hierarchy's
sequential baseline (:func:`pcs.engine.seqbase.begin_sequential`) and, beside compiled loops, the making of the next
chunk (:func:`pcs.trace.batches.read_ahead`, one in flight). Each reads only the decoded trace and frozen inputs and writes
only its own state, so the outcome is the one of running them in turn (the same JSON and per-request tables:
tests/engine/test_beside.py, tests/engine/test_scan_beside.py). A worker's exception is raised at its join, on
the caller's thread; when the loops fail first, each worker is waited for and its outcome dropped. ``PCS_THREADS=off``
(or a process on one CPU) runs everything inline (:func:`pcs.beside.threads_wanted`).
"""
from __future__ import annotations

import dataclasses
import threading
from typing import Any, Callable, Sequence

import numpy as np

from pcs.blocks import BlockRules, SingleSequenceResult
from pcs.cache.policies.context import clocked
from pcs.engine import fastpath, select, seqbase
from pcs.beside import Beside, threads_wanted
from pcs.engine.chunks import iter_chunks
from pcs.engine.decoded import Decoded
from pcs.engine.passes import SharedPasses
from pcs.engine.engine import EngineResult, ReplayEngine
from pcs.engine.summary import CacheState, cache_state
from pcs.trace.batches import read_ahead
from pcs.trace.parquet import expected_block_hashes
from pcs._dataclass import dataclass

__all__ = ["Outcome", "StepSetup", "run_replay", "run_oracle"]


@dataclass(frozen=True, slots=True)
class StepSetup:
    """What the step scheduler needs beyond the tiers.

    Attributes:
        config: :class:`pcs.engine.schedconfig.SchedulerConfig` as given (None fields are resolved here).
        gpu: the GPU (batch-limit defaults).
        cost: :class:`pcs.compute.StepCost`.
    """

    config: Any
    gpu: Any
    cost: Any


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


@dataclass(slots=True)
class _Plan:
    """One placed replay (the run or the baseline): its timing, config, row and reason."""

    timing: str
    config: select.RunConfig
    row: select.EngineRow
    reason: str
    step_loop: str | None = None    # compiled-hybrid under the step scheduler: "c" or "python" (_hybrid_step_loop)


def _scheduler_label(step: StepSetup | None) -> str | None:
    """:attr:`pcs.engine.select.RunConfig.scheduler` of a run with ``step`` (None: instant compute)."""
    if step is None:
        return None
    from pcs.engine.chunkattn import chunk_terms

    summed = step.cost.attn_pair_s is not None or chunk_terms(step.cost) is not None    # the C loop sums it
    at = step.config.cache_blocks_at
    return step.config.restore_policy + ("" if at == "prefill-done" else f"+cache-blocks-at={at}") + \
        ("" if summed else "+chunk-attention")


def _place(tiers: Sequence, timing: str, requested: str, native: str | None, hybrid: Any = None,
           step: StepSetup | None = None) -> list[_Plan]:
    """The run, then (modeled timing) the sequential baseline, each chosen through the table."""
    plans = []
    groups = [g.name for g in hybrid.groups] if hybrid is not None else None
    for t in (timing, "sequential") if timing == "modeled" else (timing,):
        cfg = select.RunConfig.of(tiers, t, native, groups, _scheduler_label(step),
                                  hybrid.pools if hybrid is not None else 1)
        row, reason = select.choose(cfg, select.baseline_request(requested) if t != timing else requested)
        plans.append(_Plan(t, cfg, row, reason))
    return plans


def _scan(plan: _Plan, source: Any, rules: BlockRules, tiers: Sequence, requested: str) -> fastpath.Scan | None:
    """The lru-scan of ``plan`` at the tier's capacity, or None after falling back (the plan is updated).

    Raises:
        fastpath.NotApplicable: the ids are not chained and ``lru-scan`` was requested by name.
    """
    try:
        return fastpath.scan(source, tiers[0].capacity_blocks, rules, plan.config.native)
    except fastpath.NotApplicable as exc:
        if select.canonical(requested) != "auto":
            raise fastpath.NotApplicable(f"engine {requested!r} cannot run this replay: {exc}; use engine='auto' "
                                         "or 'reference'") from None
        plan.row, plan.reason = select.fall_back(plan.config, plan.row, str(exc), plan.reason)
        return None


def _event_loops(plans: list[_Plan], make_tiers: Callable[[], list], tiers0: list, write_policy: str,
                 links: Sequence, block_bytes: Sequence[int], step: Any = None, hybrid: Any = None,
                 step_s: float = 60.0, no_cache: bool = True, expected_blocks: int = 0) -> list:
    """A ReplayEngine per event-loop plan (None for a scanned one); the first hierarchy takes ``tiers0``.
    ``expected_blocks``: the trace's block hashes when known (0: not known), a compiled hierarchy's size hint
    (:class:`pcs.cache.native.NativeHierarchy`: its shared table's slots sized once; no number depends on it).

    With ``step`` (a ``(StepSetup, resolved config, decode blocks, rules)`` tuple) the modeled run is a
    :class:`pcs.engine.scheduler.StepEngine` and (``no_cache``) a no-cache StepEngine (the GPU tier alone) is appended.
    The ``hybrid`` row gets the plan's groups and pools (:class:`pcs.engine.hybrid.HybridPlan`) and, with
    ``step``, :class:`pcs.engine.hybridstep.HybridStepEngine`; its no-cache StepEngine runs the GPU level's pools.
    """
    from pcs.engine.scheduler import StepEngine
    from pcs.engine.stepnative import NativeStepEngine

    loop_cls = NativeStepEngine if plans[0].row.name == "compiled-step" else StepEngine
    out: list = []
    for plan in plans:
        if plan.row.kind != "event-loop":
            out.append(None)
            continue
        tiers = tiers0 if not any(out) else make_tiers()
        kw = {} if plan.row.name not in select.HYBRID_ROWS else _hybrid_kwargs(hybrid, block_bytes, step_s)
        if plan.row.implementation == "pcs.cache.native.NativeHierarchy":
            kw["expected_blocks"] = expected_blocks
        hierarchy = clocked(plan.row.load()(tiers, write_policy, **kw))   # trace-reading policies follow admissions
        if step is not None and plan.timing == "modeled":
            setup, cfg, decode, rules = step
            if loop_cls is NativeStepEngine:
                loop_cls = _native_step_or_fallback(plan, hierarchy, links, setup.cost, cfg)
            engine = loop_cls
            if plan.row.name in select.HYBRID_ROWS:   # pcs.engine.hybridstep: loaded for hybrid rows alone
                from pcs.engine.hybridstep import HybridStepEngine as engine
            if plan.row.name == "compiled-hybrid":
                engine = _hybrid_step_loop(plan, hierarchy, links, setup.cost, cfg)
            out.append(engine(hierarchy, links, block_bytes, setup.cost, cfg, rules.recompute_last_token, decode))
        else:
            out.append(ReplayEngine(hierarchy, plan.timing, links=links, block_bytes=block_bytes))
    if no_cache and step is not None and plans[0].timing == "modeled" and out[0] is not None:
        setup, cfg, decode, rules = step
        hyb = plans[0].row.name in select.HYBRID_ROWS
        kw = {} if not hyb else _hybrid_kwargs(hybrid, block_bytes, step_s, gpu_only=True)
        gpu_only = clocked(plans[0].row.load()(make_tiers()[:kw.get("pools", 1)], write_policy, **kw))
        nc_cls = StepEngine if hyb else loop_cls
        if plans[0].row.name == "compiled-hybrid" and plans[0].step_loop == "c":
            from pcs.engine.hybridnative import HybridNativeStepEngine as nc_cls
        out.append(nc_cls(gpu_only, links[:1], block_bytes[:1], setup.cost, cfg, rules.recompute_last_token,
                          decode, no_cache=True))   # its blocks dropped (no_cache), its request count kept
    return out


def _native_step_or_fallback(plan: _Plan, hierarchy: Any, links: Sequence, cost: Any, cfg: Any) -> type:
    """:class:`pcs.engine.stepnative.NativeStepEngine`, or -- when it finds what the table could not see (a link
    that is not a LinkSpec, more tiers than it takes) -- the Python StepEngine, the plan moved to the next row."""
    from pcs.engine.scheduler import StepEngine
    from pcs.engine.stepnative import NativeStepEngine, unsupported

    why = unsupported(hierarchy, links, cost, cfg)
    if why is None:
        return NativeStepEngine
    plan.row, plan.reason = select.fall_back(plan.config, plan.row, why, plan.reason, "found at set-up")
    return StepEngine


def _hybrid_step_loop(plan: _Plan, hierarchy: Any, links: Sequence, cost: Any, cfg: Any) -> type:
    """The step loop of a ``compiled-hybrid`` run: in C (:class:`pcs.engine.hybridnative.HybridNativeStepEngine`)
    when it can run it, else the Python one (:class:`pcs.engine.hybridstep.HybridStepEngine`); the reason
    says which and why."""
    from pcs.engine.hybridnative import HybridNativeStepEngine, hybrid_unsupported
    from pcs.engine.hybridstep import HybridStepEngine

    why = hybrid_unsupported(hierarchy, links, cost, cfg)
    plan.step_loop = "c" if why is None else "python"
    plan.reason += "; step loop in C" if why is None else f"; step loop in Python: {why}"
    return HybridNativeStepEngine if why is None else HybridStepEngine


def _two_tier_scan(plans: list[_Plan], source: Any, rules: BlockRules, tiers: Sequence, write_policy: str,
                   requested: str, decode: Any, side: Beside) -> Callable[[], fastpath.Scan] | None:
    """Begin the one-pass scan with the run's two tiers on ``side`` when ``auto`` placed a modeled run's sequential
    baseline on ``compiled-hierarchy`` over two ``lru`` tiers with write-back (docs/semantics.md §15: the baseline
    from the one-pass scan, not a second C pass): the same hash probe per id gives the single-sequence walks and the
    baseline's hit blocks (``Scan.baseline_hits``, equal to the compiled hierarchy's: tests/engine/test_seqbase.py).
    ``decode``: decode blocks (:func:`_scan_decode`), walked in the same scan. Returns the call that waits for the
    scan (:class:`_ScanJoin`), or None when it does not apply (nothing started; the baseline's reason then says why,
    :func:`pcs.engine.select.baseline_reason`).

    Threads: on a threaded ``side`` the scan runs on its worker while the caller builds and runs the step loops
    (the compiled scan releases the GIL in ``lru_feed``: pcs/engine/_lruscan.c). It reads the decoded batches
    (read-only numpy arrays), ``decode`` (:meth:`pcs.engine.turns.DecodeBlocks.arrays` of more than one request
    builds new arrays and writes nothing; of one request it memoises a span table both threads would build alike),
    the rules (frozen) and two capacities (ints), and writes only its own ``SequentialLru`` and columns, which no
    one else sees before the join; the plans are relabelled at the join, on the caller's thread. So the scan gives
    the result of running it first (tests/engine/test_scan_beside.py)."""
    if len(plans) < 2:
        return None
    base = plans[-1]
    if not select.baseline_in_scan(base.row, base.config, requested, write_policy):
        base.reason = select.baseline_reason(base.reason, base.row, base.config, write_policy)
        return None
    gate = threading.Event() if side.threaded else None
    tail = _Tail() if side.threaded else None
    # a stop before the gate opens, or before the loops hand the tail its end: settle opens the gate, ends the tail
    side.opener = (lambda: (gate.set(), tail.abort())) if gate is not None else None
    side.start(_gated, gate, _scan_then_tail, tail, source, tiers[0].capacity_blocks, rules,
               tiers[1].capacity_blocks, decode)
    return _ScanJoin(side, plans[-1], gate, tail)


#: The markers of a :class:`_Tail`'s queue: the chunks are all put (the no-cache run closes), or the call stopped.
_END, _ABORT = object(), object()


class _Tail:
    """The no-cache step run queued behind the two-tier scan on the scan's worker (:func:`_scan_then_tail`): the
    calling thread puts the no-cache engine (or None: no such run), then each chunk as the run's loop is fed, then
    :data:`_END`; the worker, once its scan is done, feeds the engine every chunk in order and closes it
    (:func:`_close_beside`). Why: beside the run's feed the scan and the no-cache feed were two more runnable
    threads on the 2-core machine, and the calling thread waited in the run queue behind its own workers
    (docs/performance.md, "The read beside the pieces, the no-cache run behind the scan, ..."); one after the
    other on one worker they end before the run's feed and close. :meth:`abort` (any way out: an error, a stop)
    ends the worker's wait at once."""

    def __init__(self) -> None:
        import queue

        self._q = queue.SimpleQueue()

    def put(self, item: Any) -> None:
        """Queue the engine (or None), a chunk, or :data:`_END`."""
        self._q.put(item)

    def abort(self) -> None:
        """Let the worker return without the rest (its no-cache result then None); harmless once it has ended."""
        self._q.put(_ABORT)

    def run(self) -> EngineResult | None:
        """On the worker: the no-cache engine fed every chunk put, then closed; None when there is none or the
        call stopped first."""
        engine = self._q.get()
        if engine is None or engine is _ABORT or engine is _END:
            return None
        while (ch := self._q.get()) is not _END:
            if ch is _ABORT:
                return None
            engine.feed(ch)
        return _close_beside(engine)


def _scan_then_tail(tail: _Tail | None, *args: Any) -> tuple:
    """:func:`_scan_parts` of ``args``, then (on a threaded side) ``tail``'s no-cache run: ``(parts, no-cache
    result or None)``."""
    return _scan_parts(*args), (tail.run() if tail is not None else None)


def _scan_parts(source: Any, capacity: int, rules: BlockRules, lower: int, decode: Any) -> tuple:
    """The two-tier scan (:func:`pcs.engine.fastpath.scan`, compiled, unchecked) and, on the same thread once it is
    done, what the caller makes of it after the loops: ``(scan, (single-sequence, ideal) results, the baseline when
    its premise held else None, the decode-aware ceiling when ``decode`` was walked else None)``
    (:func:`pcs.engine.fastpath.single_results`, :func:`pcs.engine.seqbase.baseline_from_scan`,
    :func:`pcs.engine.fastpath.decode_result`). Each reads the scan alone and makes new objects, so on the scan's
    worker they are what the caller would make after the join, off the calling thread's path."""
    sc = fastpath.scan(source, capacity, rules, "c", False, lower, decode)
    base = seqbase.baseline_from_scan(sc, 2) if sc.baseline_hits is not None else None
    return _spent(sc), fastpath.single_results(sc), base, fastpath.decode_result(sc)


def _spent(sc: fastpath.Scan) -> fastpath.Scan:
    """``sc`` once :func:`_scan_parts` has read every result off it, its per-request columns (numpy, shape (R,))
    replaced by zero-length ones of the same dtypes (``baseline_hits`` and ``seen_decode`` stay None when they
    were). The caller reads no column of the joined scan, only whether its premise held (:meth:`_ScanJoin.__call__`)
    and whether it walked decode blocks (:func:`single_with_decode`), so the columns -- 11 of 8 B per request,
    10.6 MB at 10x Mooncake -- are not kept alive beside the loops (the scan ends while the run's feed goes on)."""
    cols = {f.name: getattr(sc, f.name) for f in dataclasses.fields(sc)}
    return dataclasses.replace(sc, **{k: v[:0].copy() for k, v in cols.items() if isinstance(v, np.ndarray)})


def _gated(gate: threading.Event | None, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` once ``gate`` is set (None: at once): a worker started early waits, without the GIL, until the
    calling thread lets it go (:meth:`_ScanJoin.open`)."""
    if gate is not None:
        gate.wait()
    return fn(*args)


class _ScanJoin:
    """Wait for the two-tier scan :func:`_two_tier_scan` began and label the baseline's plan by its outcome: moved
    to ``lru-scan``, or -- the ids break the scan's premise (not chained) -- left on ``compiled-hierarchy`` with the
    reason why. Calling again gives the same scan; the scan's exception is raised at the first call.

    The scan's worker is started at once but waits at ``gate`` until :meth:`open` -- called just before the run's
    first step-loop feed (:func:`_feed`'s ``first``), when the calling thread is about to release the GIL in the
    compiled loop -- so the scan's Python and numpy work (its batches' checks and rule columns, which hold the
    GIL) does not contend with the calling thread's building of the loops and its first chunk (docs/performance.md
    "The 1x call's critical path"). :meth:`open` is called again on every way out (the join, an error): idempotent.
    """

    def __init__(self, side: Beside, base: _Plan, gate: threading.Event | None = None,
                 tail: _Tail | None = None) -> None:
        self._side, self._base, self._scan, self._gate, self.tail = side, base, None, gate, tail
        self.parts: tuple = (None, None, None)    # made with the scan (_scan_parts), once joined
        self.no_cache: EngineResult | None = None  # the tail's no-cache result (:class:`_Tail`), once joined

    def open(self) -> None:
        """Let the scan's worker begin (nothing when it runs inline or has begun)."""
        if self._gate is not None:
            self._gate.set()

    def __call__(self) -> fastpath.Scan:
        if self._scan is None:
            self.open()
            (sc, *parts), self.no_cache = self._side.join()
            self._scan, self.parts = sc, tuple(parts)
            if sc.baseline_hits is None:
                self._base.reason += "; not lru-scan: the block hashes are not chained (found while scanning)"
            else:
                self._base.row, self._base.reason = select.get_row("lru-scan"), select.TWO_TIER_SCAN
        return self._scan


def _baseline(scan2: _ScanJoin | None, plans: list[_Plan], source: Any, rules: BlockRules,
              make_tiers: Callable[[], list], write_policy: str, hybrid: Any, block_bytes: Sequence[int],
              step_s: float, beside: Beside) -> Callable[[], EngineResult] | None:
    """The call giving the sequential baseline of a modeled run when it does not run as an event loop: from the
    two-tier scan ``scan2`` (:func:`pcs.engine.seqbase.baseline_from_scan`, once the scan has joined) or, placed on
    ``compiled-hierarchy`` (also a scan that found the ids not chained) or ``compiled-hybrid``, in C
    (:func:`pcs.engine.seqbase.begin_sequential`: on ``beside``'s worker thread while the caller goes on when its
    hierarchy releases the GIL, else done before this returns); None for any other placement."""
    if scan2 is not None:
        def from_scan() -> EngineResult:
            if scan2().baseline_hits is not None:
                return scan2.parts[1]          # seqbase.baseline_from_scan, made on the scan's worker
            return _baseline(None, plans, source, rules, make_tiers, write_policy, hybrid, block_bytes, step_s,
                             Beside(False))()    # the scan left the plan on compiled-hierarchy: the loops are done
        return from_scan
    if len(plans) < 2 or plans[-1].row.name not in ("compiled-hierarchy", "compiled-hybrid"):
        return None
    kw = _hybrid_kwargs(hybrid, block_bytes, step_s) if plans[-1].row.name == "compiled-hybrid" else {}
    return seqbase.begin_sequential(source, plans[-1].row.load()(make_tiers(), write_policy, **kw), rules, beside)


def _hybrid_kwargs(hybrid: Any, block_bytes: Sequence[int], step_s: float, gpu_only: bool = False) -> dict:
    """The hybrid hierarchy's groups and pools: the plan's, or one full-attention group (a model that is
    not hybrid, run on the ``hybrid`` row by request: the same replay as the reference); ``gpu_only``: the
    GPU level's alone (the step scheduler's no-cache run)."""
    if hybrid is not None:
        pb = hybrid.page_bytes[:1] if gpu_only else hybrid.page_bytes
        return dict(groups=hybrid.groups, pools=hybrid.pools, page_bytes=pb, step_s=step_s)
    from pcs.cache.groups import CacheGroup

    pb = [[b] for b in block_bytes]
    return dict(groups=(CacheGroup("full_attention", "full", ("full_attention",), 1),), pools=1,
                page_bytes=pb[:1] if gpu_only else pb, step_s=step_s)


def _resolve_step(step: StepSetup | None, timing: str, source: Any, rules: BlockRules,
                  native: str | None = None, passes: SharedPasses | None = None) -> tuple | None:
    """(setup, resolved config, decode blocks or None, rules) for a modeled step-scheduler run, else None;
    ``native``: which next-turn search runs (:func:`pcs.engine.turns.decode_blocks`; made once per ``passes``)."""
    if step is None or timing != "modeled":
        return None
    from pcs.engine.turns import decode_blocks

    decode = None
    if step.config.cache_decode_blocks is not False:
        walked = source.next_turns if isinstance(source, Decoded) else None    # searched while decoding
        decode = walked if walked is not None else _shared(passes, ("decode_blocks", native),
                                                            lambda: decode_blocks(source, native))
    cfg = step.config.resolved(step.gpu, step.cost.token_s, decode is not None and decode.detected)
    return step, cfg, decode, rules


def _scan_decode(resolved: tuple | None) -> Any:
    """The decode blocks the single-sequence ceiling walks (:func:`single_with_decode`), or None."""
    if resolved is None or not resolved[1].cache_decode_blocks:
        return None
    return resolved[2]


def single_with_decode(resolved: tuple | None, source: Any, native: str | None = None,
                       sc: fastpath.Scan | None = None, passes: SharedPasses | None = None,
                       scanned_only: bool = False,
                       ready: SingleSequenceResult | None = None) -> SingleSequenceResult | None:
    """The single-sequence result with each request's cached decode blocks seen after it
    (:func:`pcs.engine.decodescan.decode_aware_hits`; docs/semantics.md §12, §17) when the step scheduler of
    ``resolved`` (:func:`_resolve_step`) caches decode blocks, else None (the prompt-only ceiling holds).
    From the one-pass scan ``sc`` when it walked them (``Scan.seen_decode``), else one more sequential scan of
    ``source``, O(1) per id. With ``passes`` the result is kept for the replay's other run (it depends on the trace,
    the rules and the decode blocks only, not on the tiers: a hybrid model's run takes the one its comparison line's
    scan walked instead of scanning again); ``scanned_only``: None unless it is kept or ``sc`` walked it (nothing
    is scanned); ``ready``: ``sc``'s result made already (:func:`_scan_parts`, on the scan's worker)."""
    decode = _scan_decode(resolved)
    if decode is None:
        return None
    key = ("single_with_decode", resolved[3], id(decode))   # decode: the passes' own object, kept while they live
    if sc is not None and sc.seen_decode is not None:
        made = ready if ready is not None else fastpath.decode_result(sc)
        return made if passes is None else passes.put(key, made)
    if passes is not None and passes.has(key):
        return passes.get(key, lambda: None)
    if scanned_only:
        return None
    from pcs.engine.decodescan import decode_aware_hits

    return _shared(passes, key, lambda: decode_aware_hits(source, resolved[3], decode, native))


def _presize_samplers(source: Any, loops: list) -> None:
    """Start each step scheduler's time-series sampler at the step the trace's arrival span needs (the same
    samples, fewer calls: :meth:`pcs.engine.series.Sampler.presize`; its first sample is at the first
    arrival and its last at or after the last). One pass over the decoded arrivals; none for other sources."""
    from pcs.engine.scheduler import StepEngine

    if not isinstance(source, Decoded):
        return
    arrivals = [b.arrival_s for b in source.batches if len(b.arrival_s)]
    if not arrivals:
        return
    first, last = float(arrivals[0][0]), max(float(a.max()) for a in arrivals)
    for e in loops:
        if isinstance(e, StepEngine) and e.sampler.t0 is None and not e.no_cache:
            e.sampler.presize(first, last)


def _shared(passes: SharedPasses | None, key: tuple, make: Callable[[], Any]) -> Any:
    """``make()``, or with ``passes`` the value kept under ``key`` (made the first time)."""
    return make() if passes is None else passes.get(key, make)


def _feed(source: Any, rules: BlockRules, time_model: Any, engines: list[ReplayEngine],
          progress: Callable[[int], None] | None, decode: bool = True, passes: SharedPasses | None = None,
          side: ReplayEngine | None = None, beside: Beside | None = None,
          first: Callable[[], None] | None = None) -> None:
    """Feed every chunk of ``source`` to every engine once; ``decode=False``: no decode seconds (step scheduler);
    with ``passes`` the chunks are made once for the runs of the replay (the same time model); a decoded trace
    whose chunks were made in the decode pass (:meth:`pcs.engine.decoded.Decoded.made_chunks`) hands them over.
    ``side``: one more engine, fed each chunk through ``beside`` (on a worker thread) while the others are fed
    and the next chunk is made (the side's feeds stay in chunk order: each is joined before the next starts).
    Without ``passes``, when every engine's loop releases the GIL, the next chunk is made on a worker thread while
    the engines replay this one (:func:`pcs.trace.batches.read_ahead`: one chunk in flight, the chunks in order;
    the maker alone touches the time model's decode memo, :class:`pcs.engine.timing.TimeModel`) -- unless the
    decoded trace is one joined batch, whose one chunk the worker could only make while this thread waits for it
    (a thread start and two hand-overs of the GIL on the critical path: the 1x Mooncake call), so it is made here.
    ``first``: called once, just before the engines' first feed (:meth:`_ScanJoin.open`)."""
    made = source.made_chunks(rules, time_model, decode) if passes is None and isinstance(source, Decoded) else None
    chunks = made if made is not None else iter_chunks(source, rules, time_model, decode) if passes is None else \
        passes.get(("chunks", rules, id(time_model), decode), lambda: list(iter_chunks(source, rules, time_model, decode)))
    one = made is not None and len(source.batches) == 1
    if passes is None and not one and all(getattr(e, "releases_gil", False) for e in engines):
        chunks = read_ahead(chunks, linger=True)   # the next chunk made (or joined) on a worker while the loops run
    try:
        for ch in chunks:
            if side is not None:
                beside.join()              # the previous chunk's side feed (nothing pending at the first)
                beside.start(side.feed, ch)
            if first is not None:
                first, go = None, first
                go()
            for e in engines:
                e.feed(ch)
            if progress is not None:
                progress(len(ch))
        if side is not None:
            beside.join()
    except BaseException:
        if side is not None:
            beside.close()         # waits for the side's call, drops its outcome, ends the worker thread
        if hasattr(chunks, "close"):
            chunks.close()         # waits for the chunk in flight (read_ahead), ends its worker thread
        raise


def _decoded_once(source: Any, plans: list, step: StepSetup | None, timing: str, native: str | None,
                  rules: BlockRules, time_model: Any) -> Any:
    """``source`` decoded once when more than one pass reads it (an event-loop plan), else as it is. When the
    step scheduler will need the next-turn search (:func:`_resolve_step`) and it runs compiled, the search walks
    each batch as it is decoded, on a worker thread (:class:`pcs.engine.turns.TurnWalk`; the decoded trace's
    ``next_turns``), instead of a pass of its own after the decode; and the step loops' chunks are made from each
    batch as it is read (:class:`pcs.engine.chunks.ChunkPieces`, taken by :func:`_feed`), so the loops start on
    chunks already made. With threads (:func:`pcs.beside.threads_wanted`) a trace file is read on a worker of its
    own and the calling thread makes the pieces meanwhile (``Decoded(..., ahead=True)``)."""
    if not any(p.row.kind == "event-loop" for p in plans):
        return source
    walk = pieces = None
    if step is not None and timing == "modeled" and step.config.cache_decode_blocks is not False:
        from pcs import _native
        from pcs.engine.chunks import ChunkPieces
        from pcs.engine.turns import TurnWalk

        if _native.resolve(native, "turns") == "c":
            walk = TurnWalk(threads_wanted())
            pieces = ChunkPieces(rules, time_model) if time_model is not None else None
    return Decoded(source, walk, pieces, ahead=walk is not None and threads_wanted())


def _singles(scans: list, scan2: Any, source: Any, rules: BlockRules, native: str | None, resolved: tuple | None,
             passes: SharedPasses | None, ready: tuple | None = None) -> tuple:
    """(the single-sequence and ideal results, the scan that walked the decode-aware ceiling or None): from a
    one-pass scan already made, else one more pass over the decoded batches, made before the engines grow (8-16 B
    per distinct id); with ``passes`` shared by the runs of one replay (the decode-aware ceiling then comes from
    :func:`single_with_decode`'s own scan). ``ready``: ``scan2``'s results made already (:func:`_scan_parts`)."""
    singles = next((fastpath.single_results(s) for s in scans if s is not None), None)
    if singles is None and scan2 is not None:
        singles = ready if ready is not None else fastpath.single_results(scan2)
    if singles is None:
        scan2 = None if passes is not None else fastpath.scan(source, 0, rules, native, check=False,
                                                              decode=_scan_decode(resolved))
        singles = _shared(passes, ("singles", rules), lambda: fastpath.single_results(
            scan2 if scan2 is not None else fastpath.scan(source, 0, rules, native, check=False)))
    elif passes is not None:
        passes.put(("singles", rules), singles)
    return singles, scan2


def _close_runs(scans, loops, no_cache, beside: Beside, hybrid, tiers0, write_policy: str, time_model,
                progress) -> tuple[list, EngineResult | None]:
    """Close the run's engines (or run its one-pass scans) while the no-cache loop closes beside them:
    ([(result, cache state)] per plan, the no-cache loop's result or None); ``beside`` is closed after
    (:meth:`pcs.beside.Beside.close`: on an error the no-cache loop's outcome is dropped)."""
    try:
        if no_cache is not None:   # its close runs beside the run's, and so do its summary's sorts
            beside.start(_close_beside, no_cache)
        done = [(_close(loop, hybrid), cache_state(loop.h)) if loop is not None else
                fastpath.run(sc, tiers0[0].name, write_policy, time_model.compute, progress if k == 0 else None)
                for k, (sc, loop) in enumerate(zip(scans, loops))]
        try:   # behind the scan (_Queued) this join is the scan's too: its error comes here
            return done, (beside.join() if no_cache is not None else None)
        except BaseException:
            _settle_parts(done, None)    # the closed runs' summary parts still made beside: waited for, dropped
            raise
    finally:
        beside.close()


class _Queued:
    """The no-cache run's side when its feeds and close go to the scan's worker behind the scan (:class:`_Tail`),
    in place of its own :class:`pcs.beside.Beside` (the calls :func:`_feed` and :func:`_close_runs` make on it):
    ``start`` of a feed queues the chunk, ``start`` of :func:`_close_beside` queues the end, ``join`` returns
    nothing before the end and, after it, waits for the scan's worker (:class:`_ScanJoin`) and gives the no-cache
    result; ``close`` ends the worker's wait (an error, a stop)."""

    threaded = True

    def __init__(self, scan2: _ScanJoin) -> None:
        self._scan2, self._ended = scan2, False

    def start(self, fn: Callable[..., Any], *args: Any) -> None:
        self._ended = fn is _close_beside
        self._scan2.tail.put(_END if self._ended else args[0])

    def join(self) -> EngineResult | None:
        if not self._ended:
            return None
        self._scan2()
        return self._scan2.no_cache

    def close(self) -> None:
        self._scan2.tail.abort()


def _no_cache_side(no_cache: Any, scan2: _ScanJoin | None) -> Beside | _Queued:
    """Where the no-cache loop runs: where :func:`_beside` places it, and when that is a worker thread and the
    two-tier scan runs threaded, behind the scan on the scan's worker (:class:`_Queued`; no thread of its own).
    Hands the scan's worker its engine (or None)."""
    side, tail = _beside(no_cache), (scan2.tail if scan2 is not None else None)
    queued = tail is not None and no_cache is not None and side.threaded
    if tail is not None:
        tail.put(no_cache if queued else None)
    return _Queued(scan2) if queued else side


def _beside(loop: Any) -> Beside:
    """Where the no-cache loop runs: on a worker thread when its compiled loop releases the GIL
    (:attr:`pcs.engine.stepnative.NativeStepEngine.releases_gil`) and threads are wanted
    (:func:`pcs.beside.threads_wanted`), else inline."""
    return Beside(bool(getattr(loop, "releases_gil", False)) and threads_wanted())


def _close(loop: ReplayEngine, hybrid: Any) -> EngineResult:
    """Close an engine (a compiled hierarchy first hands a hosted Python policy its queued calls: ``sync``); a
    hybrid hierarchy's per-request residency columns join the others."""
    sync = getattr(loop.h, "sync", None)
    if sync is not None:
        sync()
    res = loop.close()
    if hybrid is not None and hasattr(loop.h, "residency"):
        from pcs.engine.hybridsummary import request_columns

        res.columns.update(request_columns(hybrid, loop.h.residency))
    return res


#: the no-cache run's per-request columns the summary reads once its latency parts are made (``ttft_s``: its SLO
#: count, ``pcs.engine.schedstats.scheduler_summary``, and its CDF, ``pcs.engine.series.request_distributions``)
_NO_CACHE_KEPT = ("ttft_s",)


def _close_beside(loop: ReplayEngine) -> EngineResult:
    """The no-cache step loop's :func:`_close`, with the sorts and partitions of its latency summary
    (:func:`pcs.engine.schedstats.latency_parts`) made there too: on its worker, while the run's loop closes. Of its
    per-request columns only :data:`_NO_CACHE_KEPT` are kept (no table prints the no-cache run's rows): the rest --
    some twenty columns of 8 B per request, 19 MB at 10x Mooncake -- go with the loop once the replay returns
    instead of living through the summary."""
    from pcs.engine.schedstats import latency_parts

    res = _close(loop, None)
    return dataclasses.replace(res, columns={k: res.columns[k] for k in _NO_CACHE_KEPT},
                               latency=latency_parts(res.columns))


def _fed_loops(loop_args: tuple, source: Any, rules: BlockRules, time_model: Any,
               progress: Callable[[int], None] | None, decode: bool, passes: SharedPasses | None,
               first: Callable[[], None] | None = None, scan2: _ScanJoin | None = None) -> tuple:
    """The run's event loops (:func:`_event_loops` of ``loop_args``), the no-cache step run popped off them (or
    None) and its :class:`pcs.beside.Beside`, after feeding them every chunk of ``source`` (:func:`_feed`).
    ``decode``: decode seconds are computed (the instant-compute modeled loop only; sequential timing never reads
    them). ``first``: called once the loops are built, just before their first feed (or at once without loops).
    ``scan2``: the two-tier scan, behind which the no-cache loop runs on the scan's worker (:func:`_no_cache_side`)."""
    plans, resolved = loop_args[0], loop_args[6]
    loops = _event_loops(*loop_args, expected_blocks=expected_block_hashes(source))
    if resolved is not None:
        _presize_samplers(source, loops)
    no_cache = loops.pop() if len(loops) > len(plans) else None
    beside = _no_cache_side(no_cache, scan2)
    if any(loops):
        _feed(source, rules, time_model, [e for e in loops if e is not None], progress, decode, passes, no_cache,
              beside, first)
    elif first is not None:
        first()
    return loops, no_cache, beside


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
    """
    tiers0 = make_tiers()
    plans = _place(tiers0, timing, requested, native, hybrid, step)
    source = passes.source if passes is not None else _decoded_once(source, plans, step, timing, native, rules,
                                                                     time_model)
    resolved = _resolve_step(step, timing, source, rules, native, passes)
    seq_side, scan_side = Beside(threads_wanted()), Beside(threads_wanted())   # side work on worker threads
    done = no_cache_result = go = None
    try:
        scan2, go = _open_scan(plans, source, rules, tiers0, write_policy, requested, resolved, scan_side)
        base = _baseline(scan2, plans, source, rules, make_tiers, write_policy, hybrid, block_bytes, step_s, seq_side)
        plans, all_plans = (plans[:1], plans) if base is not None else (plans, plans)
        scans = [_scan(p, source, rules, tiers0, requested) if p.row.kind == "scan" else None for p in plans]
        early, go = _early_singles(scans, scan2, go, (source, rules, native, resolved, passes), plans, scan_side)
        loops, no_cache, beside = _fed_loops(
            (plans, make_tiers, tiers0, write_policy, links, block_bytes, resolved, hybrid, step_s, not comparison),
            source, rules, time_model, progress, resolved is None and timing == "modeled", passes, go, scan2)
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


def _open_scan(plans: list[_Plan], source: Any, rules: BlockRules, tiers0: list, write_policy: str, requested: str,
               resolved: Any, scan_side: Beside) -> tuple[_ScanJoin | None, Callable[[], None] | None]:
    """Start the two-tier scan on ``scan_side`` (:func:`_two_tier_scan`) and return it with its gate (``go``: lets
    its worker begin, :class:`_ScanJoin`), both None when no scan runs; with no event loops to build first, the
    gate is opened at once."""
    scan2 = _two_tier_scan(plans, source, rules, tiers0, write_policy, requested, _scan_decode(resolved), scan_side)
    go = scan2.open if scan2 is not None else None
    if go is not None and plans[0].row.kind != "event-loop":
        go()               # no loops to build: the scan goes now
    return scan2, go


class _SideSingles:
    """:func:`_singles` begun on a worker behind ``gate`` (:func:`_early_singles`); calling it opens the gate (a
    run whose loops were never fed would else wait for ever) and waits for its ``(singles, scan)``."""

    def __init__(self, side: Beside, gate: threading.Event) -> None:
        self._side, self._gate = side, gate

    def __call__(self) -> tuple:
        self._gate.set()
        return self._side.join()


def _early_singles(scans: list, scan2: _ScanJoin | None, go: Callable[[], None] | None, args: tuple,
                   plans: list[_Plan], side: Beside) -> tuple:
    """``(early, go)``: the run's single-sequence results when no two-tier scan gives them (``scan2`` None) and no
    one-tier scan ran (:func:`_singles`' own pass at 0 slots, ``args`` = its source, rules, native, resolved and
    passes) -- made now, or, when the run has event loops to build and feed, no shared passes and ``side`` (the
    idle scan worker) is threaded, begun on ``side`` behind a gate (``go``, opened just before the loops' first
    feed, as the two-tier scan's :meth:`_ScanJoin.open`): the walk, compiled and without the GIL in ``lru_feed``,
    then runs beside the step loop instead of before it on the calling thread; its result is the same (it reads
    the decoded batches and the decode blocks only, as the two-tier scan does: :func:`_two_tier_scan`). ``early``
    None with ``scan2``; ``go`` is ``scan2``'s gate then."""
    if scan2 is not None:
        return None, go
    if args[4] is not None or not side.threaded or any(s is not None for s in scans) or \
            plans[0].row.kind != "event-loop":
        return _singles(scans, None, *args), go
    gate = threading.Event()
    side.opener = gate.set                # a stop before the gate opens: settle opens it
    side.start(_gated, gate, _singles, scans, None, *args)
    return _SideSingles(side, gate), gate.set


def _joined_singles(early: tuple | None, scans: list, scan2: _ScanJoin | None, source: Any, rules: BlockRules,
                    native: str | None, resolved: Any, passes: SharedPasses | None) -> tuple:
    """``(singles, scan, ready)``: the run's single-sequence results and the scan they came from -- ``early``
    when they were made before the loops, else joined from the two-tier scan, whose results were made on its
    worker (:func:`_scan_parts`) -- and its decode-aware pass made beside (``ready``; None for ``early``)."""
    if early is not None:
        early = early() if isinstance(early, _SideSingles) else early
        return early[0], early[1], None
    singles, scan = _singles(scans, scan2(), source, rules, native, resolved, passes, scan2.parts[0])
    return singles, scan, scan2.parts[2]


def _stop_side_work(scan_side: Beside, seq_side: Beside) -> None:
    """After the runs, or when an error stopped them: wait for the two-tier scan (or the singles walk) and the
    sequential baseline still running on their workers -- a call still waiting at its gate is let go first
    (:attr:`pcs.beside.Beside.opener`) -- closing the second even when closing the first raises (a stop signal
    there)."""
    try:
        scan_side.close()
    finally:
        seq_side.close()


def _settle_parts(done: list | None, no_cache_result: EngineResult | None) -> None:
    """Wait for the summary parts of closed runs still being made on workers (:class:`pcs.engine.schedstats.
    PendingParts`), their outcome dropped: a replay that raises leaves no worker thread."""
    results = [d[0] for d in done or ()] + [no_cache_result]
    for res in results:
        settle = getattr(getattr(res, "latency", None), "settle", None)
        if settle is not None:
            settle()


def _engines(run: _Plan, baseline: _Plan) -> dict:
    """The summary's engine keys (:data:`pcs.engine.select.SUMMARY_KEYS`) of the run and its baseline."""
    return dict(zip(select.SUMMARY_KEYS, (run.row.name, run.reason, baseline.row.name, baseline.reason)))


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
