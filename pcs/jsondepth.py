"""pcs's one nesting rule for the JSON it reads: at most :data:`MAX_JSON_DEPTH` levels of arrays and objects.

``json.loads`` (the authority of every JSON reader in pcs) recurses once per
level and gives up with a ``RecursionError`` near Python's recursion limit
(1,000 frames, minus however deep the caller's stack already is: the same line
was refused at depth 990 and accepted at 950 depending on the call path), and
pyarrow's JSON reader accepts any depth. So pcs fixes the limit itself, below
Python's, and every reader refuses a deeper document with one message,
:data:`TOO_DEEP`, which says the JSON is nested too deeply, not that it is
invalid (docs/traces.md, "Input is strict"; tests/trace/test_json_depth.py).

The shortcut JSONL parsers (:mod:`pcs.trace.jsonfast`) take only lines with one
object and one array, so every nested line reaches the authority and this rule.
"""
from __future__ import annotations

import json
import re
import sys
from typing import Any

from pcs.errors import PickledAsIs, shown_repr

__all__ = ["MAX_JSON_DEPTH", "TOO_DEEP", "TooDeepError", "NumberTooLongError", "DuplicateKeyError", "duplicate_place", "long_integer",
           "too_long_text", "no_duplicate_keys", "loads"]

#: Deepest nesting accepted (a Mooncake line is 2 deep: the object and its id list).
MAX_JSON_DEPTH = 512
#: The message of every reader for a deeper document.
TOO_DEEP = (f"nested too deeply: more than {MAX_JSON_DEPTH} levels of arrays/objects (pcs's limit; the JSON "
            "itself may be valid)")


class TooDeepError(PickledAsIs, ValueError):
    """A JSON document nested deeper than :data:`MAX_JSON_DEPTH` (its text is :data:`TOO_DEEP`)."""

    def __init__(self) -> None:
        super().__init__(TOO_DEEP)


class NumberTooLongError(PickledAsIs, ValueError):
    """An integer with more digits than Python converts (``sys.get_int_max_str_digits()``, 4,300 by default):
    ``json.loads`` refuses it with advice for programmers (``sys.set_int_max_str_digits``); this names the
    number's place instead.

    Attributes:
        lineno: line of the number in the text (1-based). field: the key of the object member that holds it
        (its value, or the array it is an element of), None when no key does (a top-level array).
        digits: its digits. index: its position (0-based) in the array holding it, None when it is no array's
        element; the message names it (``element 2: number too long ...``). offset: where the number starts in
        the text (its sign or first digit), None when not known: a reader that names the whole key path
        (:func:`pcs.keylines.json_value_path`) finds it there.
    """

    def __init__(self, lineno: int, field: str | None, digits: int, index: int | None = None,
                 offset: int | None = None) -> None:
        self.lineno, self.field, self.digits, self.index, self.offset = lineno, field, digits, index, offset
        super().__init__(("" if index is None else f"element {index}: ") + too_long_text(digits))


def too_long_text(digits: int | None) -> str:
    """The one reason every reader gives for an integer past Python's digit limit: ``number too long (N digits)``
    (JSON, TOML, a CSV cell, a number option), located by :func:`long_integer`; ``digits`` None where the message
    quotes the number with its length already (:func:`pcs.errors.quoted`: ``'999...' (5,000 characters)``), which
    then names the limit instead: ``number too long (more than 4,300 digits)``."""
    if digits is None:
        limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 0
        return f"number too long (more than {limit:,} digits)" if limit else "number too long"
    return f"number too long ({digits:,} digits)"


