"""Block hashes for traces that record lengths only (Azure, BurstGPT): synthesised prefix reuse, flagged.

A length-only row says when a request came and how long its prompt and
answer were, not what the prompt said, so which blocks it shares with
earlier requests is unknown. pcs does not guess silently: it builds the ids
from an explicit :class:`ReuseModel` whose :meth:`ReuseModel.describe` text
travels with the trace (``Trace.reuse``) into ``trace stats`` and every
report, so a hit ratio measured on these ids is read as a what-if.

The model (docs/semantics.md §1; the multi-turn rule is the chat-API
convention that a request resends the whole conversation so far):

- every request of a ``namespace`` (the model name: two models never share
  KV) starts with the same ``system_prompt_tokens`` tokens (default 0);
- with ``sessions``, a request with a session id continues that session: its
  first ``min(prompt, C)`` tokens are the session's conversation so far
  (``C`` = previous prompt + previous answer tokens), the rest is new;
- everything else is new text: fresh block hashes.

So a block hash is shared exactly when its whole prefix is, as chained hashes
are. Ids are dense ints in first-appearance order (as the Mooncake release
numbers its ids). Memory: one id list per live session.
"""
from __future__ import annotations

import re

from dataclasses import dataclass
from typing import Iterable, Iterator, NamedTuple

import numpy as np

from pcs.errors import InputError, UserError, quoted, shown_repr
from pcs.trace.request import RequestBatch

__all__ = ["LengthRow", "MAX_LENGTH_TOKENS", "ReuseModel", "cell_reason", "check_length", "header_problem", "meant_column", "misspelt_column", "twice_named", "unknown_columns_note", "synthesise_batches",
           "token_count"]

#: Largest token count one field of a length-only row may hold (2**24 =
#: 16,777,216). These traces carry no ids, so pcs materialises one id per
#: block of every length it reads: a bound is what keeps one 40-byte row from
#: asking for 10**13 ids. 2**24 is above the longest context window any
#: published model serves (10M tokens) and keeps one row's ids (at most
#: 2 * 2**24 at block size 1, prompt plus session answer) well inside memory.
#: docs/traces-formats.md "Length-only traces" states the bound.
MAX_LENGTH_TOKENS = 2 ** 24


def check_length(n: int, field: str, name: str, ln: int) -> int:
    """Return token count ``n`` if ``0 <= n <= MAX_LENGTH_TOKENS``.

    Args:
        n: the parsed count (tokens); field/name/ln: for the error.
    Raises:
        InputError: ``name:ln: field 'X': ...`` naming the bound.

    >>> check_length(16777216, "ContextTokens", "f.csv", 2)
    16777216
    """
    if n < 0:
        raise InputError(name, ln, field, f"must be >= 0, got {n}")
    if n > MAX_LENGTH_TOKENS:
        shown = str(n) if len(str(n)) <= 24 else str(n)[:20] + "..."
        raise InputError(name, ln, field, f"{shown} tokens is past what pcs models for a length-only trace "
                         f"(at most {MAX_LENGTH_TOKENS:,} = 2**24 tokens per request; docs/traces-formats.md)")
    return n


def cell_reason(v: str, expected: str) -> str:
    """Why a length cell of a CSV trace is refused: an integer past Python's digit limit is "number too long (N
    digits)" (:func:`pcs.jsondepth.long_integer`, the one locator, as the JSON readers say), anything else
    ``expected`` (e.g. "must be an integer in ASCII digits 0-9") and the cell quoted (:func:`pcs.errors.quoted`: a
    long one cut, with its length)."""
    from pcs import jsondepth

    m = jsondepth.long_integer(v)
    return jsondepth.too_long_text(len(m.group(1))) if m is not None else f"{expected}, got {quoted(v, show=repr)}"


#: a token-count cell: ASCII digits, optionally a fraction of zeros (``4808``, ``4808.0``); no sign, exponent or
#: bare point (``-0``, ``1e3``, ``374.`` are refused: a count is written as the number it is)
_WHOLE = re.compile(r"([0-9]+)(?:\.0+)?")


