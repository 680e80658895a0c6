"""Fleets: N instances behind a router (docs/semantics.md §17, docs/cluster.md).

:func:`fleet_replay` routes a trace (``pcs.fleet.routers``, one module per
router) from the router's view of each instance (``pcs.fleet.index``), replays
every instance's share with :func:`pcs.replay` and sums them up
(``pcs.fleet.summary``).
"""
from pcs.fleet.fleet import FleetResult, fleet_replay
from pcs.fleet.routers import ROUTERS, parse_router, router_names
from pcs.fleet.summary import FleetGap, FleetSummary, InstanceLoad

__all__ = ["fleet_replay", "FleetResult", "FleetSummary", "FleetGap", "InstanceLoad", "ROUTERS", "parse_router",
           "router_names"]
