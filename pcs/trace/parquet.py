"""The canonical Parquet trace schema: written by ``pcs trace convert``, read in streaming batches.

Schema ``pcs-trace/1`` (one row per request, in arrival order):

==============  ==================  ==========================================
column          Arrow type          meaning
==============  ==================  ==========================================
arrival_s       float64             arrival time, seconds from trace start
prompt_tokens   int64               prompt length, tokens (>= 0)
output_tokens   int64               generated tokens (>= 0)
block_hashes    list<uint64>        one id per block, the partial last block
                                    included: ceil(prompt_tokens / block_size)
session_id      int64 (optional)    chat/session id (Bailian ``chat_id``), -1 for none
parent_id       int64 (optional)    parent chat id, -1 for none (needs session_id)
turn            int64 (optional)    turn number in the session (needs session_id)
type            string (optional)   request type (Bailian ``type``)
==============  ==================  ==========================================

File key-value metadata: ``pcs.schema = "pcs-trace/1"``, ``pcs.block_size``
(decimal string, tokens per block), ``pcs.source_format`` (the format it was
converted from), and for traces whose prefix reuse was synthesised (Azure,
BurstGPT) ``pcs.reuse``, the assumption (docs/traces-formats.md). Errors name
the 1-based row as the "line"; a null in any column read is an error.
"""
from __future__ import annotations

import os
import re
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np

from pcs._heldimport import held_import
from pcs.errors import InputError, quoted, shown_repr
from pcs.trace.batches import MAX_ARRIVAL_S, arrival_error, ceil_blocks
from pcs.trace.hashids import SKIPPED_NAMED
from pcs.trace.request import MAX_BLOCK_SIZE, RequestBatch, join_hashes
from pcs.trace.rowlimits import NO_LIMITS, RowLimits
from pcs.units import format_count, format_counted

__all__ = ["SCHEMA_NAME", "READ_ROWS", "STREAM_ROWS", "PIECE_ROWS", "PIECES", "FOOTER_HINT_MAX", "expected_block_hashes", "footer_rows",
           "footer_block_hashes", "arrow_schema", "session_columns", "parquet_block_size", "parquet_rows", "parquet_reuse",
           "open_parquet", "read_parquet", "batch_to_arrow", "Opened"]

SCHEMA_NAME = "pcs-trace/1"
_OPTIONAL = ("session_id", "parent_id", "turn")
#: Rows per batch read for a caller that keeps every batch and joins them (:func:`read_parquet` with
#: ``side_by_side``, :class:`pcs.engine.decoded.Decoded`): a quarter of a written row group
#: (``pcs.trace.convert.ROW_GROUP_ROWS``). pyarrow decodes a row group's pages as the batches ask for them, so the
#: first batch is ready after a quarter of the work; the replay joins them again
#: (:data:`pcs.engine.decoded.MERGE_REQUESTS`).
READ_ROWS = 1 << 14
#: Rows per batch of a streamed read (:func:`read_parquet` without ``side_by_side``: the one-pass scan, which holds
#: one batch at a time and decodes batch k + 1 on a worker while it scans batch k): about the requests of one JSONL
#: chunk (:data:`pcs.trace.source.CHUNK_BYTES`). At 1x Mooncake (12,031 rows, one row group) a read in
#: :data:`READ_ROWS` was one batch, decoded with nothing beside it; in these it is three, and batches 2 and 3 are
#: decoded beside the scan of batches 1 and 2 (docs/performance.md, "Parquet at 1x"). Not for ``side_by_side``: a
#: batch costs fixed work there (the next-turn walk, the chunk pieces), +2.3 % instructions in the 10x two-tier call.
STREAM_ROWS = 1 << 12
#: The fewest rows of a piece: a record batch pyarrow decodes in a ``side_by_side`` read, which joins consecutive
#: pieces into batches of :data:`READ_ROWS` (:func:`_joined_pieces`), their ids copied side by side
#: (:class:`_IdRoom`). pyarrow's reader holds a decoded batch's values and levels in buffers of the next power of two
#: (a 16,384-row batch of 1x Mooncake: 288,500 ids in room for 524,288, plus two int16 levels an id: 9.8 MB of its
#: pool at once for 2.6 MB read), freed once the piece's ids are copied out, so a piece's size is what the read holds
#: beside the decoded trace: a trace is read in about :data:`PIECES` pieces (:func:`_piece_rows`), never fewer rows
#: than this (smaller pieces gained no memory at 1x Mooncake and cost pyarrow's per-batch work; docs/performance.md,
#: "The Parquet read in pieces").
PIECE_ROWS = 1 << 11
#: Pieces a ``side_by_side`` read is cut into (:func:`_piece_rows`): pyarrow's buffers of a piece are then about an
#: eighth of the trace's, and a large trace (10x Mooncake: 120,310 rows in groups of 65,536) is read in pieces of
#: :data:`READ_ROWS`, as many batches as before, so pyarrow's per-batch work (about 0.25 M instructions each) does not
#: grow with it.
PIECES = 8
_REQUIRED = ("arrival_s", "prompt_tokens", "output_tokens", "block_hashes")


def arrow_schema(with_session: bool | tuple = False, block_size: int = 512, source_format: str = "mooncake",
                 reuse: str | None = None):
    """The canonical ``pyarrow.Schema``; ``pcs.reuse`` when given.

    ``with_session``: the session columns to write -- True: ``session_id``, ``parent_id`` and ``turn``; a tuple:
    those of them named (:func:`session_columns`: ``session_id`` alone for a BurstGPT release-3 trace, which has
    no parents or turns); False or ``()``: none. With any, the ``type`` column too (read with the session
    columns only, :func:`read_parquet`)."""
    pa = held_import("pyarrow")

    fields = [pa.field("arrival_s", pa.float64(), nullable=False),
              pa.field("prompt_tokens", pa.int64(), nullable=False),
              pa.field("output_tokens", pa.int64(), nullable=False),
              pa.field("block_hashes", pa.list_(pa.field("item", pa.uint64(), nullable=False)), nullable=False)]
    session = _OPTIONAL if with_session is True else tuple(with_session or ())
    if session:
        fields += [pa.field(k, pa.int64()) for k in _OPTIONAL if k in session] + [pa.field("type", pa.string())]
    meta = {"pcs.schema": SCHEMA_NAME, "pcs.block_size": str(block_size), "pcs.source_format": source_format}
    if reuse:
        meta["pcs.reuse"] = reuse
    return pa.schema(fields, metadata=meta)


