"""The lean sequential walk of two fifo / slru tiers (``pcs/engine/_seqpol.c``, :func:`pcs.engine.seqbase.policy_walk`)
against the compiled hierarchy's ``run_sequential`` and the Python reference.

The reference is :class:`pcs.engine.engine.ReplayEngine` in sequential timing over the Python
:class:`pcs.cache.Hierarchy` (docs/semantics.md §3-§8, §12): the same hit blocks per request, on a case worked out
by hand (FIFO's number kept across a re-insert into the CPU tier), on hypothesis traces (fifo, slru and mixed tiers,
slru's protected share 0.5 and 0, every rule set, tiers from 0 blocks) and on the Mooncake trace (skipped when
absent; against ``run_sequential``, and through ``pcs.replay``'s baseline).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import ALL_RULES, SETTINGS, UNIT_RULES, req, traces
from pcs.blocks import BlockRules
from pcs.cache import Hierarchy, Tier, make_policy
from pcs.cache.admission import make_admission
from pcs.engine import seqbase
from pcs.engine.chunks import iter_chunks
from pcs.engine.engine import ReplayEngine

native = pytest.importorskip("pcs.cache.native")
if native._lruhier is None:
    pytest.skip("pcs.cache._lruhier is not compiled", allow_module_level=True)
_seqpol = pytest.importorskip("pcs.engine._seqpol")


def _tiers(caps, specs):
    return [Tier(f"t{i}", c, make_policy(p, c)) for i, (c, p) in enumerate(zip(caps, specs))]


def _reference(source, caps, specs, rules):
    eng = ReplayEngine(Hierarchy(_tiers(caps, specs), "back"), "sequential")
    for ch in iter_chunks(source, rules):
        eng.feed(ch)
    return np.frombuffer(eng.close().columns["hit_blocks"], np.int64).tolist()


def _both(source, caps, specs, rules, sparse=False):
    """(run_sequential's hit blocks per request, the lean walk's), over the same arrays; ``sparse``: every id
    multiplied by a large odd number first (distinct ids stay distinct, far apart: the walk's hashed table instead
    of its entry per id)."""
    h = native.NativeHierarchy(_tiers(caps, specs), "back")
    walk = seqbase.policy_walk(h)
    assert walk is not None
    _parts, call = seqbase._whole_call(source, rules)
    if sparse:
        call = (call[0] * np.uint64(0x9E3779B97F4A7C15),) + call[1:]
    a, b = np.empty_like(call[4]), np.empty_like(call[4])
    h.run_sequential(*call[:4], a)
    _seqpol.run(*call[:4], b, *walk)
    h._check()
    return a.tolist(), b.tolist()


def test_fifo_keeps_a_number_across_a_reinsert_worked_by_hand():
    """fifo on both tiers, GPU 2 blocks, CPU 2, every id may hit. Block:number per tier, numbered in order of
    entry: 1: GPU 2:0 1:1 (released tail first). 2: victim 2, CPU 2:0; GPU 1:1 3:2. 3: 1 a GPU hit (pinned), 2
    restored (its slot from victim 3, which goes down: CPU 2:0 3:1); GPU 1:1 2:3, 2 hits. 4: three new blocks, two
    slots (truncated): victims 1, 2 go down as one batch, 2 already in the CPU tier keeps number 0, 1 new needs a
    slot: victim 3 (2 set aside); CPU 2:0 1:2. 5: victim 5 goes down, the CPU victim is 2 (number 0), not 1. 6: 2 is
    gone (no hit; a FIFO that moved it to the back on its re-insert would have evicted 1 and hit); its slot's victim
    4 goes down, the CPU victim 1 (number 2): CPU 5:3 4:4. 7: 5 is restored, 1 hit."""
    reqs = [req([1, 2]), req([3]), req([1, 2]), req([4, 5, 6]), req([7]), req([2]), req([5])]
    want = [0, 0, 2, 0, 0, 0, 1]
    assert _reference(reqs, [2, 2], ["fifo", "fifo"], UNIT_RULES) == want
    assert _both(reqs, [2, 2], ["fifo", "fifo"], UNIT_RULES) == (want, want)


def test_the_walk_takes_exactly_the_shared_fifo_slru_tiers():
    def walk(caps, specs, wp="back", tiers=None):
        return seqbase.policy_walk(native.NativeHierarchy(tiers or _tiers(caps, specs), wp))

    assert walk([2, 5], ["fifo", "slru"]) == (("fifo", "slru"), (2, 5), (0, 4))
    assert walk([10, 7], ["slru:protected_share=0.5", "fifo"]) == (("slru", "fifo"), (10, 7), (5, 0))
    assert walk([2, 4], ["fifo", "fifo"], "through") is None
    assert walk([2, 4, 8], ["fifo"] * 3) is None and walk([2], ["fifo"]) is None
    assert walk([2, 4], ["lru", "lru"]) is None and walk([2, 4], ["fifo", "arc"]) is None
    gated = _tiers([2, 4], ["fifo", "fifo"])
    gated[1] = Tier("t1", 4, make_policy("fifo", 4), make_admission("reuse:2"))
    assert walk(None, None, tiers=gated) is None


@SETTINGS
@given(traces(), st.lists(st.integers(0, 12), min_size=2, max_size=2),
       st.lists(st.sampled_from(["fifo", "slru", "slru:protected_share=0.5", "slru:protected_share=0"]),
                min_size=2, max_size=2), st.sampled_from(ALL_RULES))
def test_walk_equals_run_sequential_and_python_on_random_traces(reqs, caps, specs, rules):
    want = _reference(reqs, caps, specs, rules)
    assert _both(reqs, caps, specs, rules) == (want, want)
    assert _both(reqs, caps, specs, rules, sparse=True) == (want, want)


@pytest.mark.parametrize("specs", [("fifo", "fifo"), ("slru", "slru"), ("fifo", "slru"), ("slru", "fifo")])
def test_walk_equals_run_sequential_on_mooncake(mooncake_conv, specs):
    """The bench's tiers (2,372 + 11,921 blocks), the default 16,384 + 65,536 and small ones that truncate and
    overflow."""
    from pcs.trace import open_trace

    tr = open_trace(mooncake_conv)
    batches = list(tr.iter_batches())

    class Src:
        block_size = tr.block_size

        def iter_batches(self):
            return iter(batches)

    for caps, sparse in (([2372, 11921], False), ([2372, 11921], True), ([16384, 65536], False), ([50, 20], False),
                         ([1000, 0], True)):
        a, b = _both(Src(), caps, specs, BlockRules(), sparse)
        assert a == b, (caps, sparse, next(i for i, (x, y) in enumerate(zip(a, b)) if x != y))


@pytest.mark.parametrize("specs", [("fifo", "fifo"), ("slru", "slru"), ("fifo", "slru"),
                                   ("slru:protected_share=0", "fifo")])
def test_walk_equals_the_python_reference_on_traces(exact_trace, specs):
    """The walk and ``run_sequential`` against the Python reference (the event loop over
    :class:`pcs.cache.Hierarchy`) on the committed sample and on the Mooncake trace: tiers that hold most of the
    reuse, tiers that truncate the longest requests and overflow, an empty CPU tier (ids made sparse there: the
    walk's hashed table)."""
    from helpers import per_trace
    from pcs.trace import open_trace

    tr = open_trace(str(exact_trace))
    grid = per_trace(exact_trace, sample=[([1000, 6000], False), ([50, 20], False), ([300, 0], True)],
                     mooncake=[([2372, 11921], False), ([50, 20], False), ([1000, 0], True)])
    for caps, sparse in grid:
        want = _reference(tr, caps, specs, BlockRules())
        assert sum(want) > 0
        a, b = _both(tr, caps, specs, BlockRules(), sparse)
        assert a == want and b == want, (caps, next(i for i, (x, y) in enumerate(zip(b, want)) if x != y))


def test_replay_baseline_equals_the_reference_engines_on_a_sample():
    """``pcs.replay``'s summary over two fifo / slru tiers (its baseline: the walk, said in the reason) against the
    reference engine's (native python: the Python hierarchy for the run and the baseline), on a committed sample."""
    import pcs
    from helpers import ROOT, without_engine_keys

    for pol in ("fifo", "slru"):
        kw = dict(tiers=["gpu=300blocks", "cpu=2000blocks"], policy=pol)
        got = pcs.replay(str(ROOT / "traces" / "sample_exact.jsonl"), **kw).summary
        want = pcs.replay(str(ROOT / "traces" / "sample_exact.jsonl"), native="python", **kw).summary
        assert got.baseline_engine_reason.endswith(seqbase.POLICY_WALK_REASON)
        assert want.baseline_engine == "reference" and want.sequential_hit_ratio > 0
        assert without_engine_keys(got.to_dict()) == without_engine_keys(want.to_dict())


@pytest.mark.parametrize("pol", ["fifo", "slru"])
def test_replay_baseline_equal_with_and_without_the_walk(mooncake_conv, pol, monkeypatch):
    """``pcs.replay``'s summary (the gap split reads the baseline) the same when the walk is refused."""
    import pcs

    kw = dict(tiers=["gpu=auto", "cpu=2TB"], policy=pol, compute_mode="step")
    taken, walk = [], seqbase.policy_walk
    monkeypatch.setattr(seqbase, "policy_walk", lambda h: taken.append(walk(h)) or taken[-1])
    with_walk = pcs.replay(mooncake_conv, **kw).summary.to_dict()
    assert taken and all(t is not None for t in taken)      # asked when the baseline is placed and when it runs
    monkeypatch.setattr(seqbase, "policy_walk", lambda h: None)
    without = pcs.replay(mooncake_conv, **kw).summary.to_dict()
    # the JSON says which ran: the walk's words end the baseline's reason, and only there
    assert with_walk.pop("baseline_engine_reason") == without.pop("baseline_engine_reason") + "; " + \
        seqbase.POLICY_WALK_REASON
    assert with_walk == without


def test_bad_arguments_are_refused():
    u, i = np.zeros(2, np.uint64), np.zeros(1, np.int64)
    walk = (("fifo", "slru"), (2, 4), (0, 3))
    with pytest.raises(ValueError, match="len\\(offsets\\)"):
        _seqpol.run(u, np.array([0, 1], np.int64), np.zeros(2, np.int64), i, i, *walk)
    with pytest.raises(TypeError, match="8-byte"):
        _seqpol.run(u, np.array([0, 1], np.int32), i, i, i, *walk)
    with pytest.raises(ValueError, match="offsets must rise"):
        _seqpol.run(u, np.array([0, 3], np.int64), i, i, i.copy(), *walk)
    with pytest.raises(ValueError, match="'fifo' or 'slru'"):
        _seqpol.run(u, np.array([0, 1], np.int64), i, i, i.copy(), ("lru", "fifo"), (2, 4), (0, 0))
    with pytest.raises(ValueError, match="capacities"):
        _seqpol.run(u, np.array([0, 1], np.int64), i, i, i.copy(), ("fifo", "fifo"), (-1, 4), (0, 0))
    with pytest.raises(TypeError, match="run\\(hashes"):
        _seqpol.run(u)
