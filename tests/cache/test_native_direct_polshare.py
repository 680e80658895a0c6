"""The direct mode of the table two fifo / slru tiers share (pcs/cache/_lruhier_polshare.h ``ps_open``, the
mechanism of pcs/cache/_dmap.h that the plain LRU tiers' table uses: test_native_direct_table.py).

Below a limit (``direct_limit``: twice the trace's block hashes, at least 2**20) a key indexes an array of entries
directly; a key at or above it to be added moves the resident blocks into the hashed slots for good (``ps_hashed``,
the rule of ``dmap_below``). No number may depend on the mode (docs/semantics.md §1): the hand-worked fifo and slru
sequences below come out the same whichever request crosses the limit, and the compiled hierarchy equals the Python
reference on hypothesis and seeded traces that stay direct, cross the limit mid-trace, or are hashed from the start
(a whole `pcs replay` crossing the limit: test_native_direct_table.py, with --policy fifo and slru).
"""
from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from pcs.blocks import BlockRules
from pcs.cache import Hierarchy, Tier, make_policy
from helpers import ALL_RULES, SETTINGS, replay_twins, stress_trace, traces

native = pytest.importorskip("pcs.cache.native")
if native._lruhier is None:
    pytest.skip("pcs.cache._lruhier is not compiled", allow_module_level=True)

DEFAULT_LIMIT = 1 << 20        # dmap_limit's least: expected_blocks 0 (not known)
_ORIG = native._lruhier.Hierarchy
POLICY_PAIRS = [("fifo", "fifo"), ("slru", "slru"), ("fifo", "slru"), ("slru", "fifo")]


def _tiers(caps, policies):
    return [Tier(f"t{i}", c, make_policy(p, c)) for i, (c, p) in enumerate(zip(caps, policies))]


def _limited(mp, limit):
    """Every compiled hierarchy built from here on gets direct limit ``limit`` (-1: its rule, 0: hashed)."""
    mp.setattr(native._lruhier, "Hierarchy", functools.partial(_ORIG, direct_limit=limit))


def _hier(monkeypatch, caps, policies, limit, expected=0):
    _limited(monkeypatch, limit)
    return native.NativeHierarchy(_tiers(caps, policies), "back", expected_blocks=expected)


def _admit(h, keys):
    a = h.start(keys, len(keys), len(keys))
    h.prefill_done(a)
    h.finish(a)
    if isinstance(h, native.NativeHierarchy):
        h._check()


def _orders(h):
    return h.tiers[0].policy.order(), h.tiers[1].policy.order()


@pytest.mark.parametrize("policies", POLICY_PAIRS)
def test_default_limit_as_the_lru_table(monkeypatch, policies):
    """dmap_limit for the policy tiers' table too: 2 x expected_blocks, at least 2**20 and at most 2**27 keys; 0
    (hashed) when asked; write-through (a table per tier) has no direct mode."""
    for expected, limit in [(0, DEFAULT_LIMIT), (1000, DEFAULT_LIMIT), (2_885_000, 5_770_000), (10 ** 9, 1 << 27)]:
        h = _hier(monkeypatch, [2, 3], policies, -1, expected=expected)
        assert h._h.shared_table() and h._h.direct_limit() == limit
    assert _hier(monkeypatch, [2, 3], policies, 0)._h.direct_limit() == 0
    through = native.NativeHierarchy(_tiers([2, 3], policies), "through")
    assert not through._h.shared_table() and through._h.direct_limit() == 0


# fifo on both tiers, GPU 2 + CPU 2, write-back: test_native_policy_share.FIFO_BOTH, worked by hand there (requests,
# then the GPU and CPU orders after each, first victim first). Keys added: 1, 2 (request 0), 3 (1), 4 (3); requests 2
# and 4 restore (a known entry: no add). CPU written 2, 1, 3, 2; dropped 2 (its CPU victims 2 and 1, each still in
# the GPU tier: they leave only the CPU tier).
FIFO_STEPS = [([1, 2], ([2, 1], [])), ([3], ([1, 3], [2])), ([2], ([3, 2], [2, 1])), ([4], ([2, 4], [1, 3])),
              ([1], ([4, 1], [3, 2]))]