def session_columns(batch: RequestBatch) -> tuple[str, ...]:
    """The session columns (``session_id``, ``parent_id``, ``turn``) ``batch`` carries, for :func:`arrow_schema`:
    ``()`` when it has no session ids (its ``parent_id`` and ``turn`` are then ignored), else ``session_id`` and
    those of the other two that are not None. Every batch of one trace carries the same ones."""
    if batch.session_id is None:
        return ()
    return tuple(k for k in _OPTIONAL if getattr(batch, k) is not None)


def parquet_reuse(path, name: str, pf=None, schema=None) -> str | None:
    """The ``pcs.reuse`` metadata of a pcs Parquet trace (a synthesised-reuse assumption), or None.

    ``pf``: the file already open (:func:`open_parquet`; its footer is read once), else ``path`` is opened;
    ``schema``: its ``schema_arrow`` already made, else made here."""
    return _meta_text(pf if pf is not None else _open(path, name), "pcs.reuse", name, schema)


def _meta_text(pf, key: str, name: str, schema=None) -> str | None:
    """The UTF-8 text of one ``pcs.*`` key-value metadata entry, or None when absent. ``schema``: ``pf``'s
    ``schema_arrow`` when the caller has it (pyarrow builds a new one at each read of the property), else read.

    Only the keys pcs reads are decoded: Parquet metadata are byte strings, and other writers keep
    binary values under their own keys, which are ignored.

    Raises:
        InputError: the value is not UTF-8 text, or holds a control character (it is printed on one line).
    """
    raw = ((schema if schema is not None else pf.schema_arrow).metadata or {}).get(key.encode())
    if raw is None:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(name, None, key, f"metadata must be UTF-8 text, got invalid byte {shown_repr(raw[exc.start:exc.start + 1])} "
                         f"at byte {exc.start}") from None
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in text):
        raise InputError(name, None, key, f"metadata must be one line of printable text, got {quoted(text, show=repr)}")
    return text


def batch_to_arrow(batch: RequestBatch, schema):
    """A :class:`RequestBatch` as a ``pyarrow.RecordBatch`` of ``schema``."""
    pa = held_import("pyarrow")

    lists = pa.ListArray.from_arrays(pa.array(batch.block_offsets.astype(np.int32)),
                                     pa.array(batch.block_hashes, type=pa.uint64()))
    cols = [pa.array(batch.arrival_s, pa.float64()), pa.array(batch.prompt_tokens, pa.int64()),
            pa.array(batch.output_tokens, pa.int64()), lists.cast(schema.field("block_hashes").type)]
    if "session_id" in schema.names:
        n = len(batch)
        for k in (k for k in _OPTIONAL if k in schema.names):
            v = getattr(batch, k)
            cols.append(pa.array(v if v is not None else np.full(n, -1, np.int64), pa.int64()))
        cols.append(pa.array(list(batch.type) if batch.type is not None else [None] * n, pa.string()))
    return pa.RecordBatch.from_arrays(cols, schema=schema)


class Opened(NamedTuple):
    """What :func:`pcs.trace.open_trace` read of a Parquet trace's footer, handed to its first read
    (:func:`read_parquet` ``opened``) so the footer is read and parsed once a call: ``metadata`` (the reader's
    ``FileMetaData``), ``schema`` (``reader.schema_arrow``, made once), ``block_hashes`` (:func:`footer_block_hashes`,
    or None: counted when needed) and ``stamp`` (:func:`file_stamp` when it was read). No file is held open (a trace
    opened and never read kept a descriptor: 251 such traces hit a 256-descriptor limit); the read opens the file and
    uses the footer only when the file's stamp is unchanged -- a file replaced or rewritten since (``pcs trace
    convert`` renames its output into place) is opened and its footer read afresh, as every later read does."""
    metadata: Any
    schema: Any
    block_hashes: int | None
    stamp: tuple


def file_stamp(path) -> tuple:
    """``path``'s identity and version for :class:`Opened`: (device, inode, size in bytes, modification time in ns);
    () when it cannot be read (never equal to a file's: the read then opens it and reports the error)."""
    try:
        st = os.stat(path)
    except OSError:
        return ()
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def opened_footer(path, name: str) -> "tuple[Any, Opened]":
    """``path`` opened (:func:`open_parquet`) for :func:`pcs.trace.open_trace`'s footer facts, and its
    :class:`Opened` (``block_hashes`` None: the caller counts them with the reader); close the reader when done.

    Raises:
        InputError: not a readable Parquet file (naming the file and pyarrow's reason).
    """
    stamp = file_stamp(path)           # before the open: a file changed between the two reads as changed
    pf = _open(path, name)
    return pf, Opened(pf.metadata, pf.schema_arrow, None, stamp)


def open_parquet(path, name: str):
    """``path`` opened with its footer read (a ``pyarrow._parquet.ParquetReader``: ``schema_arrow``,
    ``metadata``), for :func:`parquet_block_size` and :func:`parquet_reuse` to share one open.

    Raises:
        InputError: not a readable Parquet file (naming the file and pyarrow's reason).
    """
    return _open(path, name)


