"""Bounded option types: every number a command takes has a range, checked before use.

A value outside its range, NaN, an infinity, or text that is not a number is
click's one-line usage error naming the option and the value (exit 2). The
bounds below are the largest values any command can run with in reasonable
time and memory; each is far above what a real deployment or trace needs.
Sizes, bandwidths and durations go through :mod:`pcs.units` (bounded at
2^63 - 1 there); capacities through :func:`parse_capacity_list`.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import click

from pcs import jsondepth, units
# The bounds live in pcs.argcheck: the API functions apply the same ranges (one rule, one place).
from pcs.argcheck import MAX_BLOCK_SIZE, MAX_COUNT, MAX_POINTS, MAX_SEED, MAX_SYNTH_REQUESTS, MAX_TOKENS, MAX_TP
from pcs.errors import OUT_OF_FLOAT_RANGE, UserError, quoted, shown_repr

__all__ = ["option_size", "option_bandwidth", "Aliased", "MAX_TP", "MAX_BLOCK_SIZE", "MAX_TOKENS", "MAX_COUNT", "MAX_POINTS", "MAX_SYNTH_REQUESTS",
           "MAX_SEED", "Int", "Float", "Duration", "Choice", "parse_capacity_list",
           "kv_reserve_option", "CheckedPath"]


class _Ranged:
    """The one refusal of a number outside its range, for :class:`Int` and :class:`Float` (every ranged option):
    a float shown whole (its repr: at most 24 characters, its exponent kept), an integer through
    :func:`pcs.errors.quoted` (at most :data:`SHOWN_DIGITS` characters, then cut with its length), the bounds with thousands separators, no trailing period: ``'--tp': 99999999999999999999... (26
    characters) is not in the range 1<=x<=1,024`` (click said ``99999999999999999999999999 is not in the range
    1<=x<=1024.``). ``--help`` keeps click's ``[1<=x<=1024]``."""

    min: Any
    max: Any
    min_open: bool
    max_open: bool

    def _refuse_outside(self, number: Any, param: click.Parameter | None, ctx: click.Context | None) -> None:
        """Fail (click's usage error naming the option) when ``number`` is outside ``[min, max]`` (open ends
        excluded); NaN is outside every range."""
        low_ok = number > self.min if self.min_open else number >= self.min
        high_ok = number < self.max if self.max_open else number <= self.max
        if not (low_ok and high_ok):
            lop, rop = "<" if self.min_open else "<=", "<" if self.max_open else "<="
            shown = repr(number) if isinstance(number, float) else quoted(str(number), SHOWN_DIGITS, show=str)
            self.fail(f"{shown} is not in the range "
                      f"{_bound(self.min)}{lop}x{rop}{_bound(self.max)}", param, ctx)


#: The most characters of a number a range refusal shows whole (:class:`_Ranged`): every 64-bit integer (20).
SHOWN_DIGITS = 20


def _bound(bound: float) -> str:
    """A range's bound as a refusal writes it: a whole number with thousands separators (``1,000,000,000``),
    another as ``repr`` shows it (``0.5``, ``1e-09``)."""
    if isinstance(bound, int) or (isinstance(bound, float) and bound.is_integer() and abs(bound) < 1e21):
        return f"{int(bound):,}"
    return repr(bound)


class Int(_Ranged, click.IntRange):
    """An integer option in ``[min, max]`` (both bounds always given: no unbounded integer option), written in
    ASCII digits (:func:`pcs.units.ascii_int`: ``1_000`` and full-width ``１２``, which Python's ``int()`` reads,
    are refused naming the option; docs/semantics.md §16); a value outside is :class:`_Ranged`'s refusal."""

    def __init__(self, min: int, max: int) -> None:  # noqa: A002 - click's names
        super().__init__(min=min, max=max)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            try:
                value = units.ascii_int(value)
            except UserError:
                long = jsondepth.long_integer(value)      # ASCII digits, past Python's digit limit
                self.fail(f"{quoted(value, show=repr)}: {jsondepth.too_long_text(None)}" if long else   # count: quoted's
                          f"{quoted(value, show=repr)} is not an integer in ASCII digits 0-9", param, ctx)
        number = click.INT.convert(value, param, ctx)
        self._refuse_outside(number, param, ctx)
        return super().convert(number, param, ctx)


