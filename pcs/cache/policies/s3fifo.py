"""S3-FIFO: a small FIFO, a main FIFO and a ghost FIFO (Yang et al., "FIFO queues are all you need
for cache eviction", SOSP'23).

Followed: the paper's Algorithm 1 and libCacheSim ``libCacheSim/cache/eviction/S3FIFO.c`` (the
authors' implementation, as in the PyPI ``libcachesim`` 0.3.5 it is compared with: with the
warm-up rule below and a block moved to main at frequency 0; default parameters ``fifo-size-ratio=0.10, ghost-size-ratio=0.90,
move-to-main-threshold=2``). Sizes in blocks, truncated as there: small =
``int(C x small_share)``, main = C - small, ghost = ``int(C x ghost_share)`` keys.

- A new block enters the small queue with frequency 0 -- or main, before the
  first eviction, once small is full (the warm-up fill of main); a block found
  in the ghost queue (a miss on a key evicted from small not long ago) enters main.
- A hit adds 1 to the frequency and moves nothing.
- One eviction: from main when main holds more than its size or small is
  empty, else from small. Small: its oldest block moves to main (frequency
  0) if its frequency is >= ``move_to_main_threshold``, else it is evicted
  and its key goes to the ghost queue (the ghost's oldest key leaves when
  full); repeated until one block is evicted. Main: its oldest block with a
  frequency >= 1 is re-inserted at the back with ``min(freq, 3) - 1``, one
  with 0 is evicted.

Block-cache reading (docs/semantics.md §8): the ghost lookup happens in
``expect`` (before the evictions, as libCacheSim's ``find`` precedes its
``evict``). A pinned block keeps its place and frequency; an eviction scan
that reaches it moves it to the back of its queue unchanged (in use, it
cannot go). Released as a hit, its frequency rises by 1; a block new to this
tier released as reused (restored from a lower tier) enters main. ``touch``
adds 1. ``drop`` forgets a block without a ghost entry (libCacheSim
``S3FIFO_remove``). Where libCacheSim differs by construction: with
``int(C x 0.1) <= 1`` it admits nothing into small (``obj_size >=
fifo->cache_size``); a tier must store every block it computes, so compare
at C >= 20 blocks. On one tier, sequential, one block per request, C >= 20
this is libCacheSim's S3-FIFO exactly (``tests/cache/test_policies_libcachesim.py``).

Structures: three ``OrderedDict`` (front = oldest), a frequency dict, a
pinned set. O(1) per key amortised.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Iterable, Sequence

from pcs.cache.policies.base import OneByOnePolicy
from pcs.errors import UserError, shown_repr

__all__ = ["S3FIFOPolicy"]


class S3FIFOPolicy(OneByOnePolicy):
    """S3-FIFO (SOSP'23): small, main and ghost FIFO queues.

    Args:
        capacity_blocks: tier capacity in blocks.
        small_share: the small queue's share of the capacity (libCacheSim 0.10).
        ghost_share: ghost keys per capacity block (libCacheSim 0.90).
        move_to_main_threshold: frequency from which a block leaving small moves to main (2).
    Raises:
        UserError: a share outside [0, 1] or a threshold < 1.

    >>> p = S3FIFOPolicy(20); p.add([1, 2, 3]); p.touch([1]); p.touch([1]); p.evict(1)
    [2]
    """

    name = "s3fifo"
    summary = "S3-FIFO (Yang et al. SOSP'23): small, main and ghost FIFO queues"
    source = "Yang et al., SOSP'23; libCacheSim libCacheSim/cache/eviction/S3FIFO.c"

    def __init__(self, capacity_blocks: int, small_share: float = 0.10, ghost_share: float = 0.90,
                 move_to_main_threshold: int = 2) -> None:
        super().__init__(capacity_blocks)
        for what, v in (("small_share", small_share), ("ghost_share", ghost_share)):
            if not (isinstance(v, (int, float)) and 0.0 <= v <= 1.0):
                raise UserError(f"s3fifo {what} must be within [0, 1], got {shown_repr(v)}")
        if isinstance(move_to_main_threshold, bool) or not isinstance(move_to_main_threshold, int) \
                or move_to_main_threshold < 1:
            raise UserError(f"s3fifo move_to_main_threshold must be an int >= 1, got {shown_repr(move_to_main_threshold)}")
        self.small_share, self.ghost_share, self.threshold = float(small_share), float(ghost_share), \
            move_to_main_threshold
        self.small_blocks = int(self.capacity_blocks * self.small_share)
        self.main_blocks = self.capacity_blocks - self.small_blocks
        self.ghost_blocks = int(self.capacity_blocks * self.ghost_share)
        self._small: OrderedDict[int, None] = OrderedDict()
        self._main: OrderedDict[int, None] = OrderedDict()
        self._ghost: OrderedDict[int, None] = OrderedDict()
        self._freq: dict[int, int] = {}
        self._pinned: set[int] = set()
        self._pinned_small = 0               # pinned blocks in small (the rest in main)
        self._from_ghost: set[int] = set()   # expected keys found in the ghost queue
        self._has_evicted = False

    def __len__(self) -> int:
        return len(self._freq) - len(self._pinned)

    def __contains__(self, key: int) -> bool:
        return key in self._freq and key not in self._pinned

    def expect(self, keys: Sequence[int]) -> None:
        ghost, freq = self._ghost, self._freq
        for k in keys:
            if k not in freq and ghost.pop(k, 0) is None:
                self._from_ghost.add(k)

    def add(self, keys: Sequence[int], reused: bool = False) -> None:
        freq, pinned = self._freq, self._pinned
        for k in keys:
            f = freq.get(k)
            if f is not None:
                pinned.discard(k)
                if k in self._small:
                    self._pinned_small -= 1
                if reused:
                    freq[k] = f + 1
                continue
            if self._ghost.pop(k, 0) is None:     # not announced by expect: look it up now
                self._from_ghost.add(k)
            if k in self._from_ghost or reused or \
                    (not self._has_evicted and len(self._small) >= self.small_blocks):
                self._from_ghost.discard(k)
                self._main[k] = None
            else:
                self._small[k] = None
            freq[k] = 0

    def remove(self, keys: Iterable[int]) -> None:
        small = self._small
        for k in keys:
            self._pinned.add(k)
            if k in small:
                self._pinned_small += 1

    def drop(self, keys: Sequence[int]) -> None:
        small = self._small
        for k in keys:
            if k in small:
                del small[k]
            else:
                del self._main[k]
            del self._freq[k]

    def touch(self, keys: Sequence[int]) -> None:
        freq = self._freq
        for k in keys:
            freq[k] += 1

    def _to_ghost(self, k: int) -> None:
        if self.ghost_blocks <= 0:
            return
        ghost = self._ghost
        if len(ghost) >= self.ghost_blocks:
            ghost.popitem(last=False)
        ghost[k] = None

    def _evict_small(self) -> int | None:
        """One pass of libCacheSim ``S3FIFO_evict_fifo``: the victim, or None after moving blocks to main."""
        small, main, freq, pinned = self._small, self._main, self._freq, self._pinned
        while len(small) > self._pinned_small:
            k = small.popitem(last=False)[0]
            if k in pinned:
                small[k] = None
            elif freq[k] >= self.threshold:
                main[k] = None
                freq[k] = 0
            else:
                del freq[k]
                self._to_ghost(k)
                return k
        return None

    def _evict_main(self) -> int | None:
        """libCacheSim ``S3FIFO_evict_main``: second chances in main until a block with frequency 0 goes."""
        main, freq, pinned = self._main, self._freq, self._pinned
        if len(main) <= len(pinned) - self._pinned_small:
            return None
        while True:
            k = main.popitem(last=False)[0]
            f = freq[k]
            if k in pinned:
                main[k] = None
            elif f >= 1:
                main[k] = None
                freq[k] = min(f, 3) - 1
            else:
                del freq[k]
                return k

    def _evict_one(self) -> int:
        self._has_evicted = True
        while True:
            small_free = len(self._small) - self._pinned_small
            if len(self._main) > self.main_blocks or small_free == 0:
                k = self._evict_main()
                if k is None:
                    k = self._evict_small()
            else:
                k = self._evict_small()
            if k is not None:
                return k

    def order(self) -> list[int]:
        """Held keys: small then main, each oldest first (second chances not applied)."""
        return [k for k in (*self._small, *self._main) if k not in self._pinned]

    def _check(self) -> None:
        assert not (self._small.keys() & self._main.keys())
        assert self._freq.keys() == self._small.keys() | self._main.keys()
        assert self._pinned <= self._freq.keys()
        assert self._pinned_small == len(self._pinned & self._small.keys())
        assert not (self._ghost.keys() & self._freq.keys()) and len(self._ghost) <= max(self.ghost_blocks, 0)
