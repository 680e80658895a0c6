"""One table for two tiers that both run fifo or slru (``pcs/cache/_lruhier_polshare.h``, ``ps_open``): a block has
one entry whichever tiers hold it, a demotion and a restore are flags, and each tier's policy keeps its own fields
(the CPU tier's in an entry array beside the table). The policy calls are those of a table per tier, so the
compiled hierarchy must still equal the Python reference (docs/semantics.md §8) -- worked out by hand below for the
cases only the shared table has (a block in both tiers; a CPU victim the GPU tier holds pinned), and on hypothesis
traces and the Mooncake trace against the Python hierarchy. The other policies, three tiers, write-through,
admission gates and retain keep one table per tier.
"""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pcs.blocks import BlockRules
from pcs.cache import Hierarchy, Tier, make_policy
from pcs.cache.admission import make_admission
from helpers import SETTINGS, assert_trace_replays_equal, replay_twins, stress_trace, trace_context, traces

native = pytest.importorskip("pcs.cache.native")
if native._lruhier is None:
    pytest.skip("pcs.cache._lruhier is not compiled", allow_module_level=True)


def _tiers(caps, policies):
    return [Tier(f"t{i}", c, make_policy(p, c)) for i, (c, p) in enumerate(zip(caps, policies))]


def _shared(caps, policies, wp="back", **kw):
    return native.NativeHierarchy(_tiers(caps, policies), wp, **kw)._h.shared_table()


def test_fifo_and_slru_tiers_share_one_table_and_the_rest_do_not():
    assert _shared([2, 4], ["fifo", "fifo"]) and _shared([2, 4], ["slru", "slru"])
    assert _shared([2, 4], ["fifo", "slru"]) and _shared([0, 0], ["slru", "fifo"])
    assert not _shared([2, 4], ["fifo", "fifo"], wp="through")
    assert not _shared([2, 4, 8], ["fifo"] * 3) and not _shared([2], ["fifo"])
    assert not _shared([2, 4], ["fifo", "arc"]) and not _shared([2, 4], ["lfu", "fifo"])
    assert not _shared([2, 4], ["fifo", "lru"])
    gated = _tiers([2, 4], ["fifo", "fifo"])
    gated[1] = Tier("t1", 4, make_policy("fifo", 4), make_admission("reuse:2"))
    assert not native.NativeHierarchy(gated, "back")._h.shared_table()


def _admit(h, keys):
    a = h.start(keys, len(keys), len(keys))
    h.prefill_done(a)
    h.finish(a)


def _resident(t):
    return {k: t.resident[k] for k in t.resident}


def _state(h):
    return (h.tiers[0].policy.order(), h.tiers[1].policy.order(), _resident(h.tiers[0]), _resident(h.tiers[1]))


# fifo on both tiers, GPU 2 blocks, CPU 2, write-back: (request, GPU order, CPU order) after it, first victim first;
# a request's blocks are released tail first; the GPU victims go down after the request's restores
FIFO_BOTH = [
    ([1, 2], [2, 1], []),
    # one slot: GPU victim 2 (number 0), new in the CPU tier (CPU number 0)
    ([3], [1, 3], [2]),
    # 2 restored from the CPU tier (its copy stays: 2 is now in both tiers); GPU victim 1 demoted after (CPU number 1)
    ([2], [3, 2], [2, 1]),
    # GPU victim 3 demoted: the CPU tier is full, one CPU victim, its smallest number: 2 -- which the GPU tier still
    # holds, so it leaves only the CPU tier
    ([4], [2, 4], [1, 3]),
    # 1 restored (pinned in the GPU tier by this request); GPU victim 2 demoted after, new in the CPU tier again: one
    # CPU victim, the smallest number: 1, pinned in the GPU tier at that moment -- it leaves only the CPU tier
    ([1], [4, 1], [3, 2]),
]


def test_blocks_in_both_tiers_worked_by_hand():
    hs = [native.NativeHierarchy(_tiers([2, 2], ["fifo", "fifo"])), Hierarchy(_tiers([2, 2], ["fifo", "fifo"]))]
    assert hs[0]._h.shared_table()
    for keys, gpu, cpu in FIFO_BOTH:
        for h in hs:
            _admit(h, keys)
            assert _state(h) == (gpu, cpu, {k: 0 for k in gpu}, {k: 0 for k in cpu}), (keys, type(h).__name__)
        hs[0]._check()
    # CPU blocks written: 2, 1, 3, 2 (4); CPU victims dropped: 2, 1
    for h in hs:
        assert (h.written_blocks[1], h.dropped_blocks) == (4, 2), type(h).__name__


