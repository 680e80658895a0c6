"""Fleets: N instances behind a router (docs/semantics.md §17, docs/cluster.md).

:func:`fleet_replay` routes a trace (``pcs.fleet.routers``, one module per
router) from the router's view of each instance (``pcs.fleet.index``), replays
every instance's share with :func:`pcs.replay` and sums them up
(``pcs.fleet.summary``).

The names are imported on first use (:func:`pcs._lazy.lazy_package`), so loading
the routing twin ``pcs.fleet._route`` (the CLI's check of the compiled twins,
:func:`pcs._native.missing_note`) does not import the fleet modules.
"""
from pcs._lazy import lazy_package

__all__ = ["fleet_replay", "FleetResult", "FleetSummary", "FleetGap", "InstanceLoad", "ROUTERS", "parse_router",
           "router_names"]

lazy_package(__name__, {
    "FleetResult": "fleet", "fleet_replay": "fleet", "ROUTERS": "routers", "parse_router": "routers",
    "router_names": "routers", "FleetGap": "summary", "FleetSummary": "summary", "InstanceLoad": "summary",
})
