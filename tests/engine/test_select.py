"""The engine-selection table (pcs.engine.select): rows, reasons, fallback, aliases, --native.

Every expected engine and reason below follows from the rows' documented
preconditions (the module docstring of pcs/engine/select.py):
lru-scan needs sequential timing and exactly one lru tier; the compiled
hierarchy needs every tier's policy compiled, at most 2**30 blocks per tier, the built
extension and native != python; the reference applies to every model that
is not hybrid and the hybrid row always; ``auto`` takes the first row that
applies, in table order.
"""
from __future__ import annotations

import dataclasses

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers import make_requests
from pcs import _native
from pcs.cli.main import cli
from pcs.engine import select
from pcs.engine.api import replay
from pcs.trace import DEFAULT_TRACE

ROOT = Path(__file__).resolve().parents[2]
COMPILED = _native.built("lruhier")
needs_compiled = pytest.mark.skipif(not COMPILED, reason="pcs.cache._lruhier is not built")


#: the engine of a default modeled run (the step scheduler, layerwise) on all-lru tiers
STEP_ENGINE = ("compiled-step" if _native.built("stepsched") else "compiled-hierarchy") if COMPILED else "reference"


def cfg(timing, *tiers, native="auto"):
    """RunConfig from ``(name, policy, capacity_blocks)`` tuples."""
    return select.RunConfig(timing, tuple(tiers), native)


# -- the table itself ----------------------------------------------------------------------------

def test_rows_names_aliases_and_order():
    assert select.ENGINE_NAMES == ("lru-scan", "compiled-step", "compiled-hierarchy", "reference", "compiled-hybrid",
                                   "hybrid")
    assert [r.kind for r in select.ENGINES] == ["scan"] + ["event-loop"] * 5
    assert select.REQUESTS == ("auto", "lru-scan", "compiled-step", "compiled-hierarchy", "reference",
                               "compiled-hybrid", "hybrid", "general", "fast")
    assert {a: select.get_row(a).name for a in select.ALIASES} == {"general": "reference", "fast": "lru-scan"}
    # the reference applies to any model that is not hybrid, even a config no other row takes
    odd = cfg("modeled", ("gpu", "fifo", 3), ("cpu", "slru", 2**40), native="python")
    assert select.get_row("reference").applies(odd) is None
    # a hybrid model: the compiled cache groups (one shared lru pool, the twin built) and the last row, which
    # applies to anything; on split pools (SGLang), another policy or native python only the last row
    hyb = select.RunConfig("sequential", (("gpu", "lru", 100),), "auto", ("full_attention", "sliding_window"), True)
    both = ["compiled-hybrid", "hybrid"] if _native.built("grouphier") else ["hybrid"]
    assert [r.name for r in select.ENGINES if r.applies(hyb) is None] == both
    for other in (dataclasses.replace(hyb, pools=2), dataclasses.replace(hyb, tiers=(("gpu", "fifo", 100),)),
                  dataclasses.replace(hyb, native="python")):
        assert [r.name for r in select.ENGINES if r.applies(other) is None] == ["hybrid"]
    assert "2 pools per tier" in select.get_row("compiled-hybrid").applies(dataclasses.replace(hyb, pools=2))
    assert select.ENGINES[-1].applies(odd) is None


def test_every_implementation_imports():
    from pcs.cache import Hierarchy
    from pcs.engine import fastpath

    assert select.get_row("reference").load() is Hierarchy
    assert select.get_row("lru-scan").load() is fastpath.run
    if COMPILED:
        from pcs.cache.native import NativeHierarchy

        assert select.get_row("compiled-hierarchy").load() is NativeHierarchy


def test_every_rows_equality_test_exists_and_is_collected(request):
    """Checked against what this session collected where it collected the test's module (conftest.COLLECTED_IDS),
    else in a child ``pytest --collect-only``."""
    from conftest import not_collected_here

    nodes = [r.equality_test for r in select.ENGINES]
    here, rest = not_collected_here(request.config, nodes)
    assert [n for n in nodes if n not in rest and n not in here] == []
    if not rest:
        return
    nodes = rest
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *nodes],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    collected = {line.strip() for line in out.stdout.splitlines()}
    for node in nodes:
        assert node in collected, (node, out.stdout[-2000:])


# -- choose: one reason per row ------------------------------------------------------------------

