"""The checks of a curve JSON that read two or more of its fields at once (``pcs report``; docs/json.md).

:func:`pcs.report.payloadcheck.check_payload` checks each field of a curve JSON alone (its type and range); a file
whose fields are each fine may still contradict itself, and the page would draw the contradiction. The pairs the
curve format defines (docs/json.md, CurveResult; as :func:`pcs.curves.api.curve` writes them), each refused with
the field named as the file holds it (an older file's own names, :func:`pcs.curves.result.upgraded_curve`):

- ``distinct_cacheable_blocks`` <= ``cacheable_blocks`` (distinct ids among them);
- ``block_accesses`` >= ``cacheable_blocks`` (the cacheable blocks are among the accesses; a file of a pcs before
  2026-12-04 has no ``block_accesses`` of today's meaning);
- a row's or a knee's ``capacity_bytes`` = its ``capacity_blocks`` x ``block_bytes``, and none beside a null
  ``block_bytes`` (written only with a model);
- a knee ``pN``'s ``percent_of_ceiling`` is N; its keys are p50, p90 and p99, each of them (pcs writes all three,
  with null capacities when the ceiling is 0);
- each row's ``ceiling_hit_ratio`` is the file's (one single-sequence ratio); the rows' ``capacity_blocks``
  ascend (one row per capacity, sorted);
- a null only where the other fields allow it (:func:`_curve_nulls`);
- ``block_bytes`` null when ``model`` is (pcs writes a block's bytes only with a model);
- LRU <= Belady <= ceiling (docs/semantics.md §14): each row's and knee's ``lru_hit_ratio`` and each row's
  ``belady_hit_ratio`` at most ``ceiling_hit_ratio`` (so a ceiling of 0 leaves no LRU hit), and a row's
  ``lru_hit_ratio`` at most its ``belady_hit_ratio`` when the curve is exact (``sample_rate`` 1.0: a sampled
  LRU value is an estimate, :mod:`pcs.curves.shards`, and pcs writes no Belady value beside it: a sampled
  curve with a non-null ``belady_hit_ratio`` or ``belady_block_misses``, row or knee, is refused);
- a row's ``lru_block_misses`` and ``belady_block_misses`` at most ``cacheable_blocks`` (a miss is one of the
  cacheable accesses; a sampled count is rounded from an estimate of hit blocks that is never negative);
- down the rows (capacities ascending), ``lru_hit_ratio`` never falls and ``lru_block_misses`` never rises: LRU is
  a stack algorithm (Mattson et al. 1970: a larger LRU cache holds every block a smaller one holds), and pcs reads
  every capacity off one cumulative count of hits by stack depth (:class:`pcs.curves.api.LruCurve`; a sampled
  count adds non-negative estimates, so it holds there too); in an exact curve ``belady_hit_ratio`` never falls
  either (MIN is the optimum at each capacity, :mod:`pcs.curves.belady`, and a larger cache can follow a smaller
  one's schedule). ``belady_block_misses`` may rise: MIN keeps only blocks that earn hit tokens, and a block
  access at the last-token cap earns none (tests/report/test_curve_monotone.py has a trace where it goes from 27
  at 8 blocks to 28 at 9);
- the knees' ``capacity_blocks``: p50 <= p90 <= p99 (each is the smallest capacity reaching its share of the
  ceiling on one non-decreasing curve).

Each holds exactly in the floats pcs writes: the ratios of one curve are integer (or, sampled, cumulative
non-negative float) hit tokens over one prompt-token count, so their order is the order of the hit tokens.

(``block_bytes`` >= 1 and ``sample_rate`` in (0, 1] are range rules of one field:
:data:`pcs.report.payloadcheck.RANGES`.)
"""
from __future__ import annotations

import json
from typing import Any

from pcs.errors import UserError, quoted
from pcs.report.payloadcheck import must_be

__all__ = ["KNEE_KEYS", "check_curve"]


def check_curve(payload: dict, written: dict[str, str]) -> None:
    """Every cross-field check of a curve JSON whose fields' types and ranges are checked already.

    Args:
        payload: the curve JSON under today's names (:func:`pcs.curves.result.upgraded_curve`).
        written: today's key -> the name the file holds it under, where another.

    Raises:
        UserError: ``field 'X': must be ..., got V`` for the first contradiction, X named as the file holds it.
    """
    _check_distinct_cacheable(payload, written)
    _check_accesses(payload, written)
    _check_knee_keys(payload)
    _check_curve_nulls(payload, written)
    _check_model_bytes(payload)
    _check_capacity_bytes(payload)
    _check_rows(payload)
    _check_sampled_belady(payload)
    _check_ratio_order(payload)
    _check_misses(payload, written)
    _check_monotone(payload)
    _check_knee_order(payload)


