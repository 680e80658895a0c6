"""The passes a hybrid replay's two runs share (pcs/engine/passes.py; docs/semantics.md §3.1, §12).

The run with the hybrid rules and the all-full-attention comparison line read the same decoded trace, chunks,
next-turn search and single-sequence results. Sharing them must not change either run:

- the comparison line equals the replay with ``hybrid_kv_cache_manager="disabled"`` (docs/hybrid.md: "the same
  run with every layer as full attention"), run on its own with nothing shared;
- the single-sequence and ideal ratios do not depend on the tiers or the model's groups (§12: one sequence
  through an unbounded cache), so the hybrid run's equal the disabled run's;
- :class:`SharedPasses` makes each pass once and keeps the first value it is given.
"""
from __future__ import annotations

import dataclasses
import threading

import pytest

from helpers import ROOT
from pcs.engine.api import replay
from pcs.engine.decoded import Decoded
from pcs.engine.passes import SharedPasses

SAMPLE = ROOT / "traces" / "sample_chat.jsonl"
CASES = [("gemma-3-27b", {}), ("gpt-oss-120b", {"compute_mode": "infinite"}),
         ("qwen3-next-80b-a3b", {"timing": "sequential"}), ("gemma-3-27b", {"write_policy": "through"})]


@pytest.mark.parametrize("model,kw", CASES)
def test_comparison_line_is_the_disabled_replay(model, kw):
    tiers = ["gpu=2GB", "cpu=20GB"]
    s = replay(str(SAMPLE), model=model, tiers=tiers, **kw).summary
    alone = replay(str(SAMPLE), model=model, tiers=tiers, hybrid_kv_cache_manager="disabled", **kw).summary
    full = s.hybrid.full_attention
    assert full["hit_ratio"] == alone.hit_ratio
    assert full["sequential_hit_ratio"] == alone.sequential_hit_ratio
    assert full["hit_ratio_per_tier"] == dict(alone.hit_ratio_per_tier)
    for t in alone.tiers:
        assert full["tiers"][t.name]["resident_bytes_peak"] == t.resident_bytes_peak
        assert full["tiers"][t.name]["capacity_blocks"] == t.capacity_blocks
    # single-sequence and ideal: independent of the tiers and the groups (§12)
    assert s.single_sequence_hit_ratio == alone.single_sequence_hit_ratio
    assert s.ideal_hit_ratio == alone.ideal_hit_ratio


def test_shared_passes_make_once_and_keep_the_first():
    p = SharedPasses(str(SAMPLE))
    assert isinstance(p.source, Decoded) and SharedPasses(p.source).source is p.source
    calls = []
    assert p.get(("x", 1), lambda: calls.append(1) or "a") == "a"
    assert p.get(("x", 1), lambda: calls.append(1) or "b") == "a"
    assert calls == [1] and p.has(("x", 1)) and not p.has(("x", 2))
    assert p.put(("y",), 3) == 3 and p.put(("y",), 4) == 3


@pytest.mark.parametrize("model,kw", CASES[:2] + CASES[3:])
def test_comparison_line_beside_the_run_is_the_line_run_first(model, kw, monkeypatch):
    # the comparison line runs on a worker thread beside the hybrid run (pcs.engine.api._full_attention_line);
    # with PCS_THREADS=off it runs first, inline, as before: both summaries and the run's per-request columns equal.
    # The line's tiers are fixed when it starts: gemma-3-27b's hybrid pages (2,384 per 100 GB against 384 whole
    # blocks, docs/hybrid.md) would give it other capacities if it read the run's page bytes.
    tiers = ["gpu=2GB", "cpu=20GB"]
    got = {}
    for mode in ("off", "on"):
        monkeypatch.setenv("PCS_THREADS", mode)
        r = replay(str(SAMPLE), model=model, tiers=tiers, **kw)
        got[mode] = (dataclasses.asdict(dataclasses.replace(r.summary, threads=None)), r.requests.to_pydict())
    assert got["on"] == got["off"]
    assert got["on"][0]["hybrid"]["full_attention"]["tiers"]["gpu"]["capacity_blocks"] == \
        replay(str(SAMPLE), model=model, tiers=tiers, hybrid_kv_cache_manager="disabled", **kw).summary.tiers[0] \
        .capacity_blocks


def test_shared_passes_make_a_pass_once_across_threads():
    # a second thread asking for a pass being made waits for it: make runs once, both get its value
    p = SharedPasses(str(SAMPLE))
    started, release, calls, got = threading.Event(), threading.Event(), [], []

    def slow():
        calls.append(1)
        started.set()
        release.wait(10)
        return "made"

    first = threading.Thread(target=lambda: got.append(p.get(("k",), slow)))
    first.start()
    assert started.wait(10)
    second = threading.Thread(target=lambda: got.append(p.get(("k",), lambda: calls.append(2) or "other")))
    second.start()
    second.join(0.2)
    assert second.is_alive()       # waiting for the first thread's make
    release.set()
    first.join(10)
    second.join(10)
    assert calls == [1] and got == ["made", "made"]
