"""Tiered prefix-block cache: tiers (mechanism), hierarchy (lookup, restore, demote), policies."""
from __future__ import annotations

from pcs.cache.hierarchy import WRITE_POLICIES, Admission, Hierarchy
from pcs.cache.policies import DEFAULT_POLICY, POLICY_NAMES, EvictionPolicy, get_policy, make_policy
from pcs.cache.tier import Tier, TierStats

__all__ = ["Tier", "TierStats", "Hierarchy", "Admission", "WRITE_POLICIES", "EvictionPolicy", "get_policy",
           "make_policy", "POLICY_NAMES", "DEFAULT_POLICY"]
