"""The instances of a fleet with a shared tier: run them on one clock, then per-instance rows and the tier's summary.

The mechanism is :mod:`pcs.fleet.oneclock`; this module turns its engines'
ledgers into the fleet's rows (:class:`pcs.fleet.summary.InstanceLoad`, one
requests table per instance) and the :class:`pcs.fleet.summary.SharedTierSummary`
(docs/semantics.md §17.1). Per-instance replay summaries are not built: an
instance's sequential baseline and gap split (§12) assume tiers it owns.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from pcs.errors import UserError, quoted
from pcs.fleet.summary import InstanceLoad, InstanceTierHits, SharedTierSummary

__all__ = ["parse_shared_tier", "shared_instances", "shared_summary"]


def parse_shared_tier(text: Any):
    """``"remote=10TB"`` or ``"remote=20000blocks"`` (or a TierSpec) -> :class:`pcs.engine.api.TierSpec`.

    Raises:
        UserError: malformed (as ``--tier``), or no size (``auto`` is for the GPU tier only).
    """
    from pcs.argcheck import check_text
    from pcs.engine.api import TierSpec, parse_tier
    from pcs.engine.tiercheck import run_on_entries

    check_text(text, "shared_tier", "a 'NAME=SIZE' string (or a TierSpec)", others=(TierSpec,))
    if isinstance(text, str) and run_on_entries(text):
        raise UserError(f"shared_tier={quoted(text, show=repr)}: the shared tier is one NAME=SIZE (one lower tier all "
                        "instances read and write)")
    try:
        spec = parse_tier(text)
    except ValueError as exc:
        raise UserError(f"shared_tier={quoted(str(text), show=repr)}: {exc}") from None
    if spec.capacity_bytes is None and spec.capacity_blocks is None:
        raise UserError(f"shared_tier={quoted(str(text), show=repr)}: give the shared tier a size, e.g. shared_tier='{spec.name}=10TB' "
                         f"or shared_tier='{spec.name}=20000blocks'")
    return spec


def _load(i: int, ceiling: Any, res: Any, held: int, busy_s: float | None = None
          ) -> tuple[InstanceLoad, Any]:
    """One instance's row and requests table from its sub-trace's ceiling, engine result (None: idle) and busy
    seconds (the step scheduler's; None without it)."""
    from pcs.engine.summary import requests_table
    from pcs.fleet.fleet import _pct

    if res is None:
        return InstanceLoad(i, 0, 0, 0, None, 0, None, None, None, None, held), None
    L = res.ledger
    table = requests_table(res.columns)
    ttft = table.column("ttft_s").to_numpy(zero_copy_only=False).astype(np.float64)
    p = L.prompt_tokens   # 0: the ratios are 0/0, null
    return InstanceLoad(i, L.num_requests, p, L.hit_tokens, L.hit_ratio if p else None, ceiling.hit_tokens,
                        ceiling.hit_ratio if p else None, busy_s, _pct(ttft, 50), _pct(ttft, 99), held), table


def shared_instances(source: Any, batch: Any, assignment: np.ndarray, instances: int, rules: Any, compute: Any,
                     setup: dict, index: Any, progress: Callable[[int], None] | None = None
                     ) -> tuple[list, list, list, Any, list | None]:
    """Run the fleet's instances on one clock (:func:`pcs.fleet.oneclock.run_one_clock`; under the step
    scheduler :func:`pcs.fleet.stepclock.run_step_clock`).

    Returns:
        (InstanceLoad per instance, requests table per instance or None, trace rows per instance
        (int64 arrays), the :class:`pcs.fleet.oneclock.SharedRun`, per instance the decode blocks its step
        scheduler cached or None -- the list is None without the step scheduler).
    """
    from pcs.engine.timing import TimeModel
    from pcs.fleet.fleet import instance_ceilings, split_batch
    from pcs.fleet.oneclock import run_one_clock

    parts = split_batch(batch, assignment, instances)
    rows_of = [rows for rows, _ in parts]
    decodes = None
    if setup.get("step") is not None:
        run, decodes = _step_run(source, batch, rules, compute, assignment, instances, setup, parts, progress)
    else:
        run = run_one_clock(source, rules, TimeModel(compute), assignment, instances, setup, progress)
    ceilings = instance_ceilings(batch, assignment, instances, rules, parts, decodes)  # decode-aware: §17
    loads, tables = [], []
    busy = run.busy_s or [None] * instances
    for i in range(instances):
        load, table = _load(i, ceilings[i], run.results[i], index.held_blocks(i), busy[i])
        loads.append(load)
        tables.append(table)
    return loads, tables, rows_of, run, decodes


def _step_run(source: Any, batch: Any, rules: Any, compute: Any, assignment: np.ndarray, instances: int,
              setup: dict, parts: list, progress: Callable[[int], None] | None) -> tuple[Any, list]:
    """:func:`pcs.fleet.stepclock.run_step_clock` with each instance's sub-trace (the whole trace for one);
    ``parts``: :func:`pcs.fleet.fleet.split_batch` of the assignment. Returns (the run, per instance the
    decode blocks its step scheduler cached or None)."""
    from pcs.engine.timing import TimeModel
    from pcs.fleet.fleet import _SubTrace
    from pcs.fleet.stepclock import run_step_clock, step_parts

    subs = [None if b is None else source if instances == 1 else _SubTrace(f"[instance {i}]", b)
            for i, (_, b) in enumerate(parts)]
    steps = step_parts(setup["step"], subs, rules)
    run = run_step_clock(source, rules, TimeModel(compute), batch.arrival_s, assignment, instances, setup,
                         setup["step"], subs, progress, steps)
    return run, [p[2] if p is not None and p[1].cache_decode_blocks else None for p in steps]


def shared_summary(run: Any, loads: list, prompt_tokens: int) -> SharedTierSummary:
    """The shared tier's :class:`SharedTierSummary` from a :class:`pcs.fleet.oneclock.SharedRun`; its ``threads``
    is :func:`pcs.beside.threads_decision` here, in the context the run's side calls were given (called right
    after :func:`shared_instances`, as a replay's is within its run)."""
    from pcs.beside import threads_decision
    from pcs.engine.result import ThreadsSummary

    setup, shared = run.setup, run.shared
    names = tuple(s.name for s in setup["specs"])
    bpb = setup["bpb"][-1]
    per = []
    for i, (res, h) in enumerate(zip(run.results, run.hierarchies)):
        L = res.ledger if res is not None else None
        hits = tuple(L.tier_hit_tokens) if L is not None else (0,) * len(names)
        read = L.links[-1].restored_bytes if L is not None else 0
        per.append(InstanceTierHits(i, names, hits, read, h.written_blocks[-1]))
    hit = sum(p.hit_tokens[-1] for p in per)
    read_blocks = sum(r.ledger.links[-1].restored_blocks for r in run.results if r is not None)
    written = sum(p.shared_written_blocks for p in per)
    link = setup["links"][-1]
    routing = sum(x.ceiling_hit_tokens for x in loads)
    return SharedTierSummary(
        name=shared.name, capacity_blocks=shared.capacity_blocks, capacity_bytes=shared.capacity_blocks * bpb,
        bytes_per_block=bpb, policy=setup["policy_names"][-1], write_policy=setup["write_policy"],
        link=link.name if link is not None else "-", hit_tokens=hit,
        hit_ratio=hit / prompt_tokens if prompt_tokens else None, read_blocks=read_blocks, read_bytes=read_blocks * bpb,
        written_blocks=written, written_bytes=written * bpb, evicted_blocks=shared.stats.evicted_blocks,
        peak_resident_blocks=shared.stats.peak_resident_blocks,
        peak_resident_bytes=shared.stats.peak_resident_blocks * bpb, lease_spared_blocks=shared.lease_spared_blocks,
        routing_captured_hit_ratio=routing / prompt_tokens if prompt_tokens else None, per_instance=tuple(per),
        engine=setup["engine"][0], engine_reason=setup["engine"][1], threads=ThreadsSummary(**threads_decision()))
