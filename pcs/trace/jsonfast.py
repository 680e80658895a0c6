"""Shortcut parsers for clean chunks of block-id JSONL (Mooncake, Bailian).

:mod:`pcs.trace.hashids` owns the rules: its line-by-line ``json.loads`` path
is the authority that accepts, rejects and names errors. The parsers here only
turn a chunk that is *entirely* valid into a :class:`RequestBatch` faster, and
return None for anything else (the caller then re-reads the chunk line by
line), so every parser accepts exactly the lines the authority accepts and
yields the same arrays (tests/trace/test_jsonl_fast.py diffs them).

Parsers, fastest first (benchmarks/bench_jsonl_parsers.py on the Mooncake
conversation trace replicated 1x-50x, one thread; docs/performance.md):

- ``native``: the compiled twin ``pcs.trace._jsonrows`` (pcs/trace/_jsonrows.cpp,
  a byte-by-byte fast lane for the common row and simdjson's On-Demand parser for any other line, in C++, one
  document per line, the columns filled in C++ without the GIL and handed over without a copy;
  :func:`native_chunk`; a reader decodes chunk after chunk, :func:`parse_chunks`),
  built when pysimdjson's bundled simdjson sources are
  found at build time; the ``auto | c | python`` switch of :mod:`pcs._native`
  (``PCS_NATIVE``) picks it; figures in docs/performance.md ("The compiled JSONL decoder",
  "The JSONL decode On-Demand" and "The JSONL decode: a fast lane beside simdjson");
- ``simdjson``: pysimdjson (optional extra ``pcs[fast]``), one DOM parse per
  line, the id list copied out as a uint64 buffer (``as_buffer``) without a
  Python int per id; 19-20 M ids per CPU second on a 1 MiB chunk, the whole
  reader 12.5-14.7 M (the per-row Python calls, about 0.65 us a row, are most
  of it: no lookup of an absent key, which costs pysimdjson a C++ exception);
- ``pyarrow``: ``pyarrow.json.read_json`` with an explicit schema on one
  thread; 9-10 M ids per CPU second (pyarrow is a core dependency, so
  this is the fallback when pysimdjson is not installed).

Which lines a shortcut leaves to the authority: blank lines and lines not
starting with ``{`` (checked for the whole chunk at once with numpy), keys
other than the format's own (simdjson) -- so duplicate keys, unknown fields and
deeply nested values always take the authority's path --, lines with any ``{``
or ``[`` but the object's and the id list's (every parser: so any nesting
reaches the authority's depth rule, :mod:`pcs.jsondepth`), any value of
another JSON type, any range, length, order or repeat problem.
"""
from __future__ import annotations

import io
from typing import Any, Iterator

import numpy as np

from pcs._heldimport import held_import
from pcs.trace.batches import MAX_ARRIVAL_S, ceil_blocks
from pcs.trace.pool import Pool
from pcs.trace.request import RequestBatch

#: The values of the optional per-row ``reuse`` field of the JSONL formats (the one definition; hashids imports it).
REUSE_VALUES = ("recorded", "synthetic")

__all__ = ["PARSERS", "available", "clean_lines", "parse_chunk", "parse_chunks", "rows_distinct"]

#: Names of the shortcut parsers, in the order ``auto`` tries them (``native`` only under the native switch).
PARSERS = ("native", "simdjson", "pyarrow")
_I64_MAX = (1 << 63) - 1
_NL, _BRACE, _OPEN = 10, 123, 91  # b"\n", b"{", b"["


def available(parser: str) -> bool:
    """Whether ``parser`` (one of :data:`PARSERS`) can run here (pysimdjson is an optional extra)."""
    if parser == "native":
        from pcs import _native

        return _native.built("jsonrows")
    if parser == "simdjson":
        try:
            import simdjson  # noqa: F401
        except ImportError:
            return False
    return parser in PARSERS


def clean_lines(chunk: bytes) -> int | None:
    """The number of lines of ``chunk`` when every line starts with ``{``, else None.

    A chunk ends with ``\\n`` except possibly the file's last one. One
    vectorised pass: the byte after every ``\\n`` (but the final one) must be
    ``{``, and so must byte 0 -- which rules out blank and whitespace lines.
    """
    if chunk[:1] != b"{":
        return None
    a = np.frombuffer(chunk, dtype=np.uint8)
    nl = np.flatnonzero(a == _NL)
    inner = nl[nl < a.size - 1]
    if inner.size and (a[inner + 1] != _BRACE).any():
        return None
    return int(nl.size) + (not chunk.endswith(b"\n"))


