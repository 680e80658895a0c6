"""Parse and format human units: sizes, bandwidths, durations.

This is the only module that knows unit spellings. Internally pcs keeps
bytes as ``int``, bandwidth as ``float`` bytes per second (``_bps``) and times
as ``float`` seconds (``_s``); exact decisions can use integer nanoseconds
(:func:`parse_duration_ns`).

Conventions (SI / IEC 80000-13): ``kB``/``KB``, ``MB``, ``GB``, ``TB``, ``PB``
are decimal (1 GB = 10**9 B); ``KiB``, ``MiB``, ``GiB``, ``TiB``, ``PiB`` are
binary (1 GiB = 2**30 B). A plain number is bytes, bytes/s or seconds in the
Python API -- except for a capacity (:func:`parse_capacity`: a cache tier, a
curve point), which is a size with a unit or a block count (``5000blocks``)
and never a plain number other than ``0`` (docs/semantics.md §16). On the
command line every size, bandwidth and time takes a unit too
(:func:`require_unit`).

Every parser bounds what it accepts: a value above 2^63 - 1 (bytes, bytes/s,
ns, blocks), an exponent such as ``1e999999``, NaN, infinities and negative
values are a ``ValueError`` naming the text, never an overflow.

>>> parse_bytes("80GB")
80000000000
>>> parse_bytes("4KiB")
4096
>>> parse_bandwidth("20 GB/s")
20000000000.0
>>> parse_duration("5 ms")
0.005
>>> format_bytes(1_500_000_000)
'1.50 GB'
"""
from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from pcs.errors import INT64_LIMIT, UserError, quoted, shown_repr
from pcs._dataclass import dataclass

__all__ = [
    "ascii_int",
    "ascii_float",
    "BYTE_UNITS",
    "DURATION_UNITS",
    "MAX_VALUE",
    "Capacity",
    "parse_capacity",
    "tier_arg",
    "parse_bytes",
    "parse_bandwidth",
    "parse_duration",
    "parse_duration_ns",
    "require_unit",
    "format_bytes",
    "format_bandwidth",
    "format_duration",
    "format_percent",
    "format_count",
    "format_counted",
    "format_points",
    "percent_units",
    "points_units",
    "format_point_units",
    "points_between",
    "split_percent", "split_percent_sum", "split_percent_units",
    "plural",
    "a_or_an",
    "format_rate",
]

#: Multipliers of every accepted size unit, in bytes.
BYTE_UNITS: dict[str, int] = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "pb": 10**15,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "pib": 2**50,
}

#: Multipliers of every accepted duration unit, in nanoseconds, by its lowercase spelling: the SI symbols (ns, us
#: or µs/μs, ms, s, min, h) and the common long forms (``sec``/``secs``/``second(s)``, ``msec``/
#: ``millisecond(s)``, ``usec``/``microsecond(s)``, ``nsec``/``nanosecond(s)``, ``mins``/``minute(s)``,
#: ``hr``/``hrs``/``hour(s)``), as Go's time.ParseDuration and systemd.time(7) read them. ``Ms``/``MS`` is refused,
#: not lowercased to milliseconds: an upper-case M is mega in SI (:func:`_duration_mult`).
DURATION_UNITS: dict[str, int] = {
    "": 10**9, "s": 10**9, "sec": 10**9, "secs": 10**9, "second": 10**9, "seconds": 10**9,
    "ms": 10**6, "msec": 10**6, "msecs": 10**6, "millisecond": 10**6, "milliseconds": 10**6,
    "us": 10**3, "µs": 10**3, "μs": 10**3, "usec": 10**3, "usecs": 10**3, "microsecond": 10**3,
    "microseconds": 10**3,
    "ns": 1, "nsec": 1, "nsecs": 1, "nanosecond": 1, "nanoseconds": 1,
    "min": 60 * 10**9, "mins": 60 * 10**9, "minute": 60 * 10**9, "minutes": 60 * 10**9,
    "h": 3600 * 10**9, "hr": 3600 * 10**9, "hrs": 3600 * 10**9, "hour": 3600 * 10**9, "hours": 3600 * 10**9,
}

#: The accepted duration units as an error lists them.
_DUR_UNITS_TEXT = ("units ns, us (µs), ms, s, min, h, or written out: nsec, usec, msec, sec, secs, second(s), "
                   "millisecond(s), microsecond(s), nanosecond(s), mins, minute(s), hr, hrs, hour(s)")

_NUMBER_UNIT = re.compile(r"^\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-zµμ/]*)\s*$", re.ASCII)

#: What an error expects: every example is one the command line accepts too (a plain number is refused there,
#: :func:`require_unit`), tests/cli/test_tier_args.py.
_BYTE_HELP = "a size such as 512B, 4KiB, 80GB, 1.5 TB or 10GiB (GB decimal, GiB binary)"
_BW_HELP = "a bandwidth such as 20GB/s, 2000 GB/s or 10GiB/s"
_DUR_HELP = "a duration such as 100ms, 5 ms, 3us or 1.5s"


def _ascii_digits(text: str, what: str) -> None:
    """Refuse digits other than ASCII 0-9 (full-width ``２００``, Arabic-Indic ...), which Python's int() and
    Decimal() would read: a size, bandwidth, duration or block count is written in ASCII (docs/semantics.md §16).

    Raises:
        UserError: naming the value and the first such character.
    """
    odd = next((c for c in text if c.isdigit() and not c.isascii()), None)
    if odd is not None:
        raise UserError(f"invalid {what} {quoted(text, show=repr)}: digits must be ASCII 0-9, not {shown_repr(odd)} (U+{ord(odd):04X})")


