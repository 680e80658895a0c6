"""Turn an engine run into the typed summary (the JSON of ``pcs replay``) and the per-request table.

:func:`build_summary` reads the ledger, the end state of the tiers and the
single-sequence results and builds a :class:`pcs.engine.result.ReplaySummary`
(every field, its unit and meaning: :mod:`pcs.engine.result` and
``docs/json.md``). The gap split (``docs/semantics.md`` §12): ``block_rounding``
= ideal - single_sequence, ``capacity_eviction`` = single_sequence -
sequential, ``concurrency`` = sequential - real; the three sum to ideal -
real (concurrency is 0 in sequential timing). ``payload_lens``: the run's KV
dtype beside another, hits held fixed (:mod:`pcs.engine.lens`). ``engine``,
``engine_reason``, ``baseline_engine``, ``baseline_engine_reason``: the
engines that ran the replay and its sequential baseline and why
(:mod:`pcs.engine.select`, ``ctx`` keys of the same names); ``threads``: whether
the side work ran on worker threads (``ctx["threads"]``, :func:`pcs.beside.threads_decision`).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from pcs._heldimport import held_import
from pcs.cache.policies import ProtectedPolicy
from pcs.engine.lens import payload_lens
from pcs.engine.series import TimeSeries, request_distributions, series_payload
from pcs.engine.result import (BytesSummary, EnvelopeSummary, GapSplit, LinkEnvelope, ReplaySummary, ThreadsSummary,
                               TierSummary)
from pcs.percentiles import linear_percentiles, sorted_finite, sorted_linear_percentiles
from pcs._dataclass import dataclass

__all__ = ["build_summary", "ordered_columns", "requests_table", "REQUEST_COLUMNS", "TierState", "CacheState",
           "cache_state", "warm_up"]

#: Per-request columns of ``--requests-out`` (plus ``hit_tokens_<tier>`` per tier after ``hit_tokens``).
REQUEST_COLUMNS = ("request_id", "arrival_s", "prompt_tokens", "output_tokens", "hit_blocks", "missed_blocks",
                   "hit_tokens",
                   "restored_bytes", "restore_s", "prefill_s", "wait_s", "ttft_s", "prefill_no_cache_s",
                   "finish_s", "truncated")


@dataclass(frozen=True, slots=True)
class TierState:
    """What the summary reads of one tier at the end of a run.

    Attributes:
        name: tier name.
        policy: eviction policy name.
        capacity_blocks: slots.
        resident_blocks_end: resident blocks after the last request.
        resident_blocks_peak: most resident blocks at once (``TierStats.peak_resident_blocks``).
        evicted_blocks: victims chosen in this tier (``TierStats.evicted_blocks``).
        written_blocks: blocks written into this tier from above (``Hierarchy.written_blocks``).
        protected_share: the ``protected`` policy's share, None for other policies.
        admission: the tier's admission policies (``KIND[:ARGS]`` joined by ``+``), or None.
        refused_blocks: blocks the admission refused (``TierStats.refused_blocks``).
    """

    name: str
    policy: str
    capacity_blocks: int
    resident_blocks_end: int
    resident_blocks_peak: int
    evicted_blocks: int
    written_blocks: int
    protected_share: float | None = None
    admission: str | None = None
    refused_blocks: int = 0


@dataclass(frozen=True, slots=True)
class CacheState:
    """The end state of a run's tiers (GPU first) and the blocks dropped below the last tier; ``hybrid``:
    a hybrid hierarchy's :class:`pcs.cache.residency.Residency` (None for the others)."""

    tiers: tuple
    dropped_blocks: int
    hybrid: Any = None


def _admission_spec(tier) -> str | None:
    adm = getattr(tier, "admission", None)
    return None if adm is None else adm.spec()


def _protected_share(policy) -> float | None:
    """The slru policy's share (a Python SLRUPolicy or the compiled hierarchy's view of one), else None."""
    if isinstance(policy, ProtectedPolicy) or (policy.name == "slru" and type(policy).__name__ == "_PolicyView"):
        return policy.protected_share
    return None


def cache_state(h) -> CacheState:
    """Snapshot a :class:`pcs.cache.Hierarchy` (or a hybrid one) for :func:`build_summary`."""
    tiers = tuple(TierState(t.name, t.policy.name, t.capacity_blocks, len(t.resident), t.stats.peak_resident_blocks,
                            t.stats.evicted_blocks, h.written_blocks[j],
                            _protected_share(t.policy),
                            _admission_spec(t), getattr(t.stats, "refused_blocks", 0))
                  for j, t in enumerate(h.tiers))
    return CacheState(tiers, h.dropped_blocks, getattr(h, "residency", None))


