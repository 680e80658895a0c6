"""The handle contract (pcs/cache/policies/array.py): Python policies on handles, their two hosts, their speed path.

Checked here:

- hand cases of the contract: handles named per run in call order, flags kept by the host, ``victims`` once per
  decision with the runs since the last one, ``range`` answers;
- the examples equal the key-contract policies they restate: :class:`ArrayLRU` = :class:`LRUPolicy` and
  ``DemoMRUArray`` = ``DemoMRU`` (tests/cache/plugin), call by call on random operation streams, whatever the
  cut of the runs into ``victims`` calls (the contract's rule);
- hosted by the compiled hierarchy (pcs/cache/_pol_pyarr.c) against the Python hierarchy and against the C
  twin of lru / the key-contract MRU hosted by pcs/cache/_pol_py.c: admissions, per-request columns, ledger and
  end state equal on hypothesis traces (1-3 tiers), a seeded stress stream with ``_check`` after every step,
  and ``pcs.replay`` of the committed sample and the Mooncake trace;
- errors: a policy that raises in ``victims`` or answers a handle it was not given is one ``PolicyError``
  naming the policy and ``victims``.
"""
from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from hypothesis import given

from pcs.blocks import BlockRules
from pcs.cache import Tier
from pcs.cache.policies import LRUPolicy
from pcs.cache.policies.array_lru import ArrayLRU
from pcs.errors import PolicyError, UserError
from helpers import (BS, SETTINGS, STRESS_CASES, assert_one_line_error, engine_run, invoke, stress_trace,
                     tier_configs, traces, twin_hierarchy, assert_twin_runs_equal)

sys.path.insert(0, str(Path(__file__).parent / "plugin"))
from pcs_demo_policy import DemoMRU, DemoMRUArray  # noqa: E402

#: handle-contract policy -> the key-contract policy it restates
PAIRS = [(ArrayLRU, LRUPolicy), (DemoMRUArray, DemoMRU)]


class Recorder(ArrayLRU):
    """ArrayLRU recording each ``victims`` call as the host makes it: (n, runs, held flags at the call)."""

    def __init__(self, capacity_blocks):
        super().__init__(capacity_blocks)
        self.calls = []

    def victims(self, n, runs):
        self.calls.append((n, list(runs), [h for h, f in enumerate(self.flags) if f]))
        return super().victims(n, runs)


def test_handles_runs_and_flags_by_hand():
    """add [10, 11, 12] names handles 0, 1, 2 (one run, in eviction order); remove [11] clears flag 1; touch [10]
    renames 10 to handle 3 (a run of its own, reused); evict(1) hands both runs over in one call and takes the
    smallest held handle, 2 (key 12): LRU's victim, as LRUPolicy would evict 12 (10 was touched, 11 pinned)."""
    p = Recorder(8)
    p.add([10, 11, 12])
    p.remove([11])
    p.touch([10])
    assert p.evict(1) == [12]
    assert p.calls == [(1, [(0, 3, False), (3, 1, True)], [2, 3])]
    assert list(p.flags) == [0, 0, 0, 1] and p.order() == [10] and p.held() == 1
    assert p.calls[-1] == (0, [], [3])           # order() hands over (nothing queued) before order_handles


def test_victims_answers_a_range_when_the_next_are_held():
    """Handles 0-4 held, 1 gone: victims(1) is range(0, 1); then 2, 3 are held next to each other: range(2, 4)."""
    p = ArrayLRU(8)
    p.flags += bytes([1, 0, 1, 1, 1])
    assert p.victims(1, [(0, 5, False)]) == range(0, 1)
    p.flags[0] = 0                               # what the host does with a victim
    assert p.victims(2, []) == range(2, 4)
    p.flags[2:4] = b"\0\0"
    assert p.order_handles() == [4]


