"""The typed fleet summary: what ``pcs.fleet_replay(...).summary`` holds and ``pcs replay --instances N`` prints.

Per-instance load and hit ratio, the load imbalance, TTFT percentiles over
the whole fleet and the fleet gap split (docs/semantics.md §17): reuse that
exists in the fleet's traffic (the single-sequence ceiling of the whole
trace) >= reuse the routing captured (each instance's own sub-trace
ceiling, summed) >= reuse delivered (the real hits). Keys in docs/json.md.
"""
from __future__ import annotations

from pcs.engine.result import ReplaySummary, ThreadsSummary
from pcs.schema import bytes_of, common, field, result

__all__ = ["FleetSummary", "FleetGap", "InstanceLoad", "SharedTierSummary", "InstanceTierHits"]


@result
class FleetGap:
    """Where the fleet's reuse goes: ceiling >= captured >= delivered (token-weighted hit ratios)."""

    fleet_ceiling_hit_ratio: float | None = field("ratio", "single-sequence hit ratio of the whole trace (one infinite "
                                                    "cache seeing every request; docs/semantics.md §12); prompt "
                                                    "blocks only (ceiling_with_decode false) it is the trace's alone; "
                                                    "when the instances cache decode blocks, each request's output "
                                                    "blocks count as seen after it under the ids of its next turn in "
                                                    "the whole trace and in its instance's sub-trace (so that ceiling "
                                                    ">= captured per request, §17): then it can differ slightly with "
                                                    "the instance count and router")
    captured_hit_ratio: float | None = field("ratio", "each instance's single-sequence hit tokens on its own sub-trace "
                                               "(with the output blocks its step scheduler caches), summed, / the "
                                               "fleet's prompt tokens; with a shared tier the fleet ceiling "
                                               "(every instance reads what any instance wrote)")
    delivered_hit_ratio: float | None = field("ratio", "real hit tokens of all instances / the fleet's prompt tokens")
    lost_to_routing: float | None = field("ratio", "fleet_ceiling_hit_ratio - captured_hit_ratio: reuse split across "
                                            "instances by the router")
    lost_in_instances: float | None = field("ratio", "captured_hit_ratio - delivered_hit_ratio: finite tiers and "
                                              "concurrency inside the instances (>= 0, preemptions included, "
                                              "docs/semantics.md §17)")
    ceiling_with_decode: bool = field("-", "whether fleet_ceiling_hit_ratio counts the next turns' decode blocks "
                                           "(the instances cache them: the step scheduler); false: prompt blocks "
                                           "only", default=False)


@result
class InstanceLoad:
    """One instance of the fleet: what the router sent it and what it delivered."""

    instance: int = common()
    requests: int = field("count", "requests routed to the instance")
    prompt_tokens: int = field("tokens", "their prompt tokens")
    hit_tokens: int = field("tokens", "their hit tokens (real)")
    hit_ratio: float | None = field("ratio", "hit_tokens / prompt_tokens; null for an idle instance or one with no "
                                             "prompt tokens (0/0)")
    ceiling_hit_tokens: int = field("tokens", "single-sequence hit tokens of the instance's sub-trace (one "
                                              "infinite cache seeing only its requests, and the output blocks its "
                                              "step scheduler caches)")
    ceiling_hit_ratio: float | None = field("ratio", "ceiling_hit_tokens / prompt_tokens")
    busy_s: float | None = field("s", "sum of the instance's step times (compute step); null otherwise")
    ttft_p50_s: float | None = field("s", "median TTFT of the instance's requests (--timing sequential: "
                                                "no queue, as a replay's envelope.ttft_p50_s)")
    ttft_p99_s: float | None = field("s", "99th percentile TTFT of the instance's requests")
    index_blocks_end: int = field("blocks", "ids in the router's index of the instance at the end (<= "
                                            "index_capacity_blocks)")


@result
class InstanceTierHits:
    """One instance of a fleet with a shared tier: its hits by tier, the shared tier last."""

    instance: int = common()
    tiers: tuple[str, ...] = field("-", "tier names, GPU first, the shared tier last")
    hit_tokens: tuple[int, ...] = field("tokens", "hit tokens served by each tier (each hit counted at the "
                                                  "highest tier holding it, docs/semantics.md §3)")
    shared_read_bytes: int = field("bytes", "bytes the instance restored from the shared tier over its own link")
    shared_written_blocks: int = field("blocks", "blocks the instance wrote into the shared tier (new there)")


