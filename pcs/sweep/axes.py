"""One axis of a sweep plan: a list of values, or a range table expanded to one.

An axis is a TOML list (``["lru", "slru"]``, ``[1, 2, 4]``) or a range table,
both ends included when they fall on the grid:

- ``{from = A, to = B, step = S}``: A, A + S, ... <= B (an arithmetic grid);
- ``{from = A, to = B, times = K}``: A, A x K, ... <= B (a geometric grid, K > 1).

A, B and S are numbers, sizes in bytes (``"10GB"``, ``"1.5TiB"``: decimal GB,
binary GiB as :func:`pcs.units.parse_bytes` reads them) or block counts
(``"1000blocks"``, ``"1000blk"``: :data:`pcs.units.BLOCK_UNIT`); all of one
kind. Sizes come back as exact strings in the largest decimal unit that divides
them (``"10GB"``, ``"1500MB"``, ``"7B"``), so
every value reads back as the same number of bytes; block counts as
``"Nblocks"``; numbers stay numbers (a float grid is stepped in decimal, so
0.1 steps give 0.1, 0.2, 0.3 -- not 0.30000000000000004).
"""
from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

from pcs import units
from pcs.errors import UserError, shown_repr

__all__ = ["expand_axis", "format_size", "MAX_AXIS_VALUES"]

#: Values one range may produce (a guard against a step typo; a list has no limit).
MAX_AXIS_VALUES = 100_000

