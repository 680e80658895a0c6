"""The block-size hint of a hash-id line whose ids do not cover its prompt, made to hold for the lines before it.

A Mooncake or Bailian line of ``n`` ids for ``t`` prompt tokens fits block size B iff ``ceil(t / B) == n``
(docs/traces-formats.md), an interval of B per line (:func:`pcs.trace.hashids.block_size_range`). The reader
checks one line at a time and names, on the line that fails, a block size that fits that line
(:func:`pcs.trace.hashids.check_ids`); a size fitting it may break a line already read. :func:`rehinted` runs only
once a line has failed (no work on good input): it re-reads the file from its first line to the failing one and
names a size that fits all of them, or the two lines no single size fits
(:func:`pcs.trace.hashids.block_size_hint`).

Cost: one ``json.loads`` per line before the failing one (5.2 us of CPU a line on the Mooncake conversation
trace, 12,032 lines re-read in 0.062 s: about 5 s per million), at most
:data:`REREAD_LINES` of them; past that the hint of the failing line alone stands, saying so. Stdin and FIFOs are
re-read from the copy :func:`pcs.trace.api._spool` made before the read; a stream handed here unspooled keeps the
failing line's hint as it is.
"""
from __future__ import annotations

import json
from typing import Any, Iterator

from pcs.errors import InputError
from pcs.trace.hashids import _likely_block_size, block_size_hint
from pcs.trace.source import is_stream, iter_chunks, iter_lines

__all__ = ["REREAD_LINES", "rehinted"]

#: The most lines :func:`rehinted` re-reads before a failing line (beyond, the failing line's own hint stands).
REREAD_LINES = 1_000_000

#: The formats whose lines carry ``input_length`` and ``hash_ids`` (:func:`pcs.trace.hashids.check_ids`).
HASH_ID_JSONL = ("mooncake", "bailian")


def rehinted(error: InputError, path: Any, fmt: str) -> InputError:
    """``error`` with its block-size hint made to fit every line from the first to ``error.line``, when it is a
    hash-id JSONL line's ``hash_ids`` count error with the one-line hint (:func:`pcs.trace.hashids.check_ids`);
    else ``error`` itself (another error, another format, a stream, a file that changed under the reader). Past
    :data:`REREAD_LINES` lines the failing line's hint is kept and said to be of that line alone.

    Raises:
        nothing of its own: a re-read that fails leaves ``error`` as it was.
    """
    if fmt not in HASH_ID_JSONL or error.field != "hash_ids" or error.line is None or is_stream(path):
        return error
    if error.line > REREAD_LINES:            # decided before any line is read: nothing re-read to throw away
        if error.problem.endswith(" fits)"):
            return InputError(error.path, error.line, error.field, error.problem[:-1]
                              + f" this line; the lines before it, more than {REREAD_LINES:,}, not re-read)")
        return error
    try:
        rows = list(_id_counts(path, error.path, error.line))
    except (InputError, OSError, ValueError):
        return error
    if not rows or rows[-1][0] != error.line:
        return error
    ln, prompt, n = rows[-1]
    old = _likely_block_size(prompt, n)
    if not error.problem.endswith("; " + old):
        return error
    new = block_size_hint(prompt, n, ln, rows[:-1])
    return InputError(error.path, error.line, error.field, error.problem[:-len(old)] + new)


def _id_counts(path: Any, name: str, last: int) -> Iterator[tuple[int, int, int]]:
    """``(line, input_length, number of hash_ids)`` of each line from the first to ``last`` that has both as
    the readers take them (an int and a list); other lines (blank, skipped, broken) are passed over."""
    for first, chunk in iter_chunks(path, name=name):
        for ln, line in iter_lines(first, chunk, lazy=True):
            if ln > last:
                return
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if not isinstance(obj, dict):
                continue
            t, ids = obj.get("input_length"), obj.get("hash_ids")
            if isinstance(t, int) and not isinstance(t, bool) and isinstance(ids, list):
                yield ln, t, len(ids)
