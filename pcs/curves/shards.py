"""SHARDS spatial sampling for LRU curves, with the hot chain heads kept exact.

SHARDS (Waldspurger, Park, Garthwaite & Ahmad, FAST'15, "Efficient MRC
construction with SHARDS") keeps every access to the blocks whose id hashes
below a threshold (rate R) and scales their stack depths by 1/R. Whole-block
sampling respects prefix semantics: for chained ids depths strictly increase
along a chain, so a block hits iff its own depth is < C.

Plain SHARDS fails on prefix-cache traces: a few chain heads (system
prompts; in the Mooncake conversation trace one block, id 0, starts all
12,031 requests and earns 4.3 of the 37.3 hit-ratio points) are either
missed or over-weighted 1/R times, an error of 3-50 points. So blocks that
appear within the first ``exact_head_blocks`` positions of any request are
kept exactly (weight 1) and only the rest is sampled. A kept block's depth
is then estimated as

    heads_more_recent + sampled_more_recent / R

where both counts come from three runs of the ordinary kernel (on heads +
sampled, heads only, sampled only: in a filtered stream the distinct keys
of a class used since a block's last use are the same as in the full
stream). Sampled hit tokens are scaled by the ratio estimator
``(hit-able tokens of all non-head accesses) / (those of the sampled ones)``.
Measured error on the real trace: docs/curves.md.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pcs.curves import stackdist
from pcs.curves.stackdist import FlatAccesses
from pcs.errors import UserError

__all__ = ["SampledDepths", "sample_mask", "sampled_lead_depths"]


@dataclass(frozen=True, slots=True)
class SampledDepths:
    """Estimated lead depths of the kept accesses, in full-trace blocks.

    Attributes:
        lead: int64, shape (M,): floor of the estimated lead depth (hit at
            capacity C iff ``0 <= lead < C``), -1 when cold.
        hit_weight_tokens: float64, shape (M,): scaled hit tokens.
        block_weight: float64, shape (M,): how many full-trace accesses each
            kept access stands for (1 for heads).
        num_distinct: distinct kept blocks.
        num_sampled_blocks: distinct blocks the hash sample kept beyond the exact heads (the sample the estimate
            scales up: its error grows as this falls, docs/curves.md), or None when every access was kept
            (nothing estimated: every non-head block sampled, or none there).
    """

    lead: np.ndarray
    hit_weight_tokens: np.ndarray
    block_weight: np.ndarray
    num_distinct: int
    num_sampled_blocks: int | None = None


def sample_mask(block_hashes: np.ndarray, sample_rate: float, seed: int = 0) -> np.ndarray:
    """bool, shape (N,): ``splitmix64(block_hash ^ seed) < sample_rate * 2**64``.

    Raises:
        UserError: ``sample_rate`` not in (0, 1].
    """
    if not 0.0 < sample_rate <= 1.0:
        raise UserError(f"sample_rate must be in (0, 1], got {sample_rate}")
    x = np.asarray(block_hashes, dtype=np.uint64) ^ np.uint64(seed & (2**64 - 1))
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return x < np.uint64(min(int(sample_rate * 2.0**64), 2**64 - 1))


def _subset(flat: FlatAccesses, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keys and request offsets of the kept accesses (request order kept)."""
    before = np.concatenate(([0], np.cumsum(keep, dtype=np.int64)))
    return flat.block_hashes[keep], before[flat.req_offsets]


def sampled_lead_depths(flat: FlatAccesses, sample_rate: float, seed: int = 0,
                        exact_head_blocks: int = 1, kernel: str = "auto") -> SampledDepths:
    """SHARDS depths with the chain heads exact (see the module docstring).

    Args:
        flat: all accesses.
        sample_rate: R in (0, 1].
        seed: hash seed (same seed, same sample).
        exact_head_blocks: blocks seen at a position < this in any request
            are kept with weight 1 (0 = plain SHARDS).
        kernel: stack-depth kernel.
    Raises:
        UserError: bad rate, negative ``exact_head_blocks``, bad kernel.
    """
    if exact_head_blocks < 0:
        raise UserError(f"exact_head_blocks must be >= 0, got {exact_head_blocks}")
    counts = np.diff(flat.req_offsets)
    pos = np.arange(flat.num_accesses, dtype=np.int64) - np.repeat(flat.req_offsets[:-1], counts)
    head = np.isin(flat.block_hashes, np.unique(flat.block_hashes[pos < exact_head_blocks]))
    samp = sample_mask(flat.block_hashes, sample_rate, seed) & ~head
    kept = head | samp
    keys_m, off_m = _subset(flat, kept)
    d_m, distinct = stackdist.stack_depths(keys_m, off_m, kernel)
    h_in, s_in = head[kept], samp[kept]  # classes within the kept stream
    own = np.empty_like(d_m)
    own[h_in], _ = stackdist.stack_depths(*_subset(flat, head), kernel)
    own[s_in], num_sampled = stackdist.stack_depths(*_subset(flat, samp), kernel)
    other = d_m - own  # distinct block hashes of the other class used more recently
    est = np.where(h_in, own + other / sample_rate, other + own / sample_rate)
    depth = np.where(d_m < 0, -1, np.floor(est)).astype(np.int64)
    lead = stackdist.lead_depths(depth, off_m)
    w = flat.hit_weight_tokens
    w_scale = w[~head].sum() / w[samp].sum() if w[samp].sum() else 0.0
    b_scale = (~head).sum() / samp.sum() if samp.sum() else 0.0
    hit_w = np.where(h_in, 1.0, w_scale) * w[kept]
    block_w = np.where(h_in, 1.0, b_scale)
    estimated = int(samp.sum()) < int((~head).sum())       # some non-head access left out: scaled estimates
    return SampledDepths(lead, hit_w, block_w, distinct, int(num_sampled) if estimated else None)
