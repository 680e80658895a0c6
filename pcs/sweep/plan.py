"""A sweep plan: fixed options and axes, expanded to points with stable ids.

A plan is a TOML (or JSON) file::

    kind = "replay"                 # replay (default), compare, curve or footprint
    [fixed]                         # options every point shares: the command's own options
    trace = "sample_chat.jsonl"     # paths are relative to the plan file
    model = "llama-3.1-8b"
    tier = {gpu = "500blocks", cpu = "10GB"}
    [axes]                          # one list or range per option; points = their product
    policy = ["lru", "fifo"]
    "tier.cpu" = {from = "0GB", to = "30GB", step = "10GB"}

Option names are the command's long options without the dashes (``write-policy``
or ``write_policy``; the trace argument is ``trace``). A repeatable option takes a
list, or for ``NAME=VALUE`` options (``tier``, ``link``, ``tier-policy``) a table;
an axis named ``NAME.ENTRY`` sets one entry of such a table (``tier.cpu``),
added at the end when the fixed table has no such entry. Ranges:
:mod:`pcs.sweep.axes`.

Points are the product of the axes in the order written, the last axis
varying fastest. A point's id is the first 12 hex digits of the SHA-256 of its
kind and options (canonical JSON, keys sorted, table entries in order), so the
same options give the same id in every plan and on every machine (the id does
not see the trace file's content: rerun with ``--force`` after changing a file).
"""
from __future__ import annotations

import datetime
import hashlib
import itertools
import json
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Iterator

from pcs.choices import did_you_mean
from pcs.errors import InputError, UserError, shown_repr
from pcs.sweep.kinds import PAIR_OPTIONS, plan_word, point_label
from pcs.sweep.axes import expand_axis

__all__ = ["Plan", "PlanKeyError", "Point", "load_plan", "as_written_key", "value_field", "make_plan", "point_id", "input_files", "KINDS", "MAX_POINTS"]

#: Point kinds: each runs one public API call (:mod:`pcs.sweep.kinds`).
KINDS = ("replay", "compare", "curve", "footprint")
#: Points one plan may expand to (a guard against a runaway product).
MAX_POINTS = 1_000_000
_TOP_KEYS = ("kind", "fixed", "axes", "description")


@dataclass(frozen=True, slots=True)
class Point:
    """One configuration of a plan.

    Attributes:
        point_id: 12 hex digits, stable across plans and machines (module docstring).
        options: option name (underscores) -> value as written; ``NAME=VALUE``
            options as a dict in order.
    """

    point_id: str
    options: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Plan:
    """An expanded plan.

    Attributes:
        source: the plan file (``<plan>`` for an in-memory plan).
        base_dir: directory relative paths in options are resolved against.
        kind: one of :data:`KINDS`.
        axes: the axis names in order (the options that vary).
        points: every point, in expansion order.
        lines: where the plan file's keys are written (:class:`pcs.configfile.KeyLines`; None in memory).
        path_fields: ``(option, value as written) -> the key's path in the plan`` (``fixed.trace``,
            ``axes.trace[1]``) for every value of a :data:`PATH_OPTIONS` option but ``model`` (:func:`load_plan`):
            a missing file is named by the plan's line and field (:func:`check_paths`).
        value_fields: ``(option, value) -> the key's path in the plan`` for every option's value
            (:func:`value_field`): a point refused for one option's value is named by that value's line.
        spellings: option (underscores) -> its key as the plan writes it (``requests_out``, ``tier-policy``;
            :func:`_spellings`): a point's refusal quotes the key as its author wrote it (:func:`as_written_key`).
    """

    source: str
    base_dir: Path
    kind: str
    axes: tuple[str, ...]
    points: tuple[Point, ...]
    lines: Any = field(default=None, compare=False, repr=False)
    path_fields: Any = field(default_factory=dict, compare=False, repr=False)
    value_fields: Any = field(default_factory=dict, compare=False, repr=False)
    spellings: Any = field(default_factory=dict, compare=False, repr=False)