def _values(col) -> np.ndarray:
    """A column as numpy: an ``array.array`` (engine; typecodes q, d, b) or an ndarray (fast path)."""
    if isinstance(col, np.ndarray):
        return col
    dtype = {"q": np.int64, "d": np.float64, "b": np.int8}[col.typecode]
    return np.frombuffer(col, dtype=dtype) if len(col) else np.zeros(0, dtype)


def requests_table(columns: dict) -> Any:
    """Per-request columns (``array.array`` or int64/float64/int8 ndarrays) -> pyarrow Table (int64, float64, bool)."""
    pa = held_import("pyarrow")

    arrays = {}
    for name, col in columns.items():
        values = _values(col)
        arrays[name] = pa.array(values.astype(bool) if values.dtype == np.int8 else values)
    return pa.table(arrays)


def _p50_p99(values: np.ndarray) -> tuple[float | None, float | None]:
    """The 50th and 99th percentiles (numpy's linear method, :func:`pcs.percentiles.linear_percentiles`) from one
    partition of a float64 copy; (None, None) when empty."""
    if not len(values):
        return None, None
    p50, p99 = linear_percentiles(np.array(values, dtype=np.float64), (50, 99))
    return p50, p99


def _p50_p99_of(values: np.ndarray, known, ordered: np.ndarray | None = None) -> tuple[float | None, float | None]:
    """:func:`_p50_p99` of ``values``, read off ``known`` -- the run's scheduler percentiles of the same column
    (:class:`pcs.engine.schedresult.Percentiles` of its finite values, from the same
    :func:`pcs.percentiles.linear_percentiles`: pcs.engine.schedstats) -- when every value is finite: the values
    are then the same, and so are the order statistics each level reads, to the bit (one partition less a
    column). Else read off ``ordered`` -- :func:`pcs.percentiles.sorted_finite` of the same column, sorted for
    its CDF -- when it holds every value (all finite: :func:`pcs.percentiles.sorted_linear_percentiles`, the
    same order statistics). Otherwise (no scheduler, a NaN or an infinity, no values) computed here."""
    if known is not None and known.p50 is not None and len(values) and bool(np.isfinite(values).all()):
        return known.p50, known.p99
    if ordered is not None and len(values) and len(ordered) == len(values):
        p50, p99 = sorted_linear_percentiles(ordered, (50, 99))
        return p50, p99
    return _p50_p99(values)


def _reference_block(ctx) -> int:
    """The payload row's bytes of one block of the model (int bytes, the TP group's): the Reference block, or a
    hybrid model's in its page layout (:func:`pcs.engine.lens.payload_block_bytes`: a state once a checkpoint)."""
    if ctx.get("hybrid") is None:
        return ctx["reference_block"].total_bytes
    from pcs.engine.lens import payload_block_bytes

    return payload_block_bytes(ctx["model"], ctx["block_size"], ctx["hybrid"])


def _scaled(per_component: dict, blocks: int) -> dict:
    return {k: v * blocks for k, v in per_component.items()}


def _tier_rows(state: CacheState, ledger, ctx) -> tuple[TierSummary, ...]:
    rows = []
    for j, tier in enumerate(state.tiers):
        bb = ctx["block_bytes"][j]
        b = bb.total_bytes
        end = tier.resident_blocks_end
        peak = tier.resident_blocks_peak
        link = ctx["links"][j]
        lk = ledger.links[j]
        rows.append(TierSummary(
            name=tier.name, layout="reserved" if j == 0 else "serialized", policy=tier.policy,
            capacity_blocks=tier.capacity_blocks, capacity_bytes=tier.capacity_blocks * b,
            bytes_per_block=b, bytes_per_block_by_component=dict(bb.per_component),
            link=None if link is None else link.name,
            link_bandwidth_bps=None if link is None else link.bandwidth_bps,
            link_setup_s=None if link is None else link.setup_s,
            hit_blocks=ledger.tier_hit_blocks[j], hit_tokens=ledger.tier_hit_tokens[j],
            restored_blocks=lk.restored_blocks, restored_bytes=lk.restored_bytes,
            written_blocks=tier.written_blocks, written_bytes=tier.written_blocks * b,
            evicted_blocks=tier.evicted_blocks,
            resident_blocks_end=end, resident_bytes_end=end * b,
            resident_bytes_end_by_component=_scaled(bb.per_component, end),
            resident_blocks_peak=peak, resident_bytes_peak=peak * b,
            resident_bytes_peak_by_component=_scaled(bb.per_component, peak),
            protected_share=tier.protected_share, admission=tier.admission,
            refused_blocks=None if tier.admission is None else tier.refused_blocks,
        ))
    if state.hybrid is not None and ctx.get("hybrid") is not None:   # pages of pools, bytes per component (pcs.engine.hybridsummary)
        from dataclasses import replace

        from pcs.engine.hybridsummary import tier_fields

        rows = [replace(r, **tier_fields(ctx["hybrid"], state.hybrid, j)) for j, r in enumerate(rows)]
    return tuple(rows)


