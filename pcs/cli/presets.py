"""``pcs hardware`` and ``pcs models``: list presets; shared GPU/link override options.

Other commands reuse :func:`gpu_options` / :func:`resolve_gpu` and
:func:`link_options` / :func:`resolve_link` so every hardware figure can be
overridden the same way everywhere (``--gpu h100-sxm --hbm-bandwidth 3TB/s``).
"""
from __future__ import annotations

from typing import Any, Callable

import click

from pcs import units
from pcs.cli.common import emit, format_option
from pcs.hardware import (GPUSpec, HardwareTable, LinkSpec, TIER_LINKS, get_gpu, get_link,
                          load_hardware_file, override)
from pcs.report.table import render_table

__all__ = ["hardware", "models", "gpu_options", "resolve_gpu", "link_options", "resolve_link",
           "hardware_table"]

_GPU_OVERRIDES = {  # CLI option -> GPUSpec field
    "hbm_capacity": "hbm_bytes", "hbm_bandwidth": "hbm_bps", "bf16_flops": "bf16_flops", "fp8_flops": "fp8_flops",
}
_LINK_OVERRIDES = {  # CLI option -> LinkSpec field
    "link_bandwidth": "bandwidth_bps", "link_setup": "setup_s", "link_iops": "iops", "link_io_size": "io_size_bytes",
}


def _apply(options: list[Callable], f: Callable) -> Callable:
    for option in reversed(options):
        f = option(f)
    return f


def hardware_file_option(f: Callable) -> Callable:
    """``--hardware-file FILE``: TOML/JSON overrides and new entries (see pcs.hardware.load_hardware_file)."""
    return click.option("--hardware-file", type=click.Path(dir_okay=False),
                        help="TOML or JSON file overriding or adding GPU/link presets, "
                             "e.g. [gpu.h100-sxm] hbm_bps = \"3TB/s\".")(f)


def gpu_options(f: Callable) -> Callable:
    """``--gpu`` plus one override option per GPU figure (values with units)."""
    return _apply([
        click.option("--gpu", help="GPU preset, e.g. h100-sxm (list: pcs hardware)."),
        click.option("--hbm-capacity", help="Override HBM capacity, e.g. 80GB or 96GiB."),
        click.option("--hbm-bandwidth", help="Override HBM bandwidth, e.g. 3.35TB/s."),
        click.option("--bf16-flops", help="Override dense BF16 peak, FLOP/s as a plain number, e.g. 989.4e12."),
        click.option("--fp8-flops", help="Override dense FP8 peak, FLOP/s as a plain number, e.g. 1978.9e12."),
    ], f)


def link_options(f: Callable) -> Callable:
    """``--link`` plus one override option per link figure (values with units)."""
    return _apply([
        click.option("--link", help="Link preset, e.g. pcie-gen5-x16 (list: pcs hardware)."),
        click.option("--link-bandwidth", help="Link bandwidth (overrides the preset's), e.g. 20GB/s."),
        click.option("--link-setup", help="Setup latency per transfer (overrides the preset's), e.g. 10us."),
        click.option("--link-iops", help="IOPS limit (overrides the preset's), e.g. 1.5e6."),
        click.option("--link-io-size", help="I/O size the IOPS figure is quoted at, e.g. 4KiB."),
    ], f)


def hardware_table(hardware_file: str | None) -> HardwareTable | None:
    """Presets with the file's overrides, or None (the built-in presets) without a file."""
    return load_hardware_file(hardware_file) if hardware_file else None


def resolve_gpu(kwargs: dict[str, Any], table: HardwareTable | None = None) -> GPUSpec | None:
    """Pop the :func:`gpu_options` values from ``kwargs``; the GPU with overrides, or None.

    Raises:
        ValueError: unknown GPU, a bad value, or an override without ``--gpu``.
    """
    name = kwargs.pop("gpu", None)
    changes = {field: kwargs.pop(opt, None) for opt, field in _GPU_OVERRIDES.items()}
    given = [opt for opt, field in _GPU_OVERRIDES.items() if changes[field] is not None]
    if name is None:
        if given:
            raise ValueError(f"--{given[0].replace('_', '-')} needs --gpu NAME (the preset it overrides)")
        return None
    return override(get_gpu(name, table), note="overridden on the command line", **changes)


def resolve_link(kwargs: dict[str, Any], table: HardwareTable | None = None) -> LinkSpec | None:
    """Pop the :func:`link_options` values; the link preset with overrides, or None.

    Without ``--link`` but with ``--link-bandwidth`` an ad-hoc link named
    "custom" is built (setup 0 unless ``--link-setup``).

    Raises:
        ValueError: unknown link or a bad value.
    """
    name = kwargs.pop("link", None)
    changes = {field: kwargs.pop(opt, None) for opt, field in _LINK_OVERRIDES.items()}
    if name is None:
        if changes["bandwidth_bps"] is None:
            if any(v is not None for v in changes.values()):
                raise ValueError("--link-setup/--link-iops/--link-io-size need --link NAME or --link-bandwidth")
            return None
        bandwidth = units.parse_bandwidth(changes.pop("bandwidth_bps"))
        base = LinkSpec("custom", bandwidth, 0.0, None, None, "given on the command line")
        return override(base, note="set on the command line", **changes)
    return override(get_link(name, table), note="overridden on the command line", **changes)


