"""The typed replay summary: what ``pcs.replay(...).summary`` holds and ``pcs replay --format json`` prints.

:class:`ReplaySummary` nests one :class:`TierSummary` per tier, the
:class:`GapSplit`, the :class:`BytesSummary`, the :class:`EnvelopeSummary`
(one :class:`LinkEnvelope` per lower tier) and the :class:`PayloadLens`.
``to_dict()`` gives the JSON object, keys in the order the CLI prints them
(the JSON contract: keys may be added, none renamed or dropped). Units and
meanings are declared per field (:func:`pcs.schema.field`) and listed in
``docs/json.md``. Where each quantity is counted: ``docs/semantics.md`` §11;
the gap split: §12; byte layouts: §13.
"""
from __future__ import annotations

from typing import Any

from pcs.engine.series import RequestDistributions, TimeSeries
from pcs.engine.schedresult import SchedulerSummary
from pcs.schema import bytes_of, common, field, result

__all__ = ["ReplaySummary", "TierSummary", "GapSplit", "BytesSummary", "LinkEnvelope", "EnvelopeSummary",
           "PayloadLens", "HybridSummary", "ThreadsSummary"]


@result
class TierSummary:
    """One tier at the end of a replay: size, layout, hits, restores, writes, evictions, residency."""

    name: str = field("-", "tier name; the first tier is the GPU tier")
    layout: str = field("-", "byte layout of a block in this tier: reserved (GPU) or serialized (lower tiers); "
                             "docs/semantics.md §13")
    policy: str = field("-", "eviction policy's registered name (lru, slru, fifo, ...; the alias protected is written slru)")
    capacity_blocks: int = field("blocks", "slots of the tier")
    capacity_bytes: int = bytes_of("capacity_blocks")
    bytes_per_block: int = field("bytes", "bytes of one block in the tier's layout")
    bytes_per_block_by_component: dict[str, int] = field("bytes", "one block of the model split by KV component "
                                                                  "name: bytes_per_block's, or a hybrid model's "
                                                                  "share of its pages per component, a state once a "
                                                                  "checkpoint (padding left out; docs/semantics.md "
                                                                  "§13.1)")
    link: str | None = field("-", "restore link name (TP links together); null for the GPU tier")
    link_bandwidth_bps: float | None = field("bytes/s", "the link's bandwidth, all TP ranks together; "
                                                        "null for the GPU tier")
    link_setup_s: float | None = field("s", "fixed setup time per restore; null for the GPU tier")
    hit_blocks: int = field("blocks", "prefix-hit blocks served by this tier (a hit counts once, at the highest "
                                      "tier holding the block; docs/semantics.md §3; a hybrid model's at the "
                                      "lowest tier any page the hit reads came from, docs/replay.md)")
    hit_tokens: int = field("tokens", "hit tokens served by this tier (after the last-token cap)")
    restored_blocks: int = field("blocks", "blocks restored from this tier to the GPU (0 for the GPU tier)")
    restored_bytes: int = bytes_of("restored_blocks")
    written_blocks: int = field("blocks", "blocks written into this tier from the tier above (demotions or "
                                          "write-through copies; docs/semantics.md §7)")
    written_bytes: int = bytes_of("written_blocks")
    evicted_blocks: int = field("blocks", "victims the tier's policy chose")
    resident_blocks_end: int = field("blocks", "resident blocks after the last request")
    resident_bytes_end: int = bytes_of("resident_blocks_end")
    resident_bytes_end_by_component: dict[str, int] = field("bytes", "resident_bytes_end by KV component")
    resident_blocks_peak: int = field("blocks", "most blocks resident at once")
    resident_bytes_peak: int = bytes_of("resident_blocks_peak")
    resident_bytes_peak_by_component: dict[str, int] = field("bytes", "resident_bytes_peak by KV component: the "
                                                                      "components at the tier's peak (a hybrid "
                                                                      "model's own peak per component: "
                                                                      "hybrid.own_peak_bytes_by_component)")
    protected_share: float | None = field("ratio", "protected segment share of the tier (slru only)",
                                          omit_none=True, default=None)
    admission: str | None = field("-", "the tier's admission policies, KIND[:ARGS] joined by + (--admit; "
                                       "docs/semantics.md §8)", omit_none=True, default=None)
    refused_blocks: int | None = field("blocks", "blocks offered to the tier that its admission refused (with "
                                                 "--admit)", omit_none=True, default=None)
    blocks_unit: str = field("-", "what this tier's capacity_blocks, resident_blocks_* and bytes_per_block count: "
                                  "block (the trace's block), or page (a hybrid model's KV page of the shared "
                                  "pool; docs/hybrid.md)", default="block")