def test_mru_takes_the_top_run_first():
    """Runs [0, 3) then [3, 5): MRU's victims are the last run first, in its order: 3, 4, then 0 (the first of
    the older run), as DemoMRU pops the batch it added last, first key first."""
    p = DemoMRUArray(8)
    p.flags += b"\1" * 5
    assert list(p.victims(3, [(0, 3, False), (3, 2, False)])) == [3, 4, 0]
    p.flags[0] = p.flags[3] = p.flags[4] = 0
    assert p.order_handles() == [1, 2]


def _next_call(rng: random.Random, held: set, pinned: set, nxt: list) -> tuple:
    """A random key-contract call valid for any policy given the blocks ``held`` (evictable) and ``pinned``."""
    r = rng.random()
    if r < 0.35 or not (held or pinned):
        keys = list(range(nxt[0], nxt[0] + rng.randint(1, 5)))
        nxt[0] += len(keys)
        return "add", (keys, rng.random() < 0.3)
    if r < 0.5 and held:
        return "remove", (rng.sample(sorted(held), min(len(held), rng.randint(1, 3))),)
    if r < 0.6 and pinned:
        return "add", (rng.sample(sorted(pinned), min(len(pinned), rng.randint(1, 3))), True)
    if r < 0.7 and held:
        return "touch", (rng.sample(sorted(held), min(len(held), 2)),)
    if r < 0.75 and held:
        return "drop", (rng.sample(sorted(held), 1),)
    return "evict", (rng.randint(0, len(held) + 1),)


@pytest.mark.parametrize("array_cls,key_cls", PAIRS)
@pytest.mark.parametrize("seed", range(6))
def test_equals_the_key_contract_policy_call_by_call(array_cls, key_cls, seed):
    """Every call's answer and the order after it equal; the array policy's runs are handed over at random
    extra points (``order()``: a victims(0) call first), which must not change anything (the contract's rule)."""
    a, k = array_cls(50), key_cls(50)
    rng = random.Random(seed)
    held, pinned, nxt = set(), set(), [0]
    for _ in range(400):
        method, args = _next_call(rng, held, pinned, nxt)
        got, want = getattr(a, method)(*args), getattr(k, method)(*args)
        assert got == want, (method, args)
        keys = set(args[0]) if method != "evict" else set(want or ())
        if method == "add":
            held |= keys
            pinned -= keys
        elif method == "remove":
            held -= keys
            pinned |= keys
        elif method in ("drop", "evict"):
            held -= keys
        if rng.random() < 0.3:                   # a hand-over (victims(0, runs)) here, else runs pile up
            assert a.order() == k.order()
            a._check()
    assert a.order() == k.order() and len(a) == len(k) == a.held() == len(held)


def python_tiers(caps, specs):
    """Tiers ``t0``, ``t1``, ... of ``caps[j]`` blocks with a fresh policy of class ``specs[j]`` (a name: the
    registered class; a class: itself)."""
    from pcs.cache.policies import make_policy
    return [Tier(f"t{j}", c, s(c) if isinstance(s, type) else make_policy(s, c)) for j, (c, s) in
            enumerate(zip(caps, specs))]


def run_hosted(reqs, arr, key, timing, rules, wp):
    """``reqs`` over three hierarchies, each once: the array policy's tiers (factory ``arr``) on the Python
    hierarchy and hosted by the compiled one, its key twin's tiers (factory ``key``) on the compiled one. The hosted
    run equals each of the other two (ledger, every column, end state); returns the Python run's EngineResult."""
    runs = []
    for make, use_native in ((arr, False), (arr, True), (key, True)):
        h = twin_hierarchy(make(), wp, use_native)
        runs += [engine_run(h, reqs, timing, rules), h]
    assert_twin_runs_equal(*runs[:4])
    assert_twin_runs_equal(*runs[4:], *runs[2:4])
    return runs[0]


SPECS = {"lru": (ArrayLRU, "lru"), "mru": (DemoMRUArray, DemoMRU)}


