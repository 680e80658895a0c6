"""Readers for block-id JSONL traces: Mooncake (FAST'25) and Qwen-Bailian (ATC'25).

One JSON object per line. Mooncake: ``timestamp`` (ms), ``input_length``,
``output_length``, ``hash_ids`` at 512-token blocks (kvcache-ai/Mooncake
``FAST25-release/traces``, release README). Qwen-Bailian: the same with
``timestamp`` in seconds, 16-token blocks, plus ``chat_id``,
``parent_chat_id`` (-1: none), ``turn`` and an optional ``type`` string
(alibaba-edu/qwen-bailian-usagetraces-anon). Both dialects (and the token
JSONL of :mod:`pcs.trace.tokens`) take an optional ``reuse`` string,
``"recorded"`` (the default) or ``"synthetic"``: ``pcs trace synth`` writes
``"synthetic"`` on every row, and a trace with such rows carries
:data:`SYNTH_REUSE` as its ``Trace.reuse`` (the synthetic-reuse note,
docs/traces-formats.md). Any other value is an error naming the line.

Parsing path (chosen by measurement, benchmarks/bench_jsonl_parsers.py): each
chunk of whole lines goes to a shortcut parser of :mod:`pcs.trace.jsonfast`
(the compiled simdjson twin when built, else pysimdjson when installed, else ``pyarrow.json``) and is
validated with
vectorised numpy checks. Any chunk that the shortcut rejects or a check flags
is re-read line by line with ``json.loads``,
which is the authority: it names the line and field of the first problem, or
skips the bad lines with ``on_error="skip"``. So both paths accept exactly the
same lines; the fast one is only a shortcut for clean input.

Memory: one chunk (:data:`pcs.trace.source.CHUNK_BYTES`) at a time.
"""
from __future__ import annotations

import json
import math
from typing import Any, Iterator, NamedTuple

import numpy as np

from pcs import jsondepth
from pcs.choices import close_tail
from pcs.errors import OUT_OF_FLOAT_RANGE, InputError, UnknownNameError, UserError, bad_byte, quoted, shown_repr
from pcs.trace.batches import MAX_ARRIVAL_S, arrival_error
from pcs.trace.jsonfast import REUSE_VALUES, lone_surrogate  # REUSE_VALUES: the optional per-row ``reuse`` field
from pcs.trace.request import RequestBatch
from pcs.trace.rowlimits import NO_LIMITS, RowLimits
from pcs.trace.source import iter_chunks, iter_lines
from pcs._dataclass import dataclass
from pcs.units import format_counted

__all__ = ["FormatSpec", "MOONCAKE", "BAILIAN", "ReadState", "SkippedLine", "SKIPPED_NAMED", "BlankLine", "blank_row",
           "REUSE_VALUES", "SYNTH_REUSE", "REUSE_ASSUMPTION_KEY", "row_reuse_assumption", "read_hashid_jsonl",
           "row_is_synthetic", "strict_loads", "check_hashid_line"]

_U64_MAX = (1 << 64) - 1
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
#: ``Trace.reuse`` of a trace whose rows say ``"reuse": "synthetic"`` (and the
#: ``pcs.reuse`` Parquet metadata ``pcs trace synth`` writes).
SYNTH_REUSE = 'synthesised: rows marked "reuse": "synthetic" (pcs trace synth, or a converted lengths-only trace)'


@dataclass(frozen=True, slots=True)
class FormatSpec:
    """What distinguishes one block-id JSONL dialect from another.

    Attributes:
        name: format name used by ``--trace-format``.
        ts_per_s: timestamp units per second (Mooncake ms: 1000; Bailian s: 1);
            arrival_s = timestamp / ts_per_s (a correctly rounded division).
        default_block_size: tokens per block when ``--block-size`` is absent
            (Mooncake 512, FAST'25 release README; Bailian 16, ATC'25 trace README).
        int_extras: required integer fields -> Request attribute.
    """

    name: str
    ts_per_s: float
    default_block_size: int
    int_extras: tuple[tuple[str, str], ...] = ()
    has_type: bool = False


