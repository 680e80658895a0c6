"""The line where each key of a settings file (TOML or JSON) is written, for error messages.

``tomllib`` gives no positions and ``json.loads`` none after a successful parse, so a value found bad after
parsing (``workload[1].capacity_need = "-3GB"``) is located by reading the text once more, on error only:
:func:`toml_lines` / :func:`json_lines` map every key path -- spelled as the readers name fields, ``a.b[3].c``
(a table's key after a dot, an array's element by its 0-based index) -- to the 1-based line where that key (or
array element, or ``[table]`` / ``[[array]]`` header) is written. The first place wins when a path is written
more than once (``a.b = 1`` then ``a.c = 2`` for ``a``).

Both expect text their parser has accepted; on text they cannot follow they stop and return what they found, so a
path not in the map is said without a line, never with a wrong one (:class:`pcs.configfile.KeyLines`).
"""
from __future__ import annotations

import bisect
import json
import re
from typing import Iterator

__all__ = ["toml_lines", "json_lines", "json_values", "toml_value_path", "json_value_path"]

_JSON_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+|\s+')


def _join(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key


def json_values(text: str) -> Iterator[tuple[str, int, str]]:
    """``(path, line, token)`` of every value of the JSON ``text``, in the file's order: ``token`` is the
    scalar as written (``NaN``, ``1e999``, ``"x"``) or ``{`` / ``[`` for a container; ``line`` is the line of the
    value's key in an object, of the value itself in an array. Stops at a token it cannot place."""
    for path, line, tok, _ in _json_scan(text):
        yield path, line, tok


def json_value_path(text: str, offset: int) -> str | None:
    """The path (``fixed.x[1]``, as :func:`json_lines` spells it) of the value written at ``offset`` of the JSON
    ``text`` (a number's sign or first digit), or None when no value starts there or it is the top level."""
    return next((path or None for path, _, _, start in _json_scan(text) if start == offset), None)


def _json_scan(text: str) -> Iterator[tuple[str, int, str, int]]:
    """:func:`json_values`, each value with its offset in ``text``."""
    stack: list[list] = []      # [is_object, path, key or index, key's line]
    line, want_key = 1, False
    for m in _JSON_TOKEN.finditer(text):
        tok = m.group()
        if tok[0] in " \t\r\n":
            line += tok.count("\n")
        elif tok in ":":
            continue
        elif tok == ",":
            if not stack:
                return
            if stack[-1][0]:
                want_key = True
            else:
                stack[-1][2] += 1
        elif tok in "}]":
            if not stack:
                return
            stack.pop()
        elif want_key:
            if tok[0] != '"':
                return
            stack[-1][2], stack[-1][3], want_key = json.loads(tok), line, False
        else:
            if not stack:
                path, at = "", line
            elif stack[-1][0]:
                path, at = _join(stack[-1][1], str(stack[-1][2])), stack[-1][3]
            else:
                path, at = f"{stack[-1][1]}[{stack[-1][2]}]", line
            yield path, at, tok, m.start()
            if tok in "{[":
                stack.append([tok == "{", path, None if tok == "{" else 0, line])
                want_key = tok == "{"


def json_lines(text: str) -> dict[str, int]:
    """Key path -> line of the JSON ``text`` (module docstring)."""
    out: dict[str, int] = {}
    for path, line, _ in json_values(text):
        if path:
            out.setdefault(path, line)
    return out


class _Lost(Exception):
    """The TOML scan cannot follow the text (it stops; what it found stands)."""


_BARE = re.compile(r"[A-Za-z0-9_-]+")
_BASIC = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_LITERAL = re.compile(r"'[^'\n]*'")
_SCALAR = re.compile(r"[^,\]}\n#]*")


def _escaped(t: str, j: int, start: int) -> bool:
    """Whether the character at ``t[j]`` is escaped in a TOML basic string whose content begins at ``start``: an
    odd run of backslashes before it (``\\"`` is an escaped quote, ``\\\\"`` a backslash then the quote)."""
    k = j
    while k > start and t[k - 1] == "\\":
        k -= 1
    return (j - k) % 2 == 1


class _Toml:
    """One pass over TOML text recording key paths (:func:`toml_lines`); :class:`_Lost` where it cannot follow."""

    def __init__(self, text: str):
        self.text = text
        self.newlines = [m.start() for m in re.finditer("\n", text)]
        self.lines: dict[str, int] = {}
        self.arrays: dict[str, int] = {}     # array-of-tables path -> entries so far
        self.values: dict[int, str] = {}     # offset where a value starts -> its path

    def line(self, i: int) -> int:
        return bisect.bisect_left(self.newlines, i) + 1

    def note(self, path: str, i: int) -> None:
        self.lines.setdefault(path, self.line(i))

    def space(self, i: int, newlines: bool = False) -> int:
        t = self.text
        while i < len(t):
            if t[i] in " \t" or (newlines and t[i] in "\r\n"):
                i += 1
            elif newlines and t[i] == "#":
                j = t.find("\n", i)     # a comment runs to its line's end (or the text's)
                i = j if j >= 0 else len(t)
            else:
                break
        return i

    def key(self, i: int) -> tuple[list[str], int]:
        parts = []
        while True:
            i = self.space(i)
            m = (_BASIC if self.text.startswith('"', i) else _LITERAL if self.text.startswith("'", i) else _BARE).match(self.text, i)
            if m is None:
                raise _Lost(i)
            tok = m.group()
            parts.append(json.loads(tok) if tok[0] == '"' else tok.strip("'"))
            i = self.space(m.end())
            if not self.text.startswith(".", i):
                return parts, i
            i += 1

    def value(self, i: int, path: str) -> int:
        t = self.text
        self.values.setdefault(i, path)
        for quote in ('"""', "'''"):
            if t.startswith(quote, i):
                end = t.find(quote, i + 3)
                while end >= 0 and quote == '"""' and _escaped(t, end, i + 3):
                    end = t.find(quote, end + 1)
                if end < 0:
                    raise _Lost(i)
                end += 3
                for _ in range(2):       # up to two quotes just before the closing three belong to the string
                    end += end < len(t) and t[end] == quote[0]
                return end
        if t.startswith('"', i) or t.startswith("'", i):
            m = (_BASIC if t[i] == '"' else _LITERAL).match(t, i)
            if m is None:
                raise _Lost(i)
            return m.end()
        if t.startswith("[", i):
            return self.items(i + 1, path, "]", lambda k, j: self.value(j, f"{path}[{k}]"))
        if t.startswith("{", i):
            return self.items(i + 1, path, "}", lambda k, j: self.pair(j, path))
        return _SCALAR.match(t, i).end()

    def items(self, i: int, path: str, close: str, one) -> int:
        """The entries of an array (``close`` ``]``) or inline table (``}``) from ``i``, each by ``one(k, i)``."""
        k = 0
        while True:
            i = self.space(i, newlines=True)
            if self.text.startswith(close, i):
                return i + 1
            if close == "]":
                self.note(f"{path}[{k}]", i)
            i = self.space(one(k, i), newlines=True)
            k += 1
            if self.text.startswith(",", i):
                i += 1
            elif not self.text.startswith(close, i):
                raise _Lost(i)

    def pair(self, i: int, prefix: str) -> int:
        """``key = value`` at ``i`` under ``prefix``: notes each dotted part's path."""
        start = i
        parts, i = self.key(i)
        path = prefix
        for p in parts:
            path = _join(path, p)
            self.note(path, start)
        if not self.text.startswith("=", i):
            raise _Lost(i)
        return self.value(self.space(i + 1), path)

    def header(self, parts: list[str], is_array: bool, i: int) -> str:
        path = ""
        for n, p in enumerate(parts):
            path = _join(path, p)
            self.note(path, i)       # also an array of tables by its name alone (``workload``)
            if n == len(parts) - 1 and is_array:
                self.arrays[path] = self.arrays.get(path, 0) + 1
            if path in self.arrays:
                path += f"[{self.arrays[path] - 1}]"
        return path

    def run(self) -> None:
        t, prefix, i = self.text, "", 0
        while (i := self.space(i, newlines=True)) < len(t):
            if t.startswith("[", i):
                is_array = t.startswith("[[", i)
                parts, j = self.key(i + 1 + is_array)
                if not t.startswith("]]" if is_array else "]", j):
                    raise _Lost(j)
                prefix = self.header(parts, is_array, i)
                self.note(prefix, i)
                i = j + 1 + is_array
            else:
                i = self.pair(i, prefix)


def toml_lines(text: str) -> dict[str, int]:
    """Key path -> line of the TOML ``text`` (module docstring): ``[table]`` and ``[[array]]`` headers (the
    ``n``-th ``[[workload]]`` is ``workload[n-1]``), dotted and quoted keys, inline tables and arrays, across
    lines; multi-line strings are stepped over."""
    return _scanned(text).lines


def toml_value_path(text: str, offset: int) -> str | None:
    """The key path (``fixed.x[0].a``, as :func:`toml_lines` spells it: a quoted key by its name, ``a.b."c"`` is
    ``a.b.c``) of the value written at ``offset`` of the TOML ``text`` (a number's sign or first digit), or None
    when the scan finds no value starting there."""
    return _scanned(text).values.get(offset)


def _scanned(text: str) -> _Toml:
    """One scan of the TOML ``text``, as far as it can follow it."""
    scan = _Toml(text)
    try:
        scan.run()
    except (_Lost, IndexError):
        pass
    return scan
