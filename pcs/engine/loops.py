"""The event loops of a replay, built and closed: the run's engines and the step scheduler's no-cache twin
(:func:`_event_loops`, the compiled step loop or its fallback), their samplers presized, their closes
(:func:`_close`; the no-cache run's :func:`_close_beside` with its latency parts, on a worker when threads run it,
:func:`_close_runs`). Split out of :mod:`pcs.engine.runner`.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

from pcs.cache.policies.context import clocked
from pcs.engine import fastpath, select
from pcs.beside import Beside
from pcs.engine.decoded import Decoded
from pcs.engine.engine import EngineResult, ReplayEngine
from pcs.engine.placement import _Plan
from pcs.engine.summary import cache_state
from pcs.engine.scheduler import StepEngine
from pcs.engine.stepnative import NativeStepEngine, unsupported
from pcs.engine.runparts import latency_parts


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


def _hierarchy(plan: _Plan, tiers: list, write_policy: str, hybrid: Any, block_bytes: Sequence[int], step_s: float,
               expected_blocks: int) -> Any:
    """The hierarchy of event-loop ``plan`` over ``tiers`` (the row's class; the hybrid rows with the plan's groups
    and pools), ``expected_blocks`` its size hint when the row is :class:`pcs.cache.native.NativeHierarchy`."""
    kw = {} if plan.row.name not in select.HYBRID_ROWS else _hybrid_kwargs(hybrid, block_bytes, step_s)
    if plan.row.implementation == "pcs.cache.native.NativeHierarchy":
        kw["expected_blocks"] = expected_blocks
    return clocked(plan.row.load()(tiers, write_policy, **kw))   # trace-reading policies follow admissions


class HierarchyAhead:
    """The run's first hierarchy built on the calling thread while the next-turn walk finishes the trace's last
    batch (:class:`pcs.engine.decoded.Decoded`'s ``meanwhile``, once every batch is read and the block hashes are
    counted), instead of after the decode on the step loop's critical path (docs/performance.md, "The 1x call's
    critical path, second pass"): the same hierarchy with the same size hint, built in a wait. Only a
    :class:`pcs.cache.native.NativeHierarchy` of the first plan (no hybrid plan), over ``tiers0`` (the tiers
    :func:`_event_loops` gives it: no ``make_tiers`` call moves). A build that raises is dropped and made again where
    it was (its error in its place, after the next-turn walk's and the trace's own errors)."""

    def __init__(self, plan: _Plan, tiers0: list, write_policy: str) -> None:
        self._args, self.built = (plan, tiers0, write_policy), None

    @classmethod
    def of(cls, plans: list[_Plan], tiers0: list, write_policy: str, hybrid: Any) -> "HierarchyAhead | None":
        """One for the run when its first plan is an event loop on the compiled hierarchy (no hybrid plan),
        else None."""
        row = plans[0].row
        if (hybrid is not None or row.kind != "event-loop" or row.name in select.HYBRID_ROWS
                or row.implementation != "pcs.cache.native.NativeHierarchy"):
            return None
        return cls(plans[0], tiers0, write_policy)

    def build(self, hashes: int) -> None:
        """Build the hierarchy (once) for a trace of ``hashes`` block hashes (its size hint, as
        :func:`pcs.trace.parquet.expected_block_hashes` gives it after the decode)."""
        if self._args is None:
            return
        (plan, tiers0, write_policy), self._args = self._args, None
        try:
            self.built = _hierarchy(plan, tiers0, write_policy, None, (), 60.0, hashes)
        except Exception:       # built again after the decode, where its error belongs
            self.built = None

    def take(self, plan: _Plan) -> Any:
        """The hierarchy built ahead for ``plan`` (once), or None (not built, or the plan's row moved since)."""
        built, self.built, self._args = self.built, None, None
        return built if built is not None and plan.row.implementation == "pcs.cache.native.NativeHierarchy" else None


def _event_loops(plans: list[_Plan], make_tiers: Callable[[], list], tiers0: list, write_policy: str,
                 links: Sequence, block_bytes: Sequence[int], step: Any = None, hybrid: Any = None,
                 step_s: float = 60.0, no_cache: bool = True, expected_blocks: int = 0,
                 ahead: HierarchyAhead | None = None) -> list:
    """A ReplayEngine per event-loop plan (None for a scanned one); the first hierarchy takes ``tiers0``.
    ``expected_blocks``: the trace's block hashes when known (0: not known), a compiled hierarchy's size hint
    (:class:`pcs.cache.native.NativeHierarchy`: its shared table's slots sized once; no number depends on it).
    ``ahead``: the first plan's hierarchy built during the decode (:class:`HierarchyAhead`), or None.

    With ``step`` (a ``(StepSetup, resolved config, decode blocks, rules)`` tuple) the modeled run is a
    :class:`pcs.engine.scheduler.StepEngine` and (``no_cache``) a no-cache StepEngine (the GPU tier alone) is appended.
    The ``hybrid`` row gets the plan's groups and pools (:class:`pcs.engine.hybrid.HybridPlan`) and, with
    ``step``, :class:`pcs.engine.hybridstep.HybridStepEngine`; its no-cache StepEngine runs the GPU level's pools.
    """
    loop_cls = NativeStepEngine if plans[0].row.name == "compiled-step" else StepEngine
    out: list = []
    for plan in plans:
        if plan.row.kind != "event-loop":
            out.append(None)
            continue
        built = ahead.take(plan) if ahead is not None and plan is plans[0] else None
        hierarchy = built if built is not None else _hierarchy(
            plan, tiers0 if not any(out) else make_tiers(), write_policy, hybrid, block_bytes, step_s, expected_blocks)
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
        if hasattr(out[-1], "stop_with"):           # a stop of the run's loop stops its twin beside it, no other
            out[-1].stop_with(out[0])
    return out


def _native_step_or_fallback(plan: _Plan, hierarchy: Any, links: Sequence, cost: Any, cfg: Any) -> type:
    """:class:`pcs.engine.stepnative.NativeStepEngine`, or -- when it finds what the table could not see (a link
    that is not a LinkSpec, more tiers than it takes) -- the Python StepEngine, the plan moved to the next row."""
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


def _presize_samplers(source: Any, loops: list) -> None:
    """Start each step scheduler's time-series sampler at the step the trace's arrival span needs (the same
    samples, fewer calls: :meth:`pcs.engine.series.Sampler.presize`; its first sample is at the first
    arrival and its last at or after the last). One pass over the decoded arrivals; none for other sources."""
    if not isinstance(source, Decoded):
        return
    arrivals = [b.arrival_s for b in source.batches if len(b.arrival_s)]
    if not arrivals:
        return
    first, last = float(arrivals[0][0]), max(float(a.max()) for a in arrivals)
    for e in loops:
        if isinstance(e, StepEngine) and e.sampler.t0 is None and not e.no_cache:
            e.sampler.presize(first, last)


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
    (:func:`pcs.engine.runparts.latency_parts`) made there too: on its worker, while the run's loop closes. Of its
    per-request columns only :data:`_NO_CACHE_KEPT` are kept (no table prints the no-cache run's rows): the rest --
    some twenty columns of 8 B per request, 19 MB at 10x Mooncake -- go with the loop once the replay returns
    instead of living through the summary."""
    res = _close(loop, None)
    return dataclasses.replace(res, columns={k: res.columns[k] for k in _NO_CACHE_KEPT},
                               latency=latency_parts(res.columns))


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


def _settle_parts(done: list | None, no_cache_result: EngineResult | None) -> None:
    """Wait for the summary parts of closed runs still being made on workers (:class:`pcs.engine.schedstats.
    PendingParts`), their outcome dropped: a replay that raises leaves no worker thread."""
    results = [d[0] for d in done or ()] + [no_cache_result]
    for res in results:
        settle = getattr(getattr(res, "latency", None), "settle", None)
        if settle is not None:
            settle()