def token_count(v: str, field: str, name: str, ln: int) -> int:
    """One token-count cell of a length-only CSV trace (Azure, BurstGPT: the one rule of both readers): a whole
    number in ASCII digits, written as an integer or with a zero fraction (some exports write counts as
    ``472.0``), at most :data:`MAX_LENGTH_TOKENS` (:func:`check_length`).

    Raises:
        InputError: not a whole number in those digits (``4808.5``, ``abc``, ``nan``, ``1e3``, ``-0``, ``374.``,
            ``4808.0000000000001``), or past the bound (file, line, field).
    """
    match = _WHOLE.fullmatch(v.strip(" \t"))
    try:
        n = int(match.group(1))    # the digits themselves: exact past 2**53, where a float is not
    except (AttributeError, ValueError):       # no match; more digits than Python converts (cell_reason says so)
        raise InputError(name, ln, field, cell_reason(v, "must be a whole number of tokens in ASCII digits 0-9")) \
            from None
    return check_length(n, field, name, ln)


def header_problem(row: list[str], required: Iterable[str], optional: Iterable[str] = ()) -> str | None:
    """What is wrong with a CSV header ``row`` (its names stripped) that must hold every name of ``required`` and
    may hold those of ``optional``, the one wording of every CSV reader (Azure, BurstGPT), checked in this order: a
    name given twice (``gives column 'Model' twice``: which of the two to read would be a guess; an empty name is
    no name, :func:`twice_named`); the names it lacks, with the header's name that differs from one only in case,
    spacing or punctuation (``'contexttokens' differs only in case``); a misspelt column (:func:`misspelt_column`). None when the header holds the format's
    columns; a column that matches none of them is read past, with a note (:func:`unknown_columns_note`).

    >>> header_problem(["TIMESTAMP", "contexttokens", "GeneratedTokens"], ["TIMESTAMP", "ContextTokens", "GeneratedTokens"])
    "lacks 'ContextTokens' ('contexttokens' differs only in case: column names are case-sensitive)"
    >>> header_problem(["a", " b", "a"], ["a", "b"]), header_problem(["a", "b", "c"], ["a", "b"], ["d"])
    ("gives column 'a' twice", None)
    >>> header_problem(["Timestamp", "SessionID"], ["Timestamp"], ["Session ID"])
    "has an unknown column 'SessionID' (did you mean 'Session ID'?)"
    """
    names = [c.strip() for c in row]
    twice = twice_named(names)
    if twice is not None:
        return f"gives column {quoted(twice, show=repr)} twice"
    known = [*required, *optional]
    missing = [c for c in required if c not in names]
    if not missing:
        return misspelt_column(names, known)
    meant = [(m, c) for m in missing for c in names if c not in known and _squashed(c) == _squashed(m)]
    cased = all(c.lower() == m.lower() for m, c in meant)
    hint = "; ".join(f"{quoted(c, show=repr)} differs only in case" + ("" if cased else ", spacing or punctuation")
                     for m, c in meant)
    return (f"lacks {', '.join(quoted(m, show=repr) for m in missing)}"
            + (f" ({hint}{': column names are case-sensitive' if cased else ''})" if meant else ""))


def twice_named(names: list[str]) -> str | None:
    """The first name of a CSV header ``names`` (stripped) given twice, else None; an empty name is no name (a
    pandas index column and a trailing comma are both read past: :func:`unknown_columns_note`)."""
    return next((c for i, c in enumerate(names) if c and c in names[:i]), None)


def _squashed(name: str) -> str:
    """``name`` in lower case without spaces, punctuation or underscores (``Session_ID`` -> ``sessionid``)."""
    return re.sub(r"[\W_]+", "", name.lower())


def meant_column(name: str, known: Iterable[str]) -> str | None:
    """The column of ``known`` that a header name ``name`` (stripped, none of ``known``) was meant to be: one it
    differs from only in case, spacing or punctuation (``SessionID``, ``session_id`` -> ``Session ID``), else the
    closest that did-you-mean names (:func:`pcs.choices.close_names`: ``second`` -> ``seconds``); None for an
    empty name or one close to none (``Unnamed: 0``, ``std``, ``Failed``): the one rule of which unknown column
    every CSV reader refuses (:func:`misspelt_column`) and which it reads past (:func:`unknown_columns_note`).

    >>> meant_column("Session_ID", ["Timestamp", "Session ID"]), meant_column("std", ["tokens", "seconds", "s"])
    ('Session ID', None)
    """
    from pcs.choices import close_names

    known = list(known)
    if not _squashed(name):
        return None
    same = [k for k in known if _squashed(k) == _squashed(name)]
    close = same or close_names(name, known)
    return close[0] if close else None


