"""Contract every registered eviction policy must meet (run over POLICY_NAMES, and the policies on the
handle contract: ARRAY_POLICIES).

The contract is the one in pcs/cache/policies/base.py: the policy holds only
evictable keys; evict(n) returns n victims or None with no change; keys given
are in eviction order; _check() holds after every call.
"""
from __future__ import annotations

import itertools
import random

import pytest

from pcs.cache.policies import (POLICY_ALIASES, POLICY_CHOICES, POLICY_NAMES, EvictionPolicy, PolicyContext,
                                get_policy, make_policies, make_policy, policy_options)
from pcs.cache.policies.context import TraceOracle
from pcs.errors import UnknownNameError


def _array_policies() -> dict:
    """The policies on the handle contract (pcs/cache/policies/array.py), not registered, checked beside the
    registered ones: the Python LRU and the plug-in example's MRU (tests/cache/plugin)."""
    import sys
    from pathlib import Path

    from pcs.cache.policies.array_lru import ArrayLRU

    sys.path.insert(0, str(Path(__file__).parent / "plugin"))
    from pcs_demo_policy import DemoMRUArray
    return {"lru_array": ArrayLRU, "demo_mru_array": DemoMRUArray}


ARRAY_POLICIES = _array_policies()


@pytest.fixture(params=list(POLICY_NAMES) + list(ARRAY_POLICIES))
def policy(request) -> EvictionPolicy:
    if request.param in ARRAY_POLICIES:
        return ARRAY_POLICIES[request.param](10)
    # trace-reading policies (gdsf, belady) get an empty trace: no future use, no chain (every key a leaf)
    return make_policy(request.param, 10, context=PolicyContext(TraceOracle()))


def test_registry_lists_valid_names_on_unknown():
    with pytest.raises(ValueError) as err:
        get_policy("arc2")
    msg = str(err.value)
    assert "arc2" in msg
    for name in POLICY_NAMES:
        assert name in msg


def test_registry_names_match_classes():
    assert set(POLICY_NAMES) >= {"lru", "slru", "fifo"}
    for name in POLICY_NAMES:
        cls = get_policy(name.upper())
        assert cls.name == name and cls.summary


def test_aliases_name_registered_policies():
    # segmented LRU is `slru` (libCacheSim's name); `protected`, its first name here, stays an alias
    assert POLICY_ALIASES == {"protected": "slru"}
    assert set(POLICY_CHOICES) == set(POLICY_NAMES) | set(POLICY_ALIASES)
    for alias, name in POLICY_ALIASES.items():
        assert name in POLICY_NAMES and alias not in POLICY_NAMES
        assert get_policy(alias) is get_policy(name) and get_policy(alias.upper()) is get_policy(name)
        assert make_policy(alias, 10).name == name      # the object carries the registered name


def test_unknown_name_is_a_value_error_listing_names_and_aliases():
    with pytest.raises(UnknownNameError) as err:
        make_policy("no-such-policy", 10)          # a name no policy will be registered under
    assert isinstance(err.value, ValueError)
    assert err.value.choices == POLICY_NAMES and err.value.aliases == POLICY_ALIASES
    assert "'no-such-policy'" in str(err.value) and "protected = slru" in str(err.value)


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_unknown_option_is_an_error_naming_it_and_the_valid_ones(name):
    ctx = PolicyContext(TraceOracle())
    with pytest.raises(ValueError) as err:
        make_policy(name, 10, ctx, protected_sharez=0.5)
    msg = str(err.value)
    assert "'protected_sharez'" in msg and name in msg
    assert all(opt in msg for opt in policy_options(name))
    assert make_policy(name, 10, ctx, protected_sharez=None).name == name    # None = not given


def test_options_each_policy_takes():
    # SLRU's one option is the protected segment's share; LRU and FIFO take none
    assert policy_options("slru") == policy_options("protected") == ("protected_share",)
    assert policy_options("lru") == policy_options("fifo") == ()
    # protected_share is slru's: said so (review 45), not a look-alike
    with pytest.raises(ValueError, match="^eviction policy 'lru' takes no options, got 'protected_share'; "
                                         "'protected_share' is an option of slru, not of lru$"):
        make_policy("lru", 10, protected_share=0.5)
    assert make_policy("slru", 10, protected_share=0.5).protected_max_blocks == 5     # floor(0.5 x 10)


