"""Tiered prefix-block cache: tiers (mechanism), hierarchy (lookup, restore, demote), policies.

The names below are imported on first use (:func:`pcs._lazy.lazy_package`): ``pcs.cache.groups`` or the policy names of
:mod:`pcs.choices` do not load numpy through the hierarchy.
"""
from __future__ import annotations

from pcs._lazy import lazy_package

__all__ = ["Tier", "TierStats", "Hierarchy", "Admission", "WRITE_POLICIES", "EvictionPolicy", "get_policy",
           "make_policy", "POLICY_NAMES", "DEFAULT_POLICY"]

lazy_package(__name__, {
    "Hierarchy": "hierarchy", "Admission": "hierarchy", "WRITE_POLICIES": "hierarchy",
    "EvictionPolicy": "policies", "get_policy": "policies", "make_policy": "policies", "POLICY_NAMES": "policies",
    "DEFAULT_POLICY": "policies", "Tier": "tier", "TierStats": "tier"})
