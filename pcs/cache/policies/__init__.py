"""Eviction-policy registry: ``get_policy(name)``, ``make_policy(...)`` and ``POLICY_NAMES``.

A new policy is one new file with an :class:`EvictionPolicy` subclass and one
line in ``_POLICIES`` below (vLLM ``kv_offload/cpu/policies/factory.py`` does
the same; no if/elif chain anywhere else). The CLI's ``--policy`` choices,
the ``--tier-policy`` check and the contract test
(``tests/cache/test_policies_contract.py``) all read this registry.

Names: ``lru``, ``slru`` (segmented LRU, libCacheSim's name), ``fifo``;
``protected`` is an alias of ``slru`` (:data:`POLICY_ALIASES`), accepted by
every lookup. A policy object's ``.name`` is always the registered name.
"""
from __future__ import annotations

import inspect
from typing import Any, Sequence

from pcs.cache.policies.base import EvictionPolicy
from pcs.cache.policies.fifo import FIFOPolicy
from pcs.cache.policies.lru import LRUPolicy
from pcs.cache.policies.slru import DEFAULT_PROTECTED_SHARE, ProtectedPolicy, SLRUPolicy
from pcs.errors import UnknownNameError

__all__ = ["EvictionPolicy", "get_policy", "make_policy", "make_policies", "policy_options", "POLICY_NAMES",
           "POLICY_ALIASES", "POLICY_CHOICES", "DEFAULT_POLICY", "LRUPolicy", "SLRUPolicy", "ProtectedPolicy",
           "FIFOPolicy", "DEFAULT_PROTECTED_SHARE"]

_POLICIES: dict[str, type[EvictionPolicy]] = {cls.name: cls for cls in (LRUPolicy, SLRUPolicy, FIFOPolicy)}

#: Registered policy names, in registration order.
POLICY_NAMES: tuple[str, ...] = tuple(_POLICIES)
#: Other names accepted for a registered policy: alias -> registered name.
POLICY_ALIASES: dict[str, str] = {"protected": "slru"}
#: Every name a lookup accepts (registered names, then aliases): the CLI's ``--policy`` choices.
POLICY_CHOICES: tuple[str, ...] = POLICY_NAMES + tuple(POLICY_ALIASES)
#: The policy used when none is named (vLLM's prefix cache and offloading default to LRU).
DEFAULT_POLICY = "lru"


def get_policy(name: str) -> type[EvictionPolicy]:
    """The policy class registered as ``name`` or an alias of it (case-insensitive).

    Raises:
        UnknownNameError: (a ValueError) unknown name; the message lists the
            registered names and the aliases.

    >>> get_policy("LRU").name
    'lru'
    >>> get_policy("protected").name
    'slru'
    """
    key = str(name).strip().lower()
    cls = _POLICIES.get(POLICY_ALIASES.get(key, key))
    if cls is None:
        raise UnknownNameError("eviction policy", name, POLICY_NAMES, POLICY_ALIASES)
    return cls


def policy_options(name: str) -> tuple[str, ...]:
    """The keyword options policy ``name`` takes besides ``capacity_blocks``, e.g. ``("protected_share",)``.

    Raises:
        UnknownNameError: unknown name.

    >>> policy_options("slru"), policy_options("lru")
    (('protected_share',), ())
    """
    params = inspect.signature(get_policy(name).__init__).parameters
    return tuple(p for p in params if p not in ("self", "capacity_blocks"))


def make_policy(name: str, capacity_blocks: int, **options: Any) -> EvictionPolicy:
    """Instantiate policy ``name`` for a tier of ``capacity_blocks``.

    ``options`` go to the policy's constructor (e.g. ``protected_share`` for
    ``slru``); an option whose value is None counts as not given (the
    policy's default applies).

    Raises:
        ValueError: unknown name (:class:`pcs.errors.UnknownNameError`), an
            option the policy does not take (the message names it and the
            options the policy takes), or a bad option value.
    """
    cls = get_policy(name)
    takes = policy_options(name)
    given = {k: v for k, v in options.items() if v is not None}
    for key in given:
        if key not in takes:
            raise ValueError(f"eviction policy {cls.name!r} takes no option {key!r}; "
                             f"its options: {', '.join(takes) or 'none'}")
    return cls(capacity_blocks, **given)


def make_policies(names: Sequence[str], capacities_blocks: Sequence[int], **options: Any) -> list[EvictionPolicy]:
    """One policy per tier; each given option goes to the tiers whose policy takes it.

    Args:
        names: policy name (or alias) per tier.
        capacities_blocks: capacity per tier, blocks (same length as ``names``).
        options: shared options, e.g. ``protected_share``; None = not given.
    Raises:
        ValueError: unknown name, or an option none of ``names`` takes (the
            message names the option and the policies that take it).
    """
    for key, value in options.items():
        if value is not None and not any(key in policy_options(n) for n in names):
            owners = [p for p in POLICY_NAMES if key in policy_options(p)]
            raise ValueError(f"option {key} belongs to eviction policy {' / '.join(owners) or '(none)'}, which no "
                             f"tier uses here (policies: {', '.join(dict.fromkeys(names))})")
    return [make_policy(n, c, **{k: v for k, v in options.items() if k in policy_options(n)})
            for n, c in zip(names, capacities_blocks)]
