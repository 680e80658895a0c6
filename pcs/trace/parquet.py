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
session_id      int64 (optional)    chat/session id (Bailian ``chat_id``)
parent_id       int64 (optional)    parent chat id, -1 for none
turn            int64 (optional)    turn number in the session
type            string (optional)   request type (Bailian ``type``)
==============  ==================  ==========================================

File key-value metadata: ``pcs.schema = "pcs-trace/1"``, ``pcs.block_size``
(decimal string, tokens per block), ``pcs.source_format`` (the format it was
converted from), and for traces whose prefix reuse was synthesised (Azure,
BurstGPT) ``pcs.reuse``, the assumption (docs/traces-formats.md). Errors name
the 1-based row as the "line".
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from pcs.errors import InputError
from pcs.trace.request import RequestBatch

__all__ = ["SCHEMA_NAME", "arrow_schema", "parquet_block_size", "parquet_rows", "parquet_reuse", "read_parquet", "batch_to_arrow"]

SCHEMA_NAME = "pcs-trace/1"
_OPTIONAL = ("session_id", "parent_id", "turn")
_REQUIRED = ("arrival_s", "prompt_tokens", "output_tokens", "block_hashes")


def arrow_schema(with_session: bool = False, block_size: int = 512, source_format: str = "mooncake",
                 reuse: str | None = None):
    """The canonical ``pyarrow.Schema`` (with or without the session columns; ``pcs.reuse`` when given)."""
    import pyarrow as pa

    fields = [pa.field("arrival_s", pa.float64(), nullable=False),
              pa.field("prompt_tokens", pa.int64(), nullable=False),
              pa.field("output_tokens", pa.int64(), nullable=False),
              pa.field("block_hashes", pa.list_(pa.field("item", pa.uint64(), nullable=False)), nullable=False)]
    if with_session:
        fields += [pa.field(k, pa.int64()) for k in _OPTIONAL] + [pa.field("type", pa.string())]
    meta = {"pcs.schema": SCHEMA_NAME, "pcs.block_size": str(block_size), "pcs.source_format": source_format}
    if reuse:
        meta["pcs.reuse"] = reuse
    return pa.schema(fields, metadata=meta)


def parquet_reuse(path, name: str) -> str | None:
    """The ``pcs.reuse`` metadata of a pcs Parquet trace (a synthesised-reuse assumption), or None."""
    meta = _open(path, name).schema_arrow.metadata or {}
    v = meta.get(b"pcs.reuse")
    return None if v is None else v.decode()


def batch_to_arrow(batch: RequestBatch, schema):
    """A :class:`RequestBatch` as a ``pyarrow.RecordBatch`` of ``schema``."""
    import pyarrow as pa

    lists = pa.ListArray.from_arrays(pa.array(batch.block_offsets.astype(np.int32)),
                                     pa.array(batch.block_hashes, type=pa.uint64()))
    cols = [pa.array(batch.arrival_s, pa.float64()), pa.array(batch.prompt_tokens, pa.int64()),
            pa.array(batch.output_tokens, pa.int64()), lists.cast(schema.field("block_hashes").type)]
    if "session_id" in schema.names:
        n = len(batch)
        for k in _OPTIONAL:
            v = getattr(batch, k)
            cols.append(pa.array(v if v is not None else np.full(n, -1, np.int64), pa.int64()))
        cols.append(pa.array(list(batch.type) if batch.type is not None else [None] * n, pa.string()))
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def _open(path, name: str):
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(name, None, None, f"not a readable Parquet file ({exc})") from None


def parquet_rows(path, name: str) -> int:
    """Rows of a Parquet file (from its footer)."""
    return _open(path, name).metadata.num_rows