class Float(_Ranged, click.FloatRange):
    """A finite float option in a range: NaN and infinities are refused as well as values outside it
    (:class:`_Ranged`'s refusal); written in ASCII (:func:`pcs.units.ascii_float`: no ``1_000``, full-width
    digits, ``nan`` or ``inf``)."""

    def __init__(self, min: float, max: float, min_open: bool = False, max_open: bool = False) -> None:  # noqa: A002
        super().__init__(min=min, max=max, min_open=min_open, max_open=max_open)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            text = value
            try:
                value = units.ascii_float(text)
            except UserError:
                self.fail(f"{quoted(text, show=repr)} is not a number in ASCII digits 0-9", param, ctx)
            if not math.isfinite(value):      # 1e999, 5,000 digits: ASCII, but beyond a float (read as inf)
                self.fail(f"{quoted(text, show=repr)} is {OUT_OF_FLOAT_RANGE}", param, ctx)
        number = click.FLOAT.convert(value, param, ctx)
        self._refuse_outside(number, param, ctx)
        return super().convert(number, param, ctx)


class Duration(click.ParamType):
    """A duration option in seconds (float), in ``[min_s, max_s]``: ``60s``, ``2ms``, ``1e-3s``, ``2.5min``.

    One type for every duration option (docs/semantics.md §16); units go through :func:`pcs.units.parse_duration`
    (ns, us, ms, s, min, h; exact to 1 ns). A plain number typed on the command line is taken as seconds only
    when the option's name carries the unit (``--router-stale-s 5``, ``--think-s 150``: ``plain_seconds``), as a
    file field named ``setup_s`` is; any other duration option refuses it as the envelope's times do
    (``--ttft-slo 500`` could mean 500 ms or 500 s): ``--ttft-slo '500' has no unit: give a unit: 500ms or
    500s``. ``0`` needs no unit; a value that is not text (an option default such as ``--think-s``'s 150.0) is seconds;
    a sweep plan's number arrives as text and follows the rule (``ttft-slo = 2`` is refused, ``"2s"`` taken).
    A bad unit, a negative value, NaN or infinity, or a value outside the range is click's one-line usage
    error naming the option (exit 2).
    """

    name = "duration"

    def __init__(self, min_s: float, max_s: float, min_open: bool = False, plain_seconds: bool = False) -> None:
        self.min_s, self.max_s, self.min_open, self.plain_seconds = min_s, max_s, min_open, plain_seconds

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        try:
            if not number and not self.plain_seconds:    # the message's value, after click's option name
                units.require_unit(str(value).strip(), "", "duration")
            seconds = units.parse_duration(value if number else str(value).strip())
        except ValueError as exc:      # UserError is a ValueError
            self.fail(str(exc).splitlines()[0].strip(), param, ctx)
        low_ok = seconds > self.min_s if self.min_open else seconds >= self.min_s
        if not (low_ok and seconds <= self.max_s):
            self.fail(f"{shown_repr(value)} is not in the range {'>' if self.min_open else '>='} {self.min_s:g} s and "
                      f"<= {self.max_s:g} s", param, ctx)
        return seconds

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "DURATION"