#: A difference of two float sums smaller than this share of the larger sum is rounding, not time (s / s).
RESIDUE = 1e-9


def difference_of_sums(a: float, b: float, terms: int = 0, clock_s: float = 0.0) -> float:
    """``a - b`` for two float sums (s) whose difference is >= 0 by definition, 0.0 when it is rounding.

    ``queue_s`` = restore time - transfer time (each restore ends at begin + transfer with begin >= now) and
    ``prefill_saved_s`` = prefill without hits - prefill with them (hits never add prefill, docs/semantics.md
    §10) sum many terms in different orders, a restore's time as a difference of absolute simulated times (up
    to ``clock_s``, the run's latest, s); the rounding left over is ~1e-16 to 1e-11 s either side of 0, which
    printed as "0.00 ns" or "-0.00 ns". A difference at most :data:`RESIDUE` x the larger sum plus 4 units in
    the last place of ``clock_s`` per term (``terms`` restores) is that rounding: exactly 0.0.
    """
    x = a - b
    return x if x > RESIDUE * max(abs(a), abs(b)) + 4 * terms * math.ulp(clock_s) else 0.0


def _link_envelope(tier: TierState, link, lk, tp: int, clock_s: float) -> LinkEnvelope:
    """One link's row; ``link.bandwidth_bps`` is the TP group's (TP x one GPU's link), so the break-even per GPU
    is the group's / ``tp`` (docs/semantics.md §10); ``clock_s`` the run's latest simulated time (s)."""
    be = None
    if lk.restores:   # pcs.analysis.envelope (and fractions) loaded for a link that restored something
        from pcs.analysis.envelope import break_even_bps

        be = break_even_bps(lk.restored_bytes, lk.full_prefill_s, lk.remaining_prefill_s, lk.overhead_s)
    return LinkEnvelope(
        tier=tier.name, link=link.name, bandwidth_bps=link.bandwidth_bps,
        setup_s=link.setup_s, restores=lk.restores, restored_blocks=lk.restored_blocks,
        restored_bytes=lk.restored_bytes, restore_s=lk.restore_s, transfer_s=lk.transfer_s,
        queue_s=difference_of_sums(lk.restore_s, lk.transfer_s, lk.restores, clock_s),
        prefill_saved_s=difference_of_sums(lk.full_prefill_s, lk.remaining_prefill_s),
        restores_slower_than_recompute=lk.slower_restores,
        share_slower=lk.slower_restores / lk.restores if lk.restores else None,
        blocks_slower_than_recompute=lk.slower_blocks,
        break_even_bps=be, break_even_bps_per_gpu=None if be is None else be / tp,
    )


def _latest_s(cols) -> float:
    """The latest first token of the run, s (max of arrival + TTFT; every restore ends before it), 0.0 for none."""
    end = _values(cols["arrival_s"]) + _values(cols["ttft_s"])
    top = float(end.max()) if len(end) else 0.0
    if math.isfinite(top):      # no NaN (max would be NaN) and no +inf: the max is a finite value's, as below
        return top
    end = end[np.isfinite(end)]
    return float(end.max()) if len(end) else 0.0


