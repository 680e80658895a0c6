"""pcs: the prefix-cache replay engine.

Four views, each a command and a Python API:

- ``pcs.budget(capacity_need_bytes, capacity_have_bytes, bandwidth_need_bps,
  bandwidth_have_bps)`` -> :class:`pcs.budget.BudgetResult`
- ``pcs.footprint(model, tokens, block_size=16, dtype=None, sequences=1)``
  -> :class:`pcs.model.FootprintResult`
- ``pcs.envelope(restore_bytes, full_prefill_s, remaining_s, overhead_s,
  bandwidths_bps, overlap_s=None)`` -> :class:`pcs.envelope.EnvelopeResult`
- ``pcs.replay(trace, model=..., hardware=..., tiers=..., policy=...,
  timing=...)`` -> result with ``.summary`` (dict) and ``.requests``
  (pyarrow Table); ``pcs.curve(trace, capacities=...)`` -> hit ratio at every
  capacity in one pass.
- ``pcs.open_trace(path)`` streams :class:`pcs.trace.Request` records.

Units: bytes as int, bandwidth in bytes/s, times in seconds; GB decimal.
Names and the submodules (``pcs.model``, ``pcs.trace``, ``pcs.hardware``,
``pcs.compute``, ``pcs.cache``, ``pcs.blocks``, ``pcs.units`` ...) are
imported lazily on first use, so ``import pcs`` stays cheap. ``pcs.budget``,
``pcs.envelope`` and ``pcs.replay`` are modules that are also callable as
their view's function (see :mod:`pcs._callable`).
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

#: public name -> (module, attribute or None for a callable module)
_API: dict[str, tuple[str, str | None]] = {
    "budget": ("pcs.budget", None),
    "envelope": ("pcs.envelope", None),
    "replay": ("pcs.replay", None),
    "footprint": ("pcs.model", "footprint"),
    "curve": ("pcs.replay.curve", "curve"),
    "open_trace": ("pcs.trace", "open_trace"),
    "get_model": ("pcs.model", "get_model"),
}

#: submodules reachable as ``pcs.<name>`` after a plain ``import pcs``
_SUBMODULES = ("blocks", "cache", "compute", "errors", "hardware", "model", "report", "trace", "units")

__all__ = sorted(_API)


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"pcs.{name}")
    try:
        module_name, attr = _API[name]
    except KeyError:
        raise AttributeError(f"module 'pcs' has no attribute {name!r}") from None
    module = importlib.import_module(module_name)
    return module if attr is None else getattr(module, attr)
