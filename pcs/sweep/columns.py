"""Declared Arrow types of a point's columns, from the typed result classes (``pcs.schema`` results).

A one-row Parquet file types each column from its value, so a column that
is null in one point (``envelope.links.cpu.share_slower`` of a link with no
restores) would be Arrow's ``null`` type there and ``double`` in the next,
and ``pyarrow.dataset.dataset(out).to_table()`` / ``pq.read_table(out)``
refuse the directory ("Unsupported cast from double to null"). The row
therefore takes each null column's type from the annotation of the field
that produced it (``float | None`` -> ``double``): every point of a plan has
the same column types (docs/sweep.md).
"""
from __future__ import annotations

import dataclasses
import typing
from typing import Any

from pcs._heldimport import held_import
from pcs.argcheck import INT64_MAX
from pcs.errors import INT64_LIMIT, UserError, utf8_text, shown_repr

__all__ = ["declared_types", "typed_table"]

#: Python annotation -> Arrow type name (``pyarrow.<name>()``)
_ARROW = {float: "float64", int: "int64", str: "string", bool: "bool_"}


def _scalar_type(hint: Any) -> str | None:
    """``float | None`` -> ``"float64"``; None for anything that is not one scalar type."""
    args = [a for a in typing.get_args(hint) if a is not type(None)] if typing.get_args(hint) else [hint]
    return _ARROW.get(args[0]) if len(args) == 1 else None


def declared_types(obj: Any, prefix: str = "") -> dict[str, str]:
    """Column name -> Arrow type name for the scalar fields of a typed result, named as
    :func:`pcs.sweep.worker.flatten` names the columns of ``obj.to_dict()``.

    Args:
        obj: a ``pcs.schema`` result instance (ReplaySummary, CompareResult, CurveResult ...).
        prefix: the column prefix (nested results).
    Returns:
        one entry per scalar field (``float``, ``int``, ``str``, ``bool``, optionally ``| None``);
        nested results and labelled lists of results recurse; other fields are left out.
    """
    from pcs.sweep.worker import _label

    out: dict[str, str] = {}
    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):
        if not f.metadata.get("json", True):
            continue
        key = prefix + (f.metadata.get("key") or f.name)
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value) and hasattr(value, "to_dict"):
            out.update(declared_types(value, key + "."))
        elif isinstance(value, (list, tuple)) and value and all(dataclasses.is_dataclass(v) for v in value):
            labels = _label([v.to_dict() for v in value])
            for label, item in zip(labels or (), value):
                out.update(declared_types(item, f"{key}.{label}."))
        elif (t := _scalar_type(hints.get(f.name))) is not None:
            out[key] = t
    return out


def _utf8(value: Any) -> Any:
    """``value``; a string holding a lone surrogate (a trace path whose name is not UTF-8: byte 0xff reaches
    Python as ``\\udcff``) with each as its escape (``\\xff``, :func:`pcs.errors.utf8_text`, as the text tables
    show it): a Parquet string is UTF-8 and cannot hold one."""
    return utf8_text(value) if isinstance(value, str) else value


def typed_table(row: dict[str, Any], types: dict[str, str]) -> Any:
    """The one-row pyarrow Table of ``row``, its null columns typed from ``types`` (others inferred); a lone
    surrogate in a string is written as its escape (:func:`_utf8`).

    Raises:
        UserError: an integer outside int64, naming the column.
    """
    pa = held_import("pyarrow")

    for key, value in row.items():   # an int beyond int64 fits no column (pyarrow: OverflowError)
        if isinstance(value, int) and not -INT64_MAX - 1 <= value <= INT64_MAX:
            raise UserError(f"column {shown_repr(key)}: {value} is beyond what an int64 column holds ({INT64_LIMIT})")
    table = pa.Table.from_pylist([{k: _utf8(v) for k, v in row.items()}])
    fields = [pa.field(f.name, getattr(pa, types[f.name])()) if pa.types.is_null(f.type) and f.name in types else f
              for f in table.schema]
    return table.cast(pa.schema(fields))
