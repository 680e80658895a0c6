"""One refusal for trace arguments pcs does not read: a file object and a bytes path (``pcs.replay``,
``pcs.curve``, ``pcs.fleet_replay``, ``pcs.open_trace`` alike)."""
from __future__ import annotations

import io
from typing import Any

from pcs.errors import UserError

__all__ = ["refuse_file_objects"]


def refuse_file_objects(source: Any) -> None:
    """Refuse a bytes / bytearray path and an open file object (anything with ``read``), naming the type and the
    spelling pcs takes; anything else passes.

    Raises:
        UserError: a bytes path (give ``os.fsdecode(path)``) or a file object (give its path: ``f.name``).
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        raise UserError(f"a trace path must be a str or pathlib.Path, got {type(source).__name__} "
                        f"{bytes(source)[:60]!r}: pass os.fsdecode(path)")
    if isinstance(source, io.IOBase) or (hasattr(source, "read") and not hasattr(source, "iter_batches")):
        raise UserError(f"a trace is read from its path, not a file object ({type(source).__name__}): pass the "
                        "file's path (f.name), a pcs.trace.Trace or a list of requests")
