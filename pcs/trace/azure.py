"""Reader for the Azure LLM/LMM inference trace CSVs: arrivals and lengths only, every published year.

All from github.com/Azure/AzurePublicDataset (data CC-BY 4.0), schema tables in
the dataset READMEs at that repository's root:

=====  ===========================================  ==========================================  ===============================
year   files                                        header                                      ``TIMESTAMP`` spelling
=====  ===========================================  ==========================================  ===============================
2023   ``data/AzureLLMInferenceTrace_{code,conv}``  ``TIMESTAMP,ContextTokens,GeneratedTokens``  ``2023-11-16 18:15:46.6805900``
       ``.csv`` (Splitwise, ISCA'24)                                                            (7 fractional digits, UTC)
2024   ``AzureLLMInferenceTrace_{code,conv}_1week``  the same                                   ``2024-05-12 00:00:00.001163+00:00``
       ``.csv`` (DynamoLLM, HPCA'25; blob storage)                                              or ``...00:00:00+00:00`` (mixed)
2025   ``data/AzureLMMInferenceTrace_multimodal``   ``TIMESTAMP,NumImages,ContextTokens,``      ``2024-10-15T12:00:00.269Z``
       ``.csv.gz`` (ModServe, SoCC'25)              ``GeneratedTokens``
=====  ===========================================  ==========================================  ===============================

(2024 spellings: the dataset notebook ``analysis/AzureLLMInferenceDataset2024.ipynb``
parses them with ``date_format="mixed"``; 2025: ``analysis/AzureLMMInferenceDataset2025.ipynb``.)
No block hashes and no sessions: these rows drive :mod:`pcs.trace.synth` or
are read as a trace whose prefix reuse is synthesised (:mod:`pcs.trace.lengthonly`).
"""
from __future__ import annotations

import datetime as dt
import re
from fractions import Fraction
from typing import Iterator

from pcs.errors import InputError, quoted
from pcs.units import ascii_int
from pcs.trace.batches import MAX_ARRIVAL_S
from pcs.trace.lengthonly import cell_reason, check_length, header_problem, token_count
from pcs.trace.source import display_name, iter_csv_rows
from pcs.trace.hashids import BlankLine, blank_row

__all__ = ["AZURE_HEADER", "AZURE_HEADERS", "read_azure_csv", "read_azure_rows", "parse_stamp", "stamp_ns"]

AZURE_HEADER = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
#: Accepted headers: 2023 and 2024 (LLM), 2025 (LMM, with NumImages).
AZURE_HEADERS = (AZURE_HEADER, ("TIMESTAMP", "NumImages", "ContextTokens", "GeneratedTokens"))

# date, 'T' or ' ', time, optional fraction, optional zone (Z or +HH:MM / -HH:MM)
_STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})?$", re.ASCII)


def parse_stamp(stamp: str, name: str, ln: int, field: str = "TIMESTAMP") -> float:
    """Seconds since the Unix epoch of one Azure ``TIMESTAMP`` (any published spelling), as one float
    (ulp 2.4e-7 s at 1.7e9 s: arrivals are taken from :func:`stamp_ns` instead, exact to the file's digits).

    No zone means UTC (2023).

    Raises:
        InputError: a spelling none of the releases uses.

    >>> parse_stamp("2023-11-16 18:15:46.6805900", "f", 2) - parse_stamp("2024-10-15T12:00:00.269Z", "f", 2) < 0
    True
    >>> parse_stamp("2024-05-12 00:00:00+00:00", "f", 2) == parse_stamp("2024-05-12T00:00:00Z", "f", 2)
    True
    """
    return float(stamp_ns(stamp, name, ln, field) / _NS_PER_S)


#: Units of :func:`stamp_ns` per second.
_NS_PER_S = 10 ** 9


def stamp_ns(stamp: str, name: str, ln: int, field: str = "TIMESTAMP") -> int | Fraction:
    """Nanoseconds since the Unix epoch of one Azure ``TIMESTAMP``, exact: an int (a Fraction for a fraction
    of more than 9 digits), so an arrival ``(t - t0) / 1e9`` is the file's difference correctly rounded once
    (``18:15:50.9951690`` after ``18:15:46.6805900`` -> 4.314579 s, not 4.314579010009766 from two epoch
    floats). No zone means UTC (2023).

    Raises:
        InputError: a spelling none of the releases uses.

    >>> stamp_ns("2023-11-16 18:15:50.9951690", "f", 2) - stamp_ns("2023-11-16 18:15:46.6805900", "f", 2)
    4314579000
    """
    m = _STAMP.match(stamp.strip())
    if m is None:
        raise InputError(name, ln, field, "expected 'YYYY-MM-DD HH:MM:SS[.fff][+00:00|Z]', "
                         f"got {quoted(stamp, show=repr)}")
    day, clock, frac, zone = m.groups()
    try:
        t = dt.datetime.strptime(f"{day} {clock}", "%Y-%m-%d %H:%M:%S").replace(tzinfo=dt.timezone.utc)
    except ValueError:
        raise InputError(name, ln, field, f"not a calendar date/time: {quoted(stamp, show=repr)}") from None
    sec = int(t.timestamp())                      # whole seconds: exact in a float up to 2**53
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        sec -= sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    ns = sec * _NS_PER_S
    if not frac:
        return ns
    if len(frac) <= 9:
        return ns + int(frac) * 10 ** (9 - len(frac))
    return ns + Fraction(int(frac) * _NS_PER_S, 10 ** len(frac))


