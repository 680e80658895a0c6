"""Benchmark: start-up of the replay path -- ``pcs replay --help`` and a replay of a tiny trace, as processes.

Each case runs ``--runs`` times as a fresh process running what the ``pcs``
console script runs (``pcs.cli.main:main``; no shell), alternating the cases; per case
the median wall seconds and the median CPU seconds of the child (user + sys,
``resource.getrusage(RUSAGE_CHILDREN)``): on a shared machine the CPU figure
is the steadier one. Also ``python -c pass`` (the interpreter alone) and, from
one ``python -X importtime`` run of each case, the modules imported, the self
import time summed per package with the module that first imported it (so
numpy's import is charged to numpy, not to the pcs module that happened to
import it first) and the heaviest top-level imports by cumulative time, so a
regression names its culprit; and from one more run of each case, the CPU seconds spent creating dataclasses
and in the garbage collector (``breakdown``: on Python 3.11 each dataclass compiles its generated methods,
about a third of a small replay's CPU in 2026-12, before pcs's records compiled their methods on first use:
``pcs._dataclass``), how many generated methods were made and how many of those ran code that an earlier process
saved (``methods_reused``: ``pcs._dataclass`` keeps the code beside the ``.pyc`` files; the warm-up run writes it
as it writes them). The tiny trace is traces/formats/mooncake_conv_8.jsonl (8 Mooncake requests).

The children run with ``PYTHONDONTWRITEBYTECODE`` removed from their
environment, so the warm-up run writes the ``.pyc`` files an installed pcs
has (with it set, every run compiles ~100 modules: +0.15-0.3 s of CPU that no
user pays). ``--peer DIR`` also times the same cases from another checkout
(e.g. an export of main with its compiled extensions), run in DIR with DIR
first on ``PYTHONPATH``, alternated with this one in every round (``peer_*`` keys).

Target: each case <= 0.25 s wall. The last line printed is one
JSON object.

Usage: python benchmarks/bench_startup.py [--runs 7] [--peer DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from common import machine_info  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "traces" / "formats" / "mooncake_conv_8.jsonl"
#: The ``pcs`` console script's own code (``pcs`` = ``pcs.cli.main:main``), run by this interpreter.
PCS = [sys.executable, "-c", "import sys; from pcs.cli.main import main; sys.argv[0] = 'pcs'; main()"]
CASES = {
    "python_pass": [sys.executable, "-c", "pass"],
    "replay_help": [*PCS, "replay", "--help"],
    "replay_tiny": [*PCS, "replay", str(TINY)],
}
#: Modules the replay path must not import before it needs them.
UNWANTED = ("pyarrow", "matplotlib", "jinja2", "ray", "pandas", "pcs.report.plot", "pcs.sweep", "pcs.curves")


def _env(peer: str | None) -> dict[str, str]:
    """The children's environment: .pyc files written and read (as installed), ``peer`` first on the path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if peer:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (peer, env.get("PYTHONPATH"))))
    return env


def _run(cmd: list[str], peer: str | None = None) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=peer or ROOT, env=_env(peer))
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _import_rows(stderr: str) -> list[tuple[int, int, int, str]]:
    """``python -X importtime`` lines as (depth, self us, cumulative us, module), in the order printed: a module
    after the modules it imported (depth 0 = imported by the script itself; CPython's ``import_find_and_load``
    indents two spaces per level)."""
    rows = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line or "cumulative" in line:
            continue
        own, cum, name = line[len("import time:"):].split("|")
        rows.append(((len(name) - len(name.lstrip()) - 1) // 2, int(own), int(cum), name.strip()))
    return rows


def _importer(rows: list[tuple[int, int, int, str]], package: str) -> str:
    """The module outside ``package`` that first imported it (the parent of its first module), or ``<script>``."""
    first = next(i for i, r in enumerate(rows) if r[3].split(".")[0] == package)
    depth = rows[first][0]
    for d, _, _, name in rows[first + 1:]:
        if d < depth:
            if name.split(".")[0] != package:
                return name
            depth = d
    return "<script>"


def _imports(cmd: list[str], peer: str | None = None) -> dict:
    """Modules imported (one ``-X importtime`` run); the import time charged where it is spent: SELF time summed
    per top-level package (numpy's own modules to numpy, whoever imported it first), with the module that first
    imported each; beside it the five heaviest top-level imports by CUMULATIVE time (a pcs module's figure
    includes every package it pulled in first, so it names the door, not the cost)."""
    err = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], check=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, cwd=peer or ROOT, env=_env(peer)).stderr
    rows = _import_rows(err)
    names = [r[3] for r in rows]
    by_package: dict[str, int] = {}
    for _, own, _, name in rows:
        by_package[name.split(".")[0]] = by_package.get(name.split(".")[0], 0) + own
    heavy = sorted(by_package.items(), key=lambda kv: -kv[1])[:6]
    top = sorted(((cum, name) for d, _, cum, name in rows if d == 0), reverse=True)[:5]
    unwanted = sorted({n for n in names if any(n == u or n.startswith(u + ".") for u in UNWANTED)})
    return {"modules": len(names), "self_us_by_package": dict(heavy),
            "first_imported_by": {p: _importer(rows, p) for p, _ in heavy},
            "top_level_cumulative_us": {n: c for c, n in top}, "unwanted_imported": unwanted}