def _open(path, name: str, metadata: Any = None):
    """``path`` as pyarrow's own reader class, the one ``pyarrow.parquet.ParquetFile`` wraps (its footer read),
    without importing ``pyarrow.parquet`` (and ``pyarrow.fs`` with it: about 50 M instructions of a call's start).

    Its file reads and decoded arrays come from the C library's malloc (``pyarrow.system_memory_pool()``), never
    from pyarrow's default pool (mimalloc): the first allocation from that pool sets up its arenas, about 4 MB
    resident for the rest of the process (1x Mooncake, default replay: 22 B per distinct block of the peak), and
    the decoded columns it frees stay out of reach of numpy's and the engines' malloc (10x Mooncake, default
    replay: median peak 283 -> 230 MB).
    ``pre_buffer`` off (``ParquetFile`` turns it on): a local file's column chunks are read as the pages are
    decoded, on the calling thread, instead of by pyarrow's I/O thread into a read cache (same bytes decoded;
    1x Mooncake, default replay: 2.5 MB less peak memory). ``metadata``: the file's footer as read before
    (:class:`Opened`), not read again.

    Raises:
        InputError: not a readable Parquet file (naming the file and pyarrow's reason).
    """
    pa = held_import("pyarrow")
    ParquetReader = held_import("pyarrow._parquet").ParquetReader
    from pcs.outfile import arrow_file

    pool = pa.system_memory_pool()
    try:
        reader = ParquetReader(memory_pool=pool)
        source = arrow_file(path, "r", memory_pool=pool)     # by its bytes: a name need not be UTF-8
        try:
            reader.open(source, pre_buffer=False, arrow_extensions_enabled=True, metadata=metadata)
        except TypeError:      # an older pyarrow has no such option (nor had its ParquetFile)
            reader.open(source, pre_buffer=False, metadata=metadata)
        return reader
    except (pa.ArrowException, OSError) as exc:
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(name, None, None, f"not a readable Parquet file ({why})") from None


def parquet_rows(path, name: str) -> int:
    """Rows of a Parquet file (from its footer)."""
    return _open(path, name).metadata.num_rows


def expected_block_hashes(source) -> int:
    """Block hashes of a decoded trace, or of an unsorted Parquet trace from its footer; 0 when unknown.

    A size hint only (the compiled scans size their id tables once with it
    instead of growing them by doubling, each doubling rehashing every key).
    """
    known = getattr(source, "num_block_hashes", None)
    if known is not None:
        return int(known)
    if getattr(source, "format", None) != "parquet" or getattr(source, "sort", False):
        return 0
    footer = getattr(source, "parquet_block_hashes", None)     # counted when the trace was opened
    if footer is not None:
        return footer
    try:
        return footer_block_hashes(_open(source.path, source.path))
    except InputError:  # not readable now: the read names the problem; a hint only
        return 0


#: The largest footer count taken as a size hint (:func:`footer_block_hashes`, :func:`footer_rows`): 2**40 ids (8 TB
#: of ids). A footer is the file's own say: a count past this, or below 0, is no real trace's (a file edited or
#: written wrong), and sizing tables by it failed outside pcs's errors (an id arena of 2**62 ids refused with a
#: TypeError, a sum past 2**63 an OverflowError); such a count is "not known", and the tables grow by themselves.
FOOTER_HINT_MAX = 1 << 40


def _plausible(count: int) -> bool:
    return 0 <= count <= FOOTER_HINT_MAX


def footer_block_hashes(pf) -> int:
    """Block hashes of a Parquet trace as its footer counts them (the values of the ``block_hashes`` leaf over
    every row group; ``pf``: the file opened, :func:`open_parquet`); 0 when the footer cannot say (no such
    column, a footer pyarrow cannot walk, a row group's count or the sum outside 0 .. :data:`FOOTER_HINT_MAX`).
    No data is read; a size hint only (:func:`expected_block_hashes`)."""
    try:
        md = pf.metadata
        cols = [j for j in range(md.num_columns) if md.schema.column(j).path.startswith("block_hashes.")]
        counts = [int(md.row_group(g).column(cols[0]).num_values) for g in range(md.num_row_groups)] if cols else []
    except Exception:  # a hint only: the tables grow by themselves
        return 0
    total = sum(counts)
    return total if all(map(_plausible, counts)) and _plausible(total) else 0


def footer_rows(pf) -> int | None:
    """Rows of a Parquet trace as its footer counts them (``pf``: the file opened, :func:`open_parquet`); None when
    the footer cannot say (or says a count outside 0 .. :data:`FOOTER_HINT_MAX`). No data is read; a size hint
    only (:func:`pcs.engine.chunks.table_entries_bound`)."""
    try:
        rows = int(pf.metadata.num_rows)
    except Exception:  # a hint only: the tables grow by themselves
        return None
    return rows if _plausible(rows) else None


def parquet_block_size(path, name: str, pf=None, schema=None) -> int:
    """The block size stored in a pcs Parquet trace's metadata.

    ``pcs.block_size`` takes the range of ``--block-size``: ASCII decimal digits of an integer in
    [1, :data:`pcs.trace.request.MAX_BLOCK_SIZE`] (``int()`` would also take ``' 512'``, ``'5_12'`` and
    full-width digits).

    ``pf``: the file already open (:func:`open_parquet`), else ``path`` is opened; ``schema``: its
    ``schema_arrow`` already made, else made here (once: each read of the property builds a new one).

    Raises:
        InputError: not Parquet, not schema ``pcs-trace/1``, missing columns, a ``pcs.*`` value that is
            not UTF-8, or a block size out of range (naming the file and the metadata key).
    """
    pf = pf if pf is not None else _open(path, name)
    arrow = schema if schema is not None else pf.schema_arrow
    stored = _meta_text(pf, "pcs.schema", name, arrow)
    if stored != SCHEMA_NAME:
        raise InputError(name, None, "pcs.schema", f"metadata must be {shown_repr(SCHEMA_NAME)}, got {_shown(stored)}"
                         " (write Parquet traces with `pcs trace convert`)")
    names = arrow.names
    missing = [c for c in _REQUIRED if c not in names]
    if missing:
        raise InputError(name, None, missing[0], "missing column")
    text = _meta_text(pf, "pcs.block_size", name, arrow)
    digits = text is not None and re.fullmatch(r"[0-9]{1,8}", text) is not None
    if not digits or not 1 <= int(text) <= MAX_BLOCK_SIZE:
        raise InputError(name, None, "pcs.block_size", f"metadata must be an integer of tokens in "
                         f"[1, {MAX_BLOCK_SIZE}] (the block_size= range), got {_shown(text)}")
    return int(text)


def _shown(text: str | None) -> str:
    """A metadata value for a message: its repr, or that the key is missing."""
    return "no such key" if text is None else quoted(text, show=repr)


