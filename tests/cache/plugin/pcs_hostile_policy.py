"""Broken eviction policies for tests/cache/test_policy_guard.py (hostile-input findings 1, 2, 4, 5).

Each class is the FIFO-like :class:`pcs_demo_policy.DemoMRU` (a correct plug-in) with one misbehaviour, named by
its ``name`` (``h_MODE``); registered as plug-ins through a ``.dist-info`` for the subprocess runs.
"""
from __future__ import annotations

from pcs_demo_policy import DemoMRU


class Hostile(DemoMRU):
    """DemoMRU answering ``evict(n)`` against the contract as ``mode`` says (``ok``: correctly)."""

    name, mode = "h_ok", "ok"

    def __init__(self, capacity_blocks: int) -> None:
        if self.mode == "init":
            raise ValueError("init boom")
        super().__init__(capacity_blocks)
        self.pinned: set = set()

    def add(self, keys, reused=False):
        if self.mode == "add":
            raise RuntimeError("boom in add")
        self.pinned.difference_update(keys)
        super().add(keys, reused)

    def remove(self, keys):
        if self.mode == "remove":
            raise KeyError("boom in remove")
        keys = list(keys)
        self.pinned.update(keys)
        super().remove(keys)

    def evict(self, n):                     # noqa: C901 -- one branch per misbehaviour, on purpose
        m = self.mode
        if m == "evict":
            raise RuntimeError("boom from plugin")
        if m == "none":
            return None
        got = super().evict(n - 1 if m == "toofew" else n)
        if got is None:
            return None
        if m == "toomany":
            return got + got[:1]
        if m == "duplicate":
            return [got[0]] * n
        if m == "unknown":
            return [("nokey", i) for i in range(n)]
        if m == "pinned" and self.pinned:
            return [next(iter(self.pinned))] + got[1:]
        if m == "wrongtype":
            return "abc"
        if m == "generator":
            return (k for k in got)
        return got


MODES = ("ok", "toofew", "none", "toomany", "duplicate", "unknown", "pinned", "wrongtype", "generator",
         "evict", "add", "remove", "init")
#: h_MODE -> its class
CLASSES = {f"h_{m}": type(f"H_{m}", (Hostile,), {"name": f"h_{m}", "mode": m}) for m in MODES}
globals().update({cls.__name__: cls for cls in CLASSES.values()})