#: Run before the command in one more child: CPU seconds spent creating dataclasses (``dataclasses._process_class``:
#: its generated ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, frozen ``__setattr__`` / ``__delattr__`` are
#: each compiled by ``exec`` on Python 3.11), the generated methods made and their CPU seconds wherever that
#: happens (``dataclasses._create_fn``: inside the decorator, or on first use for pcs's own records,
#: ``pcs._dataclass``, whose code an earlier process may have saved: ``methods_reused`` of them), and in the
#: cyclic garbage collector (``gc.callbacks``), beside the child's CPU seconds, printed on stderr at exit.
_BREAKDOWN = """
import atexit, dataclasses, gc, json, sys, time
_acc = {"dataclass_cpu_s": 0.0, "dataclasses": 0, "methods_compiled": 0, "methods_compile_cpu_s": 0.0,
        "gc_cpu_s": 0.0, "gc_collections": 0}
_gc_t0 = [0.0]
_create = getattr(dataclasses, "_create_fn", None)
def _counted(fn, secs, calls):
    def timed(*a, **k):
        t0 = time.thread_time()
        try:
            return fn(*a, **k)
        finally:
            _acc[secs] += time.thread_time() - t0
            _acc[calls] += 1
    return timed
_timed = _counted(dataclasses._process_class, "dataclass_cpu_s", "dataclasses")
if _create is not None:
    dataclasses._create_fn = _counted(_create, "methods_compile_cpu_s", "methods_compiled")
def _gc(phase, info):
    if phase == "start":
        _gc_t0[0] = time.thread_time()
    else:
        _acc["gc_cpu_s"] += time.thread_time() - _gc_t0[0]
        _acc["gc_collections"] += 1
dataclasses._process_class = _timed
gc.callbacks.append(_gc)
def _report():
    saved = getattr(sys.modules.get("pcs._dataclass"), "COUNTS", {})
    sys.stderr.write("\\nBREAKDOWN " + json.dumps({**_acc, "methods_reused": saved.get("reused", 0),
                                                    "cpu_s": time.process_time()}))
atexit.register(_report)
"""


def _breakdown(cmd: list[str], peer: str | None = None) -> dict:
    """One more run of ``cmd`` (a ``python -c`` command) under :data:`_BREAKDOWN`: CPU seconds of dataclass
    creation and of the garbage collector, rounded to 0.1 ms, and the child's own CPU seconds."""
    code = _BREAKDOWN + cmd[2]
    err = subprocess.run([cmd[0], "-c", code, *cmd[3:]], check=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, cwd=peer or ROOT, env=_env(peer)).stderr
    got = json.loads(err.rsplit("BREAKDOWN ", 1)[1])
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in got.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=common.count, default=7)
    ap.add_argument("--peer", help="another checkout to time alongside (first on PYTHONPATH)")
    a = ap.parse_args()
    cases = {k: (cmd, None) for k, cmd in CASES.items()}
    if a.peer:
        peer = common.need_tree(a.peer, "bench_startup", "--peer")
        cases.update({f"peer_{k}": (CASES[k], peer) for k in ("replay_help", "replay_tiny")})
    for cmd, peer in cases.values():  # warm the page cache and .pyc files
        _run(cmd, peer)
    times: dict[str, list] = {k: [] for k in cases}
    names = list(cases)
    for r in range(a.runs):
        for k in (names if r % 2 == 0 else names[::-1]):
            times[k].append(_run(*cases[k]))
    out = {}
    for k, ts in times.items():
        out[k] = {"wall_s": round(statistics.median(t[0] for t in ts), 4),
                  "cpu_s": round(statistics.median(t[1] for t in ts), 4)}
        if k != "python_pass":
            out[k].update(_imports(*cases[k]), breakdown=_breakdown(*cases[k]))
        heavy = "; ".join(f"{p} {us / 1e3:.0f} ms self (first by {out[k]['first_imported_by'][p]})"
                          for p, us in list(out[k].get("self_us_by_package", {}).items())[:3])
        print(f"{k:17s} wall {out[k]['wall_s']:.3f} s  cpu {out[k]['cpu_s']:.3f} s" + (f"  imports: {heavy}" if heavy else ""))
        if "breakdown" in out[k]:
            b = out[k]["breakdown"]
            print(f"{'':17s} of {b['cpu_s']:.3f} CPU s (one more run): dataclass creation {b['dataclass_cpu_s']:.3f} s "
                  f"({b['dataclasses']} classes; {b['methods_compiled']} methods made, "
                  f"{b.get('methods_reused', 0)} of them from saved code, "
                  f"{b['methods_compile_cpu_s']:.3f} s), garbage collector {b['gc_cpu_s']:.3f} s "
                  f"({b['gc_collections']} passes)")
    target = 0.25
    print(json.dumps({"bench": "startup", "runs": a.runs, **out, "target_wall_s": target,
                      "target_met_wall": all(out[k]["wall_s"] <= target for k in ("replay_help", "replay_tiny")),
                      "target_met_cpu": all(out[k]["cpu_s"] <= target for k in ("replay_help", "replay_tiny")),
                      "load_avg_1m": round(os.getloadavg()[0], 2), "machine": machine_info()}))


if __name__ == "__main__":
    common.run(main, "bench_startup")