def test_make_policies_routes_an_option_to_the_tiers_that_take_it():
    gpu, cpu = make_policies(["lru", "protected"], [4, 10], protected_share=0.3)
    assert (gpu.name, cpu.name) == ("lru", "slru") and cpu.protected_max_blocks == 3   # floor(0.3 x 10)
    assert [p.capacity_blocks for p in (gpu, cpu)] == [4, 10]
    with pytest.raises(ValueError, match="belongs to eviction policy slru, which no tier uses"):
        make_policies(["lru", "fifo"], [4, 10], protected_share=0.3)
    assert [p.name for p in make_policies(["lru", "fifo"], [4, 10], protected_share=None)] == ["lru", "fifo"]


def test_empty(policy):
    assert len(policy) == 0 and policy.order() == []
    assert policy.evict(0) == []
    assert policy.evict(1) is None
    policy._check()


def test_add_then_evict_everything(policy):
    policy.add([1, 2, 3])
    policy._check()
    assert len(policy) == 3 and all(k in policy for k in (1, 2, 3)) and 4 not in policy
    victims = policy.evict(3)
    # one call's keys are in eviction order, and nothing was reused: first given goes first
    assert victims == [1, 2, 3]
    assert len(policy) == 0
    policy._check()


def test_evict_is_all_or_nothing(policy):
    policy.add([5, 6])
    before = policy.order()
    assert policy.evict(3) is None
    assert policy.order() == before and len(policy) == 2
    policy._check()


def test_removed_keys_are_never_victims(policy):
    policy.add([1, 2, 3, 4])
    policy.remove([2, 3])          # pinned now
    assert 2 not in policy and 3 not in policy and len(policy) == 2
    assert sorted(policy.evict(2)) == [1, 4]
    assert policy.evict(1) is None
    policy._check()


def test_touch_keeps_membership(policy):
    policy.add([1, 2, 3])
    policy.touch([1])
    assert sorted(policy.order()) == [1, 2, 3]
    policy._check()


def test_random_operations_against_a_set(policy):
    """Membership of the policy always equals a plain set driven by the same calls."""
    rng = random.Random(7)
    held: set[int] = set()
    pinned: set[int] = set()
    fresh = itertools.count()
    for _ in range(2000):
        op = rng.random()
        if op < 0.35:
            keys = [next(fresh) for _ in range(rng.randint(1, 3))]
            policy.add(keys, reused=rng.random() < 0.3)
            held.update(keys)
        elif op < 0.55 and held:
            keys = rng.sample(sorted(held), min(len(held), rng.randint(1, 2)))
            policy.remove(keys)
            held.difference_update(keys)
            pinned.update(keys)
        elif op < 0.7 and pinned:
            keys = rng.sample(sorted(pinned), min(len(pinned), rng.randint(1, 2)))
            policy.add(keys, reused=True)
            pinned.difference_update(keys)
            held.update(keys)
        elif op < 0.8 and held:
            policy.touch(rng.sample(sorted(held), 1))
        else:
            n = rng.randint(0, 4)
            v = policy.evict(n)
            if n > len(held):
                assert v is None
            else:
                assert len(v) == n and len(set(v)) == n and set(v) <= held
                held.difference_update(v)
        assert set(policy.order()) == held and len(policy) == len(held)
        policy._check()


def test_a_misspelt_spec_option_names_the_spec_options_on_the_command_line():
    # slru's one option is protected_share (docs/policies.md); a command-line user typed it inside the spec, so the
    # error must show it as a spec takes it (protected_share=), not as the --protected-share flag, and exit 2
    from click.testing import CliRunner

    from pcs.cli.main import cli

    res = CliRunner().invoke(cli, ["replay", "--policy", "slru:protectedshare=0.5"])
    assert res.exit_code == 2
    # protectedshare / protected_share: 14 of 14 + 15 -> 0.97, the one suggestion (pcs.choices.did_you_mean)
    assert ("takes no option 'protectedshare'; did you mean 'protected_share'? its options: protected_share="
            in res.output)
    assert "--protected-share" not in res.output