_INT_TEXT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_FLOAT_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def _unit_hint(s: str, value: Decimal) -> str:
    """``give a unit: 5GB or 5blocks``, naming only the spellings :func:`parse_capacity` takes (a block count
    is whole; both have bounds), else that neither fits."""
    fits = []
    for c in (f"{s}GB", *((f"{s}blocks",) if value == value.to_integral_value() else ())):
        try:
            parse_capacity(c)
        except UserError:
            continue
        fits.append(c)
    return f"give a unit: {' or '.join(fits)}" if fits else "too large with any unit (GB or blocks)"


def ascii_int(text: str, what: str = "integer") -> int:
    """A whole number written in ASCII digits (an optional sign; blanks around it allowed), as a CSV cell or
    a measured-prefill row holds it. Python's ``int()`` alone also reads full-width ``４８０８``, ``4_808``
    and other scripts' digits (docs/semantics.md §16).

    Raises:
        UserError: anything else, naming ``what`` and the text (a ``ValueError``, so a reader's
            ``except ValueError`` turns it into its located :class:`pcs.errors.InputError`).
    """
    t = text.strip(" \t\r\n")
    if _INT_TEXT.fullmatch(t) is None:
        raise UserError(f"invalid {what} {quoted(text, show=repr)}: expected ASCII digits 0-9")
    try:
        return int(t)
    except ValueError:          # past Python's digit limit (sys.get_int_max_str_digits)
        from pcs.jsondepth import too_long_text

        raise UserError(f"invalid {what} {quoted(text, show=repr)}: {too_long_text(None)}") from None   # the count: quoted's


def ascii_float(text: str, what: str = "number") -> float:
    """A decimal number written in ASCII (``472``, ``472.0``, ``-1.5e3``; blanks around it allowed) as a float;
    no ``nan``, ``inf``, ``_`` or non-ASCII digits, which ``float()`` alone reads (docs/semantics.md §16).

    Raises:
        UserError: anything else, naming ``what`` and the text (a ``ValueError``, as :func:`ascii_int`). A number
            beyond a float's range (``1e999``, an integer part of 309 digits or more) comes back as inf, as
            ``float()`` reads it: a caller refuses it as out of range.
    """
    t = text.strip(" \t\r\n")
    if _FLOAT_TEXT.fullmatch(t) is None:
        raise UserError(f"invalid {what} {quoted(text, show=repr)}: expected a number in ASCII digits 0-9")
    return float(t)


def number_shape(text: str) -> str | None:
    """``"int"`` when ``text`` is written as an ASCII integer (:func:`ascii_int`'s form, whatever its length),
    ``"float"`` when as an ASCII decimal number (:func:`ascii_float`'s), else None: a reader that takes a
    number or a word tells a number too large to hold (refused) from a word (kept as text)."""
    t = text.strip(" \t\r\n")
    return "int" if _INT_TEXT.fullmatch(t) else "float" if _FLOAT_TEXT.fullmatch(t) else None


def _split(text: str | int | float, what: str, help_: str) -> tuple[Decimal, str]:
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        if isinstance(text, float) and not math.isfinite(text):
            raise UserError(f"invalid {what} {quoted(text, show=repr)}: expected {help_}")
        return Decimal(repr(text)) if isinstance(text, float) else Decimal(text), ""
    _ascii_digits(str(text), what)
    m = _NUMBER_UNIT.match(str(text))
    if not m:
        raise UserError(f"invalid {what} {quoted(str(text), show=repr)}: expected {help_}")
    try:
        value = Decimal(m.group(1))
    except InvalidOperation:  # pragma: no cover - regex guarantees a number
        raise UserError(f"invalid {what} {quoted(str(text), show=repr)}: expected {help_}") from None
    if value and value.adjusted() > _MAX_EXPONENT:  # 1e999999 would overflow the decimal context
        raise UserError(f"invalid {what} {quoted(str(text), show=repr)}: too large (more than "
                        f"{_limit_of(what, m.group(2))})")
    return value, m.group(2)


#: Decimal exponent above which any value is too large (10**30 > 2**63 even in the smallest unit).
_MAX_EXPONENT = 30


#: Largest accepted size (bytes) or duration (ns): what an int64 column holds.
MAX_VALUE = 2**63 - 1


def _byte_mult(unit: str, text, what: str, help_: str, spelled: str | None = None, near: str | None = None) -> int:
    """Multiplier of a size unit; bits (``Gb``, ``kbit``: :func:`_refuse_bits`) are refused; an unknown unit is
    named as ``spelled`` (default ``unit``; a bandwidth's with its ``/s``) with the close ones of a ``near``
    (default ``what``; :func:`_close_unit`)."""
    _refuse_bits(unit, text, what, help_)
    mult = BYTE_UNITS.get(unit.lower())
    if mult is None:
        spelled = unit if spelled is None else spelled
        raise UserError(f"invalid {what} {quoted(str(text), show=repr)}: unknown unit {quoted(spelled, show=repr)}; "
                        f"{_close_unit(spelled, near or what)}expected {help_}")
    return mult


#: Each scale prefix of :data:`BYTE_UNITS` (by its lowercase spelling) as an error writes it: ``Gi`` (``Gib`` ->
#: write GiB), ``k`` (SI); the one spelling of a prefix in every suggestion.
_PREFIX = {"": "", "k": "k", "m": "M", "g": "G", "t": "T", "p": "P",
           "ki": "Ki", "mi": "Mi", "gi": "Gi", "ti": "Ti", "pi": "Pi"}

#: A unit of bits or bytes, with or without "per second": a prefix, then ``b``/``B``/``bit``/``bits``, then
#: ``/s``, ``ps`` or nothing (any case; :func:`_refuse_bits` reads the case of ``b`` and ``ps``).
_BIT_BYTE = re.compile(r"^([A-Za-z]{0,2}?)(bits?|b)(/s|ps)?$", re.IGNORECASE)


