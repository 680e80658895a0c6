"""``fleet_replay``: N instances behind a router -- route the trace, replay each instance's share, summarise.

Mechanism (docs/semantics.md §17):

1. every instance is one :func:`pcs.replay` deployment (its own GPU and
   lower tiers, links and step scheduler, from the same options);
2. the routing pass (:func:`pcs.fleet.route.route`) sends each request, in
   arrival order, to one instance from the router's view: a cache index of
   ``index_capacity_blocks`` ids per instance (the instance's tiers' blocks
   together) and the requests in flight, each for its estimated service time
   (:func:`service_times`);
3. each instance replays its sub-trace (arrival times kept) with
   :func:`pcs.replay`; with one instance that is the trace itself, so the
   result is exactly the single-instance replay's;
4. the fleet summary adds the instances up (:mod:`pcs.fleet.summary`).

The router sees its own model of the caches, not the replayed tiers (the
instances are replayed after routing); that is what an approximate router
(SGLang's, llm-d's approximate scorer, Dynamo without KV events) sees too.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from pcs._heldimport import held_import
from pcs.blocks import BlockRules, SingleSequenceResult
from pcs.choices import MAX_INSTANCES  # most instances of a fleet
from pcs.engine.computecheck import checked_compute
from pcs.engine.schedresult import SATURATION_NOTE_START
from pcs.errors import UserError, keyword_refusal, keyword_refusals
from pcs.fleet.decodes import fleet_decode
from pcs.fleet.index import CacheIndex
from pcs.fleet.route import route
from pcs.fleet.routers import parse_router, stale_view_applies
from pcs.fleet.summary import FleetGap, FleetSummary, InstanceLoad
from pcs.trace.batches import as_batches
from pcs.trace.request import RequestBatch, concat_batches
from pcs import units

__all__ = ["fleet_replay", "FleetResult", "refuse_single_instance_options", "service_times", "subset_batch", "split_batch", "permute_batch",
           "instance_ceilings", "MAX_INSTANCES"]


@dataclass(frozen=True, slots=True)
class FleetResult:
    """The outcome of :func:`fleet_replay`.

    Attributes:
        summary: :class:`pcs.fleet.summary.FleetSummary`: ``to_dict()`` is the JSON of ``pcs replay --instances
            N --format json``, its ``notes`` ending with the trace's caveats (synthetic prefix reuse, bad lines
            skipped: :func:`pcs.trace.api.trace_notes`, in the API's words), less the keys the command adds
            (docs/json.md: ``trace_file``, ``replay_command``, ``skipped``, ``skipped_lines``; here
            ``Trace.skipped`` and ``Trace.skipped_lines``).
        assignment: int64 array, shape (requests,): the instance of each request in trace order.
        requests: pyarrow Table, one row per request in trace order: the replay's
            columns (:data:`pcs.engine.summary.REQUEST_COLUMNS`, ``request_id`` = trace position) and ``instance``.
    """

    summary: FleetSummary
    assignment: np.ndarray
    requests: Any


class _SubTrace:
    """One instance's share of a trace: a single in-memory batch, named after the trace."""

    def __init__(self, name: str, batch: RequestBatch) -> None:
        self.name = name
        self.block_size = batch.block_size
        self._batch = batch

    def iter_batches(self):
        yield self._batch


def subset_batch(batch: RequestBatch, rows: np.ndarray, block_mask: np.ndarray | None = None) -> RequestBatch:
    """The rows ``rows`` (int64, sorted, shape (m,)) of ``batch`` as a batch renumbered from 0.

    ``block_mask``: bool (blocks,), the blocks of those rows when the caller has it (:func:`split_batch`
    computes every instance's from one per-block owner column); None = computed here."""
    counts = np.diff(batch.block_offsets)
    if block_mask is None:
        keep = np.zeros(len(batch), dtype=bool)
        keep[rows] = True
        block_mask = keep[np.repeat(np.arange(len(batch)), counts)]
    offs = np.zeros(rows.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts[rows], out=offs[1:])
    return _rows_batch(batch, rows, offs, batch.block_hashes[block_mask])


