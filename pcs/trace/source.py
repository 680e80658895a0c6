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
  last complete line read, never a silently shorter trace;
- a line is at most :data:`MAX_LINE_BYTES` (64 MiB after gunzip, about 8 M
  token ids): a longer one -- a file with no newline, ``/dev/zero`` through
  a pipe -- is an :class:`InputError` naming its line once that many bytes
  are read, so reading is linear in the input and memory is bounded;
- a device (``/dev/zero``, ``/dev/tty``, a disk) is refused before reading
  (:func:`check_source`), and so is a terminal or a device on stdin; a
  FIFO opens without waiting for a writer, and one with no writer reads
  as empty.
"""
from __future__ import annotations

import functools
import gzip
import io
import os
import stat
import sys
import zlib
from typing import Any, BinaryIO, Generator, Iterator

import numpy as np

from pcs.errors import InputError, bad_byte, quoted
from pcs.trace.pool import Pool

__all__ = ["CHUNK_BYTES", "MAX_LINE_BYTES", "long_line", "check_source", "open_binary", "iter_chunks", "iter_lines",
           "iter_csv_rows", "peek_lines", "display_name", "is_stream", "count_lines", "count_newlines"]

#: Bytes read per chunk; about 4 k Mooncake requests. 1 MiB keeps a chunk, its lines and its parsed
#: columns in the CPU caches: the Mooncake 10x replica reads in 0.20 s CPU at 1 MiB, 0.24-0.25 s at 4 MiB
#: (0.19-0.20 s at 256-512 KiB; the one-tier replay 0.26-0.28 s against 0.30-0.32 s; docs/performance.md).
CHUNK_BYTES = 1 << 20

#: Longest line read, bytes (after gunzip): 64 MiB, far above a 1 M-token prompt's ~8 MB of token ids.
MAX_LINE_BYTES = 64 << 20

_BOM = b"\xef\xbb\xbf"
_GZIP_MAGIC = b"\x1f\x8b"
#: Compressions pcs does not read, by their magic bytes (zstd: RFC 8878 §3.1.1; xz: the .xz file format
#: spec §2.1.1.1; bzip2: "BZh"), so that such a file gets a clear error rather than "not JSON".
_OTHER_MAGIC = ((b"\x28\xb5\x2f\xfd", "zstd"), (b"\xfd7zXZ\x00", "xz"), (b"BZh", "bzip2"))
#: A name's compression suffix -> the compression it promises (:func:`_suffix_problem`: a file whose bytes are not
#: that compression is refused, not read as something else).
_SUFFIXES = {".gz": "gzip", ".gzip": "gzip", ".zst": "zstd", ".zstd": "zstd", ".xz": "xz", ".bz2": "bzip2"}
#: Bytes of a file's start :func:`_suffix_problem` looks at: the magic bytes, and room past a byte-order mark and
#: blank lines to see what a file that is not compressed holds (:func:`_looks_like`).
_HEAD_BYTES = 64


def display_name(path) -> str:
    """The name used in error messages (``-`` for stdin)."""
    return "-" if str(path) == "-" else os.fspath(path)


def _device_problem(mode: int, what: str) -> str | None:
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return f"{what}a device, not a file or a pipe (pcs reads files, pipes and redirected stdin)"
    if stat.S_ISDIR(mode):
        return f"{what}a directory"
    return None


def check_source(path, name: str | None = None, keyword: str = "path") -> os.stat_result | None:
    """Refuse an input that is not a file or a pipe, before anything reads it.

    ``-`` (stdin) must not be a terminal or a device (``< /dev/zero``).
    Returns the ``os.stat`` result (None for stdin).

    Raises:
        PathError: missing, a directory or not readable, naming ``keyword`` (:mod:`pcs.trace.pathcheck`).
        InputError: a device, a terminal on stdin, stdin closed.
    """
    name = name or display_name(path)
    if str(path) == "-":
        if sys.stdin is None:     # started with descriptor 0 closed (``<&-``): Python sets sys.stdin to None
            raise InputError("-", None, None, "stdin is closed: pipe or redirect a file into pcs "
                             "(pcs replay - < trace.jsonl)")
        try:
            mode = os.fstat(sys.stdin.fileno()).st_mode
        except (OSError, ValueError, AttributeError):
            return None  # a Python stream without a descriptor (tests): nothing to check
        if sys.stdin.isatty():
            raise InputError("-", None, None, "stdin is a terminal: pipe or redirect a file into pcs "
                             "(pcs replay - < trace.jsonl)")
        problem = _device_problem(mode, "stdin is ")
        if problem:
            raise InputError("-", None, None, problem)
        return None
    from pcs.trace.pathcheck import check_input_file

    check_input_file(path, keyword)
    st = os.stat(path)
    problem = _device_problem(st.st_mode, "")
    if problem:
        raise InputError(name, None, None, problem)
    return st


def is_stream(path) -> bool:
    """Whether ``path`` is stdin, a FIFO or a socket: readable once, so spooled before a trace is opened."""
    if str(path) == "-":
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _open_raw(path) -> BinaryIO:
    """Open a path for reading; a FIFO without waiting for a writer (none: it reads as empty)."""
    if not is_stream(path):
        return open(path, "rb")  # noqa: SIM115 - closed by the caller
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def open_binary(path) -> BinaryIO:
    """Open ``path`` (``-`` = stdin) for reading, gunzipping when it starts with the gzip magic.

    Raises:
        PathError: missing, a directory or not readable (:func:`check_source`).
        InputError: a device, or a terminal or device on stdin (:func:`check_source`); a name ending in a
            compression suffix whose bytes are not that compression (:func:`_suffix_problem`); zstd, xz or
            bzip2 bytes (not read).
    """
    check_source(path)
    if str(path) == "-":
        raw: BinaryIO = sys.stdin.buffer
        if not hasattr(raw, "peek"):
            raw = io.BufferedReader(raw)  # type: ignore[arg-type]
    else:
        raw = _open_raw(path)
    head = raw.peek(_HEAD_BYTES)[:_HEAD_BYTES] if hasattr(raw, "peek") else b""
    problem = _suffix_problem(path, head)
    if problem is not None:
        raw.close()
        raise InputError(display_name(path), None, None, problem)
    if head[:2] == _GZIP_MAGIC:
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    for magic, kind in _OTHER_MAGIC:
        if head.startswith(magic) and not (kind == "bzip2" and head[3:4] not in b"123456789"):
            raw.close()
            raise InputError(display_name(path), None, None, f"{kind}-compressed input is not supported; "
                             "gzip is (recompress with gzip, or decompress it first)")
    return raw


def _compression(head: bytes) -> str | None:
    """The compression ``head`` (a file's first 6 bytes) starts with by its magic bytes, or None."""
    if head[:2] == _GZIP_MAGIC:
        return "gzip"
    for magic, kind in _OTHER_MAGIC:
        if head.startswith(magic) and not (kind == "bzip2" and head[3:4] not in b"123456789"):
            return kind
    return None


def _suffix_problem(path: Any, head: bytes) -> str | None:
    """Why a file named as compressed (``.gz``, ``.zst``, ``.xz``, ``.bz2``: :data:`_SUFFIXES`) is not what its
    name says, from its first bytes ``head`` (up to :data:`_HEAD_BYTES`), or None (another name, stdin, or the bytes agree). Without it a
    ``.gz`` file of plain text was read on, to a format-detection error about its first line.

    >>> _suffix_problem("t.jsonl.gz", b"notgzi")
    "is named .gz but is not gzip: its first bytes are 6e 6f 74 67, not gzip's 1f 8b (it looks like plain text: another file renamed, or never compressed); rename it to what it holds"
    >>> _suffix_problem("t.jsonl.gz", bytes([0, 1, 2, 3, 4, 5])).endswith("(cut short, or another file renamed); "
    ...                                                         "rename it to what it holds")
    True
    >>> _suffix_problem("t.jsonl.gz", bytes([31, 139, 8, 0, 0, 0])) is None, _suffix_problem("t.jsonl", b"no") is None
    (True, True)
    """
    if str(path) == "-":
        return None
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    kind = _SUFFIXES.get(suffix)
    if kind is None or _compression(head) == kind:
        return None
    if not head:
        return f"is named {suffix} but is empty: no {kind} stream (not even its header)"
    want = {"gzip": _GZIP_MAGIC, **{k: m for m, k in _OTHER_MAGIC}}[kind]
    shown = " ".join(f"{b:02x}" for b in head[:4])
    return (f"is named {suffix} but is not {kind}: its first bytes are {shown}, not {kind}'s "
            f"{' '.join(f'{b:02x}' for b in want)} ({_looks_like(head)}); rename it to what it holds")


def _looks_like(head: bytes) -> str:
    """What a file named as compressed but not holding it seems to be, from its first bytes ``head``: a Parquet
    file (``PAR1``), another compression (gzip's magic in a ``.zst`` file), plain text (after a UTF-8 byte-order
    mark and blank space, which the text readers skip: ``{`` or ``[`` of JSON, ``"``, or an ASCII letter or digit
    of a CSV header or row; or nothing but blank space), else cut short."""
    if head.startswith(b"PAR1"):
        return "it looks like a Parquet file: another file renamed"
    if (other := _compression(head)) is not None:
        return f"it looks like {other}-compressed: another file renamed"
    text = head.removeprefix(_BOM).lstrip(b" \t\r\n")
    if not text or text[:1] in (b"{", b"[", b'"') or (text[:1].isascii() and text[:1].isalnum()):
        return "it looks like plain text: another file renamed, or never compressed"
    return "cut short, or another file renamed"


def check_suffix(path: Any, name: str | None = None) -> None:
    """Refuse a regular file whose name promises a compression its bytes lack (:func:`_suffix_problem`), before a
    reader that does not go through :func:`open_binary` (Parquet, sniffed by its ``PAR1``) takes it; a name with
    no compression suffix is not opened.

    Raises:
        InputError: ``FILE: is named .gz but is not gzip: ...``.
    """
    if str(path) == "-" or os.path.splitext(os.fspath(path))[1].lower() not in _SUFFIXES or is_stream(path):
        return
    with open(path, "rb") as f:
        problem = _suffix_problem(path, f.read(_HEAD_BYTES))
    if problem is not None:
        raise InputError(name or display_name(path), None, None, problem)


def last_line_unended(path: Any, line: int, name: str | None = None) -> bool:
    """Whether line ``line`` (1-based) is a file's last and has no newline at its end: a file cut short (a gzip
    stream whose text was cut before it was compressed, a copy stopped mid-write). Reads the file up to one
    chunk past that line (only once a line has failed); False for a stream (it cannot be read twice) or an
    unreadable file.
    """
    if str(path) == "-" or is_stream(path):
        return False
    seen, tail = 0, b"\n"
    try:
        for _, chunk in iter_chunks(path, name=name):
            seen += count_newlines(chunk)
            if seen >= line:
                return False
            tail = bytes(chunk[-1:]) or tail
    except (InputError, OSError):
        return False
    return seen == line - 1 and tail != b"\n"


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
            except (gzip.BadGzipFile, zlib.error) as exc:  # at the line the decompressed data reached
                at = None if _at_trailer(exc) else line + count_newlines(b"".join(parts))
                raise InputError(name, at, None, _corrupt(exc)) from None
            if not piece:
                break
            parts.append(piece)
            got += len(piece)
        return b"".join(parts)
    except EOFError as exc:  # gzip: "Compressed file ended before the end-of-stream marker"
        raise InputError(name, line, None, f"truncated gzip stream ({exc})") from None
    except (gzip.BadGzipFile, zlib.error) as exc:
        raise InputError(name, None if _at_trailer(exc) else line, None, _corrupt(exc)) from None


def _at_trailer(exc: Exception) -> bool:
    """A CRC-32 or length mismatch: found only at the stream's end (RFC 1952 section 2.3.1, the trailer
    follows the data), so it names no line -- the damage may lie in any of them."""
    return isinstance(exc, gzip.BadGzipFile) and ("CRC" in str(exc) or "length" in str(exc))


def _corrupt(exc: Exception) -> str:
    """The problem of a corrupt gzip stream (:func:`_at_trailer` says where a trailer check leaves it)."""
    where = " (the check runs at the end of the stream: the damage may lie in any line)" if _at_trailer(exc) else ""
    return f"corrupt gzip stream ({exc}){where}"


def count_newlines(data: bytes) -> int:
    """``data.count(b"\\n")``, vectorised: the compiled twin's ``count_lf`` (glibc's memchr, where
    ``pcs.trace._jsonrows`` is built), else numpy's compare and count, a quarter of the time of ``bytes.count``'s
    byte loop (0.08 against 0.33 ms a MiB)."""
    twin = _count_twin()
    if twin is not None:
        return twin(data)
    return int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8) == 10))