@SETTINGS
@given(traces(), tier_configs(["lru", "mru"]))
def test_hosted_equals_python_hierarchy_and_the_key_twin(reqs, cfg):
    """The array policy hosted (C) = the same on the Python hierarchy = its key twin (lru: the C inline LRU;
    mru: DemoMRU hosted by _pol_py.c)."""
    tiers, timing, rules, wp = cfg
    caps, specs = [c for c, _ in tiers], [s for _, s in tiers]
    arr = [SPECS[s][0] for s in specs]
    key = [SPECS[s][1] for s in specs]
    mk = lambda ss: (lambda: python_tiers(caps, ss))  # noqa: E731
    from pcs.cache import native
    assert all(native.policy_spec(t.policy)[0] == "pyarr" for t in mk(arr)())
    run_hosted(reqs, mk(arr), mk(key), timing, rules, wp)


@pytest.mark.parametrize("name", ["lru", "mru"])
def test_seeded_stress_check_after_every_step(name):
    """600 requests, ``_check`` after every step (the C tier; the hosted policy's ``_check``, ``held()`` and
    ``order_handles()`` against the held blocks): hosted = Python hierarchy = key twin."""
    reqs = stress_trace(7, 600, BS)
    for caps, timing, wp in STRESS_CASES:
        arr = lambda: python_tiers(caps, [SPECS[name][0]] * len(caps))  # noqa: E731
        key = lambda: python_tiers(caps, [SPECS[name][1]] * len(caps))  # noqa: E731
        assert run_hosted(reqs, arr, key, timing, BlockRules(), wp).ledger.num_requests == 600


@pytest.fixture
def registered(monkeypatch):
    """``py_lru_array`` (ArrayLRU) and both MRUs registered as plug-ins are (tests/cache/test_policies_plugin.py)."""
    from pcs.cache import policies as reg

    lru = type("PyLRUArray", (ArrayLRU,), {"name": "py_lru_array"})
    for name, cls in (("py_lru_array", lru), ("demo_mru", DemoMRU), ("demo_mru_array", DemoMRUArray)):
        monkeypatch.setitem(reg._POLICIES, name, cls)


@pytest.mark.parametrize("array,key", [("py_lru_array", "lru"), ("demo_mru_array", "demo_mru")])
def test_replay_equals_the_key_twin(exact_trace, registered, array, key):
    """``pcs.replay`` (defaults: two tiers, modeled, step scheduler): the array policy hosted gives the
    per-request table and hit ratio of its key twin (compiled lru; DemoMRU hosted), and of itself on the
    reference engine."""
    from pcs.engine.api import replay

    tiers = ["gpu=40GB", "cpu=200GB"] if exact_trace.name == "sample_exact.jsonl" else None
    kw = {"model": "llama-3.1-70b", "tiers": tiers} if tiers else {}
    a, b = replay(exact_trace, policy=array, **kw), replay(exact_trace, policy=key, **kw)
    assert a.summary.engine == b.summary.engine == "compiled-step"
    assert a.summary.hit_ratio == b.summary.hit_ratio
    for col in a.requests.column_names:
        assert a.requests[col].to_numpy().tobytes() == b.requests[col].to_numpy().tobytes(), col
    if exact_trace.name == "sample_exact.jsonl":
        ref = replay(exact_trace, policy=array, engine="reference", **kw)
        assert ref.summary.hit_ratio == a.summary.hit_ratio


class BrokenArray(DemoMRUArray):
    """DemoMRUArray failing on cue: ``fail`` = "raise" (victims raises) or "answer" (a handle never named)."""

    name = "broken_mru_array"
    fail = "raise"

    def victims(self, n, runs):
        got = super().victims(n, runs)
        if n and self.fail == "raise":
            raise RuntimeError("boom in victims")
        return [h + 10**9 for h in got] if n and self.fail == "answer" else got


@pytest.mark.parametrize("fail,needle", [("raise", "raised RuntimeError in victims(): boom in victims"),
                                         ("answer", "broke the contract")])