@result
class ThreadsSummary:
    """Whether a replay's side work (the no-cache twin, the one-pass scan, the sequential baseline, the read-ahead)
    ran on worker threads (``PCS_THREADS``, :mod:`pcs.beside`); the numbers are the same either way."""

    mode: str = field("-", "the mode asked: PCS_THREADS auto (unset), on or off")
    used: bool = field("-", "the side work was handed to worker threads (a part whose loop keeps the GIL, or "
                            "one the system could start no thread for, runs inline all the same); false: every "
                            "part ran on the calling thread")
    reason: str = field("-", "the rule that decided it (auto: inline for a small trace file -- text under "
                             "2,000,000 bytes, pcs.beside.INLINE_BELOW_BYTES; Parquet under 200,000 block hashes, "
                             "INLINE_BELOW_PARQUET_IDS -- or on one CPU; else worker threads, also for a gzip file "
                             "and a trace in memory, as each instance's sub-trace of a fleet)")


@result
class GapSplit:
    """Why the real hit ratio is below the ideal one: three terms that sum to ideal - real (docs/semantics.md §12);
    all null when the run has no prompt tokens (0/0)."""

    block_rounding: float | None = field("ratio", "ideal - single-sequence: full blocks only and the last-token cap")
    capacity_eviction: float | None = field("ratio", "single-sequence - sequential: finite tiers and their evictions")
    concurrency: float | None = field("ratio", "sequential - real: prefixes in flight and space held by running requests "
                                        "(0 in sequential timing; < 0 when the run was luckier)")
    capacity: float | None = field("ratio", "single-sequence - oracle: what the tiers' size costs even under the "
                                            "Belady oracle (with --gap-oracle; capacity + policy = single-sequence "
                                            "- real)", omit_none=True, default=None)
    policy: float | None = field("ratio", "oracle - real: what the eviction and admission policies cost against "
                                          "the Belady oracle on the same tiers (with --gap-oracle)",
                                 omit_none=True, default=None)
    hybrid_rules: float | None = field("ratio", "hybrid models only: hits of the sequential replay (not this "
                                                "run: its own are hybrid.lost_tokens) lost to a missing state "
                                                "checkpoint or an evicted window block (the other "
                                                "groups' rules refused what full attention held); taken out of "
                                                "capacity_eviction (docs/semantics.md §12)",
                                       omit_none=True, default=None)


@result
class BytesSummary:
    """Byte totals of a replay: restored, written, recomputed, dropped, peak reserved (docs/semantics.md §13)."""

    restored_bytes: int = field("bytes", "bytes restored to the GPU from all lower tiers", key="restored")
    restored_per_link: dict[str, int] = field("bytes", "restored bytes per lower tier name")
    written_per_tier: dict[str, int] = field("bytes", "bytes written into each lower tier")
    recomputed_tokens: int = field("tokens", "prompt tokens prefilled (not served from the cache)")
    recomputed_bytes: int = field("bytes", "recomputed_tokens x reference (payload) bytes per token")
    dropped_blocks: int = field("blocks", "blocks evicted from the last tier (no copy left)")
    peak_reserved_blocks: int = field("blocks", "most GPU blocks pinned or reserved by running requests at once")
    peak_reserved_bytes: int = field("bytes", "peak_reserved_blocks x the GPU tier's bytes per block")


@result
class LinkEnvelope:
    """Restores over one lower tier's link, beside the prefill they saved (docs/semantics.md §10)."""

    tier: str = field("-", "the lower tier restored from")
    link: str = field("-", "link name (TP links together)")
    bandwidth_bps: float = field("bytes/s", "link bandwidth, all TP ranks together")
    setup_s: float = field("s", "fixed setup time per restore")
    restores: int = field("count", "restores over this link (one per request that restored from the tier)")
    restored_blocks: int = field("blocks", "blocks restored over this link")
    restored_bytes: int = field("bytes", "bytes restored over this link")
    restore_s: float = field("s", "total restore time, queueing included")
    transfer_s: float = field("s", "total transfer time (setup + bytes / bandwidth), no queueing")
    queue_s: float = field("s", "restore_s - transfer_s: time waiting for the link (clamped at 0: rounding)")
    prefill_saved_s: float = field("s", "prefill time the restored hits saved (full - remaining prefill, clamped at 0)")
    restores_slower_than_recompute: int = field("count", "restores that took longer than the prefill they saved")
    share_slower: float | None = field("ratio", "restores_slower_than_recompute / restores; null without restores")
    blocks_slower_than_recompute: int = field("blocks", "blocks of the restores slower than recompute")
    break_even_bps: float | None = field("bytes/s", "bandwidth at which restoring equals recomputing over the run "
                                                    "(restored bytes / (full - remaining prefill - setup)); "
                                                    "null without restores")
    break_even_bps_per_gpu: float | None = field("bytes/s", "break_even_bps / TP: what each GPU's own link must "
                                                            "carry (links and --link are per GPU); null without "
                                                            "restores")


