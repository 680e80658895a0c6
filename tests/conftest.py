"""Shared fixtures: where the real public traces live (read, never copied).

They live in ``../shared/traces`` beside the repository; the environment variable
``PCS_SHARED_TRACES`` points the fixtures elsewhere. A missing directory, e.g.
``PCS_SHARED_TRACES=/nonexistent python -m pytest -q``, runs the suite as a fresh
clone without ``../shared`` would: the tests that need a real trace skip, and every
exact check still runs on its twin over a committed sample (``traces/``).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_TRACES = Path(os.environ.get("PCS_SHARED_TRACES") or ROOT.parent / "shared" / "traces")
MOONCAKE_CONV = SHARED_TRACES / "mooncake-fast25" / "conversation_trace.jsonl"
AZURE_CONV = SHARED_TRACES / "azure-llm-2023" / "AzureLLMInferenceTrace_conv.csv"
SAMPLE_EXACT = ROOT / "traces" / "sample_exact.jsonl"


@pytest.fixture(scope="session")
def mooncake_conv() -> Path:
    """Path of the real Mooncake FAST'25 conversation trace; skips where absent."""
    if not MOONCAKE_CONV.exists():
        pytest.skip(f"real Mooncake trace not found at {MOONCAKE_CONV} (it lives in ../shared/traces or $PCS_SHARED_TRACES)")
    return MOONCAKE_CONV


@pytest.fixture(scope="session")
def azure_conv() -> Path:
    """Path of the Azure LLM 2023 conversation CSV; skips where absent."""
    if not AZURE_CONV.exists():
        pytest.skip(f"Azure trace not found at {AZURE_CONV} (it lives in ../shared/traces or $PCS_SHARED_TRACES)")
    return AZURE_CONV


@pytest.fixture(scope="session", params=["sample", "mooncake"])
def exact_trace(request) -> Path:
    """The trace of an exact check, twice: the committed ``traces/sample_exact.jsonl``
    (always there: a fresh clone runs the check) and the real Mooncake conversation
    trace (skips where absent). Sizes tuned to a trace come from ``helpers.per_trace``."""
    if request.param == "mooncake":
        return request.getfixturevalue("mooncake_conv")
    return SAMPLE_EXACT


def _trace_skips(terminalreporter) -> int:
    """How many tests skipped because a real trace under ``SHARED_TRACES`` is absent (their reasons name it)."""
    n = 0
    for rep in terminalreporter.stats.get("skipped", []):
        longrepr = rep.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        n += "../shared/traces" in reason
    return n


#: The two variables that point at the shared traces: the tests' folder, the benchmarks' Mooncake file.
TRACE_VARIABLES = ("PCS_SHARED_TRACES=DIR (the folder holding mooncake-fast25/, azure-llm-2023/; tests) and "
                   "PCS_MOONCAKE_TRACE=FILE (the Mooncake conversation trace; benchmarks/)")


#: Test modules whose module fixture is costly to start: under ``pytest -n 2`` each runs whole on one worker, so
#: the fixture starts once, not once per worker (a local Ray: two at once on two cores also time out starting;
#: a headless Chromium; the dozen-point sweep; interpreters cached across tests).
ONE_WORKER_MODULES = frozenset({
    "tests/sweep/test_sweep_ray.py",
    "tests/sweep/test_sweep_run.py",
    "tests/report/test_html_browser.py",
    "tests/cli/test_import_hygiene.py",
})