def _refuse_bits(unit: str, text, what: str, help_: str) -> None:
    """Refuse a unit of bits, and bytes per second written other than ``/s``, naming the unit to write.

    The rule (docs/semantics.md §16): a lowercase ``b``, or ``bit``/``bits``, after a scale prefix is bits
    (``Gb``, ``Gibps``, ``gbit/s``: write GB/s, GiB/s, or divide bits by 8); a capital ``B`` before a lowercase
    ``ps`` is bytes per second without its ``/`` (``GBps``, ``KiBps``: write GB/s, KiB/s; not read, so that a
    look-alike one case away, ``Gbps``, is never 8x off unnoticed); ``B`` before ``PS`` in capitals (``GBPS``)
    may be either: refused as ambiguous. A prefix pcs does not take (``Eb``) is left to the unknown-unit error.

    Raises:
        UserError: naming ``text``, the unit and what to write, then ``help_``.
    """
    m = _BIT_BYTE.match(unit)
    prefix = _PREFIX.get(m.group(1).lower()) if m else None
    if prefix is None:
        return
    mark, per_s = m.group(2), m.group(3) or ""
    head = f"invalid {what} {quoted(str(text), show=repr)}: {shown_repr(unit)}"
    if mark == "B" and per_s == "ps":
        raise UserError(f"{head} is bytes per second without its '/': write {prefix}B/s; expected {help_}")
    if mark == "B" and per_s.lower() == "ps":
        raise UserError(f"{head} in capitals is ambiguous: bytes ({prefix}B/s) or bits ({prefix}bit/s) per second? "
                        f"pcs takes bytes: write {prefix}B/s, dividing bits by 8; expected {help_}")
    if mark.lower() != "b" or mark == "b":
        bytes_ = f"{prefix}B/s" if what == "bandwidth" else f"{prefix}B"
        reads = ("bits per second; pcs takes bytes" if per_s else
                 "bits; pcs takes bytes per second" if what == "bandwidth" else "bits; pcs takes bytes")
        raise UserError(f"{head} reads as {reads}: write {bytes_} (bytes) or divide bits by 8; expected {help_}")


#: The size units as an error suggests them (:func:`_close_unit`; any case is accepted, :data:`BYTE_UNITS`).
_SIZE_SPELLINGS = ("B", "KB", "MB", "GB", "TB", "PB", "KiB", "MiB", "GiB", "TiB", "PiB")


def _close_unit(unit: str, what: str) -> str:
    """``"did you mean 'GiB'? "`` for a mistyped unit of a ``what`` (``"size"``, ``"capacity"``: the size units,
    a capacity's ``blocks`` too; ``"bandwidth"``: each size unit with ``/s``; ``"duration"``: :data:`DURATION_UNITS`),
    ``""`` when none is close (:func:`pcs.choices.did_you_mean`, the one rule for a mistyped name).

    A suggestion keeps the number's scale (:func:`_scale`): ``16EB``, ``16ZB`` (scales pcs does not take) and
    ``16BG`` get none rather than ``B`` (10^18x, 10^9x off), ``10GBs`` gets ``GB/s`` and ``GiB/s``, never ``B/s``;
    and the bare ``B`` is never suggested for a longer unit (one letter is close to any: ``5000bl`` is not 5000
    bytes). A unit that begins a taken word of 2 letters or more (``bl``, ``bloc`` of ``blocks``) gets that word.
    """
    from pcs.choices import did_you_mean

    words = (tuple(f"{u}/s" for u in _SIZE_SPELLINGS) if what == "bandwidth"
             else tuple(u for u in DURATION_UNITS if u) if what == "duration"
             else _SIZE_SPELLINGS + (("blocks",) if what == "capacity" else ()))
    if what != "duration":
        words = tuple(w for w in words if _scale(w) == _scale(unit) and (w != "B" or len(unit) == 1))
        begun = tuple(w for w in words if len(unit) >= 2 and w.lower().startswith(unit.lower()))
        if begun:
            return f"did you mean {shown_repr(begun[0])}? "
    return did_you_mean(unit, words)


#: The letters of a scale prefix (kilo .. yotta), any case; :func:`_scale`.
_SCALE_LETTERS = "kmgtpezy"


def _scale(unit: str) -> str:
    """The scale a size or bandwidth unit names, lowercase: its first letter when that is one of kilo .. yotta
    (``GiB/s`` -> ``g``, ``kB`` -> ``k``), else any such letter after a ``B`` (``BG`` -> ``g``), else ``""``
    (``B``, ``blocks``, ``bl``)."""
    low = unit.lower()
    if low[:1] in _SCALE_LETTERS:
        return low[:1]
    if low[:1] != "b" or low.startswith("bl"):      # no scale, or a block count's
        return ""
    return next((c for c in low if c in _SCALE_LETTERS), "")


#: The bound of each kind in the unit the user can check it against (sizes and bandwidths in bytes, durations in ns).
#: (pcs.errors.INT64_LIMIT, the one wording of the 64-bit limit, then the unit); a capacity is a size or a block
#: count by its unit (:func:`_limit_of`), either without one.
_LIMIT = {"size": f"{INT64_LIMIT} bytes, about 9,223 PB", "bandwidth": f"{INT64_LIMIT} bytes/s, about 9,223 PB/s",
          "duration": f"{INT64_LIMIT} ns, about 292 years", "block count": f"{INT64_LIMIT} blocks",
          "capacity": f"{INT64_LIMIT} bytes or blocks"}


def _limit_of(what: str, unit: str) -> str:
    """The bound :data:`_LIMIT` names for a ``what`` written with ``unit``: a capacity in bytes (``1e999GB``) is a
    size's, one in blocks a block count's; ``capacity``'s own (bytes or blocks) only without a unit."""
    if what == "capacity" and unit:
        return _LIMIT["block count" if unit.lower().startswith("bl") else "size"]
    return _LIMIT[what]


def _bounded(value, text, what: str):
    if value > MAX_VALUE:
        raise UserError(f"invalid {what} {quoted(str(text), show=repr)}: too large (more than {_LIMIT[what]})")
    return value


