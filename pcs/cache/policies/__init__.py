"""Eviction-policy registry: ``get_policy(name)`` and ``POLICY_NAMES``.

A new policy is one new file with an :class:`EvictionPolicy` subclass and one
line in ``_POLICIES`` below (vLLM ``kv_offload/cpu/policies/factory.py`` does
the same; no if/elif chain anywhere else).
"""
from __future__ import annotations

from pcs.cache.policies.base import EvictionPolicy
from pcs.cache.policies.fifo import FIFOPolicy
from pcs.cache.policies.lru import LRUPolicy
from pcs.cache.policies.protected import DEFAULT_PROTECTED_SHARE, ProtectedPolicy

__all__ = ["EvictionPolicy", "get_policy", "make_policy", "POLICY_NAMES", "DEFAULT_POLICY",
           "LRUPolicy", "ProtectedPolicy", "FIFOPolicy", "DEFAULT_PROTECTED_SHARE"]

_POLICIES: dict[str, type[EvictionPolicy]] = {cls.name: cls for cls in (LRUPolicy, ProtectedPolicy, FIFOPolicy)}

#: Registered policy names, in registration order.
POLICY_NAMES: tuple[str, ...] = tuple(_POLICIES)
#: The policy used when none is named (vLLM's prefix cache and offloading default to LRU).
DEFAULT_POLICY = "lru"


def get_policy(name: str) -> type[EvictionPolicy]:
    """The policy class registered as ``name`` (case-insensitive).

    Raises:
        ValueError: unknown name; the message lists the registered ones.

    >>> get_policy("LRU").name
    'lru'
    """
    cls = _POLICIES.get(str(name).strip().lower())
    if cls is None:
        raise ValueError(f"unknown eviction policy {name!r}; valid policies: {', '.join(POLICY_NAMES)}")
    return cls


def make_policy(name: str, capacity_blocks: int, **options) -> EvictionPolicy:
    """Instantiate policy ``name`` for a tier of ``capacity_blocks``.

    ``options`` go to the policy's constructor (e.g. ``protected_share`` for
    ``protected``); options a policy does not take are ignored.

    Raises:
        ValueError: unknown name or a bad option value.
    """
    cls = get_policy(name)
    import inspect

    accepted = inspect.signature(cls.__init__).parameters
    return cls(capacity_blocks, **{k: v for k, v in options.items() if k in accepted and v is not None})
