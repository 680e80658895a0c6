"""Error types shared by pcs modules, and the grades the CLI gives them.

Grades (house style): ``assert`` for internal invariants; :class:`UserError`
(a ``ValueError``, so an API documented as raising ``ValueError`` still does),
or its subclasses :class:`InputError` for bad file content, :class:`UnknownNameError`
for a registry lookup and :class:`PolicyError` for a plug-in policy, for bad user
input, which the CLI turns into one line ``pcs: error: ...`` on stderr and exit
code 2; expected outcomes are returned values, never exceptions. Any other
exception escaping a command -- a plain ``ValueError`` too (Python and numpy
raise it for bugs: unpacking, shapes), an ``AssertionError``, ``TypeError``,
``KeyError`` ... -- is a bug in pcs: the CLI shows its traceback and a last line
saying so (:data:`BUG_REPORT`), exit code 1 (:func:`pcs.cli.common.user_errors`).
"""
from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Mapping

__all__ = ["quoted", "shown_repr", "as_typed", "repr_bytes", "lead_with", "keyword_refusal", "keyword_refusals", "ending_with", "shown_name", "shown_path", "printable", "hidden", "utf8_text", "HIDDEN_CATEGORIES", "NAME_LIMIT", "PATH_LIMIT", "PickledAsIs", "UserError", "ArgumentTypeError", "InputError", "PathError", "UnknownNameError", "PolicyError", "Stopped", "STOPS", "BUG_REPORT",
           "OUT_OF_FLOAT_RANGE", "INT64_LIMIT", "OUT_OF_INT64_RANGE"]

#: why a number is refused as out of range, the one wording of it: a float64 holds magnitudes below about
#: 1.7977e308 (IEEE 754 double precision's largest finite value, 1.7976931348623157e308); a longer or larger number reads as
#: infinity (``1e999``, an integer part of 309 digits or more, ``1.7976931348623159e308``)
OUT_OF_FLOAT_RANGE = "out of range: a float holds at most about 1.7977e308 either side"
#: the 64-bit limit as every message writes it: the largest integer pcs takes, keeps or writes (an int64 column's,
#: the compiled twins'); a message adds its unit after it (``2^63 - 1 bytes, about 9,223 PB``, ``2^63 - 1 blocks``)
INT64_LIMIT = "2^63 - 1"
#: why an integer is refused as past 64 bits (a policy option's ``reuse:99999999999999999999``), the one wording of it
OUT_OF_INT64_RANGE = f"out of range: an integer holds -2^63 to {INT64_LIMIT} (64 bits)"

#: Where the CLI's last line after an internal error sends the user.
BUG_REPORT = ("this is a bug in pcs, not in your input: please report it on the pcs issue tracker "
              "with the command line and the traceback above")