def parquet_block_size(path, name: str) -> int:
    """The block size stored in a pcs Parquet trace's metadata.

    Raises:
        InputError: not Parquet, not schema ``pcs-trace/1``, or missing columns.
    """
    pf = _open(path, name)
    meta = {k.decode(): v.decode() for k, v in (pf.schema_arrow.metadata or {}).items()}
    if meta.get("pcs.schema") != SCHEMA_NAME:
        raise InputError(name, None, "pcs.schema", f"metadata must be {SCHEMA_NAME!r}, got {meta.get('pcs.schema')!r}"
                         " (write Parquet traces with `pcs trace convert`)")
    missing = [c for c in _REQUIRED if c not in pf.schema_arrow.names]
    if missing:
        raise InputError(name, None, missing[0], "missing column")
    try:
        bs = int(meta.get("pcs.block_size", ""))
    except ValueError:
        bs = 0
    if bs < 1:
        raise InputError(name, None, "pcs.block_size", f"metadata must be a positive integer, got {meta.get('pcs.block_size')!r}")
    return bs


def _bad_rows(ts: np.ndarray, il: np.ndarray, ol: np.ndarray, lens: np.ndarray, bs: int,
              prev_ts: float, check_order: bool) -> list[tuple[np.ndarray, str, str]]:
    """(mask, field, problem) for each vectorised rule."""
    with np.errstate(invalid="ignore"):
        rules = [(~np.isfinite(ts), "arrival_s", "must be finite"),
                 (il < 0, "prompt_tokens", "must be >= 0"),
                 (ol < 0, "output_tokens", "must be >= 0"),
                 (lens != -(-il // bs), "block_hashes", f"length must be ceil(prompt_tokens / {bs})")]
        if check_order:
            run = np.maximum.accumulate(np.where(np.isfinite(ts), ts, -np.inf))
            prev = np.maximum(np.concatenate(([prev_ts], run[:-1])), prev_ts)
            rules.append((ts < prev, "arrival_s", "decreases; use --sort to reorder"))
    return rules


def read_parquet(path, name: str, block_size: int, state, on_error: str = "raise",
                 rows: int = 1 << 16) -> Iterator[RequestBatch]:
    """Stream a canonical Parquet trace with ``ParquetFile.iter_batches``.

    Raises:
        InputError: null values or a rule broken, naming the 1-based row.
    """
    from pcs.trace.hashids import _rows_distinct

    pf = _open(path, name)
    names = pf.schema_arrow.names
    has_session = all(k in names for k in _OPTIONAL)
    cols = list(_REQUIRED) + (list(_OPTIONAL) + (["type"] if "type" in names else []) if has_session else [])
    row0 = 1
    for rb in pf.iter_batches(batch_size=rows, columns=cols):
        n = rb.num_rows
        for c in _REQUIRED:
            col = rb.column(c)
            nulls = col.null_count + (col.flatten().null_count if c == "block_hashes" else 0)
            if nulls:
                bad = np.flatnonzero(np.asarray(col.is_null()))
                raise InputError(name, row0 + int(bad[0]) if bad.size else row0, c, "null value")
        lists = rb.column("block_hashes")
        offs = lists.offsets.to_numpy().astype(np.int64)
        hashes = lists.flatten().to_numpy(zero_copy_only=False).astype(np.uint64, copy=False)
        offs -= offs[0]
        ts = rb.column("arrival_s").to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
        il = rb.column("prompt_tokens").to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        ol = rb.column("output_tokens").to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        keep = np.ones(n, dtype=bool)
        for mask, field, problem in _bad_rows(ts, il, ol, np.diff(offs), block_size, state.last_ts, state.check_order):
            if mask.any():
                if on_error != "skip":
                    raise InputError(name, row0 + int(np.flatnonzero(mask)[0]), field, problem)
                keep &= ~mask
        if not _rows_distinct(hashes, offs):
            for i in range(n):
                h = hashes[offs[i]:offs[i + 1]]
                if np.unique(h).size != h.size:
                    if on_error != "skip":
                        raise InputError(name, row0 + i, "block_hashes", "an id repeats inside one request")
                    keep[i] = False
        extras = [rb.column(k).to_numpy(zero_copy_only=False) for k in _OPTIONAL] if has_session else [None] * 3
        typ = tuple(rb.column("type").to_pylist()) if has_session and "type" in names else None
        batch = RequestBatch(0, block_size, ts, il, ol, offs, hashes, *extras, typ)
        if not keep.all():
            state.skipped += int(n - keep.sum())
            batch = _select(batch, keep)
        if len(batch):
            state.last_ts = max(state.last_ts, float(batch.arrival_s.max()))
            yield batch
        row0 += n


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