def long_integer(text: str, syntax: str | None = None) -> "re.Match | None":
    """The first integer of ``text`` (an optional sign, digits not inside a float or a word) with more digits than
    Python converts (``sys.get_int_max_str_digits()``), its digits as group 1; None when there is none or no limit.
    The one locator of such numbers: this module's JSON reader and :mod:`pcs.configfile`'s TOML one name its line and
    key from it. ``syntax`` ``"json"`` / ``"toml"``: ``text`` is a whole document, whose strings (and TOML comments)
    are passed over (:func:`code_only`): digits in a string or a comment are not a number."""
    limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 0
    if not limit:
        return None
    return re.search(r"(?<![\d.eE+\-_])[-+]?(\d{%d,})(?![\d.eE])" % (limit + 1),
                     code_only(text, syntax) if syntax else text)


#: a JSON string; TOML's strings (multi-line basic and literal first, then one-line) and comments
_NOT_CODE = {"json": re.compile(r'"(?:[^"\\]|\\.)*"'),
             "toml": re.compile(r'"""(?:[^\\]|\\[\s\S])*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*')}


def code_only(text: str, syntax: str) -> str:
    """``text`` (a JSON or TOML document, ``syntax`` ``"json"`` / ``"toml"``) with every string (its quotes too) and
    TOML comment blanked to spaces, its newlines kept: the same length and lines, so an offset found in it is the
    offset in ``text``. For locating a value the parser refused (error paths only). A key written as a string is
    blanked too: a caller reads keys from ``text``."""
    return _NOT_CODE[syntax].sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)


def _too_long(text: str | bytes) -> NumberTooLongError | None:
    """The first integer of ``text`` past Python's digit limit, located (None when there is none or no limit)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    m = long_integer(text, "json")
    if m is None:
        return None
    field, index = _place(text, m.start())
    return NumberTooLongError(text.count("\n", 0, m.start()) + 1, field, len(m.group(1)), index, m.start())


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},:]')


def _place(text: str, pos: int) -> tuple[str | None, int | None]:
    """Where offset ``pos`` of a JSON text sits: the key of the innermost object member holding it (its value or
    an array inside it) and its index in the innermost array, when it is in one. One pass over the text before
    ``pos`` (an error path): strings skipped whole, so a comma or bracket inside one counts for nothing."""
    stack: list[list] = []          # ["{", key, expecting a key] or ["[", index]
    for t in _TOKEN.finditer(text, 0, pos):
        tok = t.group(0)
        top = stack[-1] if stack else None
        if tok in "{[":
            stack.append(["{", None, True] if tok == "{" else ["[", 0])
        elif tok in "}]":
            if stack:
                stack.pop()
        elif tok == ",":
            if top is not None and top[0] == "[":
                top[1] += 1
            elif top is not None:
                top[2] = True
        elif tok == ":":
            if top is not None and top[0] == "{":
                top[2] = False
        elif top is not None and top[0] == "{" and top[2]:
            top[1] = json.loads(tok)
    key = next((f[1] for f in reversed(stack) if f[0] == "{"), None)
    return key, (stack[-1][1] if stack and stack[-1][0] == "[" else None)


def _depth(obj: Any) -> int:
    """Levels of arrays/objects in a parsed value (a scalar is 0), without recursion."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        value, level = stack.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        stack.extend((c, level + 1) for c in children if isinstance(c, (dict, list)))
    return deepest


class DuplicateKeyError(PickledAsIs, ValueError):
    """A key given twice in one JSON object (``key``): ``json.loads`` keeps the last one silently, so
    ``"num_hidden_layers": 32, "num_hidden_layers": 16`` would read as 16 and a hand-edited ``"hit_ratio"`` given
    twice would draw one of its two values. RFC 8259 §4: the names within an object SHOULD be unique.

    Attributes:
        key: the key. lineno: the line (1-based) of its second occurrence, and field: the path of the object holding
        it (``tiers[1]``; None at the top level), both set by :func:`loads` (None from the hook alone).
    """

    def __init__(self, key: str) -> None:
        self.key = key
        self.lineno: int | None = None
        self.field: str | None = None
        super().__init__(f"key {shown_repr(key)} appears twice in one object")


