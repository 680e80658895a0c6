"""Block rules shared by trace statistics, replay and curves.

A prompt of ``prompt_tokens`` tokens is cut into blocks of ``block_size``
tokens; a trace gives one block hash per block, the last one possibly covering
a partial block (Mooncake: ``len(hash_ids) == ceil(input_length / 512)``).

Rules (vLLM ``KVCacheManager`` / ``kv_cache_utils``; SGLang ``RadixCache``):

- only full blocks are cached (vLLM hashes full blocks only); with
  ``cache_partial_blocks`` every block hash is a unit, the last one included;
- lookup walks the chain from the first block and stops at the first miss;
- the last prompt token must be computed to produce logits, so hits are capped
  at ``prompt_tokens - 1`` tokens rounded down to whole blocks
  (vLLM ``get_computed_blocks``: ``max_cache_hit_length = num_tokens - 1``);
  ``recompute_last_token=False`` lifts the cap;
- hit ratios are token-weighted: sum of hit tokens / sum of prompt tokens.
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np
from pcs._dataclass import dataclass

__all__ = ["BlockRules", "SingleSequenceResult", "single_sequence_hits"]


@dataclass(frozen=True, slots=True)
class BlockRules:
    """How prompt tokens map to cacheable and hittable blocks.

    Attributes:
        cache_partial_blocks: cache every block hash, the trailing partial block
            too (default False: full blocks only, as vLLM).
        recompute_last_token: cap hits at ``prompt_tokens - 1`` tokens rounded
            down to blocks (default True, as vLLM and SGLang).
    """

    cache_partial_blocks: bool = False
    recompute_last_token: bool = True

    def cacheable_blocks(self, prompt_tokens: int, num_hashes: int, block_size: int) -> int:
        """Number of leading blocks that may be inserted into a cache.

        ``prompt_tokens // block_size`` full blocks, or all ``num_hashes`` with
        ``cache_partial_blocks``; never more than ``num_hashes``.

        >>> BlockRules().cacheable_blocks(1030, 3, 512)
        2
        >>> BlockRules(cache_partial_blocks=True).cacheable_blocks(1030, 3, 512)
        3
        """
        return self._rule(prompt_tokens, num_hashes, block_size, min, max)[0]

    def max_hit_blocks(self, prompt_tokens: int, num_hashes: int, block_size: int) -> int:
        """Largest number of leading blocks that may count as hits.

        With ``recompute_last_token``: ``(prompt_tokens - 1) // block_size``
        (at least one token is computed), else all cacheable blocks.

        >>> BlockRules().max_hit_blocks(1024, 2, 512)   # 1023 tokens -> 1 block
        1
        >>> BlockRules(recompute_last_token=False).max_hit_blocks(1024, 2, 512)
        2
        """
        return self._rule(prompt_tokens, num_hashes, block_size, min, max)[1]

    def _rule(self, p, nh, block_size: int, minimum, maximum) -> tuple:
        """``(cacheable, max_hit)``: the one place the two rules are written (docs/semantics.md §2, §4), for ints
        (``minimum, maximum = min, max``) or int64 arrays of shape (R,) (``np.minimum, np.maximum``)."""
        n = nh if self.cache_partial_blocks else minimum(p // block_size, nh)
        return n, (maximum(0, minimum(n, (p - 1) // block_size)) if self.recompute_last_token else n)

    def columns(self, prompt_tokens: np.ndarray, num_hashes: np.ndarray,
                block_size: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`cacheable_blocks` and :meth:`max_hit_blocks` for many requests at once, the same arithmetic.

        Every array path (replay chunks, trace stats, the stack-distance curve, the one-pass scans) takes the
        rule from here, and the rule is written once, in ``_rule``, for these and the scalar methods (docs/semantics.md §2, §4).

        Args:
            prompt_tokens: int array of shape (R,), tokens per prompt.
            num_hashes: int array of shape (R,), block hashes per request.
            block_size: tokens per block (> 0).
        Returns:
            ``(cacheable, max_hit)``: two new int64 arrays of shape (R,).

        >>> [c.tolist() for c in BlockRules().columns(np.array([1030, 1024, 0]), np.array([3, 2, 0]), 512)]
        [[2, 2, 0], [2, 1, 0]]
        """
        p = np.asarray(prompt_tokens, dtype=np.int64)
        nh = np.asarray(num_hashes, dtype=np.int64)
        n, cap = self._rule(p, nh, block_size, np.minimum, np.maximum)
        return (n.copy() if n is nh else n), (cap.copy() if cap is n else cap)

    def best_hit_tokens(self, prompt_tokens: int, block_size: int) -> int:
        """Most tokens a prompt of ``prompt_tokens`` tokens can hit (or restore) when every block is cached: the
        hit of :meth:`max_hit_blocks` over its ``ceil(P / B)`` blocks, in tokens (docs/semantics.md §2, §4). The
        one best-case rule of the views that start from a prompt length (``pcs envelope``'s default restore,
        :func:`pcs.analysis.envelope.restored_tokens`), so they cap as replay does.

        >>> BlockRules().best_hit_tokens(8192, 512), BlockRules().best_hit_tokens(8192, 16)   # (8,191 // B) x B
        (7680, 8176)
        >>> BlockRules(recompute_last_token=False).best_hit_tokens(8192, 512), BlockRules().best_hit_tokens(1, 16)
        (8192, 0)
        """
        return self.hit_tokens(self.max_hit_blocks(prompt_tokens, -(-prompt_tokens // block_size), block_size),
                               prompt_tokens, block_size)

    @staticmethod
    def hit_tokens(hit_blocks: int, prompt_tokens: int, block_size: int) -> int:
        """Tokens covered by ``hit_blocks`` leading blocks (a partial last block
        covers only the prompt's remaining tokens)."""
        return min(hit_blocks * block_size, prompt_tokens)


@dataclass(frozen=True, slots=True)
class SingleSequenceResult:
    """Outcome of the infinite-cache, in-order prefix replay.

    Attributes:
        hit_tokens: sum of hit tokens over requests.
        prompt_tokens: sum of prompt tokens over requests.
        hit_blocks: sum of hit blocks.
        requests_with_hit: requests with at least one hit block.
        requests: number of requests.
    """

    hit_tokens: int
    prompt_tokens: int
    hit_blocks: int
    requests_with_hit: int
    requests: int

    @property
    def hit_ratio(self) -> float:
        """Token-weighted hit ratio, 0.0 for an empty trace."""
        return self.hit_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


def single_sequence_hits(requests: Iterable, rules: BlockRules = BlockRules(), decode: Any = None
                         ) -> SingleSequenceResult:
    """The single-sequence (infinite-cache) prefix hit ratio of a request stream.

    Requests are taken in order; a cache of unbounded size keeps every
    cacheable block ever computed; a block hits only if every earlier block of
    the request hit; hits are capped by ``rules``. This is the ceiling a
    finite cache facing the same stream can approach, never exceed.

    Args:
        requests: iterable of objects with ``prompt_tokens`` (int),
            ``block_size`` (int) and ``block_hashes``
            (``np.ndarray[np.uint64]``, shape ``(num_blocks,)``).
        rules: block rules (full blocks only and last-token cap by default).
        decode: None, or a :class:`pcs.engine.turns.DecodeBlocks` of the stream: request k's decode-block
            ids (``decode.get(k)``) are cached right after its prompt blocks -- the decode-aware ceiling of a
            step-scheduler run caching output blocks (docs/semantics.md §9, §17; the reference of
            :func:`pcs.engine.decodescan.decode_aware_hits`).
    Returns:
        :class:`SingleSequenceResult`; ``.hit_ratio`` is token-weighted.

    Cost: one set lookup per block up to the first miss, one insert per
    cacheable block; memory one set entry per distinct cacheable block.
    """
    seen: set[int] = set()
    hit_tokens = prompt_tokens = hit_blocks = with_hit = n = 0
    for req in requests:
        hashes = req.block_hashes.tolist() if isinstance(req.block_hashes, np.ndarray) else list(req.block_hashes)
        p, bs = req.prompt_tokens, req.block_size
        cap = rules.max_hit_blocks(p, len(hashes), bs)
        k = 0
        while k < cap and hashes[k] in seen:
            k += 1
        seen.update(hashes[: rules.cacheable_blocks(p, len(hashes), bs)])
        if decode is not None:
            seen.update(decode.get(n))
        hit_blocks += k
        hit_tokens += rules.hit_tokens(k, p, bs)
        prompt_tokens += p
        with_hit += k > 0
        n += 1
    return SingleSequenceResult(hit_tokens, prompt_tokens, hit_blocks, with_hit, n)
