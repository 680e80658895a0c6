"""Read a small settings file (TOML or JSON) into a dict.

Used by ``pcs budget --workloads``, ``--hardware-file`` and (JSON only,
:func:`read_json_object`) a Hugging Face ``config.json``. TOML needs
Python >= 3.11 (stdlib ``tomllib``) or the ``tomli`` package.

Every problem names the file: a device or a file over :data:`MAX_SETTINGS_BYTES`
(refused before reading), text that is not UTF-8, invalid or too deeply
nested JSON/TOML, JSON's non-standard ``NaN`` / ``Infinity`` and numbers that
overflow to infinity (``1e999``), a string holding a lone surrogate (a ``\\ud800`` escape, which no UTF-8
output can hold; named by its field, as the trace readers name theirs), a key given twice in one JSON object (TOML
refuses it itself), a top level that is not a table. A key the
reader does not know is refused by :func:`refuse_unknown_keys`.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Iterable, Iterator

from pcs import jsondepth
from pcs.choices import did_you_mean
from pcs.errors import OUT_OF_FLOAT_RANGE, InputError, UserError, bad_byte, quoted, shown_path, shown_repr
from pcs.units import a_or_an

__all__ = ["MAX_SETTINGS_BYTES", "SETTINGS_SUFFIXES", "unread_suffix", "read_text", "read_mapping", "read_mapping_lines", "read_json_object",
           "read_json_object_lines", "KeyLines", "refuse_unknown_keys", "WrittenFloat", "as_written"]

#: The suffixes of the settings files :func:`read_mapping` reads, and the language each is read as.
SETTINGS_SUFFIXES = {".toml": "TOML", ".json": "JSON"}
#: Suffixes of languages pcs does not read, named so the refusal says what the file is and the way out.
_UNREAD_LANGUAGES = {".yaml": "YAML", ".yml": "YAML", ".ini": "INI", ".cfg": "INI", ".conf": "INI", ".xml": "XML"}
#: The languages whose files map onto TOML as they are (nested tables of keys): the way out is to convert the file;
#: an INI or XML file (sections of strings, elements and attributes) is written anew.
_AS_TOML = ("YAML",)


def unread_suffix(path: str | Path) -> str:
    """The message refusing a settings file whose suffix :func:`read_mapping` does not read: what pcs reads (from
    :data:`SETTINGS_SUFFIXES`, by the suffix), and, for a known language pcs does not read (YAML), the way out;
    else the nearest suffix (:func:`pcs.choices.did_you_mean`).

    ``x.yaml`` -> ``"x.yaml: a YAML file (.yaml), which pcs does not read: it reads settings as TOML (.toml) or
    JSON (.json), by the suffix; convert the file to TOML (the same tables and keys)"``; ``x.xml`` -> ``"x.xml: an
    XML file (.xml), ...; write its settings as TOML"`` (INI and XML are not tables of keys as they stand).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    reads = " or ".join(f"{lang} ({s})" for s, lang in SETTINGS_SUFFIXES.items())
    if suffix in _UNREAD_LANGUAGES:
        lang = _UNREAD_LANGUAGES[suffix]
        out = ("convert the file to TOML (the same tables and keys)" if lang in _AS_TOML else
               "write its settings as TOML")
        return (f"{shown_path(path)}: {a_or_an(lang)} file ({path.suffix}), which pcs does not read: it reads "
                f"settings as {reads}, by the suffix; {out}")
    what = f"unknown file type {shown_repr(path.suffix)}" if suffix else "no suffix"
    near = did_you_mean(suffix, SETTINGS_SUFFIXES) if suffix else ""
    return f"{shown_path(path)}: {what}; {near}pcs reads {reads}, by the suffix"


#: Largest settings file read, bytes (a model config is a few kB; 16 MiB leaves room for anything real).
MAX_SETTINGS_BYTES = 16 << 20


def read_text(path: str | Path, keyword: str = "path") -> str:
    """The text of a small input file (settings, a CSV of points, a template): a regular file (not a pipe:
    it would block until a writer came) of at most :data:`MAX_SETTINGS_BYTES`, decoded as UTF-8 without a leading byte-order mark (Windows editors
    write one; JSONL and CSV traces skip it too). ``keyword``: the caller's argument that named ``path``.

    Raises:
        PathError: missing, a directory or not readable, naming ``keyword`` (:mod:`pcs.trace.pathcheck`).
        InputError: a device, a FIFO or socket (not a regular file), too large, or not UTF-8 (naming the file
            and line).
    """
    from pcs.trace.pathcheck import check_regular_file
    from pcs.trace.source import check_source

    check_source(path, str(path), keyword)
    check_regular_file(path, str(path))
    path = Path(path)
    with open(path, "rb") as f:
        data = f.read(MAX_SETTINGS_BYTES + 1)
    if len(data) > MAX_SETTINGS_BYTES:
        raise InputError(str(path), None, None, f"larger than {MAX_SETTINGS_BYTES >> 20} MiB: not a settings file")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")   # a UTF-8 BOM, as the trace readers skip it
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise InputError(str(path), line, None, f"not UTF-8 text ({bad_byte(data, exc.start)}); save the file as UTF-8") from None