def misspelt_column(names: list[str], known: Iterable[str]) -> str | None:
    """``has an unknown column 'X' (did you mean 'Y'?)`` for the first name of a CSV header ``names`` (stripped)
    that is none of ``known`` but was meant for one (:func:`meant_column`; a case-only difference says so, as
    names are case-sensitive), else None. A misspelt column is refused, never read past: read past, an optional
    column's misspelling (BurstGPT's ``SessionID``) would silently turn its meaning off."""
    from pcs.choices import did_you_mean

    known = list(known)
    for c in names:
        meant = meant_column(c, known) if c not in known else None
        if meant is not None:
            hint = (f"{quoted(meant, show=repr)} differs only in case: column names are case-sensitive"
                    if meant.lower() == c.lower() else
                    f"did you mean {quoted(meant, show=repr)}?" if _squashed(meant) == _squashed(c) else
                    did_you_mean(c, known).strip())
            return f"has an unknown column {quoted(c, show=repr)} ({hint})"
    return None


def unknown_columns_note(where: str, names: Iterable[str], known: Iterable[str], fold: bool = False) -> str | None:
    """The note on the columns of a CSV header ``names`` (stripped) that are none of ``known`` (compared in lower
    case with ``fold``) and meant for none of them (:func:`meant_column`; one that is was refused), which every CSV
    reader reads past (a pandas index, a trailing comma, a column of the user's own: docs/traces-formats.md), each
    named once; ``where``: ``FILE:LINE`` of the header. None when every column is known.

    >>> unknown_columns_note("t.csv:1", ["TIMESTAMP", "", "Region", ""], ["TIMESTAMP", "NumImages"])
    "t.csv:1: columns '' (an empty name: a pandas index column or a trailing comma) and 'Region' read past: not columns pcs reads (its columns: TIMESTAMP, NumImages)"
    """
    known = list(known)
    seen = {k.lower() for k in known} if fold else set(known)
    unknown = list(dict.fromkeys(c.strip() for c in names if (c.strip().lower() if fold else c.strip()) not in seen
                                 and meant_column(c.strip(), known) is None))
    if not unknown:
        return None
    shown = [f"{quoted(c, show=repr)}{'' if c else ' (an empty name: a pandas index column or a trailing comma)'}"
             for c in unknown]
    listed = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"
    one = len(shown) == 1
    return (f"{where}: {'column' if one else 'columns'} {listed} read past: {'not a column' if one else 'not columns'}"
            f" pcs reads (its columns: {', '.join(known)})")


class LengthRow(NamedTuple):
    """One request of a length-only trace.

    Attributes:
        arrival_s: seconds from the trace's origin.
        prompt_tokens, output_tokens: lengths in tokens (>= 0).
        session: session/conversation id, or None.
        namespace: what may share KV with what (the model name), "" for one namespace.
        type: request type as the trace spells it (BurstGPT ``Log Type``), or None.
    """

    arrival_s: float
    prompt_tokens: int
    output_tokens: int
    session: str | None = None
    namespace: str = ""
    type: str | None = None


@dataclass(frozen=True, slots=True)
class ReuseModel:
    """How synthesised ids share prefixes (module docstring).

    Attributes:
        sessions: continue a session's conversation when a row has a session id.
        system_prompt_tokens: tokens of one system prompt every request of a
            namespace starts with (>= 0).
    """

    sessions: bool = True
    system_prompt_tokens: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.system_prompt_tokens, bool) or not isinstance(self.system_prompt_tokens, int) \
                or self.system_prompt_tokens < 0:
            raise UserError(f"system_prompt_tokens must be an integer >= 0, got {shown_repr(self.system_prompt_tokens)}")

    def describe(self, has_sessions: bool) -> str:
        """One line for reports: what reuse was assumed."""
        parts = []
        if self.sessions and has_sessions:
            parts.append("a session's request resends its conversation so far (previous prompt + answer)")
        if self.system_prompt_tokens:
            parts.append(f"every request of a model starts with one {self.system_prompt_tokens}-token system prompt")
        if not parts:
            return "synthesised: none (lengths only; every block is new, so every hit ratio is 0)"
        return "synthesised: " + "; ".join(parts)