def pytest_xdist_make_scheduler(config, log):
    """``-n N`` (xdist's default ``--dist load``): tests are handed out one at a time to the worker that is free,
    the modules of :data:`ONE_WORKER_MODULES` each as one unit, these first (xdist orders units by size).
    (``--dist loadgroup`` would do this from ``xdist_group`` marks, but with pytest 9 its group suffix on the
    node id is lost and the marks are ignored.) Any other ``--dist`` keeps xdist's own scheduler."""
    if config.getoption("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class OneWorkerModules(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in ONE_WORKER_MODULES else nodeid

        def mark_test_complete(self, node, item_index: int, duration: float = 0) -> None:
            # a finished unit is dropped: xdist counts the pending tests over every unit a worker was ever given,
            # after every test (quadratic when each test is a unit); only the pending ones are ever read
            super().mark_test_complete(node, item_index, duration)
            work = self.assigned_work.get(node, {})
            scope = self._split_scope(self.registered_collections[node][item_index])
            if scope in work and all(work[scope].values()):
                del work[scope]

        def _reschedule(self, node) -> None:
            # a worker started in place of a crashed one is rescheduled (schedule() runs again when another worker's
            # collection ends) before its own collection is in: xdist's unit scheduler then raised KeyError (an
            # INTERNALERROR that ended the run); it gets work when its collection is in
            if node in self.registered_collections:
                super()._reschedule(node)

        def remove_node(self, node):
            # a worker that died (a crash in a compiled twin): its running test is reported crashed once, as under
            # --dist load; xdist's unit scheduler would hand that test to the next worker, which dies in turn
            workload = self.assigned_work.pop(node)
            pending = [nid for unit in workload.values() for nid, done in unit.items() if not done]
            if not pending:
                return None
            for scope, unit in workload.items():
                rest = {nid: False for nid, done in unit.items() if not done and nid != pending[0]}
                if rest:
                    self.workqueue[scope] = rest
            for other in self.assigned_work:
                self._reschedule(other)
            return pending[0]

    return OneWorkerModules(config, log)


#: Every test node id the session collected (``tests/x.py::test_y[p]``), before ``-k`` / ``-m`` deselect any: the
#: tests that check node ids named elsewhere (docs/semantics.md, pcs.engine.select's equality tests) read it rather
#: than collect those modules again in a child pytest (:func:`not_collected_here`).
COLLECTED_IDS = pytest.StashKey[frozenset]()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    """Stash :data:`COLLECTED_IDS` (first: the ``-k`` / ``-m`` deselection runs after this hook)."""
    config.stash[COLLECTED_IDS] = frozenset(item.nodeid for item in items)


def not_collected_here(config, node_ids) -> tuple[frozenset, list]:
    """(the node ids this session collected, the ids of ``node_ids`` in a module it did not collect: those a test
    collects in a child ``pytest --collect-only``)."""
    here = config.stash.get(COLLECTED_IDS, frozenset())
    modules = {i.split("::", 1)[0] for i in here} - _selected_in_part(config)
    return here, [i for i in node_ids if i.split("::", 1)[0] not in modules]


def _selected_in_part(config) -> set:
    """The modules the command line named with a node id (``tests/x.py::test_y``): collected in part, so a test
    of theirs the session lacks may still exist (:func:`not_collected_here` has them collected in a child)."""
    out = set()
    for arg in config.args:
        if "::" in arg:
            path = Path(arg.split("::", 1)[0]).resolve()
            out.add(path.relative_to(config.rootpath).as_posix() if path.is_relative_to(config.rootpath) else arg)
    return out


def pytest_report_header(config):
    """One line before the run when the shared traces are absent: a run cut short still says why tests skip."""
    if not MOONCAKE_CONV.exists():
        return (f"real traces: not found at {SHARED_TRACES}: the tests needing them skip (a line at the end counts "
                f"them); set {TRACE_VARIABLES}")
    return None


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """One line at the end of the run when real-trace tests skipped: a quiet ``s`` is easy to miss."""
    n = _trace_skips(terminalreporter)
    if n:
        terminalreporter.write_line(f"{n} tests skipped: ../shared traces not found at {SHARED_TRACES} (the "
                                    f"real Mooncake and Azure traces); set {TRACE_VARIABLES}", yellow=True)


# pcs report's input JSON, shared by the tests of its checks (tests/report, tests/curves): the payloads made once
# a session, the call that writes one and draws its page. Tests here are no package, so a fixture is how two test
# files share them.

@pytest.fixture(scope="session")
def one_request_curve(tmp_path_factory) -> dict:
    """``pcs curve --format json`` of one request of 1,100 tokens with hash ids [7, 8, 9], block 512: 3 block
    accesses; the last token is never a hit, so 1,099 tokens can hit, 2 whole blocks (1,024 tokens):
    cacheable_blocks 2, both distinct. Exact (sample_rate 1.0), no model. Do not change it: copy it."""
    from click.testing import CliRunner

    from pcs.cli.main import cli

    path = tmp_path_factory.mktemp("one_request") / "t.jsonl"
    path.write_text('{"timestamp": 0, "input_length": 1100, "output_length": 1, "hash_ids": [7, 8, 9]}\n')
    r = CliRunner().invoke(cli, ["curve", str(path), "--capacities", "4blocks", "--format", "json"])
    assert r.exit_code == 0, r.output
    payload = json.loads(r.stdout)
    assert (payload["block_accesses"], payload["cacheable_blocks"], payload["distinct_cacheable_blocks"],
            payload["sample_rate"]) == (3, 2, 2, 1.0)
    return payload


@pytest.fixture(scope="session")
def sample_replay() -> dict:
    """``pcs replay traces/sample_chat.jsonl --format json`` (defaults). Do not change it: copy it."""
    from click.testing import CliRunner

    from pcs.cli.main import cli

    r = CliRunner().invoke(cli, ["replay", str(ROOT / "traces" / "sample_chat.jsonl"), "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


@pytest.fixture
def report_json(tmp_path):
    """``report_json(payload)``: ``payload`` written to ``tmp_path/in.json`` and ``pcs report`` run on it, the
    page ``tmp_path/page.html``; returns (the click result, the JSON file's path as a string)."""
    from click.testing import CliRunner

    from pcs.cli.main import cli

    def run(payload: dict):
        path = tmp_path / "in.json"
        path.write_text(json.dumps(payload))
        return CliRunner().invoke(cli, ["report", str(path), "-o", str(tmp_path / "page.html")]), str(path)

    return run