def test_a_failing_array_plugin_is_one_line_naming_it(monkeypatch, fail, needle):
    """At the CLI: exit 2, one line naming the policy and what failed, no traceback (hosted, compiled)."""
    from helpers import ROOT
    from pcs.cache import policies as reg

    monkeypatch.setitem(reg._POLICIES, "broken_mru_array", BrokenArray)
    monkeypatch.setattr(BrokenArray, "fail", fail)
    out = invoke("replay", ROOT / "traces" / "sample_chat.jsonl", "--policy", "broken_mru_array", "--tier",
                 "gpu=200blocks", "--tier", "cpu=400blocks", "-q")
    assert_one_line_error(out, "eviction policy 'broken_mru_array'", needle)


def test_an_error_in_a_hand_over_at_the_end_surfaces():
    """A tier that never evicts hands its runs over only at the end (sync: victims(0, runs)); a policy raising
    there is an error naming it, caused by its own exception."""
    class Raising(ArrayLRU):
        name = "raising_lru"

        def victims(self, n, runs):
            raise RuntimeError("boom")

    from helpers import req, UNIT_RULES
    h = twin_hierarchy([Tier("gpu", 100, Raising(100))], "back", True)
    with pytest.raises(PolicyError, match="'raising_lru' raised RuntimeError in victims") as err:
        engine_run(h, [req([3 * i, 3 * i + 1], t=i) for i in range(8)], "sequential", UNIT_RULES, check=False)
        h.sync()
    assert isinstance(err.value.__cause__, RuntimeError)


class HostileArray(ArrayLRU):
    """ArrayLRU breaking the handle contract on cue (the ways a hostile plug-in broke it): ``how`` = "shrink" (clears
    flags, written by the host only), "export" (holds a memoryview of flags across calls), "set" (answers a set),
    "bool" (answers bools), "negative" (answers -1 for the first victim)."""

    name = "hostile_lru_array"
    how = "shrink"

    def victims(self, n, runs):
        got = super().victims(n, runs)
        if self.how == "shrink":
            self.flags.clear()
        elif self.how == "rebind":                   # once hung in ArrayLRU's window loop
            self.flags = bytearray(self.flags)
        elif self.how == "export":
            self._mv = memoryview(self.flags)
        if not n:
            return got
        got = list(got)
        return {"set": set(got), "bool": [True] * n, "negative": [-1] + got[1:], "int": 7}.get(self.how, got)


@pytest.mark.parametrize("how,needle", [
    ("shrink", "flags resized by the policy"),
    ("rebind", "flags replaced by the policy"),
    ("export", "do not hold a memoryview or np.frombuffer of flags across calls"),
    ("set", "must return a list, tuple or range"),
    ("int", "must return a list, tuple or range of handles (got an int)"),     # "an", as the Python host
    ("bool", "returned a bool or a non-int, not a handle (answer True, n = "),     # not -1
    ("negative", "(handle -1, n = "),
])
def test_a_hostile_array_plugin_is_one_line_naming_it(monkeypatch, how, needle):
    """At the CLI (compiled host, pcs/cache/_pol_pyarr.c): exit 2, one line naming the policy and the handle
    contract's module (pcs/cache/policies/array.py), no traceback, no read past the flags; a negative handle is
    printed as -1 (not 2**64 - 1)."""
    from helpers import ROOT
    from pcs.cache import policies as reg

    monkeypatch.setitem(reg._POLICIES, "hostile_lru_array", HostileArray)
    monkeypatch.setattr(HostileArray, "how", how)
    out = invoke("replay", ROOT / "traces" / "sample_chat.jsonl", "--policy", "hostile_lru_array", "--tier",
                 "gpu=200blocks", "--tier", "cpu=400blocks", "-q")
    assert_one_line_error(out, "eviction policy 'hostile_lru_array' broke the contract of "
                          "pcs/cache/policies/array.py", needle)