class _Ids:
    """Dense fresh ids and the per-namespace / per-session prefixes."""

    def __init__(self, block_size: int, model: ReuseModel):
        self.bs = block_size
        self.model = model
        self.next_id = 0
        self.system: dict[str, list[int]] = {}
        self.conv: dict[tuple[str, str], tuple[list[int], int]] = {}

    def fresh(self, n: int) -> list[int]:
        out = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        return out

    def base(self, r: LengthRow) -> tuple[list[int], int]:
        """Full-block hashes and token length of the text a request starts with."""
        if self.model.sessions and r.session is not None and (r.namespace, r.session) in self.conv:
            return self.conv[(r.namespace, r.session)]
        s = self.model.system_prompt_tokens
        if r.namespace not in self.system:
            self.system[r.namespace] = self.fresh(s // self.bs)
        return self.system[r.namespace], s

    def request(self, r: LengthRow) -> list[int]:
        bs, p = self.bs, r.prompt_tokens
        base_ids, base_len = self.base(r)
        m = min(p, base_len) // bs          # full blocks inside the shared text
        ids = base_ids[:m] + self.fresh(-(-p // bs) - m)
        if self.model.sessions and r.session is not None:
            conv_len = p + r.output_tokens  # the conversation the next turn resends
            full = p // bs
            self.conv[(r.namespace, r.session)] = (ids[:full] + self.fresh(conv_len // bs - full), conv_len)
        return ids


def synthesise_batches(rows: Iterable[LengthRow], block_size: int, model: ReuseModel = ReuseModel(), *,
                       with_sessions: bool = False, with_type: bool = False,
                       rows_per_batch: int = 1 << 14) -> Iterator[RequestBatch]:
    """Turn length-only rows (in arrival order) into request batches with synthesised ids.

    Args:
        rows: :class:`LengthRow` s in the order their reuse is decided (arrival).
        block_size: tokens per block (>= 1).
        model: the reuse assumption.
        with_sessions: fill ``session_id`` (the trace has a session column).
        with_type: fill ``type`` (the trace has a type column).
    Yields:
        :class:`RequestBatch` es; ``session_id`` holds a dense int per
        (namespace, session) in first-appearance order (-1: none).

    Worked example (16-token blocks): a 40-token prompt gets 3 new ids; the
    session's conversation is then 40 + 10 = 50 tokens, whose block 2 (tokens
    32-47: prompt end and answer start) is new id 3; the next 60-token turn
    resends those 50 tokens, so it shares blocks 0, 1 and 3 and adds id 4;
    a session-less request shares nothing.

    >>> rows = [LengthRow(0.0, 40, 10, "s"), LengthRow(1.0, 60, 0, "s"), LengthRow(2.0, 20, 0)]
    >>> b = next(synthesise_batches(rows, 16))
    >>> [b.block_hashes[b.block_offsets[i]:b.block_offsets[i + 1]].tolist() for i in range(3)]
    [[0, 1, 2], [0, 1, 3, 4], [5, 6]]
    """
    ids = _Ids(block_size, model)
    sess_num: dict[tuple[str, str], int] = {}
    buf: list[tuple[LengthRow, list[int]]] = []
    for r in rows:
        buf.append((r, ids.request(r)))
        if r.session is not None:
            sess_num.setdefault((r.namespace, r.session), len(sess_num))
        if len(buf) >= rows_per_batch:
            yield _batch(buf, block_size, sess_num if with_sessions else None, with_type)
            buf = []
    if buf:
        yield _batch(buf, block_size, sess_num if with_sessions else None, with_type)


def _batch(buf: list, bs: int, sess_num: dict | None, with_type: bool) -> RequestBatch:
    lens = np.array([len(i) for _, i in buf], dtype=np.int64)
    offs = np.zeros(len(buf) + 1, dtype=np.int64)
    np.cumsum(lens, out=offs[1:])
    flat = np.fromiter((h for _, i in buf for h in i), dtype=np.uint64, count=int(offs[-1]))
    sid = None if sess_num is None else np.array(
        [-1 if r.session is None else sess_num[(r.namespace, r.session)] for r, _ in buf], dtype=np.int64)
    return RequestBatch(0, bs, np.array([r.arrival_s for r, _ in buf], dtype=np.float64),
                        np.array([r.prompt_tokens for r, _ in buf], dtype=np.int64),
                        np.array([r.output_tokens for r, _ in buf], dtype=np.int64), offs, flat,
                        session_id=sid, type=tuple(r.type for r, _ in buf) if with_type else None)
