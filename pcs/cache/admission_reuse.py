"""``reuse:N``: store a block in a tier on its N-th use (vLLM CPU offloading's store threshold).

vLLM's CPU offloading can gate GPU -> CPU stores on reuse: a block is written
to the CPU tier only once its hash has been seen in at least
``store_threshold`` requests (default 2), so one-off prompts do not fill the
tier or the link (``vllm/v1/kv_offload`` reuse tracking). Here a "use" is a
request whose cacheable head holds the block, counted at its lookup
(:meth:`AdmissionPolicy.observe`), the request being admitted included.
"""
from __future__ import annotations

from typing import Sequence

from pcs.cache.admission import CountingAdmission

__all__ = ["ReuseAdmission"]


class ReuseAdmission(CountingAdmission):
    """Admit a block looked up by at least ``n`` requests.

    Args:
        n: uses required, >= 1 (1 admits everything).
    Raises:
        UserError: n < 1 or not an int.

    >>> a = ReuseAdmission(2); a.observe([1, 2], 0); a.observe([1], 1); a.admit([1, 2])
    [True, False]
    """

    kind = "reuse"
    first_option = "n"
    summary = "store a block on its N-th use (requests that looked it up)"
    source = "vLLM CPU offloading store threshold (vllm/v1/kv_offload reuse tracking, store_threshold)"

    def __init__(self, n: int = 2) -> None:
        super().__init__(n)
        self.n = n

    def counted(self, head: Sequence[int], hit_blocks: int) -> Sequence[int]:
        return head                 # a use: every block of the request's cacheable head
