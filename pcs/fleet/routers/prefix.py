"""``prefix``: the instance whose (router-viewed) cache holds the longest prefix of the request.

Ties (including no instance holding anything) go to the fewest requests in
flight, then the lowest index. Source: SGLang router's cache-aware policy
(longest prefix match in its per-worker radix tree) and llm-d's
prefix-cache scorer, without their load terms (see ``cache-aware``).
"""
from __future__ import annotations

from pcs.fleet.routers import Router

__all__ = ["ROUTER"]


class Prefix(Router):
    """argmax over instances of (matched leading blocks, -requests in flight, -index)."""

    name = "prefix"
    source = "SGLang router cache_aware (prefix match); llm-d prefix-cache-scorer"
    uses_index = True

    def choose(self, req, index, load) -> int:
        blocks = req.blocks
        reqs = load.requests
        best, best_key = 0, None
        for i in range(self.instances):
            key = (index.match(i, blocks), -reqs[i])
            if best_key is None or key > best_key:
                best, best_key = i, key
        return best

    def native_rule(self):
        """Kind 0 of ``pcs/fleet/_route.c``."""
        return self._native_if(Prefix, (0, 0.0, 0.0))


ROUTER = Prefix
