"""A hand-built :class:`pcs.engine.api.TierSpec`, checked as ``--tier NAME=SIZE`` text is (docs/semantics.md §16).

``pcs.replay(tiers=[...])`` takes strings or TierSpec objects. The string path parses a non-empty name and one
size, bytes or blocks, 0 .. 2^63 - 1 (:func:`pcs.units.parse_capacity`); :func:`check_tier_spec` holds a
TierSpec to the same rules, naming the tier and the field, and refuses a link given both on the TierSpec and in
``links=`` (one setting given twice, as the CLI refuses elsewhere).
"""
from __future__ import annotations

from typing import Any, Mapping

from pcs.argcheck import INT64_MAX, check_int
from pcs.errors import UserError, shown_repr
from pcs.units import plural

__all__ = ["check_tier_spec"]


def check_tier_spec(spec: Any, links: Mapping[str, Any] | None) -> None:
    """Refuse a TierSpec whose fields the string path could not have produced.

    Raises:
        UserError: ``name`` not a non-empty str; ``capacity_bytes`` / ``capacity_blocks`` not an integer in
            0 .. 2^63 - 1, or both given; ``policy`` not a str or None; ``link`` set while ``links`` names the tier.
    """
    name = spec.name
    if not isinstance(name, str) or not name.strip():
        raise UserError(f"TierSpec name must be a non-empty str, got {shown_repr(name)}")
    for field in ("capacity_bytes", "capacity_blocks"):
        value = getattr(spec, field)
        if value is not None:
            check_int(value, f"tier {shown_repr(name)}: {field}", 0, INT64_MAX)
    if spec.capacity_bytes is not None and spec.capacity_blocks is not None:
        raise UserError(f"tier {shown_repr(name)}: give capacity_bytes or capacity_blocks, not both "
                        f"({spec.capacity_bytes} B and {spec.capacity_blocks} {plural(spec.capacity_blocks, 'block')})")
    if spec.policy is not None and not isinstance(spec.policy, str):
        raise UserError(f"tier {shown_repr(name)}: policy must be a policy name (str) or None, got {shown_repr(spec.policy)}")
    if spec.link is not None and links and name in links:
        raise UserError(f"tier {shown_repr(name)}: a link is given twice (TierSpec.link {shown_repr(spec.link)} and links[{shown_repr(name)}] "
                        f"{shown_repr(links[name])}); give one")