def _not_rounded_to_zero(value, rounded, text, what: str, smallest: str):
    """``rounded``, unless ``value`` > 0 rounded to 0: pcs keeps whole ns and bytes (and float bytes/s), so
    ``1e-300s`` would silently become 0 s; a value that is 0 is written ``0``."""
    if rounded == 0 and value > 0:
        raise UserError(f"invalid {what} {quoted(str(text), show=repr)}: greater than 0 but rounds to 0 (pcs keeps {what}s as "
                        f"{_KEPT_AS[what]}); give {smallest}, or 0")
    return rounded


#: How each kind is kept (for :func:`_not_rounded_to_zero`'s message).
_KEPT_AS = {"duration": "whole nanoseconds", "size": "whole bytes", "bandwidth": "float bytes/s"}


def parse_bytes(text: str | int | float) -> int:
    """Parse a size into whole bytes.

    Args:
        text: e.g. ``"80GB"``, ``"1.5 TB"``, ``"10GiB"``, ``"4KiB"``, ``"512"``.
    Returns:
        int bytes, rounded to the nearest byte (a size in a unit above bytes: ``1.1KiB`` -> 1126).
    Raises:
        UserError: a fractional number of plain bytes (``0.5B``: not rounded to 0), unknown unit, a bit
            unit (``Gb``), malformed number, a negative size, one above 2^63 - 1 or one > 0 that rounds to 0
            bytes; the message names the value and the accepted units.
    """
    return _parse_bytes(text, _BYTE_HELP)


def _per_second(unit: str) -> bool:
    """Whether ``unit`` is one of bandwidth, a size per second: ``/`` in it (``GB/s``, ``Gbit/s``), ``bps``
    (``Gbps``, ``GBps``) or ``ps`` after a unit of bits or bytes (``Gbitps``, ``Gbitsps``: :data:`_BIT_BYTE`)."""
    m = _BIT_BYTE.match(unit)
    return "/" in unit or unit.lower().endswith("bps") or bool(m and m.group(3))


def _parse_bytes(text: str | int | float, help_: str, near: str = "size") -> int:
    """:func:`parse_bytes`, its messages naming ``help_`` as what is expected and the units close to a mistyped one
    among those of a ``near`` (``"capacity"``: ``blocks`` too, :func:`_close_unit`); a bandwidth's unit is named
    as one."""
    value, unit = _split(text, "size", help_)
    if _per_second(unit):   # no look-alike: GB for Gbps would be 8x off
        raise UserError(f"invalid size {quoted(str(text), show=repr)}: {quoted(unit, show=repr)} is a unit of bandwidth, not of size; expected {help_}")
    mult = _byte_mult(unit, text, "size", help_, near=near)
    if value < 0:
        raise UserError(f"invalid size {quoted(str(text), show=repr)}: must not be negative")
    if mult == 1 and value != value.to_integral_value():
        raise UserError(f"invalid size {quoted(str(text), show=repr)}: a number of bytes must be whole (a larger unit, 1.5KB, "
                         "is rounded to the nearest byte)")
    return int(_not_rounded_to_zero(value, _bounded((value * mult).to_integral_value(), text, "size"), text, "size",
                                    "at least 1B"))


def parse_bandwidth(text: str | int | float) -> float:
    """Parse a bandwidth into bytes per second.

    Args:
        text: e.g. ``"2000GB/s"``, ``"20 GB/s"``, ``"10GiB/s"``, ``"5e9"``.
            Bits (``Gbps``, ``Gb/s``, ``gbit/s``) and bytes per second written without ``/`` (``GBps``) are
            refused, naming the unit to write (:func:`_refuse_bits`).
    Returns:
        float bytes/s.
    Raises:
        UserError: unknown unit, malformed number, a negative value, or one > 0 that is 0 as a float.
    """
    value, unit = _split(text, "bandwidth", _BW_HELP)
    _refuse_bits(unit, text, "bandwidth", _BW_HELP)
    u = unit
    if u.lower().endswith("/s"):
        u = u[:-2]
    elif u:
        raise UserError(f"invalid bandwidth {quoted(str(text), show=repr)}: unit must end in /s; {_close_unit(u, 'bandwidth')}"
                        f"expected {_BW_HELP}")
    mult = _byte_mult(u, text, "bandwidth", _BW_HELP, spelled=unit)
    if value < 0:
        raise UserError(f"invalid bandwidth {quoted(str(text), show=repr)}: must not be negative")
    return _not_rounded_to_zero(value, float(_bounded(value * mult, text, "bandwidth")), text, "bandwidth",
                                "a larger value")


def _duration_mult(unit: str, text) -> int:
    """Nanoseconds per ``unit`` (:data:`DURATION_UNITS`, in any case, but for the milliseconds' upper-case ``M``).

    Raises:
        UserError: an unknown unit, listing the accepted ones; the abbreviations ``Ms``/``MS``/``Msec`` (mega in SI)
            and a bare ``m``/``M`` (minutes or milliseconds?), naming ms and min (``Milliseconds`` spelled out is
            accepted in any case).
    """
    if unit.startswith("M") and unit.lower() in ("ms", "msec", "msecs"):   # "Milliseconds" spelled out is clear
        raise UserError(f"invalid duration {quoted(str(text), show=repr)}: unit {quoted(unit, show=repr)} starts with an upper-case M (mega in SI); "
                         "write ms for milliseconds or min for minutes")
    if unit.lower() == "m":     # as ls, sleep(1) read it: minutes; as ms's look-alike: milliseconds
        raise UserError(f"invalid duration {quoted(str(text), show=repr)}: unit {shown_repr(unit)} may be minutes or milliseconds; write min "
                         "for minutes or ms for milliseconds")
    mult = DURATION_UNITS.get(unit.lower())
    if mult is None:
        raise UserError(f"invalid duration {quoted(str(text), show=repr)}: unknown unit {quoted(unit, show=repr)}; {_close_unit(unit, 'duration')}"
                        f"expected {_DUR_HELP}; "
                         f"{_DUR_UNITS_TEXT}")
    return mult