def parse_capacity_list(text: str, option: str, block_bytes: int | Callable[[], int] | None) -> list[int]:
    """``"1000blocks,40GB,0"`` -> block counts: each item through :func:`pcs.units.parse_capacity`.

    Args:
        text: comma-separated capacities.
        option: the option's name for messages, e.g. ``"--capacities"``.
        block_bytes: bytes per block that sizes in bytes divide by (or a
            callable giving it, called at the first size), or None when no
            model gives it (then a size is an error saying so).
    Raises:
        UserError: an empty list, a plain number other than 0, a bad item,
            a size without ``block_bytes``, a non-zero size under one block, two items at one block count
            (``1000blocks,1000blocks`` or a size and its blocks: refused rather than merged, as compare and
            sweep refuse one configuration twice, docs/sweep.md "Axes").
    """
    out, given = [], {}
    for item in (s.strip() for s in str(text).split(",")):
        if not item:
            continue
        try:
            cap = units.parse_capacity(item)
        except ValueError as exc:
            raise UserError(f"{option} {shown_repr(item)}: {exc}") from None
        if cap.size_bytes is not None and block_bytes is None:
            raise UserError(f"{option} {shown_repr(item)}: a size in bytes needs --model NAME (pcs replay's default is "
                             f"llama-2-70b), whose bytes per block turn {item} into blocks and add a bytes column; "
                             "or give blocks, e.g. 5000blocks")
        if cap.size_bytes is not None and callable(block_bytes):
            block_bytes = block_bytes()
        blocks = cap.to_blocks(None if callable(block_bytes) else block_bytes, f"{option} {shown_repr(item)}")
        if blocks in given:
            said = "is listed twice" if given[blocks] == item else f"and {shown_repr(given[blocks])} are both {blocks} blocks"
            raise UserError(f"{option}: {shown_repr(item)} {said}; give each capacity once")
        given[blocks] = item
        out.append(blocks)
    if not out:
        raise UserError(f"{option} {quoted(text, show=repr)}: give comma-separated capacities, e.g. 1000blocks,5000blocks or 40GB")
    return out


class Aliased(click.Option):
    """An option whose first name is the one ``--help`` shows; its other names are hidden older spellings
    (``--model-config`` for ``--model`` in replay, ``--prompt-tokens`` for ``--tokens`` in envelope): one
    name per concept across commands, old command lines still run. Use as ``click.option(..., cls=Aliased)``.
    """

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        """Click's help row with the first name only."""
        opts, self.opts = self.opts, self.opts[:1]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = opts


