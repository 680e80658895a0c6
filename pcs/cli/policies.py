"""``pcs policies``: the registered eviction policies (plug-ins included) and the admission policies.

Reads the registries (:mod:`pcs.cache.policies`, :mod:`pcs.cache.admission`);
one row per policy with its options (and defaults), where it comes from
(``pcs`` or the plug-in's distribution, entry-point group ``pcs.policies``),
the contract it implements (``keys``: pcs/cache/policies/base.py; ``array``:
the handle contract, pcs/cache/policies/array.py) and its source (paper,
reference implementation).
"""
from __future__ import annotations

from typing import Any

from pcs.cli.common import command, emit, format_option, quiet_option

__all__ = ["policies", "policy_rows", "admission_rows", "csv_rows"]


def policy_rows() -> list[dict[str, Any]]:
    """One dict per registered eviction policy: name, summary, options, needs, origin, contract, source."""
    from pcs.cache import policies as reg

    rows = []
    for name in reg.POLICY_NAMES:
        cls = reg.get_policy(name)
        rows.append({"name": name, "summary": cls.summary, "options": reg.policy_defaults(name),
                     "aliases": [a for a, n in reg.POLICY_ALIASES.items() if n == name],
                     "needs": list(cls.needs), "origin": reg.POLICY_ORIGINS[name], "contract": cls.contract,
                     "source": cls.source})
    return rows


def admission_rows() -> list[dict[str, Any]]:
    """One dict per admission kind: kind, summary, options (defaults), source."""
    import inspect

    from pcs.cache.admission import ADMISSION_KINDS, admission_kinds

    kinds = admission_kinds()
    rows = []
    for kind in ADMISSION_KINDS:
        cls = kinds[kind]
        params = inspect.signature(cls.__init__).parameters.values()
        opts = {p.name: p.default for p in params if p.name not in ("self", "context")}
        rows.append({"kind": kind, "summary": cls.summary, "options": opts, "source": cls.source})
    return rows


def csv_rows(pol: list[dict], adm: list[dict]) -> list[dict[str, str]]:
    """One CSV row per eviction policy, then one per admission kind (``type`` says which), every cell plain text:
    options as ``name=default, ...`` (as the table prints them; empty without options), aliases and needs
    joined by spaces."""
    def opts(r: dict) -> str:
        return ", ".join(f"{k}={v}" for k, v in r["options"].items())

    rows = [{"type": "eviction", "name": r["name"], "options": opts(r), "aliases": " ".join(r["aliases"]),
             "needs": " ".join(r["needs"]), "origin": r["origin"], "contract": r["contract"], "summary": r["summary"],
             "source": r["source"]} for r in pol]
    rows += [{"type": "admission", "name": r["kind"], "options": opts(r), "aliases": "", "needs": "",
              "origin": "pcs", "contract": "", "summary": r["summary"], "source": r["source"]} for r in adm]
    return rows


@command()
@format_option
@quiet_option
def policies(fmt: str, quiet: bool) -> None:
    """List the eviction policies (plug-ins included) and admission policies, with options and sources.

    \b
    Example:
      pcs policies
      pcs policies --format json

    CSV: one row per eviction policy, then per admission kind (type, name, options, aliases, needs, origin,
    contract, summary, source). JSON keys: policies (name, summary, options, aliases, needs, origin, contract,
    source), admission (kind, summary, options, source), plugin_errors.
    """
    from pcs.cache.policies import PLUGIN_ERRORS
    from pcs.report.policies import render_policies

    pol, adm = policy_rows(), admission_rows()
    if fmt == "csv":
        return emit({"rows": csv_rows(pol, adm)}, fmt, "", rows_key="rows")
    emit({"policies": pol, "admission": adm, "plugin_errors": list(PLUGIN_ERRORS)}, fmt,
         lambda: render_policies(pol, adm, list(PLUGIN_ERRORS)), rows_key="policies")
