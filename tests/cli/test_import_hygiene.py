"""Start-up hygiene: the replay path imports only what it uses (figures in benchmarks/bench_startup.py).

Each case runs in a fresh interpreter (a module imported by an earlier test
would hide the import) and lists what it imported: ``pcs replay --help``
needs no pyarrow, plotting, templating, Ray or report modules, and a replay
that writes no ``--requests-out`` table needs no pyarrow (its per-request
table is built on first access of ``ReplayResult.requests``).
"""
from __future__ import annotations

import functools
import json
import subprocess
import sys

import pytest

from helpers import ROOT, SMALL_TRACE

HEAVY = ("pyarrow", "matplotlib", "jinja2", "ray", "pandas")

_PROBE = """
import json, sys
from pcs.cli.main import cli
try:
    cli(args=sys.argv[1:], prog_name="pcs", standalone_mode=False)
except SystemExit:
    pass
sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)))
"""


@functools.lru_cache(maxsize=None)
def imported(*args: str) -> frozenset[str]:
    """The modules a fresh ``pcs ARGS`` imported; one interpreter per distinct ARGS (``replay --help`` serves two
    tests: what it imports does not depend on which test asks)."""
    out = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, cwd=ROOT,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return frozenset(json.loads(out.stderr.rsplit("MODULES ", 1)[1]))


def top(names: set[str]) -> set[str]:
    return {n.split(".")[0] for n in names}


@pytest.mark.slow
def test_replay_help_imports_no_heavy_or_report_module():
    mods = imported("replay", "--help")
    assert not top(mods) & set(HEAVY)
    assert not any(m.startswith("pcs.report") for m in mods)


@pytest.mark.slow
def test_replay_without_requests_out_imports_no_pyarrow():
    pytest.importorskip("simdjson")  # without it the JSONL reader falls back to pyarrow.json (pcs.trace.jsonfast)
    mods = imported("replay", str(SMALL_TRACE))
    assert not top(mods) & set(HEAVY)
    assert "pcs.engine.api" in mods  # the replay did run


@pytest.mark.slow
def test_replay_help_imports_no_numpy():
    """The help lists every choice from pcs.choices and the numpy-free submodules: the
    interpreter alone plus click is ~0.05 s of CPU, numpy another ~0.1 s, so the help must not load it."""
    mods = imported("replay", "--help")
    assert "numpy" not in top(mods) and "pyarrow" not in top(mods)
    assert "pcs.engine.select" in mods and "pcs.model.layouts" in mods  # the help did read the tables it shows