def _name(key: str) -> str:
    return key.strip().replace("-", "_")


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return [[k, _canonical(v)] for k, v in value.items()]
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def point_id(kind: str, options: dict[str, Any]) -> str:
    """The stable id of a point: 12 hex digits of SHA-256 over ``kind`` and the canonical options."""
    text = json.dumps({"kind": kind, "options": {k: _canonical(v) for k, v in options.items()}},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


class PlanKeyError(UserError):
    """A plan's problem at one of its keys. ``str(err)`` starts with the plan's name, as every plan message;
    ``field`` is the key's path in the plan (``fixed.trace``, ``axes.tier.cpu``, ``axes.policy[1]``), by which
    :func:`load_plan` puts the line where it is written after the name (``p.toml:9: ...``)."""

    def __init__(self, message: str, field: str):
        super().__init__(message)
        self.field = field


def _pairs(name: str, value: Any, where: str, field: str) -> dict[str, Any]:
    """A ``NAME=VALUE`` option as an ordered dict (a table, or a list of "NAME=VALUE" strings); ``field``: its key's
    path in the plan, for a :class:`PlanKeyError`; a message names the option as the plan writes it (``tier-policy``)."""
    name = plan_word(name)
    if isinstance(value, dict):
        entries = [(str(k), v) for k, v in value.items()]
    else:
        entries = []
        for item in value if isinstance(value, list) else [value]:
            k, sep, v = str(item).partition("=")
            if not sep or not k.strip() or not v.strip():
                raise PlanKeyError(f"{where}: {name} entry {shown_repr(item)}: expected NAME=VALUE, or give {name} as a table", field)
            entries.append((k, v.strip()))
    out: dict[str, Any] = {}
    for k, v in entries:
        key = k.strip().lower()
        if key in out:          # pcs replay refuses --tier cpu=.. --tier CPU=.. too: names are case-folded
            raise PlanKeyError(f"{where}: {name} entry {shown_repr(key)} is given twice; give each entry once", field)
        out[key] = v
    return out


def _refuse_same_option(keys, where: str, table: str) -> None:
    """UserError when two keys of one table name the same option (``write-policy`` and ``write_policy``) or the
    same entry of a NAME=VALUE option (``tier.cpu`` and ``tier.CPU``): as ``pcs replay`` refuses an option or a
    tier given twice, a plan may not keep the last one silently."""
    seen: dict[tuple[str, str], str] = {}
    for key in keys:
        name, dot, entry = str(key).partition(".")
        norm = (_name(name), entry.strip().lower() if dot else "")
        if norm in seen:
            raise PlanKeyError(f"{where}: {shown_repr(seen[norm])} and {shown_repr(key)} are the same option; give it once", f"{table}.{key}")
        seen[norm] = key


def _set(options: dict[str, Any], key: str, value: Any, pair_options: frozenset[str], where: str, table: str) -> None:
    """Set option ``key`` (``NAME`` or ``NAME.ENTRY`` of a NAME=VALUE option) in ``options``; ``table``: the plan's
    table it is written in (``fixed``, ``axes``), for a :class:`PlanKeyError`."""
    name, dot, entry = key.partition(".")
    name = _name(name)
    if dot:
        if name not in pair_options:
            raise PlanKeyError(f"{where}: {shown_repr(key)}: only NAME=VALUE options ({', '.join(sorted(map(plan_word, pair_options)))}) "
                            "take an entry after a dot", f"{table}.{key}")
        table = dict(options.get(name) or {})
        table[entry.strip().lower()] = value
        options[name] = table
    elif name in pair_options:
        options[name] = _pairs(name, value, where, f"{table}.{key}")
    else:
        options[name] = value


def _scalars(value: Any, path: str) -> Iterator[tuple[str, Any, tuple[str, ...]]]:
    """``(path, scalar, names)`` of every scalar in an option's ``value`` written at ``path``, in order: a table's
    entry after a dot, a list's element by its 0-based index (``x[0].a``), as the readers name fields
    (:mod:`pcs.keylines`); ``names``: the table keys on the way to it (``("a",)`` for ``x[0].a``)."""
    todo: list[tuple[str, Any, tuple[str, ...]]] = [(path, value, ())]
    while todo:
        at, item, names = todo.pop()
        if isinstance(item, dict):
            todo.extend((f"{at}.{k}", v, (*names, str(k))) for k, v in reversed(list(item.items())))
        elif isinstance(item, list):
            todo.extend((f"{at}[{i}]", v, names) for i, v in reversed(list(enumerate(item))))
        else:
            yield at, item, names


#: The keys of an axis's range table (:func:`pcs.sweep.axes.expand_axis`).
_RANGE_KEYS = frozenset({"from", "to", "step", "times"})


def _named(key: str, value: Any, names: tuple[str, ...], pairs: frozenset[str], table: str) -> bool:
    """Whether the table keys ``names`` on the way to a scalar of option ``key``'s ``value`` in ``table`` name
    something the option has: an entry of a NAME=VALUE option's table (``pairs``: ``tier = {cpu = ...}``, one key
    deep; ``tier.cpu`` names its entry already, so it takes no key); a range key (:data:`_RANGE_KEYS`) of an
    axis given as a range table; nothing else (``tp = {x = 1}``, ``tp.x``, ``tier = {cpu = {x = 1}}``,
    ``"tier.cpu" = [{x = 1}]``: each takes one value there). A scalar under a name the option lacks is left to the
    refusal that names it (the shape's, the range's, :func:`_set`'s)."""
    name, dot, _ = str(key).partition(".")
    entries = 1 if _name(name) in pairs and not dot else 0    # a NAME=VALUE option's table is one key deep
    if table == "axes" and isinstance(value, dict):
        return len(names) == 1 and names[0] in _RANGE_KEYS
    return len(names) <= entries


def _refuse_unknown_keys(kind: str, options: dict[str, Any], where: str, table: str) -> None:
    """Refuse the first key of ``options`` (a plan's ``table``, in the order written) that is no option of a ``kind``
    point (:func:`pcs.sweep.kinds.key_problem`: unknown, or an output option), before any value is checked: a plan
    with ``bogus_key = 1`` then ``tp = nan`` names the unknown key first (its value's refusal named ``tp``).

    Raises:
        PlanKeyError: naming ``where`` and the key, at its line (``table``.key)."""
    from pcs.sweep.kinds import key_problem

    for key in options:
        written = str(key).partition(".")[0].strip()
        problem = key_problem(kind, _name(written))
        if problem is not None:
            raise PlanKeyError(f"{where}: {_quoted_as_written(written, _name(written), problem)}", f"{table}.{key}")


def _refuse_odd_values(kind: str, options: dict[str, Any], where: str, table: str) -> None:
    """Refuse, anywhere in an option's value, a TOML date, time or date-time (``tomllib`` gives datetime objects: no
    option takes one, and the point id's canonical JSON could not hold it) and, in a value of an option ``kind``'s
    command has, a number that is not finite (TOML's ``nan``, ``inf``, ``-inf``, ``+nan``; JSON's ``NaN`` the JSON
    reader refuses itself): no option takes one. A key that is no option is left to its own refusal, which names it
    (``unknown option 'x'``, :func:`pcs.sweep.kinds.unknown_option`), and so is a key inside a value that names
    nothing its option has (:func:`_named`: ``tp = {x = 1979-05-27}`` is refused as a table where ``tp`` takes one
    value): a value's check belongs to a known name.

    Raises:
        PlanKeyError: naming ``where`` (the plan and its table) and the value's path (``x[0].a``, :func:`_scalars`),
            at its line (``table``.path); a number as written (``+nan``, :func:`pcs.configfile.as_written`).
    """
    from pcs.configfile import as_written
    from pcs.sweep.kinds import option_shape, pair_options, value_wanted

    pairs = pair_options(kind)
    for key, value in options.items():
        known = option_shape(kind, _name(str(key).partition(".")[0])) is not None
        for path, v, names in _scalars(value, str(key)):
            if not _named(key, value, names, pairs, table):
                continue
            if isinstance(v, (datetime.date, datetime.time)):     # datetime.datetime is a date
                raise PlanKeyError(f"{where}: option {shown_repr(path)}: a TOML date/time ({v.isoformat()}) is not an option "
                                   "value; write the value as a string (a duration such as \"2s\", a size such as "
                                   "\"10GB\")", f"{table}.{path}")
            if known and isinstance(v, float) and not math.isfinite(v):
                raise PlanKeyError(f"{where}: option {shown_repr(path)}: {as_written(v)} is not finite; give "
                                   f"{value_wanted(kind, _name(str(key)))}", f"{table}.{path}")


def _refuse_wrong_shapes(kind: str, fixed: dict[str, Any], axes: dict[str, Any], source: str) -> None:
    """UserError naming the file, the table, the key (and the axis item) whose value does not fit its option
    (:func:`pcs.sweep.kinds.shape_problem`): an axis is a list of values, one per point, each as ``[fixed]``
    would give it, or a range table; ``NAME.ENTRY`` keys take one value."""
    from pcs.sweep.kinds import option_shape, shape_problem

    def shape(key: str) -> str | None:
        name, dot, _ = str(key).partition(".")
        return "one" if dot else option_shape(kind, _name(name))

    for key, value in fixed.items():
        problem = shape(key) and shape_problem(shape(key), value)
        if problem:
            raise PlanKeyError(f"{source} [fixed] {shown_repr(key)}: {problem}", f"fixed.{key}")
    for key, spec in axes.items():
        if not isinstance(spec, list):
            continue                    # a range table, or not a list: expand_axis says what an axis is
        for i, value in enumerate(spec, start=1):
            problem = shape(key) and shape_problem(shape(key), value)
            if problem:
                raise PlanKeyError(f"{source} [axes] {shown_repr(key)}: value {i} of the axis (one point's value): {problem}",
                                f"axes.{key}[{i - 1}]")


def _pair_entries(fixed: dict[str, Any], axes: dict[str, Any], option: str) -> Iterator[tuple[str, str, Any]]:
    """Each entry of NAME=VALUE option ``option`` (``tier``, ``link``, ``tier_policy``) a plan writes as one value --
    ``[fixed]``'s table or list, a ``NAME.ENTRY`` key, a ``NAME.ENTRY`` axis's list, ``"ENTRY=VALUE"`` strings --
    as (field, entry name, value): ``field`` is where it is written (``fixed.tier.cpu``, ``axes.tier.cpu[1]``,
    ``fixed.tier``). A range axis's values are checked by :func:`pcs.sweep.axes.expand_axis`."""
    for table, items in (("fixed", fixed), ("axes", axes)):
        for key, value in items.items():
            name, dot, entry = str(key).partition(".")
            if _name(name) != option:
                continue
            values = list(enumerate(value)) if table == "axes" and isinstance(value, list) else [(None, value)]
            for i, v in values:
                at = f"{table}.{key}" + ("" if i is None else f"[{i}]")
                if dot:
                    yield at, entry.strip().lower(), v
                elif isinstance(v, dict):
                    yield from ((f"{at}.{k}", str(k).strip().lower(), x) for k, x in v.items())
                else:           # "NAME=VALUE" strings (a malformed one is _pairs's to refuse)
                    pairs = (str(t).partition("=") for t in (v if isinstance(v, list) else [v]))
                    yield from ((at, k.strip().lower(), x.strip()) for k, sep, x in pairs if sep and k.strip())


#: the form of each option's entry, as :func:`pcs.engine.tiercheck.one_entry_each` names it
_ENTRY_WHAT = {"tier": "tier", "link": "link", "tier_policy": "tier policy", "admit": "admit"}


def _check_entry_lists(kind: str, fixed: dict[str, Any], axes: dict[str, Any], source: str,
                       pairs: frozenset[str]) -> None:
    """Refuse a list written into one entry of a NAME=VALUE option (``link = {cpu = "25GB/s,ssd=1GB/s"}``, an axis's
    ``"1GB/s,x=2GB/s"``) or of ``admit`` (``admit = "cpu=reuse:2,gpu=retain"``), by the one test of such a list
    (:func:`pcs.engine.tiercheck.run_on_entries`), at the line it is written, in the plan's words
    (:func:`pcs.engine.tiercheck.one_entry_each`: ``link = {cpu = "25GB/s", ssd = "1GB/s"}``).

    Raises:
        PlanKeyError: naming the plan, the key and the entries to give apart."""
    from pcs.cli.tiernames import known_tier_names
    from pcs.engine.tiercheck import one_entry_each, run_on_entries

    for option in sorted(set(_ENTRY_WHAT) & (set(pairs) | {"admit"})):
        for field, entry, text in _option_entries(fixed, axes, option, pairs):
            entries = isinstance(text, str) and run_on_entries(text if entry is None else f"{entry}={text}",
                                                               known_tier_names())
            if entries:
                table, _, key = field.partition(".")
                raise PlanKeyError(f"{source} [{table}] {shown_repr(key)}: "
                                   f"{one_entry_each(plan_word(option), _ENTRY_WHAT[option], entries, plan=True, axis=table == 'axes')}",
                                   field)


def _option_entries(fixed: dict[str, Any], axes: dict[str, Any], option: str,
                    pairs: frozenset[str]) -> Iterator[tuple[str, str | None, Any]]:
    """(field, entry name or None, value) of each entry of ``option``: a NAME=VALUE option's by
    :func:`_pair_entries`, each string item of a list option (``admit``) with no entry name."""
    if option in pairs:
        yield from _pair_entries(fixed, axes, option)
        return
    for table, items in (("fixed", fixed), ("axes", axes)):
        for key, value in items.items():
            if _name(str(key)) == option:
                yield from _items(table, key, value, axis=table == "axes")


def _items(table: str, key: str, value: Any, axis: bool) -> Iterator[tuple[str, None, Any]]:
    """Each string item a list option's ``value`` holds (an axis: each point's value, a list of them too), as
    (field, None, text)."""
    values = list(enumerate(value)) if axis and isinstance(value, list) else [(None, value)]
    for i, v in values:
        at = f"{table}.{key}" + ("" if i is None else f"[{i}]")
        for t in (v if isinstance(v, list) else [v]):
            if isinstance(t, str):
                yield at, None, t


def _check_tier_sizes(fixed: dict[str, Any], axes: dict[str, Any], source: str) -> None:
    """Refuse a tier size the run would refuse (``tier = {cpu = "10Gb"}``) with the plan, at the line it is written:
    the run's own parser, :func:`pcs.engine.api.parse_tier` (the command's option check; before, the refusal came
    when the point was prepared, naming no line).

    Raises:
        PlanKeyError: naming the plan, the key and the parser's reason.
    """
    from pcs.engine.api import parse_tier

    for field, name, size in _pair_entries(fixed, axes, "tier"):
        if isinstance(size, (str, int, float)) and not isinstance(size, bool):
            try:
                parse_tier(f"{name}={size}")
            except UserError as exc:
                raise PlanKeyError(f"{source} [{field.partition('.')[0]}] {shown_repr(field.partition('.')[2])}: "
                                   f"{str(exc).splitlines()[0]}", field) from None


def _expanded_axes(axes: dict[str, Any], names: list[str], source: str) -> list[list[Any]]:
    """Each axis's values (:func:`pcs.sweep.axes.expand_axis`), in order; ``names``: the keys stripped.

    Raises:
        PlanKeyError: a bad axis, at its key (``axes.tier.cpu``).
    """
    values = []
    for n, k in zip(names, axes):
        try:
            values.append(expand_axis(n, axes[k]))
        except ValueError as exc:
            raise PlanKeyError(f"{source}: {exc}", f"axes.{k}") from None
    return values


def _check_tables(kind: str, fixed: Any, axes: Any, source: str) -> None:
    """The checks of :func:`make_plan` on its ``[fixed]`` and ``[axes]`` tables, in this order: each a table, every
    key's name (both tables) before any value, the values, one option named once, the shapes of the values.

    Raises:
        UserError: the first refusal (PlanKeyError naming the key where it names one)."""
    for what, table in (("fixed", fixed), ("axes", axes)):
        if not isinstance(table, dict):
            raise PlanKeyError(f"{source}: [{what}] must be a table of options", what)
    for what, table in (("fixed", fixed), ("axes", axes)):      # every key's name before any value
        _refuse_unknown_keys(kind, table, f"{source} [{what}]", what)
    for what, table in (("fixed", fixed), ("axes", axes)):
        _refuse_odd_values(kind, table, f"{source} [{what}]", what)
    _refuse_same_option(fixed, f"{source} [fixed]", "fixed")
    _refuse_same_option(axes, f"{source} [axes]", "axes")
    _refuse_wrong_shapes(kind, fixed, axes, source)


def make_plan(data: dict[str, Any], source: str = "<plan>", base_dir: Path | str = ".",
              pair_options: dict[str, frozenset[str]] | None = None) -> Plan:
    """Expand a parsed plan.

    Args:
        data: the plan's top-level table (``kind``, ``fixed``, ``axes``, ``description``).
        source: its name in messages.
        base_dir: where relative paths in options point from.
        pair_options: kind -> its ``NAME=VALUE`` option names (default:
            :func:`pcs.sweep.kinds.pair_options`).
    Returns:
        :class:`Plan`.
    Raises:
        UserError: an empty plan, an unknown top-level key or kind, a bad axis, a value that does not fit its
            option (a nested list, a table where one value goes: :func:`pcs.sweep.kinds.shape_problem`), a TOML
            date/time or a number that is not finite (``nan``, ``inf``) as a value, an option
            both fixed and an axis, a tier size the run refuses (:func:`_check_tier_sizes`), one option or table
            entry named twice (two spellings,
            ``write-policy`` / ``write_policy``, or ``tier.cpu`` / ``tier.CPU``), two points with one id, more than
            :data:`MAX_POINTS` points.
    """
    if not data:
        raise UserError(f"{source}: the plan is empty; a plan has {', '.join(_TOP_KEYS)} (docs/sweep.md)")
    unknown = [k for k in data if k not in _TOP_KEYS]
    if unknown:
        raise PlanKeyError(f"{source}: unknown key {shown_repr(unknown[0])}; {did_you_mean(unknown[0], _TOP_KEYS)}a plan has "
                           f"{', '.join(_TOP_KEYS)}", str(unknown[0]))
    kind = data.get("kind", "replay")
    if kind not in KINDS:
        raise PlanKeyError(f"{source}: unknown kind {shown_repr(kind)}; {did_you_mean(kind, KINDS)}valid: {', '.join(KINDS)}", "kind")
    if pair_options is None:
        from pcs.sweep.kinds import pair_options as _po

        pairs = _po(kind)
    else:
        pairs = pair_options.get(kind, frozenset())
    fixed, axes = data.get("fixed", {}), data.get("axes", {})
    _check_tables(kind, fixed, axes, source)
    _check_entry_lists(kind, fixed, axes, source, pairs)
    if "tier" in pairs:
        _check_tier_sizes(fixed, axes, source)
    base: dict[str, Any] = {}
    for k, v in fixed.items():
        _set(base, k, v, pairs, f"{source} [fixed]", "fixed")
    names = [k.strip() for k in axes]
    clash = [k for n, k in zip(names, axes) if "." not in n and _name(n) in base]
    if clash:
        raise PlanKeyError(f"{source}: option {shown_repr(clash[0].strip())} is both fixed and an axis", f"axes.{clash[0]}")
    values = _expanded_axes(axes, names, source)
    total = 1
    for v in values:
        total *= len(v)
    if total > MAX_POINTS:
        raise UserError(f"{source}: {total:,} points; a plan may have at most {MAX_POINTS:,}")
    return Plan(source, Path(base_dir), kind, tuple(names), _points(kind, base, names, values, pairs, source),
                spellings=_spellings(fixed, axes))


def _points(kind: str, base: dict[str, Any], names: list[str], values: list[list[Any]],
            pairs: frozenset[str], source: str) -> tuple[Point, ...]:
    """The product of the axes over the fixed options, the last axis fastest."""
    points, seen = [], set()
    for combo in itertools.product(*values):
        opts = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base.items()}
        for n, v in zip(names, combo):
            _set(opts, n, v, pairs, f"{source} [axes]", "axes")
        pid = point_id(kind, opts)
        if pid in seen:
            raise UserError(f"{source}: two points have the same options ({point_label(opts)})")
        seen.add(pid)
        points.append(Point(pid, opts))
    return tuple(points)