class CheckedPath(click.Path):
    """Every path argument or option of pcs (``click.Path``'s settings: ``exists``, ``dir_okay``, ``file_okay``,
    ``allow_dash``), refused as the readers refuse a path, in one wording: the parameter as typed, the path, the
    reason in ``os.strerror``'s words (``TRACE traces: Is a directory``, ``--plot out.txt: Not a directory``,
    ``PLAN gone.toml: No such file or directory``; :func:`pcs.trace.pathcheck.path_problem`, printed by
    :func:`pcs.cli.common.user_errors` as a :class:`pcs.errors.PathError`); click said ``Invalid value for 'TRACE':
    File 'traces' is a directory.``. An empty or blank value is refused first, as
    :func:`pcs.cli.iofiles.refuse_empty_paths` refuses it (``FILES '': an empty path; give a file name``).
    tests/cli/test_empty_path_arguments.py walks the commands: every ``click.Path`` of pcs is this one."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and param is not None and not (self.allow_dash and self.file_okay and value == "-"):
            from pcs.cli.iofiles import empty_path_refusal, param_label
            from pcs.errors import PathError
            from pcs.trace.pathcheck import path_problem

            if not value.strip():
                raise empty_path_refusal(param, ctx, value)
            output = _output_access(self, param, ctx)
            readable, writable = output or (self.readable, self.writable)
            problem = path_problem(value, self.file_okay, self.dir_okay, missing_ok=not self.exists,
                                   readable=readable, writable=writable)
            if problem:
                refusal = PathError(value, param.name or "", problem)
                refusal.cli_label = param_label(param, ctx)
                raise refusal
            if output:      # click's own check would ask an output to be readable
                return self.coerce_path_result(value)
        return super().convert(value, param, ctx)


def _output_access(path_type: click.Path, param: click.Parameter,
                   ctx: click.Context | None) -> tuple[bool, bool] | None:
    """(readable, writable) an existing path of ``param``, an output (:data:`pcs.cli.iofiles.OUTPUTS`), must be
    for :func:`pcs.trace.pathcheck.path_problem`; None for an input (its ``click.Path``'s settings: readable).
    An output need not be readable -- it is written to a temporary file then renamed over, so a write-only
    ``out.csv`` (``chmod 200``) is fine; click's ``readable`` default refused it -- and a folder (``--plot``,
    ``-o``) must be writable and searchable, and readable too when the command also reads it
    (:data:`pcs.cli.iofiles.DATASET`: a sweep's results); an output file's folder is checked by
    :func:`pcs.outfile.check_outputs`."""
    from pcs.cli.iofiles import DATASET, OUTPUTS

    command = ctx.command.name if ctx is not None else None
    if param.name not in OUTPUTS.get(command, ()):
        return None
    folder = not path_type.file_okay
    return folder and (command, param.name) in DATASET, folder


class Choice(click.Choice):
    """An enumerated option (``--engine``, ``--native``, ``--timing`` ...): one rule for all of them, the one
    the registries follow (``--policy LRU``, ``PCS_NATIVE=C``): case and surrounding spaces do not matter, and
    the command gets the canonical spelling (``--engine ' Reference'`` runs ``reference``)."""

    def __init__(self, choices: Any) -> None:
        super().__init__(list(choices), case_sensitive=False)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """The canonical spelling; an unknown value is click's refusal with the nearest choices
        (:func:`pcs.choices.did_you_mean`): ``'modelled' is not one of 'modeled', 'sequential'; did you mean
        'modeled'?``."""
        try:
            return super().convert(value.strip() if isinstance(value, str) else value, param, ctx)
        except click.BadParameter as exc:
            from pcs.choices import did_you_mean

            close = did_you_mean(value, self.choices).strip()
            if not close:
                raise
            self.fail(f"{exc.message.rstrip('.')}; {close}", param, ctx)


def _flagged(parse, text: str, flag: str, kind: str):
    """``parse`` of ``text`` with its unit required (:func:`pcs.units.require_unit`); a refusal names ``flag``."""
    try:
        return parse(units.require_unit(text, flag, kind))
    except UserError as exc:
        raise UserError(exc if str(exc).startswith(flag) else f"{flag} {quoted(text, show=repr)}: {exc}") from None


_PARSE_KIND = {"size": units.parse_bytes, "io size": units.parse_bytes, "bandwidth": units.parse_bandwidth,
               "duration": units.parse_duration, "latency": units.parse_duration}


def option_flagged(text: str, flag: str, kind: str) -> Any:
    """``text`` parsed as a ``kind`` (``size``, ``io size``, ``bandwidth``, ``duration``, ``latency``) with its unit
    required: the one place a size, bandwidth or duration option's refusal is worded, naming ``flag``.

    Raises:
        UserError: ``--link-setup '-1ms': invalid duration '-1ms': must not be negative``.
    """
    return _flagged(_PARSE_KIND[kind], text, flag, kind)


def option_size(text: str, flag: str, lo: int = 0, kind: str = "size") -> int:
    """Bytes of a size option (a unit required, :func:`pcs.units.require_unit`), at least ``lo``; every
    refusal names ``flag`` (``--capacity-need '-30GB': invalid size ...``). ``kind``: the unit suggested for a
    plain number (:func:`pcs.units.require_unit`; ``"io size"`` for an I/O block).

    Raises:
        UserError: naming the flag and the value.
    """
    size = _flagged(units.parse_bytes, text, flag, kind)
    if size < lo:
        raise UserError(f"{flag} {quoted(text, show=repr)}: must be at least {units.format_bytes(lo)} (a device with no room "
                        "holds nothing, so every ratio over it is undefined)")
    return size


def option_duration(text: str, flag: str) -> float:
    """Seconds of a duration option (a unit required, ``0`` allowed); every refusal names ``flag``
    (``--overhead '-5ms': invalid duration '-5ms': must not be negative``).

    Raises:
        UserError: naming the flag and the value.
    """
    return _flagged(units.parse_duration, text, flag, "duration")


def option_bandwidth(text: str, flag: str) -> float:
    """Bytes/s of a bandwidth option (a unit required), at least 1 B/s, as ``--link`` refuses 0: a link that moves
    nothing never finishes a transfer, and one below a byte a second prints times of hundreds of digits.

    Raises:
        UserError: naming the flag and the value.
    """
    from pcs.argcheck import check_bandwidth

    return check_bandwidth(_flagged(units.parse_bandwidth, text, flag, "bandwidth"), f"{flag} {quoted(text, show=repr)}")


def kv_reserve_option(text: str | None) -> str | None:
    """``--kv-reserve`` of replay, compare, fleet, sweep and deploy: a size with a unit (a plain number other than
    0 is refused, docs/semantics.md §16), passed on as typed.

    Raises:
        UserError: ``--kv-reserve '5' has no unit: give a unit: 5GB``.
    """
    return units.require_unit(text, "--kv-reserve", "size")