# slru on both tiers, GPU 2 + CPU 2 (protected segments floor(0.8 x 2) = 1 block), write-back; orders probation then
# protected, each LRU first. Worked by hand (a request's blocks are released tail first; a hit or restored block is
# released as reused: protected; a restore touches the CPU copy: protected; a demoted block the CPU tier holds is
# re-added as reused):
#   [1, 2]: computed; GPU probation 2, 1.
#   [3]:    GPU victim 2 (probation's front) -> CPU probation [2]; GPU 1, 3.
#   [2]:    restored, CPU copy touched: CPU protected [2]; GPU victim 1 -> CPU probation [1]; 2 released reused:
#           GPU probation [3], protected [2].
#   [4, 5]: GPU victims 3, then 2 (probation empty: protected's front); demoted [3, 2]: 3 new, 2 held by the CPU
#           tier (out of its policy, re-added as reused); one CPU victim for 3: its policy holds only 1 -> dropped
#           (no tier holds it: it leaves the table). CPU 3 | 2; GPU 5, 4.
#   [6]:    GPU victim 5 -> CPU; CPU victim 3 (probation's front) dropped. CPU 5 | 2; GPU 4, 6.
#   [2, 7]: 2 restored (CPU touch: protected already); GPU victims 4, 6 -> CPU, two CPU victims: 5, then 2 (held by
#           the GPU tier, pinned: it leaves the CPU tier only). CPU 4, 6; GPU 7 | 2.
# Keys added: 1, 2 (request 0), 3 (1), 4, 5 (3), 6 (4), 7 (5). CPU written 2, 1, 3, 5, 4, 6; dropped 1, 3, 5, 2.
SLRU_STEPS = [([1, 2], ([2, 1], [])), ([3], ([1, 3], [2])), ([2], ([3, 2], [1, 2])), ([4, 5], ([5, 4], [3, 2])),
              ([6], ([4, 6], [5, 2])), ([2, 7], ([7, 2], [4, 6]))]

BOUNDARY = {  # policy: (steps, [(limit, requests after which the table is still direct)], written, dropped, resident)
    "fifo": (FIFO_STEPS, [(0, 0), (2, 0), (3, 1), (4, 3), (5, 5), (DEFAULT_LIMIT, 5)], 4, 2, ({4: 0, 1: 0},
                                                                                         {3: 0, 2: 0})),
    "slru": (SLRU_STEPS, [(0, 0), (2, 0), (3, 1), (4, 3), (5, 3), (6, 4), (7, 5), (8, 6), (DEFAULT_LIMIT, 6)], 6, 4,
             ({7: 0, 2: 0}, {4: 0, 6: 0})),
}


@pytest.mark.parametrize("pol, limit, direct_steps",
                         [(p, lim, d) for p, (_s, cases, *_r) in BOUNDARY.items() for lim, d in cases])
def test_switch_at_the_limit_worked_by_hand(monkeypatch, pol, limit, direct_steps):
    """Keys limit - 1 and below stay direct; the first request adding key `limit` (or above) switches the table to
    hashed before its adds, for good (slru, limit 5: [4, 5] adds 4 = limit - 1 and 5 = limit: it switches; limit 6
    keeps it direct, [6] switches). A restore adds nothing. The orders, writes, drops and residents are the ones
    worked by hand above for every limit, and equal the Python hierarchy's."""
    steps, _cases, written, dropped, resident = BOUNDARY[pol]
    h = _hier(monkeypatch, [2, 2], [pol, pol], limit)
    ref = Hierarchy(_tiers([2, 2], [pol, pol]))
    for step, (keys, orders) in enumerate(steps):
        _admit(h, keys)
        _admit(ref, keys)
        assert _orders(h) == orders == _orders(ref), step
        assert h._h.direct_limit() == (limit if step < direct_steps else 0), step
    for x in (h, ref):
        assert (x.written_blocks, x.dropped_blocks) == ([0, written], dropped), type(x).__name__
        assert (dict(x.tiers[0].resident), dict(x.tiers[1].resident)) == resident, type(x).__name__


