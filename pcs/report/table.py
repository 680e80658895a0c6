"""Plain-text tables: right-aligned numbers, left-aligned text, no colour."""
from __future__ import annotations

import os
from typing import Sequence

__all__ = ["render_table", "shown_path"]


def render_table(headers: Sequence[str], rows: Sequence[Sequence[object]], title: str | None = None,
                 notes: Sequence[str] = ()) -> str:
    """Render rows under headers as aligned plain text.

    Args:
        headers: column names.
        rows: one sequence of cells per row (cells are ``str()``-ed; ``None``
            shows as ``-``). A cell that looks numeric (starts with a digit or
            sign, at most five words) is right-aligned; in the first column,
            which names the rows, only when every cell there is numeric (a
            policy named ``2q`` stays with the other names).
        title: optional line printed above the table.
        notes: lines printed below the table (each prefixed ``note: ``).
    Returns:
        The table as one string without a trailing newline.
    """
    cells = [["-" if c is None else str(c) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        assert len(row) == len(headers), (row, headers)
        widths = [max(w, len(c)) for w, c in zip(widths, row)]

    def numeric(c: str) -> bool:  # a number, maybe with a unit or a short aside; not a sentence
        return bool(c) and (c[0].isdigit() or (c[0] in "-+." and len(c) > 1 and c[1].isdigit())) \
            and len(c.split()) <= 5

    names_numeric = all(numeric(r[0]) for r in cells)
    # a "-" (no value) sits right-aligned in a column of mostly numbers, as the numbers do
    col = [[r[j] for r in cells if j < len(r) and r[j] != "-"] for j in range(len(headers))]
    dash_right = [2 * sum(map(numeric, c)) > len(c) for c in col]
    out = []
    if title:
        out.append(title)
    out.append("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
    out.append("  ".join("-" * w for w in widths))
    for row in cells:
        out.append("  ".join(c.rjust(w) if (j or names_numeric) and (numeric(c) or (c == "-" and dash_right[j]))
                             else c.ljust(w)
                             for j, (c, w) in enumerate(zip(row, widths))).rstrip())
    out.extend(f"note: {n}" for n in notes)
    return "\n".join(out)


def shown_path(path: object) -> str:
    """A trace path as a report header shows it: relative to the working directory when the file lies under
    it (the bundled sample from a clone: ``traces/sample_chat.jsonl``, as the README shows), else as given.
    Only the text changes: the JSON keeps the path it read. A character that is not printable (a newline, a tab,
    an escape) is shown as its Python escape (``\\n``), so a file name cannot break a header line."""
    text = str(path)
    if os.path.isabs(text):
        try:
            rel = os.path.relpath(text)
        except ValueError:                      # another drive (Windows)
            rel = os.pardir
        text = text if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
