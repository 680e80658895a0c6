"""The switch itself: ``pcs.replay(native="c")`` against ``native="python"``, the whole pipeline at once.

``native="python"`` runs no compiled code (pcs/_native.py): the reference engine (or ``lru-scan``'s Python kernel,
or the ``hybrid`` row), the Python next-turn search (pcs.engine.turns), the numpy prefill table, the Python
sequential baseline. ``native="c"`` runs the compiled row the table picks (pcs.engine.select) with every twin it
uses: the C step loop, the compiled hierarchy, the one-pass scan (one tier; two lru tiers as a modeled run's
baseline), the lean fifo / slru walk (pcs/engine/_seqpol.c), the compiled next-turn walk while decoding, the
compiled prefill table, the cache groups in C. Each twin has its own tests; these hold the twins together to the
Python pipeline, per configuration, on the committed ``traces/sample_exact.jsonl``, on the Mooncake trace (skipped
where absent: ``PCS_SHARED_TRACES``) and on hypothesis traces; the CLI's ``--native`` and ``PCS_NATIVE`` once, on a
committed sample.

Equality is exact: the summary's JSON but for the keys naming the engine (``SUMMARY_KEYS``, the only keys allowed
to differ, docs/semantics.md §15) and every per-request column value for value (NaN equal to NaN: sequential runs
have no finish time). The twins repeat the reference's arithmetic in the same order (pcs/_native.py), so no float
tolerance.
"""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import MOONCAKE_CONV
from helpers import ALL_RULES, ROOT, tables_equal, traces, without_engine_keys
from pcs import _native
from pcs.engine.api import replay
from pcs.engine.select import PYTHON_KERNEL
from pcs.engine.seqbase import POLICY_WALK_REASON

pytestmark = pytest.mark.skipif(bool(_native.missing()), reason=f"compiled twins not built: {_native.missing()}")

#: name -> (replay keywords, (engine, baseline engine) under native c). Under native python the engine is
#: ``reference`` (``hybrid`` for a hybrid model, ``lru-scan`` on its Python kernel for one sequential lru tier).
CONFIGS = {
    "default": ({}, ("compiled-step", "lru-scan")),                    # step scheduler; 2-tier scan baseline
    "sequential": ({"timing": "sequential"}, ("compiled-hierarchy", "compiled-hierarchy")),
    "one-tier": ({"timing": "sequential", "tiers": ["gpu=300blocks"]}, ("lru-scan", "lru-scan")),
    "through-3": ({"write_policy": "through", "tiers": ["gpu=300blocks", "cpu=800blocks", "ssd=3000blocks"]},
                  ("compiled-step", "compiled-hierarchy")),
    "fifo": ({"policy": "fifo", "tiers": ["gpu=300blocks", "cpu=2000blocks"]}, ("compiled-step", "compiled-hierarchy")),
    "slru": ({"policy": "slru", "tiers": ["gpu=300blocks", "cpu=2000blocks"]}, ("compiled-step", "compiled-hierarchy")),
    "infinite": ({"compute_mode": "infinite"}, ("compiled-hierarchy", "lru-scan")),
    "hybrid": ({"model": "gemma-3-27b", "tiers": ["gpu=20GB", "cpu=60GB"]}, ("compiled-hybrid", "compiled-hybrid")),
}
#: the configurations run on the Mooncake trace too (the hybrid one there: tests/engine/test_hybridstep_native.py,
#: ~10 CPU-s for its Python run)
MOONCAKE_CONFIGS = [c for c in CONFIGS if c != "hybrid"]


def _python_engine(kw: dict) -> str:
    if "model" in kw:
        return "hybrid"
    return "lru-scan" if kw.get("timing") == "sequential" and len(kw.get("tiers", ())) == 1 else "reference"