def parse_duration_ns(text: str | int | float) -> int:
    """Parse a duration into integer nanoseconds (exact for decimal input).

    ``"50ms"`` -> ``50_000_000``. Exactness lets callers decide equalities such
    as 50 ms - 20 ms - 30 ms == 0 without float residue.

    Raises:
        UserError: unknown unit, malformed number, a negative duration, or one > 0 that rounds to 0 ns.
    """
    value, unit = _split(text, "duration", _DUR_HELP)
    mult = _duration_mult(unit, text)
    if value < 0:
        raise UserError(f"invalid duration {quoted(str(text), show=repr)}: must not be negative")
    return int(_not_rounded_to_zero(value, _bounded((value * mult).to_integral_value(), text, "duration"), text,
                                    "duration", "at least 1ns"))


def parse_duration(text: str | int | float) -> float:
    """Parse a duration into float seconds (see :func:`parse_duration_ns`).

    Raises:
        UserError: unknown unit, malformed number, a negative duration, or one > 0 that rounds to 0 ns.
    """
    return parse_duration_ns(text) / 1e9


def has_unit(value: Any) -> bool:
    """True when ``value`` is text with a unit after its number (``"80GB"``); False for ``80``, ``"80"``."""
    m = _NUMBER_UNIT.match(value) if isinstance(value, str) else None
    return bool(m and m.group(2))


#: The unit :func:`require_unit` suggests for each kind of value.
_UNIT_HINT = {"size": "{v}GB", "bandwidth": "{v}GB/s", "duration": "{v}ms or {v}s",
              "io size": "{v}B or {v}KiB", "latency": "{v}us or {v}ms"}


def require_unit(text: str | None, option: str, kind: str, shown: str | None = None) -> str | None:
    """``text`` unchanged, unless it is a plain number other than ``0`` (the CLI's "no unit" rule).

    A bare ``100`` given for a time, ``10`` for a bandwidth or ``80`` for a
    size would be read as seconds, bytes/s or bytes: off by 1000x or 10^9 from
    what the user likely meant. The command line refuses it as it refuses a
    bare tier capacity (docs/semantics.md §16); ``0`` needs no unit.

    Args:
        text: the option's value as typed, or None (passed through).
        option: the option name for the message, e.g. ``"--full-prefill"``.
        kind: ``"size"``, ``"bandwidth"``, ``"duration"``, ``"io size"`` (an I/O block: ``4096B or 4096KiB``)
            or ``"latency"`` (a per-transfer setup: ``10us or 10ms``); selects the suggestion.
        shown: the text the message quotes instead of ``text`` (``--link 'cpu=25'`` for the value ``25``).
    Raises:
        UserError: a plain non-zero number, e.g. ``--full-prefill '100' has no
            unit: give a unit: 100ms or 100s``.
    """
    if text is None:
        return None
    m = _NUMBER_UNIT.match(str(text))
    if m and not m.group(2) and Decimal(m.group(1)) != 0:
        v = m.group(1)
        raise UserError(f"{option} {quoted((shown if shown is not None else str(text)).strip(), show=repr)} has no unit: give a unit: "
                         + _UNIT_HINT[kind].format(v=v))
    return text


#: The spellings of a block count's unit, in any case: ``blocks``, ``block`` and ``blk`` (as the tables print
#: ``1,192 blk``); one rule for every parser of a capacity (:func:`parse_capacity`).
BLOCK_UNIT = r"(?:blocks?|blk)"
_BLOCKS = re.compile(r"^\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*" + BLOCK_UNIT + r"\s*$",
                     re.IGNORECASE | re.ASCII)
_CAP_HELP = "a size with a unit (400GB, 1.5TiB) or a block count (5000blocks)"


@dataclass(frozen=True, slots=True)
class Capacity:
    """A capacity as the user wrote it: a byte size or a block count (exactly one is set).

    Attributes:
        text: the text parsed (for messages).
        size_bytes: whole bytes when given as a size, else None.
        blocks: the block count when given in blocks (or as ``0``), else None.
    """

    text: str
    size_bytes: int | None = None
    blocks: int | None = None

    def to_blocks(self, block_bytes: int | None, what: str) -> int:
        """Whole blocks this capacity holds: the count, or ``floor(size_bytes / block_bytes)``.

        Args:
            block_bytes: bytes per block of the tier or cache (> 0), or None when unknown.
            what: the option and value for messages, e.g. ``"--tier gpu=400B"``.
        Raises:
            UserError: a size with ``block_bytes`` None; a non-zero size
                smaller than one block (docs/semantics.md §16: write ``0``
                for an empty tier).
        """
        return capacity_to_blocks(self.size_bytes, self.blocks, block_bytes, what)


def capacity_to_blocks(size_bytes: int | None, blocks: int | None, block_bytes: int | None, what: str) -> int:
    """Whole blocks of a capacity given as ``size_bytes`` or ``blocks`` (see :meth:`Capacity.to_blocks`).

    Raises:
        UserError: as :meth:`Capacity.to_blocks`; ``blocks`` x ``block_bytes`` above 2^63 - 1 bytes (the bound
            :func:`parse_bytes` puts on a size given in bytes, so capacity bytes fit int64 however written).
    """
    if blocks is not None:
        if block_bytes and blocks * block_bytes > MAX_VALUE:
            raise UserError(f"{what}: {blocks:,} blocks x {block_bytes:,} B per block is more than {INT64_LIMIT} bytes "
                            f"(about 9,223 PB), the bound of a size in bytes; give at most "
                            f"{MAX_VALUE // block_bytes:,} blocks")
        return blocks
    if block_bytes is None:
        raise UserError(f"{what}: a size in bytes needs the bytes per block (give model=), or give blocks")
    n = size_bytes // block_bytes
    if n == 0 and size_bytes > 0:
        raise UserError(f"{what}: smaller than one block ({format_bytes(block_bytes)} = {block_bytes} B per "
                         f"block); give at least {block_bytes}B or 1blocks, or write 0 for none")
    return n


