"""pcs: the prefix-cache replay engine.

Four views, each a command and a plain Python function:

- ``pcs.budget(capacity_need_bytes, capacity_have_bytes, bandwidth_need_bps,
  bandwidth_have_bps)`` -> :class:`pcs.analysis.budget.BudgetResult`
- ``pcs.footprint(model, tokens, block_size=16, dtype=None, sequences=1, tp=None)``
  -> :class:`pcs.model.FootprintResult`
- ``pcs.envelope(restore_bytes, full_prefill_s, remaining_s, overhead_s,
  bandwidths_bps, overlap_s=None)`` -> :class:`pcs.analysis.envelope.EnvelopeResult`
- ``pcs.replay(trace, model=..., hardware=..., tiers=..., policy=...,
  timing=...)`` -> :class:`pcs.engine.api.ReplayResult`; ``pcs.curve(trace,
  capacities=...)`` -> the hit ratio at every capacity in one pass
  (:class:`pcs.curves.result.CurveResult`); ``pcs.compare(trace,
  policies=..., tier_sets=...)`` -> several replays side by side
  (:class:`pcs.engine.compare.CompareResult`); ``pcs.fleet_replay(trace,
  instances=8, router="cache-aware")`` -> N instances behind a router
  (:class:`pcs.fleet.FleetResult`, docs/cluster.md). JSON keys of every result:
  ``docs/json.md``.
- ``pcs.open_trace(path)`` streams :class:`pcs.trace.Request` records.
- ``pcs.release_memory()`` gives back the memory pcs keeps between calls to
  spare the next call page faults (:mod:`pcs.kept`).

Units: bytes as int, bandwidth in bytes/s, times in seconds; GB decimal.
The functions and the submodules (``pcs.model``, ``pcs.trace``,
``pcs.hardware``, ``pcs.compute``, ``pcs.cache``, ``pcs.engine`` ...) are
imported lazily on first use, so ``import pcs`` stays cheap; the heavy
third-party packages among them (numpy, pyarrow, matplotlib) are imported by
pcs on the main thread with Ctrl-C held until they have finished
(``pcs/_heldimport.py``; numpy before any public function is returned, a
``pcs.<submodule>`` with what its import imports), so an interrupted first call
leaves none half-initialised; a caller's own ``import pcs.<submodule>``
statement, and what a submodule's functions import later, are not held. No public name
is both a module and a function: the views live in ``pcs.analysis``,
``pcs.model``, ``pcs.engine`` and ``pcs.curves``.
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

#: public name -> (module, attribute)
_API: dict[str, tuple[str, str]] = {
    "budget": ("pcs.analysis.budget", "budget"),
    "envelope": ("pcs.analysis.envelope", "envelope"),
    "replay": ("pcs.engine.api", "replay"),
    "footprint": ("pcs.model", "footprint"),
    "curve": ("pcs.curves.api", "curve"),
    "compare": ("pcs.engine.compare", "compare"),
    "fleet_replay": ("pcs.fleet", "fleet_replay"),
    "open_trace": ("pcs.trace", "open_trace"),
    "get_model": ("pcs.model", "get_model"),
    "release_memory": ("pcs.kept", "release_memory"),
}

#: submodules reachable as ``pcs.<name>`` after a plain ``import pcs``
_SUBMODULES = ("analysis", "blocks", "cache", "compute", "curves", "engine", "errors", "fleet", "hardware", "kept",
               "model", "report", "trace", "units")

__all__ = sorted(_API)


def __getattr__(name: str):
    from pcs._heldimport import held_import

    if name in _SUBMODULES:
        return held_import(f"pcs.{name}")   # held whole (numpy with it when it imports it); no numpy first: the
        #                                     CLI reaches pcs.units / pcs.errors this way, and --help needs no numpy
    try:
        module_name, attr = _API[name]
    except KeyError:
        raise AttributeError(f"module 'pcs' has no attribute {name!r}") from None
    held_import("numpy")    # whole before any call starts: a Ctrl-C in its first import is raised after it
    value = getattr(held_import(module_name), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API) | set(_SUBMODULES))
