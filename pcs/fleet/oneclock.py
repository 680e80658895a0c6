"""A fleet with a shared lower tier: the instances' engines on one clock (docs/semantics.md §17.1).

Routing is unchanged (:func:`pcs.fleet.route.route` assigns every request
first). Then every instance gets its own event loop
(:class:`pcs.engine.engine.ReplayEngine`, the reference hierarchy) over its
own tiers plus the one shared :class:`pcs.cache.tier.Tier` as its lowest
tier (:class:`pcs.cache.shared.SharedTierHierarchy`), and the requests are
fed in trace order, each to its instance, after every instance has processed
its events up to the request's arrival, in time order across instances (a
heap of each engine's next event). So a block instance A writes into the
shared tier at t is there for instance B's admissions after t, and never
before.

Covered here: ``--timing sequential`` and modeled timing with ``--compute
infinite``. The step scheduler (the default ``--compute step``) runs on one
clock in :mod:`pcs.fleet.stepclock`, each step loop split at its step
boundaries. Refused: hybrid models, trace-reading policies (belady, gdsf)
and admission policies on the shared tier.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from pcs.cache.shared import SharedTierHierarchy
from pcs.engine.chunks import Chunk, iter_chunks
from pcs.errors import UserError

__all__ = ["SharedRun", "Admissions", "run_one_clock", "shared_setup"]

_INF = float("inf")


@dataclass(frozen=True, slots=True)
class SharedRun:
    """What :func:`run_one_clock` produced.

    Attributes:
        results: per instance, its :class:`pcs.engine.engine.EngineResult` (None for an idle instance).
        hierarchies: per instance, its :class:`pcs.cache.shared.SharedTierHierarchy`.
        shared: the shared :class:`pcs.cache.tier.Tier` (its end state and stats).
        setup: the :func:`shared_setup` dict (tier specs, bytes per block, links, options).
        busy_s: per instance its busy seconds under the step scheduler (None when idle), or None
            (no step scheduler: :mod:`pcs.fleet.stepclock` fills it).
        admitted: int64 (requests,): the trace positions in the order the one clock admitted them for the
            first time (:class:`Admissions`).
    """

    results: list
    hierarchies: list
    shared: Any
    setup: dict
    busy_s: list | None = None
    admitted: Any = None


class Admissions:
    """The fleet's first admissions in the order its one clock ran them (docs/semantics.md §17.1): each
    instance admits its requests for the first time in sub-trace order (FIFO; a preempted request goes back
    to the head of the queue), so after an event of instance i the requests it newly admitted are the next
    ones of its sub-trace; their number is the engine's count of requests admitted at least once (the first
    item of its time-series snapshot, ``_snapshot``: :class:`pcs.engine.engine.ReplayEngine`,
    :class:`pcs.engine.scheduler.StepEngine` and the compiled step loop keep it)."""

    def __init__(self, assignment: np.ndarray, instances: int) -> None:
        self.rows = [np.flatnonzero(assignment == i).tolist() for i in range(instances)]
        self.done = [0] * instances
        self.order: list = []

    def note(self, i: int, engine: Any) -> None:
        """Instance i's engine ran an event (or took a request): append the requests it admitted first since."""
        n, d = engine._snapshot()[0], self.done[i]
        if n > d:
            self.order.extend(self.rows[i][d:n])
            self.done[i] = n

    def result(self) -> np.ndarray:
        """int64 (requests,): trace positions in first-admission order (every request was admitted)."""
        out = np.asarray(self.order, dtype=np.int64)
        assert len(out) == sum(len(r) for r in self.rows), "a request was never admitted"
        return out