def _type_rules():
    """column -> (Arrow type test, what the column must hold): the canonical schema's types, checked on read."""
    pt = held_import("pyarrow.types")

    def ints(t) -> bool:
        return pt.is_integer(t)

    def strings(t) -> bool:
        return pt.is_string(t) or pt.is_large_string(t) or (pt.is_dictionary(t) and pt.is_string(t.value_type))

    def id_lists(t) -> bool:
        return (pt.is_list(t) or pt.is_large_list(t)) and pt.is_integer(t.value_type)

    rules = {"arrival_s": (lambda t: pt.is_floating(t) or pt.is_integer(t), "numbers (float64)"),
             "prompt_tokens": (ints, "integers (int64)"), "output_tokens": (ints, "integers (int64)"),
             "block_hashes": (id_lists, "lists of integer ids (list<uint64>)"), "type": (strings, "strings")}
    rules.update({k: (ints, "integers (int64)") for k in _OPTIONAL})
    return rules


def check_column_types(schema, name: str) -> None:
    """Each canonical column present has its schema type, as JSONL demands of each field (a float
    ``prompt_tokens`` of 6758.7 is an error, never cut to 6758; a bool is not an integer).

    Raises:
        InputError: naming the column, the type it must have and the type it has; a column pcs reads
            appears more than once (pyarrow writes such files; which one to read would be a guess).
    """
    names = schema.names        # a new list at each read of the property
    for col, (ok, want) in _type_rules().items():
        if names.count(col) > 1:
            raise InputError(name, None, col, f"column appears {names.count(col)} times; "
                                              "a trace holds each column once")
        if col in names and not ok(schema.field(col).type):
            raise InputError(name, None, col, f"column must hold {want}, got {schema.field(col).type}")


_I64_MAX = 2**63 - 1


def _column_ints(arr, col: str, name: str, row0: int) -> np.ndarray:
    """An integer column (``arr``, the Arrow array of column ``col``) as int64; an unsigned value above 2^63 - 1 is
    an error (JSONL's bound), never wrapped."""
    a = arr.to_numpy(zero_copy_only=False)
    if a.dtype.kind == "u" and a.size and a.max() > _I64_MAX:
        raise InputError(name, row0 + int(np.argmax(a > _I64_MAX)), col, f"must be <= {_I64_MAX}, got {int(a.max())}")
    return a.astype(np.int64, copy=False) if a.dtype.kind in "iu" else a  # nulls (optional columns): as read


def _column_ids(ids, name: str, row0: int, offs: np.ndarray) -> np.ndarray:
    """The batch's block hashes (``ids``: the Arrow values its lists span, :func:`_list_values`) as uint64; a
    negative id is an error (ids are unsigned 64-bit), never wrapped."""
    flat = ids.to_numpy(zero_copy_only=False)
    if flat.dtype.kind == "i" and flat.size and flat.min() < 0:
        at = int(np.argmax(flat < 0))
        row = int(np.searchsorted(offs, at, side="right")) - 1
        raise InputError(name, row0 + row, "block_hashes", f"element {at - int(offs[row])} = {int(flat[at])} does not "
                         "fit an unsigned 64-bit id")       # the JSONL readers' words (pcs.trace.hashids)
    # int64 ids checked >= 0 (above): the same bits as uint64, so a view, not a copy (astype copied 8 B an id)
    return flat.view(np.uint64) if flat.dtype == np.int64 else flat.astype(np.uint64, copy=False)


def _list_values(lists, offs: np.ndarray):
    """The values of a list column's rows (``offs``: its offsets as read, before rebasing to 0): what
    ``ListArray.flatten()`` gives when no list is null, without the import of ``pyarrow.compute`` that
    ``flatten()`` makes on its first call (about 200 M instructions and 9 MB resident at a call's start)."""
    return lists.values.slice(int(offs[0]), int(offs[-1] - offs[0]))


def _far_arrival(ts: np.ndarray) -> str:
    """The arrival-clock problem of the first finite arrival beyond +-MAX_ARRIVAL_S (the JSONL readers' words)."""
    far = np.isfinite(ts) & (np.abs(ts) > MAX_ARRIVAL_S)
    return arrival_error(float(ts[np.argmax(far)])) or "" if far.any() else ""


def _repeats(hashes: np.ndarray, offs: np.ndarray, twin=None) -> np.ndarray:
    """Per row, whether an id repeats inside it (bool (n,)); one pass over the ids only when
    :func:`pcs.trace.jsonfast.rows_distinct` finds a repeat (``twin``: its compiled shortcut, or None)."""
    from pcs.trace.jsonfast import rows_distinct

    n = offs.size - 1
    if rows_distinct(hashes, offs, twin):
        return np.zeros(n, dtype=bool)
    return np.array([np.unique(hashes[offs[i]:offs[i + 1]]).size != offs[i + 1] - offs[i] for i in range(n)],
                    dtype=bool)


def _clean(twin, ts: np.ndarray, il: np.ndarray, ol: np.ndarray, offs: np.ndarray, hashes: np.ndarray, bs: int,
           state) -> bool:
    """Whether no row breaks a rule of :func:`_bad_rows`, from the compiled checks (``twin``:
    :func:`pcs.trace.jsonfast.check_twin`; None: False, so the masks are made): every arrival finite and within
    +-MAX_ARRIVAL_S, the token counts >= 0, the output lengths below the run's bound (``state.limits``), each row's
    id count their blocks, no id repeated in a row (the rising
    shortcut only) and, when the order is checked, no arrival below the one before it or ``state.last_ts``. True
    only when every mask of :func:`_bad_rows` would be empty; anything else makes the masks, which name the row."""
    if twin is None:
        return False
    ok, ordered, _, far = twin.row_checks(ts, il, ol, offs, bs, 1.0, None, state.limits.output_below)
    if not ok or far > MAX_ARRIVAL_S or (state.check_order and ts.size and (ts[0] < state.last_ts or not ordered)):
        return False
    return hashes.size < 2 or twin.rows_rise(hashes, offs)


