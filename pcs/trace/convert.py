"""Write traces: Mooncake / Bailian JSONL and canonical Parquet, atomically.

Every writer streams :class:`RequestBatch` es to a temporary file in the
output's directory and ``os.replace`` s it into place at the end
(:func:`pcs.outfile.atomic_output`), so a failed
conversion never leaves a half-written output and never touches the input.
A ``.gz`` suffix gzips the JSONL output (mtime 0 so the bytes are
deterministic).

Re-blocking: a token trace read at ``--block-size B`` yields ids at block size
B; written as Mooncake/Bailian/Parquet it is that trace at block size B.
Block-id traces (Mooncake, Bailian, Parquet) cannot be re-blocked: the
tokens behind an id are unknown.
"""
from __future__ import annotations

import gzip
import io
import itertools
import json
import math
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from pcs._heldimport import held_import
from pcs.errors import UnknownNameError, UserError, shown_path
from pcs.outfile import arrow_file, atomic_output, publish  # noqa: F401 - publish: the name pcs.trace.chat once imported
from pcs.trace.request import RequestBatch

__all__ = ["OUT_FORMATS", "IdRemapper", "write_trace", "convert", "out_format_for", "publish", "ms_stamp",
           "block_size_note", "open_jsonl_text", "refuse_token_output_name", "session_note",
           "refuse_bailian_without_sessions"]

OUT_FORMATS = ("mooncake", "bailian", "parquet")


#: Rows per Parquet row group written (whatever the size of the batches read): about 1.5 M Mooncake ids,
#: 12 MB; the reader decodes a quarter or a sixteenth of a group at a time (``pcs.trace.parquet.READ_ROWS``,
#: ``STREAM_ROWS``).
ROW_GROUP_ROWS = 1 << 16

#: ``pyarrow.parquet.ParquetWriter`` options of ``pcs trace convert``: no compression, the block hashes
#: DELTA_BINARY_PACKED (ids along a chain mostly step by 1, so deltas pack into a few bits) and the per-request
#: columns dictionary-encoded. Uncompressed, a read skips the page decompression (zstd cost 53 M instructions in
#: a 10x Mooncake read of 234 M) and pyarrow never sets up its default pool's arenas for the decompressed pages
#: (about 4 MB resident from a process's first read on); the file is 3.5x larger (10x Mooncake replica: 7.4 MB,
#: 2.1 MB with zstd; its JSONL is 34 MB). docs/performance.md, "The Parquet read: pages written uncompressed".
#: Any Parquet reader reads every layout: files written with zstd read to the same batches.
PARQUET_WRITE_OPTIONS = {"compression": "none",
                         "use_dictionary": ["arrival_s", "prompt_tokens", "output_tokens", "session_id",
                                            "parent_id", "turn", "type"],
                         "column_encoding": {"block_hashes.list.element": "DELTA_BINARY_PACKED"}}


def _write_group(w, group: list, schema, final: bool = False) -> list:
    """Write the whole row groups of :data:`ROW_GROUP_ROWS` rows in ``group`` (record batches; with
    ``final`` the rest too); returns the batches left for the next group."""
    pa = held_import("pyarrow")

    table = pa.Table.from_batches(group, schema=schema)
    whole = table.num_rows if final else table.num_rows - table.num_rows % ROW_GROUP_ROWS
    if whole:
        w.write_table(table.slice(0, whole), row_group_size=ROW_GROUP_ROWS)
    return table.slice(whole).to_batches()


class IdRemapper:
    """Map opaque 64-bit ids to dense ints 0, 1, 2, ... in first-appearance order.

    This is how the Mooncake release numbers its ids (docs/semantics.md §1),
    so a token trace's Mooncake form looks like the real one. Memory: one
    dict entry per distinct id.
    """

    def __init__(self) -> None:
        self._ids: dict[int, int] = {}

    def __call__(self, hashes: np.ndarray) -> np.ndarray:
        """``np.ndarray[np.uint64]`` -> dense ids, same shape."""
        ids = self._ids
        return np.fromiter((ids.setdefault(h, len(ids)) for h in hashes.tolist()), dtype=np.uint64, count=hashes.size)