def test_auto_takes_the_lru_scan_for_one_sequential_lru_tier():
    row, reason = select.choose(cfg("sequential", ("gpu", "lru", 100)))
    assert (row.name, reason) == ("lru-scan", "auto: lru-scan applies")


@needs_compiled
def test_auto_takes_the_compiled_hierarchy_for_lru_tiers_otherwise():
    row, reason = select.choose(cfg("modeled", ("gpu", "lru", 100)))
    assert row.name == "compiled-hierarchy"
    assert reason == "not lru-scan: timing is modeled, it needs sequential; auto: compiled-hierarchy applies"
    row, reason = select.choose(cfg("sequential", ("gpu", "lru", 100), ("cpu", "lru", 400)))
    assert row.name == "compiled-hierarchy"
    assert reason.startswith("not lru-scan: it needs exactly one tier, got 2 (gpu:lru, cpu:lru);")


@needs_compiled
def test_auto_takes_the_compiled_hierarchy_for_compiled_policies():
    for policy in ("fifo", "slru", "sieve", "2q", "s3fifo", "arc", "lfu", "gdsf", "belady"):
        row, _ = select.choose(cfg("modeled", ("gpu", policy, 100), ("cpu", "lru", 400)))
        assert row.name == "compiled-hierarchy", policy


def test_auto_takes_the_reference_for_other_policies_python_or_huge_tiers():
    # a name no registry holds (a registered plug-in is hosted: test_auto_hosts_a_registered_plugin)
    row, reason = select.choose(cfg("sequential", ("gpu", "lru", 100), ("cpu", "myplugin", 400)))
    assert row.name == "reference"
    assert reason == ("not lru-scan: it needs exactly one tier, got 2 (gpu:lru, cpu:myplugin); "
                      "not compiled-hierarchy: it needs every tier's eviction policy registered (compiled: lru, fifo, "
                      "slru, sieve, 2q, s3fifo, arc, lfu, gdsf, belady; others hosted); got cpu:myplugin; "
                      "auto: reference applies")
    # every admission kind has a compiled twin; one retain per tier, in front of any compiled policy (§8)
    row, _ = select.choose(cfg("sequential", ("gpu", "lru", 100), ("cpu", "arc+reuse:2+tinylfu:sample=10", 400)))
    assert row.name == "compiled-hierarchy"
    row, _ = select.choose(cfg("sequential", ("gpu", "slru+retain:tokens=0-64,duration=5", 100)))
    assert row.name == "compiled-hierarchy"
    row, _ = select.choose(cfg("modeled", ("gpu", "lru", 100), ("cpu", "fifo+retain:tokens=0-64,duration=5", 400)))
    assert row.name == "compiled-hierarchy"
    label = "fifo+retain:tokens=0-64,duration=5+retain:tokens=64-128,duration=5"
    row, reason = select.choose(cfg("modeled", ("gpu", "lru", 100), ("cpu", label, 400)))
    assert row.name == "reference" and f"got cpu:{label}" in reason
    row, reason = select.choose(cfg("modeled", ("gpu", "lru", 100), native="python"))
    assert row.name == "reference" and "not compiled-hierarchy: native is python (no compiled code)" in reason
    row, reason = select.choose(cfg("modeled", ("gpu", "lru", 2**30 + 1)))
    assert row.name == "reference" and f"tier gpu has more than {2**30:,} blocks" in reason


def test_auto_hosts_a_registered_plugin(monkeypatch):
    """A registered policy without a C twin (a plug-in) runs on the compiled rows, hosted (pcs/cache/_pol_py.c);
    retain in front of it does not (retain runs compiled only in front of lru or slru)."""
    from pcs.cache import policies as reg
    from pcs.cache.policies.lru import LRUPolicy

    class Mine(LRUPolicy):
        name = "myplugin"

    monkeypatch.setitem(reg._POLICIES, "myplugin", Mine)
    row, _ = select.choose(cfg("sequential", ("gpu", "lru", 100), ("cpu", "myplugin+reuse:2", 400)))
    assert row.name == ("compiled-hierarchy" if COMPILED else "reference")
    row, reason = select.choose(cfg("sequential", ("gpu", "myplugin+retain:tokens=0-64,duration=5", 100)))
    assert row.name == "reference" and "got gpu:myplugin+retain" in reason


def test_pcs_native_environment_is_the_default(monkeypatch):
    monkeypatch.setenv("PCS_NATIVE", "python")
    row, reason = select.choose(cfg("modeled", ("gpu", "lru", 100), native=None))
    assert row.name == "reference" and "native is python" in reason