def _bad_rows(ts: np.ndarray, il: np.ndarray, ol: np.ndarray, lens: np.ndarray, bs: int,
              prev_ts: float, check_order: bool, dup: np.ndarray,
              limits: RowLimits = NO_LIMITS) -> list[tuple[np.ndarray, str, Any]]:
    """(mask, field, problem) for each vectorised rule, in the order the JSONL authority checks a line
    (pcs/trace/hashids.py ``_slow_line``: the arrival, the token counts, the ids -- their number, then a
    repeat (``dup``, :func:`_repeats`) --, then the order); ``problem(i)`` is the message of row ``i`` with
    its values (the value, length vs expected, the two arrival times), as the JSONL readers quote them.
    ``limits``: the run's bounds (:mod:`pcs.trace.rowlimits`): an output length at or past ``output_below``.

    The order rule compares a row with the rows before it that break no other rule, as the authority's
    ``last_ts`` holds only lines it took (a skipped row never raises the bar), so the masks do not depend on
    where the batches are cut (``prev_ts``: the last batch's latest arrival)."""
    want = ceil_blocks(il, bs)
    with np.errstate(invalid="ignore"):
        rules = [(~np.isfinite(ts), "arrival_s", lambda i: f"must be finite, got {ts[i]}"),
                 (np.abs(ts) > MAX_ARRIVAL_S, "arrival_s", lambda i: _far_arrival(ts)),
                 (il < 0, "prompt_tokens", lambda i: f"must be >= 0, got {il[i]}"),
                 (ol < 0, "output_tokens", lambda i: f"must be >= 0, got {ol[i]}"),
                 ((ol >= 0) & (ol.view(np.uint64) >= np.uint64(limits.output_below)), "output_tokens",
                  lambda i: limits.output_problem(int(ol[i]))),
                 (lens != want, "block_hashes",
                  lambda i: f"has {format_counted(lens[i], 'id')} but ceil({il[i]:,} / block size {bs:,}) = "
                            f"{want[i]:,}"),
                 (dup, "block_hashes", None)]          # the repeated id: _first_bad, which has the ids
        if check_order:
            other = np.logical_or.reduce([m for m, _, _ in rules])
            run = np.maximum.accumulate(np.where(other, -np.inf, ts))
            prev = np.maximum(np.concatenate(([prev_ts], run[:-1])), prev_ts)
            rules.append(((ts < prev) & ~other, "arrival_s",
                          lambda i: f"decreases ({ts[i]:g} after {prev[i]:g}); use sort= to reorder"))
    return rules


def _first_bad(rules: list[tuple[np.ndarray, str, Any]], hashes: np.ndarray,
               offs: np.ndarray) -> tuple[int, str, str] | None:
    """(0-based row, field, problem) of the earliest row that breaks a rule of :func:`_bad_rows` -- at that row
    the first rule in their order, as the authority reads a file line by line -- or None. A repeat names the
    id and its two positions in the row (``hashes``, ``offs``: the batch's ids and row offsets)."""
    found = [(int(np.argmax(mask)), k) for k, (mask, _, _) in enumerate(rules) if mask.any()]
    if not found:
        return None
    return _bad_row(rules, *min(found), hashes, offs)


def _bad_row(rules: list[tuple[np.ndarray, str, Any]], row: int, k: int, hashes: np.ndarray,
             offs: np.ndarray) -> tuple[int, str, str]:
    """(0-based row, field, problem) of 0-based ``row`` broken by rule ``k`` of ``rules`` (:func:`_first_bad`)."""
    problem = rules[k][2]
    return row, rules[k][1], problem(row) if problem is not None else _repeat_message(hashes[offs[row]:offs[row + 1]])


def _first_bads(rules: list[tuple[np.ndarray, str, Any]], bad: np.ndarray, n: int, hashes: np.ndarray,
                offs: np.ndarray) -> list[tuple[int, str, str]]:
    """(0-based row, field, problem) of the first ``n`` rows of the batch that break a rule (``bad``: bool (rows,),
    the rules' masks or-ed), each named as :func:`_first_bad` names the earliest: by the first rule it breaks."""
    return [_bad_row(rules, row, next(k for k, (m, _, _) in enumerate(rules) if m[row]), hashes, offs)
            for row in np.flatnonzero(bad)[:n].tolist()]


def _repeat_message(ids: np.ndarray) -> str:
    """``id X repeated at positions i and j`` (as the JSONL readers say): the first id seen twice in one row."""
    first: dict[int, int] = {}
    for j, h in enumerate(ids.tolist()):
        if h in first:
            return f"id {h} repeated at positions {first[h]} and {j}"
        first[h] = j
    return "an id repeats inside one request"


def _optional_columns(names: list, name: str) -> list:
    """The session columns to read: none, ``session_id`` alone, or with ``parent_id`` and/or ``turn``.

    Raises:
        InputError: ``parent_id`` or ``turn`` without ``session_id`` (a parent or turn of no session).
    """
    present = [k for k in _OPTIONAL if k in names]
    if present and "session_id" not in present:
        raise InputError(name, None, present[0], "needs a session_id column (session_id alone, or with "
                                                 "parent_id and turn)")
    return present


