"""A broken Python eviction policy stops the run with one line naming it, on every engine (hostile-input findings
1, 2, 4, 5; pcs/cache/policyguard.py, ``Tier._claim``).

The contract is ``pcs/cache/policies/base.py``: ``evict(n)`` returns exactly ``n`` distinct blocks the tier
holds unpinned, or None (then only when it holds fewer than ``n``). The compiled host (``pcs/cache/_pol_py.c``)
and the Python tier (``--engine reference``, fleets with ``--shared-tier``) check it alike: each misbehaviour of
``tests/cache/plugin/pcs_hostile_policy.py`` is ``pcs: error: eviction policy 'h_MODE' ...``, exit 2, no
traceback -- never a hang, an overfilled tier (finding 2) or "this is a bug in pcs". The hang case (a fleet
with a shared tier, finding 1) and ``python -O`` (finding 5) run in subprocesses with ``timeout=60``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT, assert_one_line_error, invoke
from pcs.cache import Tier
from pcs.cache.policies import LRUPolicy
from pcs.errors import PolicyError

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "plugin"))
from pcs_hostile_policy import CLASSES  # noqa: E402

T = ROOT / "traces" / "sample_chat.jsonl"
TIERS = ("--tier", "gpu=10GB", "--tier", "cpu=100GB")
CONTRACT = "broke the contract of pcs/cache/policies/base.py"
#: misbehaviour -> what the one error line says (besides the policy's name)
NEEDLES = {
    "toofew": (CONTRACT, ") returned ", " blocks, not "),
    "toomany": (CONTRACT, ") returned ", " blocks, not "),
    "none": (CONTRACT, ") returned None though the tier holds at least "),
    "duplicate": (CONTRACT, "returned a block the tier does not hold unpinned (or twice)"),
    "unknown": (CONTRACT, "evict(n) returned a bool or a non-int, not a block (answer ('nokey', 0), n = "),
    "pinned": (CONTRACT, "returned a block the tier does not hold unpinned (or twice)"),
    "wrongtype": (CONTRACT, ") returned a str, not a list of "),
    "evict": ("raised RuntimeError in evict(): boom from plugin",),
    "add": ("raised RuntimeError in add(): boom in add",),
    "remove": ("raised KeyError in remove()", "boom in remove"),
    "init": ("raised ValueError in __init__(): init boom",),
}


@pytest.fixture
def hostile(monkeypatch):
    from pcs.cache import policies as reg

    for name, cls in CLASSES.items():
        monkeypatch.setitem(reg._POLICIES, name, cls)


@pytest.mark.parametrize("engine", ["reference", "auto"])
@pytest.mark.parametrize("mode", sorted(NEEDLES))
def test_each_misbehaviour_is_one_line_naming_the_policy(hostile, engine, mode):
    out = invoke("replay", T, *TIERS, "--policy", f"h_{mode}", "--engine", engine, "-q")
    assert_one_line_error(out, f"eviction policy 'h_{mode}'", *NEEDLES[mode])
    assert "bug in pcs" not in out.output


@pytest.mark.parametrize("engine", ["reference", "auto"])
def test_a_generator_of_the_right_victims_is_accepted(hostile, engine):
    """A generator is any iterable to the compiled host (``PySequence_List``); the reference lists it too:
    the run is the correct plug-in's, number for number (engine label aside)."""
    runs = []
    for mode in ("ok", "generator"):
        out = invoke("replay", T, *TIERS, "--policy", f"h_{mode}", "--engine", engine, "-q", "--format", "json")
        assert out.exit_code == 0, out.output
        runs.append(json.loads(out.stdout.replace(f"h_{mode}", "POLICY")))
    assert runs[0]["tiers"][0]["evicted_blocks"] > 0       # the victims path ran
    assert runs[0] == runs[1]


def test_the_tier_checks_every_answer_and_counts_what_left(monkeypatch):
    """Unit: a tier of 4 slots holding 4 unpinned blocks; reserving 2 slots needs evict(2). A too-few answer
    (1 block) is refused before anything changes the counters; a correct one evicts 2 and counts 2."""
    for mode, ok in (("toofew", False), ("ok", True)):
        t = Tier("gpu", 4, CLASSES[f"h_{mode}"](4))
        t.insert([1, 2, 3, 4])
        if ok:
            # insert hands add([1, 2, 3, 4]) in eviction order (base.py: the first key goes first), so 1, 2
            assert t.reserve(2) == [1, 2]
            assert t.stats.evicted_blocks == 2 and len(t.resident) == 2 and t.reserved_blocks == 2
        else:
            with pytest.raises(PolicyError, match=r"'h_toofew' broke .*: evict\(2\) returned 1 block, not 2$"):
                t.reserve(2)
            assert t.stats.evicted_blocks == 0 and t.reserved_blocks == 0


