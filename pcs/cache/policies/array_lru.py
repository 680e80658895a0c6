"""Least recently used on the handle contract (:mod:`pcs.cache.policies.array`): a Python LRU without a key.

The same rule as :class:`pcs.cache.policies.lru.LRUPolicy` (evict the block whose last release or
unpinned access is oldest; vLLM ``vllm/v1/core/block_pool.py``): handles are named in the order of
those events, so the least recently used block is the held block with the smallest handle, and the
runs need no reading. The policy keeps one index, below which no handle is held: ``victims(n)``
finds the first held flag from it (``bytearray.find``) and, when the next ``n`` are all held (the
usual case: ``count``), answers ``range(lo, lo + n)``; else it collects them with
``itertools.compress`` over a window doubled until it holds ``n``. The example of the handle contract: ``benchmarks/bench_policies.py`` times it
as the plug-in ``py_lru_array``; tests/cache/test_policies_array.py checks it equals ``lru``.
"""
from __future__ import annotations

from itertools import compress, islice
from typing import Sequence

from pcs.cache.policies.array import ArrayPolicy, Run
from pcs.cache.policies.lru import LRUPolicy
from pcs.errors import UserError

__all__ = ["ArrayLRU"]


class ArrayLRU(ArrayPolicy):
    """Least recently used, on handles: :class:`pcs.cache.policies.lru.LRUPolicy`'s rule, its flags and sources.

    >>> p = ArrayLRU(4); p.add([3, 2, 1]); p.touch([3]); p.evict(2)
    [2, 1]
    """

    name, summary = "lru_array", "least recently used (Python, handle contract)"
    source, prefix_closed, reuse_blind = LRUPolicy.source, LRUPolicy.prefix_closed, LRUPolicy.reuse_blind
    _lo = 0                              # no handle below is held (per object once victims ran)

    def victims(self, n: int, runs: Sequence[Run]) -> Sequence[int]:
        if not n:
            return ()
        flags = self.flags
        lo = flags.find(1, self._lo)
        if flags.count(1, lo, lo + n) == n:           # the next n are held: no int per victim
            self._lo = lo + n
            return range(lo, lo + n)
        end = lo + 2 * n
        while flags.count(1, lo, end) < n:             # a window holding n held: doubled (no copy of the rest)
            if lo < 0 or end >= len(flags):            # fewer than n held: flags not the host's (n <= held)
                raise UserError(f"victims({n}): fewer than {n} held handles in flags (were they written by the "
                                "policy? the host writes them)")
            end += end - lo
        out = list(islice(compress(range(lo, end), flags[lo:end]), n))
        self._lo = out[-1] + 1
        return out

    def order_handles(self) -> list[int]:
        return list(compress(range(self._lo, len(self.flags)), self.flags[self._lo:]))

    def _check(self) -> None:
        super()._check()
        assert self.flags.find(1, 0, self._lo) < 0, "a held handle below the low-water index"