MOONCAKE = FormatSpec("mooncake", 1000.0, 512)
BAILIAN = FormatSpec("bailian", 1.0, 16,
                     (("chat_id", "session_id"), ("parent_chat_id", "parent_id"), ("turn", "turn")), True)


#: ``on_error="skip"``: how many skipped lines (Parquet: rows) a read names, the first in file order
#: (:attr:`ReadState.named`, ``Trace.skipped_lines``); the notes say how many more there were. The ``--on-error``
#: help (pcs/cli/replay.py, pcs/cli/trace.py) and docs/json.md (pcs/report/jsondoc.py) say 5 in words.
SKIPPED_NAMED = 5


class SkippedLine(NamedTuple):
    """A line (Parquet: row) ``on_error="skip"`` skipped, as ``on_error="raise"`` would have refused it
    (:class:`InputError`'s parts): ``path`` the name errors use, ``line`` the 1-based line (Parquet: the 1-based row;
    None: not line-oriented), ``field`` the field (Parquet: column) or None, ``problem`` what is wrong. A tuple, not
    the error: it pickles and compares."""
    path: str
    line: int | None
    field: str | None
    problem: str

    @classmethod
    def of(cls, error: InputError) -> "SkippedLine":
        """The skipped line of the reader's ``error`` for it (a blank line's is ``blank line``: its error's advice,
        to skip blank lines, is what was done)."""
        return cls(error.path, error.line, error.field, "blank line" if isinstance(error, BlankLine) else error.problem)

    @property
    def message(self) -> str:
        """``PATH:LINE: field 'F': PROBLEM``, the one line ``on_error="raise"`` prints for it (:class:`InputError`)."""
        return str(InputError(*self))


@dataclass(slots=True)
class ReadState:
    """Mutable reader state shared across chunks: skips and the last timestamp.

    ``first_skipped``: with ``on_error="skip"``, the error of the first non-blank line (Parquet: row) skipped, which
    a trace with no line left names (:meth:`pcs.trace.api.Trace.iter_batches`); None until one is. ``blank``: how
    many of the ``skipped`` lines were blank (:class:`BlankLine`): a blank line is a bad line (docs/traces.md), but
    its message tells nothing of why the others were refused. ``limits``: the run's bounds beyond the reader's own
    (:class:`pcs.trace.rowlimits.RowLimits`), which every path of the read checks as the authority does.
    ``named``: the first :data:`SKIPPED_NAMED` lines (rows) skipped, blank ones included, in file order
    (:class:`SkippedLine`); every reader's skips come through :meth:`skip`, the one place they are recorded."""

    skipped: int = 0
    last_ts: float = -math.inf
    check_order: bool = True
    synthetic_rows: int = 0
    first_skipped: InputError | None = None
    blank: int = 0
    limits: RowLimits = NO_LIMITS
    named: tuple[SkippedLine, ...] = ()

    def skip(self, error: InputError | None, count: int = 1, errors: tuple[InputError, ...] | None = None) -> None:
        """Count ``count`` bad lines (rows) skipped, ``error`` the first of them (a :class:`BlankLine` is counted in
        ``blank`` too, and never recorded as ``first_skipped``); ``errors``: the errors of the first of the
        ``count`` in order, as many as :attr:`named` still has room for (default: ``error`` alone), recorded there."""
        self.skipped += count
        if isinstance(error, BlankLine):
            self.blank += count
        elif self.first_skipped is None:
            self.first_skipped = error
        room = SKIPPED_NAMED - len(self.named)
        if room > 0:
            given = (error,) if errors is None and error is not None else errors or ()
            self.named += tuple(SkippedLine.of(e) for e in given[:room])


