"""vLLM KV-cache events (BlockStored / BlockRemoved / AllBlocksCleared): which blocks an engine actually held.

vLLM publishes one ``KVEventBatch`` per scheduler step (vllm-project/vllm
``vllm/distributed/kv_events.py``, Apache-2.0): ``ts`` (float seconds, wall
clock), ``events`` and ``data_parallel_rank``. The events are msgspec
structs tagged with their class name:

- ``BlockStored``: ``block_hashes`` (list), ``parent_block_hash`` (or null),
  ``token_ids`` (``len(block_hashes) * block_size`` ids), ``block_size``,
  ``lora_id``, ``medium`` (``"GPU"``, or the offload tier, e.g. ``"CPU"``),
  ``lora_name``, and optional ``extra_keys``, ``group_idx``, ...;
- ``BlockRemoved``: ``block_hashes``, ``medium`` (optional ``group_idx``);
- ``AllBlocksCleared``: no fields (the prefix cache was reset).

Two encodings exist across vLLM versions: the events as maps
``{"type": "BlockStored", ...}`` (current) or, with msgspec ``array_like``
(earlier releases), as arrays ``["BlockStored", hashes, parent, tokens,
block_size, lora_id, medium, ...]`` in field order; a batch likewise as
``{"ts", "events", "data_parallel_rank"}`` or ``[ts, events, rank]``. Both are
read. Files: JSON Lines (one batch per line, as ``msgspec.json.encode``
writes it; a ``bytes`` hash is then a base64 string) or a raw stream of the
msgpack payloads the ZMQ publisher sends (needs the ``events`` extra:
``pip install -e '.[events]'`` in the pcs clone). A ``bytes`` hash becomes a 64-bit id the way
vLLM's ``maybe_convert_block_hash`` does for ``VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES``:
big-endian integer, low 64 bits.

Residency (:class:`Residency`) is kept per (data-parallel rank, medium):
a store adds blocks, a removal drops them, AllBlocksCleared empties every
medium of that rank. A store of a block already held, or a removal of one
not held (stored before the capture began), is counted, never an error.
"""
from __future__ import annotations

import base64
import json
import math
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from pcs import jsondepth
from pcs.choices import did_you_mean
from pcs.errors import InputError, UserError, quoted, shown_path
from pcs.extras import missing_extra
from pcs.trace.batches import arrival_error
from pcs.trace.hashids import invalid_json, strict_loads
from pcs.trace.source import display_name, iter_chunks, iter_lines, open_binary

__all__ = ["KVEvent", "Residency", "read_kv_events", "residency_summary", "held_blocks"]

_MASK = (1 << 64) - 1
#: Field order of the array (``array_like``) encodings, after the tag.
_STORED_FIELDS = ("block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium",
                  "lora_name", "extra_keys", "group_idx")
_REMOVED_FIELDS = ("block_hashes", "medium", "group_idx")
KINDS = {"BlockStored": "stored", "BlockRemoved": "removed", "AllBlocksCleared": "cleared"}


@dataclass(frozen=True, slots=True)
class KVEvent:
    """One event, flattened out of its batch.

    Attributes:
        ts_s: the batch's ``ts`` (seconds, the engine's wall clock).
        kind: ``"stored"``, ``"removed"`` or ``"cleared"``.
        block_hashes: ``np.ndarray[np.uint64]``, shape (num_blocks,) (empty for cleared).
        rank: ``data_parallel_rank`` (0 when absent).
        medium: ``"GPU"`` when absent or null (vLLM's ``MEDIUM_GPU``).
        parent_hash: stored: the parent block's id or None.
        block_size: stored: tokens per block, else None.
    """

    ts_s: float
    kind: str
    block_hashes: np.ndarray
    rank: int = 0
    medium: str = "GPU"
    parent_hash: int | None = None
    block_size: int | None = None


def _hash(v: Any, name: str, ln: int) -> int:
    if isinstance(v, bool):
        raise InputError(name, ln, "block_hashes", f"a hash must be an integer or bytes, got {v}")
    if isinstance(v, int):
        return v & _MASK
    if isinstance(v, str):  # bytes in JSON: base64 (msgspec)
        try:
            v = base64.b64decode(v, validate=True)
        except ValueError:
            raise InputError(name, ln, "block_hashes", f"a string hash must be base64 bytes, got {quoted(v, show=repr)}") from None
    if isinstance(v, (bytes, bytearray)):
        return int.from_bytes(v, "big") & _MASK
    raise InputError(name, ln, "block_hashes", f"a hash must be an integer or bytes, got {quoted(v)}")


