"""Report of the presets (``pcs hardware``, ``pcs models``): rows and tables.

GPU rows: HBM bytes, HBM bytes/s, dense BF16/FP8 FLOP/s and the datasheet
source (:mod:`pcs.hardware`); link rows: effective bytes/s, setup seconds,
IOPS and the tiers the link is the default for; model rows: whatever
:func:`pcs.model.list_models` reports, formatted by key suffix (``_bytes``,
``_bps``, ``_s``).
"""
from __future__ import annotations

from typing import Any

from pcs import units
from pcs.hardware import TIER_LINKS, GPUSpec, LinkSpec
from pcs.report.table import render_table, shown_name

__all__ = ["gpu_row", "link_row", "render_hardware", "hardware_csv_rows", "render_models"]


def gpu_row(g: GPUSpec) -> dict[str, Any]:
    """One GPU as a JSON row (bytes, bytes/s, FLOP/s; ``fp8_flops`` None when the GPU has no FP8)."""
    return {"name": g.name, "hbm_bytes": g.hbm_bytes, "hbm_bps": g.hbm_bps, "bf16_flops": g.bf16_flops,
            "fp8_flops": g.fp8_flops, "source": g.source}


def link_row(link: LinkSpec) -> dict[str, Any]:
    """One link as a JSON row (bytes/s, seconds, IOPS; the tier names it is the default restore link of)."""
    return {"name": link.name, "bandwidth_bps": link.bandwidth_bps, "setup_s": link.setup_s, "iops": link.iops,
            "io_size_bytes": link.io_size_bytes, "iops_bps": link.iops_bps,
            "default_for_tiers": [t for t, n in TIER_LINKS.items() if n == link.name], "source": link.source}


def _tflops(flops: float | None) -> str:
    return "-" if flops is None else f"{flops / 1e12:,.1f} TFLOP/s"


def _alias_note(rows: list[dict[str, Any]], aliases: dict[str, str] | None) -> list[str]:
    """``also accepted: h100 = h100-sxm, ...`` for the aliases naming a listed preset (none: no note)."""
    shown = {r["name"] for r in rows}
    pairs = [f"{a} = {n}" for a, n in (aliases or {}).items() if n in shown]
    return [f"also accepted: {', '.join(pairs)}"] if pairs else []


def render_hardware(gpus: list[dict[str, Any]], links: list[dict[str, Any]],
                    aliases: dict[str, str] | None = None) -> str:
    """The GPU table and the link table (either left out when empty), from :func:`gpu_row` / :func:`link_row` rows;
    ``aliases`` (alias -> preset name, :data:`pcs.hardware.ALIASES`) are noted under the table of their preset."""
    parts = []
    if gpus:
        parts.append(render_table(
            ["gpu", "HBM", "HBM bandwidth", "BF16 dense", "FP8 dense"],
            [[shown_name(g["name"]), units.format_bytes(g["hbm_bytes"]), units.format_bandwidth(g["hbm_bps"]),
              _tflops(g["bf16_flops"]), _tflops(g["fp8_flops"])] for g in gpus],
            title="GPUs (dense tensor-core peaks; datasheet sources: --format json)", notes=_alias_note(gpus, aliases)))
    if links:
        parts.append(render_table(
            ["link", "bandwidth", "setup", "IOPS", "IOPS bandwidth", "default for tiers"],
            [[shown_name(r["name"]), units.format_bandwidth(r["bandwidth_bps"]), units.format_duration(r["setup_s"]),
              None if r["iops"] is None else units.format_count(r["iops"]),
              None if r["iops_bps"] is None else units.format_bandwidth(r["iops_bps"]),
              ", ".join(r["default_for_tiers"]) or None] for r in links],
            title="Links (effective one-direction bandwidth; setup = default latency per transfer)",
            notes=["bandwidths are effective defaults below the line rate; each source names the "
                   "theoretical figure and the assumption (pcs hardware --format json)"] + _alias_note(links, aliases)))
    return "\n\n".join(parts)


def hardware_csv_rows(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """GPUs then links as flat CSV rows with a ``kind`` column; list cells joined with ", "."""
    return [{"kind": "gpu", **r} for r in payload["gpus"]] + [
        {"kind": "link", **{k: (", ".join(v) if isinstance(v, list) else v) for k, v in r.items()}}
        for r in payload["links"]]


def _cell(key: str, value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) or None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if key.endswith("dtype_bytes"):  # bytes per parameter, not a size
        return f"{value:g}"
    if key.endswith("_bytes"):
        return units.format_bytes(value)
    if key.endswith("_bps"):
        return units.format_bandwidth(value)
    if key.endswith("_s"):
        return units.format_duration(value)
    return units.format_count(value)


def render_models(rows: list[dict[str, Any]]) -> str:
    """The model preset table: one row per preset, every key but the sources (those are in the JSON)."""
    if not rows:
        return "no model presets"
    headers = [k for k in rows[0] if not k.endswith("source")]
    return render_table(headers, [[_cell(k, r.get(k)) for k in headers] for r in rows],
                        title="Model presets (sources: --format json)")
