"""Python eviction policies hosted by the compiled hierarchy (pcs/cache/_pol_py.c) against the Python reference.

A policy without a C twin -- a plug-in (the example ``demo_mru`` of tests/cache/plugin/), a subclass -- runs in
``pcs.cache._lruhier``: the mechanism and the step loop in C, the policy's batched methods called from C with the
batches ``pcs/cache/tier.py`` makes (docs/semantics.md §15). Checked here:

- the same Python policy on the Python hierarchy and hosted: admissions, per-request columns, ledger and end
  state (each tier's ``policy.order()``) equal, on a hand trace (hits worked out below), hypothesis traces (1-3
  tiers, every built-in policy's Python class and the plug-in, mixed per tier, both timings and write policies,
  every block rule), a seeded stress stream with ``_check`` after every step, and ``pcs.replay`` of the
  committed sample and the Mooncake trace (summary and per-request table);
- the built-in policies' Python classes hosted against their C twins (``pcs/cache/_pol_NAME.c``): two
  independent implementations of each rule meeting through the adapter;
- errors: a policy that raises, or answers against the contract, surfaces as ``pcs.errors.PolicyError``
  naming the policy and the method (one line at the CLI), also when the failing call is only handed over at
  the end of the run (``sync``).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcs.blocks import BlockRules
from pcs.cache import Tier
from pcs.errors import PolicyError
from helpers import (BS, SETTINGS, STRESS_CASES, UNIT_RULES, assert_one_line_error,
                     assert_trace_replays_equal, assert_twin_runs_equal, engine_run, invoke, req, stress_trace,
                     tier_configs, trace_context, traces, twin_hierarchy, twin_tiers)

native = pytest.importorskip("pcs.cache.native")
if native._lruhier is None:
    pytest.skip("pcs.cache._lruhier is not compiled", allow_module_level=True)

sys.path.insert(0, str(Path(__file__).parent / "plugin"))
from pcs_demo_policy import DemoMRU  # noqa: E402

#: Every built-in policy (each with a C twin), run here as its Python class, hosted.
NAMES = ["lru", "fifo", "slru", "sieve", "2q", "s3fifo", "arc", "lfu", "gdsf", "belady"]
_HOSTED: dict[type, type] = {}


def hosted(policy):
    """``policy`` (empty) as an instance of a subclass of its class: no C twin answers to it, so the compiled
    hierarchy hosts it (``native.policy_spec`` gives ``"py"``); its rules are its class's."""
    cls = type(policy)
    policy.__class__ = _HOSTED.setdefault(cls, type(f"Hosted{cls.__name__}", (cls,), {}))
    return policy


def python_tiers(caps, specs, ctx=None):
    """:func:`helpers.twin_tiers` with every policy a Python object the compiled hierarchy hosts: spec
    ``demo_mru`` is the plug-in, any other a built-in policy's Python class (:func:`hosted`)."""
    tiers = twin_tiers(caps, ["lru" if s == "demo_mru" else s for s in specs], ctx=ctx)
    for t, s in zip(tiers, specs):
        t.policy = DemoMRU(t.capacity_blocks) if s == "demo_mru" else hosted(t.policy)
    return tiers


def run_pair(reqs, tier_sets, timing, rules, wp, check=True):
    """Run ``reqs`` over two hierarchies (``tier_sets``: (reference tiers, use_native), (other tiers,
    use_native)) and assert them equal: returns the first's EngineResult."""
    runs = []
    for tiers, use_native in tier_sets:
        h = twin_hierarchy(tiers, wp, use_native)
        runs += [engine_run(h, reqs, timing, rules, check), h]
    assert_twin_runs_equal(*runs)
    return runs[0]


def hosted_equals_python(reqs, caps, specs, timing, rules, wp, ctx=None, check=True):
    """The same Python policies on the Python hierarchy and hosted by the compiled one: equal."""
    assert all(native.policy_spec(t.policy)[0] == "py" for t in python_tiers(caps, specs, ctx))
    return run_pair(reqs, [(python_tiers(caps, specs, ctx), False), (python_tiers(caps, specs, ctx), True)],
                    timing, rules, wp, check)