@functools.lru_cache(maxsize=1)
def _count_twin():
    """``pcs.trace._jsonrows.count_lf``, or None when the twin is not built (the count is the same either way, so
    ``PCS_NATIVE`` does not choose here)."""
    from pcs import _native

    return getattr(_native.module("jsonrows"), "count_lf", None) if _native.built("jsonrows") else None


def long_line(name: str, line: int) -> InputError:
    """The error of line ``line`` (1-based) of ``name`` running past :data:`MAX_LINE_BYTES`, one text for every
    reader: a file, gzip, stdin or a FIFO (spooled first, :func:`pcs.trace.api._spool`)."""
    return InputError(name, line, None, f"line longer than {MAX_LINE_BYTES >> 20} MiB (the longest line pcs "
                      "reads; is this a trace file?)")


def iter_chunks(path, chunk_bytes: int | None = None, name: str | None = None,
                reuse: bool = False, keep: bool = False) -> Generator[tuple[int, bytes], int | None, None]:
    """Yield ``(first_line_number, data)`` where ``data`` holds whole lines.

    Every chunk but possibly the last ends with ``\\n``; line numbers are
    1-based; a leading UTF-8 BOM is removed from the first chunk.

    The consumer may ``send`` the number of ``\\n`` in the chunk just yielded (a parser that read every line
    knows it) instead of asking with ``next``; without it (``None``) the chunk's newlines are counted here.
    ``reuse``: a file that is not gzip is read into one buffer, and each chunk is a ``memoryview`` of it valid
    until the next chunk is asked for (no copy of the bytes to join a chunk's held line to the next read; for a
    consumer done with each chunk before the next, such as a decoder to columns); gzip yields ``bytes`` either way.
    ``keep`` (with ``reuse``): a chunk stays valid until the second chunk after it is asked for (a consumer that
    reads the next chunk while this one is decoded, :func:`pcs.trace.jsonfast.parse_chunks`); the same chunks.

    Raises:
        InputError: truncated or corrupt gzip stream; a line longer than
            :data:`MAX_LINE_BYTES`; a device (:func:`check_source`).
    """
    name = name or display_name(path)
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    stream = open_binary(path)
    try:
        if reuse and not isinstance(stream, gzip.GzipFile) and hasattr(stream, "readinto"):
            yield from _buffer_chunks(stream, chunk_bytes, name, keep)
            return
        line = 1
        parts: list[bytes] = []  # the unfinished line, read so far
        held = 0
        first = True
        while True:
            data = _read(stream, chunk_bytes, name, line)
            if first:
                first = False
                if data.startswith(_BOM):
                    data = data[len(_BOM):]
            if not data:
                if parts:
                    yield line, b"".join(parts)
                return
            cut = data.rfind(b"\n") + 1  # only the new bytes are searched: linear in the input
            if cut:
                # one copy: the held line and the new bytes joined through a view (a slice, then "+", copied twice)
                chunk = b"".join([*parts, memoryview(data)[:cut]]) if parts else data[:cut]
                parts, held = ([data[cut:]] if cut < len(data) else []), len(data) - cut
                known = yield line, chunk
                line += count_newlines(chunk) if known is None else known
            else:
                parts.append(data)
                held += len(data)
            if held > MAX_LINE_BYTES:
                raise long_line(name, line)
    finally:
        if stream is not getattr(sys.stdin, "buffer", None):
            stream.close()