def ms_stamp(arrival_s: float) -> int | float:
    """A Mooncake (or token JSONL) timestamp in ms that reads back as ``arrival_s`` exactly: the reader divides
    the parsed ms by 1000 (``pcs.trace.hashids.FormatSpec.ts_per_s``, one correctly rounded division), so the
    shortest of a whole ms, ``arrival_s * 1000`` to 15, 16 or 17 significant digits and the nearest doubles
    around it whose quotient is ``arrival_s`` is written (1e-09 s is written ``1.0000000000000002e-06``:
    ``1e-06`` would read back 1 ulp off). A quotient can skip a double (1000 ms per s widens the ulp 1.024x in
    half the binades: ~2.5 % of random arrivals); then the nearest is written, 1 ulp off.

    >>> ms_stamp(4.314579010009766), ms_stamp(0.25), ms_stamp(1e-9)
    (4314.579010009766, 250, 1.0000000000000002e-06)
    """
    ms = arrival_s * 1000.0
    r = round(ms)
    if r / 1000.0 == arrival_s:
        return r
    for digits in (15, 16, 17):
        v = float(f"{ms:.{digits}g}")
        if v / 1000.0 == arrival_s:
            return v
    near = [ms]
    for toward in (-math.inf, math.inf):
        v = ms
        for _ in range(3):
            v = math.nextafter(v, toward)
            near.append(v)
    return min(near, key=lambda v: (abs(v / 1000.0 - arrival_s), abs(v - ms)))


def _reuse_marks(reuse: str | None) -> tuple[str, str]:
    """(the JSONL mark of the first row written, of every other row) for a trace whose reuse is ``reuse``: none for
    recorded reuse (None); ``"reuse": "synthetic"`` on every row for synthesised reuse, and on the first row also
    the assumption of a lengths-only source (:data:`pcs.trace.hashids.REUSE_ASSUMPTION_KEY`; not for
    :data:`pcs.trace.hashids.SYNTH_REUSE`, a generated trace's), so a reader states it as the source did."""
    from pcs.trace.hashids import REUSE_ASSUMPTION_KEY, SYNTH_REUSE

    if reuse is None:
        return "", ""
    mark = '"reuse": "synthetic", '
    if reuse == SYNTH_REUSE:
        return mark, mark
    return f"{mark}{json.dumps(REUSE_ASSUMPTION_KEY)}: {json.dumps(reuse)}, ", mark


def _jsonl_lines(b: RequestBatch, fmt: str, remap: IdRemapper | None, marks: tuple[str, str] = ("", "")) -> str:
    """The JSONL rows of ``b``; ``marks``: :func:`_reuse_marks` (the first for row 0 of ``b``: pass ``("", "")``
    or the rest's twice after the first batch)."""
    hashes = remap(b.block_hashes) if remap else b.block_hashes
    off = b.block_offsets.tolist()
    hl = hashes.tolist()
    out = io.StringIO()
    arr, pt, ot = b.arrival_s.tolist(), b.prompt_tokens.tolist(), b.output_tokens.tolist()
    for i in range(len(arr)):
        mark = marks[0] if i == 0 else marks[1]
        ids = ", ".join(map(str, hl[off[i]:off[i + 1]]))
        if fmt == "mooncake":
            out.write(f'{{"timestamp": {ms_stamp(arr[i])}, "input_length": {pt[i]}, "output_length": {ot[i]}, '
                      f'{mark}"hash_ids": [{ids}]}}\n')
        else:
            sid = -1 if b.session_id is None else int(b.session_id[i])
            par = -1 if b.parent_id is None else int(b.parent_id[i])
            turn = 1 if b.turn is None else int(b.turn[i])
            typ = json.dumps("text" if b.type is None or b.type[i] is None else b.type[i])
            out.write(f'{{"chat_id": {sid}, "parent_chat_id": {par}, "timestamp": {arr[i]!r}, '
                      f'"input_length": {pt[i]}, "output_length": {ot[i]}, "type": {typ}, "turn": {turn}, '
                      f'{mark}"hash_ids": [{ids}]}}\n')
    return out.getvalue()


#: Names that mean Parquet, in any case (``.parq``: fastparquet's and Dask's spelling).
PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")


def out_format_for(path, requested: str | None) -> str:
    """The output format: ``requested``, else ``parquet`` for a name ending in one of :data:`PARQUET_SUFFIXES`
    (any case: ``OUT.PARQUET``), else ``mooncake``.

    Raises:
        UserError: ``requested`` is not one of ``OUT_FORMATS``."""
    if requested is not None:
        if requested not in OUT_FORMATS:
            raise UnknownNameError("output format", requested, OUT_FORMATS)
        return requested
    return "parquet" if str(path).lower().endswith(PARQUET_SUFFIXES) else "mooncake"