def _child(frame: list, top: bool) -> str:
    """The path of the value a scan frame (``[kind, keys or index, path, key]``) is at."""
    if frame[0] == "[":
        return f"{frame[2] or ''}[{frame[1]}]"
    return frame[3] if top else f"{frame[2]}.{frame[3]}"


def duplicate_place(text: str, key: str) -> tuple[int, str | None] | None:
    """``(line, object path)`` where ``key`` is first given twice in one object of the JSON ``text`` (the line of
    its second occurrence, 1-based; the path ``a.b[3]`` of the object, None for the top level), or None. A scan of
    the text (json.decoder.scanstring reads each string), run only after :func:`no_duplicate_keys` refused it
    (``key``: the one it named; the hook sees an inner object before the one holding it, the scan sees text order).

    >>> duplicate_place('{"a": 1, "b": {"c": 1,\\n "c": 2}}', "c")
    (2, 'b')
    """
    from json.decoder import scanstring

    stack: list[list] = []            # [kind "{" or "[", keys seen or element index, path, last key]
    i, n, line, want_key = 0, len(text), 1, False
    while i < n:
        c = text[i]
        if c == '"':
            value, end = scanstring(text, i + 1)
            if want_key and stack and stack[-1][0] == "{":
                frame = stack[-1]
                if value == key and value in frame[1]:
                    return line, frame[2]
                frame[1].add(value)
                frame[3], want_key = value, False
            i = end
            continue
        if c in "{[":
            path = _child(stack[-1], len(stack) == 1) if stack else None
            stack.append([c, set() if c == "{" else 0, path, None])
            want_key = c == "{"
        elif c in "}]" and stack:
            stack.pop()
        elif c == "," and stack:
            if stack[-1][0] == "[":
                stack[-1][1] += 1
            else:
                want_key = True
        elif c == "\n":
            line += 1
        i += 1
    return None


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """THE ``object_pairs_hook`` of every JSON reader of pcs (its JSONL traces, config files, the JSON files
    ``pcs report`` and ``pcs sweep`` read back): an object's key/value pairs as a dict, a key given twice refused.

    >>> no_duplicate_keys([("a", 1), ("b", 2)])
    {'a': 1, 'b': 2}

    Raises:
        DuplicateKeyError: ``key 'a' appears twice in one object`` (the first key seen twice).
    """
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(key)
            seen.add(key)
    return out


def loads(text: str | bytes, **kwargs: Any) -> Any:
    """``json.loads(text, **kwargs)`` under the nesting rule.

    Only a text holding more than :data:`MAX_JSON_DEPTH` ``[`` and ``{`` bytes in
    all can be too deep, so the depth is measured (on the parsed value) for those alone.

    Raises:
        TooDeepError: nested deeper than :data:`MAX_JSON_DEPTH` (also when ``json.loads`` hits the recursion limit).
        DuplicateKeyError: from :func:`no_duplicate_keys` as the hook, its line and object located
            (:func:`duplicate_place`).
        NumberTooLongError: an integer past Python's digit limit (its line, key and digits).
        json.JSONDecodeError (a ValueError), UnicodeDecodeError: as ``json.loads``.
    """
    try:
        if text.count("[" if isinstance(text, str) else b"[") + text.count("{" if isinstance(text, str) else b"{") \
                <= MAX_JSON_DEPTH:
            return json.loads(text, **kwargs)
        obj = json.loads(text, **kwargs)
    except RecursionError:
        raise TooDeepError() from None
    except DuplicateKeyError as exc:
        place = duplicate_place(text if isinstance(text, str) else text.decode("utf-8", "replace"), exc.key)
        if place is not None:
            exc.lineno, exc.field = place
        raise
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError) or "digits" not in str(exc):
            raise
        too_long = _too_long(text)
        if too_long is None:
            raise
        raise too_long from None
    if _depth(obj) > MAX_JSON_DEPTH:
        raise TooDeepError()
    return obj
