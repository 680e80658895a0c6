"""Reader for Azure LLM inference trace CSVs (Splitwise, ISCA'24): arrivals and lengths only.

Header ``TIMESTAMP,ContextTokens,GeneratedTokens``; ``TIMESTAMP`` is a wall
clock string ``YYYY-MM-DD HH:MM:SS[.fffffff]`` (7 fractional digits in the
2023 release, github.com/Azure/AzurePublicDataset ``data/AzureLLMInferenceTrace_*.csv``).
No block hashes: pcs uses these rows only to drive :mod:`pcs.trace.synth`.
"""
from __future__ import annotations

import csv
import datetime as dt
import io
from typing import Iterator

from pcs.errors import InputError
from pcs.trace.source import display_name, iter_chunks, iter_lines

__all__ = ["AZURE_HEADER", "read_azure_csv"]

AZURE_HEADER = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")


def _seconds(stamp: str, name: str, ln: int) -> float:
    main, _, frac = stamp.strip().partition(".")
    try:
        t = dt.datetime.strptime(main, "%Y-%m-%d %H:%M:%S").replace(tzinfo=dt.timezone.utc)
        if frac and not frac.isdigit():
            raise ValueError(frac)
    except ValueError:
        raise InputError(name, ln, "TIMESTAMP", f"expected 'YYYY-MM-DD HH:MM:SS.fffffff', got {stamp[:40]!r}") from None
    return t.timestamp() + (int(frac) / 10 ** len(frac) if frac else 0.0)


def _count(v: str, field: str, name: str, ln: int) -> int:
    try:
        n = int(v)
    except ValueError:
        raise InputError(name, ln, field, f"must be an integer, got {v[:40]!r}") from None
    if n < 0:
        raise InputError(name, ln, field, f"must be >= 0, got {n}")
    return n


def read_azure_csv(path) -> Iterator[tuple[float, int, int]]:
    """Yield ``(arrival_s, context_tokens, generated_tokens)`` per row, arrival from the first row.

    Raises:
        InputError: wrong header, bad value, or a decreasing timestamp (file, line, field).
    """
    name = display_name(path)
    t0 = None
    last = -float("inf")
    for first, chunk in iter_chunks(path, name=name):
        for ln, line in iter_lines(first, chunk):
            try:
                row = next(csv.reader(io.StringIO(line.decode("utf-8"))), [])
            except (UnicodeDecodeError, csv.Error) as exc:
                raise InputError(name, ln, None, f"unreadable CSV line ({exc})") from None
            if ln == 1:
                if tuple(c.strip() for c in row) != AZURE_HEADER:
                    raise InputError(name, 1, None, f"header must be {','.join(AZURE_HEADER)}")
                continue
            if len(row) != 3:
                raise InputError(name, ln, None, f"expected 3 columns, got {len(row)}")
            t = _seconds(row[0], name, ln)
            if t < last:
                raise InputError(name, ln, "TIMESTAMP", "decreases")
            last = t
            t0 = t if t0 is None else t0
            yield t - t0, _count(row[1], "ContextTokens", name, ln), _count(row[2], "GeneratedTokens", name, ln)