def block_size_note(fmt: str, block_size: int, path: Any) -> str | None:
    """The note for a JSONL trace written at blocks its format's readers do not assume (Mooncake JSONL at 16
    tokens: every reader, pcs's own, reads Mooncake at 512, ``pcs.trace.hashids.MOONCAKE``), else None. JSONL
    carries no block size; Parquet keeps it in its metadata (no note).

    >>> block_size_note("mooncake", 512, "a.jsonl") is None
    True
    """
    from pcs.trace.hashids import BAILIAN, MOONCAKE

    spec = {"mooncake": MOONCAKE, "bailian": BAILIAN}.get(fmt)
    if spec is None or spec.default_block_size == block_size:
        return None
    return (f"{shown_path(path)} is {fmt} JSONL at {block_size}-token blocks, but {fmt} is read at {spec.default_block_size}-"
            f"token blocks unless told: read it with --block-size {block_size}, or write .parquet (keeps the "
            "block size)")


#: Names a token-id JSONL output cannot take (:func:`refuse_token_output_name`): pcs writes no CSV trace, and no
#: token-id Parquet (its Parquet schema holds block hashes, docs/traces.md).
_NOT_TOKEN_JSONL = (".csv", ".tsv", ".parquet", ".pq", ".parq")


def refuse_token_output_name(out_path, option: str) -> None:
    """Refuse a token-id JSONL output (``pcs trace from-chat OUT``, ``synth --tokens-out``) named as another format
    (:data:`_NOT_TOKEN_JSONL`, ``.gz`` aside, any case): it would be JSONL under a CSV or Parquet name.

    Raises:
        UserError: ``--tokens-out t.parquet: the token-id trace is JSONL (pcs writes no CSV and no token-id
            Parquet): name it .jsonl, or .jsonl.gz for gzip``.
    """
    name = str(out_path).lower().removesuffix(".gz")
    suffix = next((s for s in _NOT_TOKEN_JSONL if name.endswith(s)), None)
    if suffix is not None:
        raise UserError(f"{option} {shown_path(out_path)}: the token-id trace is JSONL (pcs writes no CSV and no token-id "
                        "Parquet): name it .jsonl, or .jsonl.gz for gzip")


def open_jsonl_text(tmp, out_path):
    """A text file to write JSONL into at ``tmp`` (the temporary file of ``out_path``, :func:`pcs.outfile.
    atomic_output`), gzipped (mtime 0, as :func:`write_trace`) when ``out_path`` ends ``.gz``: pcs reads a
    ``.gz`` name only as gzip (:func:`pcs.trace.source.check_suffix`). Closing it closes the file."""
    if Path(str(out_path)).suffix.lower() != ".gz":
        return open(tmp, "w", encoding="utf-8")
    raw = open(tmp, "wb")  # noqa: SIM115 - closed by the wrapper's close
    return _GzipText(raw, gzip_sink(raw, out_path))


def gzip_sink(raw, out_path) -> gzip.GzipFile:
    """A gzip stream into the open binary file ``raw``, its bytes a function of the data alone: mtime 0 and the
    header's name ``out_path``'s (``t.jsonl`` for ``t.jsonl.gz``, as gzip(1) writes it), never the temporary file's
    random name. Closing it leaves ``raw`` open."""
    return gzip.GzipFile(filename=Path(str(out_path)).name, mode="wb", fileobj=raw, mtime=0)


class _GzipText(io.TextIOWrapper):
    """Text into a :func:`gzip_sink`; closing it closes the stream, then the file under it."""

    def __init__(self, raw, sink: gzip.GzipFile):
        super().__init__(sink, encoding="utf-8")
        self._file = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._file.close()


def _arrow_schema(with_session: Any, block_size: int, source_format: str, reuse: str | None):
    """:func:`pcs.trace.parquet.arrow_schema` (imported when a Parquet file is written)."""
    from pcs.trace.parquet import arrow_schema

    return arrow_schema(with_session, block_size, source_format, reuse)


