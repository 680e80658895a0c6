"""``open_trace``: one entry point for every trace format, and the ``Trace`` it returns.

Formats (``format=`` or detected from the content): ``mooncake``,
``bailian``, ``tokens`` (token-id JSONL, hashed by pcs), ``parquet`` (the
canonical schema of :mod:`pcs.trace.parquet`), and the length-only CSVs
``azure`` (every published year) and ``burstgpt``, whose prefix reuse is
synthesised by :mod:`pcs.trace.lengthonly` and named in ``Trace.reuse``. gzip is detected by its magic
bytes; ``-`` is stdin (spooled once to a temporary file so the trace can be
detected and iterated more than once, with constant memory; so is a FIFO,
e.g. ``<(zcat trace.gz)``); the spool is removed when the trace is dropped,
when opening fails, and at exit (:mod:`pcs.outfile`).
"""
from __future__ import annotations

import contextlib
import copy
import os
import re
import sys
import weakref
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from pcs import jsondepth
from pcs.argcheck import check_int
from pcs.choices import LENGTH_ONLY_FORMATS, ON_ERROR, TRACE_FORMATS
from pcs.errors import (InputError, PickledAsIs, UnknownNameError, UserError, bad_byte, keyword_refusals, shown_path,
                        shown_repr)
from pcs.units import a_or_an, format_count, format_counted
from pcs.trace.request import MAX_BLOCK_SIZE, Request, RequestBatch
from pcs.trace.hashids import BlankLine, invalid_json, not_an_object, strict_loads
from pcs.trace.rowlimits import NO_LIMITS, RowLimits
from pcs.trace.source import (check_source, check_suffix, display_name, is_stream, iter_chunks, iter_lines,
                              last_line_unended, peek_lines)

__all__ = ["DEFAULT_TRACE", "FORMATS", "LENGTH_ONLY", "ON_ERROR", "Trace", "open_trace", "trace_path", "detect_format",
           "synthetic_reuse_note", "skipped_note", "skipped_unit", "trace_notes",
           "skipped_line_notes", "named_skip_notes", "skipped_lines_json"]

#: The bundled sample trace every trace-taking command reads by default
#: (made by ``pcs trace synth``, see traces/README.md). Resolved relative to
#: the repository, so an editable install from a clean clone finds it.
DEFAULT_TRACE = Path(__file__).resolve().parents[2] / "traces" / "sample_chat.jsonl"

#: Trace formats, formats that record lengths only (their block hashes are synthesised), ``on_error`` values:
#: defined in the numpy-free :mod:`pcs.choices` (the CLI's ``--help`` shows them without importing this module).
FORMATS = TRACE_FORMATS
LENGTH_ONLY = LENGTH_ONLY_FORMATS
_PARQUET_MAGIC = b"PAR1"


#: The one message for a source with no request: an empty file, one of blank/whitespace lines only (under
#: format detection or any ``--trace-format``), a CSV header alone (docs/traces.md "Input is strict").
EMPTY_TRACE = "empty trace (no requests)"


def _sniff_parquet(path) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == _PARQUET_MAGIC


def _ascii(b: int) -> bool:
    """A printable ASCII byte or a tab, CR or LF: what a text trace's character is, in any of its encodings."""
    return 0x20 <= b < 0x7F or b in (0x09, 0x0A, 0x0D)


def _utf16_ascii(two: bytes) -> bool:
    """Whether ``two``, a line's first two bytes, are an ASCII character (:func:`_ascii`) in UTF-16 without a byte
    order mark (``{\\x00``, ``\\x00T``, ``\\x00\\n``: a JSON or CSV trace saved as UTF-16, a blank first line of
    big-endian UTF-16): no UTF-8 text trace has a NUL there."""
    return len(two) == 2 and (two[1] == 0 and _ascii(two[0]) or two[0] == 0 and _ascii(two[1]))


def _utf32_start(four: bytes) -> bool:
    """Whether ``four``, a line's first four bytes, are a UTF-32 byte order mark or an ASCII character
    (:func:`_ascii`) in UTF-32 without one (``{\\x00\\x00\\x00``, ``\\x00\\x00\\x00{``, ``\\x00\\x00\\x00\\n``). Checked
    before :func:`_utf16_ascii`: UTF-32 LE's mark starts with UTF-16 LE's, and its ASCII starts as UTF-16's does."""
    if four in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"):
        return True
    return len(four) == 4 and (four[1:] == b"\x00\x00\x00" and _ascii(four[0])
                               or four[:3] == b"\x00\x00\x00" and _ascii(four[3]))


