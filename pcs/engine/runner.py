"""Run a replay and its sequential baseline on the engines :mod:`pcs.engine.select` chooses.

One call of :func:`run_replay` produces everything the summary needs: the
run (its ledger, per-request columns and end state), the ledger of the
sequential replay with the same tiers (the gap split's baseline,
``docs/semantics.md §12``) and the single-sequence and ideal results. Each
of the run and the baseline is placed by :func:`pcs.engine.select.choose`;
an ``lru-scan`` that finds the ids are not chained gives way to
:func:`pcs.engine.select.fall_back` (``auto`` only) and the reason records it.
Event-loop engines share one read of the trace.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from pcs.blocks import BlockRules, SingleSequenceResult
from pcs.engine import fastpath, select
from pcs.engine.chunks import iter_chunks
from pcs.engine.engine import EngineResult, ReplayEngine
from pcs.engine.summary import CacheState, cache_state

__all__ = ["Outcome", "run_replay"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What :func:`run_replay` produced.

    Attributes:
        result: the run's ledger and per-request columns.
        state: the run's tiers at the end.
        baseline: the sequential baseline's result (the run itself in sequential timing).
        single, ideal: single-sequence results under the run's rules and the ideal rules.
        engine, engine_reason: the run's engine (a :data:`pcs.engine.select.ENGINES` name) and why.
        baseline_engine, baseline_engine_reason: the same for the baseline.
    """

    result: EngineResult
    state: CacheState
    baseline: EngineResult
    single: SingleSequenceResult
    ideal: SingleSequenceResult
    engine: str
    engine_reason: str
    baseline_engine: str
    baseline_engine_reason: str


@dataclass(slots=True)
class _Plan:
    """One placed replay (the run or the baseline): its timing, config, row and reason."""

    timing: str
    config: select.RunConfig
    row: select.EngineRow
    reason: str


def _place(tiers: Sequence, timing: str, requested: str, native: str | None, hybrid: Any = None) -> list[_Plan]:
    """The run, then (modeled timing) the sequential baseline, each chosen through the table."""
    plans = []
    groups = [g.name for g in hybrid.groups] if hybrid is not None else None
    for t in (timing, "sequential") if timing == "modeled" else (timing,):
        cfg = select.RunConfig.of(tiers, t, native, groups)
        row, reason = select.choose(cfg, requested)
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
                 links: Sequence, block_bytes: Sequence[int], hybrid: Any = None,
                 step_s: float = 60.0) -> list[ReplayEngine | None]:
    """A ReplayEngine per event-loop plan (None for a scanned one); the first hierarchy takes ``tiers0``;
    the ``hybrid`` row gets the plan's groups and pools (:class:`pcs.engine.hybrid.HybridPlan`)."""
    out: list[ReplayEngine | None] = []
    for plan in plans:
        if plan.row.kind != "event-loop":
            out.append(None)
            continue
        tiers = tiers0 if not any(out) else make_tiers()
        kw = {} if plan.row.name != "hybrid" else _hybrid_kwargs(hybrid, block_bytes, step_s)
        hierarchy = plan.row.load()(tiers, write_policy, **kw)
        out.append(ReplayEngine(hierarchy, plan.timing, links=links, block_bytes=block_bytes))
    return out


def _hybrid_kwargs(hybrid: Any, block_bytes: Sequence[int], step_s: float) -> dict:
    """The hybrid hierarchy's groups and pools: the plan's, or one full-attention group (a model that is
    not hybrid, run on the ``hybrid`` row by request: the same replay as the reference)."""
    if hybrid is not None:
        return dict(groups=hybrid.groups, pools=hybrid.pools, page_bytes=hybrid.page_bytes, step_s=step_s)
    from pcs.cache.groups import CacheGroup

    return dict(groups=(CacheGroup("full_attention", "full", ("full_attention",), 1),), pools=1,
                page_bytes=[[b] for b in block_bytes], step_s=step_s)


def _feed(source: Any, rules: BlockRules, time_model: Any, engines: list[ReplayEngine],
          progress: Callable[[int], None] | None) -> None:
    """Feed every chunk of ``source`` to every engine once (one read of the trace)."""
    for ch in iter_chunks(source, rules, time_model):
        for e in engines:
            e.feed(ch)
        if progress is not None:
            progress(len(ch))


def _close(loop: ReplayEngine, hybrid: Any) -> EngineResult:
    """Close an engine; a hybrid hierarchy's per-request residency columns join the others."""
    res = loop.close()
    if hybrid is not None and hasattr(loop.h, "residency"):
        from pcs.engine.hybridsummary import request_columns

        res.columns.update(request_columns(hybrid, loop.h.residency))
    return res


def run_replay(source: Any, rules: BlockRules, time_model: Any, make_tiers: Callable[[], list], timing: str,
               write_policy: str, links: Sequence, block_bytes: Sequence[int], requested: str = "auto",
               native: str | None = None, progress: Callable[[int], None] | None = None, hybrid: Any = None,
               step_s: float = 60.0) -> Outcome:
    """Choose, run and collect the run and its sequential baseline.

    Args:
        source: a re-iterable request source (:func:`pcs.trace.batches.as_batches` reads it).
        rules: block rules; time_model: :class:`pcs.engine.timing.TimeModel`.
        make_tiers: returns a fresh list of empty :class:`pcs.cache.Tier` (one per engine that needs one).
        timing: ``sequential`` or ``modeled``; write_policy: ``back`` or ``through``.
        links, block_bytes: per tier, as :class:`pcs.engine.engine.ReplayEngine` takes them.
        requested: ``engine=`` of :func:`pcs.replay` (:data:`pcs.engine.select.REQUESTS`).
        native: ``auto``, ``c``, ``python`` or None (:mod:`pcs._native`).
        progress: called with the number of requests done, for the run only.
        hybrid: a :class:`pcs.engine.hybrid.HybridPlan` (``make_tiers`` then returns its pools,
            level-major), or None; step_s: its residency series' step, simulated seconds.
    Raises:
        ValueError: as :func:`pcs.engine.select.choose`; bad trace content;
            ``lru-scan`` requested on ids that are not chained.
    """
    tiers0 = make_tiers()
    plans = _place(tiers0, timing, requested, native, hybrid)
    scans = [_scan(p, source, rules, tiers0, requested) if p.row.kind == "scan" else None for p in plans]
    singles = next((fastpath.single_results(s) for s in scans if s is not None), None)
    if singles is None:   # one more read of the trace, before the engines grow (16 B per distinct id)
        singles = fastpath.single_results(fastpath.scan(source, 0, rules, native, check=False))
    loops = _event_loops(plans, make_tiers, tiers0, write_policy, links, block_bytes, hybrid, step_s)
    if any(loops):
        _feed(source, rules, time_model, [e for e in loops if e is not None], progress)
    done = [(_close(loop, hybrid), cache_state(loop.h)) if loop is not None else
            fastpath.run(sc, tiers0[0].name, write_policy, time_model.compute, progress if k == 0 else None)
            for k, (sc, loop) in enumerate(zip(scans, loops))]
    (result, state), baseline = done[0], done[-1][0]
    return Outcome(result, state, baseline, singles[0], singles[1], plans[0].row.name, plans[0].reason,
                   plans[-1].row.name, plans[-1].reason)
