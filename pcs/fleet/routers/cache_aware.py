"""``cache-aware``: score = overlap x cached fraction - load x normalised load; the best score wins.

For each instance i: ``cached fraction`` = leading blocks of the request in
the router's view of i / the request's hittable blocks (0 when it has none);
``normalised load`` = requests in flight on i / the most on any instance (0
when none is busy). Ties go to the lowest index.

Source and defaults: Dynamo's KV router cost function
``worker_logits = 2 * score - gpu_cache_usage - normalized_waiting``
(docs.nvidia.com/dynamo, "KV Router Performance Tuning"; score = matched
blocks x block size / tokens) -- overlap weight 2, load weight 1; the
``gpu_cache_usage`` term is left out (every instance here has the same
tiers and runs full). llm-d's precise prefix-cache scorer is the same
form, a weighted sum of a prefix score in [0, 1] and load scorers
(``queue-scorer``), weights set per deployment. Options ``overlap``, ``load``.
"""
from __future__ import annotations

from pcs.fleet.routers import Router

__all__ = ["ROUTER"]


class CacheAware(Router):
    """argmax over instances of overlap * match/hittable - load * requests/max requests (lowest index on ties)."""

    name = "cache-aware"
    source = ("Dynamo KV router: 2 * overlap score - normalized waiting; "
              "llm-d precise-prefix-cache-scorer + queue-scorer")
    OPTIONS = {"overlap": (float, 2.0, "weight of the cached fraction"),
               "load": (float, 1.0, "weight of the normalised requests in flight")}
    #: only the ratio of the weights matters; 1e6 bounds it (every numeric input of pcs is bounded)
    BOUNDS = {"overlap": (0.0, 1e6), "load": (0.0, 1e6)}
    uses_index = True

    def choose(self, req, index, load) -> int:
        blocks = req.blocks
        n = len(blocks)
        reqs = load.requests
        top = max(reqs)
        w_o, w_l = self.options["overlap"], self.options["load"]
        best, best_score = 0, None
        for i in range(self.instances):
            frac = index.match(i, blocks) / n if n else 0.0
            score = w_o * frac - (w_l * reqs[i] / top if top else 0.0)
            if best_score is None or score > best_score:
                best, best_score = i, score
        return best

    def native_rule(self):
        """Kind 1 of ``pcs/fleet/_route.c`` with these weights (the same score, operation by operation)."""
        return self._native_if(CacheAware, (1, float(self.options["overlap"]), float(self.options["load"])))


ROUTER = CacheAware