@pytest.mark.parametrize("timing", ["modeled", "sequential"])
@pytest.mark.parametrize("engine", ["reference", "auto"])
@pytest.mark.parametrize("mode,says", [
    ("none", "evict(2) returned None though the tier holds at least 2 unpinned blocks"),
    ("toofew", "evict(2) returned 1 block, not 2"),
    ("toomany", "evict(2) returned 3 blocks, not 2"),
])
def test_a_wrong_count_names_the_call_not_a_block(hostile, tmp_path, engine, timing, mode, says):
    """The message names what was asked, evict(n), and what came back -- no "(block 0, n = 13)": the answer holds
    no block to name. By hand: 512-token blocks; request 1 (hashes 1-4, 2048 tokens, one output token) fills the
    4-block GPU tier and leaves it unpinned; request 2 a minute later (hashes 5, 6: 1024 tokens, two full blocks, no
    partial one) finds no free slot, so every pass -- the step-scheduled one and the sequential one the modeled
    replay also runs -- asks evict(2) first. (On a trace whose prompt ends in a partial block the step-scheduled
    pass also reserves that block, so its first evict asks one more than the sequential pass's; which pass meets
    the broken policy first differs between the engines, hence 13 vs 14 on traces/sample_chat.jsonl.)"""
    trace = tmp_path / "two.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 2048, "output_length": 1, "hash_ids": [1, 2, 3, 4]}\n'
                     '{"timestamp": 60000, "input_length": 1024, "output_length": 1, "hash_ids": [5, 6]}\n')
    out = invoke("replay", trace, "--tier", "gpu=4blocks", "--policy", f"h_{mode}", "--engine", engine,
                 "--timing", timing, "-q")
    assert_one_line_error(out, f"eviction policy 'h_{mode}' {CONTRACT}: {says}")
    assert "n = " not in out.output


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The hostile policies "installed" as a plug-in distribution (module + .dist-info) for subprocesses."""
    d = tmp_path_factory.mktemp("hsite")
    for f in ("pcs_demo_policy.py", "pcs_hostile_policy.py"):
        shutil.copy(HERE / "plugin" / f, d)
    info = d / "pcs_hostile_policy-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pcs-hostile-policy\nVersion: 0.1\n")
    eps = "".join(f"{name} = pcs_hostile_policy:{cls.__name__}\n" for name, cls in CLASSES.items())
    (info / "entry_points.txt").write_text("[pcs.policies]\n" + eps)
    return d


def _pcs(site: Path, *args: str, optimize: bool = False) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(site))
    env.pop("PYTHONOPTIMIZE", None)
    if optimize:
        env["PYTHONOPTIMIZE"] = "1"
    code = "import sys; from pcs.cli.main import main; sys.argv[0] = 'pcs'; main()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=60)


FLEET = ("--instances", "2", "--cache-decode-blocks", "--shared-tier", "remote=1TB")


@pytest.mark.parametrize("mode,extra,optimize", [
    ("toofew", FLEET, False),                  # finding 1: hung forever in Tier._evict_around_leases
    ("evict", FLEET, False),
    ("toomany", ("--engine", "reference"), True),     # finding 5: ran to rc 0 under python -O
    ("none", ("--engine", "reference"), True),
])
def test_fleet_and_optimized_runs_stop_with_the_error(site, mode, extra, optimize):
    out = _pcs(site, "replay", "-q", str(T), *TIERS, "--policy", f"h_{mode}", *extra, optimize=optimize)
    assert out.returncode == 2, (out.returncode, out.stderr[-2000:])
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"pcs: error: eviction policy 'h_{mode}'"), out.stderr[-2000:]
    assert all(n in lines[0] for n in NEEDLES[mode]) and out.stdout == ""


@pytest.mark.parametrize("engine", ["reference", "auto"])
@pytest.mark.parametrize("mode", ["toofew", "add", "remove"])
def test_retain_in_front_of_a_broken_plugin(hostile, engine, mode):
    """``--admit gpu=retain:...`` wraps the plug-in (``RetainingPolicy``, docs/semantics.md §8): its faults are
    still the one line naming it."""
    out = invoke("replay", T, *TIERS, "--policy", f"h_{mode}", "--admit", "gpu=retain:tokens=0-4096,duration=1",
                 "--engine", engine, "-q")
    assert_one_line_error(out, f"eviction policy 'h_{mode}'", *NEEDLES[mode])


class _LRUSubclass(LRUPolicy):
    """A subclass of a built-in defined outside ``pcs``: not trusted, though it inherits every method."""


class _ShortLRU(LRUPolicy):
    """A subclass of a built-in that breaks the contract: one victim too few."""

    def evict(self, n):
        got = super().evict(n)
        return got[:-1] if got else got


def test_only_the_built_in_classes_themselves_are_trusted():
    """``policyguard.trusted``: every registered built-in (held to the contract by test_policies_contract.py) is
    taken unchecked; a plug-in, a subclass of a built-in, a guarded policy and a pcs wrapper are checked."""
    from pcs.cache.admission_retention import RetainingPolicy
    from pcs.cache.policies import _BUILTIN, make_policy
    from pcs.cache.policies.context import PolicyContext, TraceOracle
    from pcs.cache.policyguard import GuardedPolicy, trusted

    for cls in _BUILTIN:
        assert trusted(make_policy(cls.name, 8, context=PolicyContext(TraceOracle()))), cls.name
    assert not trusted(_LRUSubclass(8)) and not trusted(CLASSES["h_ok"](8))
    assert not trusted(GuardedPolicy(LRUPolicy(8)))
    assert not trusted(RetainingPolicy.__new__(RetainingPolicy))
    assert Tier("gpu", 4, LRUPolicy(4))._trusted and not Tier("gpu", 4, _LRUSubclass(4))._trusted


def test_a_broken_subclass_of_a_built_in_is_still_checked():
    """Unit, as test_the_tier_checks_every_answer_and_counts_what_left: 4 unpinned blocks in 4 slots, reserve(2)
    needs evict(2); the subclass answers 1 block, which the check refuses before any counter moves."""
    t = Tier("gpu", 4, _ShortLRU(4))
    t.insert([1, 2, 3, 4])
    with pytest.raises(PolicyError, match=r"'lru' broke the contract.*: evict\(2\) returned 1 block, not 2$"):
        t.reserve(2)
    assert t.stats.evicted_blocks == 0 and t.reserved_blocks == 0


def test_the_unchecked_path_evicts_as_the_checked_one():
    """The same tier operations on a built-in LRU (unchecked) and on an identical subclass (checked) leave the same
    tier. By hand: insert [1..4] (LRU order 1, 2, 3, 4); reserve(2) evicts [1, 2]; fill [5, 6] pins them; insert [7]
    finds no free slot and evicts 3 (order now 4, 7); unpin [6, 5] appends them (4, 7, 6, 5); reserve(3) evicts
    [4, 7, 6], leaving 5 resident unpinned; 2 + 1 + 3 = 6 evictions."""
    tiers = [Tier("gpu", 4, LRUPolicy(4)), Tier("gpu", 4, _LRUSubclass(4))]
    for t in tiers:
        t.insert([1, 2, 3, 4])
        assert t.reserve(2) == [1, 2]
        assert t.fill([5, 6]) == []
        assert t.insert([7]) == ([3], 1)
        t.unpin([6, 5], False)
        assert t.reserve(3) == [4, 7, 6]
    assert [sorted(t.resident.items()) for t in tiers] == [[(5, 0)]] * 2
    assert [t.stats.evicted_blocks for t in tiers] == [6, 6]


def test_a_non_sequence_answer_is_named_with_its_article():
    """evict(2) answering an int (no ``__iter__``): "returned an int", never "a int" (pcs.units.a_or_an)."""
    from pcs.cache.policyguard import broke_count

    assert str(broke_count("p", "evict", 2, "int")) == (
        "eviction policy 'p' broke the contract of pcs/cache/policies/base.py: evict(2) returned an int, not a list "
        "of 2 blocks or None")


@pytest.mark.parametrize("engine", ["reference", "auto"])
@pytest.mark.parametrize("cls_name, says", [("Evil", "an Evil"), ("Uniq", "a Uniq"), ("Hourly", "an Hourly"),
                                            ("Apple", "an Apple"), ("Str", "a Str")])
def test_both_hosts_word_a_str_answers_article_alike(monkeypatch, engine, cls_name, says):
    """evict(n) answering a str subclass: the compiled host (pyhost_article, pcs/cache/_pol_py.c) said "a %s"
    whatever the name ("a Evil"); the Python host (pcs.units.a_or_an) judged the first letter ("an Uniq"). Both now
    use one rule: "a" before "uni", "an" before "hour", else by the vowel."""
    from pcs.cache import policies as reg

    text = type(cls_name, (str,), {})
    evil = type("H_str", (CLASSES["h_ok"],), {"name": "h_str", "evict": lambda self, n: text("abc")})
    monkeypatch.setitem(reg._POLICIES, "h_str", evil)
    out = invoke("replay", T, *TIERS, "--policy", "h_str", "--engine", engine, "-q")
    assert_one_line_error(out, "eviction policy 'h_str'", f") returned {says}, not a list of ")


def test_a_or_an_reads_the_common_exceptions():
    from pcs.units import a_or_an

    assert [a_or_an(w) for w in ("uint64", "one", "hour", "", "unicode", "user", "euro", "int", "azure", "8",
                                 "honest", "mooncake")] == [
        "a uint64", "a one", "an hour", "", "a unicode", "a user", "a euro", "an int", "an azure", "an 8",
        "an honest", "a mooncake"]
