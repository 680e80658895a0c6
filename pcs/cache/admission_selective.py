"""``selective:K``: a tier stores only blocks hit at least K times (SGLang HiCache ``write_through_selective``).

SGLang's hierarchical radix cache (``python/sglang/srt/mem_cache/hiradix_cache.py``)
with ``--hicache-write-policy write_through_selective`` copies a node to host
memory once its hit count reaches the write-through threshold (2), and drops
GPU nodes that were never copied when it evicts them. Here a block's hits are
counted at each lookup (the leading blocks a request hits, any tier); a tier
with ``selective:K`` writes an offered block only once it has K hits. With
write-back, blocks are offered when the GPU evicts them, so the lower tier holds
the same blocks SGLang's host cache would, written at eviction rather than at
the K-th hit (docs/semantics.md §8).
"""
from __future__ import annotations

from typing import Sequence

from pcs.cache.admission import CountingAdmission

__all__ = ["SelectiveAdmission"]


class SelectiveAdmission(CountingAdmission):
    """Admit a block hit at least ``k`` times.

    Args:
        k: hits required, >= 1.
    Raises:
        UserError: k < 1 or not an int.

    >>> a = SelectiveAdmission(1); a.observe([1, 2, 3], 2); a.admit([1, 3])
    [True, False]
    """

    kind = "selective"
    first_option = "k"
    summary = "store only blocks hit at least K times (selective write-through)"
    source = "SGLang HiCache write_through_selective (python/sglang/srt/mem_cache/hiradix_cache.py)"

    def __init__(self, k: int = 2) -> None:
        super().__init__(k)
        self.k = k

    def counted(self, head: Sequence[int], hit_blocks: int) -> Sequence[int]:
        return head[:hit_blocks]    # a hit: the leading blocks the request hits
