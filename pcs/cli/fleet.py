"""The fleet options of ``pcs replay`` and ``pcs compare`` (--instances, --router, --router-stale-s, --shared-tier).

``pcs replay --instances N --router NAME[:opt=v,...]`` runs
:func:`pcs.fleet.fleet_replay` and prints :func:`pcs.report.fleet.render_fleet`;
``pcs compare --router a --router b`` runs :func:`pcs.fleet.compare.compare_routers`.
"""
from __future__ import annotations

from typing import Any, Callable

import click

from pcs.choices import ROUTER_NAMES
from pcs.cli.common import Progress, RegistryChoice, drop_api_trace_notes, emit, with_trace_notes
from pcs.cli.params import Duration, Int
from pcs.errors import UserError

__all__ = ["fleet_options", "wants_fleet", "replay_fleet", "compare_fleet", "csv_payload"]

_ROUTER_HELP = ("Router of the fleet, NAME or NAME:opt=v,...: round-robin, random[:seed=0], "
                "least-loaded[:by=requests|tokens], session (needs session ids), consistent-hash[:k=4,vnodes=100], "
                "prefix, cache-aware[:overlap=2,load=1] (docs/cluster.md)")


def _check_router(spec: str) -> Any:
    """:func:`pcs.fleet.routers.parse_router` of ``spec`` (name and options), imported when a value is checked;
    a blank name (``--router ''``) is not the default router but refused like an unknown one."""
    from pcs.fleet.routers import parse_router

    if not str(spec).strip():
        raise UserError("a router name is empty; valid: " + ", ".join(ROUTER_NAMES))
    return parse_router(spec, 1)


def fleet_options(multiple: bool) -> Callable:
    """The decorator adding the fleet options (``--router`` repeatable when ``multiple``: pcs compare)."""
    from pcs.choices import MAX_INSTANCES, MAX_STALE_S

    def wrap(f: Callable) -> Callable:
        f = click.option("--shared-tier", default=None, metavar="NAME=SIZE",
                         help="A lower tier all instances read and write (a Mooncake store, an LMCache remote "
                              "backend), below each instance's own tiers, one link per instance (--link NAME=...; "
                              "default by name, remote = rdma-400g); e.g. remote=10TB. The instances run on one "
                              "clock, under the step scheduler too (docs/cluster.md).")(f)
        f = click.option("--router-stale-s", type=Duration(0, MAX_STALE_S, plain_seconds=True), default=None,
                         help="Time (e.g. 500ms; a plain number is seconds) between a cache event on an instance and the router seeing it (KV events "
                              "arrive late); default 0 = the router's index is exact. Only prefix and cache-aware "
                              "read the index (pcs compare gives the delay to those).")(f)
        f = click.option("--router", "router", multiple=multiple, type=RegistryChoice(ROUTER_NAMES, _check_router),
                         help=_ROUTER_HELP + (" (repeat to compare routers)." if multiple else "; default "
                                                                                               "round-robin."))(f)
        return click.option("--instances", type=Int(1, MAX_INSTANCES), default=None,
                            help="Instances behind a router, each with the tiers, links and scheduler of one "
                                 "replay (default 1 when --router is given).")(f)
    return wrap


#: --html / --plot with fleet options (the HTML report and the plots draw one instance's run)
FLEET_NO_HTML = ("--html/--plot draw a single-instance replay; with --instances/--router/--shared-tier use "
                 "--format json or csv (per instance) or --requests-out")


def wants_fleet(kw: dict[str, Any]) -> bool:
    """True when a fleet option was given."""
    return kw.get("instances") is not None or bool(kw.get("router")) or kw.get("router_stale_s") is not None or \
        kw.get("shared_tier") is not None