def _fields(ev: Any, name: str, ln: int) -> tuple[str, dict]:
    """(tag, field dict) of one event in either encoding."""
    if isinstance(ev, dict):
        tag = ev.get("type")
        body = ev
    elif isinstance(ev, list) and ev and isinstance(ev[0], str):
        tag = ev[0]
        order = {"BlockStored": _STORED_FIELDS, "BlockRemoved": _REMOVED_FIELDS}.get(tag, ())
        body = dict(zip(order, ev[1:]))
    else:
        raise InputError(name, ln, "events", f"an event must be an object or a tagged array, got {quoted(ev, 60)}")
    if not isinstance(tag, str) or tag not in KINDS:     # a list or an object as the type: no hash, no suggestion
        shown, near = (repr(tag), did_you_mean(tag, KINDS)) if isinstance(tag, str) else (quoted(tag, 60), "")
        raise InputError(name, ln, "events", f"unknown event type {shown}; {near}expected one of {', '.join(KINDS)}")
    return tag, body


def _event(ev: Any, ts: float, rank: int, name: str, ln: int) -> KVEvent:
    tag, body = _fields(ev, name, ln)
    if tag == "AllBlocksCleared":
        return KVEvent(ts, "cleared", np.zeros(0, dtype=np.uint64), rank)
    hashes = body.get("block_hashes")
    if not isinstance(hashes, list):
        raise InputError(name, ln, "block_hashes", f"{tag}: must be a list")
    ids = np.array([_hash(h, name, ln) for h in hashes], dtype=np.uint64)
    medium = body.get("medium") or "GPU"
    if tag == "BlockRemoved":
        return KVEvent(ts, "removed", ids, rank, str(medium))
    bs = body.get("block_size")
    if isinstance(bs, bool) or not isinstance(bs, int) or bs < 1:
        raise InputError(name, ln, "block_size", f"BlockStored: must be a positive integer, got {json.dumps(bs)}")
    parent = body.get("parent_block_hash")
    return KVEvent(ts, "stored", ids, rank, str(medium), None if parent is None else _hash(parent, name, ln), bs)


def _check_ts(ts: float, name: str, ln: int, last: list) -> None:
    """Refuse a batch ``ts`` beyond the arrival bound (:func:`pcs.trace.batches.arrival_error`) or below the
    previous batch's (``last[0]``, updated): events are replayed in stream order, so an earlier ``ts`` would
    give negative lifetimes and time spans; vLLM stamps each batch with ``time.time()`` as it publishes."""
    why = arrival_error(ts)
    if why:
        raise InputError(name, ln, "ts", why)
    if ts < last[0]:
        raise InputError(name, ln, "ts", f"decreases ({ts:g} s after {last[0]:g} s): batches are replayed in "
                         "order; sort the capture by ts")
    last[0] = ts


def _batch(obj: Any, name: str, ln: int, last: list) -> Iterator[KVEvent]:
    if isinstance(obj, dict):
        ts, events, rank = obj.get("ts"), obj.get("events"), obj.get("data_parallel_rank")
    elif isinstance(obj, list) and len(obj) >= 2:
        ts, events, rank = obj[0], obj[1], (obj[2] if len(obj) > 2 else None)
    else:
        raise InputError(name, ln, None, "a batch must be {\"ts\", \"events\", ...} or [ts, events, rank]")
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts):
        raise InputError(name, ln, "ts", f"must be a finite number of seconds, got {quoted(ts)}")
    _check_ts(float(ts), name, ln, last)
    if not isinstance(events, list):
        raise InputError(name, ln, "events", "must be a list")
    rank = 0 if rank is None else rank
    if isinstance(rank, bool) or not isinstance(rank, int):
        raise InputError(name, ln, "data_parallel_rank", f"must be an integer, got {quoted(rank)}")
    for ev in events:
        yield _event(ev, float(ts), rank, name, ln)


def _msgpack_objects(path, name: str) -> Iterator[tuple[int, Any]]:
    try:
        import msgpack
    except ImportError:
        raise UserError(f"{shown_path(name)}: " + missing_extra("reading msgpack KV events", "msgpack", "events")
                         + ", or convert the capture to JSON Lines") from None
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)
    with open_binary(path) as f:
        n = 0
        while chunk := f.read(1 << 20):
            unpacker.feed(chunk)
            try:
                for obj in unpacker:
                    n += 1
                    yield n, obj
            except (ValueError, msgpack.UnpackException) as exc:
                raise InputError(name, n + 1, None, f"corrupt msgpack payload ({exc})") from None


