"""Cache groups of a hybrid model: which blocks each kind of layer needs for a prefix hit.

A model's KV components become cache groups (``docs/semantics.md §3.1``),
each with its own hit rule, as vLLM's single-type KV cache managers
(``vllm/v1/core/single_type_kv_cache_manager.py``) do:

========= ==================================== ========================================================
rule      components                           a hit of k blocks needs (vLLM manager)
========= ==================================== ========================================================
``full``  full_attention, mla_latent,          every block 0 .. k-1 (``FullAttentionManager``, also
          indexer_keys                         MLA and the indexer's keys)
``window``sliding_window (W tokens)            the last m = ceil((W - 1) / B) blocks k-m .. k-1: the
                                               next token attends to itself and the W - 1 before it
                                               (``SlidingWindowManager``)
``chunk`` chunked_local (C tokens)             the blocks of the current chunk, from block
                                               floor(floor(kB / C) C / B) to k-1
                                               (``ChunkedLocalAttentionManager``)
``state`` ssm_state (checkpoint every N        the state saved at block k-1; states exist only where
          tokens, N = u B)                     k is a multiple of u (``MambaManager``,
                                               ``mamba_cache_mode``)
========= ==================================== ========================================================

This module is arithmetic only (no residency): :meth:`CacheGroup.longest`
takes a ``present(i)`` predicate and returns the longest hit the group
accepts, and :meth:`need_from`/:meth:`keep_from`/:meth:`writes` say which
blocks a request touches at admission, keeps while running and writes. The
hierarchy that applies them is :class:`pcs.cache.grouphier.GroupHierarchy`.
"""
from __future__ import annotations

import math
from typing import Callable
from pcs.errors import UnknownNameError, UserError
from pcs._dataclass import dataclass

__all__ = ["RULES", "CacheGroup", "fixed_point", "window_blocks", "window_hold_blocks", "chunk_hold_blocks",
           "pages_per_model_block"]

#: The hit rules, in the order the coordinator checks them (full attention first, as vLLM's
#: ``HybridKVCacheCoordinator`` sorts it).
RULES = ("full", "window", "chunk", "state")


