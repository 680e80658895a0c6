"""``tinylfu``: TinyLFU admission with a count-min sketch (Einziger, Friedman and Manes, ACM ToS 2017).

TinyLFU keeps an approximate access frequency of every key -- seen or not,
cached or not -- in a count-min sketch that "resets" (halves every counter)
after a sample of W additions, so frequencies age. When the cache is full, a
candidate enters only if its estimated frequency is higher than that of the
victim the eviction policy picked; otherwise the candidate is refused and the
victim stays. Followed: the paper's Section 3 and Caffeine's ``FrequencySketch``
(depth 4, 4-bit counters saturating at 15, width the power of two >= the
capacity, W = 10 x capacity; Caffeine ``BoundedLocalCache.admit``: admit iff
candidate > victim -- its random admission of warm candidates, a defence
against hash flooding, is left out so that runs are deterministic).

The sketch is this small documented implementation, not a library: the
maintained Python count-min sketches (``pyprobables``, Apache ``datasketches``)
have no reset/halving, which is TinyLFU's aging.

Here (docs/semantics.md §8): every block of every request's cacheable head
counts as one access (:meth:`observe`). A tier with ``tinylfu`` duels each
offered block that needs room against one victim of its eviction policy
(:meth:`duel`, ``Tier.insert``); a victim that wins stays and is given back to
its policy as reused (for LRU: it becomes the most recent, where Caffeine's
victim would keep its place).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from pcs.cache.admission import AdmissionPolicy
from pcs.errors import UserError, shown_repr

__all__ = ["TinyLFUAdmission", "CountMinSketch"]

#: Odd 64-bit multipliers, one per sketch row (golden ratio and xxHash64's primes).
_SEEDS = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93)
_MASK = (1 << 64) - 1


#: The largest tier a tinylfu admission sizes its sketch for (4 x 2**26 one-byte counters = 256 MiB).
MAX_SKETCH_BLOCKS = 1 << 26
#: The largest ``sample`` factor (a reset period of 1e6 capacities: beyond it frequencies never age).
MAX_SAMPLE = 1e6


class CountMinSketch:
    """Depth-4 count-min sketch of 4-bit counters that halves itself every ``sample`` additions.

    Args:
        capacity: expected distinct hot keys (the width is the power of two >= it, at least 16).
        sample: additions between resets (W).
    """

    def __init__(self, capacity: int, sample: int) -> None:
        bits = max(4, (max(int(capacity), 1) - 1).bit_length())
        self.width = 1 << bits
        self._shift = 64 - bits
        self.sample = max(int(sample), 1)
        self.additions = 0
        self._rows = [bytearray(self.width) for _ in _SEEDS]

    def _cells(self, key: int) -> list[int]:
        k, s = int(key) & _MASK, self._shift
        return [((k * seed) & _MASK) >> s for seed in _SEEDS]

    def add(self, key: int) -> None:
        """Count one access of ``key`` (each row's counter +1, up to 15); halve all after W additions."""
        grew = False
        for row, i in zip(self._rows, self._cells(key)):
            if row[i] < 15:
                row[i] += 1
                grew = True
        if grew:
            self.additions += 1
            if self.additions >= self.sample:
                for row in self._rows:
                    view = np.frombuffer(row, dtype=np.uint8)
                    view >>= 1
                self.additions //= 2

    def estimate(self, key: int) -> int:
        """The smallest of ``key``'s counters (0..15): its frequency, never under-estimated before a reset."""
        return min(row[i] for row, i in zip(self._rows, self._cells(key)))


class TinyLFUAdmission(AdmissionPolicy):
    """TinyLFU: admit a candidate only if it is estimated more frequent than the victim.

    Args:
        sample: W in multiples of the tier's capacity (Caffeine: 10).
    Raises:
        UserError: sample not a number in (0, :data:`MAX_SAMPLE`] (a number past a float's range:
            :func:`pcs.cache.policies.number_option`).
    """

    kind = "tinylfu"
    first_option = "sample"
    summary = "TinyLFU: admit only blocks more frequent than their victim (count-min sketch)"
    source = "Einziger, Friedman and Manes, ACM ToS 2017; Caffeine FrequencySketch / BoundedLocalCache.admit"

    def __init__(self, sample: float = 10) -> None:
        from pcs.cache.policies import number_option

        sample = number_option(sample, "float", "admission tinylfu: sample: ")     # 99999999999999999999 is 1e20
        if isinstance(sample, bool) or not isinstance(sample, (int, float)) or not 0 < sample <= MAX_SAMPLE:
            raise UserError(f"admission tinylfu: sample must be > 0 and <= {MAX_SAMPLE:g} (capacities), "
                             f"got {shown_repr(sample)}")
        self.sample_factor = sample
        self.sketch: CountMinSketch | None = None

    def bind(self, capacity_blocks: int) -> None:
        """Size the sketch for the tier it guards.

        Raises:
            UserError: a tier of more than :data:`MAX_SKETCH_BLOCKS` blocks (4 rows of one byte per
                counter, a power of two >= the capacity: 2**26 blocks already take 256 MiB).
        """
        if capacity_blocks > MAX_SKETCH_BLOCKS:
            raise UserError(f"admission tinylfu sizes its count-min sketch from the tier's capacity: at most "
                             f"{MAX_SKETCH_BLOCKS:,} blocks (2**26), got {capacity_blocks:,}")
        self.sketch = CountMinSketch(capacity_blocks, int(self.sample_factor * max(capacity_blocks, 1)))

    def observe(self, head: Sequence[int], hit_blocks: int) -> None:
        add = self.sketch.add
        for k in head:
            add(k)

    def duel(self, candidate: int, victim: int) -> bool:
        """Whether ``candidate`` takes ``victim``'s slot (estimated strictly more frequent)."""
        return self.sketch.estimate(candidate) > self.sketch.estimate(victim)

    def spec(self) -> str:
        return f"tinylfu:sample={self.sample_factor:g}"