def _spellings(fixed: dict[str, Any], axes: dict[str, Any]) -> dict[str, str]:
    """:attr:`Plan.spellings`: each option of ``[fixed]`` and ``[axes]`` (underscores, as :attr:`Point.options`
    keys it) -> its key as written, stripped, without a ``.ENTRY`` (``tier_policy.cpu`` -> ``tier_policy``). One
    option is never spelled two ways in one plan (:func:`_refuse_same_option`)."""
    out: dict[str, str] = {}
    for key in [*fixed, *axes]:
        written = str(key).partition(".")[0].strip()
        out.setdefault(_name(written), written)
    return out


def as_written_key(plan: Plan, option: str | None, message: str) -> str:
    """``message``, a refusal of ``option`` (underscores) in the plan's words (:func:`pcs.sweep.kinds.plan_word`,
    dashes: ``option 'requests-out' shapes ...``), with the option quoted as ``plan`` writes its key (``option
    'requests_out' shapes ...``; ``'tier_policy.cpu'`` for an entry). Only a quoted name changes: the point's
    options (``point ID (requests-out=r.jsonl)``) stay in the one spelling its id is made of. An option the plan
    does not write (an in-memory plan, None) leaves ``message`` as it is."""
    from pcs.sweep.kinds import plan_word

    return _quoted_as_written(plan.spellings.get(option) if option else None, option, message)


