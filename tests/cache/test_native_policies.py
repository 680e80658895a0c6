"""The compiled eviction policies (pcs/cache/_pol_*.c inside pcs.cache._lruhier) against the Python ones.

The Python hierarchy over Tier + the policies of pcs/cache/policies/ is the
reference (docs/semantics.md §8); the native hierarchy with the same policy
per tier must give the same admissions, per-request columns, ledger and end
state, including each tier's ``policy.order()`` -- on hypothesis traces (1-3
tiers, mixed policies per tier, non-default option values, both write
policies, both timings, capacities down to 0), on a seeded stress stream with
``_check`` (the C structures' invariants) after every step, on direct calls
with requests left running, and through ``pcs.replay`` on the committed
sample and the Mooncake trace (summary and per-request table).
"""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcs.blocks import BlockRules
from pcs.cache import Hierarchy, Tier, make_policy
from pcs.engine.chunks import iter_chunks
from pcs.engine.engine import ReplayEngine, TimeModel
from pcs.engine.select import SUMMARY_KEYS
from helpers import (ALL_RULES, BS, SETTINGS, LinearCompute, per_trace, stress_trace, traces, drive_direct_calls,
                     assert_twin_runs_equal)

native = pytest.importorskip("pcs.cache.native")
if native._lruhier is None:
    pytest.skip("pcs.cache._lruhier is not compiled", allow_module_level=True)

#: Every compiled policy, with default options and with non-default ones (each option moved off its default).
SPECS = ["lru", "fifo", "slru", "slru:protected_share=0.5", "slru:protected_share=0", "sieve", "2q",
         "2q:in_share=0.5,out_share=1.0", "2q:out_share=0", "s3fifo", "s3fifo:small_share=0.3,ghost_share=0.5",
         "s3fifo:move_to_main_threshold=1", "s3fifo:ghost_share=0", "arc", "lfu", "lfu:aging=none"]
NAMES = ["fifo", "slru", "sieve", "2q", "s3fifo", "arc", "lfu"]
#: Per-policy runs: fewer examples each (seven policies; the mixed test covers every spec at full count).
PER_POLICY = settings(SETTINGS, max_examples=50)


def _tiers(caps, specs):
    return [Tier(f"t{i}", c, make_policy(s, c)) for i, (c, s) in enumerate(zip(caps, specs))]


def _run(reqs, caps, specs, timing, rules, wp, use_native, check=True):
    tiers = _tiers(caps, specs)
    h = native.NativeHierarchy(tiers, wp) if use_native else Hierarchy(tiers, wp)
    eng = ReplayEngine(h, timing, block_bytes=[7] * len(caps), check=check)
    for ch in iter_chunks(reqs, rules, TimeModel(LinearCompute())):
        eng.feed(ch)
    return eng.close(), h


def _same(reqs, caps, specs, timing, rules, wp):
    a, ha = _run(reqs, caps, specs, timing, rules, wp, False)
    b, hb = _run(reqs, caps, specs, timing, rules, wp, True)
    assert_twin_runs_equal(a, ha, b, hb)
    return a


def test_every_compiled_policy_is_registered_and_available():
    from pcs.cache.policies import POLICY_NAMES
    assert set(native.COMPILED_POLICIES) == set(POLICY_NAMES)      # gdsf, belady: test_native_oracle_policies.py
    for spec in SPECS:
        assert native.available(_tiers([8, 16], [spec, spec])), spec


def test_options_reach_the_c_twin():
    """The C twin gets the sizes the Python policy truncated: slru 0.5 x 10 = 5 protected blocks, s3fifo
    int(20 x 0.3) = 6 small, 20 - 6 = 14 main, int(20 x 0.5) = 10 ghost keys, threshold 3."""
    assert native.policy_spec(make_policy("slru:protected_share=0.5", 10)) == ("slru", (5,))
    assert native.policy_spec(make_policy("s3fifo:small_share=0.3,ghost_share=0.5,move_to_main_threshold=3", 20)) \
        == ("s3fifo", (6, 14, 10, 3))
    assert native.policy_spec(make_policy("2q:in_share=0.5,out_share=1.0", 10)) == ("2q", (5, 10))
    assert native.policy_spec(make_policy("lfu:aging=none", 4)) == ("lfu", (0,))
    assert native.policy_spec(make_policy("gdsf", 4)) == ("gdsf", (), None)   # no trace: every block a 1-s leaf


config = st.tuples(st.lists(st.tuples(st.integers(0, 12), st.sampled_from(SPECS)), min_size=1, max_size=3),
                   st.sampled_from(["sequential", "modeled"]), st.sampled_from(ALL_RULES),
                   st.sampled_from(["back", "through"]))


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
    _same(reqs, caps, [name] * len(caps), timing, BlockRules(), wp)


