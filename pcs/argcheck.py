"""The one argument checker of the public API functions (pcs.replay, pcs.curve, pcs.budget, pcs.envelope,
pcs.compare, pcs.footprint, pcs.model.size_deployment): bad input is a :class:`pcs.errors.UserError` naming the parameter, never a
silently different value (docs/semantics.md §16).

Rules, the same for every parameter:
- an integer parameter takes any :class:`numbers.Integral` (``int``, ``numpy.int64``) except ``bool``; a float,
  even ``10.0``, is refused (no silent truncation of ``10.5``);
- a real parameter takes any :class:`numbers.Real` (``float``, ``int``, ``numpy.float32``) except ``bool``;
  NaN and infinities are refused where ``finite`` (the default);
- a list of numbers is any iterable of such numbers but a ``str``/``bytes`` (``"10"`` is not ``[10]``);
- ranges are the command line's (e.g. ``points`` in [1, 1000], pcs/cli/curve.py), so API and CLI agree.

>>> check_int(8, "tp", lo=1)
8
>>> check_real(0.5, "sample_rate", lo=0, lo_open=True, hi=1)
0.5
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Callable

from pcs.choices import MAX_BLOCK_SIZE  # tokens per block: one constant (pcs.choices, numpy-free)
from pcs.errors import INT64_LIMIT, ArgumentTypeError, UserError, ending_with, shown_repr

__all__ = ["check_text", "check_bandwidth", "check_int", "check_byte_count", "check_real", "check_number_list", "check_flag", "INT64_MAX", "MAX_TP", "MAX_BLOCK_SIZE",
           "MAX_TOKENS", "MAX_COUNT", "MAX_POINTS", "MAX_SYNTH_REQUESTS", "MAX_SEED"]

#: Largest value an int64 column (and the compiled twins) hold.
INT64_MAX = 2**63 - 1

# The ranges of the command line's numeric options (pcs/cli/params.py), applied to the API too.
#: GPUs in one tensor-parallel group (NVL72 racks hold 72; 1024 leaves room).
MAX_TP = 1024
#: Tokens in one prompt or sequence (10^9: a thousand times today's longest context windows).
MAX_TOKENS = 10**9
#: Counts such as sequences or head blocks.
MAX_COUNT = 10**9
#: Points of a hit-ratio curve (Belady costs one pass of the trace per point).
MAX_POINTS = 1000
#: Requests ``pcs trace synth`` writes.
MAX_SYNTH_REQUESTS = 10**8
#: Seeds (numpy takes non-negative integers; int64 keeps them portable).
MAX_SEED = 2**63 - 1


def _num(x: Any) -> str:
    return INT64_LIMIT if x == INT64_MAX else (str(x) if isinstance(x, int) else f"{x:g}")


def _range_text(lo: Any, hi: Any, lo_open: bool, hi_open: bool) -> str:
    if lo is not None and hi is not None:
        return f"in {'(' if lo_open else '['}{_num(lo)}, {_num(hi)}{')' if hi_open else ']'}"
    if lo is not None:
        return f"{'>' if lo_open else '>='} {_num(lo)}"
    return f"{'<' if hi_open else '<='} {_num(hi)}"


def _in_range(v: Any, name: str, lo: Any, hi: Any, lo_open: bool = False, hi_open: bool = False) -> None:
    low = lo is not None and (v <= lo if lo_open else v < lo)
    high = hi is not None and (v >= hi if hi_open else v > hi)
    if low or high:
        shown_hi = None if hi == INT64_MAX and low else hi   # the int64 cap is named only when it is passed
        raise UserError(f"{name} must be {_range_text(lo, shown_hi, lo_open, hi_open)}, got {shown_repr(v)}")


def check_int(value: Any, name: str, lo: int | None = None, hi: int | None = INT64_MAX) -> int:
    """``value`` as a Python int, checked: any numbers.Integral but bool, within [lo, hi].

    Args:
        value: the argument. name: the parameter's name for the message (e.g. ``"points"``).
        lo, hi: inclusive bounds (None = unbounded; ``hi`` defaults to 2^63 - 1, what int64 holds).
    Raises:
        UserError: not an integer (a bool, float, str, ...) or out of range; the message names ``name``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise UserError(f"{name} must be an integer, got {shown_repr(value)} ({type(value).__name__})")
    v = int(value)
    _in_range(v, name, lo, hi)
    return v


