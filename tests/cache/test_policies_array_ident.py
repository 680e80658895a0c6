"""The handle contract with identity (pcs/cache/policies/array.py ``identity``; pcs/cache/_pol_pyarr.c): block
numbers per handle, and the example that needs them, :class:`ArrayLFU` = ``lfu``.

Checked here:

- block numbers by hand: dense per policy, first-named order, the same across pins, touches and victims, anew
  after a drop, on both hosts (the Python key methods; the compiled host read through a recording policy);
- ArrayLFU = LFUPolicy (both agings) call by call on random operation streams in which evicted, dropped and
  pinned keys come back (the cases identity is for), whatever the cut of the runs into ``victims`` calls;
- hosted by the compiled hierarchy against the Python hierarchy and against the C twin of ``lfu``
  (pcs/cache/_pol_lfu.c): admissions, per-request columns, ledger and end state on hypothesis traces (1-3 tiers),
  a seeded stress stream with ``_check`` after every step, and ``pcs.replay`` of the committed sample and the
  Mooncake trace;
- a policy that replaces ``ident`` is one error naming it.
"""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings, strategies as st

from pcs.blocks import BlockRules
from pcs.cache import Tier
from pcs.cache.policies.array_lfu import ArrayLFU
from pcs.cache.policies.lfu import LFUPolicy
from pcs.errors import PolicyError, UserError
from helpers import BS, SETTINGS, STRESS_CASES, engine_run, req, stress_trace, tier_configs, traces, \
    twin_hierarchy, UNIT_RULES
import test_policies_array as arr_tests


class Numbers(ArrayLFU):
    """ArrayLFU recording, at each ``victims`` call, the block number of every handle named so far."""

    def __init__(self, capacity_blocks):
        super().__init__(capacity_blocks)
        self.seen = []

    def victims(self, n, runs):
        if runs:                                 # the host may over-allocate ident (zeros past the last handle)
            self.seen = list(self.idents(0, runs[-1][0] + runs[-1][1]))
        return super().victims(n, runs)


def test_block_numbers_by_hand_on_the_python_host():
    """add [10, 11] names handles 0, 1 = blocks 0, 1; remove [11] then add [11] (back from a pin): handle 2 = block
    1 again; touch [10]: handle 3 = block 0; evict(1) takes block 1 (K = 1 + 0 = 1 < block 0's 2 uses): forgotten
    by LFU, but its number stays; add [11] again: handle 4 = block 1; drop [10]: its number ends, so add [10] is
    handle 5 = block 2 (numbers 0 and 1 given before)."""
    p = Numbers(8)
    p.add([10, 11])
    p.remove([11])
    p.add([11])
    p.touch([10])
    assert p.evict(1) == [11]
    p.add([11])
    p.drop([10])
    p.add([10])
    p.order()                                    # hands the runs over: victims(0, runs)
    assert p.seen == [0, 1, 1, 0, 1, 2]


def test_block_numbers_on_the_compiled_host():
    """The same numbers from the compiled host (pcs/cache/_pol_pyarr.c pa_number): requests [0, 1], [0, 1, 2]
    through one tier of 100 blocks: request 1 names blocks 0, 1 (handles 0, 1, released tail first: keys 1, 0 ->
    block numbers 0, 1 in that order); request 2 pins 0, 1 (hits) and adds 2: released as handles 2, 3, 4 for keys
    2, 1, 0: numbers 2, 0, 1 (key 1 is block 0, key 0 block 1). Read at the end of the run (sync)."""
    p = Numbers(100)
    h = twin_hierarchy([Tier("gpu", 100, p)], "back", True)
    engine_run(h, [req([0, 1], t=0), req([0, 1, 2], t=1)], "sequential", UNIT_RULES, check=False)
    h.sync()
    assert p.seen == [0, 1, 2, 0, 1]


def _stream(rng: random.Random, steps: int):
    """A random key-contract call stream over keys 0-39 whose fresh adds reuse evicted and dropped keys; yields
    (method, args) valid for any policy."""
    held, pinned = set(), set()
    for _ in range(steps):
        r = rng.random()
        if r < 0.35 or not (held or pinned):
            pool = sorted(set(range(40)) - held - pinned)
            m, args = "add", (rng.sample(pool, min(len(pool), rng.randint(1, 4))), rng.random() < 0.3)
        elif r < 0.5 and held:
            m, args = "remove", (rng.sample(sorted(held), min(len(held), rng.randint(1, 3))),)
        elif r < 0.6 and pinned:
            m, args = "add", (rng.sample(sorted(pinned), min(len(pinned), rng.randint(1, 3))), rng.random() < 0.5)
        elif r < 0.7 and held:
            m, args = "touch", (rng.sample(sorted(held), min(len(held), 2)),)
        elif r < 0.75 and held:
            m, args = "drop", (rng.sample(sorted(held), 1),)
        else:
            m, args = "evict", (rng.randint(0, len(held) + 1),)
        got = yield m, args
        keys = set(args[0]) if m != "evict" else set(got or ())
        if m == "add":
            held, pinned = held | keys, pinned - keys
        elif m == "remove":
            held, pinned = held - keys, pinned | keys
        elif m in ("drop", "evict"):
            held -= keys