def test_native_c_refuses_an_engine_without_compiled_code(monkeypatch):
    # c asks for the compiled code (pcs/_native.py): the rows without a twin (reference, hybrid) are refused with
    # the table's reason; auto runs them (docs/semantics.md §15)
    plugin = cfg("modeled", ("gpu", "lru", 100), ("cpu", "myplugin", 400), native="c")
    with pytest.raises(ValueError, match=r"^native 'c' asks for compiled code, but this modeled replay runs on the "
                                         r"Python reference engine \(not lru-scan: .*got cpu:myplugin; auto: "
                                         r"reference applies\); use native 'auto'"):
        select.choose(plugin)
    assert select.choose(dataclasses.replace(plugin, native="auto"))[0].name == "reference"
    with pytest.raises(ValueError, match=r"native 'c' .* reference engine \(requested: general \(alias of "):
        select.choose(cfg("sequential", ("gpu", "lru", 100), native="c"), "general")
    hyb = select.RunConfig("sequential", (("gpu", "lru", 100),), "c", ("full_attention", "sliding_window"), True,
                           pools=2)
    with pytest.raises(ValueError, match=r"the Python hybrid engine \(not lru-scan: .*; not compiled-hybrid: it "
                                         r"needs one shared pool per tier .*, got 2 pools per tier; auto: hybrid"):
        select.choose(hyb)
    monkeypatch.setenv("PCS_NATIVE", "c")
    with pytest.raises(ValueError, match="^PCS_NATIVE=c asks for compiled code"):
        select.choose(dataclasses.replace(plugin, native=None))
    if COMPILED:   # a row with a compiled twin runs under c
        assert select.choose(cfg("modeled", ("gpu", "lru", 100), native=None))[0].name == "compiled-hierarchy"


def test_requested_engines_and_aliases():
    seq_one = cfg("sequential", ("gpu", "lru", 100))
    assert select.choose(seq_one, "reference") == (select.get_row("reference"), "requested: reference")
    assert select.choose(seq_one, "general") == (select.get_row("reference"),
                                                 "requested: general (alias of reference)")
    assert select.choose(seq_one, "fast") == (select.get_row("lru-scan"), "requested: fast (alias of lru-scan)")
    with pytest.raises(ValueError, match="engine 'lru-scan' cannot run this replay: timing is modeled"):
        select.choose(cfg("modeled", ("gpu", "lru", 100)), "lru-scan")
    with pytest.raises(ValueError, match="engine 'compiled-hierarchy' cannot run this replay: it needs every "
                                         "tier's eviction policy registered .*; got gpu:myplugin\\+reuse:2"):
        select.choose(cfg("sequential", ("gpu", "myplugin+reuse:2", 100)), "compiled-hierarchy")
    with pytest.raises(ValueError, match="unknown engine 'turbo'; valid: auto, lru-scan, compiled-step, compiled-hierarchy, "
                                         "reference, compiled-hybrid, hybrid, general, fast"):
        select.choose(seq_one, "turbo")


def test_fall_back_keeps_the_earlier_reasons():
    c = cfg("sequential", ("gpu", "lru", 4))
    scan_row, reason = select.choose(c)
    row, why = select.fall_back(c, scan_row, "block hashes are not chained", reason)
    assert row.name == ("compiled-hierarchy" if COMPILED else "reference")
    assert why.startswith("not lru-scan: block hashes are not chained (found while scanning); auto: ")


# -- each refusal names its own cause (a baseline's reason once named the one-tier rule) ----------------

def test_lru_scan_names_tier_count_admission_and_policy_apart():
    """lru-scan's rule (docstring table): sequential, ONE tier, policy lru, no admission; each broken part is named
    alone: two lru tiers break only the count, an admission policy on lru only the admission, fifo only the policy."""
    scan = select.get_row("lru-scan")
    assert scan.applies(cfg("sequential", ("gpu", "lru", 1), ("cpu", "lru", 2))) == \
        "it needs exactly one tier, got 2 (gpu:lru, cpu:lru)"
    assert scan.applies(cfg("sequential", ("gpu", "lru+reuse:2", 1))) == \
        "it takes no admission policy, got gpu:lru+reuse:2"
    assert scan.applies(cfg("sequential", ("gpu", "fifo", 1))) == "it needs policy lru, got gpu:fifo"