def test_the_python_host_names_a_non_sequence_answer_with_its_article():
    """victims(2) answering the int 7: the Python host (ArrayPolicy._bad_handles) says "got an int", as the compiled
    one (pa_broke_type, the test above); both said "got a int"."""
    p = HostileArray(8)
    p.how = "int"
    p.add([1, 2, 3])
    with pytest.raises(UserError, match=r"must return a list, tuple or range of handles \(got an int\)"):
        p.evict(2)


def test_the_python_host_notices_flags_replaced():
    """The Python host (ArrayPolicy._deliver) checks ``self.flags`` is its bytearray after each call, as the
    compiled one (above): a rebinding policy is one UserError, not a hang."""
    p = HostileArray(8)
    p.how = "rebind"
    p.add([1, 2, 3])
    with pytest.raises(UserError, match="flags replaced by the policy"):
        p.evict(2)


def test_the_python_host_says_why_flags_cannot_grow():
    """A memoryview of flags held across calls: the Python host's message is the compiled host's,
    not BufferError's "Existing exports of data". Keys 1 and 2 named, one victim asked (the view taken then),
    then key 3 must grow flags."""
    p = HostileArray(8)
    p.how = "export"
    p.add([1, 2])
    p.evict(1)
    with pytest.raises(UserError, match="flags could not be grown: do not hold a memoryview or np.frombuffer"):
        p.add([3])


def test_array_lru_window_is_bounded_by_the_flags():
    """ArrayLRU's window loop stops at len(flags): flags holding fewer held handles than n (written by someone
    else than the host) raise instead of doubling the window forever. Flags 0 1 0 (handles 0 and 2 cleared in
    place behind the host's back), victims(2): one held handle, not 2."""
    p = ArrayLRU(8)
    p.add([1, 2, 3])
    p.flags[:] = b"\x00\x01\x00"
    with pytest.raises(UserError, match="fewer than 2 held handles in flags"):
        p.victims(2, [])


class GarbageOrder(ArrayLRU):
    """ArrayLRU whose ``order_handles()`` answers garbage on cue (the garbage answers no other test covers): ``how`` = "bool"
    (True / False for the handles), "float", "huge" (2**70), "negative", "unheld" (a handle never named),
    "duplicate" (the first held handle twice, one dropped), "short" (the last held handle left out), "set"."""

    name = "garbage_order"
    how = "bool"

    def order_handles(self):
        hs = super().order_handles()
        bad = {"bool": lambda: [True] + hs[1:], "float": lambda: [float(hs[0])] + hs[1:],
               "huge": lambda: [2**70] + hs[1:], "negative": lambda: [-1] + hs[1:],
               "unheld": lambda: hs[:-1] + [10**6], "duplicate": lambda: [hs[0], hs[0]] + hs[2:],
               "short": lambda: hs[:-1], "set": lambda: set(hs)}
        return bad.get(self.how, lambda: hs)()


#: GarbageOrder.how -> what both hosts' one error line says (pcs/cache/_pol_pyarr.c pa_order, ArrayPolicy.order)
ORDER_NEEDLES = {"bool": "order_handles() returned a bool", "float": "order_handles() returned a non-int",
                 "huge": "does not hold unpinned", "negative": "does not hold unpinned",
                 "unheld": "does not hold unpinned", "duplicate": "order_handles() returned a handle twice",
                 "short": "order_handles() returned fewer handles than the policy holds",
                 "set": "order_handles() must return a list, tuple or range"}


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("how", sorted(ORDER_NEEDLES))
def test_garbage_from_order_handles_is_one_error_naming_it(monkeypatch, how, native):
    """Eight requests of two new blocks each through a tier of 100 blocks: 16 held handles, so every garbage
    answer differs from the right one (15 = 16 - 1 handles for "short", handle 1 = True for "bool", handle
    10**6 never named). Reading the order (compiled host: ``hier_order`` -> pa_order; Python host: the guarded
    ``ArrayPolicy.order``) raises one PolicyError naming the policy and what was wrong; a correct answer (the
    control) reads the 16 blocks in LRU order."""
    from helpers import req, UNIT_RULES
    monkeypatch.setattr(GarbageOrder, "how", how)
    h = twin_hierarchy([Tier("gpu", 100, GarbageOrder(100))], "back", native)
    engine_run(h, [req([3 * i, 3 * i + 1], t=i) for i in range(8)], "sequential", UNIT_RULES, check=False)
    with pytest.raises(PolicyError, match="eviction policy 'garbage_order'") as err:
        h.tiers[0].policy.order()
    assert ORDER_NEEDLES[how] in str(err.value) and "\n" not in str(err.value)
    monkeypatch.setattr(GarbageOrder, "how", "ok")
    assert h.tiers[0].policy.order() == [b for i in range(8) for b in (3 * i + 1, 3 * i)]


