"""``least-loaded``: the instance with the fewest requests in flight (option ``by=tokens``: prompt tokens).

Ties go to the lowest instance index. Source: SGLang router's
``shortest_queue`` policy and llm-d's ``queue-scorer`` (fewest waiting
requests scores highest). In flight as :class:`pcs.fleet.index.LoadTracker`
counts it.
"""
from __future__ import annotations

from pcs.choices import did_you_mean
from pcs.errors import UserError, shown_repr
from pcs.fleet.routers import Router

__all__ = ["ROUTER"]


class LeastLoaded(Router):
    """argmin over instances of (load, index); load = requests (default) or prompt tokens in flight."""

    name = "least-loaded"
    source = "SGLang router shortest_queue; llm-d queue-scorer"
    OPTIONS = {"by": (str, "requests", "requests or tokens in flight")}

    def __init__(self, instances: int, **options) -> None:
        super().__init__(instances, **options)
        if self.options["by"] not in ("requests", "tokens"):
            by = self.options["by"]
            raise UserError(f"router 'least-loaded': by={shown_repr(by)}; {did_you_mean(by, ('requests', 'tokens'))}"
                            "valid: requests, tokens")

    def choose(self, req, index, load) -> int:
        counts = load.requests if self.options["by"] == "requests" else load.tokens
        return min(range(self.instances), key=lambda i: (counts[i], i))

    def native_rule(self):
        """Kind 2 (requests) or 3 (tokens) of ``pcs/fleet/_route.c``."""
        return self._native_if(LeastLoaded, (2 if self.options["by"] == "requests" else 3, 0.0, 0.0))


ROUTER = LeastLoaded