def _envelope(ledger, state: CacheState, cols, ctx, ordered: dict, prefill_sum_s: float) -> EnvelopeSummary:
    """The bandwidth envelope; ``ordered``: name -> :func:`pcs.percentiles.sorted_finite` of the ``ttft_s`` and
    ``prefill_no_cache_s`` columns (the CDFs' sorts, shared with these percentiles); ``prefill_sum_s``: the sum of
    the ``prefill_s`` column (s), summed once for this and the payload lens."""
    clock = _latest_s(cols)
    links = tuple(_link_envelope(state.tiers[j], ctx["links"][j], ledger.links[j], ctx["tp"], clock)
                  for j in range(1, len(state.tiers)))
    ttft = _values(cols["ttft_s"])
    no_cache = _values(cols["prefill_no_cache_s"])
    wait = _values(cols["wait_s"])
    sched = ctx.get("scheduler")     # its ttft_s and wait_kv_s: the same columns of the same run (api._summarise)
    (t50, t99), (n50, n99), (w50, w99) = (_p50_p99_of(ttft, None if sched is None else sched.with_cache.ttft_s,
                                                      ordered["ttft_s"]),
                                          _p50_p99_of(no_cache, None, ordered["prefill_no_cache_s"]),
                                          _p50_p99_of(wait, None if sched is None else sched.wait_kv_s))
    return EnvelopeSummary(links=links, ttft_p50_s=t50, ttft_p99_s=t99, ttft_no_cache_alone_p50_s=n50,
                           ttft_no_cache_alone_p99_s=n99, wait_p50_s=w50, wait_p99_s=w99,
                           prefill_saved_s=difference_of_sums(float(no_cache.sum()), prefill_sum_s))


def _bytes(ledger, state: CacheState, tiers: tuple[TierSummary, ...], ctx) -> BytesSummary:
    return BytesSummary(
        restored_bytes=sum(t.restored_bytes for t in tiers),
        restored_per_link={t.name: t.restored_bytes for t in tiers[1:]},
        written_per_tier={t.name: t.written_bytes for t in tiers[1:]},
        recomputed_tokens=ledger.computed_tokens,
        recomputed_bytes=ledger.computed_tokens * ctx["reference_bytes_per_token"],
        dropped_blocks=state.dropped_blocks,
        peak_reserved_blocks=ledger.peak_reserved_blocks,
        peak_reserved_bytes=(ledger.peak_reserved_blocks * ctx["block_bytes"][0].total_bytes
                             if state.hybrid is None or ctx.get("hybrid") is None else state.hybrid.peak_held_bytes),
    )




def build_summary(res, state: CacheState, seq_ledger, single, ideal, ctx: dict,
                  then: Any = None) -> ReplaySummary:
    """The typed summary of one replay (fields and units in :mod:`pcs.engine.result`).

    Args:
        res: the run's :class:`pcs.engine.engine.EngineResult` (ledger and
            per-request columns), from the engine or :mod:`pcs.engine.fastpath`.
        state: the tiers at the end (:func:`cache_state` of the engine's hierarchy).
        seq_ledger: ledger of the sequential replay with the same tiers.
        single, ideal: :class:`pcs.blocks.SingleSequenceResult` under the run's
            rules and the ideal rules.
        ctx: run context (model, gpu, block bytes, links, rules ...; see ``api.replay``).
        then: called with no argument (or None) once the parts that read neither ``ctx["ordered"]`` nor
            ``ctx["scheduler"]`` are made (the tier rows, the prefill sum, the time series): it may add those two
            to ``ctx`` then (:func:`pcs.engine.api._summarise` waits there for the sorts a worker makes, so this
            thread's share of the summary is done meanwhile). No value depends on when it is called.
    Returns:
        :class:`pcs.engine.result.ReplaySummary` with ``notes`` empty (the
        caller adds them with ``dataclasses.replace``).
    """
    L = res.ledger
    real, seq, ss, ide = _ratios(L, seq_ledger, single, ideal)
    model = ctx["model"]
    tiers = _tier_rows(state, L, ctx)
    prefill_sum_s = float(_values(res.columns["prefill_s"]).sum())
    series = _series(res, tiers)
    if then is not None:
        then()
    ordered = ctx.get("ordered") or ordered_columns(res.columns)   # one sort a column: its CDF and percentiles
    envelope = _envelope(L, state, res.columns, ctx, ordered, prefill_sum_s)
    lens = _lens(res, tiers, envelope, prefill_sum_s, ctx)
    return ReplaySummary(
        trace=ctx["trace"], model=model.name, model_file=model.config_file, kv_dtype=model.kv_layout.name, gpu=ctx["gpu"].name,
        tp=ctx["tp"], block_size=ctx["block_size"], timing=ctx["timing"], policy=ctx["policy"],
        write_policy=ctx["write_policy"],
        cache_partial_blocks=ctx["rules"].cache_partial_blocks,
        recompute_last_token=ctx["rules"].recompute_last_token,
        requests=L.num_requests, prompt_tokens=L.prompt_tokens, hit_tokens=L.hit_tokens,
        block_accesses=L.block_accesses, cacheable_blocks=L.cacheable_blocks,
        hit_blocks=L.hit_blocks, block_misses=L.block_misses,
        hit_ratio=real,
        hit_ratio_per_tier={t.name: (r if L.prompt_tokens else None) for t, r in zip(state.tiers, L.tier_hit_ratios())},
        single_sequence_hit_ratio=ss, ideal_hit_ratio=ide, sequential_hit_ratio=seq,
        single_sequence_with_decode_hit_ratio=_with_decode(L, ctx),
        gap=_gap(ide, ss, seq, real, ctx.get("oracle_hit_ratio"), L.prompt_tokens,
                 ctx.get("hybrid_baseline_lost_tokens")),
        oracle_hit_ratio=ctx.get("oracle_hit_ratio") if L.prompt_tokens else None,
        requests_with_hit=L.requests_with_hit, requests_truncated=L.requests_truncated,
        requests_waited=L.requests_waited,
        reference_bytes_per_block=_reference_block(ctx),
        tiers=tiers, bytes=_bytes(L, state, tiers, ctx), envelope=envelope, payload_lens=lens,
        engine=ctx.get("engine"), engine_reason=ctx.get("engine_reason"),
        baseline_engine=ctx.get("baseline_engine"), baseline_engine_reason=ctx.get("baseline_engine_reason"),
        threads=ThreadsSummary(**ctx["threads"]) if ctx.get("threads") is not None else None,
        series=series,
        distributions=_distributions(res, ctx, ordered),
        compute=ctx.get("compute"), scheduler=ctx.get("scheduler"), hybrid=_hybrid(res, state, ctx),
    )


