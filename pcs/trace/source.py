"""Byte sources for line-oriented traces: files, gzip, stdin, chunking.

Everything a reader needs before parsing: open a path (``-`` is stdin),
detect gzip by its magic bytes (RFC 1952: ``1f 8b``), drop a leading UTF-8
byte-order mark, and cut the stream into chunks of whole lines with the
1-based number of each chunk's first line, so errors can name the line.

Decisions (documented in traces/README.md):
- a UTF-8 BOM at the start of the file is accepted and dropped (RFC 8259
  section 8.1 lets parsers ignore it); CRLF line ends are accepted (JSON
  treats ``\\r`` as whitespace, RFC 8259 section 2);
- a truncated or corrupt gzip stream is an :class:`InputError` naming the
  last complete line read, never a silently shorter trace.
"""
from __future__ import annotations

import gzip
import io
import os
import sys
import zlib
from typing import BinaryIO, Iterator

from pcs.errors import InputError

__all__ = ["CHUNK_BYTES", "open_binary", "iter_chunks", "iter_lines", "iter_csv_rows", "peek_lines", "display_name"]

#: Bytes read per chunk; about 16 k Mooncake requests (measured best in
#: benchmarks/bench_ingest.py between 1 and 16 MiB).
CHUNK_BYTES = 4 << 20

_BOM = b"\xef\xbb\xbf"
_GZIP_MAGIC = b"\x1f\x8b"


def display_name(path) -> str:
    """The name used in error messages (``-`` for stdin)."""
    return "-" if str(path) == "-" else os.fspath(path)


def open_binary(path) -> BinaryIO:
    """Open ``path`` (``-`` = stdin) for reading, gunzipping when it starts with the gzip magic.

    Raises:
        FileNotFoundError / IsADirectoryError: as ``open`` does.
    """
    if str(path) == "-":
        raw: BinaryIO = sys.stdin.buffer
        if not hasattr(raw, "peek"):
            raw = io.BufferedReader(raw)  # type: ignore[arg-type]
    else:
        raw = open(path, "rb")  # noqa: SIM115 - closed by the caller
    head = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
    if head == _GZIP_MAGIC:
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    return raw


def _read(stream: BinaryIO, size: int, name: str, line: int) -> bytes:
    """Up to ``size`` bytes; a gzip stream is read piecewise (``read1``) so that a
    truncation returns the data before it first and is reported at its own line."""
    try:
        if not isinstance(stream, gzip.GzipFile):
            return stream.read(size)
        parts: list[bytes] = []
        got = 0
        while got < size:
            try:
                piece = stream.read1(size - got)
            except EOFError:
                if parts:
                    break  # hand over what decompressed; the next read raises at the right line
                raise
            if not piece:
                break
            parts.append(piece)
            got += len(piece)
        return b"".join(parts)
    except EOFError as exc:  # gzip: "Compressed file ended before the end-of-stream marker"
        raise InputError(name, line, None, f"truncated gzip stream ({exc})") from None
    except (gzip.BadGzipFile, zlib.error) as exc:
        raise InputError(name, line, None, f"corrupt gzip stream ({exc})") from None


def iter_chunks(path, chunk_bytes: int | None = None, name: str | None = None) -> Iterator[tuple[int, bytes]]:
    """Yield ``(first_line_number, data)`` where ``data`` holds whole lines.

    Every chunk but possibly the last ends with ``\\n``; line numbers are
    1-based; a leading UTF-8 BOM is removed from the first chunk.

    Raises:
        InputError: truncated or corrupt gzip stream.
    """
    name = name or display_name(path)
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    stream = open_binary(path)
    try:
        line = 1
        rest = b""
        first = True
        while True:
            data = _read(stream, chunk_bytes, name, line + rest.count(b"\n"))
            if first:
                first = False
                if data.startswith(_BOM):
                    data = data[len(_BOM):]
            if not data:
                if rest:
                    yield line, rest
                return
            buf = rest + data if rest else data
            cut = buf.rfind(b"\n") + 1
            if cut == 0:
                rest = buf
                continue
            chunk, rest = buf[:cut], buf[cut:]
            yield line, chunk
            line += chunk.count(b"\n")
    finally:
        if stream is not getattr(sys.stdin, "buffer", None):
            stream.close()


def iter_lines(first_line: int, chunk: bytes) -> Iterator[tuple[int, bytes]]:
    """Split a chunk into ``(line_number, line_bytes)``; line ends (LF or CRLF) removed."""
    lines = chunk.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for i, raw in enumerate(lines):
        yield first_line + i, raw[:-1] if raw.endswith(b"\r") else raw


def iter_csv_rows(path, name: str | None = None) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line_number, fields)`` of a CSV file, one line at a time (the header is line 1).

    One record per line (the published trace CSVs quote no newlines).

    Raises:
        InputError: a line that is not UTF-8 or not CSV; gzip errors as :func:`iter_chunks`.
    """
    import csv

    name = name or display_name(path)
    for first, chunk in iter_chunks(path, name=name):
        for ln, line in iter_lines(first, chunk):
            try:
                yield ln, next(csv.reader(io.StringIO(line.decode("utf-8"))), [])
            except (UnicodeDecodeError, csv.Error) as exc:
                raise InputError(name, ln, None, f"unreadable CSV line ({exc})") from None


def peek_lines(path, max_lines: int = 20, max_bytes: int = 1 << 20) -> list[bytes]:
    """The first non-blank lines (at most ``max_lines``) for format detection."""
    out: list[bytes] = []
    for first, chunk in iter_chunks(path, chunk_bytes=min(max_bytes, 1 << 16)):
        for _, line in iter_lines(first, chunk):
            if line.strip():
                out.append(line)
                if len(out) >= max_lines:
                    return out
        if sum(map(len, out)) >= max_bytes:
            break
    return out
