"""The one guard of every CSV pcs writes against spreadsheet formulas ("CSV injection", OWASP).

A spreadsheet opening a CSV runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a formula (``=cmd|' /C
calc'!A0``), and a leading tab or carriage return hides such a start. A text cell pcs writes -- a workload name,
a tier or policy name, a trace's ``type`` or tenant, a sweep option's value -- comes from the user or the input,
so a text cell starting with one of those characters is written with a leading ``'`` (the spreadsheet shows the
text and runs nothing: ``=cmd|x`` -> ``'=cmd|x``). Numbers are written unchanged: a number value (int or float)
is not text, and a text cell that is a plain decimal number (``-3``, ``+1.5e3``, as a sweep option may hold one)
keeps its sign, which no spreadsheet runs. A reader that wants the text back drops one leading ``'`` from a cell
that starts with ``'=``, ``'+``, ``'-``, ``'@``, ``'\\t`` or ``'\\r``.

Used by :func:`pcs.cli.common.emit` (every ``--format csv``) and the per-request ``--requests-out FILE.csv``
(:func:`pcs.cli.replay.write_requests`); docs/replay.md "CSV".
"""
from __future__ import annotations

import re
from typing import Any

__all__ = ["FORMULA_STARTS", "guard_cell", "guard_table"]

#: The first characters a spreadsheet reads as a formula, or that hide one (tab, carriage return).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

#: A plain decimal number written as text: left as it is (its sign is no formula).
_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_NUMBER_RE = re.compile(_NUMBER)


def guard_cell(value: Any) -> Any:
    """``value``, or ``"'" + value`` for text starting with one of :data:`FORMULA_STARTS` that is not a plain
    decimal number. Anything not a ``str`` (numbers, bools, None) is returned as it is.

    >>> guard_cell("=cmd|x"), guard_cell("-3"), guard_cell(-3), guard_cell("lru")
    ("'=cmd|x", '-3', -3, 'lru')
    """
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _NUMBER_RE.fullmatch(value):
        return "'" + value
    return value


def guard_table(table: Any) -> Any:
    """The pyarrow ``table`` with :func:`guard_cell`'s rule applied to each text column (``string`` or
    ``large_string``), computed by pyarrow (a requests table may hold millions of rows); other columns, and a
    table without text columns, unchanged."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for i, field in enumerate(table.schema):
        if not (pa.types.is_string(field.type) or pa.types.is_large_string(field.type)):
            continue
        col = table.column(i)
        starts = pc.match_substring_regex(col, "^[=+\\-@\t\r]")
        risky = pc.and_(starts, pc.invert(pc.match_substring_regex(col, f"^{_NUMBER}$")))
        quoted = pc.binary_join_element_wise(pa.scalar("'", field.type), col, pa.scalar("", field.type))
        table = table.set_column(i, field, pc.if_else(risky, quoted, col))
    return table