def shared_setup(source: Any, kw: dict, shared_spec: Any, compute: Any = None) -> dict:
    """The tiers, bytes per block and links of every instance, the shared tier last, and the step scheduler's
    setup (``step``: a :class:`pcs.engine.runner.StepSetup`, None without the step scheduler), as
    :func:`pcs.replay` builds them (``kw``: its keyword arguments; ``shared_spec``: a
    :class:`pcs.engine.api.TierSpec`; ``compute``: the fleet's compute model).

    Raises:
        UserError: as :func:`pcs.replay`'s tier checks (a shared tier named like a private one, ...);
            a policy that reads the trace; a hybrid model.
    """
    from pcs.cache.policies import needs_context
    from pcs.engine import api

    opts = api._options(kw.get("timing"), kw.get("policy"), kw.get("write_policy"), kw.get("tp"), "auto", None)
    tiers = list(kw.get("tiers") or api.DEFAULT_TIERS) + [shared_spec]
    specs = api._tier_specs(tiers, kw.get("tier_policies"), kw.get("links"))
    spec, gpu = api._model_and_gpu(kw.get("model"), kw.get("dtype"), kw.get("hardware"), kw.get("hardware_table"),
                                   opts.tp)
    bs = api._block_size(source)
    specs, bb, bpb, links, _ = api._tier_bytes_and_links(
        spec, gpu, bs, specs, kw.get("links"), opts.tp, kw.get("hardware_table"), kw.get("gpu_memory_utilization"),
        kw.get("kv_reserve"))
    policies = dict(kw.get("tier_policies") or {})
    names = api._policy_names(specs, opts.policy, policies)
    reading = [f"{s.name}: {n}" for s, n in zip(specs, names) if needs_context(n)]
    if reading:    # per tier, as --policy / --tier-policy gave them (the shared tier takes --policy)
        raise UserError("shared_tier= runs policies that do not read the trace (lru, slru, fifo, ...); "
                         f"got {', '.join(reading)} (policy= sets every tier, the shared one too)")
    if api._hybrid_plan(spec, bs, specs, bb, None, None, None, None)[0] is not None:
        raise UserError("shared_tier= does not run a hybrid model's cache groups yet")
    step = _step(kw, opts.timing, compute, gpu, specs[0], bpb[0])
    return dict(specs=specs, bpb=bpb, links=links, policy=opts.policy, policies=policies,
                write_policy=opts.write_policy, timing=opts.timing, protected=kw.get("protected_share"),
                policy_names=names, step=step, native=kw.get("native"),
                engine=_engine(kw, specs, names, opts.timing, step is not None))


def _engine(kw: dict, specs: Any, names: Sequence[str], timing: str, stepped: bool) -> tuple[str, str]:
    """(engine, reason) of the instances, chosen by the engine-selection table (:func:`pcs.engine.select.choose`,
    ``shared``: only ``reference`` runs them); the reason says where the step loop runs.

    Raises:
        UserError: an engine other than reference requested, or native ``c`` (the hierarchies are Python).
    """
    from pcs.engine import select

    cfg = select.RunConfig(timing, tuple((s.name, n, 0) for s, n in zip(specs, names)), kw.get("native"),
                           scheduler="layerwise" if stepped else None, shared=True)
    try:
        row, reason = select.choose(cfg, kw.get("engine") or "auto")
    except ValueError as exc:
        raise UserError(f"shared_tier=: {exc}") from None
    if stepped:
        from pcs import _native

        compiled = _native.resolve(_native.default_mode() if cfg.native is None else cfg.native, "stepsched") == "c"
        reason += ("; step loop: compiled (pcs/engine/stepclocked.py) where its links and options apply, else "
                   "Python" if compiled else "; step loop: Python (native python, or the compiled loop not built)")
    return row.name, reason


def _step(kw: dict, timing: str, compute: Any, gpu: Any, gpu_spec: Any, gpu_block_bytes: int) -> Any:
    """The step scheduler's :class:`pcs.engine.runner.StepSetup` when the run uses it (as :func:`pcs.replay`
    decides: modeled timing, ``compute_mode`` step or unset with a compute model that has ``step_cost()``),
    else None.

    Raises:
        UserError: as :func:`pcs.replay` (a GPU tier of 0 blocks, a ``scheduler`` of the wrong type, ...).
    """
    from pcs.engine import api
    from pcs.engine.timing import TimeModel

    if compute is None:
        return None
    opts = api._options(timing, kw.get("policy"), kw.get("write_policy"), kw.get("tp"), "auto", None,
                        kw.get("compute_mode"))
    time_model = TimeModel(compute)
    opts = api._compute_mode(opts, time_model, [])
    step = api._step_setup(opts, kw.get("scheduler"), time_model, gpu)
    if step is not None:
        api._refuse_empty_gpu(gpu_spec, gpu_block_bytes)
    return step


