"""Properties of the hybrid hierarchy (pcs.cache.grouphier) on hypothesis traces.

- one full-attention group of one page is the reference hierarchy (pcs.cache.Hierarchy), step
  for step: same per-request columns, ledger, counters and end state (resident blocks with pin
  counts, eviction order) -- every timing, write policy, policy (arc and 2q included) and 1-3 tiers;
- hybrid groups (window, chunk, state beside full attention; several pages per block; one
  shared pool or one pool per group): after every step no pool holds more than its capacity and
  the per-group page counters match the pools (``_check``); every admitted hit is a length each
  group accepts on the cache as it was at lookup (the fixed point); a level's peak is the pools'
  own peak (``TierStats``) in bytes.
"""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from helpers import ALL_RULES, BS, SETTINGS, LinearCompute, group_sets, traces
from pcs.cache import Hierarchy, Tier, make_policy
from pcs.cache.groups import CacheGroup
from pcs.cache.grouphier import GroupHierarchy
from pcs.engine.chunks import iter_chunks
from pcs.engine.engine import ReplayEngine, TimeModel

NAMES = ("gpu", "cpu", "ssd")


def _tiers(caps, policy, names=NAMES):
    return [Tier(n, c, make_policy(policy, c)) for n, c in zip(names, caps)]


def _replay(h, reqs, timing, rules):
    e = ReplayEngine(h, timing, block_bytes=[7] * len(h.tiers), check=True)
    for ch in iter_chunks(reqs, rules, TimeModel(LinearCompute())):
        e.feed(ch)
    return e.close()


def _cols(res):
    return {k: repr(list(v)) for k, v in res.columns.items()}


@SETTINGS
@given(reqs=traces(), caps=st.lists(st.integers(0, 14), min_size=1, max_size=3),
       timing=st.sampled_from(["sequential", "modeled"]), wp=st.sampled_from(["back", "through"]),
       policy=st.sampled_from(["lru", "fifo", "protected", "arc", "2q"]), rules=st.sampled_from(ALL_RULES))
def test_one_full_group_equals_reference(reqs, caps, timing, wp, policy, rules):
    # arc and 2q: their ghost lists are looked up when the GPU pool reserves slots for the restored and
    # computed pages (GroupHierarchy._incoming, Tier.reserve's incoming), as the reference does
    ref = Hierarchy(_tiers(caps, policy), wp)
    full = (CacheGroup("full_attention", "full", ("full_attention",), BS),)
    hyb = GroupHierarchy(_tiers(caps, policy), wp, full, 1, [[7] for _ in caps])
    a, b = _replay(ref, reqs, timing, rules), _replay(hyb, reqs, timing, rules)
    assert _cols(a) == _cols(b)
    assert a.ledger == b.ledger
    assert (ref.written_blocks, ref.dropped_blocks) == (hyb.written_blocks, hyb.dropped_blocks)
    for x, y in zip(ref.tiers, hyb.tiers):
        assert x.resident == y.resident and x.policy.order() == y.policy.order() and x.stats == y.stats


class Watched(GroupHierarchy):
    """Checks, at every admission, that each group accepts the hit on the cache as it was at lookup."""

    def start(self, block_hashes, cacheable_blocks, max_hit_blocks, extra_blocks=0, wait_if_full=False):
        before = [[set(t.resident) for t in lvl] for lvl in self.levels]
        adm = super().start(block_hashes, cacheable_blocks, max_hit_blocks, extra_blocks, wait_if_full)
        if adm is not None and not adm.truncated:
            head = block_hashes[:cacheable_blocks]
            k = adm.hit_blocks
            assert k <= min(max_hit_blocks, len(head))
            for g, grp in enumerate(self.groups):
                def present(i, g=g, grp=grp):
                    return all(any((head[i] | tag) in lvl[grp.pool] for lvl in before) for tag in self._tags[g])
                assert grp.longest(k, present) == k, (grp, k)
            assert sum(adm.hit_blocks_per_tier) == k
        return adm


@SETTINGS
@given(reqs=traces(), groups=group_sets(min_window=2), caps=st.lists(st.integers(0, 24), min_size=1, max_size=2),
       timing=st.sampled_from(["sequential", "modeled"]), wp=st.sampled_from(["back", "through"]),
       split=st.booleans(), policy=st.sampled_from(["lru", "fifo"]), rules=st.sampled_from(ALL_RULES))
def test_hybrid_groups_respect_capacity_and_every_rule(reqs, groups, caps, timing, wp, split, policy, rules):
    pools = len(groups) if split else 1
    if split:
        groups = [CacheGroup(g.name, g.rule, g.components, g.block_size, g.span_tokens, g.pages, p, g.layers,
                             g.align) for p, g in enumerate(groups)]
    names = [f"{lvl}/{g.name}" if split else lvl for lvl in NAMES[:len(caps)] for g in (groups if split else [0])]
    tiers = _tiers([c for c in caps for _ in range(pools)], policy, names)
    page_bytes = [[3 + p for p in range(pools)] for _ in caps]
    h = Watched(tiers, wp, groups, pools, page_bytes, step_s=0.01)
    res = _replay(h, reqs, timing, rules)     # _check after every step: capacity, pins, page counters
    r = h.residency
    for j, lvl in enumerate(h.levels):
        assert r.level_bytes(j) == sum(len(t.resident) * b for t, b in zip(lvl, page_bytes[j]))
        if pools == 1:    # one pool: the level's peak is the tier's own
            assert r.peak_bytes[j] == lvl[0].stats.peak_resident_blocks * page_bytes[j][0]
        assert all(a <= lvl[g.pool].capacity_blocks for a, g in zip(r.group_peak_pages[j], groups))
    assert len(r.request_lost) == res.ledger.num_requests
    assert all(x >= 0 for x in r.request_lost)