def test_hand_trace_mru_hits_once():
    """One 2-block tier, one-block requests 1, 2, 3, 1, 2 (sequential): MRU evicts the block released last.
    3 evicts 2 (released after 1), so 1 hits; its release makes it the most recent, so 2 then evicts 1.
    Hit blocks per request: 0, 0, 0, 1, 0; end state {3, 2}, 2 first to go (released last).
    LRU would hit nothing (3 evicts 1, 1 evicts 2)."""
    reqs = [req([k], t=i) for i, k in enumerate([1, 2, 3, 1, 2])]
    for use_native in (False, True):
        h = twin_hierarchy([Tier("gpu", 2, DemoMRU(2))], "back", use_native)
        res = engine_run(h, reqs, "sequential", UNIT_RULES)
        assert list(res.columns["hit_blocks"]) == [0, 0, 0, 1, 0]
        assert sorted(h.tiers[0].resident) == [2, 3] and h.tiers[0].policy.order() == [2, 3]


@SETTINGS
@given(traces(), tier_configs(NAMES + ["demo_mru"]))
def test_hosted_equals_python_on_random_traces(reqs, cfg):
    tiers, timing, rules, wp = cfg
    hosted_equals_python(reqs, [c for c, _ in tiers], [s for _, s in tiers], timing, rules, wp,
                         trace_context(reqs, rules))


@pytest.mark.parametrize("name", NAMES + ["demo_mru"])
def test_seeded_stress_check_after_every_step(name):
    """600 requests, ``_check`` (the C tier, and the hosted policy's own ``_check``, ``len`` and ``order``
    against the held blocks) after every step; STRESS_CASES truncate and overflow. A built-in policy's hosted
    class meets its C twin here; the Python hierarchy with that class equals the C twin on this same stream,
    context and grid in tests/cache/test_native_policies.py (test_replay_native.py for lru), so hosted equals
    Python without replaying the slow reference a second time. The plug-in (no C twin) meets the Python hierarchy."""
    reqs = stress_trace(7, 600, BS)
    ctx = trace_context(reqs, BlockRules())
    for caps, timing, wp in STRESS_CASES:
        specs = [name] * len(caps)
        if name == "demo_mru":
            res = hosted_equals_python(reqs, caps, specs, timing, BlockRules(), wp, ctx)
        else:
            twin = twin_tiers(caps, specs, ctx=ctx)
            assert all(native.policy_spec(t.policy)[0] == name for t in twin)
            res = run_pair(reqs, [(twin, True), (python_tiers(caps, specs, ctx), True)], timing, BlockRules(), wp)
        assert res.ledger.num_requests == 600


@pytest.mark.parametrize("name", NAMES)
@settings(SETTINGS, max_examples=40)
@given(reqs=traces(), caps=st.lists(st.integers(0, 10), min_size=1, max_size=3),
       timing=st.sampled_from(["sequential", "modeled"]), wp=st.sampled_from(["back", "through"]))
def test_hosted_python_class_equals_its_c_twin(name, reqs, caps, timing, wp):
    """The Python class hosted against the policy's C twin (pcs/cache/_pol_NAME.c; inline for lru), both in the
    compiled hierarchy: two implementations of the rule, only the adapter's batching between them."""
    ctx = trace_context(reqs, BlockRules())
    twin = twin_tiers(caps, [name] * len(caps), ctx=ctx)
    assert all(native.policy_spec(t.policy)[0] == name for t in twin)
    run_pair(reqs, [(twin, True), (python_tiers(caps, [name] * len(caps), ctx), True)], timing, BlockRules(), wp)


def test_hosted_classes_equal_c_twins_on_a_long_stream():
    """3,000 requests over tiers far larger than the first tables, mixed policies per tier: the C twins and the
    hosted Python classes (queues of more than one batch between decisions, the adapter's key objects reused)."""
    reqs = stress_trace(11, 3000, BS)
    ctx = trace_context(reqs, BlockRules())
    for specs in (["fifo", "s3fifo"], ["arc", "2q", "lfu"], ["sieve", "slru"], ["gdsf", "belady"], ["lru", "lru"]):
        caps = [500, 3000, 4000][:len(specs)]
        run_pair(reqs, [(twin_tiers(caps, specs, ctx=ctx), True), (python_tiers(caps, specs, ctx), True)],
                 "modeled", BlockRules(), "back", check=False)