def _buffer_chunks(stream: BinaryIO, chunk_bytes: int, name: str,
                   keep: bool = False) -> Generator[tuple[int, memoryview], int | None, None]:
    """:func:`iter_chunks` with ``reuse``: ``stream`` read with ``readinto`` into one buffer, each chunk a
    view of it; the unfinished line moved to the buffer's start before the next read (a larger buffer when a
    line outgrows it). Same chunks, line numbers and errors as the plain reader.

    ``keep``: two buffers in turn, the unfinished line moved to the start of the other one, so a chunk's bytes are
    written again only when the second chunk after it is read. A larger buffer is a new array: the views of the
    old one keep it alive, unchanged.

    The buffer is uninitialised (a ``numpy.empty`` array; with ``keep`` the compiled twin's ``ReadBuffer``, kept for
    the next reader: :func:`_spare`), not a ``bytearray``: a ``bytearray`` is zero-filled
    when made (a 2 MiB memset per call, though only the bytes a read wrote are ever looked at), so its chunk
    cut is :func:`_last_newline` rather than ``bytearray.rfind``."""
    taken: list = []    # keep: the read buffers this reader leased (given back to SPARES at its end)
    buf = _spare(2 * chunk_bytes, taken) if keep else np.empty(2 * chunk_bytes, dtype=np.uint8)   # a line and a read
    view = memoryview(buf)
    other = None   # keep: the other buffer (taken at the first chunk's end, off the first read's path)
    line, start, held = 1, 0, 0   # the unfinished line: buf[start:held]
    first = True
    try:
        while True:
            if held + chunk_bytes > len(view):   # a line longer than the buffer: a larger one, the line moved over
                grown = np.empty(max(2 * len(view), held - start + chunk_bytes), dtype=np.uint8)
                grown[:held - start] = view[start:held]
                buf, view, held, start = grown, memoryview(grown), held - start, 0
            got = stream.readinto(view[held:held + chunk_bytes])
            if first:
                first = False
                if got >= len(_BOM) and view[:len(_BOM)] == _BOM:
                    start = len(_BOM)
            if not got:
                if held > start:
                    yield line, view[start:held]
                return
            end = held + got
            cut = _last_newline(view, held, end) + 1  # only the new bytes are searched: linear in the input
            if cut:
                chunk = view[start:cut]
                known = yield line, chunk
                line += count_newlines(chunk) if known is None else known
                if keep:     # the unfinished line (shorter than a read) to the other buffer: this chunk stays as it is
                    other = _spare(2 * chunk_bytes, taken) if other is None else other
                    buf, other = other, buf
                    view, was = memoryview(buf), view
                    view[:end - cut] = was[cut:end]
                    del was
                else:
                    view[:end - cut] = view[cut:end]
                start, held = 0, end - cut
            else:
                held = end
            if held - start > MAX_LINE_BYTES:
                raise long_line(name, line)
    finally:
        if keep:   # for the next reader (taken only once no view of them is alive)
            SPARES.keep(*taken)