def _write_parquet(tmp, batches: Iterable[RequestBatch], remap: "IdRemapper | None", schema) -> tuple[int, int]:
    """Write ``batches`` to the Parquet file ``tmp`` (row groups of :data:`ROW_GROUP_ROWS`); (requests, block
    accesses) written."""
    pq = held_import("pyarrow.parquet")

    from pcs.trace.parquet import batch_to_arrow

    n = m = 0
    with arrow_file(tmp, "w") as sink, pq.ParquetWriter(sink, schema, **PARQUET_WRITE_OPTIONS) as w:
        group: list = []
        for b in batches:
            if remap:
                b = _with_hashes(b, remap(b.block_hashes))
            group.append(batch_to_arrow(b, schema))
            n, m = n + len(b), m + b.block_hashes.size
            if sum(g.num_rows for g in group) >= ROW_GROUP_ROWS:
                group = _write_group(w, group, schema)
        _write_group(w, group, schema, final=True)
    return n, m


def _write_jsonl(tmp, out_path: Path, batches: Iterable[RequestBatch], fmt: str, remap: "IdRemapper | None",
                 reuse: str | None) -> tuple[int, int]:
    """Write ``batches`` as JSON Lines of ``fmt`` to ``tmp`` (gzip when ``out_path`` ends ``.gz``; the reuse marks
    of :func:`_reuse_marks`); (requests, block accesses) written."""
    n = m = 0
    with open(tmp, "wb") as raw:
        sink = gzip_sink(raw, out_path) if out_path.suffix == ".gz" else raw
        marks = _reuse_marks(reuse)
        for b in batches:
            sink.write(_jsonl_lines(b, fmt, remap, marks).encode())
            n, m, marks = n + len(b), m + b.block_hashes.size, (marks[1], marks[1])
        if sink is not raw:
            sink.close()
    return n, m


def write_trace(batches: Iterable[RequestBatch], out_path, fmt: str, *, block_size: int,
                remap_ids: bool = False, source_format: str = "mooncake", with_session: bool | tuple | None = None,
                reuse: str | None = None) -> dict:
    """Write batches to ``out_path`` atomically (temp file + ``os.replace``).

    Args:
        batches: the requests, in order.
        fmt: one of :data:`OUT_FORMATS`.
        block_size: tokens per block (Parquet metadata; JSONL relies on the reader's default
            or ``--block-size``).
        remap_ids: renumber ids densely in first-appearance order (:class:`IdRemapper`).
        with_session: Parquet only: the session columns to write (:func:`pcs.trace.parquet.arrow_schema`: True,
            all three; a tuple, those named; False, none); None: those the batches carry
            (:func:`pcs.trace.parquet.session_columns` of the first), so a trace's session ids are never dropped.
        reuse: a synthesised-reuse assumption (``Trace.reuse``): Parquet keeps it in the metadata
            (``pcs.reuse``); JSONL marks every row ``"reuse": "synthetic"`` and, for a lengths-only source's
            assumption (not :data:`pcs.trace.hashids.SYNTH_REUSE`), names it on the first row
            (``reuse_assumption``, :func:`_reuse_marks`), so the reuse note follows the trace as it was stated.
    Returns:
        ``{"requests": n, "block_accesses": m, "path": str, "format": fmt, "session_columns": [...]}``: the session
        columns the batches carry (:func:`pcs.trace.parquet.session_columns`; ``[]`` none), written to Parquet
        and Bailian, dropped from Mooncake (:func:`session_note`).
    Raises:
        UserError: unknown format; ``batches`` holds no request (every pcs reader refuses an empty
            trace: ``empty trace (no requests)``), nothing written.
        PathError: an empty or blank ``out_path``, or one that is a folder
            (:func:`pcs.trace.pathcheck.check_output_file`).
    """
    from pcs.trace.pathcheck import check_output_file

    if fmt not in OUT_FORMATS:
        raise UnknownNameError("output format", fmt, OUT_FORMATS)
    check_output_file(out_path, "out_path")
    out_path = Path(out_path)
    cols, batches = _peek_session_columns(batches)
    if with_session is None:
        with_session = cols
    remap = IdRemapper() if remap_ids else None
    with atomic_output(out_path) as tmp:
        if fmt == "parquet":
            n, m = _write_parquet(tmp, batches, remap, _arrow_schema(with_session, block_size, source_format, reuse))
        else:
            n, m = _write_jsonl(tmp, out_path, batches, fmt, remap, reuse)
        if not n:   # inside atomic_output: nothing is written
            raise UserError(f"{shown_path(out_path)}: no requests to write; pcs refuses an empty trace, so it writes none")
    return {"requests": n, "block_accesses": m, "path": str(out_path), "format": fmt, "session_columns": list(cols)}