def assert_switch_equal(trace, kw: dict, engines: tuple[str, str]) -> tuple:
    """``replay(trace, native=...)`` under ``python`` and ``c``: the engines expected (``engines``: the c run's
    (engine, baseline engine)), summaries' JSON equal but for the engine keys, per-request tables equal. Returns
    the two results (python, c)."""
    py, c = replay(trace, native="python", **kw), replay(trace, native="c", **kw)
    assert (c.summary.engine, c.summary.baseline_engine) == engines, c.summary.engine_reason
    assert py.summary.engine == py.summary.baseline_engine == _python_engine(kw), py.summary.engine_reason
    if py.summary.engine == "lru-scan":                   # the scan's Python kernel, said in its reason
        assert PYTHON_KERNEL + "native is python)" in py.summary.engine_reason
    else:
        assert "native is python" in py.summary.engine_reason
    if kw.get("policy") in ("fifo", "slru"):              # the baseline ran as the lean walk (pcs/engine/_seqpol.c)
        assert c.summary.baseline_engine_reason.endswith(POLICY_WALK_REASON)
    assert json.dumps(without_engine_keys(py.summary.to_dict()), default=str) == \
        json.dumps(without_engine_keys(c.summary.to_dict()), default=str)
    tables_equal(py.requests, c.requests)
    return py, c


@pytest.mark.parametrize("config", list(CONFIGS))
def test_committed_sample(config):
    kw, engines = CONFIGS[config]
    py, _ = assert_switch_equal(str(ROOT / "traces" / "sample_exact.jsonl"), kw, engines)
    assert py.summary.hit_ratio > 0 and py.summary.tiers[0].evicted_blocks > 0      # the tiers fill and hit


@pytest.mark.parametrize("config", MOONCAKE_CONFIGS)
def test_mooncake(mooncake_conv, config):
    kw, engines = CONFIGS[config]
    py, _ = assert_switch_equal(str(mooncake_conv), kw, engines)
    assert py.summary.tiers[0].evicted_blocks > 0


@st.composite
def _drawn(draw) -> tuple[dict, tuple[str, str]]:
    """One configuration of :data:`CONFIGS` (not hybrid) on tiers of a few blocks: the GPU 4-16 (a prompt of the
    drawn traces needs up to 5 blocks, one step up to the budget's), lower tiers 0-24."""
    name = draw(st.sampled_from(MOONCAKE_CONFIGS))
    kw, engines = CONFIGS[name]
    n = len(kw.get("tiers", ["gpu", "cpu"]))
    tiers = [f"gpu={draw(st.integers(4, 16))}blocks"] + [f"{t}={draw(st.integers(0, 24))}blocks"
                                                         for t in ("cpu", "ssd")[:n - 1]]
    return dict(kw, tiers=tiers), engines


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reqs=traces(max_requests=20), drawn=_drawn(), rules=st.sampled_from(ALL_RULES))
def test_hypothesis_traces(reqs, drawn, rules):
    # chained ids with output tokens (next turns to find), arrivals 0-0.2 s apart (queues, waits), every rule set
    kw, engines = drawn
    assert_switch_equal(reqs, dict(kw, rules=rules), engines)


def test_cli_native_and_pcs_native_give_the_same_outputs(tmp_path):
    # the CLI's --native and PCS_NATIVE reach every twin as the API's native= does: the JSON and the
    # --requests-out table the same under python and c, either way of asking (replay_command repeats the
    # command line, --native included)
    from click.testing import CliRunner

    from pcs.cli.main import cli

    args = ["replay", str(ROOT / "traces" / "sample_chat.jsonl"), "--tier", "gpu=300blocks", "--tier", "cpu=2000blocks",
            "--format", "json", "-q"]
    out = {}
    for how, native in (("opt", "python"), ("opt", "c"), ("env", "python"), ("env", "c")):
        table = tmp_path / f"{how}-{native}.csv"
        extra, env = (["--native", native], {}) if how == "opt" else ([], {"PCS_NATIVE": native})
        res = CliRunner().invoke(cli, args + extra + ["--requests-out", str(table)], env=env)
        assert res.exit_code == 0, res.output
        d = json.loads(res.stdout)
        assert d["engine"] == ("compiled-step" if native == "c" else "reference"), d["engine_reason"]
        assert d.pop("replay_command").endswith(f" --native {native}" if how == "opt" else "cpu=2000blocks")
        out[how, native] = (json.dumps(without_engine_keys(d)), table.read_bytes())
    assert out["opt", "python"] == out["opt", "c"] == out["env", "python"] == out["env", "c"]
