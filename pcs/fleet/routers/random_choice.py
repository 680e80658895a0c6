"""``random``: a uniform random instance per request, seeded (option ``seed``, default 0).

Source: Dynamo's frontend ``--router-mode random``. Deterministic for one
seed: numpy's PCG64 (``numpy.random.default_rng(seed)``) draws one integer
per request in arrival order.
"""
from __future__ import annotations

import numpy as np

from pcs.fleet.routers import Router

__all__ = ["ROUTER"]

_BLOCK = 4096      # draws per call of the generator


class RandomRouter(Router):
    """``default_rng(seed).integers(instances)`` per request, in arrival order."""

    name = "random"
    source = "Dynamo --router-mode random"
    OPTIONS = {"seed": (int, 0, "seed of numpy.random.default_rng")}
    BOUNDS = {"seed": (0, 2 ** 64 - 1)}

    def __init__(self, instances: int, **options) -> None:
        super().__init__(instances, **options)
        self._rng = np.random.default_rng(self.options["seed"])
        self._draws: list[int] = []

    def choose(self, req, index, load) -> int:
        if not self._draws:  # draw in blocks: the same sequence as one draw per request
            self._draws = self._rng.integers(self.instances, size=_BLOCK).tolist()[::-1]
        return self._draws.pop()

    def assign_all(self, batch, hittable_blocks):
        """The draws :meth:`choose` takes, in the same blocks of 4,096 (int64, shape (n,)); a fresh generator
        from the seed (this router's own draws are left untouched)."""
        n = len(batch)
        rng = np.random.default_rng(self.options["seed"])
        parts = [rng.integers(self.instances, size=_BLOCK) for _ in range(-(-n // _BLOCK))]
        return np.concatenate(parts)[:n].astype(np.int64) if parts else np.zeros(0, np.int64)


ROUTER = RandomRouter
