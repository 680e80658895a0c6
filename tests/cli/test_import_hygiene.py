"""Start-up hygiene: the replay path imports only what it uses (issue 19; figures in benchmarks/bench_startup.py).

Each case runs in a fresh interpreter (a module imported by an earlier test
would hide the import) and lists what it imported: ``pcs replay --help``
needs no pyarrow, plotting, templating, Ray or report modules, and a replay
that writes no ``--requests-out`` table needs no pyarrow (its per-request
table is built on first access of ``ReplayResult.requests``).
"""
from __future__ import annotations

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


def imported(*args: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, cwd=ROOT,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stderr.rsplit("MODULES ", 1)[1]))


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