def quoted(value: Any, limit: int = 40, show: Callable[[Any], str] | None = None) -> str:
    r"""A user's value as an error message quotes it, never raising: ``show(value)`` (JSON text by default,
    ``json.dumps``; pass ``show=repr`` for Python's quotes) when it is short, else its first characters, ``...``,
    the closing quote or bracket and the value's size, so a cut value is seen to be cut (one rule for every
    message; before, ``json.dumps(v)[:40]`` dropped the closing quote and said nothing).

    What is shown: ``show=str`` shows the text bare, each character that is hidden (a control character, a
    right-to-left mark U+202E or another bidi control, a newline: :func:`hidden`) as its escape (:func:`printable`): a file name or
    a value in a message cannot reorder or break the line around it; ``show=repr`` shows it in Python's quotes by
    the same rule (:func:`shown_repr`: a name's byte 0xff as ``\xff``, U+3000 and ZWJ as typed); JSON escapes them too. A value JSON cannot write (``bytes``, a list holding bytes, as msgpack gives them) or one
    ``show`` refuses is shown by Python's ``repr`` (bytes as ``b'\x00\x01'``); a value neither can show (an int
    past Python's digit limit) by its type and size (``<int of 5,000 digits>``).

    Bounds, in characters of the shown text: a ``str`` or ``bytes`` is short when it has at most ``limit``
    characters (bytes) and its shown text, quotes aside, is at most ``limit`` characters too (40 NULs escape to
    240: cut); any other value when its shown text is at most ``limit``. A cut never splits an escape
    (``\u00E9``, ``\x00``, ``\n``): it ends before one that would not fit (but shows one at least).

    The size said: a ``str`` its own characters, ``(N characters)``; ``bytes`` its bytes, ``(N bytes)``; any
    other value the characters of its shown text, naming it: ``(N characters of JSON)`` when shown as JSON,
    ``(N characters of text)`` otherwise (a list's length in characters is its text's, not its items').

    >>> quoted("abc")
    '"abc"'
    >>> quoted("a" * 50, 4)
    '"aaaa..." (50 characters)'
    >>> quoted("a" * 50, 4, show=repr)
    "'aaaa...' (50 characters)"
    >>> quoted(list(range(100)), 9)
    '[0, 1, 2,...] (390 characters of JSON)'
    >>> quoted([b"\x00\x01", [], 0])
    "[b'\\x00\\x01', [], 0]"
    """
    import json

    show = json.dumps if show is None else {str: _printable_text, repr: shown_repr}.get(show, show)
    if isinstance(value, (str, bytes, bytearray)):
        text, used = _shown(value[:limit], show)
        bare = used is _printable_text and isinstance(value, str)     # no quotes to find: an escape may end it
        opener, body, closer = ("", text, "") if bare else _quotes(text, value[:limit])
        if len(value) <= limit and len(body) <= limit:
            return text
        unit = "characters" if isinstance(value, str) else "bytes"
        return f"{opener}{_cut(body, limit)}...{closer} ({len(value):,} {unit})"
    text, used = _shown(value, show)
    if len(text) <= limit:
        return text
    closer = text[-1] if text[-1] in ")]}'\"" else ""
    what = "characters of JSON" if used is json.dumps else "characters of text"
    return f"{_cut(text, limit)}...{closer} ({len(text):,} {what})"


#: A Python escape of a surrogate escape (``\udcff``, a name's byte 0xff) in a ``repr`` text, after an even number of
#: backslashes (``\\udcff`` is a backslash and the letters ``udcff``): :func:`shown_repr` of a list or a tuple.
_REPR_SURROGATE = re.compile(r"(?<!\\)((?:\\\\)*)\\udc([89a-f][0-9a-f])")


def repr_bytes(text: str) -> str:
    r"""``text``, written by ``repr`` (``click``'s own messages, a list's repr), with each Python escape of a surrogate
    escape written as the byte it stands for (``\udcff`` -> ``\xff``, as :func:`printable` shows it); an escaped
    backslash before ``udcff`` is left alone.

    >>> repr_bytes(repr("no\udcff")), repr_bytes(repr("a\\udcff"))
    ("'no\\xff'", "'a\\\\udcff'")
    """
    return text if "\\udc" not in text else _REPR_SURROGATE.sub(r"\1\\x\2", text)


def shown_repr(value: Any) -> str:
    r"""``value`` in Python's quotes as every message shows a name or an option value: ``repr``'s quotes and its
    escapes of a backslash and of the quote, each other character by the one rule of shown text (:func:`printable`:
    a hidden character as its escape, a name's byte that is not UTF-8 as ``\xff``, the rest as typed: a family
    emoji joined by ZWJ, an ideographic space U+3000), where ``repr`` writes ``\udcff``, ``\u200d``, ``\u3000``.
    A value that is not a ``str`` (a list of names, bytes) is its ``repr`` with each surrogate escape written as
    its byte (``\udcff`` -> ``\xff``). Never cut: :func:`quoted` (``show=repr``) cuts a long one.

    >>> shown_repr("x\udcff"), shown_repr("it's"), shown_repr("a\u3000b\tc") == "'a\u3000b\\tc'"
    ("'x\\xff'", '"it\'s"', True)
    >>> shown_repr(["x\udcff", "a\\udcff"])
    "['x\\xff', 'a\\\\udcff']"
    """
    text = repr(value)
    if not isinstance(value, str):
        return repr_bytes(text)
    if text[1:-1] == value:
        return text
    body = value.replace("\\", "\\\\")
    if text[0] == "'":
        body = body.replace("'", "\\'")
    return text[0] + printable(body) + text[0]