def replay_fleet(fmt: str, requests_out: str | None, kw: dict[str, Any]) -> None:
    """``pcs replay`` with fleet options: run the fleet, print its summary, write ``--requests-out``."""
    from pcs.cli.replay import open_trace_kwargs, replay_call_kwargs, write_requests
    from pcs.fleet import fleet_replay
    from pcs.report.fleet import render_fleet

    trace, kwargs = replay_call_kwargs(kw, open_trace_kwargs(kw))
    with Progress(kw["quiet"], desc="fleet") as progress:
        res = fleet_replay(trace, instances=kw["instances"] or 1, router=kw["router"] or "round-robin",
                           router_stale_s=kw["router_stale_s"] or 0.0, progress=progress,
                           tiers=list(kw["tiers"]) or None, policy=kw["policy"], shared_tier=kw["shared_tier"],
                           **kwargs)
    if requests_out:
        write_requests(res.requests, requests_out)
    payload = drop_api_trace_notes(res.summary.to_dict(), trace)    # given below in the command's words
    if not kw["quiet"] and fmt != "table":      # the run's notes on stderr, as pcs replay prints them
        for note in payload["notes"]:
            click.echo(f"pcs: note: {note}", err=True)
    with_trace_notes(payload, trace, fmt, kw["quiet"])  # synthetic reuse, skipped lines: as pcs replay
    if fmt == "json":      # as a single-instance replay's JSON: the trace read and the command that reruns the run
        from pcs.cli.rerun import replay_command
        from pcs.trace.fingerprint import trace_file

        payload["trace_file"] = trace_file(kw["trace"] or payload["trace"])
        payload["replay_command"] = replay_command(click.get_current_context())
    emit(csv_payload(payload) if fmt == "csv" else payload, fmt,
         lambda: "\n".join([render_fleet(payload, kw.get("compute_mode"), kw.get("timing"))]
                           + [f"note: {n}" for n in payload["notes"]]), rows_key="per_instance")


def csv_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """The fleet JSON with each ``per_instance`` row (one CSV row per instance) given the shared tier's columns
    when there is one: ``shared_tier`` (its name), ``shared_hit_tokens`` (prompt tokens this instance hit in
    it), ``shared_read_bytes`` and ``shared_written_blocks``, from ``shared_tier.per_instance`` (docs/cluster.md);
    the payload itself is left as it is (the JSON has them under ``shared_tier``)."""
    shared = payload.get("shared_tier")
    if not shared:
        return payload
    by_instance = {p["instance"]: p for p in shared["per_instance"]}
    rows = []
    for row in payload["per_instance"]:
        p = by_instance[row["instance"]]
        rows.append({**row, "shared_tier": shared["name"],
                     "shared_hit_tokens": p["hit_tokens"][p["tiers"].index(shared["name"])],
                     "shared_read_bytes": p["shared_read_bytes"], "shared_written_blocks": p["shared_written_blocks"]})
    return {**payload, "per_instance": rows}


def compare_fleet(fmt: str, trace: Any, replay_kwargs: dict[str, Any], kw: dict[str, Any]) -> None:
    """``pcs compare --router a --router b``: one column per router."""
    from pcs.fleet.compare import compare_routers
    from pcs.report.fleet import compare_title, render_router_compare

    if kw["policy"] and len(kw["policy"]) > 1:
        given = [opt for opt, on in (("--instances", kw.get("instances") is not None), ("--router", kw.get("router")),
                                     ("--router-stale-s", kw.get("router_stale_s") is not None),
                                     ("--shared-tier", kw.get("shared_tier") is not None)) if on]
        raise UserError(f"compare either routers or policies, not both: {' and '.join(given)} make"
                        f"{'s' if len(given) == 1 else ''} a router comparison (one column per --router), and "
                        f"--policy is given {len(kw['policy'])} times")
    with Progress(kw["quiet"], desc="compare") as progress:
        res = compare_routers(trace, list(kw["router"]) or ["round-robin"], instances=kw["instances"] or 1,
                              router_stale_s=kw["router_stale_s"] or 0.0, progress=progress,
                              policy=(kw["policy"] or (None,))[0], shared_tier=kw["shared_tier"], **replay_kwargs)
    payload = res.to_dict()
    title = compare_title(res.trace, payload["routers"], res.deployment)
    notes = with_trace_notes(payload, trace, fmt, kw["quiet"])
    if res.routers[0].instances == 1 and len(res.routers) > 1:
        one = ("one instance: every router sends every request to it, so routing cannot change these columns; "
               "give --instances N (N >= 2) to compare routers")
        payload["notes"] = list(payload.get("notes") or []) + [one]
        notes = (one,) + tuple(notes)
        if not kw["quiet"] and fmt != "table":
            click.echo(f"pcs: note: {one}", err=True)
    emit(payload, fmt, lambda: "\n".join([render_router_compare(payload["routers"], title)] + [f"note: {n}" for n in notes]),
         rows_key="routers")