#: The largest read buffer kept past its reader: the default chunk's (2 x :data:`CHUNK_BYTES`, 2 MiB), so the kept
#: buffers hold 4 MiB at most; a reader of larger chunks (chunk_bytes) leaves its buffers to be freed.
KEPT_SPARE_BYTES = 2 * CHUNK_BYTES

#: Read buffers of :func:`_buffer_chunks` with ``keep``, given back when their reader ends (the last two kept, each
#: of at most :data:`KEPT_SPARE_BYTES`) for the next reader, whose reads then land in pages already mapped: a fresh
#: 2 MiB buffer took a page fault a 4 KiB page on its first read (225 for a 1 MiB chunk, about 0.4 ms before the 1x
#: replay's first decode: docs/performance.md, "The 1x call's decode pass: the next chunk on a thread without the
#: GIL, the id arena kept"). A kept buffer (the compiled twin's ``ReadBuffer``) is taken again only when no reader
#: holds it and no view of one of its chunks is alive (its own lease and export count, :mod:`pcs.trace.pool`), so no
#: reader writes bytes someone reads.
SPARES = Pool(2, lambda b: b.nbytes <= KEPT_SPARE_BYTES)


def _spare(size: int, taken: list) -> Any:
    """A read buffer of ``size`` bytes (uninitialised; writable buffer protocol), leased to the caller: a kept one
    (:data:`SPARES`) of that size that no reader holds and nothing views, else a new ``ReadBuffer`` (a numpy array,
    not kept, when the compiled twin is not built). A ``ReadBuffer`` is appended to ``taken``, for the reader to
    hand to ``SPARES.keep`` at its end."""
    got = SPARES.take(lambda b: b.nbytes == size)
    if got is None:
        from pcs import _native

        twin = _native.module("jsonrows")
        if twin is None:
            return np.empty(size, dtype=np.uint8)
        got = twin.ReadBuffer(size)
        got.take()
    taken.append(got)
    return got


