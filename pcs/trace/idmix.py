"""Derived block hashes: a vectorised 64-bit mixer for ids made from other ids (transforms, re-blocking).

A derived id is ``mix64(tag, a, b, ...)``: SplitMix64's finaliser (Steele,
Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA'14;
the constants of Java's ``SplittableRandom``) applied after xor-ing in each
column in turn. Equal inputs give equal ids; different inputs collide with
probability about 2**-64 per pair, the same as the traces' own 64-bit hashes.
"""
from __future__ import annotations

import numpy as np

__all__ = ["mix64"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _splitmix(x: np.ndarray) -> np.ndarray:
    x = x + _GOLDEN
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def mix64(tag: int, *cols) -> np.ndarray:
    """``np.ndarray[np.uint64]``: one derived id per row of the (broadcast) integer columns.

    Args:
        tag: separates families of derived ids (e.g. one per transform).
        cols: integer arrays (or scalars) of one shape; values taken modulo 2**64.

    >>> a = mix64(1, np.array([5, 5, 6], dtype=np.uint64), 2)
    >>> bool(a[0] == a[1]), bool(a[0] != a[2]), a.dtype.name
    (True, True, 'uint64')
    """
    arrs = [np.asarray(c).astype(np.uint64) if np.asarray(c).dtype != np.uint64 else np.asarray(c) for c in cols]
    shape = np.broadcast_shapes(*(a.shape for a in arrs)) if arrs else ()
    with np.errstate(over="ignore"):
        h = np.full(shape, np.uint64(tag & 0xFFFF_FFFF_FFFF_FFFF), dtype=np.uint64)
        for a in arrs:
            h = _splitmix(h ^ a)
    return h