def _count_byte(chunk: bytes, byte: int) -> int:
    """``chunk.count(bytes([byte]))`` with numpy (a quarter of ``bytes.count``'s time)."""
    return int(np.count_nonzero(np.frombuffer(chunk, dtype=np.uint8) == byte))


def _valid_utf8(chunk: bytes) -> bool:
    if chunk.isascii():
        return True
    try:
        chunk.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def rows_distinct(hashes: np.ndarray, offsets: np.ndarray, twin=None) -> bool:
    """True when no id repeats inside one row.

    Shortcut: rows whose ids strictly increase (all of Mooncake's, whose ids
    are assigned in first-appearance order along each chain) are distinct; the
    others are checked by sorting (row, id) keys. ``twin``: the compiled module (:func:`check_twin`), whose
    ``rows_rise`` answers the shortcut in one pass (AVX2: four pairs a compare) instead of numpy's unsigned compare
    of every adjacent pair and its row-boundary fix-up; the same answer (tests/trace/test_jsonrows_checks.py).
    """
    if hashes.size < 2:
        return True
    if twin is not None:
        if twin.rows_rise(hashes, offsets):
            return True
    else:
        inc = hashes[1:] > hashes[:-1]
        starts = offsets[1:-1]
        starts = starts[(starts > 0) & (starts < hashes.size)]
        inc[starts - 1] = True  # row boundaries do not count
        if inc.all():
            return True
    row = np.repeat(np.arange(offsets.size - 1, dtype=np.int64), np.diff(offsets))
    order = np.lexsort((hashes, row))
    h, r = hashes[order], row[order]
    return not ((h[1:] == h[:-1]) & (r[1:] == r[:-1])).any()


def check_twin():
    """The compiled module whose ``row_checks`` and ``rows_rise`` do the readers' value checks
    (pcs/trace/_jsonrows.cpp), or None for numpy's: the ``PCS_NATIVE`` switch (:func:`pcs._native.resolve`)."""
    from pcs import _native

    return _native.module("jsonrows") if _native.resolve(None, "jsonrows") == "c" else None