def _quoted_as_written(written: str | None, option: str | None, message: str) -> str:
    """``message`` with ``option`` quoted in the plan's words (``'requests-out'``) quoted as ``written`` instead
    (``'requests_out'``): :func:`as_written_key`'s rule; ``message`` as it is when ``written`` is None."""
    from pcs.sweep.kinds import plan_word

    if written is None or option is None or written == plan_word(option):
        return message
    return re.sub("'" + re.escape(plan_word(option)) + r"(?=['.])", lambda _: "'" + written, message)


def load_plan(path: str | Path) -> Plan:
    """Read and expand a plan file (``.toml`` or ``.json``).

    Raises:
        PathError: ``path`` is missing, a directory or not readable (naming ``path=``).
        InputError / UserError: bad TOML/JSON, or as :func:`make_plan`.
    """
    from pcs.configfile import read_mapping_lines

    data, lines = read_mapping_lines(path)      # checks the path as given (Path('') is '.')
    path = Path(path)
    try:
        return replace(make_plan(data, str(path), path.parent), lines=lines, path_fields=_path_fields(data),
                       value_fields=_value_fields(data))
    except PlanKeyError as exc:     # the line where its key is written, after the plan's name
        line, text = lines.line(exc.field), str(exc)
        if line is None or not text.startswith(str(path)):
            raise
        rest = text[len(str(path)):]
        raise PlanKeyError(f"{path}:{line}{':' if rest.startswith(' [') else ''}{rest}", exc.field) from None


