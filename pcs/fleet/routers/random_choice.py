"""``random``: a uniform random instance per request, seeded (option ``seed``, default 0).

Source: Dynamo's frontend ``--router-mode random``. Deterministic for one
seed: numpy's PCG64 (``numpy.random.default_rng(seed)``) draws one integer
per request in arrival order.
"""
from __future__ import annotations

import numpy as np

from pcs.fleet.routers import Router

__all__ = ["ROUTER"]


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
            self._draws = self._rng.integers(self.instances, size=4096).tolist()[::-1]
        return self._draws.pop()


ROUTER = RandomRouter