def as_typed(text: str, limit: int = 40) -> str:
    r"""An option's value as a message shows it after its option (``--router least-loaded:x: ...``, ``option
    protected_share=abc: ...``): bare when its quoted form (:func:`shown_repr`) is the text in plain quotes,
    else quoted and cut (:func:`quoted`, ``show=repr``, at ``limit`` characters): a newline, a quote or a byte
    that is not UTF-8 shows in quotes, escaped.

    >>> as_typed("lru:x"), as_typed("a\nb"), as_typed("x\udcff")
    ('lru:x', "'a\\nb'", "'x\\xff'")
    """
    return text if shown_repr(text) == f"'{text}'" else quoted(text, limit, show=repr)


def _shown(value: Any, show: Callable[[Any], str]) -> tuple[str, Callable[[Any], str] | None]:
    """(``show(value)``, show), else (``repr(value)``, repr) when ``show`` raises, else (``<TYPE ...>``, None)
    when repr does too (an int past Python's digit limit: ``<int of 5,000 digits>``): :func:`quoted` never
    raises."""
    for f in (show, repr):
        try:
            return str(f(value)), f
        except Exception:     # noqa: BLE001 - any value a user gave must be shown, whatever its type
            continue
    if isinstance(value, int):
        return f"<int of about {int(value.bit_length() * _DIGITS_PER_BIT) + 1:,} digits>", None
    size = f" of {len(value):,} {'item' if len(value) == 1 else 'items'}" if isinstance(value, (list, tuple, dict)) else ""
    return f"<{type(value).__name__}{size}>", None


def _quotes(text: str, raw: Any) -> tuple[str, str, str]:
    """``text``, a string or bytes value's shown form, as (opener, body, closer): ``b'`` / ``\\x00`` / ``'``;
    no quotes when the text is the value itself (``show=str``)."""
    if text == raw or len(text) < 2 or text[-1] not in "'\"":
        return "", text, ""
    start = text.index(text[-1]) + 1
    return text[:start], text[start:-1], text[-1]


#: Decimal digits per bit, the base-10 logarithm of 2: an int's digits from its bit length (:func:`_shown`), never from its text.
_DIGITS_PER_BIT = 0.30102999566398120

#: One character of shown text, or one whole escape (JSON's and Python's: ``\u00E9``, ``\U0001F600``, ``\xff``,
#: ``\n``; JSON's surrogate pair ``\uD83D\uDE00``, one emoji): the pieces :func:`_cut` keeps or drops whole.
_PIECE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"     # a surrogate pair: one
                    r"|\\(?:u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2}|.)|.", re.S)


def _cut(text: str, limit: int) -> str:
    """The longest start of ``text`` of at most ``limit`` characters that ends between two escapes; at least its
    first character or escape (a cut value shows something, even under a ``limit`` shorter than one escape)."""
    end = 0
    for m in _PIECE.finditer(text, 0, min(len(text), limit + 10)):
        if m.end() > limit and end:
            break
        end = m.end()
    return text[:end]


def ending_with(prefix: str, value: Any, width: int = 300) -> str:
    """A message of ``prefix`` then ``value``'s repr (an API argument of the wrong type: ``tiers=[...]``): whole
    when the message fits ``width`` characters, else the value cut by :func:`quoted` (at least its first 40) so the
    cut shows; the whole message used to be cut at 300 characters, mid-value, with no sign.

    >>> ending_with("got list: ", [1, 2])
    'got list: [1, 2]'
    >>> ending_with("got list: ", list(range(30)), 20)
    'got list: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 1...] (110 characters of text)'
    """
    return prefix + quoted(value, max(width - len(prefix), 40), show=repr)


