"""A tiny third-party eviction policy for the plug-in test (tests/cache/test_policies_plugin.py).

Most recently used first (MRU), the textbook opposite of LRU; registered through the
entry point ``[project.entry-points."pcs.policies"] demo_mru = "pcs_demo_policy:DemoMRU"``.
"""
from __future__ import annotations

from collections import OrderedDict
from itertools import compress, islice

from pcs.cache.policies.array import ArrayPolicy
from pcs.cache.policies.base import EvictionPolicy


class DemoMRU(EvictionPolicy):
    """Evict the most recently released batch first (within a batch, in the eviction order given)."""

    name = "demo_mru"
    summary = "most recently used first (a plug-in example)"
    source = "textbook MRU (Chou and DeWitt, VLDB'85); tests/cache/plugin/pcs_demo_policy.py"

    def __init__(self, capacity_blocks: int, keep_first: int = 0) -> None:
        super().__init__(capacity_blocks)
        self.keep_first = keep_first
        self._od: OrderedDict = OrderedDict()

    def __len__(self):
        return len(self._od)

    def __contains__(self, key):
        return key in self._od

    def add(self, keys, reused=False):
        for k in reversed(keys):          # keys come in eviction order: the first given goes first
            self._od[k] = None

    def remove(self, keys):
        for k in keys:
            del self._od[k]

    def touch(self, keys):
        for k in reversed(keys):
            self._od.move_to_end(k)

    def evict(self, n):
        if n > len(self._od):
            return None
        return [self._od.popitem(last=True)[0] for _ in range(n)]

    def order(self):
        return list(reversed(self._od))

    def _check(self):
        pass


class DemoMRUArray(ArrayPolicy):
    """:class:`DemoMRU` on the handle contract (pcs/cache/policies/array.py): the same order, no key in Python.

    Each run of handles (an add or a touch) is pushed on a stack; victims come from the top run
    (the most recent batch), first handle first, as ``DemoMRU`` pops the batch it added reversed."""

    name, summary, source = "demo_mru_array", DemoMRU.summary[:-1] + ", handle contract)", DemoMRU.source

    def __init__(self, capacity_blocks: int, keep_first: int = 0) -> None:
        super().__init__(capacity_blocks)
        self.keep_first, self._stack = keep_first, []    # _stack: [lo, hi) handle ranges, a run each, top last

    def victims(self, n, runs):
        stack, flags = self._stack, self.flags
        for first, count, _ in runs:             # [lo, hi) handle ranges of the new runs, pushed in order
            stack.append((first, first + count))
        out = None
        while n:
            lo, hi = stack.pop()
            lo = flags.find(1, lo, hi)
            if lo < 0:
                continue                         # a run with nothing held
            end = lo + n
            if end <= hi and flags.count(1, lo, end) == n:      # the next n held: a range, no int each
                got = range(lo, end)
            else:
                got = list(islice(compress(range(lo, hi), flags[lo:hi]), n))
                end = got[-1] + 1
            if end < hi:
                stack.append((end, hi))          # the rest of the run stays on top
            if out is None:
                if len(got) == n:
                    return got
                out = list(got)
            else:
                out += got
            n -= len(got)
        return out or ()

    def order_handles(self):
        flags = self.flags
        return [h for lo, hi in reversed(self._stack) for h in compress(range(lo, hi), flags[lo:hi])]
