"""``compare_routers``: one trace through the same fleet under several routers (``pcs compare --router``)."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from pcs.choices import MAX_INSTANCES
from pcs.errors import UserError, shown_repr, keyword_refusal
from pcs.fleet.fleet import fleet_replay
from pcs.fleet.routers import parse_router, stale_view_applies
from pcs.fleet.summary import FleetSummary
from pcs.schema import field, own, projection, renamed, result, take

__all__ = ["compare_routers", "RouterRow", "RouterCompare"]


#: The fields of :class:`RouterRow`, in JSON order: the fleet summary's headline keys (type, unit and
#: meaning declared in :class:`FleetSummary` and the classes it nests) and the shared tier's label.
_ROW_COLUMNS = (
    *take("router", "instances", "router_stale_s", "hit_ratio", "gap.captured_hit_ratio",
          "gap.fleet_ceiling_hit_ratio", "imbalance_requests", "imbalance_prompt_tokens", "imbalance_busy_s",
          "ttft_p50_s", "ttft_p99_s"),
    own("shared_tier", "str | None", field("-", "the shared tier (--shared-tier) as NAME=BYTES write-POLICY; "
                                              "absent without one", omit_none=True, default=None)),
    renamed("shared_tier.hit_ratio", "shared_tier_hit_ratio", "hit ratio served by the shared tier (with "
                                                              "--shared-tier)"),
    *take("shared_tier.routing_captured_hit_ratio"),
)


@projection(FleetSummary, _ROW_COLUMNS)
class RouterRow:
    """One router's fleet figures (the fleet summary's headline keys)."""


@result
class RouterCompare:
    """``pcs compare --router a --router b``: one row per router, in the order given."""

    trace: str = field("-", "trace path")
    routers: tuple[RouterRow, ...] = field("-", "one entry per router")
    deployment: str = field("-", "the fleet's model and deployment as the fleet replay's header names them "
                                 "(model, KV dtype, GPUs, TP, block size, tiers per instance)", default="")


def compare_routers(trace: Any, routers: Sequence[str], *, instances: int, router_stale_s: float = 0.0,
                    progress: Callable[[int], None] | None = None, **replay_kwargs: Any) -> RouterCompare:
    """Run :func:`pcs.fleet.fleet_replay` once per router (same trace, fleet and options).

    ``router_stale_s`` is passed to the routers that read the cache index (prefix, cache-aware) and 0 to the
    others (:func:`pcs.fleet.routers.stale_view_applies`): a load-only router beside them is the baseline
    it always is, and its row records the exact view it had (``router_stale_s`` 0), not a delay it never read.

    Raises:
        UserError: no router, a router given twice, a delay > 0 that none of the routers reads; what
            :func:`fleet_replay` raises.
    """
    if not routers:
        raise UserError("give at least one router in routers=")
    ok = isinstance(instances, int) and not isinstance(instances, bool) and 1 <= instances <= MAX_INSTANCES
    parsed = []
    for r in routers:
        with keyword_refusal("routers", r):
            parsed.append(parse_router(r, instances if ok else 1))    # a bad count: fleet_replay says so
    seen: dict[str, str] = {}
    for r, p in zip(routers, parsed):   # the same router with its defaults spelled out (random, random:seed=0)
        key = p.describe()
        if key in seen:
            raise UserError(f"a router in routers= is given twice: {shown_repr(seen[key])} and {shown_repr(r)} are both {key}")
        seen[key] = str(r)
    applies = stale_view_applies(parsed, router_stale_s)
    rows, name, deployment = [], "<requests>", ""
    for r, stale in zip(routers, applies):
        s = fleet_replay(trace, instances=instances, router=r, router_stale_s=router_stale_s if stale else 0.0,
                         progress=progress, **replay_kwargs).summary
        name = s.trace
        deployment = deployment or _deployment(s)
        rows.append(RouterRow.from_source(s, shared_tier=_shared_label(s.shared_tier)))
    return RouterCompare(name, tuple(rows), deployment)


def _deployment(s: Any) -> str:
    """The fleet replay's header words for the model and deployment (:func:`pcs.report.fleet.deployment_words`)."""
    from pcs.report.fleet import deployment_words

    return deployment_words(s.to_dict())


def _shared_label(sh: Any) -> str | None:
    """A fleet's shared tier as NAME=BYTES write-POLICY, or None without one."""
    if sh is None:
        return None
    from pcs.units import format_bytes

    return f"{sh.name}={format_bytes(sh.capacity_blocks * sh.bytes_per_block)} write-{sh.write_policy}"
