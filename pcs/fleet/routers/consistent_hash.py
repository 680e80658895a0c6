"""``consistent-hash``: a hash ring keyed by the request's first ``k`` blocks (option ``k``, default 4).

Ids are chained (docs/semantics.md §1): block j's id names the whole prefix
up to j, so the key is the id of block ``min(k, n) - 1`` (a request with no
hittable block keys on its position). The ring holds ``vnodes`` (default
100) points per instance at ``splitmix64(instance * 2**32 + v)``; a key goes
to the first point clockwise of ``splitmix64(key ^ KEY_SALT)`` (Karger et al., STOC'97;
the ring of vLLM production-stack's prefix/session hashing). The key's hash is salted so it never shares
the ring points' inputs: with ``splitmix64(key)`` a key ``k < vnodes`` hashed exactly onto instance 0's point
``v = k`` (and key ``i * 2**32 + v`` onto instance i's), so a trace with small ids (``pcs trace synth``, ids
renumbered from 0) sent them all to instance 0. vLLM production-stack's ring (uhashring, ketama) keeps the
two apart the same way: its points hash the node's name and replica number, its keys the request's key.
:data:`KEY_SALT` has bit 63 set, so a key below 2**63 (and a position key ``2**63 + position``) is
salted to a number of at least 2**62, and a point's input ``i * 2**32 + v`` (i < 2**20) is below 2**52: no key
is hashed from a point's input. k = 4 is pcs's
choice (no engine default); every Mooncake request starts with id 0, so
k = 1 sends the whole trace to one instance.
"""
from __future__ import annotations

from bisect import bisect_left

from pcs.errors import UserError
from pcs.fleet.routers import Router
from pcs.fleet.routers.session import splitmix64, splitmix64_array

__all__ = ["ROUTER", "KEY_SALT"]

#: XORed into a key before it is hashed (xxHash64's PRIME64_2): keeps the keys' hashes apart from the ring points'.
KEY_SALT = 0xC2B2AE3D27D4EB4F


class ConsistentHash(Router):
    """The ring point at or after ``splitmix64(key ^ KEY_SALT)`` (wrapping), key = id of block min(k, n) - 1."""

    name = "consistent-hash"
    source = "Karger et al. STOC'97 hash ring; vLLM production-stack hashing routers"
    OPTIONS = {"k": (int, 4, "leading blocks in the key"), "vnodes": (int, 100, "ring points per instance")}
    #: the ring is instances x vnodes Python entries (~1 s and ~100 MB per million): vnodes <= 10,000 and at
    #: most MAX_POINTS in all keep it under a second (a ring of 100-1,000 points per node balances within
    #: a few percent, Karger et al.)
    BOUNDS = {"k": (1, 1_000_000), "vnodes": (1, 10_000)}
    MAX_POINTS = 1_000_000

    def __init__(self, instances: int, **options) -> None:
        super().__init__(instances, **options)
        if self.options["vnodes"] * instances > self.MAX_POINTS:
            raise UserError(f"router 'consistent-hash': instances x vnodes = {instances} x "
                             f"{self.options['vnodes']} must be <= {self.MAX_POINTS:,} ring points")
        ring = sorted((splitmix64((i << 32) + v), i) for i in range(instances) for v in range(self.options["vnodes"]))
        self._points = [p for p, _ in ring]
        self._owner = [i for _, i in ring]

    uses_blocks = True

    def assign_all(self, batch, hittable_blocks):
        """:meth:`choose` for every request at once (numpy: the keys, ``splitmix64_array``, one searchsorted)."""
        import numpy as np

        n = len(batch)
        hit = np.asarray(hittable_blocks, dtype=np.int64)
        has = hit > 0
        at = batch.block_offsets[:-1] + np.minimum(self.options["k"], hit) - 1
        keys = np.where(has, batch.block_hashes[np.where(has, at, 0)] if len(batch.block_hashes) else 0,
                        np.uint64(1 << 63) + np.arange(n, dtype=np.uint64)).astype(np.uint64)
        j = np.searchsorted(np.asarray(self._points, dtype=np.uint64), splitmix64_array(keys ^ np.uint64(KEY_SALT)),
                            side="left")
        return np.asarray(self._owner, dtype=np.int64)[j % len(self._owner)]

    def choose(self, req, index, load) -> int:
        blocks = req.blocks
        key = int(blocks[min(self.options["k"], len(blocks)) - 1]) if len(blocks) else (1 << 63) + req.position
        j = bisect_left(self._points, splitmix64((key & ((1 << 64) - 1)) ^ KEY_SALT))
        return self._owner[j % len(self._owner)]


ROUTER = ConsistentHash
