"""Plain-text tables: right-aligned numbers, left-aligned text, no colour."""
from __future__ import annotations

import os
from typing import Sequence

from pcs.errors import printable, shown_name  # noqa: F401 - shown_name: the name rule of the reports too

__all__ = ["render_table", "shown_relative_path", "shortened_path", "shown_name"]


#: The width a text column is wrapped to fit (``render_table(..., wrap=True)``): terminals and docs show 100.
WIDTH = 100
#: The narrowest a wrapped column becomes; a table whose other columns leave less stays as wide as it is.
MIN_WRAPPED = 30
#: Units a wrapped cell keeps on the line of the number before them ("3.8 %" never becomes "3.8" / "%").
UNITS = frozenset({"%", "pts", "pt", "x", "B", "KB", "MB", "GB", "TB", "PB", "KiB", "MiB", "GiB", "TiB", "B/s", "KB/s",
                   "MB/s", "GB/s", "TB/s", "blk", "blocks", "tokens", "ns", "us", "ms", "s"})
#: Joins two words that a wrap must not separate (restored to a space after the wrap; not whitespace to textwrap).
_GLUE = "\x1f"


def render_table(headers: Sequence[str], rows: Sequence[Sequence[object]], title: str | None = None,
                 notes: Sequence[str] = (), wrap: bool = False, text_columns: Sequence[int] = (),
                 split: bool | Sequence[int] = False) -> str:
    """Render rows under headers as aligned plain text.

    Args:
        headers: column names.
        rows: one sequence of cells per row (cells are ``str()``-ed; ``None``
            shows as ``-``). A cell that looks numeric (starts with a digit or sign, at most five words) is
            right-aligned, as is a ``-`` among numbers or in a column of no values; in the first column,
            which names the rows, only when every cell there is numeric (a
            policy named ``2q`` stays with the other names).
        title: optional line printed above the table.
        notes: lines printed below the table (each prefixed ``note: ``).
        wrap: the last column holds sentences (a meaning, what a policy does): when the table is wider than
            :data:`WIDTH` columns, its cells are wrapped at spaces onto lines of their own under that column, so
            the table fits (unless the other columns leave it fewer than :data:`MIN_WRAPPED` columns).
        text_columns: indices of columns of prose, every cell left-aligned (a detail that starts with a count,
            "13,902,759 prompt tokens prefilled", reads as the other details do).
        split: a table of many number columns (a tier's counters, a link's times): when wider than
            :data:`WIDTH`, its columns are shown as consecutive tables one under the other, each repeating the
            first column (the row names) and holding as many further columns as fit (:func:`_column_groups`;
            a sequence: the indices of the columns that start a new table, each group then split further only
            if still too wide); each column as wide and on the same side as in the whole table (groups rendered
            apart by :func:`_render_groups`: a column's width and side hang on its own header and cells only);
            the title above the first, the notes below the last. Not with ``wrap`` or ``text_columns``.
    Returns:
        The table as one string without a trailing newline.
    """
    groups = _column_groups(headers, rows, () if split is True else split) if split else []
    if len(groups) > 1:
        assert not wrap and not text_columns
        return _render_groups(headers, rows, title, notes, groups)
    cells = [["-" if c is None else str(c) for c in row] for row in rows]
    widths = [_shown_width(h) for h in headers]
    for row in cells:
        assert len(row) == len(headers), (row, headers)
        widths = [max(w, _shown_width(c)) for w, c in zip(widths, row)]
    if wrap:
        cells, widths = _wrapped(cells, widths, len(headers[-1]))
    names_numeric = all(_numeric(r[0]) for r in cells)
    # a "-" (no value) sits where a number would: right in a column of mostly numbers or of no values at all
    col = [[r[j] for r in cells if j < len(r) and r[j] != "-"] for j in range(len(headers))]
    dash_right = [not c or 2 * sum(map(_numeric, c)) > len(c) for c in col]
    out = []
    lead = sum(widths[:-1]) + 2 * (len(widths) - 1)
    if title:
        out.append(title)
    out.append("  ".join(_ljust(h, w) for h, w in zip(headers, widths)).rstrip())
    out.append("  ".join("-" * w for w in widths))
    for row in cells:
        more = row[-1].split("\n") if wrap else [row[-1]]   # a wrapped last cell: its further lines under it
        whole = [*row[:-1], " ".join(more)]                 # aligned as the whole cell would be
        out.append("  ".join(_rjust(s, w) if (j or names_numeric) and j not in text_columns
                             and (_numeric(c) or (c == "-" and dash_right[j]))
                             else _ljust(s, w)
                             for j, (c, s, w) in enumerate(zip(whole, [*row[:-1], more[0]], widths))).rstrip())
        out.extend(" " * lead + m for m in more[1:])
    out.extend(f"note: {n}" for n in notes)
    return "\n".join(out)


def _numeric(c: str) -> bool:
    """A cell that reads as a number, maybe with a unit or a short aside (at most five words); not a sentence."""
    return bool(c) and (c[0].isdigit() or (c[0] in "-+." and len(c) > 1 and c[1].isdigit())) \
        and len(c.split()) <= 5


def _render_groups(headers: Sequence[str], rows: Sequence[Sequence[object]], title: str | None,
                   notes: Sequence[str], groups: list) -> str:
    """``render_table``'s ``split``: one table per group of column indices, one under the other, the title above
    the first and the notes below the last."""
    return "\n".join(render_table([headers[j] for j in g], [[row[j] for j in g] for row in rows],
                                   title if i == 0 else None, notes if i == len(groups) - 1 else ())
                      for i, g in enumerate(groups))


