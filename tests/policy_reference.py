"""Independent flat caches written from the papers (tests only; nothing here imports pcs).

Each class is a cache of ``capacity`` unit-size objects with one method,
``get(key) -> bool`` (True on a hit; on a miss the object is stored, evicting
as needed), written from the paper's pseudo-code -- not from pcs's policies
or libCacheSim's C. Where the authors' own library (libCacheSim, which the
PyPI ``libcachesim`` package ships and pcs follows) deviates from the paper,
the class follows the library and says so in a ``LIBRARY:`` comment; each
such rule is one short branch.

- :class:`Sieve`: Zhang et al., NSDI'24, Algorithm 1.
- :class:`ARC`: Megiddo & Modha, FAST'03, Figure 4 (cases I-IV, REPLACE).
- :class:`TwoQ`: Johnson & Shasha, VLDB'94, "full version" (A1in, A1out, Am; Kin = 25 %, Kout = 50 %).
- :class:`S3FIFO`: Yang et al., SOSP'23, Algorithm 1 (S = 10 %, G = 90 %, move when freq >= 2).
- :class:`LFU`: least frequently used; among equal counts the object that reached the count first;
  ``aging=True``: LFU-DA, Arlitt et al. 2000 (K = count + L, L = the victim's K).
"""
from __future__ import annotations

from collections import OrderedDict

__all__ = ["Sieve", "ARC", "TwoQ", "S3FIFO", "LFU", "REFERENCES"]


class Sieve:
    """Algorithm 1: a queue (head = newest), a visited bit, a hand moving from tail to head."""

    def __init__(self, capacity: int) -> None:
        self.c = capacity
        self.queue: list = []          # index 0 = tail (oldest) ... -1 = head (newest)
        self.visited: dict = {}
        self.hand = None               # a key, or None = start at the tail

    def get(self, x) -> bool:
        if x in self.visited:
            self.visited[x] = True
            return True
        if len(self.queue) == self.c:
            self._evict()
        self.queue.append(x)
        self.visited[x] = False
        return False

    def _evict(self) -> None:
        q = self.queue
        i = q.index(self.hand) if self.hand is not None else 0
        while self.visited[q[i]]:
            self.visited[q[i]] = False
            i = i + 1 if i + 1 < len(q) else 0        # o.prev (toward the head), else the tail
        victim = q.pop(i)
        self.hand = q[i] if i < len(q) else None
        del self.visited[victim]


class ARC:
    """Figure 4 of the paper; lists are OrderedDicts, first = LRU."""

    def __init__(self, capacity: int) -> None:
        self.c, self.p = capacity, 0.0
        self.t1, self.t2, self.b1, self.b2 = OrderedDict(), OrderedDict(), OrderedDict(), OrderedDict()

    def _replace(self, x_in_b2: bool) -> None:
        if self.t1 and (len(self.t1) > self.p or (x_in_b2 and len(self.t1) == self.p)) or not self.t2:
            self.b1[self.t1.popitem(last=False)[0]] = None
        else:
            self.b2[self.t2.popitem(last=False)[0]] = None

    def get(self, x) -> bool:
        t1, t2, b1, b2, c = self.t1, self.t2, self.b1, self.b2, self.c
        if x in t1 or x in t2:                                   # case I
            t1.pop(x, None)
            t2.pop(x, None)
            t2[x] = None
            return True
        full = len(t1) + len(t2) == c
        if x in b1:                                              # case II
            self.p = min(self.p + (1 if len(b1) >= len(b2) else len(b2) / len(b1)), c)
            del b1[x]
            if full:
                self._replace(False)
            t2[x] = None
            return False
        if x in b2:                                              # case III
            self.p = max(self.p - (1 if len(b2) >= len(b1) else len(b1) / len(b2)), 0)
            del b2[x]
            if full:
                self._replace(True)
            t2[x] = None
            return False
        if len(t1) + len(b1) == c:                               # case IV (A)
            if len(t1) < c:
                b1.popitem(last=False)
                self._replace(False)
            else:
                t1.popitem(last=False)
        elif len(t1) + len(b1) + len(t2) + len(b2) >= c:         # case IV (B)
            if len(t1) + len(b1) + len(t2) + len(b2) == 2 * c:
                b2.popitem(last=False)
            if full:       # the paper's cache is always full here; a cold one has room
                self._replace(False)
        t1[x] = None
        return False