def test_compiled_rows_name_policy_admission_and_retain_apart():
    """compiled-hierarchy: an unregistered eviction policy, an admission kind without a compiled twin and two
    retains are three rules (pcs/cache/native.py); compiled-hybrid: admission and another policy are two."""
    hier = select.get_row("compiled-hierarchy").applies
    assert hier(cfg("sequential", ("gpu", "nosuch", 1))).startswith(
        "it needs every tier's eviction policy registered")
    assert hier(cfg("sequential", ("gpu", "lru+nosuchgate:3", 1))).startswith(
        "it needs admission policies with a compiled twin (reuse, selective, tinylfu, retain); got gpu:lru+nosuchgate:3")
    two = "lru+retain:tokens=0-64,duration=5+retain:tokens=64-128,duration=5"
    assert hier(cfg("sequential", ("gpu", two, 1))) == \
        f"it takes one retain per tier, in front of a compiled eviction policy; got gpu:{two}"
    hyb = lambda pol: select.RunConfig("sequential", (("gpu", pol, 1),), "auto", ("full_attention", "w"), True)
    if _native.built("grouphier"):
        assert select.get_row("compiled-hybrid").applies(hyb("lru+reuse:2")) == \
            "it takes no admission policy, got gpu:lru+reuse:2"
        assert select.get_row("compiled-hybrid").applies(hyb("slru")) == "it needs policy lru, got gpu:slru"


@pytest.mark.skipif(not (_native.built("lruscan") and COMPILED), reason="the compiled scans are not built")
def test_baseline_reason_names_why_the_two_tier_scan_does_not_take_it():
    """A modeled run's sequential baseline on two lru tiers with write-back runs in the one-pass scan
    (docs/semantics.md §15); otherwise its reason names the broken condition -- write-through, admission, another
    policy, a third tier -- not lru-scan's one-tier rule, which two lru tiers are allowed to break here."""
    from pcs.engine.seqbase import POLICY_WALK_REASON

    reqs = make_requests([([1, 2], 8), ([1, 3], 8)])
    two = ["gpu=4blocks", "cpu=8blocks"]
    expect = {
        "write-through": (dict(write_policy="through"),
                          "the sequential baseline's two-tier scan needs write-back, got write-through"),
        "admission": (dict(admit=["cpu=reuse:2"]),
                      "the sequential baseline's two-tier scan takes no admission policy, got cpu:lru+reuse:2"),
        "policy": (dict(policy="slru"),
                   "the sequential baseline's two-tier scan needs policy lru, got gpu:slru, cpu:slru"),
    }
    for cause, (kw, why) in expect.items():
        s = replay(reqs, tiers=two, timing="modeled", compute_mode="infinite", **kw).summary
        assert s.baseline_engine == "compiled-hierarchy", cause
        # two slru tiers sharing one table: the hierarchy's sequential rules run as the lean walk, and the reason says so
        walk = f"; {POLICY_WALK_REASON}" if cause == "policy" else ""
        assert s.baseline_engine_reason == f"not lru-scan: {why}; auto: compiled-hierarchy applies{walk}", cause
        assert "exactly one tier" not in s.baseline_engine_reason, cause
    s = replay(reqs, tiers=two + ["disk=16blocks"], timing="modeled", compute_mode="infinite").summary
    assert s.baseline_engine_reason.startswith("not lru-scan: it needs one tier with policy lru, or two for a "
                                               "modeled run's sequential baseline, got 3 (gpu:lru, cpu:lru, disk:lru);")
    # the run itself (modeled) keeps its own reason: timing
    assert s.engine_reason.startswith("not lru-scan: timing is modeled, it needs sequential;")


# -- through pcs.replay: the run, the baseline, the runtime fallback -----------------------------

NOT_CHAINED = [([5], 4), ([9, 5], 8)]   # r1: block 9 never seen, then block 5 cached: not a prefix chain