class KeyLines:
    """Where the keys of one settings file are written (:mod:`pcs.keylines`), worked out from its text on the
    first question (after an error), never on a good file's way through.

    Attributes:
        path: the file as the user named it (as :class:`InputError` names it).
        prefixes: where a field is looked for, in order: ``("text_config.", "")`` for a Hugging Face config whose
            ``text_config`` overrides the top level (the reader's field ``sliding_window`` is then
            ``text_config.sliding_window`` when written there); ``("",)`` by default.
    """

    def __init__(self, path: str | Path, text: str, kind: str):
        self.path = str(path)
        self.prefixes: tuple[str, ...] = ("",)
        self._text, self._kind, self._lines = text, kind, None

    def line(self, field: str) -> int | None:
        """The 1-based line where ``field`` (``workload[1].capacity_need``) is written, or None when it cannot be
        found (then a message names the field without a line, never a wrong line)."""
        if self._lines is None:
            from pcs.keylines import json_lines, toml_lines

            self._lines = (json_lines if self._kind == "json" else toml_lines)(self._text)
        return next((self._lines[p + field] for p in self.prefixes if p + field in self._lines), None)

    def at(self, field: str) -> str:
        """``PATH:LINE`` of ``field``, or ``PATH`` when its line is not found: the start of a message."""
        line = self.line(field)
        return self.path if line is None else f"{self.path}:{line}"

    @contextmanager
    def located(self) -> Iterator[None]:
        """Give an :class:`InputError` about this file raised in the block, with a field and no line, its line."""
        try:
            yield
        except InputError as exc:
            if type(exc) is not InputError or exc.line is not None or not exc.field or Path(exc.path) != Path(self.path):
                raise
            line = self.line(exc.field)
            if line is None:
                raise
            raise InputError(exc.path, line, exc.field, exc.problem) from None


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):    # 1e999: the TOML reader's words (read_mapping_lines)
        raise UserError(f"number {quoted(text, show=str)} is {OUT_OF_FLOAT_RANGE}")
    return value


class _TomlOverflow(ValueError):
    """A TOML float beyond a float's range (``1e999``, an integer part of 309 digits or more), which ``tomllib``
    would read as inf; ``args[0]``: the number as written."""


class WrittenFloat(float):
    """A TOML ``inf`` / ``nan`` (``+inf``, ``-nan`` ...) as ``tomllib`` read it: the float, and ``written``, its
    text as the file writes it, so a refusal shows ``+nan`` as written, not Python's ``nan`` (:func:`as_written`)."""

    __slots__ = ("written",)

    def __new__(cls, text: str) -> "WrittenFloat":
        value = super().__new__(cls, text)
        value.written = text
        return value


def as_written(value: Any) -> str:
    """A number of a settings file as a message shows it: a TOML ``inf`` / ``nan`` as written (:class:`WrittenFloat`:
    ``+nan``), anything else by its repr (``inf``, ``1.5``)."""
    return getattr(value, "written", None) or repr(value)


def _toml_float(text: str) -> float:
    """``tomllib``'s ``parse_float``: a float, a TOML ``inf`` / ``nan`` as written (a :class:`WrittenFloat`: a reader
    checks its field), never a number that overflows to infinity (:class:`_TomlOverflow`)."""
    value = float(text)
    if math.isinf(value) and "inf" not in text:
        raise _TomlOverflow(text)
    return value if math.isfinite(value) else WrittenFloat(text)


def _no_constant(name: str) -> Any:
    raise UserError(f"{name} is not finite (and not a JSON number)")