def _build(setup: dict, instances: int) -> tuple[list, Any]:
    """Per instance a SharedTierHierarchy over fresh private tiers and the one shared tier."""
    from pcs.engine import api

    specs, bpb = setup["specs"], setup["bpb"]

    def tiers(s, b):
        return api._build_tiers(s, b, setup["policy"], setup["policies"], setup["protected"])

    shared = tiers(specs[-1:], bpb[-1:])[0]
    return [SharedTierHierarchy(tiers(specs[:-1], bpb[:-1]) + [shared], setup["write_policy"])
            for _ in range(instances)], shared


def _row(ch: Chunk, r: int) -> Chunk:
    """Row ``r`` of a chunk as a chunk of one request (offsets stay absolute into the shared lists)."""
    return Chunk(ch.first_request_id + r, ch.block_size, ch.arrival_s[r:r + 1], ch.prompt_tokens[r:r + 1],
                 ch.output_tokens[r:r + 1], ch.cacheable[r:r + 1], ch.max_hit_blocks[r:r + 1],
                 ch.extra_blocks[r:r + 1], ch.offsets[r:r + 2], ch.block_hashes, ch.prefill_s,
                 ch.prefill_offsets[r:r + 2], ch.decode_s[r:r + 1] if ch.decode_s else ch.decode_s)


def _advance_all(engines: Sequence, heap: list, t: float, seen: Admissions) -> None:
    """Every engine's events at or before ``t``, in time order across engines (ties: lower instance first);
    ``seen`` notes the first admissions they make.

    ``heap`` holds (next event time, instance) for every engine with events; an entry whose time is no
    longer its engine's next event is stale and skipped (a fresh one was pushed when it changed).
    """
    while heap and heap[0][0] <= t:
        w, i = heapq.heappop(heap)
        e = engines[i]
        if e.next_event_s() != w:
            continue
        e.advance(w)
        seen.note(i, e)
        nxt = e.next_event_s()
        if nxt < _INF:
            heapq.heappush(heap, (nxt, i))


def run_one_clock(source: Any, rules: Any, time_model: Any, assignment: np.ndarray, instances: int, setup: dict,
                  progress: Callable[[int], None] | None = None) -> SharedRun:
    """Replay ``source`` (trace order) with request k on instance ``assignment[k]``, every instance's
    lowest tier the shared one, all on one clock (module docstring).

    Args:
        source: the whole trace (re-iterable); rules: block rules; time_model: :class:`pcs.engine.timing.TimeModel`.
        assignment: int64, shape (requests,): the instance of each request (trace order), in [0, instances).
        setup: :func:`shared_setup`'s dict; progress: called with requests done, every 4,096.
    """
    from pcs.engine.engine import ReplayEngine

    hierarchies, shared = _build(setup, instances)
    engines = [ReplayEngine(h, setup["timing"], links=setup["links"], block_bytes=setup["bpb"]) for h in hierarchies]
    modeled = setup["timing"] == "modeled"
    assign = assignment.tolist()
    used = [False] * len(engines)
    heap: list = []
    done, seen = 0, Admissions(assignment, instances)
    for ch in iter_chunks(source, rules, time_model, modeled):
        for r, a in enumerate(ch.arrival_s):
            i = assign[ch.first_request_id + r]
            e = engines[i]
            if modeled:
                _advance_all(engines, heap, a, seen)
            e.feed(_row(ch, r))
            seen.note(i, e)
            used[i] = True
            if modeled and e.next_event_s() < _INF:
                heapq.heappush(heap, (e.next_event_s(), i))
            done += 1
            if progress is not None and done % 4096 == 0:
                progress(4096)
    if modeled:
        _advance_all(engines, heap, _INF, seen)
    if progress is not None and done % 4096:
        progress(done % 4096)
    results = [e.close() if u else None for e, u in zip(engines, used)]
    return SharedRun(results, hierarchies, shared, setup, None, seen.result())
