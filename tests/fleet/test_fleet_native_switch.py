"""A fleet under ``native="python"`` and with its compiled twins, on the committed sample and the Mooncake trace.

The hypothesis twins live beside each part (tests/fleet/test_route_twin.py: the routing pass;
tests/fleet/test_shared_step.py::test_compiled_step_loops_equal_the_reference: the step loops on one clock of a
shared tier, pcs.engine.stepclocked; tests/fleet/test_fleet_decode.py: the decode-aware ceilings). These hold the
same parts to the Python pipeline on real-shaped traces: ``traces/sample_exact.jsonl`` (always there) and the
Mooncake trace (skipped where absent: ``PCS_SHARED_TRACES``).

- a fleet without a shared tier: every instance's replay runs its compiled row (``compiled-step``, its baseline in
  the two-tier scan) under ``native="c"``, the reference under ``python``; the routing pass in C or in Python;
- a fleet with a shared tier: the instances' Python hierarchies on one clock (docs/semantics.md §17.1; ``c`` is
  refused there, ``auto`` runs the compiled step loops, pcs.engine.stepclocked) against ``python``.

Equality is exact: the summary's JSON but for the keys naming the engine (each instance's, the fleet's
``engines`` list and the shared tier's ``engine_reason``), and the per-request table value for value.
"""
from __future__ import annotations

import json

import pytest

from helpers import ROOT, tables_equal, without_engine_keys
from pcs import _native
from pcs.fleet import fleet_replay

pytestmark = pytest.mark.skipif(bool(_native.missing()), reason=f"compiled twins not built: {_native.missing()}")

#: name -> (fleet_replay keywords, the ``native`` of the compiled run)
CASES = {"plain": (dict(instances=3, router="cache-aware"), "c"),
         "prefix-seq": (dict(instances=4, router="prefix", timing="sequential",
                             tiers=["gpu=300blocks", "cpu=1000blocks"]), "c"),
         "shared": (dict(instances=3, router="cache-aware", shared_tier="remote=3000blocks",
                         tiers=["gpu=300blocks", "cpu=1000blocks"]), "auto")}


def _numbers(res) -> str:
    d = without_engine_keys(res.summary.to_dict())      # each instance's keys and the shared tier's engine_reason
    d.pop("engines")
    return json.dumps(d, default=str)


def assert_fleets_equal(trace, case: str, monkeypatch) -> None:
    from pcs.engine.stepclocked import ClockedNativeStepEngine

    kw, native = CASES[case]
    made, real = [], ClockedNativeStepEngine.__init__
    monkeypatch.setattr(ClockedNativeStepEngine, "__init__",
                        lambda self, *a, **k: made.append(1) or real(self, *a, **k))
    c = fleet_replay(trace, native=native, **kw)
    compiled_loops = len(made)
    py = fleet_replay(trace, native="python", **kw)
    assert len(made) == compiled_loops                                   # python: no compiled step loop
    if case == "shared":
        assert compiled_loops and "compiled" in c.summary.shared_tier.engine_reason
        assert "Python" in py.summary.shared_tier.engine_reason
    else:
        assert set(c.summary.engines) == {"compiled-step" if "timing" not in kw else "compiled-hierarchy"}
        assert set(py.summary.engines) == {"reference"}
    assert py.summary.hit_ratio > 0
    assert _numbers(c) == _numbers(py)
    tables_equal(c.requests, py.requests)


@pytest.mark.parametrize("case", list(CASES))
def test_committed_sample(case, monkeypatch):
    assert_fleets_equal(str(ROOT / "traces" / "sample_exact.jsonl"), case, monkeypatch)


@pytest.mark.parametrize("case", list(CASES))
def test_mooncake(mooncake_conv, case, monkeypatch):
    assert_fleets_equal(str(mooncake_conv), case, monkeypatch)
