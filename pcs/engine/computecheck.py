"""A user's compute model, its answers checked at the boundary (docs/semantics.md §10).

``pcs.replay(compute=...)`` takes any object with ``prefill_s(new_tokens, cached_tokens)`` and
``decode_s_per_token(context_tokens)``. pcs's own :class:`pcs.compute.ComputeModel` returns finite seconds
>= 0 by construction; any other object (a subclass included) is wrapped so that every answer is checked
before the engine uses it: a number (or an array of numbers), finite and >= 0, else a
:class:`pcs.errors.UserError` naming the method, the token counts asked and the value returned -- the same in
sequential and modeled timing, never an internal error deep in the scheduler.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pcs.errors import UserError, ending_with, quoted, shown_repr
from pcs.compute import ComputeModel

__all__ = ["checked_compute", "CheckedCompute"]

#: The methods the engine calls, and the names of their arguments (for messages).
_METHODS = {"prefill_s": ("new_tokens", "cached_tokens"), "decode_s_per_token": ("context_tokens",)}


def checked_compute(compute: Any) -> Any:
    """``compute`` itself when None or exactly a :class:`pcs.compute.ComputeModel`, else a :class:`CheckedCompute`.

    Raises:
        UserError: ``compute`` lacks ``prefill_s`` or ``decode_s_per_token`` (or one is not callable).
    """
    if compute is None or type(compute) is ComputeModel or isinstance(compute, CheckedCompute):
        return compute
    for name in _METHODS:
        if not callable(getattr(compute, name, None)):
            raise UserError(ending_with(f"compute= must have a {name}() method (as pcs.compute.ComputeModel), got "
                                        f"{type(compute).__name__} ", compute))
    return CheckedCompute(compute)


def _check(out: Any, method: str, args: tuple) -> Any:
    """``out`` when every value is a finite number >= 0, else UserError naming ``method``, ``args`` and the value."""
    arr = np.asarray(out) if not isinstance(out, (str, bytes)) else np.asarray(out, dtype=object)
    call = f"compute.{method}({', '.join(_METHODS[method])})"
    if arr.dtype.kind not in "fiu" or arr.dtype.kind == "b":
        raise UserError(f"{call} returned {quoted(out, 80, show=repr)} ({type(out).__name__}); it must return seconds as a number "
                        "or an array of numbers")
    bad = ~np.isfinite(arr) | (arr < 0) if arr.dtype.kind == "f" else arr < 0
    if not bad.any():
        return out
    shaped = np.broadcast_arrays(*(np.asarray(a) for a in args), arr)
    i = int(np.flatnonzero(np.broadcast_to(bad, shaped[-1].shape))[0])
    asked = ", ".join(f"{n}={int(a.flat[i])}" for n, a in zip(_METHODS[method], shaped[:-1]))
    raise UserError(f"compute.{method}({asked}) returned {shown_repr(float(shaped[-1].flat[i]))} seconds; a compute model "
                    "must return finite seconds >= 0")


class CheckedCompute:
    """``inner`` with :meth:`prefill_s` and :meth:`decode_s_per_token` answers checked (:func:`_check`); every other
    attribute (``step_cost``, ``model`` ...) is the inner object's."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def prefill_s(self, new_tokens: Any, cached_tokens: Any) -> Any:
        """The inner ``prefill_s`` (seconds), checked."""
        return _check(self._inner.prefill_s(new_tokens, cached_tokens), "prefill_s", (new_tokens, cached_tokens))

    def decode_s_per_token(self, context_tokens: Any) -> Any:
        """The inner ``decode_s_per_token`` (seconds per output token), checked."""
        return _check(self._inner.decode_s_per_token(context_tokens), "decode_s_per_token", (context_tokens,))
