"""The sequential baseline in C (:func:`pcs.engine.seqbase.sequential_baseline`) against the event loop.

The reference is :class:`pcs.engine.engine.ReplayEngine` in sequential timing over the Python
:class:`pcs.cache.Hierarchy` (docs/semantics.md §3-§8, §12): the same hit blocks per request and the
same ledger counters, on hypothesis traces (1-3 lru tiers, both write policies, every rule set, batches
of a few requests), on the committed samples and on the Mooncake trace (skipped when absent).
"""
from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import ALL_RULES, SETTINGS, traces
from pcs.blocks import BlockRules
from pcs.cache import Hierarchy, Tier, make_policy
from pcs.engine import seqbase
from pcs.engine.chunks import iter_chunks
from pcs.engine.engine import ReplayEngine
from pcs.trace import open_trace
from pcs.trace.batches import as_batches

native = pytest.importorskip("pcs.cache.native")
if native._lruhier is None:
    pytest.skip("pcs.cache._lruhier is not compiled", allow_module_level=True)

LEDGER = ("num_requests", "prompt_tokens", "hit_tokens", "hit_blocks", "requests_with_hit", "block_accesses",
          "cacheable_blocks", "computed_tokens")


def _tiers(caps):
    return [Tier(f"t{i}", c, make_policy("lru", c)) for i, c in enumerate(caps)]


def _reference(source, caps, rules, wp):
    eng = ReplayEngine(Hierarchy(_tiers(caps), wp), "sequential")
    for ch in iter_chunks(source, rules):
        eng.feed(ch)
    return eng.close()


class _Recording:
    """A NativeHierarchy whose run_sequential keeps each batch's hit blocks."""

    def __init__(self, caps, wp):
        self.h = native.NativeHierarchy(_tiers(caps), wp)
        self.tiers, self.hits, self.sync = self.h.tiers, [], self.h.sync

    def run_sequential(self, hashes, off, n, cap, out):
        self.h.run_sequential(hashes, off, n, cap, out)
        self.hits.append(out.copy())


def _compare(source, caps, rules, wp):
    want = _reference(source, caps, rules, wp)
    rec = _Recording(caps, wp)
    got = seqbase.sequential_baseline(source, rec, rules)
    hits = np.concatenate(rec.hits) if rec.hits else np.zeros(0, np.int64)
    assert hits.tolist() == np.frombuffer(want.columns["hit_blocks"], np.int64).tolist()
    assert [getattr(got.ledger, k) for k in LEDGER] == [getattr(want.ledger, k) for k in LEDGER]
    rec.h._check()


@SETTINGS
@given(traces(), st.lists(st.integers(0, 12), min_size=1, max_size=3), st.sampled_from(ALL_RULES),
       st.sampled_from(["back", "through"]), st.integers(1, 5))
def test_compiled_sequential_equals_the_event_loop(reqs, caps, rules, wp, rows):
    orig = seqbase.as_batches
    seqbase.as_batches = functools.partial(as_batches, rows=rows)
    try:
        _compare(reqs, caps, rules, wp)
    finally:
        seqbase.as_batches = orig


@pytest.mark.parametrize("caps", [[200, 800], [1000, 4000, 9000], [3000]])
def test_compiled_sequential_on_real_traces(exact_trace, caps):
    _compare(open_trace(str(exact_trace)), caps, BlockRules(), "back")
    _compare(open_trace(str(exact_trace)), caps[:2], BlockRules(), "through")


def test_bad_buffers_are_refused():
    h = native.NativeHierarchy(_tiers([4]), "back")
    z = np.zeros(1, np.int64)
    with pytest.raises(ValueError, match="len\\(offsets\\)"):
        h.run_sequential(np.zeros(2, np.uint64), np.zeros(3, np.int64), z, z, z)
    with pytest.raises(TypeError, match="8-byte"):
        h.run_sequential(np.zeros(2, np.uint32), np.zeros(2, np.int64), z, z, z)
    with pytest.raises(ValueError, match="offsets must rise"):
        h.run_sequential(np.zeros(2, np.uint64), np.array([0, 5], np.int64), z + 1, z, z)