@result
class EnvelopeSummary:
    """The bandwidth envelope of a replay: per-link restores and the TTFT / wait percentiles."""

    links: tuple[LinkEnvelope, ...] = field("-", "one entry per lower tier, in tier order")
    ttft_p50_s: float | None = field("s", "median time to first token with the cache")
    ttft_p99_s: float | None = field("s", "99th percentile TTFT with the cache")
    ttft_no_cache_alone_p50_s: float | None = field("s", "median TTFT without a cache, not scheduled: each request's full "
                                                   "prefill alone (no queue, no wait); under the step scheduler the "
                                                   "like-for-like figure is scheduler.no_cache.ttft_s.p50")
    ttft_no_cache_alone_p99_s: float | None = field("s", "99th percentile TTFT without a cache, not scheduled (each prefill "
                                                   "alone); scheduled: scheduler.no_cache.ttft_s.p99")
    wait_p50_s: float | None = field("s", "median wait for KV space (FIFO admission)")
    wait_p99_s: float | None = field("s", "99th percentile wait for KV space")
    prefill_saved_s: float = field("s", "prefill time all hits saved: no-cache prefill - prefill, summed (clamped at 0)")


@result
class PayloadLens:
    """The run's KV dtype beside another, hits held fixed (:mod:`pcs.engine.lens`).

    Each pair is ``[run, alternative]``.
    """

    dtype: str = field("-", "the run's KV dtype")
    alt_dtype: str = field("-", "the compared dtype: fp8 for a 16/32-bit run, else bf16")
    layout: str = field("-", "the run's KV layout as --dtype names it (fp8_per_token_head, nvfp4 ...; "
                             "the text's column name)")
    reference_bytes_per_block: tuple[int, int] = field("bytes", "payload (reference layout) bytes per block; a "
                                                              "hybrid model's: its components' share of the block's "
                                                              "pages, a state once a checkpoint")
    gpu_bytes_per_block: tuple[int, int] = field("bytes", "GPU (reserved layout) bytes per block; a hybrid "
                                                        "model's: pages per block x page bytes (padding included)")
    lower_bytes_per_block: tuple[int, int] = field("bytes", "lower-tier (serialized layout) bytes per block (the "
                                                          "first lower tier's; hybrid: its pages per block x page "
                                                          "bytes, with no lower tier the GPU's pages)")
    gpu_capacity_blocks: tuple[int, int] = field("blocks", "whole blocks the GPU tier holds (hybrid: its "
                                                        "pages // pages per block)")
    restored_bytes: tuple[int, int] = field("bytes", "bytes of the run's restores (the run's: bytes.restored)")
    restore_transfer_s: tuple[float, float] = field("s", "their transfer time: restores x setup + "
                                                         "blocks x bytes / bandwidth (no queueing)")
    prefill_s: tuple[float, float] = field("s", "prefill of the missed tokens (does not depend on the dtype)")
    ttft_mean_s: tuple[float, float] = field("s", "mean TTFT; the alternative's moves only by the restore time "
                                                  "saved per request")