def _lone_surrogate(value: Any, where: str = "") -> tuple[str, str] | None:
    """The first string (a key or a value) of the parsed JSON ``value`` holding a lone surrogate, as
    ``(field path 'a.b[3].c', its escape)``, or None. Iterative (a file may nest to jsondepth's limit)."""
    from pcs.trace.jsonfast import lone_surrogate

    todo = [(where, value)]
    while todo:
        at, item = todo.pop()
        if isinstance(item, str):
            if (bad := lone_surrogate(item)) is not None:
                return at or "(top level)", bad
        elif isinstance(item, dict):
            for key in reversed(list(item)):
                if (bad := lone_surrogate(key)) is not None:
                    shown = key.encode("ascii", "backslashreplace").decode("ascii")
                    return f"{at}.{shown}" if at else shown, bad
                todo.append((f"{at}.{key}" if at else key, item[key]))
        elif isinstance(item, list):
            todo.extend((f"{at}[{i}]", v) for i, v in reversed(list(enumerate(item))))
    return None


def _loads_json(path: Path, text: str) -> Any:
    data = _parse_json(path, text)
    if (bad := _lone_surrogate(data)) is not None:
        line = KeyLines(path, text, "json").line(bad[0])
        raise InputError(str(path), line, bad[0], f"a lone surrogate {bad[1]} is not text (not valid Unicode)")
    return data


