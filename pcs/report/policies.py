"""Report of the registered policies (``pcs policies``): eviction policies (plug-ins included) and admission kinds."""
from __future__ import annotations

from typing import Any

from pcs.report.table import render_table

__all__ = ["render_policies"]


def _options(defaults: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in defaults.items()) or "-"


def render_policies(pol: list[dict], adm: list[dict], errors: list[str]) -> str:
    """The two tables of ``pcs policies``: ``pol`` the eviction policies (:func:`pcs.cli.policies.policy_rows`:
    name, aliases, options, origin, contract, summary, source), ``adm`` the admission kinds
    (:func:`pcs.cli.policies.admission_rows`), ``errors`` the plug-ins left out (one note each)."""
    a = render_table(["policy", "options (default)", "origin", "contract", "what it does", "source"],
                     [[r["name"] + "".join(f" (alias {x})" for x in r["aliases"]), _options(r["options"]), r["origin"],
                       r["contract"], r["summary"], r["source"]] for r in pol],
                     title="Eviction policies (--policy NAME or NAME:OPTION=VALUE,...; --tier-policy TIER=...)",
                     notes=["belady and gdsf read the trace (a pre-pass): belady is an offline bound, not a policy "
                            "an engine can run", "plug-ins: entry-point group pcs.policies",
                            "contract: keys = EvictionPolicy (block keys, a call per batch), array = ArrayPolicy "
                            "(handles, a call per decision: docs/policies.md)"] +
                           [f"plug-in left out: {e}" for e in errors])
    b = render_table(["admission", "options (default)", "what it does", "source"],
                     [[r["kind"], _options(r["options"]), r["summary"], r["source"]] for r in adm],
                     title="Admission policies (--admit TIER=KIND[:ARGS], repeatable; any eviction policy)")
    return a + "\n\n" + b