def _ratios(L, seq_ledger, single, ideal) -> tuple:
    """(real, sequential, single-sequence, ideal) hit ratios of a run; all None for 0/0 (a trace of 0-token prompts
    only: every token-weighted ratio is undefined, null, docs/semantics.md §12)."""
    if not L.prompt_tokens:
        return (None,) * 4
    return L.hit_ratio, seq_ledger.hit_ratio, single.hit_ratio, ideal.hit_ratio


def _lens(res, tiers: list, envelope, prefill_sum_s: float, ctx: dict):
    """The payload lens of a run (:func:`payload_lens`): the GPU tier's bytes as the deployment gives them, else
    its rows' (whole blocks), the envelope's links, the run's prefill sum (s) and mean TTFT (s)."""
    gpu_bytes = ctx["tier_specs"][0].capacity_bytes
    return payload_lens(ctx["model"], ctx["block_size"], tiers[0].capacity_bytes if gpu_bytes is None else gpu_bytes,
                        envelope.links, prefill_sum_s, float(_values(res.columns["ttft_s"]).mean()),
                        res.ledger.num_requests,
                        None if ctx.get("hybrid") is None else (ctx["hybrid"], ctx["hybrid_alt"]))


def _with_decode(L, ctx: dict) -> float | None:
    """The single-sequence hit ratio with the next turns' decode blocks (``ctx["single_with_decode"]``), when the
    run computed it and has prompt tokens (else None: 0/0 or not computed)."""
    sw = ctx.get("single_with_decode")
    return sw.hit_ratio if sw is not None and L.prompt_tokens else None


def _distributions(res, ctx: dict, ordered: dict):
    """The per-request distributions of a run (:func:`request_distributions` of :data:`_DISTRIBUTION_COLUMNS`,
    the no-cache TTFT when the run has it, ``ordered``: the columns' sorted copies)."""
    no_cache = ctx.get("no_cache_ttft_s")
    return request_distributions({k: _values(res.columns[k]) for k in _DISTRIBUTION_COLUMNS},
                                 None if no_cache is None else _values(no_cache), ordered)


_DISTRIBUTION_COLUMNS = ("ttft_s", "prefill_no_cache_s", "prefill_s", "restore_s", "restored_bytes")