def _parse_json(path: Path, text: str) -> Any:
    try:
        return jsondepth.loads(text, parse_float=_finite, parse_constant=_no_constant, object_pairs_hook=jsondepth.no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise InputError(str(path), exc.lineno, None, f"invalid JSON: {exc.msg.removesuffix(' at')} at column {exc.colno}") from None
    except jsondepth.TooDeepError as exc:
        raise InputError(str(path), None, None, str(exc)) from None
    except jsondepth.NumberTooLongError as exc:     # named by its whole path (fixed.x[1]), as every field here
        from pcs.keylines import json_value_path

        where = json_value_path(text, exc.offset) if exc.offset is not None else None
        raise InputError(str(path), exc.lineno, where or exc.field,
                         jsondepth.too_long_text(exc.digits) if where else str(exc)) from None
    except jsondepth.DuplicateKeyError as exc:    # its line and the object's path (jsondepth.duplicate_place)
        raise InputError(str(path), exc.lineno, exc.field, str(exc)) from None
    except ValueError as exc:  # _finite / _no_constant: NaN, Infinity, 1e999 (their own words: not finite, out of range)
        line, field = _not_finite_place(text)
        raise InputError(str(path), line, field, str(exc)) from None


def _not_finite_place(text: str) -> tuple[int | None, str | None]:
    """``(line, field)`` of the first ``NaN`` / ``Infinity`` / number overflowing to infinity in the JSON
    ``text`` (:func:`pcs.keylines.json_values`), ``(None, None)`` if not found (the field None at the top level)."""
    from pcs.keylines import json_values

    for path, line, tok in json_values(text):
        if tok in ("NaN", "Infinity", "-Infinity") or (tok[0] in "-0123456789" and _overflows(tok)):
            return line, path or None
    return None, None


def _overflows(tok: str) -> bool:
    try:
        return not math.isfinite(float(tok))
    except ValueError:
        return False


def read_json_object(path: str | Path, keyword: str = "path") -> dict[str, Any]:
    """Parse a JSON file whose top level is an object (a Hugging Face ``config.json``), whatever its suffix.

    Raises:
        PathError: as :func:`read_text` (naming ``keyword``).
        InputError: see the module docstring.
    """
    return read_json_object_lines(path, keyword)[0]


def read_json_object_lines(path: str | Path, keyword: str = "path") -> tuple[dict[str, Any], KeyLines]:
    """:func:`read_json_object`, and where its keys are written: a reader that finds a value bad runs its checks
    in ``lines.located()`` so that the error names the line (``c.json:5: field 'head_dim': ...``).

    Raises:
        PathError, InputError: as :func:`read_json_object`.
    """
    text = read_text(path, keyword)     # checks the path as given (Path('') is '.')
    path = Path(path)
    try:
        data = _loads_json(path, text)
    except InputError as exc:     # a YAML file given for a JSON one: what it is, and the way out
        lang = _UNREAD_LANGUAGES.get(path.suffix.lower())
        if lang is None or not exc.problem.startswith("invalid JSON"):
            raise
        raise InputError(exc.path, exc.line, exc.field, f"{exc.problem} (a {lang} file? this file is read as JSON, "
                         f"whatever its suffix; {lang} is not read: convert it to JSON)") from None
    if not isinstance(data, dict):
        raise InputError(str(path), None, None, "top level must be a JSON object")
    return data, KeyLines(path, text, "json")


def read_mapping(path: str | Path, keyword: str = "path") -> dict[str, Any]:
    """Parse ``path`` (``.toml`` or ``.json``) into a dict.

    Raises:
        PathError: as :func:`read_text` (naming ``keyword``), before the suffix is looked at.
        InputError: see the module docstring (with the line where known).
        UserError: another suffix (:func:`unread_suffix`), or TOML without a parser available.
    """
    return read_mapping_lines(path, keyword)[0]


def read_mapping_lines(path: str | Path, keyword: str = "path") -> tuple[dict[str, Any], KeyLines]:
    """:func:`read_mapping`, and where its keys are written (as :func:`read_json_object_lines`).

    Raises:
        PathError, InputError, UserError: as :func:`read_mapping`.
    """
    from pcs.trace.pathcheck import check_input_file

    check_input_file(path, keyword)
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SETTINGS_SUFFIXES:
        raise UserError(unread_suffix(path))
    text = read_text(path, keyword)
    if suffix == ".json":
        data = _loads_json(path, text)
    else:
        try:
            import tomllib  # Python >= 3.11
        except ModuleNotFoundError:  # pragma: no cover - Python 3.10
            try:
                import tomli as tomllib  # type: ignore[no-redef]
            except ModuleNotFoundError:
                raise UserError(f"{path}: reading TOML needs Python 3.11+ or the tomli package; "
                                 "use a .json file instead") from None
        try:
            data = tomllib.loads(text, parse_float=_toml_float)
        except tomllib.TOMLDecodeError as exc:    # its message ends "(at line 3, column 5)": the line to the front
            at = re.search(r" \(at line (\d+), column (\d+)\)$", str(exc))
            problem = str(exc)[:at.start()] + f" at column {at.group(2)}" if at else str(exc)
            raise InputError(str(path), int(at.group(1)) if at else None, None, f"invalid TOML: {problem}") from None
        except RecursionError:
            raise InputError(str(path), None, None, "TOML nested too deeply for Python's TOML reader (the TOML "
                                                    "itself may be valid)") from None
        except _TomlOverflow as exc:    # 1e999: out of range, at its line and key
            m = re.search(r"(?<![\w.+\-])" + re.escape(exc.args[0]) + r"(?![\w.])", jsondepth.code_only(text, "toml"))
            line, field = _toml_place(text, m.start()) if m else (None, None)
            raise InputError(str(path), line, field, f"number {quoted(exc.args[0], show=str)} is "
                             f"{OUT_OF_FLOAT_RANGE}") from None
        except ValueError as exc:   # an integer past Python's digit limit (int() inside the TOML reader)
            raise _toml_number_error(path, text, exc) from None
    if not isinstance(data, dict):
        raise InputError(str(path), None, None, "top level must be a table/object")
    return data, KeyLines(path, text, "json" if suffix == ".json" else "toml")


def _toml_number_error(path: Path, text: str, exc: ValueError) -> InputError:
    """The InputError for a TOML integer past Python's digit limit (``sys.get_int_max_str_digits()``, 4,300):
    its line and key (``key = 999...``) as the JSON reader names them (located by
    :func:`pcs.jsondepth.long_integer`), instead of Python's advice for programmers; any other ValueError of the
    TOML reader as invalid TOML."""
    m = jsondepth.long_integer(text, "toml")
    if m is None:
        return InputError(str(path), None, None, f"invalid TOML: {exc}")
    line, field = _toml_place(text, m.start())
    return InputError(str(path), line, field, jsondepth.too_long_text(len(m.group(1))))


def _toml_place(text: str, start: int) -> tuple[int, str | None]:
    """``(line, key path)`` of a TOML value starting at offset ``start`` of ``text``: the whole path, as every
    field of a settings file is named (:func:`pcs.keylines.toml_value_path`: ``fixed.seed`` under ``[fixed]``,
    ``a.b.c`` for ``a.b."c"``, ``x[0].a`` in an array); None when the scan does not find it."""
    from pcs.keylines import toml_value_path

    return text.count("\n", 0, start) + 1, toml_value_path(text, start)


def refuse_unknown_keys(path: str | Path, where: str | None, table: dict[str, Any], known: Iterable[str]) -> None:
    """An InputError naming the first key of ``table`` not in ``known`` (a typo is not silently ignored).

    Args:
        path: the file, for the message.
        where: the table's place in the file (``"device"``, ``"workload[2]"``), None for the top level.
        table: the parsed table.
        known: the keys the reader uses.
    """
    known = list(known)
    for key in table:
        if key not in known:
            field = f"{where}.{key}" if where else str(key)
            raise InputError(str(path), None, field, f"unknown key; {did_you_mean(key, known)}valid: {', '.join(known)}")