def _peek_session_columns(batches: Iterable[RequestBatch]) -> tuple[tuple[str, ...], Iterable[RequestBatch]]:
    """(the session columns of the first batch, :func:`pcs.trace.parquet.session_columns`; the batches, that one
    still first). ``()`` for no batch."""
    from pcs.trace.parquet import session_columns

    it = iter(batches)
    first = next(it, None)
    if first is None:
        return (), it
    return session_columns(first), itertools.chain((first,), it)


def refuse_bailian_without_sessions(fmt: str, cols, source_format: str, name: str = "the input") -> None:
    """The one rule of a Bailian output: its rows need ``chat_id`` and ``parent_chat_id``, so the input must carry
    ``session_id`` and ``parent_id`` (``cols``, :func:`pcs.trace.parquet.session_columns`; a missing ``turn`` is
    written 1). A BurstGPT trace's sessions (``session_id`` alone) are no chat tree. ``name``: the input as the
    message names it (its file name, shown by :func:`pcs.errors.shown_path`).

    Raises:
        UserError: ``fmt`` is ``bailian`` and ``cols`` lacks either (the message names the input file and the
            columns it lacks: ``t.parquet (parquet) has no parent_id: ...``).
    """
    missing = [c for c in ("session_id", "parent_id") if c not in set(cols)]
    if fmt == "bailian" and missing:
        raise UserError(f"{shown_path(name)} ({source_format}) has no {' and no '.join(missing)}: a Bailian row's "
                        "chat_id and parent_chat_id are the request's session_id and parent_id (turn, when absent, "
                        "is written 1); write mooncake or parquet")


def session_note(info: dict) -> str | None:
    """The note for a trace written as Mooncake JSONL (``info``: :func:`write_trace`'s summary) from an input with
    session ids: Mooncake rows have no session fields, so they are dropped (``--router session`` then refuses the
    output); else None.

    >>> session_note({"format": "mooncake", "session_columns": ["session_id"], "path": "o.jsonl"})[:47]
    'o.jsonl is Mooncake JSONL, which has no session'
    """
    cols = info.get("session_columns") or ()
    if info.get("format") != "mooncake" or not cols:
        return None
    return (f"{shown_path(info['path'])} is Mooncake JSONL, which has no session fields: the input's session fields "
            f"({', '.join(cols)}) are dropped (router 'session' refuses the output); write .parquet to keep them")


def _with_hashes(b: RequestBatch, hashes: np.ndarray) -> RequestBatch:
    return RequestBatch(b.first_request_id, b.block_size, b.arrival_s, b.prompt_tokens, b.output_tokens,
                        b.block_offsets, hashes, b.session_id, b.parent_id, b.turn, b.type, b.extra_keys)


def convert(trace, out_path, fmt: str | None = None, *, remap_ids: bool | None = None) -> dict:
    """Convert an open :class:`pcs.trace.Trace` (or a trace path, opened with the defaults of
    :func:`pcs.trace.open_trace`) to ``out_path``.

    ``remap_ids`` defaults to True for token traces (64-bit hashes become
    dense ids, as in the Mooncake release) and False otherwise.

    Raises:
        UserError: unknown format; input and output are the same file.
        PathError: a trace path that is missing, a directory or not readable (:func:`pcs.trace.api.opened`); an
            empty or blank ``out_path``, or one that is a folder (:func:`pcs.trace.pathcheck.check_output_file`).
        InputError: bad input content.
    """
    from pcs.trace.api import header_note, opened, skipped_lines_json
    from pcs.trace.pathcheck import check_output_file

    trace = opened(trace)
    check_output_file(out_path, "out_path")     # Path('') is '.': it was written onto the current folder
    fmt = out_format_for(out_path, fmt)
    if Path(out_path).exists() and trace.name != "-" and Path(out_path).resolve() == Path(trace.path).resolve():
        raise UserError(f"output {shown_path(out_path)} is the input file; pcs never modifies inputs")
    if remap_ids is None:
        remap_ids = trace.format == "tokens"
    cols, batches = _peek_session_columns(trace.iter_batches())
    refuse_bailian_without_sessions(fmt, cols, trace.format, trace.name)
    reuse = getattr(trace, "reuse", "recorded")
    synthesised = reuse.startswith("synthesised")
    info = write_trace(batches, out_path, fmt, block_size=trace.block_size, remap_ids=remap_ids,
                       source_format=trace.format, reuse=reuse if synthesised else None)
    info.update(block_size=trace.block_size, source_format=trace.format, skipped=trace.skipped, reuse=reuse,
                skipped_lines=skipped_lines_json(trace), header_note=header_note(trace))
    return info