def release_spares() -> int:
    """Drop the kept read buffers (:data:`SPARES`); each's memory goes once no reader holds it and no view of it is
    alive. The number dropped."""
    return SPARES.release()


def _last_newline(view: memoryview, lo: int, hi: int) -> int:
    """``bytes(view).rfind(b"\\n", lo, hi)`` for a writable byte buffer without ``rfind`` (:func:`_buffer_chunks`'
    numpy array): ``view[lo:hi]`` searched from its end in windows of 4 KiB, then twice as large each time, each
    window copied to ``bytes`` for its ``rfind`` (a chunk's last line end lies in its last line, so one small
    copy as a rule; at most the ``hi - lo`` bytes copied in all). The index in ``view``, or -1 when there is no
    ``\\n``."""
    width = 4096
    while hi > lo:
        at = max(lo, hi - width)
        i = bytes(view[at:hi]).rfind(b"\n")
        if i >= 0:
            return at + i
        hi, width = at, 2 * width
    return -1


def iter_lines(first_line: int, chunk: bytes, lazy: bool = False) -> Iterator[tuple[int, bytes]]:
    """Split a chunk into ``(line_number, line_bytes)``; line ends (LF or CRLF) removed. ``lazy``: each line cut
    when it is asked for (a reader of the first lines, :func:`peek_lines`, then splits no more of the chunk than it
    reads: the whole 64 KiB split cost about 70 us a call, twice per replay); the same lines either way."""
    if lazy:
        yield from _lazy_lines(first_line, chunk)
        return
    lines = chunk.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for i, raw in enumerate(lines):
        yield first_line + i, raw[:-1] if raw.endswith(b"\r") else raw