class TwoQ:
    """The full version: A1in FIFO (Kin), A1out FIFO of identifiers (Kout), Am LRU (first = LRU)."""

    def __init__(self, capacity: int) -> None:
        self.c = capacity
        self.kin, self.kout = int(capacity * 0.25), int(capacity * 0.5)   # LIBRARY: sizes truncated
        self.a1in, self.a1out, self.am = OrderedDict(), OrderedDict(), OrderedDict()

    def _reclaim(self) -> None:
        if len(self.a1in) + len(self.am) < self.c:               # a free page
            return
        if len(self.a1in) > self.kin:
            y = self.a1in.popitem(last=False)[0]
            self.a1out[y] = None
            if len(self.a1out) > self.kout:
                self.a1out.popitem(last=False)
        else:
            self.am.popitem(last=False)

    def get(self, x) -> bool:
        if x in self.am:
            self.am.move_to_end(x)
            return True
        if x in self.a1in:
            return True
        if x in self.a1out:
            del self.a1out[x]
            self._reclaim()
            self.am[x] = None
            return False
        self._reclaim()
        self.a1in[x] = None
        return False


class S3FIFO:
    """Algorithm 1 (S, M, G FIFOs; first = tail = oldest), with the library's rules marked LIBRARY."""

    def __init__(self, capacity: int) -> None:
        self.c = capacity
        self.s_max = int(capacity * 0.1)                          # LIBRARY: sizes truncated
        self.g_max = int(capacity * 0.9)
        self.S, self.M, self.G = OrderedDict(), OrderedDict(), OrderedDict()
        self.freq: dict = {}
        self.evicted_once = False

    def get(self, x) -> bool:
        if x in self.S or x in self.M:
            self.freq[x] += 1          # the paper caps at 3; only ">= 2" and "min(freq, 3) - 1" read it
            return True
        in_g = self.G.pop(x, 0) is None
        while len(self.S) + len(self.M) >= self.c:
            self._evict()
        if in_g:
            self.M[x] = None
        elif not self.evicted_once and len(self.S) >= self.s_max:   # LIBRARY: warm-up fills M
            self.M[x] = None
        else:
            self.S[x] = None
        self.freq[x] = 0
        return False

    def _evict(self) -> None:
        self.evicted_once = True
        if len(self.S) >= self.s_max and self.S:
            self._evict_s()
        else:
            self._evict_m()

    def _evict_s(self) -> None:
        while self.S:
            t = self.S.popitem(last=False)[0]
            if self.freq[t] > 1:
                self.M[t] = None
                self.freq[t] = 0     # LIBRARY: starts over in M; and no evictM here (the next eviction sees M > its size)
            else:
                del self.freq[t]
                self.G[t] = None
                if len(self.G) > self.g_max:
                    self.G.popitem(last=False)
                return
        self._evict_m()

    def _evict_m(self) -> None:
        while True:
            t = self.M.popitem(last=False)[0]
            if self.freq[t] > 0:
                self.M[t] = None
                self.freq[t] = min(self.freq[t], 3) - 1
            else:
                del self.freq[t]
                return


class LFU:
    """Least frequently used; ties: the object that reached its count (or key) first."""

    def __init__(self, capacity: int, aging: bool = False) -> None:
        self.c, self.aging, self.L = capacity, aging, 0
        self.count: dict = {}
        self.key: dict = {}
        self.when: dict = {}
        self.t = 0

    def get(self, x) -> bool:
        self.t += 1
        if x in self.count:
            self.count[x] += 1
            self.key[x] = self.count[x] + self.L
            self.when[x] = self.t
            return True
        if len(self.count) == self.c:
            v = min(self.count, key=lambda k: (self.key[k], self.when[k]))
            if self.aging:
                self.L = self.key[v]
            del self.count[v], self.key[v], self.when[v]
        self.count[x] = 1
        self.key[x] = 1 + self.L
        self.when[x] = self.t
        return False


#: pcs policy spec -> reference factory.
REFERENCES = {"sieve": Sieve, "arc": ARC, "2q": TwoQ, "s3fifo": S3FIFO, "lfu:aging=none": LFU,
              "lfu": lambda c: LFU(c, aging=True)}