def _gpu_row(g: GPUSpec) -> dict[str, Any]:
    return {"name": g.name, "hbm_bytes": g.hbm_bytes, "hbm_bps": g.hbm_bps, "bf16_flops": g.bf16_flops,
            "fp8_flops": g.fp8_flops, "source": g.source}


def _link_row(link: LinkSpec) -> dict[str, Any]:
    return {"name": link.name, "bandwidth_bps": link.bandwidth_bps, "setup_s": link.setup_s, "iops": link.iops,
            "io_size_bytes": link.io_size_bytes, "iops_bps": link.iops_bps,
            "default_for_tiers": [t for t, n in TIER_LINKS.items() if n == link.name], "source": link.source}


def _tflops(flops: float | None) -> str:
    return "-" if flops is None else f"{flops / 1e12:,.1f} TFLOP/s"


def _hardware_tables(gpus: list[dict[str, Any]], links: list[dict[str, Any]]) -> str:
    parts = []
    if gpus:
        parts.append(render_table(
            ["gpu", "HBM", "HBM bandwidth", "BF16 dense", "FP8 dense"],
            [[g["name"], units.format_bytes(g["hbm_bytes"]), units.format_bandwidth(g["hbm_bps"]),
              _tflops(g["bf16_flops"]), _tflops(g["fp8_flops"])] for g in gpus],
            title="GPUs (dense tensor-core peaks; datasheet sources: --format json)"))
    if links:
        parts.append(render_table(
            ["link", "bandwidth", "setup", "IOPS", "IOPS bandwidth", "default for tiers"],
            [[r["name"], units.format_bandwidth(r["bandwidth_bps"]), units.format_duration(r["setup_s"]),
              None if r["iops"] is None else units.format_count(r["iops"]),
              None if r["iops_bps"] is None else units.format_bandwidth(r["iops_bps"]),
              ", ".join(r["default_for_tiers"]) or None] for r in links],
            title="Links (effective one-direction bandwidth; setup = default latency per transfer)",
            notes=["bandwidths are effective defaults below the line rate; each source names the "
                   "theoretical figure and the assumption (pcs hardware --format json)"]))
    return "\n\n".join(parts)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@gpu_options
@link_options
@hardware_file_option
@format_option
def hardware(fmt: str, hardware_file: str | None, **kwargs: Any) -> None:
    """List GPU and link presets with their datasheet sources.

    GPUs: HBM capacity (bytes, decimal GB), HBM bandwidth (bytes/s), dense
    BF16 and FP8 tensor-core peaks (FLOP/s; A100 has no FP8). Links: effective
    one-direction bandwidth (bytes/s), default setup latency per transfer (s),
    and for SSDs 4 KiB IOPS. With --gpu/--link only that preset is shown,
    with any overrides applied.

    \b
    Examples:
      pcs hardware
      pcs hardware --gpu h100-sxm --hbm-bandwidth 3TB/s --format json
      pcs hardware --hardware-file my-cluster.toml

    JSON keys: gpus (name, hbm_bytes, hbm_bps, bf16_flops, fp8_flops, source),
    links (name, bandwidth_bps, setup_s, iops, io_size_bytes, iops_bps,
    default_for_tiers, source).
    """
    table = hardware_table(hardware_file)
    want_gpu, want_link = kwargs.get("gpu") is not None, kwargs.get("link") is not None
    gpu, link = resolve_gpu(kwargs, table), resolve_link(kwargs, table)
    t = table or HardwareTable()
    gpus = [gpu] if gpu else ([] if (want_link or link) else list(t.gpus.values()))
    links = [link] if link else ([] if want_gpu else list(t.links.values()))
    payload = {"gpus": [_gpu_row(g) for g in gpus], "links": [_link_row(x) for x in links]}
    if fmt == "csv":
        rows = [{"kind": "gpu", **r} for r in payload["gpus"]] + [
            {"kind": "link", **{k: (", ".join(v) if isinstance(v, list) else v) for k, v in r.items()}}
            for r in payload["links"]]
        emit({"rows": rows}, fmt, "")
        return
    emit(payload, fmt, lambda: _hardware_tables(payload["gpus"], payload["links"]))


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


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@format_option
def models(fmt: str) -> None:
    """List model presets (KV components, layers, parameters) with their config sources.

    Byte figures are per token in bytes (decimal units in the table); use
    `pcs footprint --model NAME --tokens T` for a full footprint.

    \b
    Example:
      pcs models --format json

    JSON key: models, a list of objects (one per preset; keys from pcs.model.list_models()).
    """
    from pcs.model import list_models  # lazy: H2's model package

    rows = list_models()
    payload = {"models": rows}

    def table() -> str:
        if not rows:
            return "no model presets"
        headers = [k for k in rows[0] if not k.endswith("source")]
        return render_table(headers, [[_cell(k, r.get(k)) for k in headers] for r in rows],
                            title="Model presets (sources: --format json)")

    emit(payload, fmt, table, rows_key="models")