@result
class HybridSummary:
    """A hybrid model's cache groups, pools and residency per component (docs/semantics.md §3.1, §13.1).

    Byte figures split a group's pages by component; ``page_padding`` is what vLLM's uniform page
    size wastes (pages x page bytes - the components' bytes), so each tier's figures add up to its total.
    """

    manager: str = field("-", "hybrid_kv_cache_manager: vllm (one shared pool, uniform page size) or sglang "
                              "(one pool per group)")
    groups: tuple[dict[str, Any], ...] = field("-", "cache groups: name, rule (full, window, chunk, state), "
                                                    "components, layers, span_tokens (W, C or the checkpoint "
                                                    "interval), pages_per_block (a state group: pages per "
                                                    "checkpoint; a block of the model takes ceil(pages / "
                                                    "blocks between checkpoints)), pool")
    layer_group_size: int | None = field("count", "vLLM: layers per page (null for sglang)")
    hybrid_block_size: int | None = field("tokens", "vLLM's hybrid block size for a model with a state (null "
                                                    "otherwise)")
    checkpoint_tokens: int | None = field("tokens", "state checkpoint interval of the replay (null without a "
                                                    "state group)")
    pools: dict[str, tuple[dict[str, Any], ...]] = field("-", "per tier, its pools: name, capacity_pages, "
                                                              "page_bytes")
    lost_tokens: int = field("tokens", "hit tokens of this run (its own timing; the sequential replay's "
                                               "share is gap.hybrid_rules) lost to the hybrid rules (group 0 held them, another group's "
                                               "rule refused them), counted at each request's lookup, before a "
                                               "truncation cuts its hits (docs/semantics.md §5)")
    restored_bytes_by_component: dict[str, dict[str, int]] = field(
        "bytes", "per lower tier, bytes restored over its link by component")
    written_bytes_by_component: dict[str, dict[str, int]] = field(
        "bytes", "per lower tier, bytes written into it (demoted or written through) by component")
    resident_bytes_peak_by_component: dict[str, dict[str, int]] = field(
        "bytes", "per tier, each component's own most bytes resident at once (its own peak, at any time; "
                 "tiers[].resident_bytes_peak_by_component is the components at the tier's peak)",
        key="own_peak_bytes_by_component")
    series: dict[str, Any] = field("-", "replay-resident bytes over simulated time: step_s, and per tier t_s, "
                                        "kind (step: every step_s; peak: the tier's peak) and bytes per "
                                        "component")
    full_attention: dict[str, Any] | None = field(
        "-", "the same run with every layer as full attention: hit_ratio, hit_ratio_per_tier, "
             "sequential_hit_ratio, engine, and per tier capacity_blocks, resident_bytes_peak and "
             "resident_bytes_peak_by_component; beside them page_padding_bytes_peak {tier: bytes}, this run's "
             "page padding at the tier's peak: the difference from this run includes the capacity it takes, "
             "which the gap counts under capacity_eviction, not hybrid_rules (docs/replay.md)",
        omit_none=True, default=None)
    mamba_cache_mode: str | None = field(
        "-", "--mamba-cache-mode of a model with a state group: all (a state saved at every checkpoint a request "
             "computes) or align (only at its last one; docs/semantics.md §3.1); absent without a state group",
        omit_none=True, default=None)