#: Why ``-`` (stdin) is refused as a plan's file (:func:`check_paths`): every point reads its files, and a plan
#: that reads one trace in many points cannot read stdin, which is read once, more than once.
STDIN_IN_PLAN = ("'-' (stdin): a plan cannot read stdin: its points each read their files, and stdin can be read "
                 "once; name a file")


#: plan options that name a file a point reads (relative to the plan's folder; ``model`` only when a file is
#: there, and checked here only when empty)
PATH_OPTIONS = ("trace", "model", "model_config", "hardware_file", "workloads", "prefill_csv")


def _path_fields(data: dict[str, Any]) -> dict[tuple[str, Any], str]:
    """:attr:`Plan.path_fields` of a plan's parsed text (the first place a value is written)."""
    out: dict[tuple[str, Any], str] = {}
    for table, many in (("fixed", False), ("axes", True)):
        for key, value in (data.get(table) or {}).items():
            name = _name(str(key))
            if name not in PATH_OPTIONS:
                continue
            values = value if isinstance(value, list) else [value]
            for i, v in enumerate(values):
                if isinstance(v, str) and (name != "model" or not v.strip()):    # a model: only an empty one
                    out.setdefault((name, v), f"{table}.{key}[{i}]" if many or isinstance(value, list) else f"{table}.{key}")
    return out