#: The Unicode categories a shown name escapes whole: controls (Cc: a newline, a tab, ESC), the line and
#: paragraph separators (Zl, Zp: U+2028 breaks a line as a newline does), surrogates (Cs: a file name that is not
#: UTF-8 reaches Python as ``\udcff``), private use (Co) and unassigned (Cn, as Python's Unicode tables know it).
HIDDEN_CATEGORIES = frozenset({"Cc", "Zl", "Zp", "Cs", "Co", "Cn"})

#: The format characters (category Cf) a shown name keeps as typed, part of a writing system or of an emoji:
#: ZWNJ U+200C and ZWJ U+200D (a family emoji is three emoji joined by ZWJ; ZWNJ shapes Persian), the Arabic and Syriac
#: signs that prefix a number (U+0600-0605, U+06DD, U+070F, U+0890-0891, U+08E2), the Mongolian vowel separator
#: U+180E, the Kaithi number signs (U+110BD, U+110CD), the Egyptian hieroglyph format controls (U+13430-1343F)
#: and the Duployan shorthand ones (U+1BCA0-1BCA3). Every other format character is escaped: the bidirectional
#: controls (U+061C, U+200E, U+200F, U+202A-202E, U+2066-2069), which reorder the text around them, and the
#: invisible ones that belong to no script (zero width space U+200B, word joiner U+2060, BOM U+FEFF, soft hyphen
#: U+00AD, U+2061-2064, U+206A-206F, U+FFF9-FFFB, U+1D173-1D17A, the language tag U+E0001).
_WRITING_FORMAT = re.compile("[\u200c\u200d\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2\u180e"
                             "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3]")

#: A character :func:`printable` looks at -- anything past printable ASCII -- or a whole emoji tag sequence
#: (a black flag U+1F3F4, tag characters U+E0020-E007E, the cancel tag U+E007F: the flag of England, Scotland,
#: Wales), kept whole; a tag character outside one is escaped (invisible: it can carry hidden text).
_LOOKED_AT = re.compile("(\U0001f3f4[\U000e0020-\U000e007e]+\U000e007f)|[^\x20-\x7e]", re.S)


def hidden(char: str) -> bool:
    """Whether ``char`` (one character) is one a shown name escapes: it is invisible or would break or reorder
    the text around it (:data:`HIDDEN_CATEGORIES`; a format character of no writing system, ``_WRITING_FORMAT``).
    Printable text is kept as typed: letters of any script, emoji, every space separator (Zs: U+00A0, U+3000)."""
    import unicodedata

    category = unicodedata.category(char)
    return category in HIDDEN_CATEGORIES or (category == "Cf" and not _WRITING_FORMAT.match(char))


def _escaped(m: "re.Match[str]") -> str:
    """One match of :data:`_LOOKED_AT` as :func:`printable` shows it: its Python escape when :func:`hidden`; a
    surrogate escape (U+DC80-DCFF, a byte of a name that is not UTF-8) as the byte it stands for (:func:`utf8_text`)."""
    text = m.group()
    if len(text) == 1 and 0xDC80 <= ord(text) <= 0xDCFF:
        return _byte_escape(m)
    return text.encode("unicode_escape").decode("ascii") if m.group(1) is None and hidden(text) else text