def _loads(name: str, ln: int, line: bytes) -> Any:
    """A JSON object (strictly, as the trace readers) or array (the ``array_like`` batch)."""
    if line.lstrip()[:1] != b"[":
        return strict_loads(name, ln, line)
    try:     # an event object in the array: its keys once, as strict_loads reads an object batch
        return jsondepth.loads(line.decode("utf-8"), object_pairs_hook=jsondepth.no_duplicate_keys)
    except jsondepth.TooDeepError as exc:
        raise InputError(name, ln, None, str(exc)) from None
    except jsondepth.NumberTooLongError as exc:
        raise InputError(name, ln, exc.field, str(exc)) from None
    except jsondepth.DuplicateKeyError as exc:      # worded as strict_loads words it
        raise InputError(name, ln, None, invalid_json(exc)) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(name, ln, None, f"invalid JSON ({str(exc).splitlines()[0][:80]})") from None


#: What an empty capture lacks, as its refusal says (an empty FIFO, stdin or file: :func:`read_kv_events`).
EMPTY_CAPTURE = "empty capture (no events)"


def read_kv_events(path, name: str | None = None) -> Iterator[KVEvent]:
    """Stream the events of a capture in order (JSON Lines, or msgpack when the file is not JSON).

    Line numbers in errors count batches (JSONL lines, or msgpack payloads); ``name``: the capture as errors
    name it (default: ``path``'s). Stdin or a FIFO is copied once and read from the copy, as a trace is
    (:func:`pcs.trace.api.read_once`).

    Raises:
        InputError: a malformed batch or event (file, batch, field); a ``ts`` that decreases or lies
            beyond +-2**32 s (:func:`_check_ts`); an empty source -- a FIFO with nothing written into it,
            empty stdin, an empty or blank-lines file -- or one whose batches hold no event (:data:`EMPTY_CAPTURE`).
        UserError: a msgpack capture without the ``msgpack`` package.
    """
    from pcs.trace.api import read_once

    name = name or display_name(path)
    with read_once(path, name, EMPTY_CAPTURE) as once:
        yield from _events(once, name)


def _events(path, name: str) -> Iterator[KVEvent]:
    """:func:`read_kv_events` of a file (no stream), named ``name``.

    Raises:
        InputError: an empty source -- no byte, or blank/whitespace lines only -- as :data:`EMPTY_CAPTURE`,
            naming ``name`` (docs/traces.md: an empty source is an error, a FIFO's or a file's alike); batches
            whose ``events`` lists are all empty, the same kind (no event to replay): :data:`EMPTY_CAPTURE`, then
            how many batches (raised once they are read, after any event a malformed batch would have refused).
    """
    with open_binary(path) as f:
        head = f.read(1)
    if not head:
        raise InputError(name, None, None, EMPTY_CAPTURE)
    batches, events, last = 0, 0, [-math.inf]
    for ln, obj in _batch_objects(path, name, head):
        batches += 1
        for ev in _batch(obj, name, ln, last):
            events += 1
            yield ev
    if not events:      # no batch, or batches whose events lists are all empty: nothing to replay either way
        raise InputError(name, None, None, EMPTY_CAPTURE + _batches_without_events(batches))


def _batches_without_events(batches: int) -> str:
    """What :data:`EMPTY_CAPTURE` adds for a capture of ``batches`` batches and no event: ``''`` for none, else
    ``: its batch has an empty events list`` / ``: its N batches have empty events lists`` (such a capture
    printed an all-zero table)."""
    if not batches:
        return ""
    if batches == 1:
        return ": its batch has an empty events list"
    return f": its {batches:,} batches have empty events lists"


def _batch_objects(path, name: str, head: bytes) -> Iterator[tuple[int, Any]]:
    """``(line, batch object)`` of a capture whose first byte is ``head``: JSON Lines (blank lines skipped) or
    msgpack payloads (their 1-based number as the line)."""
    if head in (b"{", b"[", b" ", b"\n", b"\t", b"\r", b"\xef"):  # JSON (maybe after whitespace or a BOM)
        for first, chunk in iter_chunks(path, name=name):
            for ln, line in iter_lines(first, chunk):
                if line.strip():
                    yield ln, _loads(name, ln, line)
    else:
        yield from _msgpack_objects(path, name)