def _lazy_lines(first_line: int, chunk: bytes) -> Iterator[tuple[int, bytes]]:
    """:func:`iter_lines` cutting one line at a time: the bytes between consecutive ``\n`` (the last line without
    one too), a final empty piece after a last ``\n`` not yielded, one ``\r`` at a line's end removed."""
    pos, end, n = 0, 0, len(chunk)
    while pos < n:
        end = chunk.find(b"\n", pos)
        end = n if end < 0 else end
        raw = chunk[pos:end]
        yield first_line, raw[:-1] if raw.endswith(b"\r") else raw
        first_line, pos = first_line + 1, end + 1


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
            cr = line.find(b"\r")
            if cr >= 0:
                raise InputError(name, ln, None, f"a carriage return (CR) in the middle of the line, at byte {cr + 1}: "
                                 "one record per line, ended by LF or CRLF")
            try:
                yield ln, next(csv.reader(io.StringIO(line.decode("utf-8"))), [])
            except UnicodeDecodeError as exc:
                raise InputError(name, ln, None, _not_utf8_cell(line, exc, ln == 1)) from None
            except csv.Error as exc:
                raise InputError(name, ln, None, f"unreadable CSV line ({exc})") from None


def _not_utf8_cell(line: bytes, exc: UnicodeDecodeError, header: bool) -> str:
    r"""The message of a CSV line that is not UTF-8: which column holds the first bad byte (a header's with its
    text, each bad byte shown as its escape ``\xf6``, as every message shows a byte that is not UTF-8:
    :func:`pcs.errors.shown_repr`), the byte and its place in the line (from 1).

    >>> bad = b"TIMESTAMP,Gr\xf6sse"
    >>> _not_utf8_cell(bad, UnicodeDecodeError("utf-8", bad, 12, 13, "invalid start byte"), True)
    "header column 2 ('Gr\\xf6sse') is not UTF-8 (byte 0xf6 at byte 13 of the line): CSV traces are UTF-8, re-encode the file"
    """
    import csv

    try:
        cells = next(csv.reader([line.decode("utf-8", errors="surrogateescape")]), [])
        before = line[:exc.start].decode("utf-8", errors="surrogateescape")
        k = len(next(csv.reader([before]), [""])) if before else 1
    except csv.Error:
        cells, k = [], 0
    what = (f"header column {k} ({quoted(cells[k - 1], show=repr)})" if header and 0 < k <= len(cells)
            else f"column {k}" if k else "the line")
    return (f"{what} is not UTF-8 ({bad_byte(line, exc.start)}): CSV traces are "
            "UTF-8, re-encode the file")