def _record_batches(pf, name: str, rows: int, cols: list) -> Iterator:
    """The columns ``cols`` of ``pf`` (:func:`_open`) in record batches of ``rows``, whose read errors (a corrupt or
    truncated data page) name the file.

    Raises:
        InputError: pyarrow could not read or decompress a page (``name: unreadable Parquet data ...``); the rows
            read differ from the rows the footer counts (a column chunk's value count edited or written wrong:
            pyarrow then yields fewer rows, none for a count of 0, without an error of its own); a row group counts
            other rows than its flat column holds values (:func:`_group_rows`).
    """
    pa = held_import("pyarrow")

    # every leaf of each column, as ParquetFile.iter_batches picks them (a list column is one leaf deep)
    leaves = [j for c in cols for j, p in enumerate(pf.column_paths) if p[0] == c]
    # use_threads=False: pyarrow's own pool decoded the columns of a batch at once on the same two cores the
    # read-ahead and the scan already use (more CPU for the switches, no wall gained: docs/performance.md)
    it = pf.iter_batches(rows, row_groups=range(pf.num_row_groups), column_indices=leaves, use_threads=False)
    read = 0
    while True:
        try:
            rb = next(it)
        except StopIteration:
            break
        except (pa.ArrowException, OSError) as exc:
            raise InputError(name, None, None, f"unreadable Parquet data, the file is corrupt or truncated "
                             f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
        read += rb.num_rows
        yield rb
    md = pf.metadata
    in_groups, lying = _group_rows(pf, leaves)
    if read != md.num_rows or read != in_groups:    # either count edited: pyarrow reads what the other allows
        groups = "" if in_groups == md.num_rows else f" ({format_count(in_groups)} in its row groups)"
        raise InputError(name, None, None, f"unreadable Parquet data, the file is corrupt: its footer counts "
                         f"{format_counted(md.num_rows, 'row')}{groups}, its column chunks gave "
                         f"{format_count(read)}")
    if lying is not None:
        g, rows, column, values = lying
        raise InputError(name, None, None, f"unreadable Parquet data, the file is corrupt: its row group {g} counts "
                         f"{format_counted(rows, 'row')}, its column {column} holds {format_counted(values, 'value')}")


def _group_rows(pf, leaves: list[int]) -> tuple[int, tuple | None]:
    """The rows ``pf``'s row groups count, and the first row group whose count is not the values of its first flat
    column's chunk among ``leaves`` (a column of one value a row, nulls included: the Parquet format's
    ``ColumnMetaData.num_values``) as ``(group, rows, column name, values)``, or None. A file whose counts were all
    edited to agree with each other reads as fewer rows than it holds, pyarrow taking a row group's count over its
    chunks' (a 120,310-row file with its file count and one row group's count lowered read as 70,000 rows,
    silently); one pass over the row groups for both."""
    flat = next((j for j in leaves if len(pf.column_paths[j]) == 1), None)
    md, total, lying = pf.metadata, 0, None
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        total += rg.num_rows
        if lying is None and flat is not None and rg.column(flat).num_values != rg.num_rows:
            lying = (g, rg.num_rows, pf.column_paths[flat][0], rg.column(flat).num_values)
    return total, lying


def _first_null_row(col) -> int:
    """The 0-based row of the first null in ``col``: a null value, or for a list column a null list or
    a null id inside a list (the id's row, found from the list offsets)."""
    rows = np.flatnonzero(np.asarray(col.is_null()))
    first = int(rows[0]) if rows.size else len(col)
    if hasattr(col, "offsets"):
        offs = col.offsets.to_numpy().astype(np.int64)
        ids = np.flatnonzero(np.asarray(col.flatten().is_null()))
        if ids.size:
            first = min(first, int(np.searchsorted(offs - offs[0], ids[0], side="right")) - 1)
    return first


def _opened_reader(path, name: str, opened: "Opened | None") -> tuple:
    """``path`` opened for :func:`read_parquet`: (reader, its schema, its block hashes or None: not counted yet) --
    with ``opened``'s footer while the file's stamp is unchanged (:class:`Opened`), else with its footer read here.

    Raises:
        InputError: not a readable Parquet file (naming the file and pyarrow's reason)."""
    if opened is not None and opened.stamp == file_stamp(path):
        return _open(path, name, opened.metadata), opened.schema, opened.block_hashes
    pf = _open(path, name)
    return pf, pf.schema_arrow, None


def read_parquet(path, name: str, block_size: int, state, on_error: str = "raise",
                 rows: int | None = None, *, side_by_side: bool = False,
                 each_piece: Callable[..., None] | None = None,
                 opened: "Opened | None" = None) -> Iterator[RequestBatch]:
    """Stream a canonical Parquet trace in record batches of ``rows`` (pyarrow's reader class, :func:`_open`).

    ``rows``: None for the size that suits the caller: :data:`READ_ROWS` with ``side_by_side`` (a caller that
    keeps every batch and joins consecutive ones, :class:`pcs.engine.decoded.Decoded`), else :data:`STREAM_ROWS`.
    With ``side_by_side`` pyarrow decodes pieces (:func:`_piece_rows`), joined into the batches, and
    the ids of every batch lie side by side in one buffer when the compiled twin is built (:class:`_IdRoom`: the
    caller's joins are views). The batches' rows, checks and errors are the same in any size
    (``tests/trace/test_parquet_batches.py``); a null, a negative id or an unsigned value beyond int64 is found
    piece by piece (a streamed read's batch), the first in column order within a piece.

    The session columns are optional: ``session_id`` alone, or with ``parent_id`` and ``turn``; a null in
    any column read is an error naming the row and the column. The first whole ``side_by_side`` read on a worker
    thread hands the C library's free memory back once it ends (:func:`_give_back_once`).

    ``each_piece``: with ``side_by_side``, called with each piece's columns as pyarrow's piece is decoded, in row
    order, before the piece joins its batch and before that batch's value checks (:func:`_pieces_seen`): the next-turn
    walk of a one-batch read begun on its first rows (:class:`pcs.engine.decoded.Decoded`). Unchecked rows: with
    ``on_error="raise"`` they are the batches' rows when the read raises nothing; a row a check refuses raises here
    as without it (the caller drops what it made of them); with ``"skip"`` a batch may hold fewer rows.

    ``opened``: ``path``'s footer as :func:`pcs.trace.open_trace` read it (:class:`Opened`: its metadata, schema and
    block hashes), used instead of reading it again while the file's stamp is unchanged; None (or a stamp changed):
    ``path``'s footer is read here.

    Raises:
        InputError: null values or a rule broken, naming the 1-based row; parent_id/turn without session_id.
    """
    from pcs.trace.jsonfast import check_twin

    rows = rows or (READ_ROWS if side_by_side else STREAM_ROWS)
    pf, schema, known = _opened_reader(path, name, opened)
    names = schema.names
    check_column_types(schema, name)
    optional = _optional_columns(names, name)
    typed = bool(optional) and "type" in names
    cols = list(_REQUIRED) + optional + (["type"] if typed else [])
    twin = check_twin()
    room = _IdRoom(twin, known if known is not None else footer_block_hashes(pf)) if side_by_side else None
    piece_rows = _piece_rows(rows, pf.metadata) if side_by_side else rows
    pieces = _pieces(_record_batches(pf, name, piece_rows, cols), name, optional, typed, room)
    if side_by_side and each_piece is not None:
        pieces = _pieces_seen(pieces, block_size, each_piece)
    row0 = 1
    for c in _joined_pieces(pieces, rows, piece_rows):
        batch = _checked(c, name, row0, block_size, state, on_error, twin)
        if len(batch):
            state.last_ts = max(state.last_ts, float(batch.arrival_s.max()))
            yield batch
        row0 += len(c.ts)
    if side_by_side:
        _give_back_once()


#: Whether this process has handed the C library's free memory back after a ``side_by_side`` read
#: (:func:`_give_back_once`).
_given_back = False


def _give_back_once() -> None:
    """Once a process, at the end of its first whole ``side_by_side`` read made on a thread other than the main one (a
    replay's decode pass with threads: a reader worker of its own): the C library's free memory handed back to the
    system (:func:`_release_heap`). A one-batch trace read on the calling thread with threads on
    (:func:`pcs.engine.decoded.one_read_batch`, 1x Mooncake) is not trimmed either: its peak measured within 2 B per
    distinct id of the reader worker's, trimmed or not (docs/performance.md, "The 1x Parquet read on the calling
    thread").

    Why: pyarrow decodes into the C library's malloc (:func:`_open`) on the reader's thread, and the buffers it frees
    stay in that thread's malloc arena, where no other thread allocates until a later thread takes the arena over:
    at 1x Mooncake 1.6 MB of the arena's 2.0 MB, free and resident through the replay's peak (docs/performance.md,
    "The 1x Parquet peak: what is alive, the reader's arena handed back once"). Once only: the trim hands back the
    free pages of every arena, the calling thread's included, which the process then faults in again as it
    allocates -- a few hundred pages at a process's first replay, but after it the heaps hold the memory each later
    replay reuses (a 1x Mooncake call trimmed every time took 2,120 page faults and 4 ms of system time more)."""
    global _given_back
    import threading

    if _given_back or threading.current_thread() is threading.main_thread():
        return     # done before; or read inline (threads off), where the calling thread's own malloc reuses them
    _given_back = True
    _release_heap()


def _release_heap() -> None:
    """The free memory of the C library's malloc handed back to the system: glibc's ``malloc_trim(0)`` (the free
    pages of every arena, the main one's top included); nothing where the C library has no such call (musl, macOS,
    Windows). Not ``pyarrow.system_memory_pool().release_unused()``: pyarrow 26's system pool hands nothing back."""
    import ctypes

    try:
        trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
    except (OSError, TypeError):       # no handle on the process's own symbols (Windows)
        return
    if trim is not None:
        trim(0)


def _piece_rows(rows: int, md) -> int:
    """Rows of a ``side_by_side`` read's pieces (``md``: the file's footer, ``FileMetaData``): about a
    :data:`PIECES` th of its rows, cut so that its first row group holds a whole number of pieces -- pyarrow reads
    a row group's column chunks whole, so a piece across a boundary holds two groups' chunks at once, and
    ``pcs trace convert`` writes groups of one size, the last one shorter --, at least :data:`PIECE_ROWS`, at
    most the batch's ``rows``."""
    if md.num_rows < 1 or md.num_row_groups < 1:
        return rows
    first = md.row_group(0).num_rows
    per_group = max(1, round(PIECES * first / md.num_rows))
    return min(rows, max(PIECE_ROWS, -(-first // per_group)))


class _Columns(NamedTuple):
    """One batch's columns as read (a piece, or consecutive pieces joined): arrival float64 (n,), prompt and output
    tokens int64 (n,), block offsets int64 (n + 1,) from 0, block hashes uint64, the :data:`_OPTIONAL` columns
    (int64 (n,) or None each), the ``type`` strings (a tuple, or None)."""
    ts: np.ndarray
    il: np.ndarray
    ol: np.ndarray
    offs: np.ndarray
    hashes: np.ndarray
    extras: list
    typ: tuple | None


def _checked(c: _Columns, name: str, row0: int, block_size: int, state, on_error: str, twin) -> RequestBatch:
    """The batch of ``c`` (rows from 1-based ``row0``) after the value checks (:func:`_clean`, else
    :func:`_bad_rows`): ``on_error="skip"`` drops the bad rows (counted in ``state.skipped``).

    Raises:
        InputError: the first bad row (:func:`_first_bad`), unless ``on_error="skip"``."""
    ts, il, ol, offs, hashes = c.ts, c.il, c.ol, c.offs, c.hashes
    rules = None if _clean(twin, ts, il, ol, offs, hashes, block_size, state) else _bad_rows(
        ts, il, ol, np.diff(offs), block_size, state.last_ts, state.check_order, _repeats(hashes, offs, twin),
        state.limits)
    if on_error != "skip" and rules is not None:      # no bad row found: every row is kept
        bad = _first_bad(rules, hashes, offs)
        if bad is not None:
            raise InputError(name, row0 + bad[0], bad[1], bad[2])
    batch = RequestBatch(0, block_size, ts, il, ol, offs, hashes, *c.extras, c.typ)
    if on_error == "skip" and rules is not None:
        bad = np.logical_or.reduce([m for m, _, _ in rules])
        if bad.any():
            n = max(SKIPPED_NAMED - len(state.named), state.first_skipped is None)   # the rows a note names
            named = tuple(InputError(name, row0 + r, f, p) for r, f, p in _first_bads(rules, bad, n, hashes, offs))
            state.skip(named[0] if named else None, int(bad.sum()), named)
            batch = _select(batch, ~bad)
    return batch


def _pieces(record_batches: Iterator, name: str, optional: list, typed: bool, room) -> Iterator[_Columns]:
    """The columns of each record batch (:func:`_record_batches`), its nulls and ids checked; with ``room``
    (:class:`_IdRoom`) the ids copied into it, so pyarrow's buffers of the piece are freed once it is read.

    Raises:
        InputError: a null in a column read, a negative id, an unsigned value above 2**63 - 1 (the 1-based row)."""
    row0 = 1
    for rb in record_batches:
        col = {k: rb.column(k) for k in list(_REQUIRED) + optional}    # each Arrow array made once
        lists = col["block_hashes"]
        offs = lists.offsets.to_numpy().astype(np.int64)
        ids = _list_values(lists, offs)
        for k, arr in col.items():
            if arr.null_count or (k == "block_hashes" and ids.null_count):
                raise InputError(name, row0 + _first_null_row(arr), k, "null value")
        offs -= offs[0]
        hashes = _column_ids(ids, name, row0, offs)
        # + 0.0: a stored -0.0 is the arrival 0.0, as in the JSONL readers (docs/semantics.md, the arrival clock)
        yield _Columns(col["arrival_s"].to_numpy(zero_copy_only=False).astype(np.float64, copy=False) + 0.0,
                       _column_ints(col["prompt_tokens"], "prompt_tokens", name, row0),
                       _column_ints(col["output_tokens"], "output_tokens", name, row0),
                       offs, hashes if room is None else room.put(hashes),
                       [_column_ints(col[k], k, name, row0) if k in optional else None for k in _OPTIONAL],
                       tuple(rb.column("type").to_pylist()) if typed else None)
        row0 += rb.num_rows


def _pieces_seen(pieces: Iterator[_Columns], block_size: int, each_piece: Callable[..., None]) -> Iterator[_Columns]:
    """``pieces``, each handed to ``each_piece(block_size, offsets, ids, prompt, output)`` (int, int64 (n + 1,) from 0,
    uint64, int64 (n,), int64 (n,); read-only for the callee, which may keep them) before it is yielded."""
    for p in pieces:
        each_piece(block_size, p.offs, p.hashes, p.il, p.ol)
        yield p


def _joined_pieces(pieces: Iterator[_Columns], rows: int, piece_rows: int) -> Iterator[_Columns]:
    """Consecutive ``pieces`` (of at most ``piece_rows`` rows each) joined into batches of at most ``rows`` rows,
    each yielded once no further piece could join it -- before the next piece is read, so a piece's error never
    comes before the checks of the batch ahead of it; a piece is never cut. The ids are a view when they lie side
    by side (:func:`pcs.trace.request.join_hashes`), the other columns copied."""
    group: list = []
    n = 0
    for p in pieces:
        group.append(p)
        n += len(p.ts)
        if n + piece_rows > rows:
            yield _join(group)
            group, n = [], 0
    if group:
        yield _join(group)


def _join(group: list) -> _Columns:
    """The pieces of ``group`` as one :class:`_Columns` (one piece: itself)."""
    if len(group) == 1:
        return group[0]
    offs = np.zeros(sum(len(p.ts) for p in group) + 1, dtype=np.int64)
    np.cumsum(np.concatenate([np.diff(p.offs) for p in group]), out=offs[1:])

    def cat(xs: list):
        return None if xs[0] is None else np.concatenate(xs)

    return _Columns(*(np.concatenate([getattr(p, k) for p in group]) for k in ("ts", "il", "ol")), offs,
                    join_hashes([p.hashes for p in group]),
                    [cat([p.extras[j] for p in group]) for j in range(len(_OPTIONAL))],
                    None if group[0].typ is None else sum((p.typ for p in group), ()))


#: The ids' arena on transparent huge pages (from 4 MB: ``Arena(..., huge_pages=True)``, pcs/trace/_jsonrows.cpp
#: ``arena_alloc``): the read fills it to the end, and a page fault per 2 MB instead of per 4 KB cut the 10x
#: Mooncake read's copy into it (docs/performance.md, "The Parquet read ahead of the walk" (2026-12-05)).
HUGE_ARENA = True


class _IdRoom:
    """The ids of a read's pieces, one piece after the other, in id arenas of the compiled twin
    (pcs/trace/_jsonrows.cpp ``Arena.append``): each piece's ids are a read-only view of an arena, the views of
    consecutive pieces lie side by side, so joining them -- into a batch (:func:`_join`) or the caller's batches
    (:func:`pcs.trace.request.concat_batches`) -- copies nothing. The first arena holds the ids the footer counts
    (:func:`footer_block_hashes`; its pages untouched by fewer ids are never resident); ids beyond it start a new
    one. Without the twin (``twin`` None) or the memory for an arena, a piece keeps its own buffer."""

    def __init__(self, twin, ids: int) -> None:
        self._arena_type = getattr(twin, "Arena", None)
        self._arena = None
        self._left = ids      # the footer's ids not yet placed: the size of an arena made for them

    def put(self, ids: np.ndarray) -> np.ndarray:
        """``ids`` (uint64) as a read-only view of an arena, after the ids put before; ``ids`` itself when no
        arena can take them."""
        if self._arena_type is None:
            return ids
        at = -1 if self._arena is None else self._arena.append(ids)
        if at < 0:
            try:
                self._arena = self._arena_type(max(ids.size, self._left, 1), huge_pages=HUGE_ARENA)
            except MemoryError:
                self._arena_type = None
                return ids
            at = self._arena.append(ids)
        self._left -= ids.size
        return np.frombuffer(self._arena, dtype=np.uint64, count=ids.size, offset=8 * at)


def _select(b: RequestBatch, keep: np.ndarray) -> RequestBatch:
    """Rows of ``b`` where ``keep`` is True."""
    lens = np.diff(b.block_offsets)
    offs = np.concatenate(([0], np.cumsum(lens[keep]))).astype(np.int64)
    hmask = np.repeat(keep, lens)
    pick = (lambda a: None if a is None else a[keep])  # noqa: E731
    typ = None if b.type is None else tuple(t for t, k in zip(b.type, keep.tolist()) if k)
    return RequestBatch(b.first_request_id, b.block_size, b.arrival_s[keep], b.prompt_tokens[keep],
                        b.output_tokens[keep], offs, b.block_hashes[hmask],
                        pick(b.session_id), pick(b.parent_id), pick(b.turn), typ,
                        None if b.extra_keys is None else tuple(e for e, k in zip(b.extra_keys, keep.tolist()) if k))