class BlankLine(InputError):
    """A blank (or whitespace-only) line of a JSON Lines or CSV trace: a bad line, which ``on_error="skip"`` skips
    (and counts apart, :class:`ReadState`)."""

    def __init__(self, name: str, ln: int):
        super().__init__(name, ln, None, "blank line (use on_error='skip' to skip blank lines)")


def blank_row(row: list[str]) -> bool:
    """Whether a CSV row (``csv.reader``'s fields) is a blank or whitespace-only line: no field (an empty line), or
    one field of whitespace alone. One empty field is a quoted empty value (``""``), a row of one column: no blank
    line."""
    return not row or (len(row) == 1 and row[0] != "" and not row[0].strip())


_JSON_TYPES = {type(None): "null", bool: "a boolean", int: "a number", float: "a number", str: "a string",
               list: "an array", dict: "an object"}


def json_type(obj: Any) -> str:
    """What a parsed JSON value is, in JSON's words (RFC 8259 §3): ``null``, ``an array``...

    Every "got X" message about a JSON value's type uses it (never Python's ``NoneType`` / ``dict`` / ``str``).

    >>> json_type(None), json_type([1]), json_type({"a": 1})
    ('null', 'an array', 'an object')
    """
    return _JSON_TYPES.get(type(obj), type(obj).__name__)


def invalid_json(exc: ValueError) -> str:
    """The one message of a line that is not JSON (``json.JSONDecodeError`` or another ``ValueError``):
    ``invalid JSON: REASON at column N``, naming a NUL byte (``\\x00``) where the parser stopped at one.
    Format detection and every JSON Lines reader say it alike (with file and line: InputError). A line that opens
    an array and ends before closing it (``[`` alone: a pretty-printed JSON array, ``json.dump(rows, indent=2)``;
    not ``[1,]``, whose error is inside the line) is named
    as such, with the fix (:data:`JSONL_FIX`)."""
    if isinstance(exc, json.JSONDecodeError):
        if exc.pos < len(exc.doc) and exc.doc[exc.pos] == "\x00":
            return f"invalid JSON: a NUL byte (\\x00) at column {exc.colno}"
        opens = exc.doc.lstrip(" \t\ufeff").startswith("[") and exc.pos >= len(exc.doc.rstrip())  # ends unclosed
        return (f"invalid JSON: {exc.msg.removesuffix(' at')} at column {exc.colno}"
                + ("; this line opens a JSON array spread over several lines, not JSON Lines: " + JSONL_FIX
                   if opens else ""))
    return f"invalid JSON: {exc}"


#: What a JSON array given as a trace needs: the end of both array messages (:func:`invalid_json`,
#: :func:`not_an_object`).
JSONL_FIX = "pcs reads one request object per line (jq -c '.[]' TRACE > TRACE.jsonl writes them so)"


def strict_loads(name: str, ln: int, line: bytes) -> dict:
    """Parse one line as a JSON object (UTF-8, no duplicate keys).

    Raises:
        InputError: blank line, invalid UTF-8 or JSON, duplicate key, or not an object.
    """
    if not line.strip():
        raise BlankLine(name, ln)
    try:
        obj = jsondepth.loads(line.decode("utf-8"), object_pairs_hook=jsondepth.no_duplicate_keys)
    except jsondepth.TooDeepError as exc:
        raise InputError(name, ln, None, str(exc)) from None
    except jsondepth.NumberTooLongError as exc:
        raise InputError(name, ln, exc.field, str(exc)) from None
    except UnicodeDecodeError as exc:
        raise InputError(name, ln, None, f"not UTF-8 ({bad_byte(line, exc.start)})") from None
    except ValueError as exc:
        raise InputError(name, ln, None, invalid_json(exc)) from None
    if not isinstance(obj, dict):
        raise InputError(name, ln, None, not_an_object(obj))
    return obj


