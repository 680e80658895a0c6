"""Reader for token-id JSONL traces: pcs computes the block hashes itself.

One JSON object per line:

- ``token_ids`` (required): list of prompt token ids, each in [0, 2**32);
- ``timestamp``: arrival in milliseconds, as Mooncake (absent: same as the
  previous request, 0 for the first);
- ``output_length``: generated tokens (absent: 0);
- ``input_length`` (optional): the prompt's length; when present it must equal
  ``len(token_ids)`` (the prompt is ``token_ids``; a mismatch is refused);
- ``cache_salt`` (string), ``lora_id`` (int or string), ``mm_hashes`` (list
  of strings, each mixed into block 0, or of objects
  ``{"hash": str, "offset": int, "length": int}`` mixed into the blocks that
  overlap those token positions);
- ``reuse``: ``"recorded"`` or ``"synthetic"`` (``pcs trace synth --tokens-out``
  writes the latter; :func:`pcs.trace.hashids.row_is_synthetic`).

Hashes follow :mod:`pcs.trace.hashing`, so one token trace replays at any
block size. Lines are parsed with ``json.loads`` (token lists are long and
few; parsing is cheap next to hashing).
"""
from __future__ import annotations

import json
import math
from typing import Iterator

import numpy as np

from pcs import choices
from pcs.errors import InputError, quoted
from pcs.trace.batches import MAX_ARRIVAL_S, arrival_error
from pcs.trace.jsonfast import lone_surrogate
from pcs.trace.hashids import ReadState, get_int, get_time, json_type, row_is_synthetic, strict_loads
from pcs.trace.hashing import MMInput, hash_request_blocks
from pcs.trace.request import RequestBatch
from pcs.trace.source import iter_chunks, iter_lines
from pcs.units import format_counted

__all__ = ["DEFAULT_TOKEN_BLOCK_SIZE", "read_token_jsonl", "parse_token_line", "check_token_line"]

#: vLLM's default ``--block-size`` (16 tokens) for token traces (defined in :mod:`pcs.choices`).
DEFAULT_TOKEN_BLOCK_SIZE = choices.DEFAULT_TOKEN_BLOCK_SIZE

_MS_PER_S = 1000.0
_U32_MAX = (1 << 32) - 1


def _tokens(obj: dict, name: str, ln: int) -> np.ndarray:
    if "token_ids" not in obj:
        raise InputError(name, ln, "token_ids", "missing")
    toks = obj["token_ids"]
    if not isinstance(toks, list):
        raise InputError(name, ln, "token_ids", f"must be a list of integers, got {json_type(toks)}")
    for i, t in enumerate(toks):
        if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t <= _U32_MAX:
            raise InputError(name, ln, "token_ids", f"element {i} must be an integer in [0, 2**32), "
                             f"got {quoted(t)}")
    return np.array(toks, dtype=np.uint32)


def _mm_inputs(obj: dict, name: str, ln: int) -> list[MMInput]:
    mm = obj.get("mm_hashes")
    if mm is None:
        return []
    if not isinstance(mm, list):
        raise InputError(name, ln, "mm_hashes", f"must be a list, got {json_type(mm)}")
    out = []
    for i, m in enumerate(mm):
        if isinstance(m, str):
            out.append(MMInput(m))
        elif isinstance(m, dict) and isinstance(m.get("hash"), str):
            off = get_int(m, "offset", name, ln) if "offset" in m else 0
            length = get_int(m, "length", name, ln, lo=1) if "length" in m else 1
            out.append(MMInput(m["hash"], off, length))
        else:
            raise InputError(name, ln, "mm_hashes", f"element {i} must be a string or "
                             '{"hash": str, "offset": int, "length": int}')
    return out


def check_token_line(obj: dict, block_size: int, name: str, ln: int) -> None:
    """Check one parsed line ``obj`` (line ``ln``) as :func:`read_token_jsonl` checks it, alone (no order to keep);
    for a message that suggests the tokens format (:func:`pcs.trace.api.format_hint`).

    Raises:
        InputError: the reader's own error for the line."""
    ts = parse_token_line(obj, block_size, name, ln, -math.inf)[0]
    row_is_synthetic(obj, name, ln)
    if abs(ts / _MS_PER_S) > MAX_ARRIVAL_S:
        raise InputError(name, ln, "timestamp", arrival_error(ts / _MS_PER_S))