def _wide_text(first: bytes, ln: int) -> str | None:
    """The message of a first non-blank line ``first`` (line ``ln``) of UTF-32 or UTF-16 text, naming the encoding
    and its byte order, else None. Without a byte order mark the order shows where the NULs are: after the ASCII
    byte, little-endian (LE); before it, big-endian (BE), unless the line is not the file's first: a line split at
    LE's newline byte starts with the rest of that character (``\\x00\\x00\\x00{``), while BE's newline ends its
    line (``\\x00\\x00\\x00`` once split, never blank), so a first non-blank line after blank lines is LE."""
    if ln == 1 and first in (b"\x00\x00\x00", b"\x00"):     # a blank first line of BE text: its newline's NULs
        first += b"\n"
    for width, name, marks in ((4, "UTF-32", (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")),
                               (2, "UTF-16", (b"\xff\xfe", b"\xfe\xff"))):
        head = first[:width]
        if width == 4 and not _utf32_start(head) or width == 2 and not (head in marks or _utf16_ascii(head)):
            continue
        if head in marks:
            order = "little" if head == marks[0] else "big"
            what, code = f"{name} text with a {order}-endian byte order mark", name
        else:
            little = head[0] != 0 or ln > 1
            what = code = f"{name}{'LE' if little else 'BE'}"
            what += f" text ({'little' if little else 'big'}-endian, no byte order mark)"
        return (f"the file looks like {what}; pcs reads text traces (JSON Lines, CSV) as UTF-8: re-encode it "
                f"(iconv -f {code} -t UTF-8)")
    return None


def _not_json(first: bytes, exc: Exception, name: str, ln: int = 1) -> tuple[str, str] | None:
    """Why format detection could not read the non-blank line ``first`` (line ``ln``; bytes after any gzip layer), and whose
    fault that is: ``"file"`` (a msgpack capture, a gzipped Parquet file, UTF-16 or UTF-32 text), ``"line"`` (not JSON),
    ``"json"`` (JSON but not UTF-8: a JSON Lines reader refuses it, so after blank lines theirs is the first
    error); ``on_error="skip"`` passes over the last two as the readers skip such a line. None for a line that
    starts as JSON (``{`` or ``[``): the caller gives the JSON readers' file:line message."""
    if first[:1] in _MSGPACK_BATCH:
        return (f"this looks like a msgpack capture of vLLM KV-cache events, not a request trace: "
                f"{_EVENTS_HINT.format(name)}"), "file"
    if first.startswith(b"PAR1"):   # a plain Parquet file was recognised before: this one was inside gzip
        return ("a gzip-compressed Parquet file: pcs reads Parquet as written (its columns are compressed "
                "inside); gunzip it first"), "file"
    wide = _wide_text(first, ln)
    if wide is not None:
        return wide, "file"
    if isinstance(exc, UnicodeDecodeError) and first.lstrip()[:1] in (b"{", b"["):  # JSON but for its encoding
        return (f"the first non-blank line is not UTF-8 ({bad_byte(first, exc.start)}); JSON "
                f"traces are UTF-8 (RFC 8259 section 8.1): re-encode the file"), "json"
    if first.lstrip()[:1] in (b"{", b"[") and not isinstance(exc, UnicodeDecodeError):
        return None         # meant as JSON (an object, or an array: json.dump's first line is "["): the readers' message
    cells = _csv_cells(first)
    if cells is not None and not isinstance(exc, UnicodeDecodeError):
        return (f"cannot detect the format: the first non-blank line looks like a CSV header ({len(cells)} columns) "
                "but not one of a CSV format pcs detects (Azure: TIMESTAMP, ContextTokens, GeneratedTokens, 2025 "
                "also NumImages; BurstGPT: Timestamp, Model, Request tokens, Response tokens, Total tokens, Log Type; "
                f"any order); pass format= ({', '.join(FORMATS)}: azure or burstgpt for CSV)"), "line"
    looks = _almost_csv(first)
    if looks is not None and not isinstance(exc, UnicodeDecodeError):
        return (f"cannot detect the format: the first non-blank line looks like {looks}; pass format= "
                f"({', '.join(FORMATS)}: azure or burstgpt for CSV)"), "line"
    return (f"cannot detect the format: the first non-blank line is not JSON; pass format= "
            f"({', '.join(FORMATS)})"), "line"


def _almost_csv(line: bytes) -> str | None:
    """What a first non-blank line that is not read as a CSV header (:func:`_csv_cells`) looks like when it is one
    all the same, for :func:`_not_json`: a header of tab-separated names (TSV: ``a TSV header (3 tab-separated
    columns): the CSV readers (azure, burstgpt) read commas; replace the tabs with commas``) or one whose quote is
    not closed (``a CSV header with an unbalanced double quote: close it``); None otherwise (not UTF-8, JSON)."""
    try:
        text = line.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None
    if not text or text[:1] in "{[":
        return None
    if text.count('"') % 2 and "," in text:
        return "a CSV header with an unbalanced double quote: close it, or remove it"
    tabs = text.split("\t")
    if len(tabs) >= 2 and all(c.strip() for c in tabs):
        return (f"a TSV header ({len(tabs)} tab-separated columns): the CSV readers (azure, burstgpt) read "
                "comma-separated columns; replace the tabs with commas")
    return None


#: ``on_error="skip"``: format detection reads at most this many non-blank lines (and :data:`SKIP_SNIFF_BYTES` of
#: them) for the first one a reader accepts; the lines before it are ones the reader skips (docs/traces-formats.md).
SKIP_SNIFF_LINES = 1000
SKIP_SNIFF_BYTES = 16 << 20


class _BadLine(PickledAsIs, Exception):
    """A line detection cannot read, which ``on_error="skip"`` passes over as the readers skip it.

    ``error``: what detection says of it; ``reader``: True for a line meant as JSON (their own ``FILE:LINE``
    message, or not UTF-8), which the JSON Lines readers refuse, so a blank line before it is their first error
    (``FILE:1: blank line``)."""

    def __init__(self, error: InputError, reader: bool):
        super().__init__(str(error))
        self.error, self.reader = error, reader


class _NotText(InputError):
    """Detection's error for a first non-blank line whose bytes are no text trace's (UTF-16 text, a msgpack capture,
    a gzipped Parquet file, :func:`_not_json`): beside it a reader's error on such a file is noise."""


def _head_lines(path, name: str, max_lines: int, max_bytes: int) -> Iterator[tuple[int, bytes]]:
    """``(line number from 1, line)`` of the first non-blank lines: at most ``max_lines``, and no line begun once
    ``max_bytes`` of them are read (after any gzip layer)."""
    seen = size = 0
    for first, chunk in iter_chunks(path, chunk_bytes=min(max_bytes, 1 << 16), name=name):
        for ln, line in iter_lines(first, chunk, lazy=True):
            if line.strip():
                yield ln, line
                seen, size = seen + 1, size + len(line)
                if seen >= max_lines or size >= max_bytes:
                    return


def detect_format(path, name: str | None = None, on_error: str = "raise") -> str:
    """Guess a trace's format from its first bytes and first JSON object.

    Parquet magic ``PAR1`` -> parquet; a CSV header starting ``TIMESTAMP,``
    -> azure; one starting ``Timestamp,`` with a ``Request tokens`` column ->
    burstgpt; a JSON object with ``token_ids`` -> tokens; with ``chat_id`` or
    ``parent_chat_id`` -> bailian; with ``hash_ids`` -> mooncake. The first
    line is parsed as strictly as the readers parse it: a key given twice
    (which ``json.loads`` would resolve to its last value, e.g. an ``events``
    list or not) is their message, ``FILE:LINE: invalid JSON: key 'K' appears
    twice in one object``, never a format picked from one of its values; after
    blank lines, their first message is ``FILE:1: blank line``.

    ``on_error="skip"``: a line the readers would skip (not UTF-8, not JSON, a
    key twice, none of the keys above) is passed over, and the format is the
    one of the first line that names one, among the first
    :data:`SKIP_SNIFF_LINES` non-blank lines (:data:`SKIP_SNIFF_BYTES`).

    Raises:
        PathError: a path that is empty or blank, missing, a directory or not readable, naming ``path=`` as every
            public function taking a path does (:func:`pcs.trace.pathcheck.check_input_file`; it raised
            ``FileNotFoundError`` / ``IsADirectoryError``).
        InputError: empty file, a first line no rule recognises (with ``on_error="skip"``: no line among those read
            names a format), a duplicate key or bad JSON in it, or a file that is no request trace (KV-cache
            events, a chat log, UTF-16 text); each but the empty file's names the line, ``FILE:LINE: ...``, as the
            readers' errors do.
    """
    from pcs.trace.pathcheck import check_input_file

    check_input_file(path, "path")
    return _detected(path, name, on_error)[0]


def _detected(path, name: str | None = None, on_error: str = "raise") -> tuple[str, bytes | None]:
    """:func:`detect_format`'s format (its rules and errors) and, when it is a JSON-lines format detected with
    ``on_error="raise"``, the first non-blank line it read it from (else None): :class:`Trace` reads its
    ``"reuse"`` key there (:func:`_first_row_reuse`) instead of reading the file's head again."""
    name = name or display_name(path)
    if _sniff_parquet(path):
        return "parquet", None
    skip = on_error == "skip"
    first_bad = None
    for i, (ln, line) in enumerate(_head_lines(path, name, SKIP_SNIFF_LINES if skip else 1,
                                               SKIP_SNIFF_BYTES if skip else 1 << 20)):
        if i == 0 and _csv_format(line) is not None:
            return _csv_format(line), None
        try:
            return _line_format(line, ln, name, first=i == 0), None if skip else line
        except _BadLine as bad:
            if not skip:
                if bad.reader and ln > 1:       # the readers refuse the blank line 1 first: their message
                    strict_loads(name, 1, b"")  # raises it
                raise bad.error from None
            first_bad = first_bad or bad.error
    if first_bad is None:
        raise InputError(name, None, None, EMPTY_TRACE)
    error, why = first_bad, (f"with on_error='skip' no line names a format either "
                             f"({format_counted(i + 1, 'non-blank line')} read; detection reads at most "
                             f"{SKIP_SNIFF_LINES:,})")
    if "pass format=" not in error.problem:
        why += f"; pass format= ({', '.join(FORMATS)})"
    raise InputError(error.path, error.line, error.field, f"{error.problem}; {why}") from None


def _csv_cells(line: bytes, utf8: bool = True) -> list[str] | None:
    """A first non-blank line's cells read as a CSV header (quotes removed, cells stripped), None when it cannot be
    one: it starts as JSON (``{``, ``[``), is not CSV, has fewer than two cells, or is not UTF-8 with ``utf8``
    (else its bad bytes read as U+FFFD: :func:`_csv_format` detects a header one column of which is not UTF-8, and
    its reader names that column)."""
    if line.lstrip()[:1] in (b"{", b"["):
        return None
    import csv

    try:
        cells = next(csv.reader([line.decode("utf-8", errors="strict" if utf8 else "replace").rstrip("\r\n")]), [])
    except (UnicodeDecodeError, csv.Error):
        return None
    return [c.strip() for c in cells] if len(cells) >= 2 else None


def _csv_format(line: bytes) -> str | None:
    """The length-only format a first non-blank line's CSV header names (:func:`detect_format`), else None: its
    cells read as its reader reads a header (quoted or not, stripped), the columns by name in any order -- a
    ``TIMESTAMP`` column: azure; ``Timestamp`` and ``Request tokens``: burstgpt. The reader then checks the rest of
    the header (:func:`pcs.trace.azure.azure_columns`, :func:`pcs.trace.burstgpt._header`) and names what is
    wrong."""
    cells = _csv_cells(line, utf8=False)
    if cells is None or "\0" in "".join(cells):   # UTF-16 or UTF-32 text: detection names it
        return None
    if "TIMESTAMP" in cells:
        return "azure"
    if "Timestamp" in cells and "Request tokens" in cells:
        return "burstgpt"
    return None


def format_hint(path, name: str, fmt: str, error: InputError, block_size: int | None = None) -> InputError:
    """``error``, a reader's of a trace read as ``fmt``, completed by what format detection says of its line when
    that is the first non-blank line and detection reads it otherwise (else ``error`` itself: a later line, a line
    detection refuses too, or one of ``fmt``). ``name``: the trace's name in messages.

    - another format whose reader accepts the line (:func:`_suggestion`, tried on that line alone at
      ``block_size``, the one the user gave, else that format's default):
      ``... reads this line as a mooncake trace: pass format='mooncake' ...``; when that reader refuses the line
      too, only that its keys look like such a trace, and that reader's reason (no advice that would fail);
    - bytes that are no text trace (UTF-16 text, a msgpack capture, a gzipped Parquet file): detection's message
      alone, which names the cause (the reader's, a CR or bad JSON, follows from it);
    - no request trace at all (KV-cache events, a chat log): detection's message, and that no format reads it.

    Raises:
        InputError: the file's stream is unreadable (:func:`pcs.trace.source.iter_chunks`)."""
    head = next(_head_lines(path, name, 1, 1 << 20), None)
    if head is None or head[0] != error.line:
        return error if head is None else _blank_before_wide(error, *head, name)
    ln, line = head
    other = _csv_format(line)
    if other is None:
        try:
            other = _line_format(line, ln, name, first=True)
        except _BadLine:
            return error
        except _NotText as exc:         # the cause itself: UTF-16, msgpack, gzipped Parquet
            return exc
        except InputError as exc:       # no request trace: what it is, and what reads it
            return _also(error, f"{exc.problem}; no format= value reads such a file")
    if other == fmt:
        return error
    return _also(error, _suggestion(other, line, ln, name, block_size))


def _blank_before_wide(error: InputError, ln: int, line: bytes, name: str) -> InputError:
    """``error``, or when it is a blank line ahead of the first non-blank line ``line`` (line ``ln``) and that line
    is UTF-16 or UTF-32 text (:func:`_wide_text`: LE text's newline alone is a blank line of one byte), the
    encoding's message: the cause, which the blank line only follows from."""
    wide = _wide_text(line, ln) if isinstance(error, BlankLine) and error.line is not None and error.line < ln else None
    return error if wide is None else _NotText(name, ln, None, wide)


def _suggestion(other: str, line: bytes, ln: int, name: str, block_size: int | None, refused=None,
                what: str = "line") -> str:
    """What to say of format ``other``, the one detection reads from line ``ln`` (``line``) of a trace read as
    another format: ``pass format='other'`` only when that reader accepts the line (:func:`_reader_refusal`, at
    ``block_size`` tokens, the user's, or None: ``other``'s default); else that its keys look like such a trace,
    and the reader's reason (``refused``: a reason found before, e.g. the blank line 1 ahead of it), so that no
    advice is given that would fail. ``what``: "line" (:func:`format_hint`) or "file" (:func:`_not_parquet`,
    whose message names no line: the reason's line is named)."""
    if refused is None and other not in LENGTH_ONLY:
        refused = _reader_refusal(other, line, ln, name, block_size)
    if refused is not None:
        where = f"line {refused.line}: " if what == "file" and refused.line is not None else ""
        return (f"its keys look like {a_or_an(other)} trace's, but that reader refuses the {what} too: "
                f"{where}{_what(refused)}")
    return (f"format detection reads this {what} as {a_or_an(other)} trace: pass format={shown_repr(other)} (or no "
            "format=, and pcs detects it)")


def _what(error: InputError) -> str:
    """``error``'s message without its file and line: ``field 'F': problem``, or the problem alone."""
    return f"field '{error.field}': {error.problem}" if error.field else error.problem


def _also(error: InputError, more: str) -> InputError:
    """``error`` with ``more`` after its problem."""
    return InputError(error.path, error.line, error.field, f"{error.problem}; {more}")


def _reader_refusal(fmt: str, line: bytes, ln: int, name: str, block_size: int | None = None) -> InputError | None:
    """The error the ``fmt`` reader (a JSON Lines format, at ``block_size`` tokens, None: its default) gives line
    ``ln`` read alone, else None (:func:`_suggestion`)."""
    from pcs.trace.hashids import check_hashid_line, strict_loads

    block_size = block_size or _default_block_size(fmt)
    try:
        obj = strict_loads(name, ln, line)
        if fmt == "tokens":
            from pcs.trace.tokens import check_token_line

            check_token_line(obj, block_size, name, ln)
        else:
            check_hashid_line(fmt, obj, block_size, name, ln)
    except InputError as exc:
        return exc
    return None


def none_left(first: InputError | None, name: str, skipped: int, rows: bool, blank: int = 0) -> InputError:
    """The error of a trace read with ``on_error="skip"`` that has no request left: the first skipped non-blank
    line's error (``first``; None: no line to name, ``name`` alone), then how many were skipped, ``blank`` of them
    blank lines (bad lines too, docs/traces.md, but their message says nothing of the others); blank lines alone:
    :data:`EMPTY_TRACE`, as a file of blank lines only. ``rows``: Parquet, whose bad rows are skipped, not lines."""
    unit = "row" if rows else "line"
    if first is None and blank and blank == skipped:   # blank lines alone (a CSV header, then nothing else)
        return InputError(name, None, None, f"{EMPTY_TRACE}: every line skipped was blank "
                                            f"({format_counted(blank, 'blank line')})")
    if not blank:
        what = (f"its only {unit} was skipped as bad" if skipped == 1 else
                f"all {format_counted(skipped, unit)} were skipped as bad, the first for this reason")
    elif skipped - blank == 1:
        what = f"its only non-blank line was skipped as bad, and {format_counted(blank, 'blank line')} with it"
    else:
        what = (f"all {format_counted(skipped, unit)} were skipped as bad ({format_count(blank)} of them blank), "
                "the first non-blank one for this reason")
    why = f"no requests left: {what} (on_error='skip')"
    if first is None:
        return InputError(name, None, None, why)
    return InputError(first.path, first.line, first.field, f"{first.problem}; {why}")


def _line_format(line: bytes, ln: int, name: str, first: bool) -> str:
    """The format one non-blank line ``line`` (line ``ln``; ``first``: the file's first non-blank line) names
    (:func:`detect_format`).

    Raises:
        _BadLine: a line the readers would refuse, or one naming no format.
        InputError: a file that is no request trace: :func:`_not_a_trace`, or from its first line an encoding or a
            capture :func:`_not_json` names.
    """
    try:     # keys checked as the readers check them: a key given twice is their message, whatever the format
        obj = jsondepth.loads(line.decode("utf-8"), object_pairs_hook=jsondepth.no_duplicate_keys)
    except jsondepth.TooDeepError as exc:
        raise _BadLine(InputError(name, ln, None, str(exc)), True) from None
    except jsondepth.DuplicateKeyError as exc:      # never detected from a value the readers refuse
        raise _BadLine(InputError(name, ln, None, invalid_json(exc)), True) from None
    except jsondepth.NumberTooLongError as exc:     # the readers' own message: file, line, field and element
        raise _BadLine(InputError(name, ln, exc.field, str(exc)), True) from None
    except (UnicodeDecodeError, ValueError) as exc:
        why = _not_json(line, exc, name, ln)
        if why is None:     # a line meant as a JSON object: the readers' own file:line message
            raise _BadLine(InputError(name, ln, None, invalid_json(exc)), True) from None
        if why[1] != "file" or not first:     # this line's fault (a file's kind shows in its first line)
            raise _BadLine(InputError(name, ln, None, why[0]), why[1] == "json") from None
        raise _NotText(name, ln, None, why[0]) from None
    other = _not_a_trace(obj, name)
    if other is not None:
        raise InputError(name, ln, None, other)
    if not isinstance(obj, dict):     # the readers' message; an array of chat logs or KV events named as those
        inner = _not_a_trace(obj[0], name) if isinstance(obj, list) and obj and isinstance(obj[0], dict) else None
        if inner is not None:
            raise InputError(name, ln, None, inner)
        raise _BadLine(InputError(name, ln, None, not_an_object(obj)), True)
    if "token_ids" in obj:
        return "tokens"
    if "chat_id" in obj or "parent_chat_id" in obj:
        return "bailian"
    if "hash_ids" in obj:
        return "mooncake"
    raise _BadLine(InputError(name, ln, None, "cannot detect the format: the first object has none of "
                              f"'hash_ids', 'chat_id', 'token_ids'; pass format= ({', '.join(FORMATS)})"), False)


#: first bytes of a msgpack KV-event batch: a 3-element array [ts, events, rank] or a map of 2-3 keys
_MSGPACK_BATCH = (b"\x92", b"\x93", b"\x82", b"\x83")
_EVENTS_HINT = "pcs trace events {} summarises which blocks the engine held (docs/traces-formats.md)"


def _not_a_trace(obj, name: str) -> str | None:
    """What a first JSON value that is not a request trace is, and the command that reads it; else None.

    A chat log (objects with ``messages``, the OpenAI chat-completions body) -> ``pcs trace from-chat``;
    vLLM KV-cache events (``{"ts", "events", ...}`` or ``[ts, [events], rank]``, :mod:`pcs.trace.kvevents`)
    -> ``pcs trace events``. No ``--trace-format`` value reads either.
    """
    if isinstance(obj, dict) and "messages" in obj and "token_ids" not in obj and "hash_ids" not in obj:
        return ("this is a chat log (OpenAI 'messages'), not a trace: turn it into a token trace with "
                f"pcs trace from-chat {name} OUT.jsonl --tokenizer tokenizer.json, then read OUT.jsonl")
    if (isinstance(obj, dict) and isinstance(obj.get("events"), list)) or \
            (isinstance(obj, list) and len(obj) >= 2 and isinstance(obj[1], list)
             and isinstance(obj[0], (int, float)) and not isinstance(obj[0], bool)):     # [ts, [events], ...]
        return f"these are vLLM KV-cache events, not a request trace: {_EVENTS_HINT.format(name)}"
    return None


def _default_block_size(fmt: str) -> int:
    from pcs.trace.hashids import BAILIAN, MOONCAKE
    from pcs.choices import DEFAULT_TOKEN_BLOCK_SIZE   # not pcs.trace.tokens: its hashing loads hashlib

    return {"mooncake": MOONCAKE.default_block_size, "bailian": BAILIAN.default_block_size,
            "tokens": DEFAULT_TOKEN_BLOCK_SIZE, "azure": DEFAULT_TOKEN_BLOCK_SIZE,
            "burstgpt": DEFAULT_TOKEN_BLOCK_SIZE}[fmt]


def _first_row_reuse(path, name: str | None = None, on_error: str = "raise",
                     first_line: bytes | None = None) -> str | None:
    """The synthesised reuse the first JSONL row states (the readers check every row's ``reuse``), else None: its
    ``reuse_assumption`` when it has one (:data:`pcs.trace.hashids.REUSE_ASSUMPTION_KEY`: the assumption of the
    lengths-only trace it was converted from, :func:`pcs.trace.hashids.row_reuse_assumption`), else
    :data:`pcs.trace.hashids.SYNTH_REUSE` when it says ``"reuse": "synthetic"``. ``name``: the trace's name in
    errors. ``on_error="skip"``: the first row the readers accept, among the lines :func:`detect_format` reads
    (a line that is not a JSON object, or gives a key twice, is one they skip). ``first_line``: with
    ``on_error="raise"``, the file's first non-blank line as detection read it (:func:`_detected`), read instead of
    the file; None: the file is read.

    Raises:
        InputError: the first row's ``reuse_assumption`` is malformed (:func:`pcs.trace.hashids.row_reuse_assumption`).
    """
    from pcs.trace.hashids import SYNTH_REUSE, row_reuse_assumption

    skip = on_error == "skip"
    shown = name or display_name(path)
    lines = [(1, first_line)] if first_line is not None and not skip else _head_lines(
        path, shown, SKIP_SNIFF_LINES if skip else 1, SKIP_SNIFF_BYTES if skip else 1 << 20)
    for ln, line in lines:
        if not skip and b'"reuse"' not in line:
            return None
        try:        # a key given twice is no row of pcs trace synth (the readers refuse it)
            obj = jsondepth.loads(line.decode("utf-8"), object_pairs_hook=jsondepth.no_duplicate_keys)
        except ValueError:
            continue
        if isinstance(obj, dict):
            if obj.get("reuse") != "synthetic":
                return None
            return row_reuse_assumption(obj, shown, ln) or SYNTH_REUSE
    return None


_FITS = re.compile(r"\(block_size=(\d+) fits\)$")
#: The API's road to a replay re-blocked from a JSONL file's recorded size when that is not the format's default:
#: the five pieces around the size asked, the size that fits and the size asked again (:func:`reblock_road`), which
#: the command line words as its own road, convert to Parquet and pcs replay --block-size, and a sweep plan as its
#: own, outside the sweep (pcs.cli.common._REBLOCK_PHRASES, _PLAN_REBLOCK_PHRASES); a JSONL file does not record
#: its block size, a Python caller gives it.
REBLOCK_ROAD = ("to replay it re-blocked to ", "-token blocks",
                ", open it with pcs.open_trace(path, ",
                ") at the size it was recorded at and re-block that with pcs.trace.reblock.reblock(trace, ",
                "), which returns the streams to give pcs.replay (keyed exact at a multiple, lower and upper at a "
                "divisor: an interval's bounds)")
#: The API's re-blocking of a block-hash trace opened at its recorded size, and its words when the size asked is
#: no whole factor (:func:`reblock_road`); the command line names pcs replay (pcs.cli.common._PHRASE_OF).
REBLOCKS = "pcs.trace.reblock.reblock(trace, block_size) re-blocks a block-hash trace opened at its own size, for pcs.replay"
REBLOCKS_BY = " (pcs.trace.reblock.reblock, for pcs.replay); "
#: Where the road to the recorded size starts (a sweep plan's words: how the plan runs at that size).
ELSEWHERE = "; elsewhere give "


def reblock_road(stored: int, asked: int, opens_at_stored: bool) -> str:
    """The one hint, for every format and command, of how to reach a replay at ``asked``-token blocks of a
    block-hash trace recorded at ``stored``-token blocks, and how to read it at ``stored``, in the API's words
    (the command line's and a sweep plan's: pcs.cli.common.option_names).

    ``opens_at_stored``: the trace opens at ``stored`` when ``block_size`` is left out (Parquet, which records it,
    or a JSONL file recorded at its format's default); then :data:`REBLOCKS` re-blocks it as opened, else the road
    is :data:`REBLOCK_ROAD` (open it at ``stored``, then re-block). Hashed ids re-block only by a whole factor
    (:func:`pcs.trace.reblock.whole_factor`): at any other ``asked`` only the size that reads it is named.

    >>> reblock_road(512, 64, True)[-57:]
    'a divisor); elsewhere give block_size=512 or leave it out'
    """
    from pcs.trace.reblock import whole_factor

    leave = " or leave it out" if opens_at_stored else ""
    if not whole_factor(asked, stored):
        return f"a block-hash trace is re-blocked only by a whole factor of {stored}{REBLOCKS_BY}give block_size={stored}{leave}"
    if opens_at_stored:
        return f"{REBLOCKS} (exact at a multiple, an interval at a divisor){ELSEWHERE}block_size={stored}{leave}"
    to, blocks, open_at, reblock_to, streams = REBLOCK_ROAD
    return (f"{to}{asked}{blocks}{open_at}block_size={stored}{reblock_to}block_size={asked}{streams}"
            f"{ELSEWHERE}block_size={stored}")


def reblock_hint(error: InputError, asked: int | None, default: int | None = None) -> InputError:
    """``error``, a hash-id line's id-count error whose hint names a block size that fits (:func:`pcs.trace.hashids.
    _likely_block_size`), with :func:`reblock_road` from that size to ``asked`` (the caller's ``block_size``) when
    that is another size: a JSONL file does not record its block size, so ``block_size`` names the size it was
    recorded at (docs/traces-formats.md) unless the size that fits is the format's ``default``, which opens it
    without ``block_size``. Else ``error`` itself.

    >>> reblock_hint(InputError("t.jsonl", 1, "hash_ids", "has 7 ids; was it? (block_size=16 fits)"), 64).problem[-28:]
    'elsewhere give block_size=16'
    """
    m = _FITS.search(error.problem)
    fit = int(m.group(1)) if m is not None else None
    if asked is None or fit is None or fit == asked:
        return error
    return InputError(error.path, error.line, error.field,
                      f"{error.problem}; {reblock_road(fit, asked, fit == default)}")


def synthetic_reuse_note(trace) -> str | None:
    """The note every report of a trace with synthesised prefix reuse carries, else None.

    Length-only formats (Azure, BurstGPT: ids synthesised on reading) and
    traces made by ``pcs trace synth`` (``Trace.reuse`` starts with
    ``synthesised``); read after the trace's rows have been read
    (docs/traces-formats.md).
    """
    reuse = str(getattr(trace, "reuse", "") or "")
    if not reuse.startswith("synthesised"):
        return None
    from pcs.trace.hashids import SYNTH_REUSE

    if reuse == SYNTH_REUSE:
        return ('this trace was generated (rows marked "reuse": "synthetic", as pcs trace synth writes): its prefix '
                "reuse is synthetic; the hit ratios measure the generator's sessions, not recorded reuse "
                "(docs/traces-formats.md)")
    what = ("records lengths only" if getattr(trace, "format", None) in LENGTH_ONLY
            else "was converted from a lengths-only trace")    # its ids made under the assumption, then written
    note = (f"this trace {what}: its prefix reuse is synthetic ({reuse}); the hit ratios measure "
            "that assumption, not recorded reuse (docs/traces-formats.md)")
    if "every block is new" in reuse and getattr(trace, "format", None) == "azure":
        note += ("; to replay its arrivals and lengths with sessions that reuse prefixes: pcs trace synth OUT.jsonl "
                 "--azure-csv THIS.csv --requests all, then pcs replay OUT.jsonl")
    return note


def skipped_unit(fmt: str | None) -> str:
    """What ``--on-error skip`` skips in a trace of format ``fmt``: ``"row"`` (Parquet), else ``"line"``."""
    return "row" if fmt == "parquet" else "line"


def skipped_note(trace, words: Callable[[str], str] | None = None) -> str | None:
    """``on_error='skip'``: how many bad lines (Parquet: rows) the last read of the trace skipped, else None; in
    ``words`` (the command's: ``(--on-error skip)``, :func:`pcs.cli.common.option_names`), None: the API's."""
    n = getattr(trace, "skipped", 0)
    if not n:
        return None
    unit = skipped_unit(getattr(trace, "format", None))
    note = f"{format_counted(n, f'bad trace {unit}')} {'was' if n == 1 else 'were'} skipped (on_error='skip')"
    return note if words is None else words(note)


def skipped_line_notes(trace, words: Callable[[str], str] | None = None) -> tuple[str, ...]:
    """``--on-error skip``: a note for each line (Parquet: row) the last read of the trace names of those it skipped
    (``trace.skipped_lines``: the first :data:`pcs.trace.hashids.SKIPPED_NAMED`), then one for the rest
    (:func:`named_skip_notes`); () when none. ``words``: the API's words in the interface's (the command's
    options: ``--sort`` for ``sort=``, :func:`pcs.cli.common.option_names`); None: the API's."""
    return named_skip_notes([_worded(s, words).message for s in getattr(trace, "skipped_lines", ())],
                            getattr(trace, "skipped", 0))


def _worded(skipped, words: Callable[[str], str] | None):
    """The :class:`pcs.trace.hashids.SkippedLine` ``skipped`` with its problem in ``words`` (None: as it is); the
    path is the user's, never re-worded (a folder named ``block_size=16`` stays so)."""
    return skipped if words is None else skipped._replace(problem=words(skipped.problem))


def named_skip_notes(messages: list[str], skipped: int) -> tuple[str, ...]:
    """The notes naming skipped lines: ``skipped FILE:LINE: field 'F': PROBLEM`` for each of ``messages`` (the
    one-line errors ``--on-error raise`` prints, in file order), then ``skipped ... and N more`` when ``skipped``
    (all the lines skipped, blank ones included) counts N more than were named; () without ``messages``."""
    if not messages:
        return ()
    more = skipped - len(messages)
    return tuple(f"skipped {m}" for m in messages) + ((f"skipped ... and {format_count(more)} more",)
                                                       if more > 0 else ())


def skipped_lines_json(trace, words: Callable[[str], str] | None = None) -> list[dict[str, Any]]:
    """``--on-error skip``: the lines (Parquet: rows) the last read of the trace names of those it skipped
    (``trace.skipped_lines``), as JSON objects ``{"file", "line" (Parquet: "row"), "field", "problem",
    "message"}``: the trace's name, the 1-based line or row, the field or column (null: none), what is wrong, and
    the one-line error ``--on-error raise`` prints for it; [] when none. ``words``: as :func:`skipped_line_notes`,
    applied to the problem (``message`` is made of the parts)."""
    unit = skipped_unit(getattr(trace, "format", None))
    return [{"file": s.path, unit: s.line, "field": s.field, "problem": s.problem, "message": s.message}
            for s in (_worded(s, words) for s in getattr(trace, "skipped_lines", ()))]


def trace_notes(trace, words: Callable[[str], str] | None = None) -> tuple[str, ...]:
    """The notes every command that reads ``trace`` adds once it has read it, and the API's results carry last in
    their ``notes``: synthetic reuse, skipped lines (how many, then the first of them named:
    :func:`skipped_line_notes`), in ``words`` (the interface's: :func:`pcs.cli.common.option_names`, a sweep plan's);
    None: the API's (``on_error='skip'``)."""
    return (tuple(n for n in (header_note(trace), synthetic_reuse_note(trace), skipped_note(trace, words)) if n)
            + skipped_line_notes(trace, words))


def header_note(trace) -> str | None:
    """The note on the columns of a CSV trace's header (Azure, BurstGPT) that are not its format's, which its
    reader reads past (:func:`pcs.trace.lengthonly.unknown_columns_note`: a pandas index, a trailing comma, a
    column of the user's own), else None; the header re-read (one line)."""
    fmt = getattr(trace, "format", None)
    if fmt not in ("azure", "burstgpt") or getattr(trace, "path", None) is None:
        return None
    return csv_header_note(trace.path, trace.name, fmt)


def csv_header_note(path, name: str, fmt: str) -> str | None:
    """:func:`header_note` of the ``fmt`` (``azure`` or ``burstgpt``) CSV at ``path``, named ``name`` in the note
    (``pcs trace synth --azure-csv`` reads one without a :class:`Trace`); None when its header is unreadable (its
    reader says so)."""
    from pcs.trace.lengthonly import unknown_columns_note
    from pcs.trace.source import iter_csv_rows

    if fmt == "azure":
        from pcs.trace.azure import AZURE_HEADERS as headers
    else:
        from pcs.trace.burstgpt import BURSTGPT_OPTIONAL, BURSTGPT_REQUIRED

        headers = ((*BURSTGPT_REQUIRED, *BURSTGPT_OPTIONAL),)
    known = list(dict.fromkeys(c for h in headers for c in h))
    rows = iter_csv_rows(path, name)
    try:
        ln, row = next(rows)
    except (StopIteration, InputError):      # the reader has said so already
        return None
    finally:
        rows.close()
    return unknown_columns_note(f"{name}:{ln}", row, known)


def _length_batches(trace: "Trace", state) -> Iterator[RequestBatch]:
    """Azure / BurstGPT rows -> synthesised ids (sorted first with ``sort``: reuse follows arrival order)."""
    from pcs.trace.lengthonly import LengthRow, synthesise_batches

    def on_bad(exc):
        state.skip(exc)

    check_order, skip = not trace.sort, (on_bad if trace.on_error == "skip" else None)
    if trace.format == "azure":
        from pcs.trace.azure import read_azure_rows

        rows = (LengthRow(t, c, g) for t, c, g, _ in read_azure_rows(trace.path, check_order, skip,
                                                                      name=trace.name))
        with_sessions = with_type = False
    else:
        from pcs.trace.burstgpt import read_burstgpt_rows

        rows = read_burstgpt_rows(trace.path, check_order, skip, name=trace.name)
        with_sessions, with_type = trace.has_sessions, True
    if not check_order:
        rows = iter(sorted(rows, key=lambda r: r.arrival_s))  # stable
    yield from synthesise_batches(rows, trace.block_size, trace.reuse_model,
                                  with_sessions=with_sessions, with_type=with_type)


class Trace:
    """A trace file opened for streaming; iterate it (again and again) for Requests.

    ``first_line`` (a constructor argument, not kept): the file's first non-blank line as format detection read it
    (:func:`open_trace`, ``on_error="raise"``), where a JSON-lines trace's ``"reuse"`` key is looked for instead of
    reading the file's head again; None: read from the file.

    Attributes:
        path: the file read (a temporary copy for stdin).
        name: the name errors use (``-`` for stdin).
        format: one of :data:`FORMATS`.
        block_size: tokens per block of the ids yielded.
        on_error: ``"raise"`` or ``"skip"``.
        sort: reorder by arrival (stable); holds the whole trace in memory.
        skipped: bad lines skipped in the last complete iteration.
        skipped_lines: the first of them (at most :data:`pcs.trace.hashids.SKIPPED_NAMED`, 5), in file order, each
            a :class:`pcs.trace.hashids.SkippedLine` ``(path, line, field, problem)`` -- ``line`` the 1-based line
            (Parquet: the 1-based row), ``field`` the field (Parquet: column) or None -- as ``on_error="raise"``
            would have refused it (``.message``: its one-line error); blank lines included. ``()`` when none.
        reuse: where the block hashes' sharing comes from: ``"recorded"`` (the
            trace's own ids), ``"hashed from token ids"``, or for length-only
            formats the ``synthesised: ...`` assumption
            (:meth:`pcs.trace.lengthonly.ReuseModel.describe`); for a trace
            made by ``pcs trace synth`` (rows ``"reuse": "synthetic"``, or its
            Parquet ``pcs.reuse``) :data:`pcs.trace.hashids.SYNTH_REUSE`, set
            once the rows have been read.
        reuse_model: the :class:`~pcs.trace.lengthonly.ReuseModel` of a
            length-only trace, else None.
        parquet_block_hashes: a Parquet trace's block hashes as its footer counted them when it was opened
            (:func:`pcs.trace.parquet.footer_block_hashes`; a size hint,
            :func:`pcs.trace.parquet.expected_block_hashes`), else None.
        parquet_rows: a Parquet trace's rows as its footer counted them when it was opened (a size hint,
            :func:`pcs.engine.chunks.table_entries_bound`), else None.
        limits: the run's bounds on a row beyond the reader's own (:class:`pcs.trace.rowlimits.RowLimits`; none
            unless set by :meth:`limited`).

    Memory: one chunk of the file at a time, except with ``sort``.
    """

    def __init__(self, path, name: str, fmt: str, block_size: int, on_error: str, sort: bool,
                 reuse_model=None, first_line: bytes | None = None):
        self.path = Path(path)
        self.name = name
        self.format = fmt
        self.block_size = block_size
        self.given_block_size: int | None = None    # the caller's block_size= (None: the format's default)
        self.on_error = on_error
        self.sort = sort
        self.skipped = 0
        self.first_skipped: InputError | None = None
        self.blank_skipped = 0
        self.skipped_lines: tuple = ()
        self.parquet_metadata: dict[str, str] = {}
        self.parquet_block_hashes: int | None = None
        self.parquet_rows: int | None = None
        self.limits = NO_LIMITS
        self._origin: Trace | None = None
        if fmt in LENGTH_ONLY and reuse_model is None:
            from pcs.trace.lengthonly import ReuseModel

            reuse_model = ReuseModel()
        self.reuse_model = reuse_model if fmt in LENGTH_ONLY else None
        self.has_sessions = False
        self.reuse = {"tokens": "hashed from token ids"}.get(fmt, "recorded")
        if fmt in LENGTH_ONLY:
            head = peek_lines(self.path, 1, name=self.name)
            self.has_sessions = fmt == "burstgpt" and bool(head) and b"Session ID" in head[0]
            self.reuse = reuse_model.describe(self.has_sessions)
        elif fmt in ("mooncake", "bailian", "tokens"):
            # known before the rows are read (trace convert writes it into Parquet)
            self.reuse = _first_row_reuse(self.path, self.name, on_error, first_line) or self.reuse

    def __repr__(self) -> str:
        return f"Trace({self.name!r}, format={self.format!r}, block_size={self.block_size})"

    def _take_opened(self):
        """The Parquet footer as :func:`open_trace` read it (:class:`pcs.trace.parquet.Opened`: its metadata, schema,
        block-hash count and the file's stamp; no open file), handed to the first read only -- which uses it while
        the file is unchanged; each later read reads the footer again, as every read did before --, else None. One
        footer read fewer a replay of a path (1x Mooncake, a steady two-tier call: ~0.1 ms of the calling thread,
        docs/performance.md, "The 1x call's Python glue" and its review). ``dict.pop``: one reader gets it even if two
        threads begin reading at once."""
        return self.__dict__.pop("_opened", None)

    def __getstate__(self) -> dict:
        """The trace's state without the kept Parquet footer (:meth:`_take_opened`): a copy or an unpickled trace reads
        the footer at its first read (a limited view takes its origin's instead: :meth:`limited`)."""
        state = dict(self.__dict__)
        state.pop("_opened", None)
        return state

    def _raw_batches(self, side_by_side: bool = False, decode_ahead: bool = False,
                     each_piece: Callable[..., None] | None = None) -> Iterator[RequestBatch]:
        from pcs.trace.hashids import BAILIAN, MOONCAKE, ReadState, read_hashid_jsonl

        state = ReadState(check_order=not self.sort, limits=self.limits)
        if self.format in ("mooncake", "bailian"):
            spec = MOONCAKE if self.format == "mooncake" else BAILIAN
            yield from read_hashid_jsonl(self.path, self.name, spec, self.block_size, state, self.on_error,
                                         side_by_side=side_by_side, decode_ahead=decode_ahead)
        elif self.format == "tokens":
            from pcs.trace.tokens import read_token_jsonl

            yield from read_token_jsonl(self.path, self.name, self.block_size, state, self.on_error)
        elif self.format in LENGTH_ONLY:
            yield from _length_batches(self, state)
        else:
            from pcs.trace.parquet import read_parquet

            yield from read_parquet(self.path, self.name, self.block_size, state, self.on_error,
                                    side_by_side=side_by_side, each_piece=each_piece, opened=self._take_opened())
        for t in (self,) if self._origin is None else (self, self._origin):   # a limited view's reads: its origin's
            t.skipped, t.first_skipped, t.blank_skipped = state.skipped, state.first_skipped, state.blank
            t.skipped_lines = state.named
            if state.synthetic_rows and not t.reuse.startswith("synthesised"):  # the first row's assumption kept
                from pcs.trace.hashids import SYNTH_REUSE

                t.reuse = SYNTH_REUSE

    def limited(self, limits: RowLimits) -> "Trace":
        """This trace read with the run's row bounds ``limits`` (:mod:`pcs.trace.rowlimits`): a row past them is a
        bad row, refused naming file, line and field or skipped and counted with ``on_error="skip"``. A view: this
        trace is not changed, but the view's reads record what they skipped (``skipped``, ``first_skipped``) and
        the reuse they found on this trace too, as a caller that reads them after a run expects; ``self`` when
        ``limits`` are its own (the same object: :data:`pcs.trace.rowlimits.STEP_LIMITS` twice)."""
        if limits is self.limits:
            return self
        view = copy.copy(self)       # (without the kept Parquet footer: __getstate__) ...
        view.limits, view._origin = limits, self if self._origin is None else self._origin
        opened = self._take_opened()  # ... which the view's first read takes instead (one open a replay)
        if opened is not None:
            view._opened = opened
        return view

    def iter_batches(self, side_by_side: bool = False, decode_ahead: bool = False,
                     each_piece: Callable[..., None] | None = None) -> Iterator[RequestBatch]:
        """Stream the trace as :class:`RequestBatch` es, ids numbered from 0.

        ``side_by_side``: for a caller that keeps every batch and joins consecutive ones
        (:class:`pcs.engine.decoded.Decoded`): a block-id JSONL trace read by the compiled twin lays the ids of its
        chunks side by side (:func:`pcs.trace.jsonfast.parse_chunks`), so the joins view them instead of copying.
        ``decode_ahead``: with ``side_by_side``, such a trace's chunks are each decoded on a thread of their own while
        this thread reads the next one (:meth:`decodes_ahead`; for a caller that wants threads). Same batches
        either way. ``each_piece``: with ``side_by_side``, a Parquet trace's pieces handed to it as they are read,
        before their checks, as stored (before ``sort``; :func:`pcs.trace.parquet.read_parquet`); other formats
        ignore it.

        Raises:
            InputError: bad content (with ``on_error="raise"``); no request at
                all (an empty file, a CSV header alone, every line skipped):
                an empty source is never a 0-request result.
        """
        batches = self._named_kind(self._raw_batches(side_by_side, decode_ahead, each_piece))
        if self.sort and self.format not in LENGTH_ONLY:  # those sort their rows before synthesis
            batches = iter(_sorted_batches(list(batches)))
        next_id = 0
        for b in batches:
            yield b.with_first_id(next_id)
            next_id += len(b)
        if next_id == 0:
            if not self.skipped:
                raise InputError(self.name, None, None, EMPTY_TRACE)
            first = None if self.first_skipped is None else self._kind_hint(self.first_skipped)
            if isinstance(first, _NotText):   # no text trace's bytes (UTF-16, msgpack, ...): the cause alone, as
                raise first                   # detection gives it; the count of lines skipped only follows from it
            raise none_left(first, self.name, self.skipped, self.format == "parquet", self.blank_skipped)

    def _named_kind(self, batches: Iterator[RequestBatch]) -> Iterator[RequestBatch]:
        """``batches``, a reader's error at the first non-blank line completed by what that line is when format
        detection reads it as another format or as no request trace (:meth:`_kind_hint`)."""
        try:
            yield from batches
        except InputError as exc:
            raise self._kind_hint(exc) from None

    def _kind_hint(self, error: InputError) -> InputError:
        """``error`` (a reader's, this trace's format given or detected), and when it is at the first non-blank line
        and that line is of another format or no request trace (KV-cache events, a chat log, msgpack, UTF-16 text),
        what detection says of it (:func:`format_hint`); else ``error`` itself (also when the file's head cannot be
        read again: a corrupt gzip stream's own error stands)."""
        if error.path != self.name or error.line is None or self.format == "parquet":
            return error
        if error.field == "hash_ids":      # a count of ids: a block size that fits the lines before it too
            from pcs.trace.bshint import rehinted

            return reblock_hint(rehinted(error, self.path, self.format), self.given_block_size,
                                _default_block_size(self.format))
        if error.problem.startswith("invalid JSON") and last_line_unended(self.path, error.line, self.name):
            return InputError(error.path, error.line, error.field, error.problem + "; it is the file's last line "
                              "and ends without a newline: the file looks cut short (truncated)")
        try:
            return format_hint(self.path, self.name, self.format, error, self.given_block_size)
        except InputError:
            return error

    def decodes_ahead(self) -> bool:
        """Whether :meth:`iter_batches` with ``side_by_side`` and ``decode_ahead`` decodes each chunk on a thread of
        its own: a
        Mooncake or Bailian JSONL file read by the compiled twin (``pcs.trace._jsonrows``, unless ``PCS_NATIVE`` is
        ``python`` or it is not built)."""
        if self.format not in ("mooncake", "bailian"):
            return False
        from pcs import _native

        return _native.resolve(None, "jsonrows") == "c"

    def __iter__(self) -> Iterator[Request]:
        for b in self.iter_batches():
            yield from b.requests()

    def estimated_requests(self) -> int | None:
        """About how many requests the trace holds, for a progress bar's total; None when not cheap to know.

        Parquet: the row count in the footer; an uncompressed text file: its
        lines (less a CSV header); gzip: None. Blank or skipped lines make it
        an overestimate.
        """
        from pcs.trace.source import count_lines

        if self.format == "parquet":
            from pcs.trace.parquet import parquet_rows

            return parquet_rows(self.path, self.name)
        n = count_lines(self.path)
        return None if n is None else max(0, n - (self.format in LENGTH_ONLY))


def _sorted_batches(batches: list[RequestBatch], rows: int = 1 << 16) -> list[RequestBatch]:
    """Concatenate and stably sort by arrival, cut into batches of ``rows``."""
    if not batches:
        return []
    cat = lambda xs: np.concatenate(xs) if xs[0] is not None else None  # noqa: E731
    arrival = np.concatenate([b.arrival_s for b in batches])
    order = np.argsort(arrival, kind="stable")
    lens = np.concatenate([b.num_blocks for b in batches])
    starts = np.concatenate([b.block_offsets[:-1] + off for b, off in
                             zip(batches, np.cumsum([0] + [b.block_offsets[-1] for b in batches[:-1]]))])
    hashes = np.concatenate([b.block_hashes for b in batches])
    pt, ot = cat([b.prompt_tokens for b in batches]), cat([b.output_tokens for b in batches])
    sid, par, turn = (cat([getattr(b, k) for b in batches]) for k in ("session_id", "parent_id", "turn"))
    typ = sum((b.type for b in batches), ()) if batches[0].type is not None else None
    ext = sum((b.extra_keys for b in batches), ()) if batches[0].extra_keys is not None else None
    out = []
    bs = batches[0].block_size
    for lo in range(0, order.size, rows):
        idx = order[lo:lo + rows]
        ln = lens[idx]
        offs = np.concatenate(([0], np.cumsum(ln)))
        gather = np.repeat(starts[idx] - offs[:-1], ln) + np.arange(offs[-1])
        pick = (lambda a: None if a is None else a[idx])  # noqa: E731
        out.append(RequestBatch(0, bs, arrival[idx], pt[idx], ot[idx], offs.astype(np.int64), hashes[gather],
                                pick(sid), pick(par), pick(turn),
                                None if typ is None else tuple(typ[i] for i in idx.tolist()),
                                None if ext is None else tuple(ext[i] for i in idx.tolist())))
    return out


@contextlib.contextmanager
def read_once(path, name: str | None = None, empty: str = EMPTY_TRACE) -> Iterator[Any]:
    """``path`` as a file that can be read again: stdin or a FIFO is copied once to a temporary file
    (:func:`_spool`, the trace readers' rule: a FIFO with nothing written into it is refused, ``empty`` naming
    what it lacks), removed on leaving; any other path is given as it is (``name``: the input as errors name it).

    Raises:
        InputError: an empty FIFO, a line past the line limit, a device (:func:`_spool`).
    """
    if not is_stream(path):
        yield path
        return
    tmp = _spool(path, name or display_name(path), empty)
    try:
        yield tmp
    finally:
        _remove_spool(tmp)


def _spool(path, name: str, empty: str = EMPTY_TRACE) -> Path:
    """Copy stdin or a FIFO once to a temporary file (listed in :data:`pcs.outfile.TEMPORARY` until removed); a
    FIFO that gives no byte is refused, ``empty`` (:data:`EMPTY_TRACE`) saying what the input lacks.

    The copy stops with an InputError once a line runs past
    :data:`pcs.trace.source.MAX_LINE_BYTES` (``cat /dev/zero | pcs replay -``), naming that line as a file's
    reader does (:func:`pcs.trace.source.long_line`).
    """
    import tempfile  # here, not at the top: a file replay's start-up does not load it

    from pcs.outfile import create_temporary
    from pcs.trace.source import MAX_LINE_BYTES, check_source, long_line

    check_source(path, name)
    fd, tmp = create_temporary(tempfile.gettempdir(), "pcs-stdin-")   # listed in TEMPORARY before it exists
    try:
        src = sys.stdin.buffer if str(path) == "-" else _raw_stream(path)
        with os.fdopen(fd, "wb") as out:
            since_newline, ended = 0, 0    # bytes after the last LF, LFs before them
            while data := src.read(1 << 20):
                out.write(data)
                cut = data.rfind(b"\n")
                if cut >= 0:
                    since_newline, ended = len(data) - cut - 1, ended + data.count(b"\n")
                else:
                    since_newline += len(data)
                if since_newline > MAX_LINE_BYTES:
                    raise long_line(name, ended + 1)
        if src is not sys.stdin.buffer:
            src.close()
            if not os.path.getsize(tmp):   # a named pipe: read once, without waiting for a writer
                raise InputError(name, None, None, f"{empty}: a named pipe (FIFO) with no data written into "
                                 "it when pcs opened it; pcs reads a FIFO once and waits for no writer")
    except BaseException:
        _remove_spool(tmp)
        raise
    return Path(tmp)


def _raw_stream(path):
    """A FIFO or socket opened without waiting for a writer (raw bytes: gzip is detected after spooling)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def _remove_spool(tmp) -> None:
    from pcs.outfile import TEMPORARY

    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    TEMPORARY.discard(str(tmp))


def opened(trace: Any) -> Any:
    """``trace`` as :func:`pcs.trace.trace_stats` and :func:`pcs.trace.convert.convert` read it: a path (str or
    ``os.PathLike``) opened by :func:`open_trace` with its defaults; a :class:`Trace` as it is.

    Raises:
        PathError: the path is missing, a directory or not readable, named as ``trace=``.
        UserError: a bytes path or a file object; InputError: as :func:`open_trace`.
    """
    from pcs.trace.pathcheck import check_input_file, refuse_file_objects

    refuse_file_objects(trace)
    if isinstance(trace, (str, os.PathLike)):
        check_input_file(trace, "trace")
        return open_trace(trace)
    return trace


def _checked_open_options(format, on_error, block_size, sort) -> tuple[int | None, bool]:
    """:func:`open_trace`'s option checks: ``format`` in :data:`FORMATS` (or None), ``on_error`` in
    :data:`ON_ERROR`, ``block_size`` (tokens) in [1, MAX_BLOCK_SIZE] (or None), ``sort`` True or False.

    Returns:
        (block_size, sort) as checked. Raises: UserError naming the option."""
    from pcs.argcheck import check_flag

    sort = check_flag(sort, "sort")          # True or False: "no" is not True (as curve(belady=))
    if format is not None and format not in FORMATS:
        raise UnknownNameError("trace format", format, FORMATS)
    if on_error not in ON_ERROR:
        raise UnknownNameError("on_error", on_error, ON_ERROR)
    if block_size is not None:
        block_size = check_int(block_size, "block_size", 1, MAX_BLOCK_SIZE)
    return block_size, sort


def _not_re_blocked(name: str, stored: int, asked: int) -> str:
    """Why a Parquet trace written at ``stored``-token blocks is not opened at ``asked``, with the road every
    format's refusal names (:func:`reblock_road`) and the token trace's own (convert it at ``asked``)."""
    return (f"{shown_path(name)}: Parquet trace was written at block size {stored}; block_size={asked} cannot "
            f"re-block its hashed ids here: {reblock_road(stored, asked, True)}, or convert the token trace at {asked}")


def trace_path(path):
    """``path``, or :data:`DEFAULT_TRACE` when it is None: the one place "no trace named" becomes the bundled
    sample, so every road that looks at the file before opening it (:func:`pcs.trace.reblock.plan_engine_block_size`)
    takes the road the same file named takes.

    Raises:
        UserError: ``path`` is None and the sample is missing (an install without its traces/ directory).
    """
    if path is not None:
        return path
    if not DEFAULT_TRACE.exists():
        raise UserError(f"the default sample trace {DEFAULT_TRACE} is missing (is pcs installed from "
                         "a full clone with its traces/ directory?); pass a trace path")
    return DEFAULT_TRACE


@keyword_refusals
def open_trace(path=None, *, format: str | None = None, block_size: int | None = None,
               on_error: str = "raise", sort: bool = False, reuse=None) -> Trace:
    """Open a trace for streaming.

    Args:
        path: file path, ``-`` for stdin, or None for :data:`DEFAULT_TRACE`.
        format: one of :data:`FORMATS`, or None to detect from the content.
        block_size: tokens per block. Mooncake default 512, Bailian 16
            (their release READMEs), token JSONL 16 (vLLM's default
            ``--block-size``; any size works since pcs hashes the tokens),
            Parquet: the size stored in the file (another size is an error).
        on_error: ``"raise"`` (first bad line -> InputError) or ``"skip"``
            (skip, count in ``Trace.skipped`` and name the first 5 in ``Trace.skipped_lines``).
        sort: stably reorder by arrival time instead of rejecting a decreasing
            timestamp (loads the whole trace into memory).
        reuse: length-only formats (azure, burstgpt): the
            :class:`pcs.trace.lengthonly.ReuseModel` (default: sessions
            continue, no system prompt); ignored for the others.
    Returns:
        a re-iterable :class:`Trace`.
    Raises:
        UserError: unknown format/on_error, a block size outside [1, MAX_BLOCK_SIZE], default trace missing,
            ``sort`` not True or False, a bytes path or a file object
            (:func:`pcs.trace.pathcheck.refuse_file_objects`).
        PathError: ``path`` is missing, a directory or not readable (:func:`pcs.trace.pathcheck.check_input_file`).
        InputError: the format cannot be detected.

    >>> t = open_trace()            # the bundled sample
    >>> t.format, t.block_size
    ('mooncake', 512)
    """
    from pcs.trace.pathcheck import check_input_file, refuse_file_objects

    refuse_file_objects(path)
    block_size, sort = _checked_open_options(format, on_error, block_size, sort)
    path = trace_path(path)
    name = display_name(path)
    check_input_file(path, "path")
    if not is_stream(path):
        check_source(path, name)
        return _open_file(path, name, format, block_size, on_error, sort, reuse)
    spooled = _spool(path, name)
    try:
        trace = _open_file(spooled, name, format, block_size, on_error, sort, reuse)
    except BaseException:
        _remove_spool(spooled)
        raise
    weakref.finalize(trace, _remove_spool, spooled)  # when the trace is dropped, or at exit
    return trace


def _not_parquet(path, name: str, block_size: int | None, on_error: str) -> InputError:
    """The error for a file given as ``format="parquet"`` that does not start with Parquet's magic ``PAR1``, with
    format detection's verdict under the rule of the other named formats (:func:`_suggestion`): the format it reads
    (``pass format='mooncake'``) only when that reader, at ``block_size`` (the user's, else its default), accepts
    the first non-blank line (with ``on_error="raise"``, a blank line 1 ahead of it is its refusal); or what the
    file is (a gzip-compressed Parquet file: gunzip it first; UTF-16 text; KV-cache events ...)."""
    from pcs.trace.hashids import strict_loads

    problem = "not a Parquet file (it does not start with the Parquet magic bytes PAR1)"
    try:
        other = detect_format(path, name, on_error)
    except InputError as exc:
        return InputError(name, exc.line, None, f"{problem}; format detection: {exc.problem}")
    ln, line = next(_head_lines(path, name, 1, 1 << 20))
    refused = None
    if ln > 1 and on_error == "raise" and other not in LENGTH_ONLY:
        try:
            strict_loads(name, 1, b"")      # the readers' message for the blank line 1
        except InputError as exc:
            refused = exc
    return InputError(name, None, None, f"{problem}; {_suggestion(other, line, ln, name, block_size, refused, 'file')}")


def _open_file(path, name: str, format: str | None, block_size: int | None, on_error: str, sort: bool,
               reuse) -> Trace:
    """:func:`open_trace` of a regular file (stdin and FIFOs arrive spooled).

    A text file of blank/whitespace lines only is an empty trace whether the format is detected or given
    (``--trace-format mooncake`` used to say "line 1: blank line" where detection said empty);
    a blank line before data stays a bad line of its own ("FILE:1: blank line"); a name ending ``.gz`` (or another
    compression's suffix) whose bytes are not that compression is refused first (:func:`pcs.trace.source.check_suffix`)."""
    check_suffix(path, name)
    fmt, first_line = (format, None) if format else _detected(path, name, on_error)
    if fmt != "parquet" and format is not None and _sniff_parquet(path):
        raise InputError(name, None, None, f"a Parquet file (it starts with PAR1) given as format={shown_repr(fmt)}: drop "
                                           "format= (pcs detects Parquet) or give format='parquet'")
    if format is not None and fmt != "parquet" and not peek_lines(path, max_lines=1, name=name):
        raise InputError(name, None, None, EMPTY_TRACE)
    if fmt == "parquet" and format is not None and not _sniff_parquet(path):
        raise _not_parquet(path, name, block_size, on_error)
    pf = None
    if fmt == "parquet":
        from pcs.trace.parquet import opened_footer, parquet_block_size

        pf, opened = opened_footer(path, name)     # the footer read once for the block size and the reuse note
        schema = opened.schema             # made once (pyarrow builds one at each read of the property)
        stored = parquet_block_size(path, name, pf, schema)
        if block_size is not None and block_size != stored:
            raise UserError(_not_re_blocked(name, stored, block_size))
        block_size = stored
    trace = Trace(path, name, fmt, block_size or _default_block_size(fmt), on_error, sort, reuse, first_line)
    trace.given_block_size = block_size     # the size another format's reader is tried at (format_hint)
    if fmt == "parquet":
        from pcs.trace.parquet import footer_block_hashes, footer_rows, parquet_reuse

        trace.reuse = parquet_reuse(path, name, pf, schema) or trace.reuse
        trace.parquet_block_hashes = footer_block_hashes(pf)   # the scans' size hint, without opening it again
        trace.parquet_rows = footer_rows(pf)                   # with it, the chunk tables' (table_entries_bound)
        trace._opened = opened._replace(block_hashes=trace.parquet_block_hashes)    # for the first read
        pf.close()                         # (Trace._take_opened); no file held open by an unread trace
    return trace