def parse_capacity(text: str | int) -> Capacity:
    """Parse a capacity: a size with a unit or ``N blocks``; a plain number other than 0 is refused.

    ``"400GB"`` -> 400e9 bytes, ``"5000blocks"`` (or ``5000 block``, ``5000blk``) -> 5000
    blocks, ``"0"`` -> 0 blocks. A plain ``400`` is refused naming the two
    spellings that work (``400GB or 400blocks``): it used to mean bytes in
    one command and blocks in another (docs/semantics.md §16).

    >>> parse_capacity("5000blocks").blocks
    5000
    >>> parse_capacity("2TB").size_bytes
    2000000000000

    Raises:
        UserError: no unit, a fractional or negative block count, more than
            2^63 - 1 blocks, or what :func:`parse_bytes` refuses.
    """
    if isinstance(text, bool):
        raise UserError(f"invalid capacity {quoted(text, show=repr)}: expected {_CAP_HELP}")
    s = str(text).strip()
    _ascii_digits(s, "capacity")
    m = _BLOCKS.match(s)
    if m:
        value = Decimal(m.group(1))
        if value and value.adjusted() > _MAX_EXPONENT:
            raise UserError(f"invalid block count {quoted(s, show=repr)}: too large (more than {_LIMIT['block count']})")
        if value < 0 or value != value.to_integral_value():
            raise UserError(f"invalid block count {quoted(s, show=repr)}: expected a whole number >= 0, e.g. 5000blocks")
        return Capacity(s, blocks=int(_bounded(value, s, "block count")))
    value, unit = _split(s, "capacity", _CAP_HELP)
    if not unit:
        if value == 0:
            return Capacity(s, blocks=0)
        if value < 0:
            raise UserError(f"invalid capacity {quoted(s, show=repr)}: a capacity must be >= 0, e.g. 10GB or 5000blocks")
        raise UserError(f"capacity {quoted(s, show=repr)} has no unit: {_unit_hint(s, value)}")
    size = _parse_bytes(s, _CAP_HELP, "capacity")   # its examples: what a capacity takes (a plain 512 is refused above)
    if size == 0 and value != 0:
        raise UserError(f"invalid capacity {quoted(s, show=repr)}: less than one byte; write 0 for an empty tier")
    return Capacity(s, size_bytes=size)


def tier_arg(name: str, capacity_blocks: int, capacity_bytes: int | None, pages: bool) -> str:
    """A ``--tier`` value that :func:`parse_capacity` accepts and that gives the tier's capacity back.

    Args:
        name: the tier's name; capacity_blocks: its slots (blocks, or pages for a hybrid model);
        capacity_bytes: those slots' bytes (read for pages only); pages: the slots are a hybrid model's pages.
    Returns:
        ``gpu=953blocks``; for pages, which no ``--tier`` unit counts (``N blocks`` of a hybrid model are whole
        blocks of every cache group, docs/semantics.md §3.1), the pages' bytes written exactly in GB
        (``gpu=481.96747264GB``): a shared pool (vLLM) cuts them into the same pages.
    """
    if not pages:
        return f"{name}={capacity_blocks}blocks"
    if capacity_bytes < 10**9:
        return f"{name}={capacity_bytes}B"
    gb = format(Decimal(capacity_bytes).scaleb(-9).normalize(), "f")
    return f"{name}={gb}GB"


def format_points(ratio: float | None, digits: int = 1) -> str:
    """A difference of ratios in percentage points with its sign: ``0.031`` -> ``'+3.1 pts'``.

    A value that rounds to zero prints as ``0.0 pts`` (never ``-0.0`` or ``+0.0``); None (undefined, a
    difference of 0/0 ratios) as ``'-'``, as :func:`format_percent`.
    """
    if ratio is None:
        return "-"
    text = f"{100.0 * ratio:+.{digits}f}"
    if float(text) == 0.0:
        text = f"{0.0:.{digits}f}"
    return f"{text} pts"


def percent_units(ratio: float | None, digits: int = 1) -> int | None:
    """The figure :func:`format_percent` prints for ``ratio``, as an integer count of 10**-digits percent:
    ``0.37349`` -> ``373`` (``37.3 %``); None for None or NaN (printed ``-``). Read from the printed text itself,
    so a sum or difference of these is the sum or difference of what the reader sees (docs/semantics.md §12)."""
    if ratio is None or (isinstance(ratio, float) and math.isnan(ratio)):
        return None
    return int(f"{100.0 * ratio:.{digits}f}".replace(".", ""))


def points_units(ratio: float | None, digits: int = 1) -> int | None:
    """The figure :func:`format_points` prints for a difference ``ratio``, as an integer count of 10**-digits
    points (``-0.0004`` -> ``0``); None for None."""
    return percent_units(ratio, digits)


def format_point_units(units: int | None, digits: int = 1) -> str:
    """``units`` (10**-digits points, :func:`points_units`) as :func:`format_points` prints them: ``+3.2 pts``,
    ``0.0 pts`` for 0, ``-`` for None."""
    if units is None:
        return "-"
    if units == 0:
        return f"{0.0:.{digits}f} pts"
    sign, mag = ("-" if units < 0 else "+"), f"{abs(units):0{digits + 1}d}"
    return f"{sign}{mag[:-digits] + '.' + mag[-digits:] if digits else mag} pts"