@result
class ReplaySummary:
    """Everything ``pcs replay`` reports about one run (the JSON object of ``--format json``).

    Hit ratios are token-weighted: hit tokens / prompt tokens
    (docs/semantics.md §11). ``hit_ratio_per_tier`` sums to ``hit_ratio``;
    the gap terms sum to ``ideal_hit_ratio - hit_ratio``.
    """

    trace: str = common()
    model: str = common()
    kv_dtype: str = field("-", "KV cache dtype of the run, by its layout's one name (--dtype fp4 and nvfp4 -> "
                               "nvfp4, int8 -> int8_per_token_head; docs/models.md)")
    gpu: str = field("-", "GPU preset name")
    tp: int = field("count", "tensor-parallel size (GPUs per instance)")
    block_size: int = common()
    timing: str = field("-", "modeled or sequential (docs/semantics.md §9)")
    policy: str = field("-", "eviction policy of the run, its registered name and options (tiers may override it; see "
                                "tiers[].policy)")
    write_policy: str = field("-", "back or through (docs/semantics.md §7)")
    cache_partial_blocks: bool = field("-", "the partial last block of a prompt is cached too (docs/semantics.md §2)")
    recompute_last_token: bool = field("-", "hits are capped at prompt_len - 1 tokens (docs/semantics.md §4)")
    requests: int = field("count", "requests replayed")
    prompt_tokens: int = field("tokens", "sum of prompt tokens")
    hit_tokens: int = field("tokens", "sum of hit tokens (after the last-token cap)")
    block_accesses: int = field("blocks", "block lookups: sum over requests of their blocks")
    cacheable_blocks: int = field("blocks", "blocks the cache may hold under the block rules")
    hit_blocks: int = field("blocks", "prefix-hit blocks")
    block_misses: int = field("blocks", "cacheable blocks outside the usable prefix (docs/replay.md, missed blocks)")
    hit_ratio: float | None = field("ratio", "real hit ratio of this run: hit_tokens / prompt_tokens; this and every "
                                             "ratio over prompt tokens (per tier, single-sequence, ideal, sequential, "
                                             "the gap terms) null when prompt_tokens is 0 (0/0)")
    hit_ratio_per_tier: dict[str, float | None] = field("ratio", "hit ratio by the tier that served the hit")
    single_sequence_hit_ratio: float | None = field("ratio", "infinite cache, same block rules (not what a finite "
                                                      "cache reaches)")
    ideal_hit_ratio: float | None = field("ratio", "infinite cache, partial blocks cached, no last-token cap")
    sequential_hit_ratio: float | None = field("ratio", "sequential replay through the same tiers")
    gap: GapSplit = field("-", "the gap split, ideal - real by cause")
    requests_with_hit: int = field("count", "requests with at least one hit token")
    requests_truncated: int = field("count", "requests larger than the GPU tier (docs/semantics.md §5)")
    requests_waited: int = field("count", "requests that waited for KV space")
    reference_bytes_per_block: int = field("bytes", "payload (reference layout) bytes per block; a hybrid "
                                                   "model's: its components' share of the block's pages, a state "
                                                   "once a checkpoint (docs/semantics.md §13.1)")
    tiers: tuple[TierSummary, ...] = field("-", "one entry per tier, GPU first")
    bytes: BytesSummary = field("-", "byte totals")
    envelope: EnvelopeSummary = field("-", "restore vs recompute per link, TTFT and wait percentiles")
    payload_lens: PayloadLens = field("-", "the run's KV dtype beside another, hits held fixed")
    notes: tuple[str, ...] = field("-", "notes on defaults used, the GPU tier's derivation, the KV layout and TP "
                                        "placement (printed to stderr by the CLI)", default=())
    deployment: dict[str, Any] | None = field(
        "-", "how the GPU tier was sized: the pcs.model.deploy.Deployment fields (bytes, GB/s as named there), "
             "gpu_tier_from (deployment or --tier), layout, tp_group, assumptions (docs/models.md)",
        omit_none=True, default=None)
    series: TimeSeries | None = field("-", "the run over simulated time at a fixed step, at most 512 samples "
                                           "(docs/semantics.md §11)", omit_none=True, default=None)
    distributions: RequestDistributions | None = field("-", "TTFT CDFs with and without the cache, restore vs "
                                                            "recompute per request (bounded)",
                                                       omit_none=True, default=None)
    compute: str | None = field("-", "modeled timing's compute: step (the step scheduler) or infinite (every "
                                     "prefill at full speed at once); absent in sequential timing "
                                     "(docs/semantics.md §9)", omit_none=True, default=None)
    scheduler: SchedulerSummary | None = field("-", "the step scheduler's settings, latencies with and without "
                                                    "the cache, load, preemptions and restores (compute step)",
                                               omit_none=True, default=None)
    engine: str | None = field("-", "which engine ran the replay: lru-scan, compiled-step, compiled-hierarchy, reference, "
                                    "compiled-hybrid or hybrid "
                                    "(docs/semantics.md §15)", omit_none=True, default=None)
    engine_reason: str | None = field("-", "why the engine-selection table chose it", omit_none=True, default=None)
    baseline_engine: str | None = field("-", "which engine ran the sequential baseline of the gap split",
                                        omit_none=True, default=None)
    baseline_engine_reason: str | None = field("-", "why the engine-selection table chose it", omit_none=True,
                                               default=None)
    threads: ThreadsSummary | None = field("-", "whether the side work ran on worker threads and why (PCS_THREADS; "
                                                "the numbers are the same either way)", omit_none=True, default=None)
    oracle_hit_ratio: float | None = field("ratio", "the same tiers and timing with every tier's policy the "
                                                    "Belady oracle, no admission (--gap-oracle; docs/semantics.md "
                                                    "§12)", omit_none=True, default=None)
    single_sequence_with_decode_hit_ratio: float | None = field(
        "ratio", "the single-sequence hit ratio with each request's cached decode blocks seen after it: the "
                 "ceiling of a run that caches the next turns' decode blocks (step scheduler; absent when none "
                 "are cached; docs/semantics.md §12, §17)", omit_none=True, default=None)
    hybrid: HybridSummary | None = field("-", "a hybrid model's cache groups, pools and residency per component "
                                              "(absent for other models)", omit_none=True, default=None)
    model_file: str | None = field("-", "the config file the model was read from (--model PATH.json), as given; "
                                        "absent for a preset (model is then the preset's name)",
                                   omit_none=True, default=None)