def _column_groups(headers: Sequence[str], rows: Sequence[Sequence[object]],
                   starts: Sequence[int] = ()) -> list[list[int]]:
    """Column indices of the tables :func:`render_table` (``split``) shows: one group, every column, when the
    table fits :data:`WIDTH`; else column 0 and then, in order, further columns: a new group at each index of
    ``starts`` and wherever the next column would take the group past :data:`WIDTH` (a column wider than that
    alone still gets a group of its own).

    >>> _column_groups(["n", "a" * 60, "b" * 40], [])
    [[0, 1], [0, 2]]
    >>> _column_groups(["n", "a" * 30, "b" * 30, "c" * 30, "d" * 30], [], starts=(3,))
    [[0, 1, 2], [0, 3, 4]]
    """
    widths = [max([_shown_width(h)] + [_shown_width("-" if r[j] is None else str(r[j])) for r in rows])
              for j, h in enumerate(headers)]
    if sum(widths) + 2 * (len(widths) - 1) <= WIDTH:
        return [list(range(len(headers)))]
    groups: list[list[int]] = []
    used = WIDTH + 1
    for j in range(1, len(headers)):
        if j in starts or used + 2 + widths[j] > WIDTH:
            groups.append([0])
            used = widths[0]
        groups[-1].append(j)
        used += 2 + widths[j]
    return groups


def _wrapped(cells: list[list[str]], widths: list[int], header: int) -> tuple[list[list[str]], list[int]]:
    """``cells`` with each last cell wrapped to fit :data:`WIDTH` (its lines joined by newlines) and the widths
    after it; unchanged when the table fits, or when the other columns leave less than :data:`MIN_WRAPPED`."""
    import textwrap

    room = WIDTH - (sum(widths[:-1]) + 2 * (len(widths) - 1))
    if widths[-1] <= room or room < max(MIN_WRAPPED, header):
        return cells, widths
    out = [[*row[:-1], "\n".join(line.replace(_GLUE, " ") for line in textwrap.wrap(
        _glued(row[-1]), room, break_long_words=False, break_on_hyphens=False))
            if len(row[-1]) > room else row[-1]] for row in cells]
    last = max([header] + [len(line) for row in out for line in row[-1].split("\n")])
    return out, [*widths[:-1], last]


def _shown_width(text: str) -> int:
    """Columns ``text`` takes on a terminal: 2 for a wide or full-width character (CJK: Unicode's East Asian
    Width W or F, Unicode Standard Annex 11), 1 for any other."""
    if text.isascii():
        return len(text)
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _ljust(text: str, width: int) -> str:
    return text + " " * (width - _shown_width(text))


def _rjust(text: str, width: int) -> str:
    return " " * (width - _shown_width(text)) + text


def _glued(text: str) -> str:
    """``text`` with the spaces a wrap must not break at replaced by :data:`_GLUE`: between a number and its unit
    (:data:`UNITS`, trailing punctuation aside: "(3.8 %)"), and after a word with no letter or digit (an operator
    such as "-", "+", "(<"), so no line ends with a bare operator."""
    words = text.split(" ")
    out = words[:1]
    for word in words[1:]:
        prev = out[-1]
        stem = word.rstrip(")],;:.")
        unit = stem in UNITS and prev[-1:].isdigit()
        operator = prev != "" and not any(c.isalnum() for c in prev.rsplit(_GLUE, 1)[-1])
        if unit or operator:
            out[-1] = prev + _GLUE + word
        else:
            out.append(word)
    return " ".join(out)


def shown_relative_path(path: object) -> str:
    """A trace path as a report header shows it: relative to the working directory when the file lies under
    it (the bundled sample from a clone: ``traces/sample_chat.jsonl``, as the README shows), else as given;
    whole (a title cuts it to its width: :func:`shortened_path`). Only the text changes: the JSON keeps the path
    it read. Each character by the one rule of shown text (:func:`pcs.errors.printable`: a newline, a tab, a
    right-to-left mark as its escape, a name's byte 0xff as ``\\xff``), so a file name cannot break a header line.
    A message shows a path by :func:`pcs.errors.shown_path` instead: as given, cut past 200 characters.

    Raises: nothing (any object: its ``str``)."""
    text = str(path)
    if os.path.isabs(text):
        try:
            rel = os.path.relpath(text)
        except ValueError:                      # another drive (Windows)
            rel = os.pardir
        text = text if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel
    return printable(text)


def shortened_path(text: str, width: int) -> str:
    """A shown path (:func:`shown_relative_path`) in at most ``width`` columns, for a table title: as it is when it fits,
    else ``...`` and its last whole components (``.../runs/trace.jsonl``), else ``...`` and the name's last
    characters. Only the title is cut; the JSON keeps the whole path.

    >>> shortened_path("/data/a/b/trace.jsonl", 20), shortened_path("/data/a/b/trace.jsonl", 10)
    ('.../a/b/trace.jsonl', '...e.jsonl')
    """
    if len(text) <= width:
        return text
    tail = text[len(text) - max(width - 3, 1):]
    cut = tail.find("/")
    return "..." + (tail[cut:] if 0 <= cut < len(tail) - 1 else tail)