def window_blocks(window_tokens: int, block_size: int) -> int:
    """m = ceil((W - 1) / B): the blocks a sliding-window hit needs, the next token attending to itself and the
    W - 1 before it (vLLM ``SlidingWindowManager``: ``sliding_window_contiguous_blocks``)."""
    return -(-(window_tokens - 1) // block_size)


def window_hold_blocks(window_tokens: int, block_size: int) -> int:
    """m + 1 (:func:`window_blocks`): the most blocks a running sequence holds in a sliding-window group, the one
    rule pcs replay (:attr:`CacheGroup.hold_blocks`) and ``pcs footprint``'s Reserved
    (:meth:`pcs.model.components.SlidingWindow.reserved_blocks`) read (docs/semantics.md §13).

    vLLM, before each step, frees the blocks wholly before the window of the next token
    (``SlidingWindowManager.remove_skipped_blocks``: ``get_num_skipped_tokens(c) = c - W + 1`` for c computed
    tokens) and then allocates up to the tokens of the step (``get_num_blocks_to_allocate``); the W tokens a
    decode step keeps, positions c - W + 1 .. c, span at most ceil((W - 1) / B) + 1 blocks (W = 128, B = 16: 9;
    W = 1,024, B = 512: 3; W = 129, B = 16: 9, where ``SlidingWindowSpec.max_memory_usage_bytes``'s bound
    cdiv(W - 1 + 1, B) + 1 for one new token says 10).
    """
    return window_blocks(window_tokens, block_size) + 1


def chunk_hold_blocks(chunk_tokens: int, block_size: int) -> int:
    """1 + ceil((C - g) / B), g = gcd(C, B): the most blocks a running sequence holds in a chunked-local group,
    the one rule pcs replay (:attr:`CacheGroup.hold_blocks`, the compiled ``hold_blocks`` of
    ``pcs/cache/_grouphier.c``) and ``pcs footprint``'s Reserved at its largest
    (:meth:`pcs.model.components.ChunkedLocalAttention.reserved_blocks`) follow (docs/semantics.md §3.1).

    vLLM, before each step of a sequence with n computed tokens, frees the blocks wholly before its chunk
    (``ChunkedLocalAttentionManager.get_num_skipped_tokens(n)`` = floor(n / C) C, ``remove_skipped_blocks``) and
    allocates up to token n + 1: the chunk starting at aC, with r = aC mod B, spans ceil((r + C) / B) blocks at
    its last token. r runs over the multiples of g below B, so the most is ceil((B - g + C) / B): C / B when B
    divides C (C = 8,192, B = 512: 16, not 17), ceil(C / B) + 1 when C mod B > g (C = 7, B = 4: 3, chunk
    [7, 14) on blocks 1..3), else ceil(C / B) (C = 6, B = 4: 2).
    """
    g = math.gcd(chunk_tokens, block_size)
    return 1 + -(-(chunk_tokens - g) // block_size)


def pages_per_model_block(rule: str, pages: int, span_tokens: int, block_size: int) -> int:
    """Pages one block of the model takes in a group: its ``pages``, but for a state group (a checkpoint every
    u = N / B blocks, ``pages`` each) ceil(pages / u), the state's pages spread over the blocks between
    checkpoints, rounded up (docs/semantics.md §13: a block's Reserved and Serialized bytes). The one rule of
    :meth:`pcs.engine.hybrid.HybridPlan.block_pages` (a tier given in blocks, ``pcs deploy``'s block) and of a
    replay report's bytes per block (:func:`pcs.report.replay.block_bytes`, from the JSON's groups)."""
    if rule != "state":
        return pages
    return -(-pages // (span_tokens // block_size))


@dataclass(frozen=True, slots=True)
class CacheGroup:
    """One cache group: a hit rule over the blocks of a request, and its pages.

    Attributes:
        name: display name (the component names joined by ``+``).
        rule: one of :data:`RULES`.
        components: the KV component names the group holds (``pcs.model`` names).
        block_size: tokens per block B (the replay's block size).
        span_tokens: W (window), C (chunk) or N (state checkpoint interval, a multiple of B); 0 for full.
        pages: pool pages one block of the group takes (vLLM's uniform page size: 1 for most,
            more for a group split into several layer groups or a padded state page), 1 .. 65535.
        pool: index of the pool the group's pages live in (0 for a shared pool).
        layers: decoder layers of the group.
        align: state only: a request saves one state, at its last checkpoint (vLLM
            ``mamba_cache_mode="align"``) instead of every checkpoint (``"all"``).
    Raises:
        UserError: unknown rule, span not positive for a windowed rule, pages < 1, or a state
            interval that is not a multiple of the block size.
    """

    name: str
    rule: str
    components: tuple[str, ...]
    block_size: int
    span_tokens: int = 0
    pages: int = 1
    pool: int = 0
    layers: int = 0
    align: bool = False

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise UnknownNameError("cache group rule", self.rule, RULES)
        if self.rule != "full" and self.span_tokens < 1:
            raise UserError(f"group {self.name}: rule {self.rule} needs a span >= 1 token")
        if not 1 <= self.pages < 1 << 16:
            raise UserError(f"group {self.name}: pages per block must be in 1..65535, got {self.pages}")
        if self.rule == "state" and self.span_tokens % self.block_size:
            raise UserError(f"group {self.name}: checkpoint interval {self.span_tokens} is not a multiple of "
                             f"the block size {self.block_size}")

    # -- derived sizes ---------------------------------------------------------------------------
    @property
    def window_blocks(self) -> int:
        """window: m = ceil((W - 1) / B), the blocks a hit needs (:func:`window_blocks`)."""
        return window_blocks(self.span_tokens, self.block_size)

    @property
    def model_block_pages(self) -> int:
        """Pages one block of the model takes in this group (:func:`pages_per_model_block`)."""
        return pages_per_model_block(self.rule, self.pages, self.span_tokens, self.block_size)

    @property
    def every_blocks(self) -> int:
        """state: u = N / B, blocks between checkpoints."""
        return self.span_tokens // self.block_size

    def _chunk_start(self, k: int) -> int:
        """chunk: first block of the chunk holding position kB (vLLM ``get_num_skipped_tokens`` // B)."""
        return k * self.block_size // self.span_tokens * self.span_tokens // self.block_size

    @property
    def hold_blocks(self) -> int | None:
        """Most blocks a running sequence holds in this group (None: all of them).

        window: m + 1 (:func:`window_hold_blocks`, the window plus the block being written); chunk:
        1 + ceil((C - gcd(C, B)) / B) (:func:`chunk_hold_blocks`: C / B when B divides C); state: 1 (the
        running state, reserved at admission even without output blocks: ``MambaManager`` in
        ``vllm/v1/core/single_type_kv_cache_manager.py`` takes the running state's block from the shared pool).
        """
        if self.rule == "window":
            return window_hold_blocks(self.span_tokens, self.block_size)
        if self.rule == "chunk":
            return chunk_hold_blocks(self.span_tokens, self.block_size)
        if self.rule == "state":
            return 1
        return None

    # -- the rule ---------------------------------------------------------------------------------
    def longest(self, limit: int, present: Callable[[int], bool]) -> int:
        """The longest hit of at most ``limit`` blocks the group accepts (``find_longest_cache_hit``).

        Args:
            limit: blocks, >= 0.
            present: ``present(i)`` is True when every page of block i of this group is resident in
                some tier.
        Returns:
            k, 0 <= k <= limit.
        """
        if self.rule == "full":
            k = 0
            while k < limit and present(k):
                k += 1
            return k
        if self.rule == "window":
            return self._longest_window(limit, present)
        if self.rule == "chunk":
            k = self._chunk_start(limit)
            while k < limit and present(k):
                k += 1
            return k
        u = self.every_blocks
        k = limit - limit % u
        while k > 0 and not present(k - 1):
            k -= u
        return k

    def _longest_window(self, limit: int, present: Callable[[int], bool]) -> int:
        """Right to left from ``limit``: the first run of m present blocks ends the hit (vLLM's scan);
        with no such run, the present blocks from block 0 on."""
        m = self.window_blocks
        if m == 0:
            return limit
        run = 0
        for i in range(limit - 1, -1, -1):
            if present(i):
                run += 1
                if run >= m:
                    return i + m
            else:
                run = 0
        return run

    def need_from(self, k: int) -> int:
        """First block a hit of k blocks reads (blocks need_from(k) .. k-1; vLLM's skipped blocks before)."""
        if self.rule == "window":
            return max(0, k - self.window_blocks)
        if self.rule == "chunk":
            return self._chunk_start(k)
        if self.rule == "state":
            return max(0, k - 1)
        return 0

    def keep_from(self, n: int) -> int:
        """First block still needed once n blocks are computed; blocks before it are freed at once
        (still cached, evictable; vLLM ``remove_skipped_blocks``). A state group keeps none: the running
        state takes one state's pages of the pool from admission to finish (:attr:`hold_blocks`, reserved
        whatever the output; vLLM ``MambaManager`` takes it from the shared block pool)."""
        if self.rule == "state":
            return n
        return self.need_from(n)

    def writes(self, start: int, n: int) -> list[int]:
        """Blocks in start .. n-1 whose pages a request computes and caches.

        Every block for token rules; for a state group the checkpoints ((b + 1) a multiple of u),
        or with ``align`` only the last checkpoint <= n (vLLM ``mamba_cache_mode``).
        """
        if self.rule != "state":
            return list(range(start, n))
        u = self.every_blocks
        if self.align:
            last = n - n % u - 1
            return [last] if last >= start else []
        first = -(-(start + 1) // u) * u - 1
        return list(range(first, n, u))


def fixed_point(groups: tuple[CacheGroup, ...], limit: int, present: Callable[[int, int], bool],
                full_lead: int | None = None) -> int:
    """The longest hit every group accepts (vLLM ``HybridKVCacheCoordinator.find_longest_cache_hit``).

    Each group in turn either accepts the candidate length or lowers it; when any lowered it, all
    are checked again. It converges because the length only decreases.

    Args:
        groups: the groups, full rule first.
        limit: the most blocks a hit may have (the last-token cap, §4).
        present: ``present(g, i)``: block i of group g is resident.
        full_lead: the longest resident prefix of group 0 when it is a full group (saves its rescans).
    Returns:
        blocks, 0 <= k <= limit.
    """
    k = limit
    while True:
        before = k
        for g, grp in enumerate(groups):
            if grp.rule == "full" and g == 0 and full_lead is not None:
                k = min(k, full_lead)
            else:
                k = grp.longest(k, lambda i, g=g: present(g, i))
        if k == before:
            return k
