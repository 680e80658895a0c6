"""Adding up counter dataclasses (tier statistics, replay ledgers): one rule for every ``merge``.

Sums add, ``peak_*`` fields take the larger value (a peak of two runs is the
larger peak, not their sum), list fields merge item by item (an item with its
own ``merge`` merges, a number adds). Used by :class:`pcs.cache.tier.TierStats`
and :mod:`pcs.engine.ledger` (through :class:`Counters`) so sweeps and split runs add up the same way.
"""
from __future__ import annotations

from dataclasses import fields

__all__ = ["merge_counters", "Counters"]


def merge_counters(a, b) -> None:
    """Add dataclass ``b``'s counters into ``a`` (same class) in place.

    Raises:
        AssertionError: two list fields of different lengths (ledgers of different tier counts).
    """
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, list):
            assert len(x) == len(y), f"cannot merge ledgers of {len(x)} and {len(y)} tiers"
            setattr(a, f.name, [xi.merge(yi) if hasattr(xi, "merge") else xi + yi for xi, yi in zip(x, y)])
        elif f.name.startswith("peak_"):
            setattr(a, f.name, max(x, y))
        else:
            setattr(a, f.name, x + y)


class Counters:
    """Mixin of a counter dataclass: ``merge`` by :func:`merge_counters` (no fields, no slots of its own)."""

    __slots__ = ()

    def merge(self, other):
        """Add ``other``'s counters (same class) into self -- sums add, peaks take the max
        (:func:`merge_counters`) -- and return self.

        Raises:
            AssertionError: list fields of different lengths.
        """
        merge_counters(self, other)
        return self