def test_pins_and_residency_of_a_block_in_both_tiers_by_hand():
    """slru on both tiers (GPU 2: protected 1; CPU 2: protected 1). A restored block is pinned in the GPU tier only
    while its request runs (the CPU tier has no pins), and both tiers report it resident."""
    hs = [native.NativeHierarchy(_tiers([2, 2], ["slru", "slru"])), Hierarchy(_tiers([2, 2], ["slru", "slru"]))]
    for h in hs:
        _admit(h, [1, 2])      # GPU probation 2, 1
        _admit(h, [3])         # GPU victim 2 (probation's front) -> CPU probation [2]; GPU 1, 3
        a = h.start([2], 1, 1)  # 2 restored; its CPU copy touched: CPU protected [2]
        h.prefill_done(a)
        assert (h.tiers[0].resident[2], h.tiers[1].resident[2]) == (1, 0), type(h).__name__
        # GPU victim 1 demoted after the restore: CPU probation [1], protected [2]
        assert h.tiers[1].policy.order() == [1, 2], type(h).__name__
        h.finish(a)            # 2 released as reused: GPU protected; GPU order probation 3, protected 2
        assert _state(h) == ([3, 2], [1, 2], {3: 0, 2: 0}, {1: 0, 2: 0}), type(h).__name__
    hs[0]._check()


@SETTINGS
@given(traces(), st.lists(st.integers(0, 12), min_size=2, max_size=2),
       st.lists(st.sampled_from(["fifo", "slru", "slru:protected_share=0.5", "slru:protected_share=0"]),
                min_size=2, max_size=2), st.sampled_from(["sequential", "modeled"]))
def test_shared_policy_tiers_equal_python_on_random_traces(reqs, caps, specs, timing):
    _ref, h = replay_twins(reqs, caps, specs, timing, BlockRules(), "back", ctx=trace_context(reqs, BlockRules()))
    assert h._h.shared_table()


def test_seeded_stress_on_the_shared_table():
    """600 requests, the C invariants (the shared table's among them) after every step, results equal; the 6-block
    GPU tier truncates long requests, the 9-block CPU tier overflows (a batch larger than its room)."""
    reqs = stress_trace(5, 600, 4)
    for specs in (["fifo", "fifo"], ["slru", "slru"], ["fifo", "slru"]):
        for caps in ([6, 9], [40, 60]):
            assert replay_twins(reqs, caps, specs, "modeled", BlockRules(), "back")[0].ledger.num_requests == 600


@pytest.mark.parametrize("pol", ["fifo", "slru"])
def test_trace_replays_identical_on_the_shared_table(exact_trace, pol):
    """The committed sample and the Mooncake trace (the bench's tiers there, 2,372 + 11,921 blocks): per-request
    table and summary equal to the reference engine's."""
    assert_trace_replays_equal(exact_trace, tiers=["gpu=auto", "cpu=2TB"], tier_policies={"gpu": pol, "cpu": pol},
                               timing="modeled", write_policy="back")


def test_shared_table_grown_as_blocks_come():
    """A CPU tier past the entries sh_open / ps_open ask for at once (2**22): the table's entries and the CPU tier's
    array grow from 64 as blocks come (ps_reserve), with evictions and demotions from the 40-block GPU tier."""
    reqs = stress_trace(3, 400, 4)
    for specs in (["fifo", "fifo"], ["slru", "fifo"]):
        _ref, h = replay_twins(reqs, [40, (1 << 22) + 1], specs, "modeled", BlockRules(), "back")
        assert h._h.shared_table()