def parse_token_line(obj: dict, block_size: int, name: str, ln: int, prev_ts: float) -> tuple:
    """Validate one token-trace object and hash its blocks.

    Returns:
        ``(timestamp_ms, prompt_tokens, output_tokens, block_hashes uint64, extra_keys)``
        with ``extra_keys`` the sorted (name, value) pairs present, or None.
    Raises:
        InputError: naming the field.
    """
    toks = _tokens(obj, name, ln)
    if "input_length" in obj and get_int(obj, "input_length", name, ln) != toks.size:
        raise InputError(name, ln, "input_length", f"is {obj['input_length']:,} but token_ids holds "
                         f"{format_counted(toks.size, 'token')} (the prompt is token_ids): drop input_length or make "
                         "them agree")
    ts = get_time(obj, "timestamp", name, ln) if "timestamp" in obj else max(prev_ts, 0.0)
    out = get_int(obj, "output_length", name, ln) if "output_length" in obj else 0
    salt = obj.get("cache_salt")
    if salt is not None and not isinstance(salt, str):
        raise InputError(name, ln, "cache_salt", f"must be a string, got {quoted(salt)}")
    lora = obj.get("lora_id")
    if lora is not None and (isinstance(lora, bool) or not isinstance(lora, (int, str))):
        raise InputError(name, ln, "lora_id", f"must be an integer or string, got {quoted(lora)}")
    mm = _mm_inputs(obj, name, ln)
    for field, text in [("cache_salt", salt), ("lora_id", lora)] + [("mm_hashes", m.hash) for m in mm]:
        if isinstance(text, str) and lone_surrogate(text):   # the block hash mixes it in as UTF-8
            raise InputError(name, ln, field, f"a lone surrogate {lone_surrogate(text)} is not text (not valid Unicode)")
    hashes = hash_request_blocks(toks, block_size, cache_salt=salt, lora_id=lora, mm_inputs=mm)
    extra = tuple((k, v) for k, v in (("cache_salt", salt), ("lora_id", lora),
                                       ("mm_hashes", tuple((m.hash, m.offset_tokens, m.length_tokens) for m in mm) or None))
                  if v is not None) or None
    return ts, len(toks), out, hashes, extra


def read_token_jsonl(path, name: str, block_size: int, state: ReadState, on_error: str = "raise",
                     rows: int = 4096) -> Iterator[RequestBatch]:
    """Stream a token JSONL trace as batches of at most ``rows`` requests.

    Raises:
        InputError: the first bad line (``on_error="raise"``).
    """
    ts_l: list[float] = []
    pt: list[int] = []
    ot: list[int] = []
    hs: list[np.ndarray] = []
    ex: list = []

    def flush() -> RequestBatch:
        offs = np.zeros(len(hs) + 1, dtype=np.int64)
        np.cumsum([h.size for h in hs], out=offs[1:])
        arrival_s = np.array(ts_l, dtype=np.float64) / _MS_PER_S + 0.0   # + 0.0: no -0.0 arrival
        b = RequestBatch(0, block_size, arrival_s, np.array(pt, dtype=np.int64), np.array(ot, dtype=np.int64), offs,
                         np.concatenate(hs) if hs else np.zeros(0, dtype=np.uint64), extra_keys=tuple(ex))
        ts_l.clear(), pt.clear(), ot.clear(), hs.clear(), ex.clear()
        return b

    for first, chunk in iter_chunks(path, name=name):
        for ln, line in iter_lines(first, chunk):
            try:
                obj = strict_loads(name, ln, line)
                ts, p, o, h, e = parse_token_line(obj, block_size, name, ln, state.last_ts)
                if o >= state.limits.output_below:      # the run's bound (pcs.trace.rowlimits)
                    raise InputError(name, ln, "output_length", state.limits.output_problem(o))
                synthetic = row_is_synthetic(obj, name, ln)
                if state.check_order and ts < state.last_ts:
                    raise InputError(name, ln, "timestamp",
                                     f"decreases ({ts:g} after {state.last_ts:g}); use sort= to reorder")
                if abs(ts / _MS_PER_S) > MAX_ARRIVAL_S:
                    raise InputError(name, ln, "timestamp", arrival_error(ts / _MS_PER_S))
            except InputError as exc:
                if on_error != "skip":
                    raise
                state.skip(exc)
                continue
            state.last_ts = max(state.last_ts, ts)
            state.synthetic_rows += synthetic
            ts_l.append(ts), pt.append(p), ot.append(o), hs.append(h), ex.append(e)
            if len(ts_l) >= rows:
                yield flush()
    if ts_l:
        yield flush()