def check_byte_count(value: Any, name: str, lo: int | None = 0, hi: int | None = INT64_MAX) -> int:
    """A count of bytes: :func:`check_int`, but a float holding a whole number (``1e9``, as people write a
    gigabyte) is taken as that int; a fraction of a byte, NaN or infinity is refused.

    Raises:
        UserError: not a whole number, or out of [lo, hi]; the message names ``name``.
    """
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    elif isinstance(value, float):
        raise UserError(f"{name} must be an integer (a whole number of bytes), got {shown_repr(value)}")
    return check_int(value, name, lo, hi)


def check_real(value: Any, name: str, lo: float | None = None, hi: float | None = None, *,
               lo_open: bool = False, hi_open: bool = False, finite: bool = True) -> float:
    """``value`` as a Python float, checked: any numbers.Real but bool, finite (unless not ``finite``), in range.

    Args:
        value: the argument. name: the parameter's name for the message.
        lo, hi: bounds (None = unbounded); ``lo_open`` / ``hi_open`` exclude them.
        finite: refuse NaN and infinities (NaN is refused even when not ``finite``: it compares false with any bound).
    Raises:
        UserError: not a real number, NaN, infinite (when ``finite``), too large for a float, or out of range.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise UserError(f"{name} must be a number, got {shown_repr(value)} ({type(value).__name__})")
    try:
        v = float(value)
    except OverflowError:
        raise UserError(f"{name} must be a finite number, got {shown_repr(value)}") from None
    if math.isnan(v) or (finite and math.isinf(v)):
        raise UserError(f"{name} must be a finite number, got {shown_repr(v)}")
    _in_range(v, name, lo, hi, lo_open, hi_open)
    return v


def check_number_list(values: Any, name: str, check: Callable[[Any, str], Any]) -> list:
    """Each element of ``values`` through ``check(element, "name[i]")``; a str/bytes or a non-iterable refused.

    Raises:
        UserError: ``values`` is a str, bytes or not iterable, or ``check`` refuses an element.
    """
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise UserError(f"{name} must be a list of numbers, got {shown_repr(values)}")
    return [check(v, f"{name}[{i}]") for i, v in enumerate(values)]


def check_flag(value: Any, name: str) -> bool:
    """``value`` as a bool: only ``True``/``False`` (and numpy's bool); ``"yes"`` or ``1`` refused.

    Raises:
        UserError: anything else.
    """
    if isinstance(value, bool) or (type(value).__module__ == "numpy" and type(value).__name__ in ("bool_", "bool")):
        return bool(value)
    raise UserError(f"{name} must be True or False, got {shown_repr(value)}")


#: containers a one-value argument is sometimes given by mistake (``policy=["lru"]``, ``shared_tier=[...]``)
_CONTAINERS = (list, tuple, set, frozenset, dict)


def check_text(value: Any, name: str, form: str = "a string", others: tuple[type, ...] = ()) -> Any:
    """``value`` unchanged when it is None, a ``str`` or one of ``others``; anything else refused naming ``name``
    (a list is not its first item, and ``str(['lru'])`` is not a policy name).

    Args:
        form: what the argument takes, for the message (``"a 'NAME=SIZE' string"``).
        others: more types taken as they are (``TierSpec``, ``ModelSpec`` ...); with ``others=(object,)`` only a
            container (list, tuple, set, dict) is refused.
    Raises:
        ArgumentTypeError: ``shared_tier= must be a 'NAME=SIZE' string, got list: ['remote=1TB']``.
    """
    if value is None or isinstance(value, str) or (isinstance(value, others) and not isinstance(value, _CONTAINERS)):
        return value
    raise ArgumentTypeError(ending_with(f"{name}= must be {form}, got {type(value).__name__}: ", value))


def check_bandwidth(bps: float, where: str) -> float:
    """A restore bandwidth in bytes/s, at least 1 B/s: a link that moves nothing never finishes a transfer, and one
    below a byte a second prints times of hundreds of digits. The one rule of ``envelope --bandwidth``,
    ``budget``'s bandwidths (:func:`pcs.cli.params.option_bandwidth`) and :func:`pcs.envelope`'s ``bandwidths_bps``.

    Args:
        bps: a real number of bytes/s (already parsed). where: what the message names first
            (``--bandwidth '0GB/s'``, ``bandwidths_bps[1] = 0``).
    Raises:
        UserError: ``WHERE: a bandwidth must be > 0 (...)``, or below 1 B/s.
    """
    if bps == 0:
        raise UserError(f"{where}: a bandwidth must be > 0 (a link that moves nothing never finishes a transfer)")
    if bps < 1:
        raise UserError(f"{where}: {bps:.3g} B/s is less than 1 B/s; give a bandwidth of at least 1 B/s")
    return bps