def not_an_object(obj: Any) -> str:
    """The one message of a JSON line that is not an object: ``expected a JSON object, got`` its
    :func:`json_type`, and for an array whose first element is an object, that pcs reads JSON Lines (one request
    object per line, not an array of them: a file written by ``json.dump(rows)``). The readers and the format
    detection (:func:`pcs.trace.api.detect_format`) both give it."""
    hint = "; a JSON array of requests, not JSON Lines: " + JSONL_FIX \
        if isinstance(obj, list) and obj and isinstance(obj[0], dict) else ""
    return f"expected a JSON object, got {json_type(obj)}{hint}"


def get_int(obj: dict, key: str, name: str, ln: int, lo: int = 0, hi: int = _I64_MAX) -> int:
    """``obj[key]`` as an int in [lo, hi] (bools and floats rejected)."""
    if key not in obj:
        raise InputError(name, ln, key, "missing")
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise InputError(name, ln, key, f"must be an integer, got {quoted(v)}")
    if v < lo:
        raise InputError(name, ln, key, f"must be >= {lo}, got {v}")
    if v > hi:
        raise InputError(name, ln, key, f"must be <= {hi}, got {v}")
    return v


def get_time(obj: dict, key: str, name: str, ln: int) -> float:
    """``obj[key]`` as a finite number."""
    if key not in obj:
        raise InputError(name, ln, key, "missing")
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InputError(name, ln, key, f"must be a number, got {quoted(v)}")
    try:
        f = float(v)
    except OverflowError:               # an integer beyond float range (json.loads keeps it exact)
        raise InputError(name, ln, key, f"must be finite, got an integer of {len(str(abs(v))):,} digits, "
                                        f"{OUT_OF_FLOAT_RANGE}") from None
    if not math.isfinite(f):
        raise InputError(name, ln, key, f"must be finite, got {quoted(str(v), show=str)}")
    return f


#: The JSONL key of a converted lengths-only trace's first row naming its reuse assumption (``Trace.reuse`` of the
#: Azure or BurstGPT file it was read from, ``synthesised: ...``), beside ``"reuse": "synthetic"``
#: (:func:`pcs.trace.convert.write_trace`); readers ignore it on other rows, as any key they do not read.
REUSE_ASSUMPTION_KEY = "reuse_assumption"


def row_reuse_assumption(obj: dict, name: str, ln: int) -> str | None:
    """A row's ``reuse_assumption`` (:data:`REUSE_ASSUMPTION_KEY`), or None when it has none.

    Raises:
        InputError: it is not one line of printable text starting ``synthesised: `` (naming file, line and field).
    """
    v = obj.get(REUSE_ASSUMPTION_KEY)
    if v is None:
        return None
    if not isinstance(v, str) or not v.startswith("synthesised: ") or any(ord(c) < 32 or ord(c) == 127 for c in v):
        raise InputError(name, ln, REUSE_ASSUMPTION_KEY, "must be one line of text starting 'synthesised: ' (the "
                         f"reuse assumption pcs trace convert writes), got {quoted(v, show=repr)}")
    return v


def row_is_synthetic(obj: dict, name: str, ln: int) -> bool:
    """The optional ``reuse`` field of one JSONL row: True for ``"synthetic"``.

    Raises:
        InputError: ``reuse`` present but not one of :data:`REUSE_VALUES`.
    """
    v = obj.get("reuse")
    if v is None:
        return False
    if v not in REUSE_VALUES:
        raise InputError(name, ln, "reuse", f"must be one of {', '.join(map(json.dumps, REUSE_VALUES))}, "
                         f"got {quoted(v)}{close_tail(v, REUSE_VALUES) if isinstance(v, str) else ''}")
    return v == "synthetic"