@pytest.fixture
def demo_mru(monkeypatch):
    """``demo_mru`` registered as the entry point would (tests/cache/test_policies_plugin.py installs it)."""
    from pcs.cache import policies as reg

    monkeypatch.setitem(reg._POLICIES, "demo_mru", DemoMRU)
    return "demo_mru"


@pytest.mark.parametrize("timing,tiers", [("modeled", ["gpu=400GB", "cpu=2TB"]),
                                          ("sequential", ["gpu=100GB", "cpu=1TB"])])
def test_plugin_replay_equals_reference(exact_trace, demo_mru, timing, tiers):
    """``pcs.replay`` with the plug-in: ``auto`` hosts it (compiled-step / compiled-hierarchy), equal to the
    reference's summary and per-request table (on the sample at a tenth of the tier sizes, which evict)."""
    if exact_trace.name == "sample_exact.jsonl":
        tiers = [t.replace("400GB", "40GB").replace("2TB", "200GB").replace("100GB", "10GB").replace("1TB", "100GB")
                 for t in tiers]
    assert_trace_replays_equal(exact_trace, model="llama-3.1-70b", tiers=tiers, policy=demo_mru, timing=timing)


class Broken(DemoMRU):
    """The plug-in, failing on cue: ``fail`` = the method that raises (after ``after`` calls of it), or
    ``"answer"``: evict returns a block it does not hold."""

    name = "broken_mru"
    fail, after = "evict", 0

    def _maybe(self, method):
        if method == self.fail:
            if self.after <= 0:
                raise RuntimeError(f"boom in {method}")
            type(self).after -= 1

    def add(self, keys, reused=False):
        self._maybe("add")
        super().add(keys, reused)

    def evict(self, n):
        self._maybe("evict")
        got = super().evict(n)
        return [k + 10**9 for k in got] if self.fail == "answer" and got else got


@pytest.fixture
def broken(monkeypatch):
    from pcs.cache import policies as reg

    monkeypatch.setitem(reg._POLICIES, "broken_mru", Broken)
    return Broken


@pytest.mark.parametrize("fail,needle", [("evict", "raised RuntimeError in evict(): boom in evict"),
                                         ("answer", "broke the contract"),
                                         ("add", "raised RuntimeError in add(): boom in add")])
def test_a_failing_plugin_is_one_line_naming_it(broken, monkeypatch, fail, needle):
    """At the CLI: exit 2, one line naming the policy and what failed, no traceback (compiled, hosted)."""
    from helpers import ROOT

    monkeypatch.setattr(broken, "fail", fail)
    monkeypatch.setattr(broken, "after", 0)
    out = invoke("replay", ROOT / "traces" / "sample_chat.jsonl", "--policy", "broken_mru", "--tier",
                 "gpu=200blocks", "--tier", "cpu=400blocks", "-q")
    assert_one_line_error(out, "eviction policy 'broken_mru'", needle)


def test_an_error_queued_to_the_end_still_surfaces(broken, monkeypatch):
    """A tier that never evicts hands its queued calls over only at the end of the run (``sync``): an add that
    raises there is still an error naming the policy; its cause is the policy's own exception."""
    monkeypatch.setattr(broken, "fail", "add")
    monkeypatch.setattr(broken, "after", 3)
    reqs = [req([3 * i, 3 * i + 1], t=i) for i in range(8)]
    h = twin_hierarchy([Tier("gpu", 100, Broken(100))], "back", True)
    with pytest.raises(PolicyError, match="'broken_mru' raised RuntimeError in add") as err:
        engine_run(h, reqs, "sequential", UNIT_RULES, check=False)
        h.sync()
    assert isinstance(err.value.__cause__, RuntimeError)
