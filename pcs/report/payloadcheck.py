"""The one check of a JSON file ``pcs report`` reads: every field against the type its result declares.

A replay, compare or curve JSON is the ``to_dict()`` of a result dataclass
(:mod:`pcs.schema`): each field's type is written once, in the class, and
:func:`check_payload` walks the file against those types (nested results,
lists, objects of values), so a damaged or hand-edited file is refused with
one line, ``field 'X': must be ...``, before the page reads it -- never an
error from inside the page's code. A footprint JSON is a plain ``to_dict``
(:class:`pcs.model.footprint.FootprintResult`); its keys' types are listed here
(:data:`_FOOTPRINT`, its rows :data:`_COMPONENT`, :data:`_DTYPE_ROW`), and the keys its page reads are
required in it and in each row. Other top-level fields a file lacks are left alone (an older pcs); a nested
result object must hold the keys its ``to_dict()`` always writes; the
range rules, by field name, are one table for every kind (:data:`RANGES`, :func:`range_rule`), which
:func:`pcs.report.htmlpage.check_replay_payload` reads too for the replay headline.

Numbers: an ``int`` field takes an integer; a ``float`` field a finite number
(NaN and Infinity, which Python's JSON reader takes, are refused), or null
where the value may be non-finite (docs/json.md: non-finite numbers print as
null) -- the fields the page computes with (and both items of a payload lens
pair) are held to a number.
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
import types
import typing
from typing import Any

from pcs.errors import UserError, quoted

__all__ = ["check_payload", "check_value", "must_be", "NumberRange", "RANGES", "range_rule", "check_range"]

#: result class of each kind of JSON (the classes docs/json.md documents)
_CLASSES = {"replay": "pcs.engine.result.ReplaySummary", "compare": "pcs.engine.compare.CompareResult",
            "curve": "pcs.curves.result.CurveResult"}
#: keys a command appends to its result's to_dict (pcs.report.jsondoc.CLI_KEYS) and their types
_EXTRA: dict[str, dict[str, Any]] = {
    "replay": {"trace_file": dict[str, Any] | None, "replay_command": str},
    "compare": {"notes": tuple[str, ...]},
    "curve": {"dtype": str | None, "layout": str | None, "notes": tuple[str, ...]},
}
#: kinds whose top-level keys ``to_dict()`` always writes are all required (the page reads them); a replay's
#: are checked by pcs.report.htmlpage.check_replay_payload and the fields it reads
_WHOLE = ("compare", "curve")
#: keys always written today that the same command's JSON from an older pcs lacks (the page does not read them):
#: a curve before 2026-12-04 (pcs.curves.result.upgrade_curve_payload renames its other keys)
_OLDER_LACK = {"curve": ("block_accesses",)}
#: float fields the page computes with: a number, never null
_NUMBER_ONLY = {"curve": ("ceiling_hit_ratio", "sample_rate")}
#: nested float fields the page computes with, by path (``[]``: every item of a list): a number, never null (the
#: time axis's step; the restore-vs-recompute scatter's two coordinates of each request)
_NUMBER_PATHS = ("series.step_s", "distributions.restore_vs_recompute.restore_s[]",
                 "distributions.restore_vs_recompute.prefill_saved_s[]")
_ROW = dict[str, Any]
#: the accounting modes of a footprint: each a *_bytes total and, in a by_dtype row, a *_ratio_vs_bf16
_MODES = ("reference", "serialized", "reserved", "prefix_store")
#: keys of a footprint JSON the page reads (pcs.report.htmltables.footprint_tables): a file lacking one is refused
_FOOTPRINT_NEEDS = ("model", "tokens", "sequences", "block_size", "tp", "components", "by_dtype",
                    "reference_bytes_per_token", "serialized_bytes_per_token", "serialized_bytes_per_block",
                    *(f"{m}_bytes" for m in _MODES))
#: a footprint's component row: key -> type (the *_bytes* keys integers) and the keys the page reads
_COMPONENT: dict[str, Any] = {"name": str, "describe": str, "dtype": str, "layout": str, "layers": int,
                              "tokens_held": int, "reserved_blocks": int}
_COMPONENT_NEEDS = ("name", "describe", "reference_bytes_per_token", "serialized_bytes_per_token",
                    "serialized_bytes_per_block", "fixed_bytes_per_sequence", *(f"{m}_bytes" for m in _MODES))
#: a footprint's by_dtype row: its ratios are numbers the page formats (never null)
_DTYPE_ROW: dict[str, Any] = {"dtype": str, "layout": str, "asked": str, **{f"{m}_ratio_vs_bf16": float for m in _MODES}}
_DTYPE_NEEDS = ("dtype", *(f"{m}_bytes" for m in _MODES), *(f"{m}_ratio_vs_bf16" for m in _MODES))
#: the footprint JSON (pcs.model.footprint.FootprintResult.to_dict): key -> type; *_bytes* keys are integers
_FOOTPRINT: dict[str, Any] = {
    "model": str, "dtype": str, "tokens": int, "block_size": int, "sequences": int, "tp": int, "num_layers": int,
    "source": str, "components": tuple[_ROW, ...], "by_dtype": tuple[_ROW, ...], "layout": _ROW,
    "assumptions": tuple[str, ...], "tp_group": _ROW, "layer_pattern": dict[str, int],
    "max_context_tokens": int | None, "notes": tuple[str, ...], "prefix_store_blocks": int,
}


def _load(path: str) -> type:
    import importlib

    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _what(tp: Any) -> str:
    """The annotation ``tp`` in words (for the message)."""
    if tp is type(None):
        return "null"
    words = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}
    if tp in words:
        return words[tp]
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_what(a) for a in typing.get_args(tp))
    if origin in (tuple, list):
        return "a list"
    return "an object"


def _shallow(value: Any, tp: Any, number_only: bool) -> bool:
    """Whether ``value`` is of ``tp`` at its top level (a list is a list, whatever its items)."""
    if tp is Any:
        return True
    if tp is type(None):
        return value is None
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return (value is None and not number_only) or (isinstance(value, (int, float)) and not isinstance(value, bool))
    if tp is str:
        return isinstance(value, str)
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return any(_shallow(value, a, number_only) for a in typing.get_args(tp))
    if origin in (tuple, list):
        return isinstance(value, list)
    return isinstance(value, dict)          # dict[...] and nested results


def must_be(tp: Any, path: str, number_only: bool = False) -> str:
    """What the field at ``path`` of type ``tp`` must be, in words: THE wording of a value of the wrong type in
    every JSON ``pcs report`` reads (``field 'X': must be WORDS, got V``; :func:`check_value`, and through it
    :func:`pcs.report.htmlpage.check_replay_payload`). A number field with a :data:`RANGES` rule its type takes
    (an integer field a count's, a float field a ratio's) is worded by the rule; ``or null`` where null is taken
    (a ``| None`` type, or a float field not held to a number: pcs writes a non-finite number as null).

    >>> must_be(int | None, "distinct_cacheable_blocks"), must_be(str, "kernel")
    ('a count >= 0 below 2^63 or null', 'a string')
    """
    union = typing.get_origin(tp) in (typing.Union, types.UnionType)
    arms = [a for a in (typing.get_args(tp) if union else (tp,)) if a is not type(None)]
    if not arms:
        return "null"
    nullable = len(arms) < (len(typing.get_args(tp)) if union else 1) or (float in arms and not number_only)
    rule = range_rule(path)
    if rule is not None and len(arms) == 1 and arms[0] in (int, float) and (arms[0] is int or not rule.integer):
        words = rule.what
    else:
        words = " or ".join(_what(a) for a in arms)
    return words + (" or null" if nullable else "")


def check_value(value: Any, tp: Any, path: str, number_only: bool = False) -> None:
    """``value`` of the field at ``path`` against its declared type ``tp`` and :data:`RANGES` rule, nested values
    included (the one check every field of every kind goes through; ``number_only``: a float not null).

    Raises:
        UserError: ``field 'requests': must be a count >= 0 below 2^63, got "x"`` (:func:`must_be`).
    """
    _walk(value, tp, path, number_only)


def _walk(value: Any, tp: Any, path: str, number_only: bool = False, shown: str | None = None) -> None:
    """Raise a UserError naming the first place under ``path`` where ``value`` is not of ``tp``; ``shown``: the
    name the file gives the field at ``path`` (an old curve's, :func:`pcs.curves.result.upgraded_curve`);
    ``number_only`` too for a path of :data:`_NUMBER_PATHS`."""
    number_only = number_only or (value is None and re.sub(r"\[\d+\]", "[]", path) in _NUMBER_PATHS)
    if not _shallow(value, tp, number_only):
        raise UserError(f"field '{shown or path}': must be {must_be(tp, path, number_only)}, "
                        f"got {quoted(value, 60)}")
    if (tp is float or tp is Any) and isinstance(value, float) and not math.isfinite(value):   # pcs writes no NaN
        raise UserError(f"field '{shown or path}': must be a finite number, got {json.dumps(value)} (pcs writes a "
                        "non-finite number as null)")
    _check_range(value, path, shown)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        arm = next(a for a in args if _shallow(value, a, number_only))
        _walk(value, arm, path, number_only, shown)
    elif origin is tuple and args and args[-1] is not Ellipsis:     # a fixed-length tuple: (this run, other)
        if len(value) != len(args):
            raise UserError(f"field '{path}': must be a list of {len(args)} items, got {quoted(value, 60)}")
        for i, (v, item) in enumerate(zip(value, args)):     # a pair's items: the page divides them, never null
            _walk(v, item, f"{path}[{i}]", True)
    elif origin in (tuple, list):
        item = args[0] if args else Any
        for i, v in enumerate(value):
            _walk(v, item, f"{path}[{i}]")
    elif origin is dict:
        for k, v in value.items():
            _walk(v, args[1], f"{path}.{k}")
    elif dataclasses.is_dataclass(tp):
        missing = next((k for k in _always(tp) if k not in value), None)
        if missing is not None:     # a nested result always writes these keys; the page reads them
            raise UserError(f"field '{path}': must be an object with '{missing}' (as pcs writes it), got "
                            f"{quoted(value, 60)}")
        _walk_fields(value, _fields(tp), path + ".")


@dataclasses.dataclass(frozen=True, slots=True)
class NumberRange:
    """One range rule of :data:`RANGES`: a number from ``low`` to ``high`` (both included, but ``low`` when
    ``low_open``), an integer when ``integer``; ``what`` says it in the refusal (``field 'X': must be WHAT, got
    V``)."""

    what: str
    low: float
    high: float
    integer: bool
    low_open: bool = False

    def holds(self, value: float) -> bool:
        """Whether the number ``value`` is in the range (NaN never is; an integer rule takes no float)."""
        if self.integer and not isinstance(value, int):
            return False
        return (self.low < value if self.low_open else self.low <= value) and value <= self.high


def _ranges() -> dict[str, NumberRange]:
    from pcs.choices import MAX_BLOCK_SIZE     # the block sizes pcs takes (tokens): no file of it holds another

    return {
        "ratio": NumberRange("a ratio in [0, 1]", 0.0, 1.0, False),
        "ratio_difference": NumberRange("a difference of two ratios, in [-1, 1]", -1.0, 1.0, False),
        "count": NumberRange("a count >= 0 below 2^63", 0, 2 ** 63 - 1, True),
        "nonnegative": NumberRange("a number >= 0", 0.0, math.inf, False),
        "positive": NumberRange("a number > 0", 0.0, math.inf, False, low_open=True),
        "positive_count": NumberRange("a count >= 1 below 2^63", 1, 2 ** 63 - 1, True),
        "sample_rate": NumberRange("a rate in (0, 1]", 0.0, 1.0, False, low_open=True),
        "block_size": NumberRange(f"a count >= 1 up to {MAX_BLOCK_SIZE:,} (tokens per block, "
                                  "pcs.choices.MAX_BLOCK_SIZE)", 1, MAX_BLOCK_SIZE, True),
    }


#: THE range rules of every JSON ``pcs report`` reads, by rule name (:func:`range_rule` picks one by field
#: name): :func:`check_payload` walks every field of every kind through it, and
#: :func:`pcs.report.htmlpage.check_replay_payload` the replay headline's fields the page reads (each side keeps
#: its own presence and null rules). A hit ratio is in [0, 1]; a gap term (docs/semantics.md §12: ``gap.TERM``
#: of a replay, ``gap_TERM`` of a compare variant) is a difference of two of them; a count (blocks, accesses,
#: misses, tokens, bytes, requests) fits pcs's int64 columns; a block size is what pcs takes (1..2^20); a count
#: that no file pcs writes holds as 0 is at least 1 (:data:`_POSITIVE_NAMES`); a curve's SHARDS ``sample_rate`` is
#: in (0, 1] (1.0 exact; pcs.curve refuses 0 and anything above 1).
RANGES: dict[str, NumberRange] = _ranges()
#: integer fields that count (blocks, accesses, misses, tokens, bytes, requests): rule ``count``. Of a footprint:
#: ``tokens`` (T; ``pcs footprint --tokens 0`` is taken), a component's ``tokens_held`` (0 for T = 0 and for the
#: page-padding row) and ``layers`` (0 for the page-padding row, pcs.model.footprint.PAGE_PADDING).
#: A byte size per unit (``bytes_per_block``, ``serialized_bytes_per_token``, ``fixed_bytes_per_sequence``), a
#: count of requests or restores, a ``trace_file``'s ``bytes``, each value of a ``bytes`` split (per link, per
#: tier, per component: :data:`_COUNT_PARENTS`, ``X_by_component`` takes the rule of X) is a count too.
_COUNT_SUFFIXES = ("_blocks", "_accesses", "_misses", "_tokens", "_bytes", "_blocks_end", "_blocks_peak",
                   "_bytes_end", "_bytes_peak", "bytes_per_block", "bytes_per_token",
                   "bytes_per_sequence")
_COUNT_NAMES = ("requests", "block_accesses", "tokens", "tokens_held", "layers", "bytes", "restored", "restores",
                "sampled", "requests_with_hit", "requests_truncated", "requests_waited")
_COUNT_PARENTS = ("restored_per_link", "written_per_tier")
#: numbers above 0: a time series' sampling step ``step_s`` (0.001 s x 2^k), a link's bandwidth (``bandwidth_bps``
#: of an envelope link, each of ``series.link_bandwidth_bps``: pcs.engine.api refuses a link of bandwidth 0)
_POSITIVE_NUMBERS = ("step_s", "bandwidth_bps")
#: numbers at least 0 with no upper bound: a footprint's ``MODE_ratio_vs_bf16`` (bytes over bf16's: fp32 is 2)
_NONNEGATIVE_SUFFIXES = ("_ratio_vs_bf16",)
#: integer fields that are at least 1: rule ``positive_count``. ``tp`` (a footprint's and a replay's: the
#: tensor-parallel ranks, ``--tp`` 1..1024; a group of 0 GPUs holds nothing), a footprint's ``sequences``
#: (``--sequences`` 1..10^9: the totals are per sequence times it) and ``num_layers`` (a model whose no layer holds a
#: KV cache or state is refused, pcs.model.hfconfig, so it has at least one), and each count of its
#: ``layer_pattern`` (layers of each kind the model has: a kind is listed only when it counts one); a curve's
#: ``block_bytes`` (the model's reserved bytes per block, null without one: a model holds some KV per block).
_POSITIVE_NAMES = ("tp", "sequences", "num_layers", "block_bytes")
_POSITIVE_PARENTS = ("layer_pattern",)
#: the gap split's terms (pcs.engine.result.GapSplit): rule ``ratio_difference`` under ``gap.`` or as ``gap_TERM``
_GAP_TERMS = ("block_rounding", "capacity_eviction", "concurrency", "capacity", "policy", "hybrid_rules")


def range_rule(path: str) -> NumberRange | None:
    """The :data:`RANGES` rule of the field at ``path`` (``rows[0].lru_hit_ratio``, ``gap.concurrency``), or None.

    >>> range_rule("rows[3].lru_hit_ratio").what, range_rule("variants[0].gap_policy").low
    ('a ratio in [0, 1]', -1.0)
    """
    parts = path.split(".")
    key, parent = parts[-1].split("[", 1)[0], parts[-2].split("[", 1)[0] if len(parts) > 1 else ""
    if (parent == "gap" and key in _GAP_TERMS) or (key.startswith("gap_") and key[4:] in _GAP_TERMS):
        return RANGES["ratio_difference"]
    if key.endswith("hit_ratio"):
        return RANGES["ratio"]
    if key == "block_size":
        return RANGES["block_size"]
    if key == "sample_rate":
        return RANGES["sample_rate"]
    if key in _POSITIVE_NAMES or parent in _POSITIVE_PARENTS:
        return RANGES["positive_count"]
    if key in _COUNT_NAMES or key.endswith(_COUNT_SUFFIXES) or parent in _COUNT_PARENTS:
        return RANGES["count"]
    if parent.endswith("_by_component") and "[" not in parts[-1]:
        return range_rule(parent.removesuffix("_by_component"))
    if key in _POSITIVE_NUMBERS or parent == "link_bandwidth_bps":
        return RANGES["positive"]
    if key.endswith(_NONNEGATIVE_SUFFIXES):
        return RANGES["nonnegative"]
    return None


def check_range(value: Any, path: str, rule: NumberRange | None = None, name: str | None = None) -> None:
    """``value`` of the field at ``path`` against its :data:`RANGES` rule (``rule``, or :func:`range_rule` of
    ``path``; none: nothing to check). A value that is not a number is left to the type check (its caller's), but
    an integer rule takes no float. Raises a UserError for a value out of the rule's range, NaN included, naming
    the field ``name`` (the name in the file) or ``path``.

    Raises:
        UserError: ``field 'rows[0].lru_hit_ratio': must be a ratio in [0, 1], got -3.0``; a huge integer is
            shown by its digits (``got an integer of 401 digits``).
    """
    rule = rule or range_rule(path)
    if rule is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    if not rule.holds(value):
        big = isinstance(value, int) and abs(value) >= 10 ** 30
        got = f"an integer of {len(str(abs(value))):,} digits" if big else json.dumps(value)
        raise UserError(f"field '{name or path}': must be {rule.what}, got {got}")


def _check_range(value: Any, path: str, shown: str | None = None) -> None:
    """:func:`check_range` of a value whose type the walk has checked: only an integer is held to an integer
    rule (a ``*_bytes`` field declared a float, a mean, is not a count)."""
    rule = range_rule(path)
    if rule is not None and (isinstance(value, int) or not rule.integer):
        check_range(value, path, rule, shown)


def _fields(cls: type) -> dict[str, Any]:
    """JSON key -> type of a result class (a flattened mapping, key ``<...>``, is not checked by name)."""
    from pcs.schema import json_fields

    hints = typing.get_type_hints(cls)
    return {f.key: hints[f.name] for f in json_fields(cls) if not f.key.startswith("<")}


def _always(cls: type) -> list[str]:
    """The keys ``to_dict()`` of a result class always writes (not omitted when null or otherwise)."""
    from pcs.schema import json_fields

    return [f.key for f in json_fields(cls) if not f.omit and not f.key.startswith("<")]


def _walk_fields(obj: dict, fields: dict[str, Any], prefix: str, number_only: tuple[str, ...] = (),
                 written: dict[str, str] | None = None) -> None:
    """Each key of ``fields`` that ``obj`` has through :func:`_walk`; ``written``: key -> the name the file holds
    it under, where not the key (the range rule is the key's: an old name's rule is its new name's)."""
    for key, tp in fields.items():
        if key in obj:
            _walk(obj[key], tp, prefix + key, key in number_only, (written or {}).get(key))


def check_payload(kind: str, payload: dict, written: dict[str, str] | None = None) -> None:
    """Check every field of a ``kind`` JSON (``replay``, ``compare``, ``curve``, ``footprint``) the file has.

    ``written``: top-level key -> the name the file holds it under, where another (a curve JSON of a pcs before
    2026-12-04 read under today's names, :func:`pcs.curves.result.upgraded_curve`): each message names the field
    the file holds.

    Raises:
        UserError: ``field 'X': must be WHAT, got VALUE`` for the first field (nested: ``tiers[0].name``) whose
            value is not of the declared type (:func:`must_be`) or out of its range; *_bytes* fields of a
            footprint must be integers; a curve's null where its own fields rule null out (:func:`_curve_nulls`).
    """
    if kind == "footprint":
        _check_footprint(payload)
        return
    cls = _load(_CLASSES[kind])
    if kind in _WHOLE:           # the page reads these keys at the top level: each one always written is required
        missing = next((k for k in _always(cls) if k not in payload and k not in _OLDER_LACK.get(kind, ())), None)
        if missing is not None:
            also = _old_name(kind, missing, payload)
            raise UserError(f"field '{missing}': missing (pcs {kind} always writes it{also})")
    fields = {**_fields(cls), **_EXTRA[kind]}
    _walk_fields(payload, fields, "", _NUMBER_ONLY.get(kind, ()), written)
    if kind == "compare":
        _check_tier_capacities(payload)
    if kind == "replay":
        from pcs.report.replaycheck import check_replay_relations

        _check_threads_mode(payload)
        check_replay_relations(payload)
    if kind == "curve":
        from pcs.report.curvecheck import check_curve

        check_curve(payload, written or {})


def _old_name(kind: str, key: str, payload: dict) -> str:
    """``; a pcs before 2026-12-04 wrote it as OLD`` for a curve key renamed that day (:data:`OLD_NAMES
    <pcs.curves.result.OLD_NAMES>`) whose old name the file lacks too (a ``block_accesses`` it holds is today's
    count of every block hash), else ``""``."""
    from pcs.curves.result import OLD_NAMES

    old = OLD_NAMES.get(key) if kind == "curve" else None
    return f"; a pcs before 2026-12-04 wrote it as {old}" if old and old not in payload else ""


def _check_threads_mode(payload: dict) -> None:
    """A replay's ``threads.mode``, when present (its type is checked above): one of
    :data:`pcs.beside.THREADS_MODES` (what ``PCS_THREADS`` resolves to).

    Raises:
        UserError: ``field 'threads.mode': must be one of auto, on, off, got "bogus"``; ``field
            'threads.used': must be false when threads.mode is off ...`` (``off`` never hands work to a thread).
    """
    from pcs.beside import THREADS_MODES

    threads = payload.get("threads")
    if isinstance(threads, dict) and "mode" in threads and threads["mode"] not in THREADS_MODES:
        raise UserError(f"field 'threads.mode': must be one of {', '.join(THREADS_MODES)}, "
                        f"got {quoted(threads['mode'], 60)}")
    if isinstance(threads, dict) and threads.get("mode") == "off" and threads.get("used") is True:
        raise UserError("field 'threads.used': must be false when threads.mode is off (PCS_THREADS=off runs every "
                        "part on the calling thread), got true")


#: the two numbers of each tier of a compare variant's ``tier_capacities`` (a key ``pcs compare`` adds to each
#: variant, pcs.report.jsondoc.CLI_KEYS), which the page's tier rows read
_TIER_CAPACITY_KEYS = ("capacity_blocks", "capacity_bytes")


def _check_tier_capacities(payload: dict) -> None:
    """Each compare variant's ``tier_capacities``, when present: an object of tiers, each an object with the two
    integers of :data:`_TIER_CAPACITY_KEYS`.

    Raises:
        UserError: ``field 'variants[0].tier_capacities.gpu': must be an object with 'capacity_bytes' ...`` or the
            first value of a wrong type.
    """
    for i, row in enumerate(payload.get("variants") or ()):
        if not isinstance(row, dict) or "tier_capacities" not in row:
            continue
        path = f"variants[{i}].tier_capacities"
        _walk(row["tier_capacities"], dict[str, dict[str, int]], path)
        for name, tier in row["tier_capacities"].items():
            _check_row(tier, {k: int for k in _TIER_CAPACITY_KEYS}, _TIER_CAPACITY_KEYS, f"{path}.{name}.")


def _check_row(row: dict, types_: dict[str, Any], needs: tuple[str, ...], path: str,
               number_only: tuple[str, ...] = ()) -> None:
    """One object of a footprint JSON: each key the page reads present, then every key against its type (any
    key holding ``_bytes`` an integer).

    Raises:
        UserError: ``field 'by_dtype[0]': must be an object with 'serialized_bytes' (as pcs writes it)``, or the
            first value of a wrong type.
    """
    missing = next((k for k in needs if k not in row), None)
    if missing is not None:
        raise UserError(f"field '{path.rstrip('.') or 'the file'}': must be an object with '{missing}' "
                        f"(as pcs writes it), got {quoted(row, 60)}")
    fields = dict(types_)
    fields.update({k: int for k in row if "_bytes" in k and k not in fields})
    _walk_fields(row, fields, path, number_only)


def _check_footprint(payload: dict) -> None:
    """A footprint JSON: its top level, each component and each by_dtype row (:func:`_check_row`). A by_dtype
    row's ``MODE_ratio_vs_bf16`` is a number, but null where the bf16 row (the first, the ratios' base:
    pcs.model.footprint._by_dtype) holds 0 bytes in that mode (0 / 0: a prefix store of T < B tokens keeps no
    block)."""
    _check_row(payload, _FOOTPRINT, _FOOTPRINT_NEEDS, "")
    for i, row in enumerate(payload["components"]):
        _walk(row, dict[str, Any], f"components[{i}]")
        _check_row(row, _COMPONENT, _COMPONENT_NEEDS, f"components[{i}].")
    base = None
    for i, row in enumerate(payload["by_dtype"]):
        _walk(row, dict[str, Any], f"by_dtype[{i}]")
        base = row if base is None else base
        number_only = tuple(f"{m}_ratio_vs_bf16" for m in _MODES if base.get(f"{m}_bytes") != 0)
        _check_row(row, _DTYPE_ROW, _DTYPE_NEEDS, f"by_dtype[{i}].", number_only)
