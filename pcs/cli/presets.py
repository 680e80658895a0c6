"""``pcs hardware`` and ``pcs models``: list presets; shared GPU/link override options.

Other commands reuse :func:`gpu_options` / :func:`resolve_gpu` and
:func:`link_options` / :func:`resolve_link` so every hardware figure can be
overridden the same way everywhere (``--gpu h100-sxm --hbm-bandwidth 3TB/s``).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import click

from pcs import units
from pcs.cli.common import apply_options, command, emit, format_option, quiet_option
from pcs.cli.params import CheckedPath
from pcs.errors import UserError, shown_repr
from pcs.hardware import (ALIASES, GPUSpec, HardwareTable, LinkSpec, get_gpu, get_link, load_hardware_file,
                          override)
from pcs.report.presets import gpu_row, hardware_csv_rows, link_row, render_hardware, render_models

__all__ = ["hardware", "models", "gpu_options", "resolve_gpu", "link_options", "resolve_link",
           "hardware_table", "refuse_unused"]

_GPU_OVERRIDES = {  # CLI option -> (GPUSpec field, help); the unit each needs is in _KINDS
    "hbm_capacity": ("hbm_bytes", "Override HBM capacity, e.g. 80GB or 96GiB."),
    "hbm_bandwidth": ("hbm_bps", "Override HBM bandwidth, e.g. 3.35TB/s."),
    "bf16_flops": ("bf16_flops", "Override dense BF16 peak, FLOP/s as a plain number, e.g. 989.4e12."),
    "fp8_flops": ("fp8_flops", "Override dense FP8 peak, FLOP/s as a plain number, e.g. 1978.9e12."),
}
_LINK_OVERRIDES = {  # CLI option -> (LinkSpec field, help)
    "link_bandwidth": ("bandwidth_bps", "Link bandwidth (overrides the preset's), e.g. 20GB/s."),
    "link_setup": ("setup_s", "Setup latency per transfer (overrides the preset's), e.g. 10us."),
    "link_iops": ("iops", "IOPS limit (overrides the preset's), e.g. 1.5e6."),
    "link_io_size": ("io_size_bytes", "I/O size the IOPS figure is quoted at, e.g. 4KiB."),
}


#: The override options that take a size, bandwidth or duration: a unit is required (0 allowed, docs/semantics.md §16).
_KINDS = {"hbm_capacity": "size", "hbm_bandwidth": "bandwidth", "link_bandwidth": "bandwidth",
          "link_setup": "latency", "link_io_size": "io size"}


def _preset_options(preset: str, preset_help: str, overrides: dict[str, tuple[str, str]], f: Callable) -> Callable:
    """``preset`` (the preset's name) and one ``--OPTION`` per entry of ``overrides``, in table order."""
    options = [click.option(preset, help=preset_help)]
    options += [click.option(f"--{opt.replace('_', '-')}", help=text) for opt, (_, text) in overrides.items()]
    return apply_options(options, f)


def _changes(kwargs: dict[str, Any], overrides: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """Pop the override options of ``overrides`` from ``kwargs``: spec field -> value (None = not given); a size,
    bandwidth or duration given as a plain non-zero number is refused (:func:`pcs.units.require_unit`).

    Raises:
        UserError: ``--hbm-capacity '80' has no unit: give a unit: 80GB``.
    """
    from pcs.cli.params import option_flagged

    out = {spec_field: kwargs.pop(opt, None) for opt, (spec_field, _) in overrides.items()}
    for opt, (spec_field, _) in overrides.items():
        if opt in _KINDS and out[spec_field] is not None:   # checked here so a refusal names the option
            option_flagged(out[spec_field], "--" + opt.replace("_", "-"), _KINDS[opt])
    return out


def hardware_file_option(f: Callable) -> Callable:
    """``--hardware-file FILE``: TOML/JSON overrides and new entries (see pcs.hardware.load_hardware_file)."""
    return click.option("--hardware-file", type=CheckedPath(dir_okay=False),
                        help="TOML or JSON file overriding or adding GPU/link presets, "
                             "e.g. [gpu.h100-sxm] hbm_bps = \"3TB/s\".")(f)


def gpu_options(f: Callable) -> Callable:
    """``--gpu`` plus one override option per GPU figure (values with units)."""
    return _preset_options("--gpu", "GPU preset, e.g. h100-sxm (list: pcs hardware).", _GPU_OVERRIDES, f)


def link_options(f: Callable) -> Callable:
    """``--link`` plus one override option per link figure (values with units)."""
    return _preset_options("--link", "Link preset, e.g. pcie-gen5-x16 (list: pcs hardware).", _LINK_OVERRIDES, f)


def refuse_unused(command: str, kw: dict[str, Any], options: Sequence[str | tuple[str, str]], why: str) -> None:
    """Refuse the first of ``options`` (keys of ``kw``, ``hbm_capacity`` for ``--hbm-capacity``, or (key, flag)
    pairs where the flag is not the key's spelling: ``("utilisation", "--mfu")``) that was given
    although ``command`` reads it nowhere (``why``: what it reads instead), so an override never goes silently
    unused (``pcs envelope --hbm-capacity 1B`` was accepted and ignored; the replay's rule for
    options that do not apply, ``pcs.cli.replay.refuse_inapplicable``).

    Raises:
        UserError: ``pcs COMMAND does not use --OPTION: WHY``.
    """
    pairs = [o if isinstance(o, tuple) else (o, "--" + o.replace("_", "-")) for o in options]
    given = [flag for key, flag in pairs if kw.get(key) is not None]
    if given:
        raise UserError(f"pcs {command} does not use {given[0]}: {why}")


def hardware_table(hardware_file: str | None) -> HardwareTable | None:
    """Presets with the file's overrides, or None (the built-in presets) without a file; the file's notes (a new
    entry named close to a preset, :attr:`pcs.hardware.HardwareTable.notes`) on stderr as ``pcs: note: ...``
    unless the command runs with ``--quiet`` (``pcs replay`` has its own: the notes of its summary and JSON)."""
    if not hardware_file:
        return None
    table = load_hardware_file(hardware_file)
    ctx = click.get_current_context(silent=True)
    if not (ctx is not None and ctx.params.get("quiet")):
        for note in table.notes:
            click.echo(f"pcs: note: {note}", err=True)
    return table


def resolve_gpu(kwargs: dict[str, Any], table: HardwareTable | None = None) -> GPUSpec | None:
    """Pop the :func:`gpu_options` values from ``kwargs``; the GPU with overrides, or None.

    Raises:
        UserError: unknown GPU, a bad value, or an override without ``--gpu``.
    """
    name = kwargs.pop("gpu", None)
    changes = _changes(kwargs, _GPU_OVERRIDES)
    given = [opt for opt, (spec_field, _) in _GPU_OVERRIDES.items() if changes[spec_field] is not None]
    if name is None:
        if given:
            raise UserError(f"--{given[0].replace('_', '-')} needs --gpu NAME (the preset it overrides)")
        return None
    return _named(_GPU_OVERRIDES, changes, lambda: override(get_gpu(name, table), note="overridden on the "
                                                            "command line", **changes))


def _named(overrides: dict[str, tuple[str, str]], changes: dict[str, Any], build: Callable) -> Any:
    """``build()``, a refusal of a figure given on the command line naming the flag typed (``--hbm-capacity 0GB``
    said ``h100-sxm: hbm_bytes must be an int > 0``).

    Raises:
        UserError: ``--hbm-capacity '0GB': h100-sxm: hbm_bytes must be an int > 0, got 0``.
    """
    try:
        return build()
    except UserError as exc:
        for opt, (spec_field, _) in overrides.items():
            if changes.get(spec_field) is not None and spec_field in str(exc):
                raise UserError(f"--{opt.replace('_', '-')} {shown_repr(changes[spec_field])}: {exc}") from None
        raise


def resolve_link(kwargs: dict[str, Any], table: HardwareTable | None = None) -> LinkSpec | None:
    """Pop the :func:`link_options` values; the link preset with overrides, or None.

    Without ``--link`` but with ``--link-bandwidth`` an ad-hoc link named
    "custom" is built (setup 0 unless ``--link-setup``).

    Raises:
        UserError: unknown link or a bad value.
    """
    name = kwargs.pop("link", None)
    changes = _changes(kwargs, _LINK_OVERRIDES)
    if name is None:
        if changes["bandwidth_bps"] is None:
            if any(v is not None for v in changes.values()):
                raise UserError("--link-setup/--link-iops/--link-io-size need --link NAME or --link-bandwidth")
            return None
        bandwidth = units.parse_bandwidth(changes["bandwidth_bps"])
        base = LinkSpec("custom", bandwidth, 0.0, None, None, "given on the command line")
        rest = {k: v for k, v in changes.items() if k != "bandwidth_bps"}
        return _named(_LINK_OVERRIDES, changes, lambda: override(base, note="set on the command line", **rest))
    return _named(_LINK_OVERRIDES, changes, lambda: override(get_link(name, table), note="overridden on the "
                                                             "command line", **changes))


@command()
@gpu_options
@link_options
@hardware_file_option
@format_option
@quiet_option
def hardware(fmt: str, hardware_file: str | None, quiet: bool, **kwargs: Any) -> None:
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
    payload = {"gpus": [gpu_row(g) for g in gpus], "links": [link_row(x) for x in links]}
    if fmt == "csv":
        emit({"rows": hardware_csv_rows(payload)}, fmt, "")
        return
    emit(payload, fmt, lambda: render_hardware(payload["gpus"], payload["links"], ALIASES))


@command()
@format_option
@quiet_option
def models(fmt: str, quiet: bool) -> None:
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
    emit({"models": rows}, fmt, lambda: render_models(rows), rows_key="models")