@pytest.mark.parametrize("use_native", [True, False])
def test_a_lead_with_a_cpu_block_inside_waits_then_is_pinned_through_fifo_worked_by_hand(use_native):
    """fifo on both tiers (GPU 4, CPU 4, write-back). Two fifo / slru tiers share the table's lookup with two LRU
    tiers but not its pins (pcs/cache/_lruhier.c ``lru_shared``): a start that waits leaves orders and pins as they
    were, and an admitted one pins its GPU lead through the policy -- here the GPU blocks 1 and 5 on both sides of
    the CPU block 4 -- while 4 is restored. Worked out by hand (a request's blocks are released tail first; a GPU
    block pinned and released keeps its fifo number), on the Python hierarchy and the compiled one."""
    tiers = _tiers([4, 4], ["fifo", "fifo"])
    h = native.NativeHierarchy(tiers, "back") if use_native else Hierarchy(tiers, "back")
    _admit(h, [1, 2, 3, 4])          # GPU order 4, 3, 2, 1
    _admit(h, [5])                   # GPU victim 4 demoted: GPU 3, 2, 1, 5; CPU 4
    b = h.start([9], 1, 1, 1)        # 9 computed + 1 extra slot: GPU victims 3, 2 demoted
    assert _state(h) == ([1, 5], [4, 3, 2], {1: 0, 5: 0}, {4: 0, 3: 0, 2: 0})
    # lead 1 (GPU), 4 (CPU), 5 (GPU); 7, 8 computed: need 1 restore + 2 = 3, obtainable 4 - 2 - 2 + 2 - 2 = 0 <
    # min(3, 4 - 2): waits, nothing pinned
    assert h.start([1, 4, 5, 7, 8], 5, 5, 0, True) is None
    assert _state(h) == ([1, 5], [4, 3, 2], {1: 0, 5: 0}, {4: 0, 3: 0, 2: 0})
    assert h.tiers[0].reserved_blocks == 2
    h.prefill_done(b)
    h.finish(b)                      # 9 released; b's extra slot given back: GPU 1, 5, 9
    # lead 1, 4, 5 again, 7 computed: need 2, obtainable 4 - 3 + 3 - 2 = 2: admitted; 1 and 5 pinned (out of the
    # GPU order), one GPU victim for the restore and 7: 9, demoted after 4's restore (4 stays in the CPU tier too)
    a = h.start([1, 4, 5, 7], 4, 4, 0, True)
    assert (a.hit_blocks, a.reserved_blocks) == (3, 1)
    assert _state(h) == ([], [4, 3, 2, 9], {1: 1, 4: 1, 5: 1}, {4: 0, 3: 0, 2: 0, 9: 0})
    h.prefill_done(a)
    h.finish(a)                      # tail first: 7, then 5 and 1 with their old numbers, 4 new in the GPU tier
    assert _state(h) == ([1, 5, 7, 4], [4, 3, 2, 9], {1: 0, 5: 0, 7: 0, 4: 0}, {4: 0, 3: 0, 2: 0, 9: 0})
    if use_native:
        h._check()


def test_fifo_queue_ring_wraps_and_grows_by_hand():
    """fifo's queue 0 is a ring of entry indices (pcs/cache/_pol_fifo.c: 64 slots at first, rebuilt larger only
    when an append finds it full). GPU 50 blocks, CPU 100, 1,000 requests of one new block each (keys 0..999):
    FIFO on both tiers keeps the newest -- the GPU tier keys 950..999, the CPU tier the 100 GPU victims before them,
    850..949 (each GPU victim goes down in number order; the CPU tier's victims are its oldest) -- after the rings
    grew past 64 and 128 slots and wrapped many times. Then a request of 2 GPU blocks at the queue's front (950, 951:
    pinned, so the GPU victim search passes and parks them) and 4 new ones (2000..2003): the 4 GPU victims are the
    oldest unpinned, 952..955, demoted in that order; the CPU tier's 4 victims its oldest, 850..853. Released tail
    first, 2003..2000 take new numbers at the back, and the two parked blocks come back by their old numbers, at the
    front."""
    h, ref = (native.NativeHierarchy(_tiers([50, 100], ["fifo", "fifo"])),
              Hierarchy(_tiers([50, 100], ["fifo", "fifo"])))
    assert h._h.shared_table()
    for k in range(1000):
        for x in (h, ref):
            _admit(x, [k])
    h._check()
    for x in (h, ref):
        assert x.tiers[0].policy.order() == list(range(950, 1000)), type(x).__name__
        assert x.tiers[1].policy.order() == list(range(850, 950)), type(x).__name__
    for x in (h, ref):
        _admit(x, [950, 951, 2000, 2001, 2002, 2003])
        assert x.tiers[0].policy.order() == [950, 951] + list(range(956, 1000)) + [2003, 2002, 2001, 2000], \
            type(x).__name__
        assert x.tiers[1].policy.order() == list(range(854, 950)) + [952, 953, 954, 955], type(x).__name__
    h._check()