@result
class SharedTierSummary:
    """The fleet's shared lower tier (``--shared-tier NAME=SIZE``, docs/semantics.md §17.1)."""

    name: str = field("-", "tier name")
    capacity_blocks: int = field("blocks", "slots of the shared tier (one tier for the whole fleet)")
    capacity_bytes: int = bytes_of("capacity_blocks")
    bytes_per_block: int = field("bytes", "bytes of one block in the tier (serialized layout, docs/semantics.md §13)")
    policy: str = field("-", "its eviction policy")
    write_policy: str = field("-", "back: an instance writes the blocks its lowest private tier evicts; through: "
                                   "every block an instance computes")
    link: str = field("-", "the link of each instance to the shared tier (one per instance)")
    hit_tokens: int = field("tokens", "hit tokens served by the shared tier, all instances")
    hit_ratio: float | None = field("ratio", "hit_tokens / the fleet's prompt tokens (null when 0: 0/0)")
    read_blocks: int = field("blocks", "blocks restored from the shared tier, all instances")
    read_bytes: int = bytes_of("read_blocks")
    written_blocks: int = field("blocks", "blocks written into the shared tier (new there), all instances")
    written_bytes: int = bytes_of("written_blocks")
    evicted_blocks: int = field("blocks", "blocks the shared tier evicted (dropped: it is the lowest tier)")
    peak_resident_blocks: int = field("blocks", "most blocks resident at once (<= capacity_blocks)")
    peak_resident_bytes: int = bytes_of("peak_resident_blocks")
    lease_spared_blocks: int = field("count", "times a block under a restore's lease came up as a victim and was "
                                              "kept (docs/semantics.md §17.1)")
    routing_captured_hit_ratio: float | None = field("ratio", "each instance's single-sequence hits on its own sub-trace, "
                                                       "summed, / prompt tokens: what routing alone captures "
                                                       "(the fleet's captured_hit_ratio without a shared tier)")
    per_instance: tuple[InstanceTierHits, ...] = field("-", "hits by tier of every instance, in index order")
    engine: str = field("-", "the engine every instance ran on (pcs/engine/select.py: a shared tier runs the "
                             "reference hierarchies)")
    engine_reason: str = field("-", "why that engine (the selection table's reason, as a replay's engine_reason)")
    threads: ThreadsSummary | None = field("-", "whether the run's side work ran on worker threads and why (as a "
                                                "replay's threads: PCS_THREADS; the numbers are the same either "
                                                "way)", omit_none=True, default=None)


@result
class FleetSummary:
    """Everything ``pcs replay --instances N`` reports (the JSON object of ``--format json``)."""

    trace: str = common()
    instances: int = field("count", "instances in the fleet, each with the tiers of one replay")
    router: str = field("-", "router name and options (pcs.fleet.routers)")
    router_source: str = field("-", "where the router's rule comes from")
    router_stale_s: float = field("s", "delay between a cache event and the router seeing it (0 = exact view; 0 "
                                          "for a router that reads no cache index)")
    index_capacity_blocks: int = field("blocks", "slots of the router's index per instance: the instance's "
                                                 "tiers' blocks together")
    requests: int = field("count", "requests of the trace (= the sum over instances)")
    prompt_tokens: int = field("tokens", "sum of prompt tokens")
    hit_tokens: int = field("tokens", "sum of real hit tokens over instances")
    hit_ratio: float | None = field("ratio", "hit_tokens / prompt_tokens (= gap.delivered_hit_ratio); this and the "
                                             "gap's ratios null when prompt_tokens is 0 (0/0)")
    gap: FleetGap = field("-", "the fleet gap split: ceiling >= captured >= delivered")
    imbalance_requests: float = field("ratio", "max / mean requests per instance (1 = even; >= 1)")
    imbalance_prompt_tokens: float = field("ratio", "max / mean prompt tokens per instance")
    imbalance_busy_s: float | None = field("ratio", "max / mean busy_s per instance (compute step); null otherwise")
    ttft_p50_s: float | None = field("s", "median TTFT over every request of the fleet (--timing "
                                                "sequential: no queue, as a replay's envelope.ttft_p50_s)")
    ttft_p99_s: float | None = field("s", "99th percentile TTFT over every request of the fleet")
    per_instance: tuple[InstanceLoad, ...] = field("-", "one entry per instance, in index order")
    instance_summaries: tuple[ReplaySummary | None, ...] = field(
        "-", "each instance's full replay summary (keys as pcs replay's); null for an idle instance, "
        "and for every instance of a run with --shared-tier (the notes say why)")
    notes: tuple[str, ...] = field("-", "notes on the run (printed to stderr by the CLI)", default=())
    engines: tuple[str, ...] = field("-", "the engines the instances ran on, each once, in instance order (as a "
                                          "replay's engine: instance_summaries[i].engine and engine_reason say "
                                          "which and why; with --shared-tier, shared_tier.engine); empty when no "
                                          "instance ran", default=())
    shared_tier: SharedTierSummary | None = field("-", "the shared lower tier (--shared-tier); absent without one",
                                                  omit_none=True, default=None)
    model: str | None = field("-", "model preset name every instance serves (as a replay's model)", omit_none=True,
                              default=None)
    kv_dtype: str | None = field("-", "KV cache dtype of every instance (as a replay's kv_dtype)", omit_none=True,
                                 default=None)
    gpu: str | None = field("-", "GPU of every instance (as a replay's gpu)", omit_none=True, default=None)
    tp: int | None = field("count", "tensor-parallel ranks of every instance (as a replay's tp)", omit_none=True,
                           default=None)
    block_size: int | None = field("tokens", "tokens per block", omit_none=True, default=None)