#: text ending in a block unit (``blocks``, ``block``, ``blk``: :data:`pcs.units.BLOCK_UNIT`, the one spelling rule of
#: every capacity parser) is a block count, read by :func:`pcs.units.parse_capacity` (ASCII digits, whole, >= 0)
_BLOCKS = re.compile(units.BLOCK_UNIT + r"\s*$", re.IGNORECASE | re.ASCII)
#: decimal byte units, largest first, for :func:`format_size`
_DECIMAL_UNITS = (("PB", 10**15), ("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("KB", 10**3))


def format_size(num_bytes: int) -> str:
    """``num_bytes`` in the largest decimal unit dividing it exactly: 10**10 -> ``"10GB"``, 7 -> ``"7B"``."""
    for unit, mult in _DECIMAL_UNITS:
        if num_bytes and num_bytes % mult == 0:
            return f"{num_bytes // mult}{unit}"
    return f"{num_bytes}B"


def _kind(value: Any, where: str) -> tuple[str, Any]:
    """("number", Decimal) | ("blocks", int) | ("bytes", int) for one end or step of a range."""
    if isinstance(value, bool):
        raise UserError(f"{where}: {shown_repr(value)} is not a number, a size or a block count")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise UserError(f"{where}: {shown_repr(value)} is not finite")
        return "number", Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if isinstance(value, str):
        if _BLOCKS.search(value):
            try:
                return "blocks", units.parse_capacity(value).blocks
            except ValueError as exc:
                raise UserError(f"{where}: {str(exc).splitlines()[0]}") from None
        try:
            return "bytes", units.parse_bytes(value)
        except ValueError as exc:
            raise UserError(f"{where}: {str(exc).splitlines()[0]} (or a block count like 1000blocks)") from None
    raise UserError(f"{where}: {shown_repr(value)} is not a number, a size or a block count")


def _out(kind: str, v: Decimal | int, as_int: bool) -> Any:
    if kind == "bytes":
        return format_size(int(v))
    if kind == "blocks":
        return f"{int(v)}blocks"
    return int(v) if as_int else float(v)


def _grid(start, stop, step: Decimal | None, times: Decimal | None, where: str) -> list:
    vals = []
    v = start
    while v <= stop:
        vals.append(v)
        if len(vals) > MAX_AXIS_VALUES:
            raise UserError(f"{where}: more than {MAX_AXIS_VALUES} values; check the step")
        v = v + step if step is not None else v * times
    return vals


def _range(name: str, spec: dict[str, Any]) -> list[Any]:
    where = f"axis {shown_repr(name)}"
    keys = set(spec)
    if keys not in ({"from", "to", "step"}, {"from", "to", "times"}):
        raise UserError(f"{where}: a range is {{from, to, step}} or {{from, to, times}}, got "
                         f"{{{', '.join(sorted(keys))}}}")
    (k0, a), (k1, b) = _kind(spec["from"], f"{where} from"), _kind(spec["to"], f"{where} to")
    if "times" in spec:
        kt, t = _kind(spec["times"], f"{where} times")
        if kt != "number" or t <= 1:
            raise UserError(f"{where}: times must be a number > 1, got {shown_repr(spec['times'])}")
        if a <= 0:
            raise UserError(f"{where}: a geometric range starts above 0, got from = {shown_repr(spec['from'])}")
        step, times, ks = None, t, k0
    else:
        ks, step = _kind(spec["step"], f"{where} step")
        times = None
        if step <= 0:
            raise UserError(f"{where}: step must be > 0, got {shown_repr(spec['step'])}")
    if len({k0, k1, ks}) != 1:
        raise UserError(f"{where}: from, to and step must all be numbers, all sizes or all block counts")
    if b < a:
        raise UserError(f"{where}: to ({shown_repr(spec['to'])}) is below from ({shown_repr(spec['from'])})")
    as_int = all(isinstance(spec[k], int) for k in spec if k != "times") and (
        times is None or times == int(times))
    vals = _grid(Decimal(a), Decimal(b), None if step is None else Decimal(step), times, where)
    if k0 != "number" and times is not None:
        vals = [v.to_integral_value(rounding="ROUND_FLOOR") for v in vals]
    out = [_out(k0, v, as_int) for v in vals]
    _refuse_rounded_repeats(where, spec, out)
    return out


def _refuse_rounded_repeats(where: str, spec: dict[str, Any], out: list) -> None:
    """A range whose values repeat once written as whole blocks or bytes (a geometric range of small block counts,
    ``{from = "1blocks", to = "3blocks", times = 1.1}``) is refused naming the axis and the value, as a listed value
    given twice is (:func:`expand_axis`): the grid run is the grid written.

    Raises:
        UserError: a value the range gives twice."""
    seen: set = set()
    for v in out:
        if v in seen:
            by = f"times = {shown_repr(spec['times'])}" if "times" in spec else f"step = {shown_repr(spec['step'])}"
            raise UserError(f"{where}: the range from {shown_repr(spec['from'])} to {shown_repr(spec['to'])} by {by} gives {shown_repr(v)} "
                            f"{out.count(v)} times once rounded to whole units; use a larger "
                            f"{'times' if 'times' in spec else 'step'} or list the values")
        seen.add(v)


def expand_axis(name: str, spec: Any) -> list[Any]:
    """An axis' values in order.

    Args:
        name: the option the axis sets (for messages).
        spec: a non-empty list of values, or a range table (module docstring).
    Returns:
        the values: numbers, strings, or for a list the items as written.
    Raises:
        UserError: an empty list, numbers and strings on one list (:func:`_refuse_numbers_with_text`), a value
            listed twice (text with a unit compared as what it reads as: sizes in bytes, ``"10GB"`` and
            ``"10000MB"``; block counts, ``"5blk"`` and ``"5blocks"``; durations in ns, ``"2s"`` and
            ``"2000ms"``; bandwidths in bytes/s, ``"25GB/s"`` and ``"25000MB/s"``; policies as configurations;
            a table, comma list or list item by item:
            one value in two spellings, refused rather than merged so the grid run is the grid written;
            the message names both as written), a malformed range.
    """
    if isinstance(spec, dict):
        return _range(name, spec)
    if not isinstance(spec, list) or not spec:
        raise UserError(f"axis {shown_repr(name)}: give a non-empty list of values or a range {{from, to, step}}")
    _refuse_numbers_with_text(name, spec)
    seen: dict[Any, Any] = {}
    for v in spec:
        key = _same_value_key(v, name)
        if key in seen:
            said = "is listed twice" if seen[key] == v else f"and {shown_repr(seen[key])} are the same {key[0]}"
            raise UserError(f"axis {shown_repr(name)}: {shown_repr(v)} {said}; give each value once")
        seen[key] = v
    return list(spec)


def _refuse_numbers_with_text(name: str, spec: list) -> None:
    """Refuse a list axis holding both a number and a string (``[1, "2"]``, ``[1, "1"]``): each point's file would
    store the option's column as another type (int64 and string), which no dataset reader joins (docs/sweep.md:
    within one plan every point's file has the same column types), and ``1`` and ``"1"`` would run one value twice.
    Integers and floats may mix (read as one numeric column); ``true``/``false`` count as neither.

    Raises:
        UserError: ``axis 'tp': 1 is a number and '2' a string; write every value of the axis one way ...``.
    """
    number = next((v for v in spec if isinstance(v, (int, float)) and not isinstance(v, bool)), None)
    text = next((v for v in spec if isinstance(v, str)), None)
    if number is not None and text is not None:
        raise UserError(f"axis {shown_repr(name)}: {shown_repr(number)} is a number and {shown_repr(text)} a string; write every value of the "
                         "axis one way (each point's file would hold the column as another type)")


def _same_value_key(value: Any, name: str = "") -> tuple:
    """What two axis values must differ in: a value made of several as its items (:func:`_compound_key`); a
    policy on a policy axis (``policy``, ``tier-policy.cpu``) as its configuration (``"lru"`` and ``"LRU"`` are
    one, :func:`pcs.cache.policies.configuration_key`, as compare reads them); text with a unit as the quantity
    the command reads (:func:`_quantity`: ``"10GB"``, ``"10 GB"`` and ``"10000MB"`` are one size, ``"2s"``,
    ``"2 seconds"`` and ``"2000ms"`` one duration); else type and value (``1`` and ``1.0`` stay apart: the command
    may read them differently)."""
    compound = _compound_key(value, name)
    if compound is not None:
        return compound
    if isinstance(value, str) and name.split(".")[0].strip().lower().replace("_", "-") in ("policy", "tier-policy"):
        from pcs.cache.policies import configuration_key

        try:
            return ("policy", configuration_key(value))
        except ValueError:
            pass                        # an unknown name: the command's own parser names it
    if isinstance(value, str) and re.search(r"[A-Za-zµμ]", value):
        quantity = _quantity(value)
        if quantity is not None:
            return quantity
    return type(value).__name__, repr(value) if isinstance(value, (dict, list)) else value


def _compound_key(value: Any, name: str) -> tuple | None:
    """The key of a value made of several (None for one value): a ``NAME=VALUE`` option's whole value (``tier``,
    ``link``, ``tier-policy``: a table, ``"NAME=VALUE"`` strings) as its entries in order, names case-folded as
    the plan reads them; a comma-list option's value (``capacities``: ``"1000blk,2000blk"`` or a list) and any
    other list (a repeated option) as its items in order; each entry or item keyed as one value of that option
    (:func:`_same_value_key`), so ``{gpu = "10GB"}`` and ``["gpu=10000MB"]`` are the same entries."""
    from pcs.sweep.kinds import COMMA_OPTIONS, PAIR_OPTIONS

    option = name.strip().lower().replace("-", "_")
    if option in set().union(*PAIR_OPTIONS.values()) and isinstance(value, (dict, list, str)):
        if isinstance(value, dict):
            entries = [(str(k), v) for k, v in value.items()]
        else:
            entries = [tuple(str(item).split("=", 1)) for item in (value if isinstance(value, list) else [value])]
            if any(len(e) != 2 for e in entries):
                return None             # not NAME=VALUE: the plan's shape check names it
        return "entries", tuple((k.strip().lower(), _same_value_key(v.strip() if isinstance(v, str) else v,
                                                                     f"{name}.{k.strip()}")) for k, v in entries)
    if option in COMMA_OPTIONS and isinstance(value, (str, list)):
        text = ",".join(str(v) for v in value) if isinstance(value, list) else value
        items = [item.strip() for item in text.split(",") if item.strip()]
        if len(items) == 1:             # "1000blk" and ["1000blocks"]: one capacity
            return _same_value_key(items[0], "")
        return ("list", tuple(_same_value_key(item, "") for item in items)) if items else None
    if isinstance(value, list):
        return "list", tuple(_same_value_key(item, name) for item in value)
    return None


#: the parsers of text with a unit other than a size or block count, by the kind a message names; their units are
#: disjoint from the sizes' (``B``, ``KB``, ``GiB`` ...), the block counts' and each other's (a bandwidth ends in
#: ``/s``), so a text parses as one kind at most
_QUANTITIES = (("duration", units.parse_duration_ns), ("bandwidth", units.parse_bandwidth))


def _quantity(text: str) -> tuple[str, Any] | None:
    """``(kind, amount)`` of a text the command reads as a quantity, as :mod:`pcs.units` parses it: ``("size",
    bytes)``, ``("block count", blocks)`` (``blocks``, ``block`` or ``blk``), ``("duration", ns)`` (exact: ``"2s"``
    and ``"2000ms"`` are 2,000,000,000 ns) or ``("bandwidth", bytes/s)``; None for text that is none of them (a
    policy, a model name), which is compared as written."""
    try:
        kind, n = _kind(text, "")
        return ("size" if kind == "bytes" else "block count"), n
    except UserError:
        pass
    for kind, parse in _QUANTITIES:
        try:
            return kind, parse(text)
        except ValueError:
            pass
    return None