def lone_surrogate(text: str) -> str | None:
    """The first lone surrogate in ``text`` as its JSON escape (``"\\ud800"``), or None when ``text`` is
    Unicode text (encodes as UTF-8). ``json.loads`` and simdjson accept such escapes (RFC 8259 §8.2: their
    behaviour is unpredictable); UTF-8 (a Parquet string, a tokenizer) cannot hold them."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"\\u{ord(text[exc.start]):04x}"
    return None


def outputs_below(ol: np.ndarray, below: int) -> bool:
    """Whether every output length of ``ol`` (int64 (n,), tokens) is in ``0 .. below - 1`` (``below``: 1 .. 2**63,
    a :class:`pcs.trace.rowlimits.RowLimits` ``output_below``): one compare of the lengths as unsigned, where a
    negative one is 2**63 or more -- numpy's twin of ``row_checks``' ``ol`` rule (pcs/trace/_jsonrows.cpp)."""
    return not ol.size or bool((ol.view(np.uint64) < np.uint64(below)).all())


def _values_checked(spec, bs: int, state, ts: np.ndarray, il: np.ndarray, ol: np.ndarray,
                    offsets: np.ndarray, twin=None) -> tuple[np.ndarray, float] | None:
    """The authority's checks of the scalar columns; the arrivals ``ts / spec.ts_per_s + 0.0`` (float64 (n,),
    seconds) and the largest timestamp (-inf for no row), or None when a row needs the authority: a timestamp not
    finite, a length < 0, an output length at or past the run's bound (``state.limits.output_below``,
    :mod:`pcs.trace.rowlimits`), a row's id count not ``ceil(input_length / bs)``, a timestamp below the one before
    it (or below ``state.last_ts``, when
    ``state.check_order``), an arrival beyond :data:`MAX_ARRIVAL_S`. ``twin``: the compiled module
    (:func:`check_twin`): its ``row_checks`` answers in one pass over the rows what numpy does in about ten,
    with the same answer and arrivals (tests/trace/test_jsonrows_checks.py); ``state`` is not changed."""
    below = state.limits.output_below
    if twin is not None:
        arrival = np.empty(ts.size)
        ok, ordered, ts_max, far = twin.row_checks(ts, il, ol, offsets, bs, float(spec.ts_per_s), arrival, below)
        if not ok or far > MAX_ARRIVAL_S or (ts.size and state.check_order and (ts[0] < state.last_ts or not ordered)):
            return None
        return arrival, ts_max
    lens = np.diff(offsets)
    if (not np.isfinite(ts).all() or (il < 0).any() or not outputs_below(ol, below)
            or (lens != ceil_blocks(il, bs)).any()):
        return None
    if ts.size and state.check_order and (ts[0] < state.last_ts or (np.diff(ts) < 0).any()):
        return None
    if ts.size and np.abs(ts / spec.ts_per_s).max() > MAX_ARRIVAL_S:   # the authority names file:line
        return None
    # + 0.0: pyarrow reads "timestamp": -0 as -0.0 (a float64 column), json.loads as 0; no arrival is -0.0
    return ts / spec.ts_per_s + 0.0, float(ts.max()) if ts.size else -np.inf


def _checked(spec, bs: int, state, ts: np.ndarray, il: np.ndarray, ol: np.ndarray, offsets: np.ndarray,
             hashes: np.ndarray, extras: list, typ, synthetic: int = 0,
             increasing: bool = False, twin=None) -> RequestBatch | None:
    """The authority's value checks, vectorised; the batch, or None when a row needs the authority.

    ``synthetic``: rows of the chunk whose ``reuse`` is ``"synthetic"`` (added to
    ``state.synthetic_rows`` on success, as the authority counts them); ``increasing``: the parser saw every
    row's ids strictly increase (:func:`rows_distinct`'s shortcut, known without a pass over the ids); ``twin``:
    the compiled checks (:func:`check_twin`; None: numpy's), see :func:`_values_checked` and :func:`rows_distinct`."""
    checked = _values_checked(spec, bs, state, ts, il, ol, offsets, twin)
    if checked is None:
        return None
    arrival, ts_max = checked
    if not increasing and not rows_distinct(hashes, offsets, twin):
        return None
    if typ is not None and any(lone_surrogate(t) for t in set(typ) if isinstance(t, str)):
        return None   # the authority names the line
    if len(extras) == 3 and ((extras[2] < 0).any() or ((extras[1] == extras[0]) & (extras[1] != -1)).any()):
        return None   # a Bailian turn < 0 or a row its own parent: hashids.session_problem, by the authority
    state.last_ts = max(state.last_ts, ts_max)
    state.synthetic_rows += synthetic
    return RequestBatch(0, bs, arrival, il, ol, offsets, hashes, *(extras + [None] * (3 - len(extras))), typ)


# -- simdjson ---------------------------------------------------------------------------------------
_parser: Any = None


def _plain_rows(lines: list[bytes], parse, obj_type, ts: list, il: list, ol: list, bufs: list) -> int:
    """The leading lines that hold exactly the four Mooncake keys, appended; returns how many.

    :func:`_simd_rows`'s loop without its per-row branches for extra keys (about 10 % of the row loop);
    the first line with another key count (or not an object) is left to that loop.
    """
    add_ts, add_il, add_ol, add_buf = ts.append, il.append, ol.append, bufs.append
    for i, line in enumerate(lines):
        o = parse(line)
        if type(o) is not obj_type or len(o) != 4:
            return i
        add_ts(o[b"timestamp"])
        add_il(o[b"input_length"])
        add_ol(o[b"output_length"])
        add_buf(o[b"hash_ids"].as_buffer(of_type="u"))  # the exceptions of _simd_rows
        del o  # pysimdjson refuses to parse again while a view of the last document lives
    return len(lines)


def _simd_rows(lines: list[bytes], spec) -> tuple | None:
    """Per line: the fields as Python values and the ids as a uint64 buffer; None on the first odd line.

    Returns:
        (timestamps, input lengths, output lengths, id buffers, ids per row int64 (n,), extras, types,
        reuse values), or None.

    Raises:
        ValueError, TypeError, KeyError, AttributeError: pysimdjson refused a
            line, or a value of another JSON type (the caller returns None).
    """
    import simdjson

    global _parser
    if _parser is None:
        _parser = simdjson.Parser()
    parse, obj_type = _parser.parse, simdjson.Object
    extra_keys = [k.encode() for k, _ in spec.int_extras]  # bytes keys: pysimdjson encodes a str key per lookup
    nkeys, typed = 4 + len(extra_keys), spec.has_type
    ts, il, ol, bufs = [], [], [], []
    add_ts, add_il, add_ol, add_buf = ts.append, il.append, ol.append, bufs.append
    extras: list[list] = [[] for _ in extra_keys]
    types: list = []
    reuse: list = []
    done = _plain_rows(lines, parse, obj_type, ts, il, ol, bufs) if nkeys == 4 and not typed else 0
    for line in (lines[done:] if done else lines):
        o = parse(line)
        if type(o) is not obj_type:
            return None  # not an object: the authority names the line
        extra = len(o) - nkeys
        if extra:  # an optional key; a missing key's lookup raises a (slow) C++ exception, so none when none
            has_reuse = b"reuse" in o
            if extra != (typed and b"type" in o) + has_reuse:
                return None  # unknown, repeated or missing keys: the authority names them
            if has_reuse:
                reuse.append(o[b"reuse"])
        add_ts(o[b"timestamp"])
        add_il(o[b"input_length"])
        add_ol(o[b"output_length"])
        # AttributeError: not an array; TypeError/ValueError: not all uint64 ints (one "[" a line: not nested)
        add_buf(o[b"hash_ids"].as_buffer(of_type="u"))
        if nkeys > 4:
            for acc, k in zip(extras, extra_keys):
                acc.append(o[k])
        if typed:
            types.append(o[b"type"] if extra and b"type" in o else None)
        del o  # pysimdjson refuses to parse again while a view of the last document lives
    lens = np.fromiter((b.size for b in bufs), dtype=np.int64, count=len(bufs)) >> 3  # bytes -> uint64 ids
    return ts, il, ol, bufs, lens, extras, types, reuse


def _only(values: list, kinds: tuple) -> bool:
    return set(map(type, values)) <= set(kinds)


def simdjson_chunk(spec, chunk: bytes, bs: int, state) -> RequestBatch | None:
    """Parse a clean chunk with pysimdjson; None when anything needs the authority (or no pysimdjson)."""
    nlines = clean_lines(chunk)
    if nlines is None or _count_byte(chunk, _OPEN) != nlines or not _valid_utf8(chunk):
        # One "[" per line, the id list's own: ``as_buffer`` flattens nested
        # lists ([[1], 2] -> 1, 2), so any other "[" (even inside a string) goes to the authority.
        return None
    try:
        lines = chunk.split(b"\n")  # only LF ends a line, as for the authority (a bare CR is whitespace)
        if not lines[-1]:
            lines.pop()
        rows = _simd_rows(lines, spec)
    except (ValueError, TypeError, KeyError, AttributeError, RuntimeError):
        return None
    if rows is None:
        return None
    ts, il, ol, bufs, lens, extras, types, reuse = rows
    if not (_only(ts, (int, float)) and _only(il, (int,)) and _only(ol, (int,))
            and all(_only(e, (int,)) for e in extras) and _only(types, (str, type(None)))):
        return None  # bools, strings, nulls where numbers belong
    if not all(type(v) is str and v in REUSE_VALUES for v in reuse):
        return None  # the authority names the line
    try:
        cols = [np.array(ts, dtype=np.float64), np.array(il, dtype=np.int64), np.array(ol, dtype=np.int64)]
        ex = [np.array(e, dtype=np.int64) for e in extras]
    except OverflowError:
        return None  # beyond int64: the authority names the field
    offsets = np.zeros(lens.shape[0] + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    hashes = np.frombuffer(b"".join(bufs), dtype=np.uint64)
    return _checked(spec, bs, state, *cols, offsets, hashes, ex, tuple(types) if spec.has_type else None,
                    reuse.count("synthetic"))


# -- native (pcs.trace._jsonrows) ------------------------------------------------------------------
#: Ids an :func:`arena` holds: 4 Mi ids, 32 MiB of address space, of which only the pages the ids fill become
#: resident. The 10x Mooncake replica's 2.9 M ids fill one, so every joined batch of the replay views it.
ARENA_IDS = 1 << 22


#: The most ids an arena kept past its reader holds: 1 Mi ids, 8 MiB resident at most (an arena's pages are the
#: ones its ids filled). The reuse is for the small calls whose page faults are a visible share of the call: 1x
#: Mooncake fills 288,500 ids (2.2 MiB, 3.6x below the bound); the 10x replica's 2,885,000 ids (22 MiB, about
#: 5,600 faults) are not kept: their faults are a small share of a call ten times as long.
KEPT_ARENA_IDS = 1 << 20

#: The arena a reader gave back last, taken again by a later reader (:func:`arena`) once no reader holds it and no
#: batch views its ids (the Arena's own lease and export count, :mod:`pcs.trace.pool`): its pages are mapped
#: already, where a new arena's ids took a page fault every 512 ids (563 a call at 1x Mooncake, the whole call's
#: minor faults; the three 1 MiB chunks decoded 2.2 ms into a new arena, 1.0 ms into a kept one:
#: docs/performance.md, "The 1x call's decode pass: the next chunk on a thread without the GIL, the id arena
#: kept"). At most one is kept, and only when it holds at most :data:`KEPT_ARENA_IDS` ids and its room is the
#: :data:`ARENA_IDS` asked (not a larger mapping it took: :func:`arena`); :func:`pcs.trace.release_buffers` drops it.
ARENAS = Pool(1, lambda a: a.used <= KEPT_ARENA_IDS and a.capacity <= ARENA_IDS)


def arena(taken: list | None = None):
    """An id arena of the compiled twin (pcs/trace/_jsonrows.cpp's ``Arena``, :data:`ARENA_IDS` ids or more), empty
    and leased to the caller: the kept one (:data:`ARENAS`) when no reader holds it and no batch views it, else a new
    one; None when the twin is not built or the memory is not there (the chunks then get buffers of their own). A new
    one takes the smallest mapping of :data:`ARENA_IDS` ids or more that dead arenas left (``take_larger``; the
    module's pool holds at most 128 MiB: pcs/_kept.h), whatever its size, its room then all of it: when a 50x
    Parquet read and a 50x JSONL read alternate, the JSONL read's ids fill the 115 MB the Parquet read left
    resident, where four new 32 MiB arenas took 27,000 page faults a call (docs/performance.md, "Page faults of the
    50x call").
    ``taken``: a list the arena is appended to, which the reader hands to ``ARENAS.keep`` at its end (its lease
    given back, the arena kept for the next reader within the bound)."""
    from pcs import _native

    got = ARENAS.take()
    if got is None:
        try:
            got = _native.module("jsonrows").Arena(ARENA_IDS, take_larger=True)
        except (MemoryError, AttributeError):
            return None
        got.take()
    if taken is not None:
        taken.append(got)
    return got


def release_arenas() -> int:
    """Drop the kept arena (:data:`ARENAS`); its memory goes once no reader holds it and no batch views it. The
    number dropped."""
    return ARENAS.release()


def native_decode(spec, chunk: bytes, ids_arena=None) -> tuple | None:
    """The compiled twin's columns of ``chunk`` (pcs/trace/_jsonrows.cpp's ``decode``), or None for the authority.

    ``ids_arena``: an :func:`arena` whose room the ids fill when they fit (the tuple's ids are then the index of
    the first in it, see :func:`native_checked`), right after the previous chunk's. Reads only ``chunk`` and
    ``spec`` and releases the GIL while it parses."""
    from pcs import _native

    return _native.module("jsonrows").decode(chunk, tuple(k.encode() for k, _ in spec.int_extras), spec.has_type,
                                             ids_arena)


def native_checked(spec, cols: tuple | None, bs: int, state, ids_arena=None) -> RequestBatch | None:
    """The batch of the twin's columns ``cols`` (:func:`native_decode`, with the same ``ids_arena``) after the
    value checks shared by every shortcut (:func:`_checked`, ``state`` advanced on success); None when anything
    needs the authority."""
    if cols is None:
        return None
    ts, il, ol, offsets, ids, ex, types, synthetic, increasing = cols
    il = np.frombuffer(il, dtype=np.int64)   # the columns are the twin's own buffers: viewed, not copied
    offsets = np.frombuffer(offsets, dtype=np.int64)
    if isinstance(ids, int):   # in the arena, from index ids on
        ids = np.frombuffer(ids_arena, dtype=np.uint64, count=int(offsets[-1]), offset=8 * ids)
    else:
        ids = np.frombuffer(ids, dtype=np.uint64)
    extras = np.frombuffer(ex, dtype=np.int64).reshape(il.size, len(spec.int_extras))
    return _checked(spec, bs, state, np.frombuffer(ts, dtype=np.float64), il,
                    np.frombuffer(ol, dtype=np.int64), offsets, ids,
                    [extras[:, i].copy() for i in range(extras.shape[1])],
                    tuple(types) if spec.has_type else None, synthetic, increasing, _native_module())


def _native_module():
    from pcs import _native

    return _native.module("jsonrows")


def native_chunk(spec, chunk: bytes, bs: int, state, ids_arena=None) -> RequestBatch | None:
    """Decode ``chunk`` with the compiled simdjson twin; None when anything needs the authority.

    The C++ decoder (pcs/trace/_jsonrows.cpp) takes a line only when it holds
    exactly the format's keys with values of the right JSON types and ranges
    (its header lists them) and returns the columns as bytes; the value checks
    shared by every shortcut (:func:`_checked`) then run here, as for the other parsers. ``ids_arena``: as
    :func:`native_decode`.
    """
    return native_checked(spec, native_decode(spec, chunk, ids_arena), bs, state, ids_arena)


# -- pyarrow ----------------------------------------------------------------------------------------
def _schema(spec):
    pa = held_import("pyarrow")

    fields = [("timestamp", pa.float64()), ("input_length", pa.int64()),
              ("output_length", pa.int64()), ("hash_ids", pa.list_(pa.uint64()))]
    fields += [(k, pa.int64()) for k, _ in spec.int_extras]
    if spec.has_type:
        fields.append(("type", pa.string()))
    fields.append(("reuse", pa.string()))
    return pa.schema(fields)


def _synthetic_count(col) -> int | None:
    """Rows of a ``reuse`` column saying ``"synthetic"``; None when a value is not in ``REUSE_VALUES``."""
    pa = held_import("pyarrow")
    pc = held_import("pyarrow.compute")

    if col.null_count == len(col):
        return 0
    valid = col.drop_null()
    if not pc.all(pc.is_in(valid, value_set=pa.array(REUSE_VALUES, type=pa.string()))).as_py():
        return None
    return int(pc.sum(pc.equal(valid, "synthetic")).as_py() or 0)


def pyarrow_chunk(spec, chunk: bytes, bs: int, state) -> RequestBatch | None:
    """Parse a clean chunk with ``pyarrow.json``; None when anything needs the authority.

    Only chunks whose every line opens with ``{`` reach pyarrow: pyarrow 26
    ``read_json`` crashes (SIGSEGV) on a chunk whose first value is a bare ``null``. And only chunks with one
    ``{`` and one ``[`` a line: pyarrow skips an unknown key's value of any depth, so a nested value (100,000
    levels, beyond :data:`pcs.jsondepth.MAX_JSON_DEPTH`) would pass here while the authority refuses it.
    """
    pa = held_import("pyarrow")
    pj = held_import("pyarrow.json")

    nlines = clean_lines(chunk)
    if (nlines is None or _count_byte(chunk, _OPEN) != nlines or _count_byte(chunk, _BRACE) != nlines
            or not _valid_utf8(chunk)):
        return None
    try:
        table = pj.read_json(io.BytesIO(chunk), read_options=pj.ReadOptions(use_threads=False, block_size=len(chunk) + 64),
                             parse_options=pj.ParseOptions(explicit_schema=_schema(spec), unexpected_field_behavior="ignore"))
    except pa.ArrowInvalid:
        return None
    required = ["timestamp", "input_length", "output_length", "hash_ids"] + [k for k, _ in spec.int_extras]
    if table.num_rows != nlines or any(table.column(k).null_count for k in required):
        return None
    ids_col = table.column("hash_ids").combine_chunks()
    values = ids_col.flatten()
    if values.null_count:
        return None
    offsets = ids_col.offsets.to_numpy().astype(np.int64)
    offsets -= offsets[0]
    synthetic = _synthetic_count(table.column("reuse"))
    if synthetic is None:
        return None
    extras = [table.column(k).to_numpy() for k, _ in spec.int_extras]
    typ = tuple(table.column("type").to_pylist()) if spec.has_type else None
    return _checked(spec, bs, state, table.column("timestamp").to_numpy(), table.column("input_length").to_numpy(),
                    table.column("output_length").to_numpy(), offsets, values.to_numpy(zero_copy_only=False),
                    extras, typ, synthetic)


def parse_chunk(parser: str, spec, chunk: bytes, bs: int, state) -> RequestBatch | None:
    """Run shortcut ``parser`` on ``chunk``: the batch, or None when the authority must read it.

    Args:
        parser: ``"native"``, ``"simdjson"`` or ``"pyarrow"`` (:data:`PARSERS`).
        spec: :class:`pcs.trace.hashids.FormatSpec`; bs: tokens per block;
        state: :class:`pcs.trace.hashids.ReadState` (``last_ts`` advanced on success only).
    """
    return _BY_NAME[parser](spec, chunk, bs, state)


def parse_chunks(parser: str, spec, chunks: Iterator, bs: int, state, side_by_side: bool = False,
                 ahead: bool = False) -> Iterator[tuple[int, bytes, RequestBatch | None]]:
    """``(first line, chunk, batch or None)`` for each ``(first line, chunk)`` of ``chunks``, in order, each chunk
    decoded in line by :func:`parse_chunk`; the caller reads a None chunk with the authority before asking for the
    next. (Decoding the next chunk on a worker while this thread decodes one was built and measured slower on the
    whole replay -- one tier 10x wall 0.14-0.18 -> 0.19-0.25 s -- so the readers decode in line:
    docs/performance.md, "The decode beside".)

    ``side_by_side`` (a caller that keeps every batch and joins consecutive ones): the compiled twin writes the
    ids of chunk after chunk side by side into one :func:`arena` (a new one when a chunk may not fit in the room
    left), so that joining consecutive batches (:func:`pcs.trace.request.concat_batches`) views their ids instead
    of copying them. Not for a caller that drops each batch as it goes: an arena stays alive while any of its
    batches does, so it would keep the ids of the chunks already dropped.

    A decoded chunk's lines are its batch's rows (a shortcut takes every line or none), so its newline count is
    sent back to ``chunks`` when it is a generator (:func:`pcs.trace.source.iter_chunks`: no pass of its own to
    count them). A chunk that is a ``memoryview`` (``iter_chunks(..., reuse=True)``) is handed on as ``bytes`` when
    the authority must read it.

    ``ahead``: with the compiled twin and ``side_by_side``, each chunk is decoded on a thread of its own while
    this thread reads the next and the caller works on the previous batch (:func:`_native_ahead`; ``chunks`` must
    keep a chunk until the second after it is asked for). The same tuples, in the same order, either way.
    """
    taken: list = []     # the arenas this reader leased (side_by_side with the compiled twin)
    inner = _parse_chunks(parser, spec, chunks, bs, state, side_by_side, ahead, taken)
    if not (parser == "native" and side_by_side):
        yield from inner
        return
    try:
        yield from inner
    finally:
        inner.close()           # its decode in flight waited for, so the arenas are let go idle
        ARENAS.keep(*taken)     # leases given back; one kept within KEPT_ARENA_IDS for the next reader


def _parse_chunks(parser: str, spec, chunks: Iterator, bs: int, state, side_by_side: bool,
                  ahead: bool, taken: list) -> Iterator[tuple[int, bytes, RequestBatch | None]]:
    """:func:`parse_chunks`' tuples (its arguments; ``taken``: the arenas leased, appended by :func:`arena`)."""
    if parser == "native" and side_by_side and ahead:
        yield from _native_ahead(spec, chunks, bs, state, taken)
        return
    send = getattr(chunks, "send", None)
    it = iter(chunks)
    known = None
    ids_arena = None
    while True:
        try:
            first, chunk = send(known) if send is not None else next(it)
        except StopIteration:
            return
        if parser == "native" and side_by_side:
            if ids_arena is None or not ids_arena.fits(len(chunk)):
                ids_arena = arena(taken)
            batch = native_chunk(spec, chunk, bs, state, ids_arena)
        else:
            batch = parse_chunk(parser, spec, chunk, bs, state)
        known = None if batch is None else len(batch) - (chunk[-1] != _NL)
        yield first, (bytes(chunk) if batch is None and isinstance(chunk, memoryview) else chunk), batch


def _native_ahead(spec, chunks: Iterator, bs: int, state,
                  taken: list) -> Iterator[tuple[int, bytes, RequestBatch | None]]:
    """:func:`parse_chunks` of the compiled twin with ``side_by_side``, each chunk decoded on a thread of its own
    (``_jsonrows.decode_start``: a C++ thread that never takes the GIL) while this thread reads the next chunk and
    the caller works on the previous batch. Chunk k + 1's decode starts once chunk k's result is taken, so the
    decodes fill the id :func:`arena` one after the other, as in line. What needs the GIL stays on this thread and
    in order: the reads, chunk k's checks (:func:`native_checked`, which advance ``state``) and its tuple, then
    chunk k + 1's. So the tuples, the errors and ``state`` are those of the loop in line (a decode reads only its
    chunk and ``spec``); a read's error comes after the chunk before it, where the loop in line raises it.

    ``chunks`` keeps a chunk's bytes until the second chunk after it is asked for (``iter_chunks(..., reuse=True,
    keep=True)``): chunk k + 1 is read while chunk k is decoded, and the caller may read chunk k with the authority
    when its tuple holds no batch. Chunk k's newlines are counted by ``chunks`` (its decode is not done when k + 1 is
    asked for). At a ``yield`` only chunk k + 1's decode is in flight: a caller that stops there drops its
    ``Pending``, which waits for its thread. Why: with the read, the checks and the decode on one Python worker, the
    1x Mooncake replica's three decodes waited for the GIL between them while the calling thread made the chunk
    pieces (docs/performance.md, "The 1x call's decode pass: the next chunk on a thread without the GIL, the id
    arena kept"). ``taken``: the arenas leased, appended by :func:`arena` (:func:`parse_chunks` gives them back)."""
    send = getattr(chunks, "send", None)
    it = iter(chunks)
    nxt, err = _next_chunk(send, it)
    if err is not None:
        raise err
    if nxt is None:
        return
    ids_arena = arena(taken)
    pending = _start(spec, nxt[1], ids_arena)
    while nxt is not None:
        (first, chunk), (pending, used_arena) = nxt, pending
        nxt, err = _next_chunk(send, it)
        cols = pending.result()
        if nxt is not None:
            if ids_arena is None or not ids_arena.fits(len(nxt[1])):
                ids_arena = arena(taken)
            pending = _start(spec, nxt[1], ids_arena)
        batch = native_checked(spec, cols, bs, state, used_arena)
        yield first, (bytes(chunk) if batch is None and isinstance(chunk, memoryview) else chunk), batch
        if err is not None:
            raise err


def _next_chunk(send: Any, it: Iterator) -> tuple:
    """:func:`_native_ahead`'s next ``(first line, chunk)`` (None at the end) and the error its read raised (None):
    returned, not raised, so the caller raises it after the chunk before it."""
    try:
        return (send(None) if send is not None else next(it)), None
    except StopIteration:
        return None, None
    except Exception as exc:
        return None, exc


def _start(spec, chunk: Any, ids_arena: Any) -> tuple:
    """``(Pending, the arena it may fill)``: ``chunk`` decoded on a thread of its own (``_jsonrows.decode_start``)."""
    from pcs import _native

    pending = _native.module("jsonrows").decode_start(chunk, tuple(k.encode() for k, _ in spec.int_extras),
                                                      spec.has_type, ids_arena)
    return pending, ids_arena


_BY_NAME = {"native": native_chunk, "simdjson": simdjson_chunk, "pyarrow": pyarrow_chunk}
