"""A tiny third-party eviction policy for the plug-in test (tests/cache/test_policies_plugin.py).

Most recently used first (MRU), the textbook opposite of LRU; registered through the
entry point ``[project.entry-points."pcs.policies"] demo_mru = "pcs_demo_policy:DemoMRU"``.
"""
from __future__ import annotations

from collections import OrderedDict

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
