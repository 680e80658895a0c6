"""``compare_routers``: one trace through the same fleet under several routers (``pcs compare --router``)."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from pcs.fleet.fleet import fleet_replay
from pcs.fleet.routers import parse_router
from pcs.schema import field, result

__all__ = ["compare_routers", "RouterRow", "RouterCompare"]


@result
class RouterRow:
    """One router's fleet figures (the fleet summary's headline keys)."""

    router: str = field("-", "router name and options")
    instances: int = field("count", "instances in the fleet")
    router_stale_s: float = field("s", "delay of the router's view")
    hit_ratio: float = field("ratio", "delivered hit ratio of the fleet")
    captured_hit_ratio: float = field("ratio", "each instance's own ceiling, summed, / prompt tokens; with a shared "
                                               "tier the ceiling of every instance reading every write "
                                               "(docs/semantics.md §17.1)")
    fleet_ceiling_hit_ratio: float = field("ratio", "single-sequence hit ratio of the whole trace")
    imbalance_requests: float = field("ratio", "max / mean requests per instance")
    imbalance_prompt_tokens: float = field("ratio", "max / mean prompt tokens per instance")
    imbalance_busy_s: float | None = field("ratio", "max / mean busy_s per instance (compute step)")
    ttft_p50_s: float | None = field("s", "median TTFT over the fleet")
    ttft_p99_s: float | None = field("s", "99th percentile TTFT over the fleet")
    shared_tier: str | None = field("-", "the shared tier (--shared-tier) as NAME=BYTES write-POLICY; absent "
                                         "without one", omit_none=True, default=None)
    shared_tier_hit_ratio: float | None = field("ratio", "hit ratio served by the shared tier (with --shared-tier)",
                                                omit_none=True, default=None)
    routing_captured_hit_ratio: float | None = field(
        "ratio", "what routing alone captures: each instance's own ceiling, summed, / prompt tokens (with "
                 "--shared-tier)", omit_none=True, default=None)


@result
class RouterCompare:
    """``pcs compare --router a --router b``: one row per router, in the order given."""

    trace: str = field("-", "trace path")
    routers: tuple[RouterRow, ...] = field("-", "one entry per router")


def compare_routers(trace: Any, routers: Sequence[str], *, instances: int, router_stale_s: float = 0.0,
                    progress: Callable[[int], None] | None = None, **replay_kwargs: Any) -> RouterCompare:
    """Run :func:`pcs.fleet.fleet_replay` once per router (same trace, fleet and options).

    Raises:
        ValueError: no router, a router given twice; what :func:`fleet_replay` raises.
    """
    if not routers:
        raise ValueError("give at least one --router")
    seen: dict[str, str] = {}
    for r in routers:   # the same router with its defaults spelled out (random, random:seed=0) is given twice
        key = parse_router(r, max(instances, 1)).describe() if isinstance(instances, int) and instances >= 1 \
            else str(r)
        if key in seen:
            raise ValueError(f"a --router is given twice: {seen[key]!r} and {r!r} are both {key}")
        seen[key] = str(r)
    rows, name = [], "<requests>"
    for r in routers:
        s = fleet_replay(trace, instances=instances, router=r, router_stale_s=router_stale_s, progress=progress,
                         **replay_kwargs).summary
        name = s.trace
        rows.append(RouterRow(s.router, s.instances, s.router_stale_s, s.hit_ratio, s.gap.captured_hit_ratio,
                              s.gap.fleet_ceiling_hit_ratio, s.imbalance_requests, s.imbalance_prompt_tokens,
                              s.imbalance_busy_s, s.ttft_p50_s, s.ttft_p99_s, *_shared(s.shared_tier)))
    return RouterCompare(name, tuple(rows))


def _shared(sh: Any) -> tuple:
    """(label, hit ratio served by it, routing's capture alone) of a fleet's shared tier, or three None."""
    if sh is None:
        return None, None, None
    from pcs.units import format_bytes

    label = f"{sh.name}={format_bytes(sh.capacity_blocks * sh.bytes_per_block)} write-{sh.write_policy}"
    return label, sh.hit_ratio, sh.routing_captured_hit_ratio