class NoSuperInit(ArrayLRU):
    """A handle-contract plug-in whose ``__init__`` forgets ``super().__init__(capacity_blocks)``."""

    name = "no_super_array"

    def __init__(self, capacity_blocks):
        self.mine = capacity_blocks


class NoSuperInitKeys(LRUPolicy):
    """The same on the key contract."""

    name = "no_super_keys"

    def __init__(self, capacity_blocks):
        self.mine = capacity_blocks


@pytest.mark.parametrize("engine", ["reference", "auto"])
@pytest.mark.parametrize("cls", [NoSuperInit, NoSuperInitKeys])
def test_a_plugin_that_skips_super_init_is_one_line_naming_it(monkeypatch, cls, engine):
    """At the CLI, either engine: exit 2, one line naming the policy and the missing base-class call, before any
    request runs (pcs.cache.policyguard.check_initialised from make_policy)."""
    from helpers import ROOT
    from pcs.cache import policies as reg

    monkeypatch.setitem(reg._POLICIES, cls.name, cls)
    out = invoke("replay", ROOT / "traces" / "sample_chat.jsonl", "--policy", cls.name, "--tier",
                 "gpu=200blocks", "--tier", "cpu=400blocks", "--engine", engine, "-q")
    assert_one_line_error(out, f"eviction policy {cls.name!r}", "did not call super().__init__(capacity_blocks)")


class NoneVictims(ArrayLRU):
    """ArrayLRU answering None to every ``victims(n)`` with n > 0 (the key contract's "fewer than n held" answer,
    which the handle contract does not have: the host asks only for n <= held)."""

    name = "none_victims"

    def victims(self, n, runs):
        got = super().victims(n, runs)
        return None if n else got


@pytest.mark.parametrize("native", [True, False])
def test_victims_none_is_one_message_on_both_hosts(native):
    """A tier of 4 blocks, requests of 2 new blocks each: the first two fill it, the third needs 2 blocks out, so the
    host asks victims(2) while 4 handles are held. Both hosts (pcs/cache/_pol_pyarr.c pa_ask; ArrayPolicy.evict)
    stop with the same line, naming the handle contract's module (the Python host used to say
    "raised UserError in evict(): ... (got a NoneType)")."""
    from helpers import req, UNIT_RULES
    from pcs.errors import PolicyError

    h = twin_hierarchy([Tier("gpu", 4, NoneVictims(4))], "back", native)
    with pytest.raises(PolicyError) as err:
        engine_run(h, [req([3 * i, 3 * i + 1], t=i) for i in range(3)], "sequential", UNIT_RULES, check=False)
        h.sync()
    assert str(err.value) == ("eviction policy 'none_victims' broke the contract of pcs/cache/policies/array.py: "
                              "victims(2) returned None though the tier holds at least 2 unpinned handles")


def test_idents_raises_struct_error_past_the_named_handles():
    """``idents`` docstring's Raises: an ArrayLRU (no identity) keeps ``ident`` empty, so 0 handles read as () and
    one handle is past the buffer (4 bytes needed, 0 held)."""
    import struct

    p = ArrayLRU(4)
    assert p.idents(0, 0) == ()
    with pytest.raises(struct.error):
        p.idents(0, 1)