#: A lone surrogate: what Python holds for a byte of a file name that is not UTF-8 (``os.fsdecode``'s surrogate
#: escapes, U+DC80-DCFF for the bytes 0x80-0xFF), or for a surrogate escape of a JSON text; no UTF-8 text holds one.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _byte_escape(m: "re.Match[str]") -> str:
    """One lone surrogate as text: ``\\xNN`` for a surrogate escape of the byte 0xNN (``\\udcff`` -> ``\\xff``, the
    byte the name holds), else its Python escape (``\\ud800``)."""
    code = ord(m.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def bad_byte(data: bytes, start: int) -> str:
    r"""Where ``data`` stops being UTF-8, as every message of pcs says it: the byte at ``start`` (0-based in ``data``,
    a ``UnicodeDecodeError``'s ``start``) by its value and its 1-based place in its line, as an editor counts
    columns.

    >>> bad_byte(b'{"x": "caf\xff"}', 10), bad_byte(b"a\nbc\xff", 4)
    ('byte 0xff at byte 11 of the line', 'byte 0xff at byte 3 of the line')
    """
    begin = data.rfind(b"\n", 0, start) + 1
    return f"byte 0x{data[start]:02x} at byte {start - begin + 1} of the line"


def utf8_text(text: str) -> str:
    r"""``text`` with each lone surrogate written out as its escape (:func:`_byte_escape`: a name's byte 0xff, held as
    ``\udcff``, as the four characters ``\xff``; a ``\ud800`` of a JSON input as ``\ud800``), so any UTF-8 stream
    takes it: a file name that is not UTF-8, or a lone surrogate escape of a JSON input, has no UTF-8 form and a
    strict stdout (``PYTHONIOENCODING=utf-8``), a Parquet string or the HTML page raised UnicodeEncodeError. The one
    escape of such text: :func:`printable` (every message, table and shown name), the text and CSV outputs
    (:func:`pcs.cli.common.emit`), the HTML page and a sweep's Parquet rows show it; the JSON output does not (it
    writes JSON's escape of the surrogate, which reads back as the name on disk: :func:`pcs.cli.common.to_jsonable`,
    docs/json.md). Other text is returned as it is.

    >>> utf8_text("o\udcff.jsonl"), utf8_text("t\ud800")
    ('o\\xff.jsonl', 't\\ud800')
    """
    if text.isascii():
        return text
    return _SURROGATE.sub(_byte_escape, text)


def printable(text: str) -> str:
    r"""``text`` as every message, table and header shows a name, a path or a value: each character that is
    :func:`hidden` (a newline, a tab, an escape, a right-to-left override U+202E, a zero width space) shown as
    its Python escape (``\n``, ``\u202e``), so a name cannot break a line or reorder or hide the text around it;
    everything else as typed (a family emoji joined by ZWJ, an ideographic space U+3000, a no-break space). The
    one rule of shown text: a character Python's ``str.isprintable`` refuses is not always hidden (ZWJ, U+3000 are
    text).

    >>> printable("a\u202eb\tc")
    'a\\u202eb\\tc'
    >>> printable("\U0001f468\u200d\U0001f469 x\u3000y") == "\U0001f468\u200d\U0001f469 x\u3000y"
    True
    """
    return text if text.isprintable() else _LOOKED_AT.sub(_escaped, text)


def _printable_text(value: Any) -> str:
    """``str(value)`` through :func:`printable`: what :func:`quoted` shows for ``show=str``."""
    return printable(str(value))


#: The most characters of a file name a message shows whole (:func:`shown_path`).
PATH_LIMIT = 200


def shown_path(path: Any) -> str:
    r"""A file name as every message shows it: its text (``os.fspath``; bytes decoded as the file system does), each
    hidden character escaped (:func:`printable`: a right-to-left mark U+202E shows as ``\u202e``, so it cannot
    reverse the rest of the line) and cut past :data:`PATH_LIMIT` characters, by :func:`quoted`'s rule
    (``show=str``).

    >>> shown_path("a\u202etxt.jsonl")
    'a\\u202etxt.jsonl'
    """
    import os

    try:
        text = os.fsdecode(path)
    except TypeError:
        text = str(path)
    return quoted(text, PATH_LIMIT, show=str)


#: The most characters of a name a text output shows whole (:func:`shown_name`): a Hugging Face model id is at
#: most 96 characters, so every real preset, model id or device name is shown whole.
NAME_LIMIT = 100


def shown_name(name: Any) -> str:
    """A name pcs was given (a workload; a model, from its config; a GPU or link preset, from a hardware file) as a
    table, a title or a note shows it: whole up to :data:`NAME_LIMIT` characters, else cut by :func:`quoted`'s rule
    (its first characters, ``...`` and its length), so a 5,000-character name cannot fill a screen; a hidden character
    shown as its escape (:func:`printable`). Only the text is cut: the JSON and CSV keep the
    name whole (scripts match rows by it).

    >>> shown_name("h100-sxm"), shown_name("w" * 5000)[-25:]
    ('h100-sxm', 'www... (5,000 characters)')
    """
    return quoted(printable(str(name)), NAME_LIMIT, show=str)


def lead_with(exc: BaseException, lead: str) -> BaseException:
    """``exc`` (the same object: its type and attributes kept, an :class:`UnknownNameError`'s ``choices`` too) with
    its message led by ``lead`` and ``": "`` (``policy='arcc': unknown eviction policy 'arcc'; ...``), unless it
    starts with ``lead`` already; returned for ``raise``. The lead is kept as ``exc.lead``: a command line that
    names the option as typed instead drops it (:func:`pcs.cli.common._with_option`)."""
    text = str(exc)
    if not text.startswith(lead):
        exc.args = (f"{lead}: {text}",) + tuple(exc.args[1:])
        exc.lead = lead
    return exc


class keyword_refusal:
    """``with keyword_refusal("timing", timing): ...``: a :class:`UserError` raised in the block is led by
    ``KEYWORD=VALUE`` (the value by :func:`quoted`, ``show=repr``: ``timing='modelled': unknown timing
    'modelled'; ...``), as every refusal of a public function's keyword starts (``tiers='gpu=x': ...``,
    ``admit='cpu=reuse:0': ...``); one that starts with ``KEYWORD=`` already is left as it is. The one helper of
    that lead (:func:`lead_with`); the command line re-words ``timing='x'`` as ``--timing x``
    (:func:`pcs.cli.common.option_names`)."""

    __slots__ = ("keyword", "value")

    def __init__(self, keyword: str, value: Any) -> None:
        self.keyword, self.value = keyword, value

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, exc, tb) -> bool:
        if isinstance(exc, UserError) and not _checked_lead(exc, (self.keyword,)) \
                and not str(exc).startswith(f"{self.keyword}="):
            lead_with(exc, f"{self.keyword}={quoted(self.value, show=repr)}")
        return False


