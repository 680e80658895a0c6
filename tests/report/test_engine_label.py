"""Every report says which engine ran (docs/semantics.md §15): the replay JSON's reason names the Python kernel of
``lru-scan`` when that ran (its name alone does not say it), the text report has a note naming the engine and the
sequential baseline's, and the fleet JSON has a top-level ``engines`` key (the instances' engines, each once).

The expected strings are written from the selection table's rules, not copied from a run: one sequential ``lru``
tier takes the first row, ``lru-scan`` (reason ``auto: lru-scan applies``); ``native="python"`` keeps that row
(its kernel has a Python twin) and the reason adds ``(its Python kernel: native is python)``; a modeled run under
the step scheduler on compiled LRU tiers takes ``compiled-step`` and its two-tier baseline ``lru-scan``.
"""
from __future__ import annotations

import pytest

from helpers import make_requests, req
from pcs import _native
from pcs.engine import select
from pcs.engine.api import replay
from pcs.fleet import fleet_replay
from pcs.report.fleet import render_fleet
from pcs.report.replay import engine_note, render_replay

COMPILED = _native.built("lruhier") and _native.built("stepsched")
needs_compiled = pytest.mark.skipif(not COMPILED, reason="the compiled hierarchy or step loop is not built")
needs_scan = pytest.mark.skipif(not _native.built("lruscan"), reason="pcs.engine._lruscan is not built")
STEP = dict(model="llama-3.1-8b", hardware="h100-sxm", tp=1)


def _one_tier(native: str) -> select.RunConfig:
    return select.RunConfig("sequential", (("gpu", "lru", 100),), native)


@needs_scan
def test_lru_scan_reason_says_nothing_more_when_its_compiled_kernel_runs():
    row, reason = select.choose(_one_tier("auto"))
    assert (row.name, reason) == ("lru-scan", "auto: lru-scan applies")
    assert select.engine_label(row.name, reason) == "lru-scan"


def test_lru_scan_reason_names_its_python_kernel_under_native_python():
    row, reason = select.choose(_one_tier("python"))
    assert (row.name, reason) == ("lru-scan", "auto: lru-scan applies (its Python kernel: native is python)")
    assert select.engine_label(row.name, reason) == "lru-scan (its Python kernel: native is python)"
    # requested by name: the same words after the request
    row, reason = select.choose(_one_tier("python"), "lru-scan")
    assert reason == "requested: lru-scan (its Python kernel: native is python)"


def test_replay_json_and_text_say_the_python_kernel_ran():
    reqs = make_requests([([1, 2], 8), ([1, 3], 8)])
    s = replay(reqs, tiers=["gpu=4blocks"], timing="sequential", native="python").summary
    assert (s.engine, s.engine_reason) == ("lru-scan", "auto: lru-scan applies (its Python kernel: native is python)")
    assert (s.baseline_engine, s.baseline_engine_reason) == (s.engine, s.engine_reason)
    note = "note: engine lru-scan (its Python kernel: native is python), sequential baseline the same (why: " \
           "engine_reason, baseline_engine_reason in --format json)"
    assert note in render_replay(s.to_dict()).splitlines()


def test_engine_note_names_the_run_and_the_baseline():
    d = {"engine": "compiled-step", "engine_reason": "not lru-scan: timing is modeled, it needs sequential; "
         "auto: compiled-step applies", "baseline_engine": "lru-scan", "baseline_engine_reason": select.TWO_TIER_SCAN}
    assert engine_note(d) == ("engine compiled-step, sequential baseline lru-scan (why: engine_reason, "
                              "baseline_engine_reason in --format json)")
    assert engine_note({"engine": "reference", "engine_reason": "requested: reference"}) == \
        "engine reference (why: engine_reason in --format json)"


@needs_compiled
def test_fleet_json_names_the_instances_engines_once():
    # block size 4; round-robin on 3 instances: A -> 0, B -> 1, instance 2 idle (no summary, no engine)
    reqs = [req([1, 2], 0.0, prompt=8, out=0, bs=4), req([1, 2, 3], 10.0, prompt=12, out=0, bs=4)]
    s = fleet_replay(reqs, instances=3, router="round-robin", **STEP).summary
    assert s.instance_summaries[2] is None
    assert s.to_dict()["engines"] == ["compiled-step"]
    assert "note: engine compiled-step (why: instance_summaries[i].engine_reason in --format json)" \
        in render_fleet(s.to_dict()).splitlines()


def test_fleet_json_with_a_shared_tier_names_the_shared_run_engine():
    reqs = [req([1, 2], 0.0, prompt=8, out=0, bs=4), req([1, 2, 3], 10.0, prompt=12, out=0, bs=4)]
    s = fleet_replay(reqs, instances=2, router="round-robin", shared_tier="remote=1TB", write_policy="through",
                     **STEP).summary
    assert s.shared_tier.engine == "reference"          # a shared tier runs the reference hierarchies (§17.1)
    assert s.to_dict()["engines"] == ["reference"]