@pytest.mark.parametrize("name", NAMES)
@PER_POLICY
@given(st.lists(st.lists(st.integers(0, 6), max_size=6), min_size=1, max_size=12), st.integers(0, 5),
       st.integers(0, 5), st.booleans(), st.sampled_from(["back", "through"]))
def test_admissions_equal_with_waits_and_running_requests(name, chains, c0, c1, wait, wp):
    """Direct start/prefill_done/finish/abort/grow calls, ids repeated within a request, wait_if_full, requests
    left running (pinned blocks the policies must pass over): every Admission field and the end state agree."""
    hs = [Hierarchy(_tiers([c0, c1], [name, name]), wp), native.NativeHierarchy(_tiers([c0, c1], [name, name]), wp)]
    drive_direct_calls(hs, chains, wait)


@pytest.mark.parametrize("name", NAMES)
def test_seeded_stress_check_after_every_step(name):
    """600 requests, _check (C invariants of the tier and the policy's lists) after every step, results
    equal; the 6-block GPU tier truncates long requests, the 9-block CPU tier overflows."""
    reqs = stress_trace(7, 600, BS)
    for caps in ([40, 60, 80], [6, 20, 30], [6, 9]):
        for timing in ("sequential", "modeled"):
            for wp in ("back", "through"):
                L = _same(reqs, caps, [name] * len(caps), timing, BlockRules(), wp).ledger
                assert L.num_requests == 600


def test_mixed_policies_and_large_tiers():
    """Tiers far larger than the initial tables, a different policy per tier (heap and ghost growth)."""
    reqs = stress_trace(11, 3000, BS)
    for specs in (["fifo", "s3fifo"], ["arc", "2q", "lfu"], ["sieve", "slru:protected_share=0.3"]):
        _same(reqs, [500, 3000, 4000][:len(specs)], specs, "modeled", BlockRules(), "back")


REAL = {"mooncake": [("modeled", "back", ["gpu=400GB", "cpu=2TB"]),
                     ("sequential", "through", ["gpu=100GB", "cpu=1TB"]),
                     ("modeled", "back", ["gpu=20GB", "cpu=200GB", "ssd=1TB"])],
        "sample": [("modeled", "back", ["gpu=100GB", "cpu=500GB"]),
                   ("sequential", "through", ["gpu=25GB", "cpu=250GB"]),
                   ("modeled", "back", ["gpu=20GB", "cpu=50GB", "ssd=250GB"])]}
TRACE_POLICIES = {"fifo": ["fifo"], "slru": ["slru:protected_share=0.5"], "sieve": ["sieve"], "2q": ["2q"],
                  "s3fifo": ["s3fifo:small_share=0.2"], "arc": ["arc"], "lfu": ["lfu"],
                  "mixed": ["slru", "s3fifo", "arc"]}


@pytest.mark.parametrize("case", range(3))
@pytest.mark.parametrize("pol", list(TRACE_POLICIES))
def test_trace_summary_and_table_identical(exact_trace, case, pol):
    """Every case on the committed sample; on the Mooncake trace (30-60 s per pair of replays) the two-tier
    modeled case per policy and every case of the mixed tiers."""
    from pcs.engine.api import replay
    if exact_trace.name != "sample_exact.jsonl" and case and pol != "mixed":
        pytest.skip("on the Mooncake trace: case 0 per policy, every case for mixed policies")
    timing, wp, tiers = per_trace(exact_trace, **REAL)[case]
    specs = (TRACE_POLICIES[pol] * 3)[:len(tiers)]
    tier_policies = {t.split("=")[0]: s for t, s in zip(tiers, specs)}
    kw = dict(model="llama-3.1-70b", tiers=tiers, tier_policies=tier_policies, timing=timing, write_policy=wp)
    a = replay(exact_trace, engine="reference", **kw)
    b = replay(exact_trace, engine="auto", **kw)
    # modeled timing runs the default step scheduler: its C loop (compiled-step) over the compiled hierarchy
    assert (a.summary.engine, b.summary.engine) == ("reference", "compiled-step" if timing == "modeled"
                                                     else "compiled-hierarchy")
    assert a.requests.column_names == b.requests.column_names
    for name in a.requests.column_names:       # as bytes: the NaN finish_s of sequential runs compare equal
        assert a.requests[name].to_numpy().tobytes() == b.requests[name].to_numpy().tobytes(), name
    unnamed = {k: None for k in SUMMARY_KEYS}           # only the keys naming the engine differ
    assert dataclasses.replace(a.summary, **unnamed) == dataclasses.replace(b.summary, **unnamed)
