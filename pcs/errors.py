"""Error types shared by pcs modules.

Grades: ``assert`` for internal invariants;
``ValueError`` (or its subclass :class:`InputError`) for bad user input, which
the CLI turns into one line on stderr and exit code 2; expected outcomes are
returned values, never exceptions.
"""
from __future__ import annotations

__all__ = ["InputError"]


class InputError(ValueError):
    """Bad content in an input file, located by file, line and field.

    Attributes:
        path: the file as the user named it (``"-"`` for stdin).
        line: 1-based line number, or None when not line-oriented
            (for Parquet: the 1-based row number).
        field: the offending field name, or None.
        problem: what is wrong, e.g. ``"must be >= 0, got -3"``.

    ``str(err)`` is ``"PATH:LINE: field 'F': PROBLEM"`` with the absent parts
    left out, the one-line message the CLI prints.
    """

    def __init__(self, path: str, line: int | None, field: str | None, problem: str):
        self.path = str(path)
        self.line = line
        self.field = field
        self.problem = problem
        where = self.path if line is None else f"{self.path}:{line}"
        what = f"field '{field}': {problem}" if field else problem
        super().__init__(f"{where}: {what}")
