"""What identifies a trace file a result names: its absolute path, size, a hash of its first and last MiB.

``pcs replay --format json`` records it as ``trace_file``; ``pcs report`` reads the trace again for the
page's hit-rate curve and oracle and checks it first (a trace changed, or another one at the
same relative path, drew an oracle below the run's real hit ratio). Why these fields:

- the absolute path: a relative ``trace`` is as typed, and the report may run from another directory;
- size + blake2b-128 of the first and last MiB (the whole file up to 2 MiB): 2 MiB read whatever the
  trace's size (a 1 GB trace costs ~1 ms), while hashing every byte would need the readers' pass (C++ and
  pyarrow decoders) or a second full read. Most edits change the size, the head (a re-synthesised trace) or
  the tail (appended rows); an edit inside the middle of a > 2 MiB file keeping its size is not seen;
- ``mtime_ns`` is recorded but not compared: a copy or a ``touch`` changes it without changing the trace; a
  different mtime with equal size and hash gives a note only.
"""
from __future__ import annotations

import hashlib
import os
from typing import Any

from pcs.errors import shown_path

__all__ = ["trace_file", "trace_file_change"]

#: Bytes hashed at each end of the file.
_END = 1 << 20


def _digest(path: str, size: int) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        h.update(f.read(_END))
        if size > 2 * _END:
            f.seek(size - _END)
        h.update(f.read(_END))
    return h.hexdigest()


def trace_file(path: Any) -> dict[str, Any] | None:
    """``{"path": absolute, "bytes": size, "head_tail_blake2b": hex, "mtime_ns": int}`` of a regular file;
    None for stdin (``-``), a non-path, or anything but a regular file (a FIFO is read once).

    Raises:
        OSError: the file cannot be read (after the run read it: a race, reported as is).
    """
    if not isinstance(path, (str, os.PathLike)) or str(path) == "-":
        return None
    full = os.path.abspath(os.fspath(path))
    st = os.stat(full)
    if not os.path.isfile(full):
        return None
    return {"path": full, "bytes": st.st_size, "head_tail_blake2b": _digest(full, st.st_size),
            "mtime_ns": st.st_mtime_ns}


def trace_file_change(recorded: dict[str, Any]) -> tuple[str | None, str | None]:
    """``(why it is not the run's trace, None)``, ``(None, a note)`` when only the mtime moved, or ``(None,
    None)`` when the file at ``recorded["path"]`` has the recorded size and hash."""
    path = recorded["path"]
    shown = shown_path(path)
    try:
        now = trace_file(path)
    except OSError as exc:
        return f"trace {shown} cannot be read ({exc.strerror or exc})", None
    if now is None:
        return f"trace {shown} is not a regular file", None
    if now["bytes"] != recorded["bytes"]:
        return f"trace {shown} has {now['bytes']:,} bytes, the run read {recorded['bytes']:,}", None
    if now["head_tail_blake2b"] != recorded["head_tail_blake2b"]:
        return f"trace {shown} differs from the run's (same size, other first/last MiB)", None
    if now["mtime_ns"] != recorded.get("mtime_ns"):
        return None, (f"trace {shown} was modified since the run (mtime) but its size and first and last MiB "
                      "match; an edit inside it would not be seen")
    return None, None