def points_between(a: float | None, b: float | None, less: float | None = None, digits: int = 1) -> str:
    """``a - b`` in points as the reader can check it: the printed ``a`` minus the printed ``b``
    (:func:`percent_units`), minus the printed points of ``less`` when given (a term taken out of the
    difference and printed on its own row); ``-`` when ``a`` or ``b`` is None (0/0).

    >>> points_between(0.37351, 0.37349), format_points(0.37351 - 0.37349)
    ('+0.1 pts', '0.0 pts')
    """
    ua, ub = percent_units(a, digits), percent_units(b, digits)
    if ua is None or ub is None:
        return "-"
    return format_point_units(ua - ub - (points_units(less, digits) or 0), digits)


def split_percent(parts: list[float | None], total: float | None, digits: int = 1) -> list[str]:
    """Parts of ``total`` (ratios summing to it) as percentages whose printed figures add up to the printed
    total (docs/semantics.md §12), in steps of 10**-digits percent (0.1 %): each part floored to a step, a
    part above 0 raised to one step when the total's steps give every such part one, then the steps left given
    one each to the parts with the largest remainders (ties to the earlier part), or, when the raised parts
    took more than the total's rounding left, taken one each from the parts with the smallest remainders (ties:
    from the later part) down to one step. So a part above 0 never prints 0.0 % unless the total has fewer
    steps than there are such parts (then no part is raised: plain largest remainder); no part prints below
    0, above the total, or a step or more above its exact value; a part prints less than a step below its
    exact value, but for one that gave a step to a raised part: then less than (1 + the steps it gave) below,
    at most as many steps as parts were raised. A part may therefore print a step below or above its own
    rounding (more below when it gave steps). Parts that do not sum to ``total`` within rounding, or a None
    among them or as the total, print each rounded alone (:func:`format_percent`). A part below 0 (float noise
    of a sum, -1e-12) counts as 0: it prints ``0.0 %`` and takes no step from the others.

    >>> split_percent([0.09454, 0.25454], 0.34908)
    ['9.4 %', '25.5 %']
    >>> split_percent([0.059298, 0.000527, 0.000503], 0.060328)
    ['5.8 %', '0.1 %', '0.1 %']
    """
    units = split_percent_units(parts, total, digits)
    if units is None:
        return [format_percent(None if p is None else max(p, 0.0), digits) for p in parts]
    return [format_percent(u / 10**digits / 100.0, digits) for u in units]


def split_percent_units(parts: list[float | None], total: float | None, digits: int = 1) -> list[int] | None:
    """The steps of 10**-digits percent each part of ``total`` prints as under :func:`split_percent` (parts below
    0 count as 0), summing to the total's; None when the parts print each rounded alone (a None or NaN among
    them or as the total, or parts that do not sum to the total within rounding)."""
    target = percent_units(total, digits)
    if target is None or any(p is None or math.isnan(p) for p in parts):
        return None
    scaled = [100.0 * max(p, 0.0) * 10**digits for p in parts]
    units = [math.floor(x) for x in scaled]
    if not 0 <= target - sum(units) <= len(parts):
        return None
    if sum(x > 0 for x in scaled) <= target:
        units = [max(u, 1) if x > 0 else u for u, x in zip(units, scaled)]
    _apportion(units, scaled, target)
    return units


def split_percent_sum(parts: list[float | None], total: float | None, first: int, digits: int = 1) -> str:
    """The sum of ``parts[first:]`` as :func:`split_percent` prints those parts (their printed steps added), so a
    row of their sum agrees with the rows of the parts (``pcs compare``'s "hits served by lower tiers" beside
    ``pcs replay``'s per-tier rows: ``[0.059298, 0.000527, 0.000503]`` of 0.060328 print 5.8, 0.1 and 0.1 %, the
    lower tiers' sum 0.2 %, where the exact sum rounds to 0.1 %); the exact sum (parts below 0 as 0) rounded
    alone when the parts print so; None among ``parts[first:]`` -> ``-``.

    >>> split_percent_sum([0.059298, 0.000527, 0.000503], 0.060328, 1)
    '0.2 %'
    """
    units = split_percent_units(parts, total, digits)
    if units is not None:
        return format_percent(sum(units[first:]) / 10**digits / 100.0, digits)
    rest = parts[first:]
    return format_percent(None if any(p is None for p in rest) else sum(max(p, 0.0) for p in rest), digits)


def _apportion(units: list[int], scaled: list[float], target: int) -> None:
    """Bring ``units`` (steps per part, each its ``scaled`` value floored, or raised to 1) to sum ``target``
    in place: steps left over one each to the largest remainders ``scaled - units`` (ties to the earlier part,
    never to a part of 0); steps over the target taken one each from the smallest remainders among the parts
    of 2 steps or more (ties: from the later part), again while some are over."""
    left = target - sum(units)
    order = sorted((i for i, x in enumerate(scaled) if x > 0), key=lambda i: (units[i] - scaled[i], i))
    for i in order[:max(left, 0)]:
        units[i] += 1
    while left < 0:
        order = sorted((i for i, u in enumerate(units) if u >= 2), key=lambda i: (scaled[i] - units[i], -i))
        for i in order[:-left]:
            units[i] -= 1
        left = target - sum(units)


def _unsigned_zero(text: str) -> str:
    """``text``, a formatted number, without its minus sign when every digit is 0: a value that rounds to zero
    prints without a sign (``-0.00`` -> ``0.00``), as :func:`format_points` prints ``0.0 pts``.

    >>> _unsigned_zero("-0.00"), _unsigned_zero("-0.01"), _unsigned_zero("-1,000.00")
    ('0.00', '-0.01', '-1,000.00')
    """
    return text[1:] if text.startswith("-") and not text.strip("-0.,") else text


def _scaled(value: float, units: list[tuple[float, str]], digits: int) -> str:
    """``value`` in the first unit it reaches (thousands grouped, as :func:`format_count`: ``3,289.81 s``); a
    negative value that rounds to zero in the smallest unit without its sign (``0.00 ns``, never ``-0.00 ns``)."""
    for mult, name in units:
        if abs(value) >= mult:
            return f"{value / mult:,.{digits}f} {name}"
    mult, name = units[-1]
    return f"{_unsigned_zero(f'{value / mult:,.{digits}f}')} {name}"


