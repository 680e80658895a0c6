"""The fields of one request-like object from the Python API, checked as the file readers check theirs.

``pcs.replay([obj, ...])`` (and curve, fleet_replay, compare) take objects with ``arrival_s``,
``prompt_tokens``, ``block_hashes``, ``block_size`` and an optional ``output_tokens``. A file row is refused
naming file, line and field (``pcs.trace.hashids.check_ids``, ``pcs.trace.batches.arrival_error``); an object is
refused naming the request's index and the field (:func:`request_fields`), by the same rules:

- ``arrival_s``: a real number (not a bool or str), finite (the +-2**32 s bound is
  ``pcs.trace.batches.MAX_ARRIVAL_S``, checked for every source), and not below the previous request's (the readers' "decreases; use --sort" rule: sort the list by ``arrival_s``);
- ``prompt_tokens``, ``output_tokens``: integers in 0 .. 2^63 - 1 (numpy integers too; floats, bools refused);
- ``block_size``: an integer in 1 .. 2^20 tokens (``pcs.argcheck.MAX_BLOCK_SIZE``);
- ``block_hashes``: a 1-D sequence or array of integers in 0 .. 2^64 - 1, ``ceil(prompt_tokens / block_size)``
  of them (the Mooncake release's rule, :class:`pcs.trace.request.Request`), or ``prompt_tokens // block_size``
  when the partial last block is left without a hash (it is never cached: docs/semantics.md, the block rules;
  objects built this way were accepted before this check existed).
"""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from pcs.argcheck import INT64_MAX, MAX_BLOCK_SIZE
from pcs.errors import UserError, quoted, shown_repr
from pcs.units import format_counted

__all__ = ["request_fields", "check_order"]

_U64_MAX = 2**64 - 1

def _refuse(index: int, field: str, why: str) -> UserError:
    return UserError(f"request {index}: field {shown_repr(field)}: {why}")


def _count(value: Any, index: int, field: str, lo: int, hi: int) -> int:
    """An integer field (Python or numpy int) in [lo, hi]."""
    if type(value) is int and lo <= value <= hi:      # the common case, without the slower ABC checks
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise _refuse(index, field, f"must be an integer, got {quoted(value, 60, show=repr)} ({type(value).__name__})")
    if not lo <= int(value) <= hi:
        raise _refuse(index, field, f"must be in {lo}..{hi:,}, got {int(value)}")
    return int(value)


def _arrival(value: Any, index: int) -> float:
    if type(value) is float and math.isfinite(value):  # the common case, without the slower ABC checks
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise _refuse(index, "arrival_s", f"must be a number of seconds, got {quoted(value, 60, show=repr)} ({type(value).__name__})")
    a = float(value)
    if not math.isfinite(a):
        raise _refuse(index, "arrival_s", f"must be finite, got {a}")
    return a


def _hashes(value: Any, index: int, want: int, prompt: int, bs: int) -> np.ndarray:
    """``block_hashes`` as a 1-D uint64 array of ``want`` ids (or ``prompt // bs``: no hash for a partial last block)."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "iu" and value.ndim == 1:
        if value.dtype.kind == "i" and value.size and int(value.min()) < 0:
            i = int(np.argmax(value < 0))
            raise _refuse(index, "block_hashes", f"element {i} must be an integer in 0..2^64 - 1, got {value[i]}")
        arr = value if value.dtype == np.uint64 else value.astype(np.uint64)
    else:
        if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
            raise _refuse(index, "block_hashes", f"must be a sequence of integers, got {type(value).__name__}")
        raw = np.asarray(value, dtype=object) if not isinstance(value, np.ndarray) else value
        if raw.ndim != 1:
            raise _refuse(index, "block_hashes", f"must be 1-D, got shape {raw.shape}")
        for i, h in enumerate(raw.tolist()):
            if isinstance(h, bool) or not isinstance(h, int) or not 0 <= h <= _U64_MAX:
                raise _refuse(index, "block_hashes", f"element {i} must be an integer in 0..2^64 - 1, got {quoted(h, show=repr)}")
        arr = np.array(raw.tolist(), dtype=np.uint64)
    if len(arr) != want and len(arr) != prompt // bs:
        raise _refuse(index, "block_hashes", f"has {format_counted(len(arr), 'id')} but ceil({prompt:,} / block "
                      f"size {bs:,}) = {want:,}"
                      + (f" (or {prompt // bs:,}, the full blocks only)" if prompt % bs else ""))
    return arr


def request_fields(r: Any, index: int) -> tuple[float, int, int, np.ndarray, int]:
    """(arrival_s, prompt_tokens, output_tokens, block_hashes uint64 (n,), block_size) of request ``index``.

    Raises:
        UserError: a field breaking a rule of the module docstring, naming the request index and the field.
    """
    arrival = _arrival(r.arrival_s, index)
    prompt = _count(r.prompt_tokens, index, "prompt_tokens", 0, INT64_MAX)
    output = _count(getattr(r, "output_tokens", 0), index, "output_tokens", 0, INT64_MAX)
    bs = _count(r.block_size, index, "block_size", 1, MAX_BLOCK_SIZE)
    return arrival, prompt, output, _hashes(r.block_hashes, index, -(-prompt // bs), prompt, bs), bs


def check_order(arrival_s: np.ndarray, first_id: int, previous: float) -> None:
    """Refuse the first arrival below the one before it (``previous`` = the arrival before ``arrival_s[0]``).

    Raises:
        UserError: naming the request and both times (the file readers refuse the same: "decreases; use --sort").
    """
    full = np.concatenate(([previous], arrival_s))
    down = np.flatnonzero(full[1:] < full[:-1])
    if down.size:
        i = int(down[0])
        raise UserError(f"request {first_id + i}: field 'arrival_s': {full[i + 1]:g} s decreases (the request "
                        f"before arrives at {full[i]:g} s); give the requests in arrival order, e.g. "
                        "sorted(requests, key=lambda r: r.arrival_s) (a trace file: sort=)")
