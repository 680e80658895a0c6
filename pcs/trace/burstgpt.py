"""Reader for BurstGPT request logs (Wang et al., KDD'25): arrivals and lengths, sessions in release 3.

github.com/HPMLL/BurstGPT (data CC-BY 4.0), schema section of its README:

- ``Timestamp``: submission time, seconds from 0:00:00 on the first day;
- ``Session ID`` (``BurstGPT_3.csv`` and later only): conversation id, set
  only for conversation-mode rows; rows sharing it are one session;
- ``Elapsed time`` (release 3): submission to complete response, seconds;
- ``Model``: ``ChatGPT`` (GPT-3.5) or ``GPT-4``;
- ``Request tokens``, ``Response tokens`` (0 for a failed request),
  ``Total tokens`` (their sum);
- ``Log Type``: ``Conversation log`` or ``API log``.

Releases 1 and 2 have the six columns ``Timestamp,Model,Request tokens,
Response tokens,Total tokens,Log Type``; release 3 inserts ``Session ID,
Elapsed time`` after ``Timestamp``. Columns are found by name, so both read.
No block hashes: the prefix reuse of a BurstGPT trace is synthesised by
:mod:`pcs.trace.lengthonly` and flagged as such.
"""
from __future__ import annotations

import math
from typing import Iterator

from pcs.errors import InputError, quoted
from pcs.units import ascii_float
from pcs.trace.batches import arrival_error
from pcs.trace.lengthonly import LengthRow, header_problem, token_count
from pcs.trace.source import display_name, iter_csv_rows
from pcs.trace.hashids import BlankLine, blank_row

__all__ = ["BURSTGPT_OPTIONAL", "BURSTGPT_REQUIRED", "read_burstgpt_rows"]

#: Columns every release has; ``Session ID`` and ``Elapsed time`` (release 3) are optional.
BURSTGPT_REQUIRED = ("Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type")
BURSTGPT_OPTIONAL = ("Session ID", "Elapsed time")


def _header(row: list[str], name: str) -> dict[str, int]:
    """The header row's columns by name (stripped), in any order, by the one rule of both CSV readers
    (:func:`pcs.trace.lengthonly.header_problem`, as :func:`pcs.trace.azure.azure_columns`).

    Raises:
        InputError: at line 1, a column twice, the columns it lacks or one that is neither required nor optional
            (:data:`BURSTGPT_REQUIRED`, :data:`BURSTGPT_OPTIONAL`), named.
    """
    cols = {c.strip(): i for i, c in enumerate(row)}
    problem = header_problem(row, BURSTGPT_REQUIRED, BURSTGPT_OPTIONAL)
    if problem:
        raise InputError(name, 1, None, f"BurstGPT header {problem} "
                         f"(expected {','.join(BURSTGPT_REQUIRED)}, optionally with 'Session ID','Elapsed time')")
    return cols


def _row(row: list[str], cols: dict[str, int], name: str, ln: int) -> LengthRow:
    try:
        ts = ascii_float(row[cols["Timestamp"]])
    except ValueError:
        raise InputError(name, ln, "Timestamp", f"must be a number of seconds, got {quoted(row[cols['Timestamp']], show=repr)}") from None
    if not math.isfinite(ts):
        raise InputError(name, ln, "Timestamp", f"must be finite, got {ts}")
    if arrival_error(ts):
        raise InputError(name, ln, "Timestamp", arrival_error(ts))
    req = token_count(row[cols["Request tokens"]], "Request tokens", name, ln)
    resp = token_count(row[cols["Response tokens"]], "Response tokens", name, ln)
    sess = row[cols["Session ID"]].strip() if "Session ID" in cols else ""
    model = row[cols["Model"]].strip()
    return LengthRow(ts, req, resp, sess or None, model, row[cols["Log Type"]].strip())


def read_burstgpt_rows(path, check_order: bool = True, on_bad=None, name: str | None = None) -> Iterator[LengthRow]:
    """Yield one :class:`LengthRow` per CSV row (``namespace`` = ``Model``, ``type`` = ``Log Type``).

    ``arrival_s`` is the ``Timestamp`` as written (already relative to the
    first day's midnight). ``on_bad``: called with the :class:`InputError`
    of a bad data row, which is then skipped (None: raise). ``name``: the file's name in errors (default
    :func:`display_name` of ``path``; stdin's spool file is read as ``-``).

    Raises:
        InputError: missing columns, a bad value, or a decreasing timestamp
            with ``check_order``. ``Total tokens`` is not read (it is the sum
            of the other two, README).
    """
    name = name or display_name(path)
    cols: dict[str, int] = {}
    width = 0                 # the header's cells, empty names too (two may be: an index column, a trailing comma)
    last = -math.inf
    for ln, row in iter_csv_rows(path, name):
        if ln == 1:
            cols, width = _header(row, name), len(row)
            continue
        try:
            if blank_row(row):
                raise BlankLine(name, ln)
            if len(row) != width:
                raise InputError(name, ln, None, f"expected {width} columns, got {len(row)}")
            r = _row(row, cols, name, ln)
            if check_order and r.arrival_s < last:
                raise InputError(name, ln, "Timestamp", f"decreases ({r.arrival_s:g} after {last:g}); "
                                 "use sort= to reorder")
        except InputError as exc:
            if on_bad is None:
                raise
            on_bad(exc)
            continue
        last = max(last, r.arrival_s)
        yield r