def _absent_or_inf(value: float | None) -> str | None:
    """``'none'`` for None, ``'inf'`` for an infinite value, else None (the value prints with its unit)."""
    if value is None:
        return "none"
    return "inf" if math.isinf(value) else None


def format_bytes(num_bytes: float, digits: int = 2) -> str:
    """Format bytes with decimal units: ``1_500_000_000`` -> ``'1.50 GB'``."""
    if abs(num_bytes) < 1000:
        return f"{int(num_bytes)} B" if float(num_bytes).is_integer() else f"{_unsigned_zero(f'{num_bytes:.{digits}f}')} B"
    return _scaled(num_bytes, [(1e15, "PB"), (1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")], digits)


def format_bandwidth(bps: float | None, digits: int = 2) -> str:
    """Format bytes/s with decimal units: ``2e10`` -> ``'20.00 GB/s'``; None -> ``'none'``; 0 -> ``'0 B/s'``.

    Zero prints without decimals as :func:`format_bytes` and
    :func:`format_duration` print it (``0 B``, ``0 ms``), so a shortfall of
    nothing reads the same in bytes and in bytes/s.
    """
    if bps == 0:
        return "0 B/s"
    return _absent_or_inf(bps) or _scaled(bps, [(1e12, "TB/s"), (1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s"),
                                                (1.0, "B/s")], digits)


def format_duration(seconds: float | None, digits: int = 2) -> str:
    """Format seconds for people: ``0.005`` -> ``'5.00 ms'``, ``3289.81`` -> ``'3,289.81 s'``; None -> ``'none'``."""
    if seconds == 0:
        return "0 ms"
    return _absent_or_inf(seconds) or _scaled(seconds, [(1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")], digits)


def format_percent(ratio: float | None, digits: int = 1) -> str:
    """Format a ratio as a percentage: ``0.375`` -> ``'37.5 %'``; None (undefined, e.g. 0/0) or NaN -> ``'-'``,
    as the report tables print every undefined value."""
    if ratio is None or (isinstance(ratio, float) and math.isnan(ratio)):
        return "-"
    return f"{_unsigned_zero(f'{100.0 * ratio:.{digits}f}')} %"


def plural(n: float, noun: str, many: str | None = None) -> str:
    """``noun`` after a count ``n``: as given for exactly 1, else its plural ``many`` (default ``noun + "s"``). The
    one rule of every count pcs prints with a noun (a message saying "1 lines" reads as a bug).

    >>> plural(1, "line"), plural(0, "line"), plural(2, "block access", "block accesses")
    ('line', 'lines', 'block accesses')
    """
    return noun if n == 1 else (noun + "s" if many is None else many)


def a_or_an(word: str) -> str:
    """``word`` after its indefinite article, for a word that comes from a variable (a format's name, a type's, a
    number): "an" before a vowel letter or a number read from "eight" or "eleven"/"eighteen" (8, 80, 11, 18,
    11,000), else "a"; with the common exceptions, any case: "a" before :data:`_A_BEFORE` ("a uint64", "a unicode",
    "a one"), "an" before :data:`_AN_BEFORE` ("an hour", "an ndarray", "an XML"). Other letters are read as written, not as
    spelled out ("a FIFO"). An empty word gets no article (""). The compiled hosts' ``pyhost_article``
    (pcs/cache/_pol_py.c) follows the same rule for type names.

    >>> a_or_an("azure"), a_or_an("mooncake"), a_or_an("int"), a_or_an("8"), a_or_an("16"), a_or_an("18000")
    ('an azure', 'a mooncake', 'an int', 'an 8', 'a 16', 'an 18000')
    """
    if not word:
        return word
    digits = word.replace(",", "")
    if digits[:1].isdigit():
        end = len(digits) - len(digits.lstrip("0123456789"))
        lead = digits[:(end - 1) % 3 + 1]        # the digits read before the first "thousand" / "million"
        vowel = lead[:1] == "8" or lead in ("11", "18")
    else:
        low = word.lower()
        vowel = (not low.startswith(_A_BEFORE)) and (low.startswith(_AN_BEFORE) or low[:1] in "aeiou")
    return f"{'an' if vowel else 'a'} {word}"


def format_rate(rate: float) -> str:
    """A sampling rate (a fraction, e.g. SHARDS's) as text: up to 6 significant digits (``f"{rate:g}"``), but a
    rate below 1 that these round to "1" is given in full (``repr``), so that an estimate never reads "rate 1".

    >>> format_rate(0.01), format_rate(0.5), format_rate(1e-9), format_rate(0.9999999), format_rate(1.0)
    ('0.01', '0.5', '1e-09', '0.9999999', '1')
    """
    text = f"{rate:g}"
    return repr(float(rate)) if text == "1" and rate < 1 else text


#: word beginnings read with a consonant sound though spelled with a vowel ("a uint64", "a user", "a one")
_A_BEFORE = ("uni", "use", "usu", "uint", "one", "eu")
#: word beginnings read with a vowel sound though spelled with a consonant ("an hour", "an ndarray": "en-dee")
_AN_BEFORE = ("hour", "honest", "nd", "xml")


def format_counted(n: float, noun: str, many: str | None = None) -> str:
    """A count and its noun: :func:`format_count` of ``n``, then :func:`plural`.

    >>> format_counted(1, "bad line"), format_counted(1234, "request")
    ('1 bad line', '1,234 requests')
    """
    return f"{format_count(n)} {plural(n, noun, many)}"


def format_count(n: float) -> str:
    """Format a count with thousands separators: ``288500`` -> ``'288,500'``; a fraction with 2 decimals,
    rounded once from the value itself: ``24.25`` -> ``'24.25'``, ``1234.567`` -> ``'1,234.57'``."""
    if float(n).is_integer():
        return f"{int(n):,}"
    return f"{n:,.2f}"