def _likely_block_size(prompt: int, n: int) -> str:
    """What to say when ``n`` ids do not cover ``prompt`` tokens: B gives n ids iff ``ceil(prompt / B) == n``,
    i.e. ``prompt / n <= B < prompt / (n - 1)``; the power of two in that range within ``--block-size``'s
    1..:data:`pcs.argcheck.MAX_BLOCK_SIZE` (16 first: vLLM's and Bailian's block size), else the smallest such
    B; when none is in that range (or the prompt is empty), says so instead of suggesting one. In the API's
    words; the CLI shows ``--block-size 16`` (pcs.cli.common.option_names).

    >>> _likely_block_size(374, 24), _likely_block_size(3068, 192), _likely_block_size(1000, 3)
    ('was the trace recorded at another block size? (block_size=16 fits)', \
'was the trace recorded at another block size? (block_size=16 fits)', \
'was the trace recorded at another block size? (block_size=334 fits)')
    >>> _likely_block_size(10**18, 2), _likely_block_size(0, 2)
    ('no block size in 1..1,048,576 gives 2 ids for 1,000,000,000,000,000,000 tokens', 'an empty prompt has no blocks at any block size')
    """
    from pcs.argcheck import MAX_BLOCK_SIZE

    if prompt <= 0:
        return "an empty prompt has no blocks at any block size"
    lo = -(-prompt // n) if n > 0 else MAX_BLOCK_SIZE + 1
    hi = min((prompt - 1) // (n - 1) if n > 1 else MAX_BLOCK_SIZE, MAX_BLOCK_SIZE)   # ceil(prompt / B) == n
    if lo > hi:
        return (f"no block size in 1..{MAX_BLOCK_SIZE:,} gives {format_counted(n, 'id')} for "
                f"{format_counted(prompt, 'token')}")
    powers = [b for b in (16, *(1 << k for k in range(31))) if lo <= b <= hi]
    return f"was the trace recorded at another block size? (block_size={powers[0] if powers else lo} fits)"


def block_size_range(prompt: int, n: int) -> tuple[int, int]:
    """The block sizes B in 1..:data:`pcs.argcheck.MAX_BLOCK_SIZE` under which ``n`` ids cover ``prompt`` tokens,
    ``ceil(prompt / B) == n``, as ``(lo, hi)``, inclusive: ``prompt / n <= B < prompt / (n - 1)``; every B for an
    empty prompt with no ids; empty (``lo > hi``) when no B fits (ids for an empty prompt, none for tokens).

    >>> block_size_range(1024, 2), block_size_range(5000, 1), block_size_range(0, 0), block_size_range(0, 1)
    ((512, 1023), (5000, 1048576), (1, 1048576), (1048577, 1048576))
    """
    from pcs.argcheck import MAX_BLOCK_SIZE

    if prompt <= 0 or n <= 0:
        return (1, MAX_BLOCK_SIZE) if prompt <= 0 and n <= 0 else (MAX_BLOCK_SIZE + 1, MAX_BLOCK_SIZE)
    lo = -(-prompt // n)
    hi = min((prompt - 1) // (n - 1) if n > 1 else MAX_BLOCK_SIZE, MAX_BLOCK_SIZE)
    return lo, hi


def _fitting(lo: int, hi: int) -> int:
    """The block size a hint names in ``lo..hi`` (not empty): 16 (vLLM's and Bailian's), else the smallest power
    of two, else ``lo``."""
    powers = [b for b in (16, *(1 << k for k in range(31))) if lo <= b <= hi]
    return powers[0] if powers else lo


def block_size_hint(prompt: int, n: int, ln: int, before: Any) -> str:
    """:func:`_likely_block_size` of line ``ln`` (``n`` ids for ``prompt`` tokens) that holds for every line read
    before it too: ``before`` yields ``(line, prompt, ids)`` of those lines, and each line's block sizes
    (:func:`block_size_range`, an interval) are intersected, so the size named fits every line from the first
    to ``ln`` (``fits lines 1 to 7``; on line 1 just ``fits``, the line's own hint); when none does, the two lines that no single block size fits (the earlier one whose bound the
    line crosses), each with its range.

    >>> block_size_hint(5000, 1, 2, [(1, 1024, 2)])
    'no single block size fits both line 1 (2 ids for 1,024 tokens: block size 512..1,023) and line 2 (1 id for 5,000 tokens: block size 5,000..1,048,576)'
    >>> block_size_hint(1024, 2, 2, [(1, 1000, 2)])
    'was the trace recorded at another block size? (block_size=512 fits lines 1 to 2)'
    """
    lo, hi = block_size_range(prompt, n)
    if lo > hi:
        return _likely_block_size(prompt, n)
    low_at = high_at = (ln, prompt, n)          # the line setting each bound of the intersection so far
    for row in before:
        a, b = block_size_range(row[1], row[2])
        if a > hi or b < lo:                    # disjoint from the line whose bound it crosses
            return _no_single_size(row, high_at if a > hi else low_at)
        if a > lo:
            lo, low_at = a, row
        if b < hi:
            hi, high_at = b, row
    lines = f" lines 1 to {ln}" if ln > 1 else ""       # line 1: the line's own hint, as check_ids words it
    return f"was the trace recorded at another block size? (block_size={_fitting(lo, hi)} fits{lines})"


def _no_single_size(*rows: tuple[int, int, int]) -> str:
    """The hint of two lines (``(line, prompt, ids)`` each) no single block size fits."""
    def one(row: tuple[int, int, int]) -> str:
        a, b = block_size_range(row[1], row[2])
        return (f"line {row[0]} ({format_counted(row[2], 'id')} for {format_counted(row[1], 'token')}: "
                f"block size {a:,}..{b:,})")
    first, second = sorted(rows)
    return f"no single block size fits both {one(first)} and {one(second)}"


def check_ids(ids: Any, prompt: int, bs: int, name: str, ln: int, key: str = "hash_ids") -> list[int]:
    """Validate a block-id list: uint64 ints, ceil(prompt/bs) of them, no repeats.

    Raises:
        InputError: naming the first problem (the length rule is the Mooncake
            release's ``len(hash_ids) == ceil(input_length / 512)``).
    """
    if not isinstance(ids, list):
        raise InputError(name, ln, key, f"must be a list of integers, got {json_type(ids)}")
    for i, h in enumerate(ids):
        if isinstance(h, bool) or not isinstance(h, int):
            raise InputError(name, ln, key, f"element {i} must be an integer, got {quoted(h)}")
        if h < 0 or h > _U64_MAX:
            raise InputError(name, ln, key, f"element {i} = {h} does not fit an unsigned 64-bit id")
    want = -(-prompt // bs)
    if not ids and prompt > 0:
        raise InputError(name, ln, key, f"empty for a non-empty prompt of {format_counted(prompt, 'token')}")
    if len(ids) != want:
        raise InputError(name, ln, key, f"has {format_counted(len(ids), 'id')} but ceil({prompt:,} / block size "
                         f"{bs:,}) = {want:,}; "
                         f"{_likely_block_size(prompt, len(ids))}")
    if len(set(ids)) != len(ids):
        first: dict[int, int] = {}
        for i, h in enumerate(ids):
            if h in first:
                raise InputError(name, ln, key, f"id {h} repeated at positions {first[h]} and {i}")
            first[h] = i
    return ids


class _Columns:
    """Row accumulator for the line-by-line path."""

    def __init__(self, spec: FormatSpec):
        self.spec = spec
        self.ts: list[float] = []
        self.il: list[int] = []
        self.ol: list[int] = []
        self.lens: list[int] = [0]
        self.ids: list[int] = []
        self.extras: list[list[int]] = [[] for _ in spec.int_extras]
        self.types: list[str | None] = []

    def batch(self, bs: int) -> RequestBatch | None:
        if not self.ts:
            return None
        ex = [np.array(e, dtype=np.int64) for e in self.extras]
        return RequestBatch(
            0, bs, np.array(self.ts, dtype=np.float64) / self.spec.ts_per_s + 0.0,   # + 0.0: no -0.0 arrival
            np.array(self.il, dtype=np.int64), np.array(self.ol, dtype=np.int64),
            np.cumsum(np.array(self.lens, dtype=np.int64)), np.array(self.ids, dtype=np.uint64),
            *(ex + [None] * (3 - len(ex))), tuple(self.types) if self.spec.has_type else None)


def session_problem(chat_id: int, parent_chat_id: int, turn: int) -> tuple[str, str] | None:
    """(field, problem) of a Bailian row's session fields that no conversation can have, or None: a negative
    ``turn`` (turns count from the first, 0 or 1, up), a ``parent_chat_id`` equal to the row's own ``chat_id``
    (-1 is "no parent"). The fast lanes leave such a row to the authority (:func:`pcs.trace.jsonfast._checked`),
    which names file:line:field."""
    if turn < 0:
        return "turn", f"must be >= 0, got {turn}"
    if parent_chat_id != -1 and parent_chat_id == chat_id:
        return "parent_chat_id", f"is the row's own chat_id ({chat_id}): a request cannot continue itself"
    return None


def _slow_line(cols: _Columns, obj: dict, bs: int, name: str, ln: int, state: ReadState) -> None:
    spec = cols.spec
    ts = get_time(obj, "timestamp", name, ln)
    if abs(ts / spec.ts_per_s) > MAX_ARRIVAL_S:
        raise InputError(name, ln, "timestamp", arrival_error(ts / spec.ts_per_s))
    il = get_int(obj, "input_length", name, ln)
    ol = get_int(obj, "output_length", name, ln)
    if ol >= state.limits.output_below:
        raise InputError(name, ln, "output_length", state.limits.output_problem(ol))
    if "hash_ids" not in obj:
        raise InputError(name, ln, "hash_ids", "missing")
    ids = check_ids(obj["hash_ids"], il, bs, name, ln)
    extras = [get_int(obj, k, name, ln, lo=_I64_MIN) for k, _ in spec.int_extras]
    bad = session_problem(*extras) if len(extras) == 3 else None
    if bad is not None:
        raise InputError(name, ln, *bad)
    synthetic = row_is_synthetic(obj, name, ln)
    typ = obj.get("type")
    if spec.has_type and typ is not None and not isinstance(typ, str):
        raise InputError(name, ln, "type", f"must be a string, got {quoted(typ)}")
    if spec.has_type and isinstance(typ, str) and lone_surrogate(typ):
        raise InputError(name, ln, "type", f"a lone surrogate {lone_surrogate(typ)} is not text (not valid Unicode)")
    if state.check_order and ts < state.last_ts:
        raise InputError(name, ln, "timestamp", f"decreases ({ts:g} after {state.last_ts:g}); use sort= to reorder")
    state.last_ts = max(state.last_ts, ts)
    state.synthetic_rows += synthetic
    cols.ts.append(ts)
    cols.il.append(il)
    cols.ol.append(ol)
    cols.lens.append(len(ids))
    cols.ids.extend(ids)
    for acc, v in zip(cols.extras, extras):
        acc.append(v)
    cols.types.append(typ)


def check_hashid_line(fmt: str, obj: dict, bs: int, name: str, ln: int) -> None:
    """Check one parsed line ``obj`` (line ``ln``) as the ``fmt`` (``"mooncake"`` or ``"bailian"``) reader at block
    size ``bs`` checks it, alone (no order to keep); for a message that suggests that format
    (:func:`pcs.trace.api.format_hint`).

    Raises:
        InputError: the reader's own error for the line."""
    _slow_line(_Columns(MOONCAKE if fmt == "mooncake" else BAILIAN), obj, bs, name, ln, ReadState())


def _slow_chunk(spec: FormatSpec, first: int, chunk: bytes, bs: int, name: str,
                state: ReadState, on_error: str) -> RequestBatch | None:
    cols = _Columns(spec)
    for ln, line in iter_lines(first, chunk):
        try:
            _slow_line(cols, strict_loads(name, ln, line), bs, name, ln, state)
        except InputError as exc:
            if on_error != "skip":
                raise
            state.skip(exc)
    return cols.batch(bs)


def _shortcut(fast: bool | str) -> str | None:
    """The shortcut parser ``fast`` asks for (:mod:`pcs.trace.jsonfast`), or None for the authority alone.

    Raises:
        UserError: an unknown parser name, ``"simdjson"`` without pysimdjson installed, ``"native"``
            without the compiled twin, or ``PCS_NATIVE=c`` without it.
    """
    from pcs.extras import install_hint
    from pcs.trace.jsonfast import PARSERS, available

    if fast is False:
        return None
    if fast is True or fast == "auto":
        from pcs import _native

        if _native.resolve(None, "jsonrows") == "c":  # $PCS_NATIVE: auto or c, and the twin is built
            return "native"
        return next(p for p in PARSERS[1:] if available(p))
    if fast not in PARSERS:
        raise UnknownNameError("JSONL parser", fast, ("auto", *PARSERS))
    if not available(fast):
        why = ("the compiled pcs.trace._jsonrows is not built (reinstall with a C++ compiler: pip install -e .)"
               if fast == "native" else f"is not installed ({install_hint('fast')})")
        raise UserError(f"JSONL parser {shown_repr(fast)} {why}")
    return fast


def read_hashid_jsonl(path, name: str, spec: FormatSpec, block_size: int | None, state: ReadState,
                      on_error: str = "raise", fast: bool = True, side_by_side: bool = False,
                      decode_ahead: bool = False) -> Iterator[RequestBatch]:
    """Stream a Mooncake or Bailian JSONL file as :class:`RequestBatch` es.

    Args:
        path: file to read (``name`` is what errors call it).
        spec: :data:`MOONCAKE` or :data:`BAILIAN`.
        block_size: tokens per block, default ``spec.default_block_size``.
        state: skip counter and order check, updated in place.
        on_error: ``"raise"`` or ``"skip"`` (skip and count bad lines).
        fast: the shortcut for clean chunks (:mod:`pcs.trace.jsonfast`):
            True or ``"auto"`` (the compiled twin ``pcs.trace._jsonrows``
            unless ``PCS_NATIVE=python`` or it is not built, else pysimdjson
            when installed, else pyarrow), ``"native"``, ``"simdjson"``, ``"pyarrow"``, or False (``json.loads`` line by
            line only; tests use it to check every path agrees).
        side_by_side: the compiled twin writes the ids of consecutive chunks side by side
            (:func:`pcs.trace.jsonfast.parse_chunks`), for a caller that keeps and joins the batches.
        decode_ahead: with ``side_by_side`` and the compiled twin, each chunk decoded on a thread of its own while
            this thread reads the next one (:func:`pcs.trace.jsonfast.parse_chunks`); the same batches and errors.
    Yields:
        batches with ``first_request_id`` 0 (the caller renumbers).
    Raises:
        InputError: the first bad line, with ``on_error="raise"``.
        UserError: an unknown or missing ``fast`` parser.
    """
    bs = block_size or spec.default_block_size
    parser = _shortcut(fast)
    ahead = parser == "native" and side_by_side and decode_ahead
    chunks = iter_chunks(path, name=name, reuse=parser == "native", keep=ahead)   # the twin reads a view: no copy
    if parser is not None:
        from pcs.trace.jsonfast import parse_chunks
    batches = parse_chunks(parser, spec, chunks, bs, state, side_by_side, ahead) if parser else \
        ((f, c, None) for f, c in chunks)
    try:
        for first, chunk, batch in batches:
            if batch is None:
                batch = _slow_chunk(spec, first, chunk, bs, name, state, on_error)
            if batch is not None and len(batch):
                yield batch
    finally:
        batches.close()
