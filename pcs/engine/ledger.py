"""Replay counters: hits per tier, misses, restores per link, in blocks, tokens, bytes and seconds.

Mutable dataclasses with :meth:`merge` so sweeps and split runs add up. Bytes are derived from block counts times the bytes
per block of the tier's layout only when a summary is built, so the hot loop
counts blocks.
"""
from __future__ import annotations

from dataclasses import field

from pcs.counters import Counters, merge_counters
from pcs._dataclass import dataclass

__all__ = ["LinkLedger", "ReplayLedger"]


@dataclass(slots=True)
class LinkLedger(Counters):
    """Restores over the link from one lower tier up to the GPU tier.

    Attributes:
        restores: requests that restored at least one block over this link.
        restored_blocks: blocks restored (lower-tier hit blocks).
        restored_bytes: ``restored_blocks`` x the tier's bytes per block.
        restore_s: sum over restores of (end of transfer - admission),
            queueing on the FIFO link included, seconds.
        transfer_s: sum of setup + bytes / bandwidth (no queueing), seconds.
        overhead_s: sum of the per-transfer setup, seconds.
        full_prefill_s: sum of the prefill each restoring request would need
            without this tier's hits, seconds.
        remaining_prefill_s: sum of the prefill left with them, seconds.
        slower_restores: restores that took longer than the prefill they saved.
        slower_blocks: blocks of those restores.
    """

    restores: int = 0
    restored_blocks: int = 0
    restored_bytes: int = 0
    restore_s: float = 0.0
    transfer_s: float = 0.0
    overhead_s: float = 0.0
    full_prefill_s: float = 0.0
    remaining_prefill_s: float = 0.0
    slower_restores: int = 0
    slower_blocks: int = 0


@dataclass(slots=True)
class ReplayLedger:
    """Whole-run counters of one replay.

    Attributes:
        num_requests: requests replayed.
        prompt_tokens: sum of prompt tokens.
        hit_tokens: sum of hit tokens (token-weighted hit ratio numerator).
        hit_blocks: sum of hit blocks.
        block_accesses: sum of block hashes in the trace (partial blocks included).
        cacheable_blocks: sum of cacheable blocks (``BlockRules``).
        block_misses: sum of cacheable blocks after the prefix hit
            (``cacheable_blocks - prefix_hit_blocks``; the count compared with libCacheSim).
        computed_tokens: prompt tokens prefilled (prompt - hit tokens).
        requests_with_hit: requests with at least one hit block.
        requests_truncated: requests that could not get all their GPU slots.
        requests_waited: requests that waited for KV space (modeled timing).
        tier_hit_blocks: hit blocks per tier (GPU first).
        tier_hit_tokens: hit tokens per tier; sums to ``hit_tokens``.
        links: restores per tier (index 0, the GPU tier, stays empty).
        peak_reserved_blocks: most GPU slots held by running requests at once
            (pinned blocks plus reserved slots).
    """

    num_tiers: int = 1
    num_requests: int = 0
    prompt_tokens: int = 0
    hit_tokens: int = 0
    hit_blocks: int = 0
    block_accesses: int = 0
    cacheable_blocks: int = 0
    block_misses: int = 0
    computed_tokens: int = 0
    requests_with_hit: int = 0
    requests_truncated: int = 0
    requests_waited: int = 0
    tier_hit_blocks: list = field(default_factory=list)
    tier_hit_tokens: list = field(default_factory=list)
    links: list = field(default_factory=list)
    peak_reserved_blocks: int = 0

    def __post_init__(self) -> None:
        t = self.num_tiers
        self.tier_hit_blocks = self.tier_hit_blocks or [0] * t
        self.tier_hit_tokens = self.tier_hit_tokens or [0] * t
        self.links = self.links or [LinkLedger() for _ in range(t)]

    @property
    def hit_ratio(self) -> float:
        """Token-weighted hit ratio: hit tokens / prompt tokens (0.0 if empty)."""
        return self.hit_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def tier_hit_ratios(self) -> list[float]:
        """Hit tokens per tier / prompt tokens; sums to :attr:`hit_ratio`."""
        p = self.prompt_tokens
        return [h / p if p else 0.0 for h in self.tier_hit_tokens]

    def merge(self, other: "ReplayLedger") -> "ReplayLedger":
        """Add ``other`` (same number of tiers) into self; peaks take the max; returns self.

        Raises:
            AssertionError: different numbers of tiers.
        """
        assert self.num_tiers == other.num_tiers, (self.num_tiers, other.num_tiers)
        n = self.num_tiers
        merge_counters(self, other)
        self.num_tiers = n
        return self
