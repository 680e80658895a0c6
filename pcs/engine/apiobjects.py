"""Checks of the object-valued keywords of :func:`pcs.replay` (``rules``, ``hardware_table``, ``progress``).

A wrong type is a :class:`pcs.errors.UserError` naming the keyword before any work, not an AttributeError deep in
the run (``rules=None`` failed in ``pcs/engine/chunks.py``; ``hardware_table={...}`` in ``pcs/hardware.py``;
``progress=5`` only after the first chunk had run).
"""
from __future__ import annotations

from typing import Any

from pcs.errors import UserError
from pcs.blocks import BlockRules
from pcs.hardware import HardwareTable

__all__ = ["check_api_objects"]


def check_api_objects(rules: Any, hardware_table: Any, progress: Any) -> None:
    """Refuse a ``rules`` that is not a :class:`pcs.blocks.BlockRules`, a ``hardware_table`` that is neither None
    nor a :class:`pcs.hardware.HardwareTable`, and a ``progress`` that is neither None nor callable.

    Raises:
        UserError: naming the keyword, what it takes and the type given.
    """
    if not isinstance(rules, BlockRules):
        raise UserError(f"rules= takes a pcs.blocks.BlockRules (e.g. BlockRules(cache_partial_blocks=True)), "
                        f"got {type(rules).__name__}")
    if hardware_table is not None and not isinstance(hardware_table, HardwareTable):
        raise UserError("hardware_table= takes a pcs.hardware.HardwareTable (pcs.hardware.load_hardware_file(path)) "
                        f"or None, got {type(hardware_table).__name__}")
    if progress is not None and not callable(progress):
        raise UserError("progress= takes a callable (called with the requests done since its previous call) or "
                        f"None, got {type(progress).__name__}")