def _rows_batch(batch: RequestBatch, rows: np.ndarray, offsets: np.ndarray, hashes: np.ndarray) -> RequestBatch:
    """Rows ``rows`` (int64) of ``batch``'s request columns, in that order, over the ids ``hashes`` at
    ``offsets`` (int64 (len(rows) + 1,), from 0), as a batch numbered from 0."""
    def col(c):
        return None if c is None else c[rows]

    def tup(t):
        return None if t is None else tuple(t[i] for i in rows.tolist())

    return RequestBatch(0, batch.block_size, batch.arrival_s[rows], batch.prompt_tokens[rows],
                        batch.output_tokens[rows], offsets, hashes, col(batch.session_id),
                        col(batch.parent_id), col(batch.turn), tup(batch.type), tup(batch.extra_keys))


def permute_batch(batch: RequestBatch, order: np.ndarray) -> RequestBatch:
    """The requests of ``batch`` in the order ``order`` (int64 (n,), a permutation of its rows: row
    ``order[k]`` becomes k), each with its own ids, renumbered from 0 (arrival times travel with their rows)."""
    starts = np.asarray(batch.block_offsets, np.int64)
    starts = starts - starts[0]
    counts = np.diff(starts)[order]
    offs = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(counts, out=offs[1:])
    gather = np.repeat(starts[:-1][order] - offs[:-1], counts) + np.arange(int(offs[-1]), dtype=np.int64)
    return _rows_batch(batch, order, offs, batch.block_hashes[gather])


def split_batch(batch: RequestBatch, assignment: np.ndarray, instances: int) -> list[tuple[np.ndarray, Any]]:
    """Each instance's (rows: int64 (m,), its :func:`subset_batch` or None when it has no request), the
    per-block instance column computed once for all instances."""
    owner = np.repeat(assignment, np.diff(batch.block_offsets))
    out = []
    for i in range(instances):
        rows = np.flatnonzero(assignment == i)
        out.append((rows, subset_batch(batch, rows, owner == i) if len(rows) else None))
    return out


