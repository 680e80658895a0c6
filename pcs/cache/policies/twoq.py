"""2Q: a FIFO for blocks seen once, a ghost FIFO, an LRU for blocks seen again (Johnson & Shasha,
"2Q: A Low Overhead High Performance Buffer Management Replacement Algorithm", VLDB'94).

Followed: the paper's full version (A1in, A1out, Am; Kin = 25 % of the
buffer, Kout = 50 %) as libCacheSim ``libCacheSim/cache/eviction/TwoQ.c``
implements it (``Ain-size-ratio=0.25, Aout-size-ratio=0.5``; sizes
truncated: ``int(C x 0.25)`` blocks, ``int(C x 0.5)`` ghost keys; Am = C - A1in).

- A miss on a key in A1out (the ghost FIFO): the block enters Am (MRU end);
  any other miss: it enters the back of A1in.
- A hit in A1in does nothing; a hit in Am moves the block to Am's MRU end.
- One eviction: if A1in holds more than its size, its oldest block is
  evicted and its key enters A1out (A1out's oldest key leaves when full);
  else Am's LRU block is evicted.

Block-cache reading (docs/semantics.md §8): the A1out lookup happens in
``expect``, before the evictions (libCacheSim's ``find`` precedes its
``evict``). A pinned block keeps its place in A1in; an eviction scan that
reaches it moves it to the back (in use, it cannot go); a pinned block of Am leaves Am and returns to its MRU end when
released (as a hit would put it). A block new to this tier released as
reused (restored from a lower tier, its second use) enters Am. libCacheSim
inserts a block coming from A1out with ``Am->get``, which evicts inside Am
when Am is full; a tier evicts only for room, so here Am may exceed its
share (never on the flat stream: A1in is then at least its size). ``touch``
is a hit; ``drop`` forgets a block without a ghost entry (libCacheSim
``TwoQ_remove``). On one tier, sequential, one block per request this is
libCacheSim's 2Q exactly (``tests/cache/test_policies_libcachesim.py``).

Structures: three ``OrderedDict`` (front = oldest / LRU), a pinned set. O(1) per key amortised.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Iterable, Sequence

from pcs.cache.policies.base import OneByOnePolicy
from pcs.errors import UserError, shown_repr

__all__ = ["TwoQPolicy"]


class TwoQPolicy(OneByOnePolicy):
    """2Q (VLDB'94): A1in FIFO, A1out ghost FIFO, Am LRU.

    Args:
        capacity_blocks: tier capacity in blocks.
        in_share: A1in's share of the capacity (Kin, 0.25).
        out_share: A1out ghost keys per capacity block (Kout, 0.5).
    Raises:
        UserError: a share outside [0, 1].

    >>> p = TwoQPolicy(8); p.add([1, 2, 3]); p.evict(1)
    [1]
    """

    name = "2q"
    summary = "2Q (Johnson & Shasha VLDB'94): A1in FIFO, A1out ghosts, Am LRU for blocks seen again"
    source = "Johnson & Shasha, VLDB'94; libCacheSim libCacheSim/cache/eviction/TwoQ.c"

    def __init__(self, capacity_blocks: int, in_share: float = 0.25, out_share: float = 0.5) -> None:
        super().__init__(capacity_blocks)
        for what, v in (("in_share", in_share), ("out_share", out_share)):
            if not (isinstance(v, (int, float)) and 0.0 <= v <= 1.0):
                raise UserError(f"2q {what} must be within [0, 1], got {shown_repr(v)}")
        self.in_share, self.out_share = float(in_share), float(out_share)
        self.in_blocks = int(self.capacity_blocks * self.in_share)
        self.out_blocks = int(self.capacity_blocks * self.out_share)
        self.am_blocks = self.capacity_blocks - self.in_blocks
        self._a1in: OrderedDict[int, None] = OrderedDict()
        self._a1out: OrderedDict[int, None] = OrderedDict()
        self._am: OrderedDict[int, None] = OrderedDict()
        self._pinned: set[int] = set()       # pinned blocks of A1in (in place)
        self._pinned_am: set[int] = set()    # pinned blocks that left Am
        self._from_ghost: set[int] = set()

    def __len__(self) -> int:
        return len(self._a1in) - len(self._pinned) + len(self._am)

    def __contains__(self, key: int) -> bool:
        return (key in self._a1in and key not in self._pinned) or key in self._am

    def _known(self, k: int) -> bool:
        return k in self._a1in or k in self._am or k in self._pinned_am

    def expect(self, keys: Sequence[int]) -> None:
        out = self._a1out
        for k in keys:
            if not self._known(k) and out.pop(k, 0) is None:
                self._from_ghost.add(k)

    def add(self, keys: Sequence[int], reused: bool = False) -> None:
        a1in, am = self._a1in, self._am
        for k in keys:
            if k in a1in:
                self._pinned.discard(k)
            elif k in self._pinned_am:
                self._pinned_am.discard(k)
                am[k] = None
            else:
                ghost = k in self._from_ghost or self._a1out.pop(k, 0) is None
                self._from_ghost.discard(k)
                if reused or ghost:
                    am[k] = None
                else:
                    a1in[k] = None

    def remove(self, keys: Iterable[int]) -> None:
        am = self._am
        for k in keys:
            if k in am:
                del am[k]
                self._pinned_am.add(k)
            else:
                self._pinned.add(k)

    def drop(self, keys: Sequence[int]) -> None:
        for k in keys:
            if k in self._am:
                del self._am[k]
            else:
                del self._a1in[k]

    def touch(self, keys: Sequence[int]) -> None:
        am = self._am
        for k in keys:
            if k in am:
                am.move_to_end(k)

    def _evict_a1in(self) -> int:
        a1in, pinned = self._a1in, self._pinned
        while True:
            k = a1in.popitem(last=False)[0]
            if k not in pinned:
                break
            a1in[k] = None                  # in use: passed over, to the back
        if self.out_blocks > 0:
            if len(self._a1out) >= self.out_blocks:
                self._a1out.popitem(last=False)
            self._a1out[k] = None
        return k

    def _evict_one(self) -> int:
        in_free = len(self._a1in) - len(self._pinned)
        if (len(self._a1in) > self.in_blocks and in_free) or not self._am:
            return self._evict_a1in()
        return self._am.popitem(last=False)[0]

    def order(self) -> list[int]:
        """Held keys: A1in oldest first, then Am LRU first (the split depends on A1in's size)."""
        return [k for k in self._a1in if k not in self._pinned] + list(self._am)

    def _check(self) -> None:
        assert not (self._a1in.keys() & self._am.keys()) and not (self._a1out.keys() & self._a1in.keys())
        assert not (self._a1out.keys() & self._am.keys()) and self._pinned <= self._a1in.keys()
        assert not (self._pinned_am & (self._a1in.keys() | self._am.keys()))
        assert len(self._a1out) <= max(self.out_blocks, 0)
