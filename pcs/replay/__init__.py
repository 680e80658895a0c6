"""Cache replay: a trace through a multi-tier prefix cache, with modeled time.

``pcs.replay(trace, model=..., tiers=..., policy=..., timing=...)`` (this
module is callable) -> :class:`ReplayResult` (``.summary`` dict with the JSON
keys, ``.requests`` pyarrow Table). See :mod:`pcs.replay.api`.
"""
from __future__ import annotations

from pcs.replay.api import ReplayResult, TierSpec, parse_tier, replay

__all__ = ["replay", "ReplayResult", "TierSpec", "parse_tier"]

from pcs._callable import make_module_callable  # noqa: E402  (pcs.replay(...) is replay(...))

make_module_callable(__name__, "replay")