#: pcs.argcheck's refusal of a number, ``NAME must be RANGE, got VALUE`` (``VALUE (TYPE)`` for one of another
#: type), and of one item of a list, ``NAME[i] must be ...``
_CHECKED = re.compile(r"([A-Za-z_]\w*)(\[\d+\])? must be (.*?), got (.*?)(?: \((\w+)\))?\Z", re.S)


def _checked_lead(exc: BaseException, keywords: Iterable[str]) -> bool:
    """Re-word ``exc`` in place when it is :data:`_CHECKED` of one of ``keywords`` into the lead every keyword's
    refusal has (:class:`keyword_refusal`): ``restore_bytes=-1: must be >= 0``, ``bandwidths_bps[0]=-1.0: must be
    >= 0``, ``tp='x': must be an integer, not str``; True when it did."""
    m = _CHECKED.match(str(exc))
    if m is None or m.group(1) not in keywords:
        return False
    name, index, rule, value, kind = m.groups()
    exc.lead = f"{name}{index or ''}={value}"
    exc.args = (f"{exc.lead}: must be {rule}" + (f", not {kind}" if kind else ""),) + tuple(exc.args[1:])
    return True


def keyword_refusals(func: Callable) -> Callable:
    """Decorator of a public API function: a number one of its keywords was refused for by :mod:`pcs.argcheck`
    (``NAME must be RANGE, got VALUE``) is led by ``NAME=VALUE`` as every keyword's refusal is
    (:class:`keyword_refusal`, :func:`_checked_lead`); any other error passes as it is."""
    import functools
    import inspect

    names = tuple(inspect.signature(func).parameters)

    @functools.wraps(func)
    def led(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except UserError as exc:
            _checked_lead(exc, names + tuple(kwargs))
            raise
    return led


class PickledAsIs:
    """Mixin of every exception class pcs defines (before the exception base: ``class E(PickledAsIs, ValueError)``):
    pickled and deep-copied as it is (tests/test_errors_pickle_all.py walks the package for them)."""

    __slots__ = ()

    def __reduce__(self):
        """Pickled as it is, never re-made by its ``__init__``: :func:`_remade` gives a new instance its ``args``,
        then its attributes (``__dict__``) are restored. Python's default calls the class with ``args`` (the message
        alone), which a class whose ``__init__`` takes its own arguments refuses or misreads: an
        :class:`InputError` raised by ``pcs.replay`` in a ``concurrent.futures.ProcessPoolExecutor`` worker broke the
        pool (``BrokenProcessPool``) instead of reaching the caller (Python docs, ``object.__reduce__``)."""
        return _remade, (type(self), self.args), self.__dict__ or None


def _remade(cls: type, args: tuple) -> BaseException:
    """A ``cls`` error with ``args`` and no ``__init__`` run (``BaseException.__new__`` sets ``args``): how
    :meth:`PickledAsIs.__reduce__` re-makes a pickled error before its attributes are restored."""
    return cls.__new__(cls, *args)


class UserError(PickledAsIs, ValueError):
    """Bad user input (an option, an argument, an API parameter): the CLI prints ``str(err)`` as one line, exit 2.

    A ``ValueError`` raised by anything else is a bug (see the module docstring).
    """


class ArgumentTypeError(UserError, TypeError):
    """An API argument of the wrong type (``pcs.replay(5)``, ``tiers=[None]``, ``shared_tier=['remote=1TB']``):
    bad user input like any :class:`UserError` (the message names the argument), and a ``TypeError`` for code
    that catches one.
    """


class InputError(UserError):
    """Bad content in an input file, located by file, line and field.

    Attributes:
        path: the file as the user named it (``"-"`` for stdin).
        line: 1-based line number, or None when not line-oriented
            (for Parquet: the 1-based row number).
        field: the offending field name, or None.
        problem: what is wrong, e.g. ``"must be >= 0, got -3"``.

    ``str(err)`` is ``"PATH:LINE: field 'F': PROBLEM"`` with the absent parts
    left out, the one-line message the CLI prints; PATH and F with each hidden character escaped
    (:func:`printable`: a right-to-left mark in a file name is ``\\u202e``), the attributes as given.
    """

    def __init__(self, path: str, line: int | None, field: str | None, problem: str):
        self.path = str(path)
        self.line = line
        self.field = field
        self.problem = problem
        shown = printable(self.path)         # a bidi or control character in a name is escaped (shown_path)
        where = shown if line is None else f"{shown}:{line}"
        what = f"field '{printable(str(field))}': {problem}" if field else problem
        super().__init__(f"{where}: {what}")


class PathError(InputError):
    """An input path pcs cannot read: missing, a directory where a file is wanted (or a file where a folder
    is), or not readable; raised by every public function that takes a path (:mod:`pcs.trace.pathcheck`).

    Attributes:
        path, problem: as :class:`InputError` (``line`` and ``field`` are None).
        keyword: the argument that named the path, as the function spells it (``"trace"``, ``"plan"``).

    ``str(err)`` names both, ``"trace='runs/t.jsonl': No such file or directory"``; the CLI, whose options
    are not the keywords, prints ``"runs/t.jsonl: No such file or directory"`` (:func:`pcs.cli.common.user_errors`).
    """

    def __init__(self, path: str, keyword: str, problem: str):
        super().__init__(path, None, None, problem)
        self.keyword = keyword
        self.args = (f"{keyword}={quoted(self.path, 200, show=repr)}: {problem}",)


class PolicyError(UserError):
    """An eviction policy written in Python (a plug-in, a subclass) raised, or answered against the contract of
    ``pcs/cache/policies/base.py``, while the compiled hierarchy hosted it (``pcs/cache/_pol_py.c``).

    ``str(err)`` names the policy and the method, e.g. ``"eviction policy 'demo_mru' raised RuntimeError in
    evict(): boom"``: the one line the CLI prints (the policy's own exception is the ``__cause__``).
    """


class Stopped(PickledAsIs, BaseException):
    """The run was stopped from outside (a signal: ``pcs.cli.common.Terminated``), never by the code it was in.

    A ``BaseException`` like ``KeyboardInterrupt``, so ``except Exception`` does not swallow it.
    """


#: What a plug-in policy's call lets through unnamed (Ctrl-C, a signal): every other exception it raises,
#: ``SystemExit`` too, is the policy's (pcs/cache/policyguard.py ``raised``, pcs/cache/_pol_py.c ``pyhost_fail``).
STOPS = (KeyboardInterrupt, Stopped)

#: While a command's signal block runs (:func:`pcs.cli.common.unwind_on_signals`, main thread): its check, which
#: returns the exception of the first stop signal the block received (``KeyboardInterrupt``, ``Terminated``), else
#: None. :func:`raise_if_stopped` runs them.
STOP_CHECKS: list = []


def raise_if_stopped() -> None:
    """Raise the stop of a stop signal a command's signal block has received, if one has (:data:`STOP_CHECKS`).

    A stop's exception may not reach the code it lands in as itself: Python turns it into another inside a
    deferred ``__hash__`` called from C (``TypeError: unhashable type``) or a descriptor's ``__set_name__``
    (``RuntimeError``), which the code there may catch and go on. The signal still came, so what comes after it
    must not complete an output: :func:`pcs.outfile.atomic_output` asks here before it publishes (docs/replay.md).

    Raises:
        KeyboardInterrupt, pcs.cli.common.Terminated: a stop signal arrived in the command's signal block."""
    for check in STOP_CHECKS:
        stop = check()
        if stop is not None:
            raise stop


class UnknownNameError(UserError):
    """A name a registry does not hold (an eviction policy, a preset ...).

    Attributes:
        kind: what was looked up, e.g. ``"eviction policy"``.
        name: the name as the user gave it.
        choices: the registered names, in registration order.
        aliases: alias -> registered name, accepted as well.
        hint: optional other spelling that works, appended in parentheses.

    ``str(err)`` is ``"unknown KIND 'NAME'; valid: A, B, C (alias X = A)"`` (a long name cut by :func:`quoted`), with ``did you mean 'B'? `` before
    ``valid`` when a name or alias is close (:func:`pcs.choices.did_you_mean`, one rule for every kind of name):
    the one-line message the CLI prints.

    >>> str(UnknownNameError("eviction policy", "arcc", ["lru", "slru"], {"protected": "slru"}))
    "unknown eviction policy 'arcc'; valid: lru, slru (alias protected = slru)"
    """

    def __init__(self, kind: str, name: object, choices: Iterable[str], aliases: Mapping[str, str] | None = None,
                 hint: str = ""):
        self.kind = kind
        self.name = name
        self.choices = tuple(choices)
        self.aliases = dict(aliases or {})
        alias = "; ".join(f"{a} = {t}" for a, t in self.aliases.items())
        plural = "es" if len(self.aliases) > 1 else ""
        from pcs.choices import did_you_mean

        close = did_you_mean(name, self.choices, self.aliases)
        super().__init__(f"unknown {kind} {quoted(name, show=repr)}; {close}valid: {', '.join(self.choices)}"
                         + (f" (alias{plural} {alias})" if alias else "") + (f" ({hint})" if hint else ""))
