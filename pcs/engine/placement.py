"""Where a replay's run and its sequential baseline run: the plans (:func:`_place` through
:func:`pcs.engine.select.choose`), an ``lru-scan`` that gives way (:func:`_scan`), the step scheduler's resolved
set-up (:func:`_resolve_step`) and the engine names the summary reports (:func:`_engines`).
Split out of :mod:`pcs.engine.runner` (which runs them); no thread here.
"""
from __future__ import annotations

from pcs.errors import shown_repr

from typing import Any, Callable, Sequence

from pcs.blocks import BlockRules
from pcs.engine import fastpath, select
from pcs.engine.decoded import Decoded
from pcs.engine.passes import SharedPasses
from pcs._dataclass import dataclass
from pcs.engine.chunkattn import chunk_terms
from pcs.engine.turns import decode_blocks
from pcs import beside


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

    summed = step.cost.attn_pair_s is not None or chunk_terms(step.cost) is not None    # the C loop sums it
    at = step.config.cache_blocks_at
    return step.config.restore_policy + ("" if at == "prefill-done" else f"+cache-blocks-at={at}") + \
        ("" if summed else "+chunk-attention")


def _place(tiers: Sequence, timing: str, requested: str, native: str | None, hybrid: Any = None,
           step: StepSetup | None = None) -> list[_Plan]:
    """The run, then (modeled timing) the sequential baseline, each chosen through the table."""
    plans = []
    groups = hybrid.groups if hybrid is not None else None
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
            raise fastpath.NotApplicable(f"engine {shown_repr(requested)} cannot run this replay: {exc}; use engine='auto' "
                                         "or 'reference'") from None
        plan.row, plan.reason = select.fall_back(plan.config, plan.row, str(exc), plan.reason)
        return None


def _resolve_step(step: StepSetup | None, timing: str, source: Any, rules: BlockRules,
                  native: str | None = None, passes: SharedPasses | None = None) -> tuple | None:
    """(setup, resolved config, decode blocks or None, rules) for a modeled step-scheduler run, else None;
    ``native``: which next-turn search runs (:func:`pcs.engine.turns.decode_blocks`; made once per ``passes``)."""
    if step is None or timing != "modeled":
        return None

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


def _shared(passes: SharedPasses | None, key: tuple, make: Callable[[], Any]) -> Any:
    """``make()``, or with ``passes`` the value kept under ``key`` (made the first time)."""
    return make() if passes is None else passes.get(key, make)


def _engines(run: _Plan, baseline: _Plan) -> dict:
    """The summary's engine keys (:data:`pcs.engine.select.ENGINE_KEYS`) of the run and its baseline, and
    ``threads``: whether the side work ran on worker threads (:func:`pcs.beside.threads_decision`; called within
    the replay's :func:`pcs.beside.sized` block, it is the decision the run's side calls were given)."""
    return {**dict(zip(select.ENGINE_KEYS, (run.row.name, run.reason, baseline.row.name, baseline.reason))),
            "threads": beside.threads_decision()}