def azure_columns(row: list[str], name: str) -> dict[str, int]:
    """The header row's columns by name (stripped), in any order, by the one rule of both CSV readers
    (:func:`pcs.trace.lengthonly.header_problem`, as :func:`pcs.trace.burstgpt._header`): ``TIMESTAMP``,
    ``ContextTokens``, ``GeneratedTokens`` and, in 2025, ``NumImages``.

    Raises:
        InputError: at line 1, a column twice, the columns it lacks (one that differs only in case said so) or an
            unknown one; the message names it, then the headers it may be.
    """
    problem = header_problem(row, AZURE_HEADER, ("NumImages",))
    if problem:
        raise InputError(name, 1, None, f"Azure header {problem}; expected "
                         + " or ".join(",".join(h) for h in AZURE_HEADERS) + " (the columns in any order)")
    return {c.strip(): i for i, c in enumerate(row)}


def read_azure_rows(path, check_order: bool = True, on_bad=None,
                    reorder: str = "use sort= to reorder",
                    name: str | None = None) -> Iterator[tuple[float, int, int, int]]:
    """Yield ``(arrival_s, context_tokens, generated_tokens, num_images)`` per row.

    ``arrival_s`` counts from the first row's TIMESTAMP; ``num_images`` is 0
    for the 2023/2024 files (no such column). ``on_bad``: called with the
    :class:`InputError` of a bad data row, which is then skipped (None: raise). ``reorder``: the advice a
    decreasing timestamp's error gives (the command's own way to reorder). ``name``: the file's name in errors
    (default :func:`display_name` of ``path``; stdin's spool file is read as ``-``).

    Raises:
        InputError: unknown header, bad value, a decreasing timestamp with ``check_order``, or a
            TIMESTAMP more than :data:`pcs.trace.batches.MAX_ARRIVAL_S` from the first row's (file, line, field).
    """
    name = name or display_name(path)
    t0 = None
    last = -float("inf")
    cols: dict[str, int] = {}
    for ln, row in iter_csv_rows(path, name):
        if ln == 1:
            cols, width = azure_columns(row, name), len(row)   # two empty names are two cells
            continue
        try:
            t, ctx, gen, images = _row(row, cols, width, name, ln)
            _check_time(t, t0, last if check_order else None, reorder, name, ln)
        except InputError as exc:
            if on_bad is None:
                raise
            on_bad(exc)
            continue
        last = max(last, t)
        t0 = t if t0 is None else t0
        yield float((t - t0) / _NS_PER_S), ctx, gen, images


def _check_time(t: int | Fraction, t0: int | Fraction | None, last: int | Fraction | None, reorder: str,
                name: str, ln: int) -> None:
    """Raise when TIMESTAMP ``t`` (ns, :func:`stamp_ns`) decreases (below ``last``; None: order not checked) or
    lies beyond +-:data:`pcs.trace.batches.MAX_ARRIVAL_S` from the first row's ``t0`` (the replay clock's bound; a
    calendar TIMESTAMP cannot follow the JSONL advice to subtract the first one, so the date is questioned)."""
    if last is not None and t < last:
        raise InputError(name, ln, "TIMESTAMP", f"decreases ({reorder})")
    if t0 is not None and abs(t - t0) > MAX_ARRIVAL_S * _NS_PER_S:
        raise InputError(name, ln, "TIMESTAMP", f"lies {float((t - t0) / _NS_PER_S):.4g} s from the first row's, "
                         "beyond +-2**32 s (136 years), where a float64 clock loses microseconds: is the date right?")


def _row(row: list[str], cols: dict[str, int], width: int, name: str,
         ln: int) -> tuple[int | Fraction, int, int, int]:
    if blank_row(row):
        raise BlankLine(name, ln)
    if len(row) != width:
        raise InputError(name, ln, None, f"expected {width} columns, got {len(row)}")
    images = _images(row[cols["NumImages"]], name, ln) if "NumImages" in cols else 0
    return (stamp_ns(row[cols["TIMESTAMP"]], name, ln),
            token_count(row[cols["ContextTokens"]], "ContextTokens", name, ln),
            token_count(row[cols["GeneratedTokens"]], "GeneratedTokens", name, ln), images)


def _images(v: str, name: str, ln: int) -> int:
    """The 2025 ``NumImages`` cell (read and dropped): an integer in ASCII digits, under the bound of a count
    (:func:`pcs.trace.lengthonly.check_length`)."""
    try:
        n = ascii_int(v)
    except ValueError:
        raise InputError(name, ln, "NumImages", cell_reason(v, "must be an integer in ASCII digits 0-9")) from None
    return check_length(n, "NumImages", name, ln)


def read_azure_csv(path) -> Iterator[tuple[float, int, int]]:
    """Yield ``(arrival_s, context_tokens, generated_tokens)`` per row, arrival from the first row.

    Any published year (see the module docstring); the 2025 ``NumImages``
    column is read and dropped.

    Raises:
        InputError: wrong header, bad value, or a decreasing timestamp (file, line, field).
    """
    for t, ctx, gen, _ in read_azure_rows(path, reorder="sort the rows by TIMESTAMP first"):
        yield t, ctx, gen
