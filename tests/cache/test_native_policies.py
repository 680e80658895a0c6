"""The compiled eviction policies (pcs/cache/_pol_*.c inside pcs.cache._lruhier) against the Python ones.

The Python hierarchy over Tier + the policies of pcs/cache/policies/ is the
reference (docs/semantics.md §8); the native hierarchy with the same policy
per tier must give the same admissions, per-request columns, ledger and end
state, including each tier's ``policy.order()`` -- on hypothesis traces (1-3
tiers, mixed policies per tier, non-default option values, both write
policies, both timings, capacities down to 0), on a seeded stress stream with
``_check`` (the C structures' invariants) after every step, on direct calls
with requests left running, and through ``pcs.replay`` on the committed
sample and the Mooncake trace (summary and per-request table). The per-policy
properties run over every compiled policy, the trace-reading ``gdsf`` and
``belady`` included (their data and mixed tiers: test_native_oracle_policies.py).
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcs.blocks import BlockRules
from pcs.cache import make_policy
from helpers import (BS, SETTINGS, STRESS_CASES, assert_trace_replays_equal, drive_direct_calls, req, replay_twins,
                     stress_trace, tier_configs, trace_context, traces, twin_hierarchy, twin_tiers, twin_trace_case)

native = pytest.importorskip("pcs.cache.native")
if native._lruhier is None:
    pytest.skip("pcs.cache._lruhier is not compiled", allow_module_level=True)

#: Every compiled policy, with default options and with non-default ones (each option moved off its default).
SPECS = ["lru", "fifo", "slru", "slru:protected_share=0.5", "slru:protected_share=0", "sieve", "2q",
         "2q:in_share=0.5,out_share=1.0", "2q:out_share=0", "s3fifo", "s3fifo:small_share=0.3,ghost_share=0.5",
         "s3fifo:move_to_main_threshold=1", "s3fifo:ghost_share=0", "arc", "lfu", "lfu:aging=none"]
#: Every compiled policy but lru (inline in the C hierarchy, every test runs it), the trace-reading ones last.
NAMES = ["fifo", "slru", "sieve", "2q", "s3fifo", "arc", "lfu", "gdsf", "belady"]
#: Per-policy runs: fewer examples each (nine policies; the mixed tests cover every spec at full count).
PER_POLICY = settings(SETTINGS, max_examples=50)


def _same(reqs, caps, specs, timing, rules, wp, ctx=None):
    return replay_twins(reqs, caps, specs, timing, rules, wp, ctx=ctx)[0]


def test_every_compiled_policy_is_registered_and_available():
    from pcs.cache.policies import POLICY_NAMES, get_policy, is_builtin
    # every built-in policy has a C twin (gdsf, belady: test_native_oracle_policies.py); installed plug-ins
    # (registered by entry point, as docs/policies.md invites) are hosted, not compiled, and do not count
    builtin = {n for n in POLICY_NAMES if is_builtin(get_policy(n))}
    assert set(native.COMPILED_POLICIES) == builtin
    for spec in SPECS:
        assert native.available(twin_tiers([8, 16], [spec, spec])), spec


def test_options_reach_the_c_twin():
    """The C twin gets the sizes the Python policy truncated: slru 0.5 x 10 = 5 protected blocks, s3fifo
    int(20 x 0.3) = 6 small, 20 - 6 = 14 main, int(20 x 0.5) = 10 ghost keys, threshold 3."""
    assert native.policy_spec(make_policy("slru:protected_share=0.5", 10)) == ("slru", (5,))
    assert native.policy_spec(make_policy("s3fifo:small_share=0.3,ghost_share=0.5,move_to_main_threshold=3", 20)) \
        == ("s3fifo", (6, 14, 10, 3))
    assert native.policy_spec(make_policy("2q:in_share=0.5,out_share=1.0", 10)) == ("2q", (5, 10))
    assert native.policy_spec(make_policy("lfu:aging=none", 4)) == ("lfu", (0,))
    assert native.policy_spec(make_policy("gdsf", 4)) == ("gdsf", (), None)   # no trace: every block a 1-s leaf


config = tier_configs(SPECS)


@SETTINGS
@given(traces(), config)
def test_native_policies_equal_python_on_random_traces(reqs, cfg):
    tiers, timing, rules, wp = cfg
    _same(reqs, [c for c, _ in tiers], [s for _, s in tiers], timing, rules, wp)


@pytest.mark.parametrize("name", NAMES)
@PER_POLICY
@given(reqs=traces(), caps=st.lists(st.integers(0, 10), min_size=1, max_size=3),
       timing=st.sampled_from(["sequential", "modeled"]), wp=st.sampled_from(["back", "through"]))
def test_each_policy_on_every_tier(name, reqs, caps, timing, wp):
    _same(reqs, caps, [name] * len(caps), timing, BlockRules(), wp, trace_context(reqs, BlockRules()))


@pytest.mark.parametrize("name", NAMES)
@PER_POLICY
@given(st.lists(st.lists(st.integers(0, 6), max_size=6), min_size=1, max_size=12), st.integers(0, 5),
       st.integers(0, 5), st.booleans(), st.sampled_from(["back", "through"]))
def test_admissions_equal_with_waits_and_running_requests(name, chains, c0, c1, wait, wp):
    """Direct start/prefill_done/finish/abort/grow calls, ids repeated within a request, wait_if_full, requests
    left running (pinned blocks the policies must pass over; for the trace readers a start that waits admits
    nothing: the clock does not move): every Admission field and the end state agree."""
    reqs = [req(keys, prompt=4 * len(keys) + 1) for keys in chains]
    ctx = trace_context(reqs, BlockRules(True, False))
    hs = [twin_hierarchy(twin_tiers([c0, c1], [name, name], ctx=ctx), wp, n) for n in (False, True)]
    drive_direct_calls(hs, chains, wait)


@pytest.mark.parametrize("name", NAMES)
def test_seeded_stress_check_after_every_step(name):
    """600 requests, _check (C invariants of the tier and the policy's lists) after every step, results
    equal (STRESS_CASES: the 6-block GPU tier truncates long requests, the 9-block CPU tier overflows)."""
    reqs = stress_trace(7, 600, BS)
    ctx = trace_context(reqs, BlockRules())
    for caps, timing, wp in STRESS_CASES:
        assert _same(reqs, caps, [name] * len(caps), timing, BlockRules(), wp, ctx).ledger.num_requests == 600


def test_mixed_policies_and_large_tiers():
    """Tiers far larger than the initial tables, a different policy per tier (heap and ghost growth). The twins'
    invariants checked at the end, not after every step (the seeded stress grid does that on small tiers; here it
    took ~99 % of the test's CPU: 146 CPU-s, against 1.6 with the end check)."""
    reqs = stress_trace(11, 3000, BS)
    ctx = trace_context(reqs, BlockRules())
    for specs in (["fifo", "s3fifo"], ["arc", "2q", "lfu"], ["sieve", "slru:protected_share=0.3"],
                  ["gdsf", "lfu"], ["belady", "lfu"]):
        replay_twins(reqs, [500, 3000, 4000][:len(specs)], specs, "modeled", BlockRules(), "back", ctx=ctx, check=False)


TRACE_POLICIES = {"fifo": ["fifo"], "slru": ["slru:protected_share=0.5"], "sieve": ["sieve"], "2q": ["2q"],
                  "s3fifo": ["s3fifo:small_share=0.2"], "arc": ["arc"], "lfu": ["lfu"],
                  "mixed": ["slru", "s3fifo", "arc"], "gdsf": ["gdsf"], "belady": ["belady"],
                  "mixed-oracle": ["gdsf", "belady", "lfu"]}


@pytest.mark.parametrize("case", range(3))
@pytest.mark.parametrize("pol", list(TRACE_POLICIES))
def test_trace_summary_and_table_identical(exact_trace, case, pol):
    """Every case on the committed sample; on the Mooncake trace the two-tier modeled case per policy and every
    case of the mixed tiers."""
    timing, wp, tiers = twin_trace_case(exact_trace, case, pol.startswith("mixed"))
    specs = (TRACE_POLICIES[pol] * 3)[:len(tiers)]
    tier_policies = {t.split("=")[0]: s for t, s in zip(tiers, specs)}
    assert_trace_replays_equal(exact_trace, model="llama-3.1-70b", tiers=tiers, tier_policies=tier_policies,
                               timing=timing, write_policy=wp)
