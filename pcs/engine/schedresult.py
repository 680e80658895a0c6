"""The step scheduler's part of the replay summary (``ReplaySummary.scheduler``; ``docs/json.md``).

Built by :func:`pcs.engine.schedstats.scheduler_summary`; the rules behind
each number: ``docs/semantics.md §9`` (the scheduler), §10 (restores, the
envelope), §11 (where each is counted), and ``docs/scheduler.md``.
"""
from __future__ import annotations

from pcs.schema import field, result
from pcs.units import format_count

__all__ = ["Percentiles", "LatencySummary", "SchedulerSummary", "SATURATED", "SATURATION_NOTE_START", "saturation_note"]

#: Busy share at or above which a utilisation bin counts as saturated.
SATURATED = 0.99


@result
class Percentiles:
    """50th, 90th and 99th percentile of a per-request time (null without a value)."""

    p50: float | None = field("s", "median")
    p90: float | None = field("s", "90th percentile")
    p99: float | None = field("s", "99th percentile")


@result
class LatencySummary:
    """Latency, load and goodput of one step-scheduler run (with the cache, or the no-cache baseline)."""

    ttft_s: Percentiles = field("-", "time to first token: arrival to the end of the step finishing the prefill")
    tpot_s: Percentiles = field("-", "time per output token after the first: (finish - first token) / "
                                     "(output_tokens - 1), requests with >= 2 output tokens")
    e2e_s: Percentiles = field("-", "end-to-end latency: arrival to the last token")
    makespan_s: float = field("s", "first arrival to the last finish")
    busy_s: float = field("s", "sum of step times (the instance computing, or stalled on a layer-wise restore)")
    utilisation: float | None = field("ratio", "busy_s / makespan_s (one instance runs one step at a time: <= 1)")
    preemptions: int = field("count", "preemptions (a request may be preempted more than once)")
    slo_met: int | None = field("count", "requests with TTFT <= ttft_slo_s", omit_none=True, default=None)
    slo_met_share: float | None = field("ratio", "slo_met / requests", omit_none=True, default=None)
    goodput_rps: float | None = field("1/s", "slo_met / makespan_s", omit_none=True, default=None)


@result
class SchedulerSummary:
    """The step scheduler's settings, latencies with and without the cache, load, preemptions, restores."""

    max_num_batched_tokens: int = field("tokens", "token budget of one step (vLLM max_num_batched_tokens)")
    max_num_seqs: int = field("count", "running requests at most (vLLM max_num_seqs)")
    restore_policy: str = field("-", "layerwise, wait or best-effort (docs/semantics.md §10)")
    restore_fallback: bool = field("-", "restores the envelope says lose are recomputed")
    restore_timeout_s: float = field("s", "best-effort: fixed part of the wait for a restore")
    restore_timeout_per_token_s: float = field("s", "best-effort: wait per restored token")
    cache_decode_blocks: bool = field("-", "output blocks cached under the next turn's ids (docs/semantics.md §9)")
    max_preemptions: int = field("count", "preemptions after which a request is admitted with all its blocks")
    cache_blocks_at: str = field("-", "when computed blocks become hits: prefill-done, scheduled or chunk-done (§9)")
    ttft_slo_s: float | None = field("s", "TTFT target of the goodput figures; null = none")
    steps: int = field("count", "steps run")
    prefill_steps: int = field("count", "steps with at least one prefill chunk")
    stall_s: float = field("s", "time steps waited for layer-wise restores (part of busy_s)")
    with_cache: LatencySummary = field("-", "this run")
    no_cache: LatencySummary | None = field("-", "the same trace and instance with no prefix cache (every prompt "
                                                 "computed); null when not run", omit_none=True)
    utilisation_bin_s: int = field("s", "width of the utilisation_over_time bins")
    utilisation_over_time: tuple[float, ...] = field("ratio", "busy share of each bin from the first arrival")
    mean_in_system: float | None = field("count", "time-average of the requests arrived and not finished "
                                                  "(Little's law: = sum of e2e / makespan)")
    requests_preempted: int = field("count", "requests preempted at least once")
    max_preemptions_of_a_request: int = field("count", "most preemptions of one request")
    preempted_recompute_tokens: int = field("tokens", "tokens prefilled again after preemptions (waste; the "
                                                      "hit ratio counts each prompt once, at its first admission)")
    restores_considered: int = field("count", "first and later admissions with lower-tier hits to restore")
    restores_losing: int = field("count", "of those, restores slower (link queue included) than the prefill "
                                          "their hits save")
    share_losing: float | None = field("ratio", "restores_losing / restores_considered; null without restores")
    restores_skipped: int = field("count", "losing restores recomputed instead (fallback)")
    restore_timeouts: int = field("count", "best-effort restores cut at their deadline")
    decode_blocks_cached: int = field("blocks", "output blocks cached under the next turn's ids")
    wait_kv_s: Percentiles = field("-", "queue wait while the queue's head lacked KV space (the wait_s column)")
    wait_compute_s: Percentiles = field("-", "the rest of TTFT before the first token that is not KV wait, "
                                             "exposed restore or own prefill steps: step budget, other requests "
                                             "first, stalls, re-queueing")
    wait_link_s: Percentiles = field("-", "wait for the link before a restore's transfer (part of restore_s)")
    exposed_restore_s_total: float = field("s", "restore time that delayed first tokens, summed")


#: How :func:`saturation_note` begins (a note about one replay's instance, not the trace): compare leads it with the
#: variants it describes, fleet reads its counts back.
SATURATION_NOTE_START = "the instance was busy >= 99 % in "


def saturation_note(utilisation_over_time, bin_s: float) -> str | None:
    """The note of a replay whose instance was saturated, else None.

    Saturated: at least half of the ``utilisation_over_time`` bins (busy share
    per ``bin_s`` seconds, floats in [0, 1]) are busy >= :data:`SATURATED`. The
    traffic then exceeds one instance's compute and TTFT is mostly queueing
    (docs/scheduler.md), which the reader should know before reading any TTFT.
    Counts and a whole bin width carry thousands separators (:func:`pcs.units.format_count`).
    """
    bins = list(utilisation_over_time)
    full = sum(1 for u in bins if u >= SATURATED)
    if not bins or full < 0.5 * len(bins):
        return None
    width = format_count(bin_s) if float(bin_s).is_integer() else f"{bin_s:g}"     # 1,800-s as pcs writes counts
    return (f"{SATURATION_NOTE_START}{format_count(full)} of {format_count(len(bins))} {width}-s bins: "
            "the traffic exceeds one "
            "instance's compute, so TTFT is mostly queueing (pcs replay's Compute section splits the wait); a larger "
            "deployment (--instances N --router cache-aware: round-robin splits the shared prefixes), a smaller "
            "model or --compute infinite (no compute limit) answers the cache question apart from the load")