def _fresh(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.mark.slow
def test_light_submodules_of_lazy_packages_load_no_numpy():
    """pcs.cache and pcs.model import their names on first use (pcs._lazy), so the --dtype names and the cache
    groups' rules load without numpy; reading a package name still imports it."""
    code = ("import sys; import pcs.model.layouts, pcs.cache.groups, pcs.engine.select; "
            "print('numpy' in sys.modules); import pcs.cache as c; c.Hierarchy; print('numpy' in sys.modules)")
    assert _fresh(code).split() == ["False", "True"]


@pytest.mark.slow
def test_a_submodule_spelled_like_a_function_does_not_hide_it():
    """pcs.model.footprint is both a submodule and the function pcs.footprint() returns; importing the submodule
    first (as the engine does) must leave ``from pcs.model import footprint`` the function, as before the
    package became lazy."""
    code = ("import importlib, types; importlib.import_module('pcs.model.footprint'); "
            "from pcs.model import footprint; import pcs; "
            "print(isinstance(footprint, types.FunctionType), pcs.footprint is footprint)")
    assert _fresh(code).split() == ["True", "True"]


def test_choices_equal_the_registries():
    """pcs.choices holds the names --help shows; the modules whose rules they are re-export them, and the
    policy registry's built-in classes carry exactly these names, in this order (vLLM-style registry:
    pcs/cache/policies/__init__.py)."""
    from pcs import choices
    from pcs.cache import hierarchy, policies
    from pcs.engine import engine
    from pcs.fleet import fleet
    from pcs.trace import api

    registered, listed = tuple(cls.name for cls in policies._BUILTIN), choices.BUILTIN_POLICIES
    assert registered == listed, (
        "a built-in policy is named in both pcs/cache/policies/__init__.py (_BUILTIN) and pcs/choices.py "
        f"(BUILTIN_POLICIES), in the same order: only in the registry {sorted(set(registered) - set(listed))}, "
        f"only in pcs.choices {sorted(set(listed) - set(registered))}, registry order {registered}")
    assert policies.POLICY_ALIASES == choices.POLICY_ALIASES and policies.DEFAULT_POLICY == choices.DEFAULT_POLICY
    assert hierarchy.WRITE_POLICIES is choices.WRITE_POLICIES and engine.TIMINGS is choices.TIMINGS
    assert api.FORMATS is choices.TRACE_FORMATS and api.ON_ERROR is choices.ON_ERROR
    assert fleet.MAX_INSTANCES == choices.MAX_INSTANCES == 4096
    from pcs.fleet.routers import router_names
    assert router_names() == choices.ROUTER_NAMES


@pytest.mark.slow
def test_a_replay_of_built_in_policies_reads_no_entry_points():
    """The plug-in entry points are read on a lookup miss or a full listing (pcs.cache.policies), not for lru:
    importlib.metadata (~0.04 s of CPU) stays unloaded; tests/cache/test_policies_plugin.py runs a plug-in."""
    mods = imported("replay", str(SMALL_TRACE), "-q", "--format", "json")
    assert "pcs.cache.policies" in mods and "importlib.metadata" not in mods


@pytest.mark.slow
def test_a_replay_loads_no_fleet_module_nor_tempfile():
    """The check of the compiled twins loads pcs.fleet._route, whose package imports its names on first use
    (pcs._lazy), so the fleet modules stay unloaded; tempfile is imported only to spool stdin."""
    mods = imported("replay", str(SMALL_TRACE), "--format", "json")
    assert "pcs.fleet._route" in mods  # the twin check did run (the command was not --quiet)
    assert not {"pcs.fleet.fleet", "pcs.fleet.summary", "pcs.fleet.routers", "tempfile"} & mods


@pytest.mark.slow
@pytest.mark.parametrize("preset, expected", [(None, "1"), ("3", "3")])
def test_the_cli_starts_openblas_on_one_thread_unless_told(preset, expected):
    """pcs calls no BLAS routine, so the CLI asks OpenBLAS for one thread (not one per core) before numpy loads;
    a value the user set is kept."""
    code = ("import os, sys; os.environ.pop('OPENBLAS_NUM_THREADS', None); "
            + (f"os.environ['OPENBLAS_NUM_THREADS'] = '{preset}'; " if preset else "")
            + "import pcs.cli.main; print(os.environ['OPENBLAS_NUM_THREADS'], 'numpy' in sys.modules)")
    assert _fresh(code).split() == [expected, "False"]


#: Modules a replay of a small trace must not import (each imported where it is used; tests below name why).
DEFERRED = {
    "numpy.ma": "np.percentile / np.unique load it: the summaries' percentiles use pcs.percentiles",
    "pcs.trace.tokens": "the token reader (and its hashing, hashlib): the format defaults live in pcs.choices",
    "hashlib": "block hashing of token traces only",
    "shutil": "pcs.outfile copies into a device with it (it imports zlib, bz2, lzma)",
    "csv": "--format csv and a measured-prefill CSV only",
    "traceback": "an internal error's report only",
    "pcs.model.mla": "an MLA model's records (pcs.model.hfconfig loads them for one; the default model is GQA)",
    "pcs.model.state": "a hybrid model's recurrent-state record",
    "pcs.engine.hybridstep": "the hybrid models' step loop",
    "pcs.analysis.envelope": "a link's break-even bandwidth, for a link that restored something (here none did)",
    "fractions": "pcs.analysis.envelope's exact comparisons",
}


@pytest.mark.slow
def test_a_replay_defers_what_it_does_not_use():
    """A replay of a Mooncake sample (the default table output: percentiles, the dtype comparison) loads none of
    :data:`DEFERRED` (benchmarks/bench_startup.py measured each: numpy.ma alone ~20 ms of CPU at load 10)."""
    mods = imported("replay", str(SMALL_TRACE))
    assert "pcs.engine.schedstats" in mods and "pcs.engine.summary" in mods   # the summaries did run
    loaded = {m: why for m, why in DEFERRED.items() if m in mods}
    assert not loaded, f"imported by a replay, though deferred: {loaded}"


_GC_PROBE = """
import gc, sys
{prelude}
import pcs.cli.common as common
seen = []
emit = common.emit
def recording_emit(*args, **kwargs):
    seen.append((gc.isenabled(), gc.get_freeze_count() > 0))
    return emit(*args, **kwargs)
common.emit = recording_emit
import pcs.cli.replay
pcs.cli.replay.emit = recording_emit
sys.argv = ["pcs", "replay", sys.argv[1], "-q", "--format", "json"]
from pcs.cli.main import main
try:
    main()
except SystemExit:
    pass
sys.stderr.write("SEEN " + repr(seen))
"""


@pytest.mark.slow
@pytest.mark.parametrize("prelude, expected", [("", [(True, True)]), ("gc.disable()", [(False, False)])])
def test_the_console_script_holds_the_collector_only_while_starting(prelude, expected):
    """``pcs`` (pcs.cli.main.main) turns the cyclic GC off while it starts and, once the command line is parsed,
    freezes what it loaded and turns it back on: the command runs with the collector on; a caller that had
    turned it off keeps it off (nothing frozen)."""
    out = subprocess.run([sys.executable, "-c", _GC_PROBE.format(prelude=prelude), str(SMALL_TRACE)],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stderr.rsplit("SEEN ", 1)[1] == repr(expected)


_RELEASE_PROBE = """
import json, sys
import pcs.cli.common as common
release, at_release = common.release_gc, []
def recording_release():
    at_release.extend(sys.modules)
    release()
common.release_gc = recording_release
sys.argv = ["pcs", *sys.argv[1:]]
from pcs.cli.main import main
try:
    main()
except SystemExit:
    pass
later = sorted(set(sys.modules) - set(at_release))
sys.stderr.write("\\nRELEASE " + json.dumps([bool(at_release), later]))
"""


@pytest.mark.slow
@pytest.mark.parametrize("quiet", [(), ("-q",)])
def test_a_replay_loads_its_modules_before_the_collector_is_released(quiet):
    """``pcs replay`` imports the modules a replay of the default kind runs (``preload`` of
    :class:`pcs.cli.common.PcsCommand`) before :func:`pcs.cli.main.release_gc` freezes start-up: the 8-request
    sample (text table; with ``-q`` the twins are imported too, only their note is not printed) imports no pcs
    module after the release -- before this, ~70 pcs modules (the engine, the trace readers, the model presets, the report)
    were imported with the collector on: 15 of the command's 19 collections walked them
    (benchmarks/bench_startup.py ``breakdown``)."""
    out = subprocess.run([sys.executable, "-c", _RELEASE_PROBE, "replay", str(SMALL_TRACE), *quiet],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    released, later = json.loads(out.stderr.rsplit("RELEASE ", 1)[1])
    assert released
    assert [m for m in later if m.startswith("pcs")] == []


_EAGER_PROBE = """
import dataclasses, json, sys
import pcs._dataclass as deferred
eager, made = [], dataclasses._process_class
def recording(cls, *args, **kwargs):
    if dataclasses._create_fn is not deferred._deferred_create_fn and cls.__module__.startswith("pcs"):
        eager.append(cls.__module__ + "." + cls.__qualname__)
    return made(cls, *args, **kwargs)
dataclasses._process_class = recording
from pcs.cli.main import cli
try:
    cli(args=sys.argv[1:], prog_name="pcs", standalone_mode=False)
except SystemExit:
    pass
sys.stderr.write("\\nEAGER " + json.dumps(eager))
"""


@pytest.mark.slow
@pytest.mark.parametrize("args", [("replay", "--help"), ("replay", str(SMALL_TRACE), "--format", "json")])
def test_the_replay_path_compiles_dataclass_methods_on_first_use(args):
    """Every pcs dataclass a replay (or its help) creates is made by pcs._dataclass.dataclass, which compiles a
    generated method when first used: the standard decorator compiles ~5.6 methods a class (72 classes, a third
    of a small replay's instructions in benchmarks/bench_startup.py), a replay uses ~50 of those ~400."""
    out = subprocess.run([sys.executable, "-c", _EAGER_PROBE, *args], capture_output=True, text=True, cwd=ROOT,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    eager = json.loads(out.stderr.rsplit("EAGER ", 1)[1])
    assert eager == [], f"made by the standard decorator on the replay path (use pcs._dataclass): {eager}"


def _cli_modules() -> list[str]:
    return sorted(f"pcs.cli.{p.stem}" for p in (ROOT / "pcs" / "cli").glob("*.py") if p.stem != "__init__")


@pytest.mark.slow
def test_every_cli_module_imports_alone():
    """Each pcs.cli module imports first in a fresh interpreter (review 45: ``import pcs.cli.tracetools`` was a
    circular import -- the trace group registers the tools' commands as it loads, and the tools imported the group
    first)."""
    probe = ("import importlib, sys, subprocess\n"
             "bad = []\n"
             "for m in sys.argv[1:]:\n"
             "    r = subprocess.run([sys.executable, '-c', 'import ' + m], capture_output=True, text=True)\n"
             "    if r.returncode:\n"
             "        bad.append(m + ': ' + (r.stderr.strip().splitlines() or ['?'])[-1])\n"
             "print('\\n'.join(bad))\n")
    out = subprocess.run([sys.executable, "-c", probe, *_cli_modules()], capture_output=True, text=True, cwd=ROOT,
                         timeout=600)
    assert out.returncode == 0 and out.stdout.strip() == "", out.stdout + out.stderr