def _written(value: Any) -> str:
    """One value as :attr:`Plan.value_fields` keys it: its JSON text (``1``, ``1.0`` and ``true`` apart)."""
    return json.dumps(value, sort_keys=True, default=str)


def _value_fields(data: dict[str, Any]) -> dict[tuple[str, str], str]:
    """:attr:`Plan.value_fields` of a plan's parsed text: a ``[fixed]`` value at its key (``fixed.tp``), an axis
    list's element at its index (``axes.policy[1]``), a range axis's values at its key (``axes.tp``, keyed by
    the value ``None``: the grid is written there). A NAME=VALUE option's entry (``tier``, ``link``,
    ``tier-policy``: a table's entry, a list's ``"cpu=..."`` string, a ``link.cpu`` key or axis element) is keyed
    by its ``ENTRY=VALUE`` text, as the run's refusal keeps it (``refused_value``, ``"cpu=pcie-gen9"``); the
    whole table of such an option is not keyed: which entry a refusal is about is not known without it. Another
    key's ``[fixed]`` table (``teir = {gpu = "500blocks"}``, refused whole) is keyed by its JSON text."""
    out: dict[tuple[str, str], str] = {}
    fixed, axes = (data.get(t) if isinstance(data.get(t), dict) else {} for t in ("fixed", "axes"))
    for option in PAIR_FIELDS:
        for field, entry, value in _pair_entries(fixed, axes, option):
            if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                out.setdefault((option, _written(f"{entry}={value}")), field)
    for table, items in (("fixed", fixed), ("axes", axes)):
        for key, value in items.items():
            name = _name(str(key))
            if "." in name or (isinstance(value, dict) and table == "fixed" and name in PAIR_FIELDS):
                continue
            if table == "axes" and isinstance(value, list):
                for i, v in enumerate(value):
                    out.setdefault((name, _written(v)), f"axes.{key}[{i}]")
            else:
                out.setdefault((name, _written(None if isinstance(value, dict) else value)), f"{table}.{key}")
    return out