def ordered_columns(columns: dict, no_cache_ttft_ordered: np.ndarray | None = None, run: Any = None) -> dict:
    """Each column the summary reads both a CDF and percentiles of, sorted once
    (:func:`pcs.percentiles.sorted_finite`: its finite values, float64, ascending): ``ttft_s`` and
    ``prefill_no_cache_s`` of the run's ``columns``, and ``no_cache_ttft_s``: the step scheduler's no-cache run's
    TTFT sorted so already (its :class:`pcs.engine.runparts.LatencyParts`), when given. ``run``: the run's own
    :class:`pcs.engine.runparts.RunParts` (made on a worker as its loop closed), whose sorts are taken instead
    of sorting again; or None. Read by :func:`build_summary` (``ctx["ordered"]``), the CDFs
    (:func:`pcs.engine.series.request_distributions`) and the scheduler's TTFT percentiles
    (:func:`pcs.engine.schedstats.scheduler_summary`)."""
    made = {} if run is None else {"ttft_s": run.latency.ttft_ordered,
                                   "prefill_no_cache_s": run.prefill_no_cache_ordered}
    out = {k: made[k] if made.get(k) is not None else sorted_finite(_values(columns[k]))
           for k in ("ttft_s", "prefill_no_cache_s")}
    if no_cache_ttft_ordered is not None:
        out["no_cache_ttft_s"] = no_cache_ttft_ordered
    return out


def warm_up() -> None:
    """Make ready what :func:`build_summary` loads on first use, so that it is not made on the calling thread
    when the summary is built: each record's ``__init__`` (the records of :mod:`pcs.engine.result`,
    :mod:`pcs.engine.schedresult`, :mod:`pcs.engine.series` and this module compile their generated methods on
    first use, :mod:`pcs._dataclass`). Run on a worker thread while the compiled step loop replays without the GIL
    (:meth:`pcs.engine.stepnative.NativeStepEngine.feed`); changes no value, only when the work is done.
    :mod:`pcs.analysis.envelope` is not loaded here: a replay loads it only for a link that restored something
    (tests/cli/test_import_hygiene.py), which is not known at the first feed."""
    from pcs.engine import result, schedresult, series, summary

    for module in (result, schedresult, series, summary):
        for obj in list(vars(module).values()):
            record = isinstance(obj, type) and hasattr(obj, "__dataclass_fields__")
            if record and obj.__module__ == module.__name__:
                getattr(obj, "__init__")        # a record's __init__ compiled now, not at its first use


def _series(res, tiers) -> TimeSeries | None:
    """The run's time series (:func:`pcs.engine.series.series_payload`); None without samples (the fast path)."""
    if res.sampler is None or res.sampler.t0 is None:
        return None
    c = res.columns
    return series_payload(res.sampler, _values(c["prompt_tokens"]), _values(c["hit_tokens"]), _values(c["finish_s"]),
                          [{"name": t.name, "bytes_per_block": t.bytes_per_block,
                            "bytes_per_block_by_component": t.bytes_per_block_by_component,
                            "blocks_unit": t.blocks_unit, "link_bandwidth_bps": t.link_bandwidth_bps} for t in tiers])


def _gap(ide: float | None, ss: float | None, seq: float | None, real: float | None, oracle: float | None,
         prompt_tokens: int, lost: int | None) -> GapSplit:
    """The gap split (docs/semantics.md §12). With an oracle run also capacity and policy; for a hybrid
    model the sequential replay's hits lost to the hybrid rules are a term of their own, taken out of
    capacity_eviction, so the terms still sum to ideal - real. No prompt tokens: every term is null (0/0)."""
    if not prompt_tokens:
        return GapSplit(block_rounding=None, capacity_eviction=None, concurrency=None, capacity=None, policy=None,
                        hybrid_rules=None)
    hyb = None if lost is None else (lost / prompt_tokens if prompt_tokens else 0.0)
    return GapSplit(block_rounding=ide - ss, capacity_eviction=ss - seq - (hyb or 0.0), concurrency=seq - real,
                    capacity=None if oracle is None else ss - oracle,
                    policy=None if oracle is None else oracle - real, hybrid_rules=hyb)


def _hybrid(res, state: CacheState, ctx: dict):
    if state.hybrid is None or ctx.get("hybrid") is None:
        return None
    from pcs.engine.hybridsummary import hybrid_summary

    lost = int(_values(res.columns["hybrid_lost_tokens"]).sum())
    return hybrid_summary(ctx["hybrid"], state.hybrid, lost, ctx.get("full_attention"))