def test_replay_records_the_run_and_the_baseline_engine():
    reqs = make_requests([([1, 2], 8), ([1, 3], 8)])
    s = replay(reqs, tiers=["gpu=4blocks"], timing="modeled").summary    # the step scheduler (compute step)
    assert (s.engine, s.baseline_engine) == (STEP_ENGINE, "lru-scan")
    s = replay(reqs, tiers=["gpu=4blocks"], timing="modeled", compute_mode="infinite").summary
    assert (s.engine, s.baseline_engine) == ("compiled-hierarchy" if COMPILED else "reference", "lru-scan")
    assert s.baseline_engine_reason == "auto: lru-scan applies"
    s = replay(reqs, tiers=["gpu=4blocks"], timing="sequential").summary
    assert (s.engine, s.engine_reason) == ("lru-scan", "auto: lru-scan applies")
    assert (s.baseline_engine, s.baseline_engine_reason) == (s.engine, s.engine_reason)
    s = replay(reqs, tiers=["gpu=4blocks"], timing="modeled", engine="general").summary
    assert (s.engine, s.baseline_engine) == ("reference", "reference")
    assert s.engine_reason == s.baseline_engine_reason == "requested: general (alias of reference)"


def test_replay_records_the_lru_scan_falling_back_at_run_time():
    reqs = make_requests(NOT_CHAINED)
    s = replay(reqs, tiers=["gpu=4blocks"], timing="sequential").summary
    assert s.engine == ("compiled-hierarchy" if COMPILED else "reference")
    assert s.engine_reason.startswith("not lru-scan: block hashes are not chained (a cached block follows an "
                                         "uncached one) (found while scanning); auto: ")
    # the numbers are the reference's: r0 misses block 5, r1 misses 9 and then 5 is not a prefix hit
    assert (s.hit_blocks, s.block_misses) == (0, 3)
    with pytest.raises(ValueError, match="engine 'fast' cannot run this replay: block hashes are not chained"):
        replay(reqs, tiers=["gpu=4blocks"], timing="sequential", engine="fast")


def test_replay_native_python_runs_no_compiled_hierarchy():
    reqs = make_requests([([1, 2], 8), ([1, 3], 8)])
    s = replay(reqs, tiers=["gpu=4blocks", "cpu=8blocks"], timing="modeled", native="python").summary
    assert s.engine == "reference" and "native is python" in s.engine_reason
    with pytest.raises(ValueError, match="unknown native 'fortran'; valid: auto, c, python"):
        replay(reqs, native="fortran")


# -- command line: --engine from the table (aliases accepted), --native, curve --kernel ----------

def _json(*args):
    res = CliRunner().invoke(cli, list(args))
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_cli_engine_aliases_and_native():
    base = ["replay", str(DEFAULT_TRACE), "--tier", "gpu=200blocks", "--timing", "sequential", "--format", "json"]
    s = _json(*base, "--engine", "fast")
    assert (s["engine"], s["engine_reason"]) == ("lru-scan", "requested: fast (alias of lru-scan)")
    g = _json(*base, "--engine", "general", "--native", "python")
    assert (g["engine"], g["engine_reason"]) == ("reference", "requested: general (alias of reference)")
    assert g["hit_ratio"] == s["hit_ratio"] and g["sequential_hit_ratio"] == s["sequential_hit_ratio"]
    res = CliRunner().invoke(cli, base + ["--engine", "turbo"])
    assert res.exit_code == 2 and "turbo" in res.output


def test_cli_native_c_without_a_compiled_engine_is_one_line_exit_2():
    base = ["replay", str(DEFAULT_TRACE), "--tier", "gpu=200blocks", "--timing", "sequential", "--engine", "reference"]
    res = CliRunner().invoke(cli, base + ["--native", "c"])
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    assert res.output.strip().splitlines() == [
        "pcs: error: --native c asks for compiled code, but this sequential replay runs on the Python reference "
        "engine (requested: reference); use --native auto to run it there"]   # the CLI names its own options
    assert _json(*base, "--native", "auto", "--format", "json")["engine"] == "reference"


def test_curve_native_and_its_older_name_kernel():
    from pcs.curves.api import curve

    a = curve(DEFAULT_TRACE, capacities=[100], native="python", belady=False)
    b = curve(DEFAULT_TRACE, capacities=[100], kernel="python", belady=False)
    assert a.kernel == b.kernel == "python" and a.rows == b.rows
    with pytest.raises(ValueError, match="name the same switch"):
        curve(DEFAULT_TRACE, capacities=[100], native="python", kernel="c")
    for opt in ("--native", "--kernel"):       # --kernel: hidden, still accepted
        out = _json("curve", str(DEFAULT_TRACE), "--capacities", "100blocks", "--no-belady", opt, "python",
                    "--format", "json")
        assert out["kernel"] == "python" and out["rows"] == a.to_dict()["rows"]