def _equal_on_a_stream(a, k, seed: int, steps: int) -> None:
    """Policies ``a`` (handles) and ``k`` (keys) answer every call of a :func:`_stream` alike; their orders
    equal at random points (``a``'s runs handed over there: the contract says the cut changes nothing), with
    ``a._check()``."""
    rng = random.Random(seed)
    gen = _stream(rng, steps)
    m, args = next(gen)
    try:
        while True:
            got, want = getattr(a, m)(*args), getattr(k, m)(*args)
            assert got == want, (m, args)
            if rng.random() < 0.3:
                assert a.order() == k.order()
                a._check()
            m, args = gen.send(want)
    except StopIteration:
        pass


@pytest.mark.parametrize("aging", ["dynamic", "none"])
@pytest.mark.parametrize("seed", range(8))
def test_lfu_equals_the_key_policy_call_by_call(aging, seed):
    """Every answer and the order after it equal LFUPolicy's; runs handed over at random points (order())."""
    a, k = ArrayLFU(30, aging=aging), LFUPolicy(30, aging=aging)
    _equal_on_a_stream(a, k, seed, 400)
    assert a.order() == k.order() and len(a) == len(k) == a.held()
    assert a.inflation == k.inflation


SPECS = {"lfu": (ArrayLFU, "lfu"), "lfu:aging=none": (lambda c: ArrayLFU(c, aging="none"), "lfu:aging=none")}


def _tiers(caps, specs):
    """Tiers of a fresh policy each: a spec string is made by the registry, a callable called with the capacity."""
    from pcs.cache.policies import make_policy
    return [Tier(f"t{j}", c, make_policy(s, c) if isinstance(s, str) else s(c)) for j, (c, s) in
            enumerate(zip(caps, specs))]


@SETTINGS
@given(traces(), tier_configs(sorted(SPECS)))
def test_hosted_lfu_equals_python_hierarchy_and_the_c_twin(reqs, cfg):
    """ArrayLFU hosted (C) = the same on the Python hierarchy = lfu's C twin."""
    tiers, timing, rules, wp = cfg
    caps, specs = [c for c, _ in tiers], [s for _, s in tiers]
    arr = lambda: _tiers(caps, [SPECS[s][0] for s in specs])  # noqa: E731
    key = lambda: _tiers(caps, [SPECS[s][1] for s in specs])  # noqa: E731
    arr_tests.run_hosted(reqs, arr, key, timing, rules, wp)


@pytest.mark.parametrize("spec", sorted(SPECS))
def test_lfu_seeded_stress_check_after_every_step(spec):
    """600 requests, ``_check`` after every step: hosted = Python hierarchy = C twin."""
    reqs = stress_trace(7, 600, BS)
    for caps, timing, wp in STRESS_CASES:
        arr = lambda: _tiers(caps, [SPECS[spec][0]] * len(caps))  # noqa: E731
        key = lambda: _tiers(caps, [SPECS[spec][1]] * len(caps))  # noqa: E731
        assert arr_tests.run_hosted(reqs, arr, key, timing, BlockRules(), wp).ledger.num_requests == 600


@pytest.mark.parametrize("aging", ["dynamic", "none"])
def test_replay_equals_lfu(exact_trace, monkeypatch, aging):
    """``pcs.replay`` (defaults: two tiers, modeled, step scheduler): ArrayLFU hosted gives lfu's (compiled)
    per-request table and hit ratio."""
    from pcs.cache import policies as reg
    from pcs.engine.api import replay

    monkeypatch.setitem(reg._POLICIES, "py_lfu_array", type("PyLFUArray", (ArrayLFU,), {"name": "py_lfu_array"}))
    tiers = ["gpu=40GB", "cpu=200GB"] if exact_trace.name == "sample_exact.jsonl" else None
    kw = {"model": "llama-3.1-70b", "tiers": tiers} if tiers else {}
    a = replay(exact_trace, policy=f"py_lfu_array:aging={aging}", **kw)
    b = replay(exact_trace, policy=f"lfu:aging={aging}", **kw)
    assert a.summary.engine == b.summary.engine == "compiled-step"
    assert a.summary.hit_ratio == b.summary.hit_ratio
    for col in a.requests.column_names:
        assert a.requests[col].to_numpy().tobytes() == b.requests[col].to_numpy().tobytes(), col


class Rebinding(ArrayLFU):
    """ArrayLFU that replaces its ident bytearray after each call ("rebind") or empties it ("shrink"): it is
    written by the host only."""

    name = "rebinding_lfu"
    how = "rebind"

    def victims(self, n, runs):
        got = super().victims(n, runs)
        if self.how == "rebind":
            self.ident = bytearray(self.ident)
        else:
            self.ident.clear()
        return got


