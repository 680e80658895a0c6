"""Adding up counter dataclasses (tier statistics, replay ledgers): one rule for every ``merge``.

Sums add, ``peak_*`` fields take the larger value (a peak of two runs is the
larger peak, not their sum), list fields merge item by item (an item with its
own ``merge`` merges, a number adds). Used by :class:`pcs.cache.tier.TierStats`
and :mod:`pcs.engine.ledger` so sweeps and split runs add up the same way.
"""
from __future__ import annotations

from dataclasses import fields

__all__ = ["merge_counters"]


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