def service_times(batch: RequestBatch, compute: Any) -> np.ndarray:
    """float64 (n,): seconds a request keeps an instance busy in the router's estimate.

    ``compute.prefill_s(prompt_tokens)`` (from scratch) + ``output_tokens x
    compute.decode_s_per_token(context)`` when the model has it
    (:class:`pcs.compute.ComputeModel`), the context being the prompt rounded
    up to whole blocks (the pages a decode step reads; one evaluation per
    distinct block count); no queueing, no hits (the router does not know
    them in advance).
    """
    prompt = batch.prompt_tokens
    total = np.asarray(compute.prefill_s(prompt, np.zeros_like(prompt)), dtype=np.float64) * np.ones(len(batch))
    decode = getattr(compute, "decode_s_per_token", None)
    if decode is not None and len(batch):
        bs = batch.block_size
        ctx, inv = np.unique(-(-prompt // bs) * bs, return_inverse=True)
        per = np.asarray(decode(ctx), dtype=np.float64).reshape(-1)
        total = total + batch.output_tokens * per[inv]
    return total


def _setup(source: Any, kw: dict) -> tuple[int, Any, BlockRules, dict]:
    """(index slots per instance = the tiers' blocks together, compute model, rules) as pcs.replay builds them,
    and what every instance runs (model, kv_dtype, gpu, tp, block_size: :class:`pcs.fleet.summary.FleetSummary`)."""
    from pcs.engine import api

    opts = api._options(kw.get("timing"), kw.get("policy"), kw.get("write_policy"), kw.get("tp"), "auto", None)
    tier_specs = api._tier_specs(kw.get("tiers"), kw.get("tier_policies"), kw.get("links"))
    spec, gpu = api._model_and_gpu(kw.get("model"), kw.get("dtype"), kw.get("hardware"), kw.get("hardware_table"),
                                   opts.tp)
    bs = api._block_size(source)
    tier_specs, _, bpb, _, _ = api._tier_bytes_and_links(
        spec, gpu, bs, tier_specs, kw.get("links"), opts.tp, kw.get("hardware_table"),
        kw.get("gpu_memory_utilization"), kw.get("kv_reserve"))
    tiers = api._build_tiers(tier_specs, bpb, opts.policy, dict(kw.get("tier_policies") or {}),
                             kw.get("protected_share"))
    compute = checked_compute(kw.get("compute")) or api._compute_model(spec, gpu, opts.tp, bs)
    run = {"model": spec.name, "kv_dtype": spec.kv_dtype, "gpu": gpu.name, "tp": opts.tp, "block_size": bs}
    return sum(t.capacity_blocks for t in tiers), compute, kw.get("rules") or BlockRules(), run


def _with_shared(kw: dict, shared: Any) -> dict:
    """``kw`` with the shared tier (a TierSpec, or None: ``kw`` itself) last in ``tiers`` (None: the default
    tiers; one str or TierSpec: one tier), as :func:`pcs.replay`'s checks see the tier list (GPU first, only it
    ``auto``, distinct names, ``links`` / ``tier_policies`` naming a tier); a ``tiers`` of another type is
    left for those checks to refuse in their order."""
    from pcs.engine.api import DEFAULT_TIERS, TierSpec

    tiers = kw.get("tiers")
    if shared is None or not (tiers is None or isinstance(tiers, (str, TierSpec, list, tuple))):
        return kw
    own = DEFAULT_TIERS if tiers is None else [tiers] if isinstance(tiers, (str, TierSpec)) else tiers
    return dict(kw, tiers=[*own, shared])


def _private(kw: dict, shared: Any) -> dict:
    """``kw`` without the shared tier's ``links`` / ``tier_policies`` entries (``shared``: its TierSpec, or None):
    what every instance's own tiers take (:func:`pcs.fleet.oneclock.shared_setup` takes the shared tier's)."""
    private = dict(kw)
    for key in ("links", "tier_policies"):
        if shared is not None and isinstance(kw.get(key), Mapping) and shared.name in kw[key]:
            private[key] = {k: v for k, v in kw[key].items() if k != shared.name}
    return private


def _setups(source: Any, kw: dict, shared: Any) -> tuple[int, Any, BlockRules, dict, dict | None]:
    """:func:`_setup`'s (index slots, compute model, rules), and the shared tier's setup
    (:func:`pcs.fleet.oneclock.shared_setup`; ``shared``: the shared tier's TierSpec) or None without one."""
    if shared is None:
        return _setup(source, kw) + (None,)
    from pcs.fleet.oneclock import shared_setup

    cap, compute, rules, run = _setup(source, _private(kw, shared))
    return cap, compute, rules, run, shared_setup(source, kw, shared, compute)


def _ceiling(source: Any, rules: BlockRules, decode: Any = None) -> SingleSequenceResult:
    """The single-sequence hits of ``source`` (docs/semantics.md §12), by the scan the replay's summary uses;
    with ``decode`` (:class:`pcs.engine.turns.DecodeBlocks` of ``source``) the decode-aware scan
    (:func:`pcs.engine.decodescan.decode_aware_hits`: each request's decode blocks seen after it, §17)."""
    from pcs.engine import fastpath

    if decode is not None:
        from pcs.engine.decodescan import decode_aware_hits

        return decode_aware_hits(source, rules, decode, None)
    return fastpath.single_results(fastpath.scan(source, 0, rules, None, check=False))[0]


def instance_ceilings(batch: RequestBatch, assignment: np.ndarray, instances: int, rules: BlockRules,
                      subs: list | None = None, decodes: list | None = None) -> list[SingleSequenceResult]:
    """Each instance's single-sequence result on its own sub-trace (docs/semantics.md §12, §17): the scan
    the replay's summary uses (:func:`_ceiling`) of every sub-trace; checked against
    :func:`pcs.blocks.single_sequence_hits` of the instance's requests
    (``tests/fleet/test_fleet.py::test_instance_ceilings_are_the_sub_trace_scans``).

    Args:
        batch: the whole trace; assignment: int64 (requests,), the instance of each request.
        subs: :func:`split_batch` of them when the caller has it (None: split here).
        decodes: per instance the decode blocks its run cached (:func:`pcs.engine.turns.decode_blocks` of its
            sub-trace, sub-trace numbering) or None: that instance's scan is decode-aware; None = prompt-only for all.
    Returns:
        one :class:`pcs.blocks.SingleSequenceResult` per instance (zeros for an idle one).
    """
    subs = subs if subs is not None else split_batch(batch, assignment, instances)
    decodes = decodes if decodes is not None else [None] * instances
    return [_ceiling(_SubTrace("<instance>", b), rules, d) if b is not None else SingleSequenceResult(0, 0, 0, 0, 0)
            for (_, b), d in zip(subs, decodes)]


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _imbalance(values: list) -> float | None:
    mean = sum(values) / len(values) if values else 0
    return max(values) / mean if mean > 0 else None


def _pct(values: np.ndarray, q: float) -> float | None:
    values = values[~np.isnan(values)]
    return float(np.percentile(values, q)) if len(values) else None


def _instance_row(i: int, ceiling: SingleSequenceResult, s: Any, table: Any, held: int) -> InstanceLoad:
    """One instance's :class:`InstanceLoad` from its sub-trace's ceiling, replay summary (None if idle) and
    requests table."""
    if s is None:
        return InstanceLoad(i, 0, 0, 0, None, 0, None, None, None, None, held)
    busy = s.scheduler.with_cache.busy_s if s.scheduler is not None else None
    ttft = table.column("ttft_s").to_numpy(zero_copy_only=False).astype(np.float64)
    return InstanceLoad(i, s.requests, s.prompt_tokens, s.hit_tokens, s.hit_ratio, ceiling.hit_tokens,
                        ceiling.hit_ratio if s.prompt_tokens else None, busy, _pct(ttft, 50), _pct(ttft, 99), held)


def _requests_table(tables: list, rows: list) -> Any:
    """The instances' request tables as one, in trace order, ``request_id`` = trace position, plus ``instance``."""
    pa = held_import("pyarrow")

    parts = []
    for i, (t, r) in enumerate(zip(tables, rows)):
        if t is None:
            continue
        t = t.set_column(t.schema.get_field_index("request_id"), "request_id", pa.array(r, type=pa.int64()))
        parts.append(t.append_column("instance", pa.array(np.full(len(r), i, dtype=np.int64))))
    whole = pa.concat_tables(parts)
    return whole.take(pa.array(np.argsort(whole.column("request_id").to_numpy(), kind="stable")))


def _fleet_ceiling(batch: RequestBatch, rules: BlockRules, decode: Any, order: np.ndarray | None) -> int:
    """The fleet ceiling's hit tokens: the single-sequence walk of the whole trace (in memory: no re-read) in
    trace order, or in ``order`` (int64 trace positions: a shared tier's first-admission order, §17.1) with
    ``decode`` (trace numbering, :func:`pcs.fleet.decodes.fleet_decode`) renumbered to follow it."""
    if order is None or bool((order == np.arange(len(order))).all()):
        return _ceiling(_SubTrace("<trace>", batch), rules, decode).hit_tokens
    from pcs.fleet.decodes import renumber

    return _ceiling(_SubTrace("<trace>", permute_batch(batch, order)), rules, renumber(decode, order)).hit_tokens


def _summary(name: str, router, stale_s: float, cap: int, source: Any, batch: RequestBatch, rules: BlockRules,
             loads: list, summaries: list, table: Any, shared: Any = None,
             decode: Any = None, order: np.ndarray | None = None) -> FleetSummary:
    """Add the instances up (docs/semantics.md §17); with a shared tier (§17.1) captured = the fleet ceiling,
    both the walk in the fleet's first-admission order ``order`` (a shared tier of 0 blocks shares nothing:
    the trace-order ceiling, captured the routed sub-traces' ceilings); ``decode``: the fleet ceiling's decode
    blocks (:func:`pcs.fleet.decodes.fleet_decode`) or None (prompt-only)."""
    prompt = int(batch.prompt_tokens.sum())
    sharing = shared is not None and shared.capacity_blocks > 0
    ceiling = _fleet_ceiling(batch, rules, decode, order if sharing else None)
    captured = ceiling if sharing else sum(x.ceiling_hit_tokens for x in loads)
    hits = sum(x.hit_tokens for x in loads)
    c, k, d = (ceiling / prompt, captured / prompt, hits / prompt) if prompt else (None, None, None)   # 0/0
    busy = [x.busy_s or 0.0 for x in loads]
    ttft = table.column("ttft_s").to_numpy(zero_copy_only=False).astype(np.float64)
    return FleetSummary(
        trace=name, instances=len(loads), router=router.describe(), router_source=router.source,
        router_stale_s=stale_s, index_capacity_blocks=cap, requests=len(batch), prompt_tokens=prompt,
        hit_tokens=hits, hit_ratio=d,
        gap=FleetGap(c, k, d, None if c is None else c - k, None if k is None else k - d, decode is not None),
        imbalance_requests=_imbalance([x.requests for x in loads]) or 1.0,
        imbalance_prompt_tokens=_imbalance([x.prompt_tokens for x in loads]) or 1.0,
        imbalance_busy_s=_imbalance(busy) if any(x.busy_s is not None for x in loads) else None,
        ttft_p50_s=_pct(ttft, 50), ttft_p99_s=_pct(ttft, 99),
        per_instance=tuple(loads), instance_summaries=tuple(summaries), shared_tier=shared,
        engines=(shared.engine,) if shared is not None else tuple(dict.fromkeys(
            x.engine for x in summaries if x is not None and x.engine is not None)),
        notes=() if shared is None else ("a shared tier: instance_summaries are null (an instance's own sequential "
                                         "baseline assumes tiers it owns); its hits by tier are in shared_tier",))


def fleet_notes(own: Sequence[str], summaries: Sequence[Any], router: Any = None) -> tuple[str, ...]:
    """The fleet's notes, each once: ``own`` (the fleet's), then the instances' replay notes -- a note every
    instance that ran printed alike once, one that differs once per instance, as ``instance i: ...``; the
    past-context and saturation notes, which count each instance's own requests and bins, are merged into one
    (:func:`_fleet_past_context`, :func:`_fleet_saturation`). ``summaries``: each instance's
    :class:`pcs.engine.result.ReplaySummary` or None (idle, or a shared tier's run); ``router``: the run's
    :class:`pcs.fleet.routers.Router` (the saturation note's advice), or None."""
    ran = [(i, s.notes) for i, s in enumerate(summaries) if s is not None]
    out = list(own)
    past = [(i, m) for i, notes in ran for m in map(_PAST_CONTEXT.match, notes) if m]
    busy = [(i, m) for i, notes in ran for m in map(_SATURATED.match, notes) if m]
    for i, notes in ran:
        for n in notes:
            if past and _PAST_CONTEXT.match(n):
                line = _fleet_past_context(past) if len(ran) > 1 else n
            elif busy and _SATURATED.match(n) and len(summaries) > 1:    # one instance: its run's note as is
                line = _fleet_saturation(busy, len(summaries), router)
            else:
                line = n if all(n in other for _, other in ran) else f"instance {i}: {n}"
            if line not in out:
                out.append(line)
    return tuple(out)


#: An instance's past-context note (``pcs.engine.api._past_context_note``): its counts and the rest.
_PAST_CONTEXT = re.compile(r"([\d,]+) of ([\d,]+) requests? runs? past the model's context, ([\d,]+) tokens "
                           r"\(config\.json max_position_embeddings\), prompt \+ output \(([\d,]+) by the prompt "
                           r"alone, longest prompt ([\d,]+)\): (.*)$")


#: An instance's saturation note (:func:`pcs.engine.schedresult.saturation_note`): its bin counts and width.
_SATURATED = re.compile(re.escape(SATURATION_NOTE_START) + r"([\d,]+) of ([\d,]+) (\S+)-s bins: ")


def _fleet_saturation(busy: Sequence[tuple[int, Any]], instances: int, router: Any) -> str:
    """The instances' saturation notes as one line: which instances, each one's busy bins, and the advice a fleet
    run can take -- more instances than it has, and a router that reads the cache index (prefix, cache-aware)
    only when ``router`` does not (``uses_index``, :mod:`pcs.fleet.routers`)."""
    one_width = len({m.group(3) for _, m in busy}) == 1     # each instance's bins are its own run's
    width = f"{busy[0][1].group(3)}-s " if one_width else ""
    each = ", ".join(f"{i}: {m.group(1)} of {m.group(2)}" + ("" if one_width else f" {m.group(3)}-s")
                     for i, m in busy)
    who, their = ((f"instance {busy[0][0]} of {instances} was", "its") if len(busy) == 1
                  else (f"{len(busy)} of {instances} instances were", "their"))
    route = "" if router is None or getattr(router, "uses_index", False) else (
        f", --router cache-aware ({router.name} splits the shared prefixes)")
    return (f"{who} busy >= 99 % in at least half of {their} {width}bins ({each}): the traffic "
            f"exceeds {their} compute, so TTFT is mostly queueing; more instances than {instances}{route}, a smaller "
            "model or --compute infinite (no compute limit) answers the cache question apart from the load")


def _fleet_past_context(past: Sequence[tuple[int, Any]]) -> str:
    """The instances' past-context notes as one: the counts summed, the longest prompt the longest, with each
    instance's ``over of requests`` (instances without such requests are not listed)."""
    num = [[int(g.replace(",", "")) for g in m.groups()[:5]] for _, m in past]
    over, reqs, prompt_only = (sum(n[k] for n in num) for k in (0, 1, 3))
    each = ", ".join(f"instance {i} {n[0]:,} of {n[1]:,}" for (i, _), n in zip(past, num))
    return (f"{units.format_counted(over, 'request')} {'runs' if over == 1 else 'run'} past the model's context, "
            f"{num[0][2]:,} tokens (config.json "
            f"max_position_embeddings), prompt + output ({prompt_only:,} by the prompt alone, longest prompt "
            f"{max(n[4] for n in num):,}); per instance: {each} ({over:,} of {reqs:,}): {past[0][1].group(6)}")


def _replay_instances(source: Any, batch: RequestBatch, assignment: np.ndarray, instances: int, rules: BlockRules,
                      index: CacheIndex, name: str, progress: Any, replay_kwargs: dict
                      ) -> tuple[list, list, list, list, list]:
    """Each instance's sub-trace replayed alone with :func:`pcs.replay` (no shared tier): (InstanceLoad,
    replay summary or None, requests table or None, trace rows, decode blocks its run cached or None) per
    instance. Its ceiling is the one its replay computed (``ReplayResult.ceilings``: the sub-trace's
    single-sequence walk, decode-aware with the next turns its step scheduler cached, docs/semantics.md §17),
    what :func:`instance_ceilings` computes alone from :func:`pcs.engine.turns.decode_blocks` of the sub-trace
    (``tests/fleet/test_fleet_decode.py::test_reused_instance_ceilings_are_the_sub_trace_scans``)."""
    from pcs.engine.api import replay
    from pcs.report.tiercheck import without_trace_notes

    rows_of, summaries, tables, ceilings, decodes = [], [], [], [], []
    for i, (rows, part) in enumerate(split_batch(batch, assignment, instances)):
        sub = source if instances == 1 or part is None else _SubTrace(f"{name} [instance {i}]", part)
        res = replay(sub, progress=progress, **replay_kwargs) if len(rows) else None
        if res is not None:     # the trace's caveats are the fleet's (fleet_replay), never an instance's
            res.summary = without_trace_notes(res.summary, sub)
        single, with_decode, decode = res.ceilings if res is not None else (SingleSequenceResult(0, 0, 0, 0, 0),
                                                                             None, None)
        rows_of.append(rows)
        summaries.append(res.summary if res is not None else None)
        tables.append(res.requests if res is not None else None)
        ceilings.append(with_decode if with_decode is not None else single)
        decodes.append(decode)
    loads = [_instance_row(i, ceilings[i], summaries[i], tables[i], index.held_blocks(i)) for i in range(instances)]
    return loads, summaries, tables, rows_of, decodes


def _ceiling_decode(batch: RequestBatch, decodes: list | None, rows_of: list, step: bool, replay_kwargs: dict
                    ) -> Any:
    """The fleet ceiling's decode blocks (:func:`pcs.fleet.decodes.fleet_decode`, docs/semantics.md §17) from
    each instance's (None: none cached), whether the step scheduler ran and the run's scheduler options."""
    setting = getattr(replay_kwargs.get("scheduler"), "cache_decode_blocks", None)
    return fleet_decode(_SubTrace("<trace>", batch), decodes or [None] * len(rows_of), rows_of, step, setting,
                        replay_kwargs.get("native"))


def _refuse_oracle_policy(replay_kwargs: dict) -> None:
    """belady is the offline bound of one replay (it reads that replay's future, docs/semantics.md §8): refused
    in a fleet, whose instances each see the sub-trace the router sends them."""
    names = [replay_kwargs.get("policy")] + list((replay_kwargs.get("tier_policies") or {}).values())
    if any(isinstance(n, str) and n.split(":")[0].split("+")[0] == "belady" for n in names):
        raise UserError("policy='belady' is the offline oracle of a single-instance replay (it reads the "
                         "replayed trace's future); it is refused with instances=, router= or shared_tier=: replay "
                         "one instance with policy='belady' or gap_oracle instead")


def refuse_single_instance_options(kw: dict, names: tuple[str, str] = ("admit=", "gap_oracle"),
                                   fleet: str = "instances=, router= or shared_tier=") -> None:
    """Admission (``admit``) and the gap oracle (``gap_oracle``) are for single-instance replays, refused for every
    fleet (docs/cluster.md "Admission in a fleet"); one rule for :func:`fleet_replay` and ``pcs replay
    --instances`` (which names them ``--admit``/``--gap-oracle``).

    Raises:
        UserError: naming the options given, not both.
    """
    given = [name for key, name in zip(("admit", "gap_oracle"), names) if kw.get(key)]
    if given:
        raise UserError(f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} for single-instance replays "
                        f"(not with {fleet})")


def _check_fleet_args(instances: Any, replay_kwargs: dict[str, Any], shared_tier: Any) -> tuple[int, Any]:
    """Refuse, before any work: a bad instance count, a bad shared tier, the single-instance options, an oracle
    policy, then what :func:`pcs.replay` refuses before it reads the trace (:func:`pcs.engine.api.check_replay`,
    the same checks in the same order; the shared tier last in the tier list, :func:`_with_shared`).

    Returns:
        ``instances`` as a Python int (any integer type but bool: a numpy int too, as ``tp``), and the shared
        tier's :class:`pcs.engine.api.TierSpec` (None without one).
    Raises:
        UserError: ``instances`` not an integer in 1 .. :data:`MAX_INSTANCES` (named ``instances``, which the
            CLI shows as ``--instances``); what :func:`pcs.fleet.sharedfleet.parse_shared_tier`,
            :func:`refuse_single_instance_options`, :func:`_refuse_oracle_policy` and
            :func:`pcs.engine.api.check_replay` raise. TypeError: a keyword :func:`pcs.replay` does not take.
    """
    from pcs.argcheck import check_int
    from pcs.engine.api import check_replay     # lazy, as _setup's import of pcs.engine.api

    instances = check_int(instances, "instances", 1, MAX_INSTANCES)
    shared = None
    if shared_tier is not None:
        from pcs.fleet.sharedfleet import parse_shared_tier

        shared = parse_shared_tier(shared_tier)
    refuse_single_instance_options(replay_kwargs)
    _refuse_oracle_policy(replay_kwargs)
    check_replay(**_with_shared(replay_kwargs, shared))
    return instances, shared


def _run_instances(source: Any, batch: RequestBatch, assignment: np.ndarray, instances: int, rules: Any,
                   compute: Any, setup: Any, index: CacheIndex, name: str, progress: Any, replay_kwargs: dict) -> tuple:
    """:func:`fleet_replay`'s instances run: with a shared tier (``setup``) one shared run
    (:func:`pcs.fleet.sharedfleet.shared_instances`), else one :func:`pcs.replay` each (:func:`_replay_instances`).
    Returns (loads, summaries -- None each with a shared tier --, tables, rows_of, decodes, the shared tier's summary
    or None, the shared run's admission order or None, whether the step scheduler ran)."""
    if setup is not None:
        from pcs.fleet.sharedfleet import shared_instances, shared_summary

        loads, tables, rows_of, run, decodes = shared_instances(source, batch, assignment, instances, rules,
                                                                compute, setup, index, progress)
        shared = shared_summary(run, loads, int(batch.prompt_tokens.sum()))
        return loads, [None] * instances, tables, rows_of, decodes, shared, run.admitted, decodes is not None
    loads, summaries, tables, rows_of, decodes = _replay_instances(source, batch, assignment, instances, rules,
                                                                   index, name, progress, replay_kwargs)
    step = any(s is not None and s.scheduler is not None for s in summaries)
    return loads, summaries, tables, rows_of, decodes, None, None, step


@keyword_refusals
def fleet_replay(trace: Any = None, *, instances: int = 1, router: Any = "round-robin", router_stale_s: float = 0.0,
                 progress: Callable[[int], None] | None = None, shared_tier: Any = None,
                 **replay_kwargs: Any) -> FleetResult:
    """Replay a trace through ``instances`` instances behind a router.

    Args:
        trace: as :func:`pcs.replay` (a path, a Trace, requests, None = the bundled sample).
        instances: instances in the fleet (1 .. :data:`MAX_INSTANCES`); each gets the tiers,
            links and scheduler ``replay_kwargs`` describe.
        router: a name of :data:`pcs.fleet.routers.ROUTERS` with options (``"cache-aware:overlap=2,load=1"``)
            or a Router.
        router_stale_s: seconds between a cache event and the router's view of it (>= 0); > 0 only for a
            router that reads the cache index (prefix, cache-aware: :func:`pcs.fleet.routers.stale_view_applies`).
        progress: called with the requests replayed since its previous call, by each instance's replay (as :func:`pcs.replay`).
        shared_tier: ``"NAME=SIZE"`` (or a :class:`pcs.engine.api.TierSpec`): a lower tier all instances
            read and write, below each instance's own tiers, one link per instance (docs/semantics.md §17.1;
            :mod:`pcs.fleet.oneclock`); None = no shared tier.
        **replay_kwargs: the keyword arguments of :func:`pcs.replay` (model, hardware, tp, tiers, ...).
    Returns:
        :class:`FleetResult`.
    Raises:
        UserError: (:class:`pcs.errors.UserError`, a ValueError) instances out of range, an unknown router or
            option, a negative delay or a delay > 0 for
            a router that does not read the cache index, ``session``
            on a trace without session ids; with ``shared_tier``: no size; ``admit`` or ``gap_oracle``
            (:func:`refuse_single_instance_options`); and what :func:`pcs.replay` raises, its trace-free checks
            first (:func:`pcs.engine.api.check_replay`). TypeError: a keyword :func:`pcs.replay` does not take.
    """
    instances, shared = _check_fleet_args(instances, replay_kwargs, shared_tier)
    from pcs.engine.api import limited_source

    source = limited_source(trace, replay_kwargs)   # the instances' step scheduler's bounds, before the one read
    batch = concat_batches(list(as_batches(source)), block_size=getattr(source, "block_size", None))
    if len(batch) == 0:
        raise UserError("the trace has no requests")
    cap, compute, rules, run_of, setup = _setups(source, replay_kwargs, shared)
    # one compute model for every instance (the one pcs.replay would build; its KV-read memo is then shared)
    replay_kwargs = dict(replay_kwargs, compute=compute)
    with keyword_refusal("router", router):
        chooser = parse_router(router, instances)
    stale_view_applies((chooser,), router_stale_s)     # a delay no router reads is refused (one rule: CLI too)
    index = CacheIndex([cap] * instances, router_stale_s)
    assignment = route(batch, rules, chooser, index, service_times(batch, compute),
                       native=replay_kwargs.get("native"))
    name = getattr(source, "name", None) or str(getattr(source, "path", "<requests>"))
    loads, summaries, tables, rows_of, decodes, shared, order, step = _run_instances(
        source, batch, assignment, instances, rules, compute, setup, index, name, progress, replay_kwargs)
    table = _requests_table(tables, rows_of)
    decode = _ceiling_decode(batch, decodes, rows_of, step, replay_kwargs)
    summary = _summary(name, chooser, float(router_stale_s), cap, source, batch, rules, loads, summaries, table,
                       shared, decode, order)
    from pcs.trace.api import trace_notes

    # the trace's caveats last, in the API's words, as pcs.replay's (the command gives them in its own)
    summary = dataclasses.replace(summary, notes=fleet_notes(summary.notes, summaries, chooser)
                                  + tuple(trace_notes(source)), **run_of)
    return FleetResult(summary, assignment, table)