@dataclass
class Residency:
    """Blocks held per (rank, medium), replayed from events (module docstring).

    Attributes:
        held: ``{(rank, medium): {block hash: ts_s stored}}``.
        counters: stored/removed/cleared events, blocks stored, removed,
            duplicate stores, removals of blocks not held, re-stores (a block
            stored again after it was removed or cleared: the engine
            recomputed or reloaded a block it had dropped).
        peak: ``{(rank, medium): (blocks, ts_s)}`` the largest residency and when.
        lifetimes_s: seconds between store and removal of every removed block
            (not those a clear dropped).
    """

    held: dict = field(default_factory=dict)
    counters: dict = field(default_factory=lambda: dict.fromkeys(
        ("stored_events", "removed_events", "cleared_events", "blocks_stored", "blocks_removed",
         "duplicate_stores", "unknown_removals", "restores", "blocks_cleared"), 0))
    peak: dict = field(default_factory=dict)
    lifetimes_s: list = field(default_factory=list)
    dropped: dict = field(default_factory=dict)
    distinct: dict = field(default_factory=dict)

    def apply(self, ev: KVEvent) -> None:
        """Apply one event (in stream order)."""
        c = self.counters
        if ev.kind == "cleared":
            c["cleared_events"] += 1
            for key in [k for k in self.held if k[0] == ev.rank]:
                for h in self.held[key]:
                    self.dropped.setdefault(key, set()).add(h)
                c["blocks_cleared"] += len(self.held[key])
                self.held[key] = {}
            return
        key = (ev.rank, ev.medium)
        held = self.held.setdefault(key, {})
        if ev.kind == "stored":
            c["stored_events"] += 1
            drop, seen = self.dropped.setdefault(key, set()), self.distinct.setdefault(key, set())
            for h in ev.block_hashes.tolist():
                c["blocks_stored"] += 1
                if h in held:
                    c["duplicate_stores"] += 1
                    continue
                held[h] = ev.ts_s
                seen.add(h)
                if h in drop:
                    c["restores"] += 1
                    drop.discard(h)
            if len(held) > self.peak.get(key, (-1, 0.0))[0]:
                self.peak[key] = (len(held), ev.ts_s)
        else:
            c["removed_events"] += 1
            for h in ev.block_hashes.tolist():
                t = held.pop(h, None)
                if t is None:
                    c["unknown_removals"] += 1
                    continue
                c["blocks_removed"] += 1
                self.lifetimes_s.append(ev.ts_s - t)
                self.dropped.setdefault(key, set()).add(h)

    def _check(self) -> None:
        """Invariants: a peak is at least the residency; removed blocks <= stored blocks."""
        for key, held in self.held.items():
            assert len(held) <= self.peak.get(key, (0, 0.0))[0] or not held
        assert self.counters["blocks_removed"] <= self.counters["blocks_stored"]
        assert len(self.lifetimes_s) == self.counters["blocks_removed"]


def residency_summary(events, at_s: float | None = None) -> dict[str, Any]:
    """Replay events and summarise what the engine held.

    Args:
        events: :class:`KVEvent` s in order (e.g. :func:`read_kv_events`).
        at_s: stop after the last batch with ``ts_s <= at_s`` (None: all).
    Returns:
        ``events``, ``time_span_s``, the :class:`Residency` counters,
        ``removed_lifetime_s_{p50,p90,p99}`` (None without removals), and
        ``media``: one row per (rank, medium) with ``held_blocks`` (at the end
        or at ``at_s``), ``distinct_blocks_stored``, ``peak_held_blocks``,
        ``peak_at_s``.
    """
    res = Residency()
    first = last = None
    n = 0
    for ev in events:
        if at_s is not None and ev.ts_s > at_s:
            break
        res.apply(ev)
        first = ev.ts_s if first is None else first
        last, n = ev.ts_s, n + 1
    life = np.array(res.lifetimes_s, dtype=np.float64)
    out: dict[str, Any] = {"events": n, "time_span_s": None if first is None else last - first}
    out.update(res.counters)
    for q in (50, 90, 99):
        out[f"removed_lifetime_s_p{q}"] = float(np.percentile(life, q)) if life.size else None
    out["media"] = [{"rank": k[0], "medium": k[1], "held_blocks": len(res.held[k]),
                     "distinct_blocks_stored": len(res.distinct.get(k, ())),
                     "peak_held_blocks": res.peak.get(k, (0, None))[0], "peak_at_s": res.peak.get(k, (0, None))[1]}
                    for k in sorted(res.held)]
    return out


def held_blocks(events, at_s: float | None = None, rank: int = 0, medium: str = "GPU") -> np.ndarray:
    """``np.ndarray[np.uint64]``, sorted: the ids held by (rank, medium) after the last batch at or before ``at_s``."""
    res = Residency()
    for ev in events:
        if at_s is not None and ev.ts_s > at_s:
            break
        res.apply(ev)
    return np.array(sorted(res.held.get((rank, medium), {})), dtype=np.uint64)