def test_ident_shrunk_is_one_error_naming_it(monkeypatch):
    """The compiled host checks ``ident`` still holds a number per handle named after each call."""
    monkeypatch.setattr(Rebinding, "how", "shrink")
    h = twin_hierarchy([Tier("gpu", 4, Rebinding(4))], "back", True)
    with pytest.raises(PolicyError, match="'rebinding_lfu' broke the contract.*ident resized by the policy"):
        engine_run(h, [req([3 * i, 3 * i + 1], t=i) for i in range(8)], "sequential", UNIT_RULES, check=False)
        h.sync()


@pytest.mark.parametrize("native", [True, False])
def test_ident_replaced_is_one_error_naming_it(native):
    """Both hosts check ``self.ident`` is still theirs after each call: one error naming the policy."""
    if not native:
        p = Rebinding(8)
        p.add([1, 2, 3])
        with pytest.raises(UserError, match="ident replaced by the policy"):
            p.evict(1)
        return
    h = twin_hierarchy([Tier("gpu", 4, Rebinding(4))], "back", True)
    with pytest.raises(PolicyError, match="'rebinding_lfu' broke the contract.*ident replaced by the policy"):
        engine_run(h, [req([3 * i, 3 * i + 1], t=i) for i in range(8)], "sequential", UNIT_RULES, check=False)
        h.sync()


def test_the_docs_example_is_plain_lfu():
    """The identity example of docs/policies.md ("Identity on handles", ``MyLFU``) runs and equals
    ``lfu:aging=none`` call by call (the doc's claim), on the streams above."""
    from helpers import ROOT
    text = (ROOT / "docs" / "policies.md").read_text()
    start = text.index("import heapq\nfrom pcs.cache.policies.array import ArrayPolicy")
    ns: dict = {}
    exec(text[start:text.index("```", start)], ns)
    for seed in range(4):
        _equal_on_a_stream(ns["MyLFU"](30), LFUPolicy(30, aging="none"), seed, 300)


class Exporting(ArrayLFU):
    """ArrayLFU keeping a memoryview of its ident bytearray across calls (the host can no longer grow it)."""

    name = "exporting_lfu"

    def victims(self, n, runs):
        got = super().victims(n, runs)
        self._view = memoryview(self.ident)
        return got


@pytest.mark.parametrize("native", [True, False])
def test_ident_held_across_calls_is_one_error_naming_it(native):
    """A view of ``ident`` kept across calls: when the host must grow it (the compiled host allocates 1,024
    numbers at first, so 700 requests of two new blocks each, 1,400 handles, outgrow it; the Python host grows
    at every add), one error saying why, naming the policy on the compiled host."""
    if not native:
        p = Exporting(8)
        p.add([1, 2])
        p.evict(1)
        with pytest.raises(UserError, match="ident could not be grown: do not hold a memoryview"):
            p.add([3])
        return
    h = twin_hierarchy([Tier("gpu", 4, Exporting(4))], "back", True)
    with pytest.raises(PolicyError, match="'exporting_lfu' broke the contract.*ident could not be grown"):
        engine_run(h, [req([3 * i, 3 * i + 1], t=i) for i in range(700)], "sequential", UNIT_RULES, check=False)
        h.sync()


#: retention pools that take most blocks for about one arrival gap: blocks the policy saw pinned leave from the pool
#: (RetainingPolicy._forget: add then drop, so the block's number ends)
RETAINS = ["retain:tokens=0-16,duration=0.005", "retain:tokens=0-8,duration=0.01", "retain:tokens=0-4,duration=0.1"]


@settings(SETTINGS, max_examples=25)
@given(reqs=traces(max_requests=40), caps=st.lists(st.integers(0, 6), min_size=1, max_size=3),
       ret=st.sampled_from(RETAINS), timing=st.sampled_from(["sequential", "modeled"]))
def test_lfu_behind_a_retention_pool_equals_lfu(reqs, caps, ret, timing):
    """ArrayLFU behind ``retain`` on every tier (tiny tiers; the Python hierarchy: retain runs compiled only in
    front of a compiled policy): the same per-request columns, ledger and end state as lfu behind the same pools."""
    from pcs.cache import policies as reg
    from helpers import assert_twin_runs_equal, trace_context, twin_tiers
    runs = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(reg._POLICIES, "py_lfu_array", type("PyLFUArray", (ArrayLFU,), {"name": "py_lfu_array"}))
        for spec in ("py_lfu_array", "lfu"):
            tiers = twin_tiers(caps, [spec] * len(caps), [ret] * len(caps), trace_context(reqs, BlockRules()))
            h = twin_hierarchy(tiers, "back", False)
            runs += [engine_run(h, reqs, timing, BlockRules()), h]
    assert_twin_runs_equal(*runs)