def first_line_number(path, max_bytes: int = 1 << 20, name: str | None = None) -> int | None:
    """The line number (from 1) of the first non-blank line, None when there is none in ``max_bytes``.
    ``name``: the trace's name in errors (stdin's spool file is read as ``-``)."""
    for first, chunk in iter_chunks(path, chunk_bytes=min(max_bytes, 1 << 16), name=name):
        for ln, line in iter_lines(first, chunk):
            if line.strip():
                return ln
        if first + chunk.count(b"\n") > max_bytes:
            break
    return None


def peek_lines(path, max_lines: int = 20, max_bytes: int = 1 << 20, name: str | None = None) -> list[bytes]:
    """The first non-blank lines (at most ``max_lines``) for format detection. ``name``: the trace's name in
    errors (default :func:`display_name` of ``path``; stdin's spool file is read as ``-``).

    Raises:
        InputError: the file's stream is unreadable (a truncated or corrupt gzip stream), naming ``name``."""
    out: list[bytes] = []
    for first, chunk in iter_chunks(path, chunk_bytes=min(max_bytes, 1 << 16), name=name):
        for _, line in iter_lines(first, chunk, lazy=True):
            if line.strip():
                out.append(line)
                if len(out) >= max_lines:
                    return out
        if sum(map(len, out)) >= max_bytes:
            break
    return out


def count_lines(path, max_bytes: int = 1 << 34) -> int | None:
    """Lines of an uncompressed regular file (a last line without ``\\n`` counts), for a progress total.

    None for stdin, a gzip file, a non-regular file or one above ``max_bytes``
    (the count would cost a pass of its own). Reads ~1 GB/s.
    """
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        with open(path, "rb") as f:
            if f.read(2) == _GZIP_MAGIC:
                return None
            f.seek(0)
            n, last = 0, b"\n"
            while data := f.read(CHUNK_BYTES):
                n += count_newlines(data)
                last = data[-1:]
            return n + (last != b"\n")
    except OSError:
        return None