@pytest.mark.parametrize("pol", ["lru", "fifo", "slru"])
def test_keys_at_or_past_the_limit_are_absent_while_direct(monkeypatch, pol):
    """Limit 4, GPU 4 + CPU 4 blocks, keys 0 .. 3 resident in the GPU tier (released tail first, as vLLM's
    ``KVCacheManager.free`` hands a request's blocks back in reverse order: 3 is the first victim, then 2, under
    LRU, fifo and slru alike; LRU runs on the table plain LRU tiers share, fifo and slru on theirs): a lookup of key 4, 5 or 2**63 finds nothing and does not switch the table; a request of keys 4
    and 2**63 misses both, its two GPU victims 3 and 2 go down to the CPU tier while direct, and its fill (key 4 =
    the limit) switches the table, every block kept (placed in the slots); the same request again hits both, and a
    request of 3, 2 restores both from the CPU tier (found from their home slots)."""
    h = _hier(monkeypatch, [4, 4], [pol, pol], 4)
    _admit(h, [0, 1, 2, 3])
    for k in (4, 5, 2 ** 63):
        assert k not in h.tiers[0].resident and k not in h.tiers[1].resident
    a = h.start([4, 2 ** 63], 2, 2)
    assert (a.prefix_hit_blocks, a.hit_blocks) == (0, 0) and h._h.direct_limit() == 4   # a lookup: still direct
    h.prefill_done(a)                # the fill adds 4 (= the limit): hashed from here
    h.finish(a)
    h._check()
    assert h._h.direct_limit() == 0
    assert dict(h.tiers[0].resident) == {0: 0, 1: 0, 4: 0, 2 ** 63: 0} and dict(h.tiers[1].resident) == {3: 0, 2: 0}
    for keys in ([4, 2 ** 63], [3, 2]):
        b = h.start(keys, 2, 2)
        assert (b.prefix_hit_blocks, b.hit_blocks) == (2, 2), keys
        h.prefill_done(b)
        h.finish(b)
        h._check()
    assert set(h.tiers[0].resident) == {4, 2 ** 63, 3, 2} and h._h.direct_limit() == 0


def _renamed(reqs, f):
    """The trace with block i of request r renamed f(r, id) (injective per id)."""
    return [r._replace(block_hashes=np.array([f(j, int(x)) for x in r.block_hashes], dtype=np.uint64))
            for j, r in enumerate(reqs)]


MODES = {
    "direct": (lambda j, x: x, -1),                                   # ids 0 ..: below 2**20
    "switch": (None, -1),                                             # ids of the later half + 2**40 (see below)
    "hashed": (lambda j, x: x, 0),                                    # hashed from the start
    "big": (lambda j, x: (1 << 63) | (x * 0x9E3779B97F4A7C15 % (1 << 62)), -1),   # 64-bit ids: hashed at the first add
}


def _mode_trace(mode, reqs):
    f, limit = MODES[mode]
    if f is None:
        half = len(reqs) // 2
        f = lambda j, x: x + (1 << 40) * (j >= half)        # noqa: E731
    return _renamed(reqs, f), limit


def _assert_mode(mode, h):
    if mode == "direct":
        assert h._h.direct_limit() == DEFAULT_LIMIT
    elif mode == "hashed" or (mode == "big" and h.tiers[0].stats.inserted_blocks):
        assert h._h.direct_limit() == 0


@pytest.mark.parametrize("mode", sorted(MODES))
@SETTINGS
@given(traces(), st.lists(st.integers(0, 12), min_size=2, max_size=2), st.sampled_from(POLICY_PAIRS),
       st.sampled_from(["sequential", "modeled"]), st.sampled_from(ALL_RULES))
def test_compiled_equals_reference_in_every_mode(mode, reqs, caps, pols, timing, rules):
    """The Python hierarchy against the compiled one (each hierarchy's check after every step, then every column,
    the ledger and the end state: replay_twins) on the same renamed trace, the shared fifo / slru table direct
    throughout, switching mid-trace (the requests of the later half renamed past the limit), hashed from the start,
    or hashed at its first add."""
    with pytest.MonkeyPatch.context() as mp:
        renamed, limit = _mode_trace(mode, reqs)
        _limited(mp, limit)
        _ref, h = replay_twins(renamed, caps, list(pols), timing, rules, "back")
        assert h._h.shared_table()
        event(f"{mode}: {'direct' if h._h.direct_limit() else 'hashed'} at the end")   # (--hypothesis-show-statistics)
        _assert_mode(mode, h)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_seeded_stress_in_every_mode(mode):
    """600 seeded requests (stress_trace) through each policy pair: the 6-block GPU tier truncates, the 9-block CPU
    tier overflows (a batch past its room: ps_cut frees entries in no tier, direct or hashed); the 40 + 60 blocks
    evict and demote without truncation. Equal to the Python hierarchy, the C checks after every step."""
    reqs, limit = _mode_trace(mode, stress_trace(7, 600, 4))
    with pytest.MonkeyPatch.context() as mp:
        _limited(mp, limit)
        for pols in POLICY_PAIRS:
            for caps in ([6, 9], [40, 60]):
                ref, h = replay_twins(reqs, caps, list(pols), "modeled", BlockRules(), "back")
                assert ref.ledger.num_requests == 600 and h._h.shared_table()
                _assert_mode(mode, h)
