"""The replay's GPU tier from the deployment, and the notes that explain it.

``pcs replay`` with no GPU tier size sizes it with
:func:`pcs.model.deploy.size_deployment` (the function ``pcs deploy`` uses),
refusing to replay when the weights do not fit; with a size given it says when
that size is more than the deployment leaves for KV. Either way the notes name
the KV layout, the TP placement (per-rank footprint vs per-group tiers) and any
assumption made reading the model's config.
"""
from __future__ import annotations

import dataclasses
import numbers
from typing import Any, Sequence

from pcs import units
from pcs.argcheck import check_int
from pcs.errors import UserError, quoted
from pcs.model.deploy import size_deployment
from pcs.model.parallel import tp_placement

__all__ = ["resolve_gpu_tier"]


def _reserve(value: Any) -> int | None:
    """``kv_reserve`` as bytes: None; an integer >= 0 (pcs.argcheck: a bool refused, the message naming
    kv_reserve); else a size, "8GB" or a float, read by pcs.units.parse_bytes."""
    if value is None:
        return None
    if isinstance(value, (bool, numbers.Integral)):
        return check_int(value, "kv_reserve", lo=0)
    try:
        return units.parse_bytes(value)
    except ValueError as exc:
        raise UserError(f"kv_reserve={quoted(value, show=repr)}: {str(exc).splitlines()[0]}") from None   # --kv-reserve


def _explicit_note(dep, gpu_tier, gpu_bb: int) -> str | None:
    size = gpu_tier.capacity_bytes if gpu_tier.capacity_bytes is not None else gpu_tier.capacity_blocks * gpu_bb
    if not dep.fits:
        return (f"{dep.model} weights ({dep.weights_bytes / 1e9:,.2f} GB) do not fit {dep.tp} x {dep.gpu} "
                f"(HBM x {dep.gpu_memory_utilization:g} - reserve per GPU); the given GPU tier is replayed as is")
    if size > dep.kv_bytes:
        return (f"the GPU tier ({size / 1e9:,.2f} GB) is more than this deployment leaves for KV: "
                f"{dep.derivation()}")
    return None


def resolve_gpu_tier(spec, gpu, tp: int, tier_specs: Sequence, gpu_bb: int, util: float | None = None,
                     reserve: Any = None) -> tuple[list, dict[str, Any]]:
    """Size a GPU tier given without a size; the deployment summary (with ``notes``).

    Args:
        spec: the ``with_tp(tp)`` model; gpu: a GPUSpec; tier_specs: parsed tiers, GPU first.
        gpu_bb: the group's bytes per GPU-tier block.
        util, reserve: overrides of the utilisation and the per-GPU reserve (bytes or "8GB").
    Returns:
        (tier specs with the GPU tier sized, the ``deployment`` dict of the summary: the
        :class:`pcs.model.deploy.Deployment` fields, ``gpu_tier_from``, ``layout``,
        ``tp_group``, ``assumptions`` and ``notes``).
    Raises:
        UserError: the weights do not fit when the GPU tier is to be derived (one line);
            a bad utilisation or reserve.
    """
    specs, first = list(tier_specs), tier_specs[0]
    derived = first.capacity_bytes is None and first.capacity_blocks is None
    reserve = _reserve(reserve)
    if not derived and spec.total_params <= 0:  # weights unknown: the given tier is all there is
        return specs, _summary(spec, None, tp, derived, [])
    dep = size_deployment(spec, gpu, tp, util, reserve)
    notes = []
    if derived:
        dep.check_fits()
        specs[0] = dataclasses.replace(first, capacity_bytes=dep.kv_bytes)
        notes.append(dep.derivation())
    else:
        note = _explicit_note(dep, first, gpu_bb)
        notes += [note] if note else []
    return specs, _summary(spec, dep, tp, derived, notes)


def _summary(spec, dep, tp: int, derived: bool, notes: list[str]) -> dict[str, Any]:
    placement = tp_placement(spec)
    notes.append(f"KV layout {spec.kv_layout.describe()}; {placement.note()}")
    notes += [f"assumed: {a}" for a in spec.assumptions]
    out = dep.to_dict() if dep is not None else {"model": spec.name, "tp": tp}
    out.update({"gpu_tier_from": "deployment" if derived else "--tier", "layout": spec.kv_layout.to_dict(),
                "tp_group": placement.to_dict(), "assumptions": list(spec.assumptions), "notes": notes})
    return out