#: the NAME=VALUE options whose entries :func:`_value_fields` keys: every kind's, from their one list
#: (:data:`pcs.sweep.kinds.PAIR_OPTIONS`)
PAIR_FIELDS = tuple(sorted(set().union(*PAIR_OPTIONS.values())))


def value_field(plan: Plan, option: str, value: Any) -> str | None:
    """The key's path in ``plan`` (``axes.policy[1]``, ``fixed.tp``) where option ``option``'s ``value`` (one
    point's, as :attr:`Point.options` holds it; for a NAME=VALUE option the refused entry's ``"ENTRY=VALUE"``) is
    written, or None when it is not known (an in-memory plan, a NAME=VALUE option's whole table): a message then
    names no line, never a wrong one. Another option's ``[fixed]`` table (an unknown key's, refused whole) is
    found by its JSON text."""
    fields = plan.value_fields
    if isinstance(value, dict) and option in PAIR_FIELDS:
        return None
    return fields.get((option, _written(value))) or fields.get((option, _written(None)))


def check_paths(plan: Plan, points: Iterable[Point]) -> None:
    """Refuse a file the ``points`` name that cannot be read (missing, a directory, not readable), before any
    point is built: a relative path is read from the plan's folder (:attr:`Plan.base_dir`, docs/sweep.md).

    Raises:
        InputError: naming the plan, the line and field of the value (:attr:`Plan.path_fields`; the field alone
            when its line is not found), the path as written and as resolved, and the problem
            (``p.toml:3: field 'fixed.trace': 'gone.jsonl' (from the plan's folder: runs/gone.jsonl): No such
            file or directory``); an empty or blank path (``field 'fixed.trace': an empty path; give a file
            name``; an empty ``model``: ``empty; give a preset name ...``); ``-`` (:data:`STDIN_IN_PLAN`: it
            skipped the check, and every point then failed on its own, naming no line)."""
    from pcs.cli.modelarg import EMPTY_MODEL
    from pcs.trace.pathcheck import check_input_file, empty_path_problem

    checked: set[tuple[str, str]] = set()
    for point in points:
        for (name, written), where in plan.path_fields.items():
            if (name, written) in checked or not _uses(point.options.get(name), written):
                continue
            checked.add((name, written))
            line = plan.lines.line(where) if plan.lines is not None else None
            if not written.strip():     # Path('') is '.': refused as empty, before it is read as the plan's folder
                raise InputError(plan.source, line, where, EMPTY_MODEL if name == "model" else empty_path_problem())
            if written == "-":
                raise InputError(plan.source, line, where, STDIN_IN_PLAN)
            resolved = written if Path(written).is_absolute() else str(plan.base_dir / written)
            try:
                check_input_file(resolved, name)
            except InputError as exc:
                how = "" if resolved == written else f" (from the plan's folder: {resolved})"
                raise InputError(plan.source, line, where, f"{shown_repr(written)}{how}: {exc.problem}") from None


def _uses(value: Any, written: str) -> bool:
    return value == written or (isinstance(value, list) and written in value)


def input_files(path: str | Path) -> list[tuple[str, str]]:
    """``(option, path)`` of every existing file the plan's points read: the values of :data:`PATH_OPTIONS` in
    ``[fixed]`` and in the axes' lists, from the plan's folder (the points are not expanded: a plan of a million
    points costs no more than its text).

    Raises:
        PathError / InputError: the plan cannot be read (as :func:`load_plan`).
    """
    from pcs.configfile import read_mapping

    path = Path(path)
    data = read_mapping(path)
    found: dict[str, str] = {}
    for table, many in ((data.get("fixed"), False), (data.get("axes"), True)):
        for key, value in (table.items() if isinstance(table, dict) else ()):
            if _name(str(key)) not in PATH_OPTIONS:
                continue
            for v in (value if many and isinstance(value, list) else [value]):
                file = path.parent / v if isinstance(v, str) and v not in ("", "-") else None
                if file is not None and file.is_file():
                    found.setdefault(str(file), _name(str(key)).replace("_", "-"))
    return [(opt, f) for f, opt in found.items()]
