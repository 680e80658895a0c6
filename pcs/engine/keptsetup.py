"""Set-up objects of :func:`pcs.replay` made once per process and kept for the next call with the same inputs.

A replay's set-up made the same objects afresh every call: the model split over its TP ranks
(``ModelSpec.with_tp``), the group's bytes per block in each layout (:func:`pcs.model.group_block_bytes`), the
tiers parsed from their texts (:func:`pcs.engine.api.parse_tier`) and, in the summary, the CDF's indexes of a
column of n values. Each is a pure function of its inputs and its result is immutable (frozen dataclasses, a
read-only array) or copied on the way out (a :class:`pcs.model.footprint.BlockBytes`' dict), so a kept one is
the object the call would have made, field for field.

Keys: a model spec by identity (:class:`_ByIdentity`: the object itself is held, so its ``id`` is not reused;
a preset is one object per process, :func:`pcs.model.presets._build`), never by equality -- two specs that compare
equal can still differ in what a summary prints (``2`` against ``2.0`` bytes a weight) -- and each other input by
value and type. At most :data:`KEPT` entries each, the oldest dropped first. Thread-safe (a lock around each
table; a value is made outside it, so two threads may both make it, and either is kept).
"""
from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np
from pcs.model import group_block_bytes
from pcs.model.footprint import BlockBytes

__all__ = ["kept_with_tp", "kept_group_block_bytes", "kept_tier", "cdf_indexes"]

#: entries each table keeps (a process replays a few models, block sizes and tier lists)
KEPT = 16


class _Table:
    """A bounded table: key -> value, the oldest entry dropped past :data:`KEPT`; get/put under a lock."""

    __slots__ = ("_items", "_lock")

    def __init__(self) -> None:
        self._items: dict = {}
        self._lock = threading.Lock()

    def get(self, key) -> Any:
        with self._lock:
            return self._items.get(key)

    def put(self, key, value) -> None:
        with self._lock:
            if key not in self._items and len(self._items) >= KEPT:
                del self._items[next(iter(self._items))]
            self._items[key] = value


class _ByIdentity:
    """``fn(obj, *rest)`` kept per (``obj`` by identity, each of ``rest`` by value and type); ``obj`` is held by
    the entry, so no other object takes its ``id`` while the entry lives. An error is raised, not kept; a ``rest``
    that cannot be hashed is made afresh each call."""

    __slots__ = ("_fn", "_table")

    def __init__(self, fn: Callable) -> None:
        self._fn, self._table = fn, _Table()

    def __call__(self, obj, *rest):
        key = (id(obj), rest, tuple(map(type, rest)))
        try:
            hit = self._table.get(key)
        except TypeError:           # an input that cannot be hashed: made afresh, not kept
            return self._fn(obj, *rest)
        if hit is not None and hit[0] is obj:
            return hit[1]
        value = self._fn(obj, *rest)
        self._table.put(key, (obj, value))
        return value


def _with_tp(spec, tp: int):
    return spec.with_tp(tp)


def _group_block_bytes(spec, block_size: int, layout: str):
    return group_block_bytes(spec, block_size, layout)


_KEPT_WITH_TP = _ByIdentity(_with_tp)
_KEPT_BLOCK_BYTES = _ByIdentity(_group_block_bytes)


def kept_with_tp(spec, tp: int):
    """``spec.with_tp(tp)`` (:meth:`pcs.model.spec.ModelSpec.with_tp`: byte figures per rank), kept per (this spec
    object, ``tp``). Raises as ``with_tp``."""
    return _KEPT_WITH_TP(spec, tp)


def kept_group_block_bytes(spec, block_size: int, layout: str):
    """:func:`pcs.model.group_block_bytes` of (``spec``, ``block_size``, ``layout``), kept per (this spec object,
    block size, layout): a fresh :class:`pcs.model.footprint.BlockBytes` each call, its ``per_component`` a copy of
    the kept one's dict (a caller may change its own). Raises as ``group_block_bytes``."""
    bb = _KEPT_BLOCK_BYTES(spec, block_size, layout)
    return BlockBytes(bb.total_bytes, dict(bb.per_component))


_TIERS = _Table()


def kept_tier(text: str, parse: Callable[[str], Any]):
    """``parse(text)`` of a tier's text (``"gpu=400GB"``; a str, not a subclass), kept per text: the
    :class:`pcs.engine.api.TierSpec` is frozen and holds only that text's name, sizes and Nones. An error (a
    malformed text) is raised each time, not kept."""
    hit = _TIERS.get(text)
    if hit is None:
        hit = parse(text)
        _TIERS.put(text, hit)
    return hit


_CDF = _Table()


def cdf_indexes(n: int) -> np.ndarray:
    """``np.clip(np.ceil(n * CDF_LEVELS).astype(np.int64) - 1, 0, n - 1)``: the 0-based indexes of the CDF's levels
    (:data:`pcs.engine.series.CDF_LEVELS`) in ``n`` sorted values (an int >= 1), kept per n as a read-only int64
    array (a run's CDFs read two or three columns of one length): a view of a read-only array held by no one else,
    so a caller cannot make it writeable again (``flags.writeable = True`` raises ValueError)."""
    hit = _CDF.get(n)
    if hit is None:
        from pcs.engine.series import CDF_LEVELS

        owner = np.clip(np.ceil(n * CDF_LEVELS).astype(np.int64) - 1, 0, n - 1)
        owner.flags.writeable = False
        hit = owner.view()   # a view of a read-only owner: its flag cannot be set back to writeable
        _CDF.put(n, hit)
    return hit
