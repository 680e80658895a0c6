"""``round-robin``: request k (in arrival order) goes to instance k mod N.

Source: the default of Dynamo's frontend (``--router-mode round-robin``) and
of vLLM's production-stack router (``--routing-logic roundrobin``).
"""
from __future__ import annotations

import numpy as np

from pcs.fleet.routers import Router

__all__ = ["ROUTER"]


class RoundRobin(Router):
    """Instance ``position mod instances``."""

    name = "round-robin"
    source = "Dynamo --router-mode round-robin; vLLM production-stack roundrobin"

    def choose(self, req, index, load) -> int:
        return req.position % self.instances

    def assign_all(self, batch, hittable_blocks):
        """``arange(n) mod instances`` (int64, shape (n,))."""
        return np.arange(len(batch), dtype=np.int64) % self.instances


ROUTER = RoundRobin