def _check_model_bytes(payload: dict) -> None:
    """``block_bytes`` (a model's reserved bytes per block) is null when ``model`` is: :func:`pcs.curves.api.curve`
    writes the two together (``_block_bytes``: the model's name and its bytes, or neither).

    Raises:
        UserError: ``field 'block_bytes': must be null when model is null (pcs writes a block's bytes only with a
            model), got 4096``.
    """
    bb = payload.get("block_bytes")
    if "model" in payload and payload["model"] is None and bb is not None:
        raise UserError(f"field 'block_bytes': must be null when model is null (pcs writes a block's bytes only "
                        f"with a model), got {quoted(bb, 60)}")


def _number(value: Any) -> bool:
    """A JSON number (not a bool: its type was checked above, this only skips nulls and others)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_sampled_belady(payload: dict) -> None:
    """No Belady value in a sampled curve (``sample_rate`` below 1): pcs computes Belady only for an exact curve
    (:func:`pcs.curves.api.curve`), so a value beside a sampled LRU estimate was put there by hand, and the page
    would draw an optimum nobody computed.

    Raises:
        UserError: ``field 'rows[0].belady_hit_ratio': must be null when sample_rate is below 1 (pcs computes
            Belady only for an exact curve), got 0.2``.
    """
    rate = payload.get("sample_rate")
    if not _number(rate) or rate >= 1.0:
        return
    for name, obj in _capacity_places(payload):
        for key in ("belady_hit_ratio", "belady_block_misses"):
            if obj.get(key) is not None:
                raise UserError(f"field '{name}.{key}': must be null when sample_rate is below 1 (pcs computes "
                                f"Belady only for an exact curve), got {json.dumps(obj[key])}")


def _check_ratio_order(payload: dict) -> None:
    """LRU <= Belady <= ceiling (docs/semantics.md §14; see the module docstring): every ``lru_hit_ratio`` (rows
    and knees) and ``belady_hit_ratio`` at most ``ceiling_hit_ratio``; a row's ``lru_hit_ratio`` at most its
    ``belady_hit_ratio`` in an exact curve (``sample_rate`` 1.0; a sampled LRU value is an estimate). Nulls and
    values of another type are skipped (checked above).

    Raises:
        UserError: ``field 'rows[1].lru_hit_ratio': must be at most ceiling_hit_ratio (0.25): no cache hits more
            than an infinite one, got 0.3``; ``field 'rows[0].lru_hit_ratio': must be at most belady_hit_ratio
            (0.2): Belady's MIN is the optimum at one capacity, got 0.25``.
    """
    ceiling, exact = payload.get("ceiling_hit_ratio"), payload.get("sample_rate") == 1.0
    for name, obj in _capacity_places(payload):
        lru, belady = obj.get("lru_hit_ratio"), obj.get("belady_hit_ratio")
        for key, value in (("lru_hit_ratio", lru), ("belady_hit_ratio", belady)):
            if _number(ceiling) and _number(value) and value > ceiling:
                raise UserError(f"field '{name}.{key}': must be at most ceiling_hit_ratio ({json.dumps(ceiling)}): "
                                f"no cache hits more than an infinite one, got {json.dumps(value)}")
        if exact and _number(lru) and _number(belady) and lru > belady:
            raise UserError(f"field '{name}.lru_hit_ratio': must be at most belady_hit_ratio ({json.dumps(belady)}): "
                            f"Belady's MIN is the optimum at one capacity, got {json.dumps(lru)}")


def _check_misses(payload: dict, written: dict[str, str]) -> None:
    """Each row's ``lru_block_misses`` and ``belady_block_misses`` at most ``cacheable_blocks`` (misses are among
    the cacheable accesses the curve replays), ``cacheable_blocks`` named as the file holds it.

    Raises:
        UserError: ``field 'rows[0].lru_block_misses': must be at most cacheable_blocks (40): each miss is one
            of the cacheable accesses, got 41``.
    """
    cacheable, shown = payload.get("cacheable_blocks"), written.get("cacheable_blocks", "cacheable_blocks")
    if not _number(cacheable):
        return
    for i, row in enumerate(payload.get("rows") or ()):
        for key in ("lru_block_misses", "belady_block_misses"):
            value = row.get(key) if isinstance(row, dict) else None
            if _number(value) and value > cacheable:
                raise UserError(f"field 'rows[{i}].{key}': must be at most {shown} ({cacheable}): each miss is one "
                                f"of the cacheable accesses, got {value}")


#: per row key: +1 when it never falls down the rows, -1 when it never rises, and why (:func:`_check_monotone`)
_MONOTONE = {
    "lru_hit_ratio": (1, "LRU at a larger capacity holds every block it holds at a smaller one"),
    "lru_block_misses": (-1, "LRU at a larger capacity holds every block it holds at a smaller one"),
    "belady_hit_ratio": (1, "Belady's MIN is the optimum, and a larger cache can follow a smaller one's choices"),
}


def _check_monotone(payload: dict) -> None:
    """Down the rows (``capacity_blocks`` ascending, checked before): ``lru_hit_ratio`` never falls,
    ``lru_block_misses`` never rises, and in an exact curve (``sample_rate`` 1.0) ``belady_hit_ratio`` never
    falls (the module docstring says why; ``belady_block_misses`` may rise). Nulls and rows that are no objects
    are skipped (checked above).

    Raises:
        UserError: ``field 'rows[2].lru_hit_ratio': must be at least rows[1]'s (0.3): LRU at a larger capacity
            holds every block it holds at a smaller one, got 0.25``.
    """
    keys = [k for k in _MONOTONE if k != "belady_hit_ratio" or payload.get("sample_rate") == 1.0]
    rows = payload.get("rows") if isinstance(payload.get("rows"), list) else []
    for key in keys:
        sign, why = _MONOTONE[key]
        before = None       # (index, value) of the last row with a number
        for i, row in enumerate(rows):
            value = row.get(key) if isinstance(row, dict) else None
            if not _number(value):
                continue
            if before is not None and (value - before[1]) * sign < 0:
                side = "at least" if sign > 0 else "at most"
                raise UserError(f"field 'rows[{i}].{key}': must be {side} rows[{before[0]}]'s "
                                f"({json.dumps(before[1])}): {why}, got {json.dumps(value)}")
            before = (i, value)


def _check_knee_order(payload: dict) -> None:
    """The knees' ``capacity_blocks`` (nulls skipped): p50 <= p90 <= p99, each the smallest capacity reaching its
    share of the ceiling on one non-decreasing LRU curve (:meth:`pcs.curves.api.LruCurve.knee`).

    Raises:
        UserError: ``field 'knee.p90.capacity_blocks': must be at least knee.p50's (100): a larger share of the
            ceiling needs at least as many blocks, got 50``.
    """
    knee = payload.get("knee") if isinstance(payload.get("knee"), dict) else {}
    before = None
    for key in KNEE_KEYS:
        obj = knee.get(key)
        blocks = obj.get("capacity_blocks") if isinstance(obj, dict) else None
        if not isinstance(blocks, int) or isinstance(blocks, bool):
            continue
        if before is not None and blocks < before[1]:
            raise UserError(f"field 'knee.{key}.capacity_blocks': must be at least knee.{before[0]}'s ({before[1]}): "
                            f"a larger share of the ceiling needs at least as many blocks, got {blocks}")
        before = (key, blocks)


def _check_accesses(payload: dict, written: dict[str, str]) -> None:
    """``block_accesses`` (every block hash) is at least ``cacheable_blocks`` (those the block rules let the cache
    hold: a subset of the accesses).

    Raises:
        UserError: ``field 'block_accesses': must be at least cacheable_blocks (40): the cacheable blocks are among
            the block accesses, got 39``.
    """
    accesses, cacheable = payload.get("block_accesses"), payload.get("cacheable_blocks")
    if isinstance(accesses, int) and isinstance(cacheable, int) and accesses < cacheable:
        a, c = (written.get(k, k) for k in ("block_accesses", "cacheable_blocks"))
        raise UserError(f"field '{a}': must be at least {c} ({cacheable}): the cacheable blocks are among the block "
                        f"accesses, got {accesses}")


def _capacity_places(payload: dict) -> list[tuple[str, dict]]:
    """(name, object) of each knee and row that is an object (types checked already): ``knee.p50``, ``rows[2]``."""
    knee = payload.get("knee") if isinstance(payload.get("knee"), dict) else {}
    places = [(f"knee.{k}", v) for k, v in knee.items() if isinstance(v, dict)]
    places += [(f"rows[{i}]", r) for i, r in enumerate(payload.get("rows") or ()) if isinstance(r, dict)]
    return places


def _check_capacity_bytes(payload: dict) -> None:
    """Each knee's and row's ``capacity_bytes``: its ``capacity_blocks`` x ``block_bytes`` (both integers), and
    absent or null when ``block_bytes`` is null (written only with a model); each knee ``pN``'s
    ``percent_of_ceiling`` is N.

    Raises:
        UserError: ``field 'rows[1].capacity_bytes': must be capacity_blocks x block_bytes (100 x 4096 =
            409600), got 5``; ``field 'knee.p50.percent_of_ceiling': must be 50 (knee p50's level), got 90``.
    """
    bb = payload.get("block_bytes")
    for name, obj in _capacity_places(payload):
        blocks, got = obj.get("capacity_blocks"), obj.get("capacity_bytes")
        if bb is None and got is not None:
            raise UserError(f"field '{name}.capacity_bytes': must be absent when block_bytes is null (written only "
                            f"with a model), got {quoted(got, 60)}")
        if isinstance(bb, int) and isinstance(blocks, int) and isinstance(got, int) and got != blocks * bb:
            raise UserError(f"field '{name}.capacity_bytes': must be capacity_blocks x block_bytes ({blocks} x {bb} "
                            f"= {blocks * bb}), got {got}")
        level = obj.get("percent_of_ceiling")
        if name.startswith("knee.") and isinstance(level, int) and f"p{level}" != name[5:]:
            raise UserError(f"field '{name}.percent_of_ceiling': must be {name[6:]} (knee {name[5:]}'s level), "
                            f"got {level}")


def _check_rows(payload: dict) -> None:
    """The rows: ``capacity_blocks`` strictly ascending (one row per capacity, sorted), each ``ceiling_hit_ratio``
    the file's own (one single-sequence hit ratio, the same in every row).

    Raises:
        UserError: ``field 'rows[1].capacity_blocks': must be above rows[0]'s (100): one row per capacity,
            ascending, got 100``; ``field 'rows[0].ceiling_hit_ratio': must be ceiling_hit_ratio (0.25), got 0.5``.
    """
    ceiling, before = payload.get("ceiling_hit_ratio"), None
    for i, row in enumerate(payload.get("rows") or ()):
        if not isinstance(row, dict):
            continue
        blocks, ratio = row.get("capacity_blocks"), row.get("ceiling_hit_ratio")
        if isinstance(blocks, int) and before is not None and blocks <= before:
            raise UserError(f"field 'rows[{i}].capacity_blocks': must be above rows[{i - 1}]'s ({before}): one row "
                            f"per capacity, ascending, got {blocks}")
        before = blocks if isinstance(blocks, int) else None
        if isinstance(ceiling, (int, float)) and isinstance(ratio, (int, float)) and ratio != ceiling:
            raise UserError(f"field 'rows[{i}].ceiling_hit_ratio': must be ceiling_hit_ratio ({json.dumps(ceiling)}): "
                            f"one single-sequence hit ratio, got {json.dumps(ratio)}")


def _check_distinct_cacheable(payload: dict, written: dict[str, str]) -> None:
    """A curve's ``distinct_cacheable_blocks`` (null when sampled) counts distinct ids among its
    ``cacheable_blocks``, so it is at most that count (types and ranges checked above); each named as the file
    holds it (``written``).

    Raises:
        UserError: ``field 'distinct_cacheable_blocks': must be at most cacheable_blocks (40): ..., got 41``.
    """
    distinct, cacheable = payload.get("distinct_cacheable_blocks"), payload.get("cacheable_blocks")
    if isinstance(distinct, int) and isinstance(cacheable, int) and distinct > cacheable:
        d, c = (written.get(k, k) for k in ("distinct_cacheable_blocks", "cacheable_blocks"))
        raise UserError(f"field '{d}': must be at most {c} ({cacheable}): distinct ids among the cacheable blocks, "
                        f"got {distinct}")


def _curve_nulls(payload: dict) -> list[tuple[tuple[Any, ...], Any, str]]:
    """The fields of a curve JSON that may be null only under a condition its other fields deny (docs/json.md,
    as :func:`pcs.curves.api.curve` writes them), each as (its keys from the top, e.g. ``("knee", "p50",
    "capacity_blocks")`` or ``("rows", 2, "capacity_bytes")``; its type but null; when a number is due): the
    distinct count is null only for a sampled curve; the ceiling and a row's LRU and ceiling ratios only when
    ``prompt_tokens`` is 0 (0/0); a knee only when the ceiling is 0; ``block_bytes`` only
    without a model; a ``capacity_bytes`` (written with a model) only beside a null ``capacity_blocks`` (a
    knee's). (A number where null is due is another kind, not checked.) Keys are kept whole, never split on a dot."""
    due: list[tuple[tuple[Any, ...], Any, str]] = []
    if payload.get("sample_rate") == 1.0:
        due.append((("distinct_cacheable_blocks",), int, "when sample_rate is 1.0 (null only for a sampled curve)"))
    if payload.get("model") is not None:
        due.append((("block_bytes",), int, "when model is named (null only without a model)"))
    prompt = payload.get("prompt_tokens")
    if isinstance(prompt, int) and not isinstance(prompt, bool) and prompt > 0:
        why = "when prompt_tokens is above 0 (null only for 0/0: a trace with no prompt tokens)"
        due.append((("ceiling_hit_ratio",), float, why))
        due += [(("rows", i, k), float, why) for i in range(len(payload.get("rows") or ()))
                for k in ("lru_hit_ratio", "ceiling_hit_ratio")]
    knee = payload.get("knee") if isinstance(payload.get("knee"), dict) else {}
    ceiling = payload.get("ceiling_hit_ratio")
    if isinstance(ceiling, (int, float)) and ceiling > 0:
        due += [(("knee", p, k), tp, "when ceiling_hit_ratio is above 0 (null only when the ceiling is 0)")
                for p in knee for k, tp in (("capacity_blocks", int), ("lru_hit_ratio", float))]
    if isinstance(payload.get("block_bytes"), int):
        places = [("knee", p) for p, v in knee.items() if isinstance(v, dict) and v.get("capacity_blocks") is not None]
        places += [("rows", i) for i in range(len(payload.get("rows") or ()))]
        due += [((*p, "capacity_bytes"), int, "when block_bytes and capacity_blocks are numbers (capacity_blocks x "
                 "block_bytes)") for p in places]
    return due


#: the knee keys pcs writes (p50, p90, p99: pcs.curves.api.KNEE_PERCENTS)
KNEE_KEYS = ("p50", "p90", "p99")


def _check_knee_keys(payload: dict) -> None:
    """A curve's ``knee`` object (its type checked above) holds only the keys pcs writes (:data:`KNEE_KEYS`), and
    each of them: pcs writes all three, with null capacities when the ceiling is 0 (:func:`pcs.curves.api._knee`),
    so a knee missing is no curve of pcs (``knee: {}`` beside a ceiling above 0 drew a page without its knees).

    Raises:
        UserError: ``field 'knee': its keys must be among p50, p90, p99 (the knees pcs writes), got "a.b"``;
            ``field 'knee': must hold p50, p90 and p99 (pcs writes every knee, with null capacities when the
            ceiling is 0), p90 missing``.
    """
    knee = payload.get("knee")
    if not isinstance(knee, dict):
        return
    bad = next((k for k in knee if k not in KNEE_KEYS), None)
    if bad is not None:
        raise UserError(f"field 'knee': its keys must be among {', '.join(KNEE_KEYS)} (the knees pcs writes), "
                        f"got {quoted(bad, 60)}")
    missing = [k for k in KNEE_KEYS if k not in knee]
    if missing:
        raise UserError(f"field 'knee': must hold p50, p90 and p99 (pcs writes every knee, with null capacities "
                        f"when the ceiling is 0), {', '.join(missing)} missing")


def _check_curve_nulls(payload: dict, written: dict[str, str]) -> None:
    """Refuse a null :func:`_curve_nulls` rules out (types checked above), worded as a null gap term is.

    Raises:
        UserError: ``field 'distinct_cacheable_blocks': must be a count >= 0 below 2^63 when sample_rate is 1.0
            (null only for a sampled curve), got null``.
    """
    for keys, tp, when in _curve_nulls(payload):
        parent = _at(payload, keys[:-1])
        if isinstance(parent, dict) and keys[-1] in parent and parent[keys[-1]] is None:
            path = _path_name(keys)
            raise UserError(f"field '{written.get(path, path)}': must be {must_be(tp, path, True)} {when}, got null")


def _at(payload: dict, keys: tuple[Any, ...]) -> Any:
    """The value under ``keys`` (``("knee", "p50")``: strings index objects, integers lists), or None where a key
    is missing or an object is of another kind; each key taken whole (a key ``"a.b"`` is one key)."""
    obj: Any = payload
    for key in keys:
        if isinstance(key, int) and isinstance(obj, list) and 0 <= key < len(obj):
            obj = obj[key]
        elif isinstance(key, str) and isinstance(obj, dict):
            obj = obj.get(key)
        else:
            return None
    return obj


def _path_name(keys: tuple[Any, ...]) -> str:
    """How a message names the field under ``keys``: ``("rows", 2, "capacity_bytes")`` -> ``rows[2].capacity_bytes``."""
    return "".join(f"[{k}]" if isinstance(k, int) else (f".{k}" if i else k) for i, k in enumerate(keys))
