"""The CPU tier's entry array of the table two fifo / slru tiers share, taken dirty from the pool of dead tables'
arrays (pcs/cache/_lruhier_polshare.h ``ps_open``, ``ps_cent_take``; pcs/_kept.h).

That array is no longer cleared as a whole when a table opens or grows (131,072 entries, 4 MB, at 16,384 + 65,536
blocks: a cost of every replay sized by the capacity, docs/performance.md "Two-tier slru and fifo at 1x: the lean
walk's victims in locals"); an entry gets its CPU fields cleared when it is taken for a new key. A table built right
after an identical one died takes that one's array back from the pool, with the dead table's CPU fields in it (its
blocks' queue positions, numbers and flags): what the tests pin is that none of them is read, so the second table
fills, demotes and evicts as the first did, as worked by hand, and equals the Python reference step by step.
"""
from __future__ import annotations

import gc

import pytest

from pcs.cache import Hierarchy, Tier, make_policy

native = pytest.importorskip("pcs.cache.native")
if native._lruhier is None:
    pytest.skip("pcs.cache._lruhier is not compiled", allow_module_level=True)

GPU, CPU = 2048, 4096      # the entry arrays: 2048 + 4096 + 1 entries -> 8,192 x 32 B = 256 KiB each, pool mappings


def _tiers(pol):
    return [Tier("gpu", GPU, make_policy(pol, GPU)), Tier("cpu", CPU, make_policy(pol, CPU))]


def _admit(h, keys):
    a = h.start(keys, len(keys), len(keys))
    h.prefill_done(a)
    h.finish(a)


def _fill(h, ref=None):
    """Keys 0 .. 12,287 in requests of 64, none repeated. By hand (no hit: every block enters as new, so fifo's
    numbers and slru's probation segment both follow the order of admission): the GPU keeps the last 2,048 keys,
    the CPU tier the 4,096 demoted before them, keys 0 .. 6,143 dropped from the CPU tier (written 10,240 blocks:
    every key but the GPU's last 2,048). ``ref``: the Python hierarchy run alongside, equal at every 16th request."""
    for i, k in enumerate(range(0, 12288, 64)):
        keys = list(range(k, k + 64))
        _admit(h, keys)
        if ref is not None:
            _admit(ref, keys)
            if i % 16 == 15:
                assert (h.tiers[0].policy.order(), h.tiers[1].policy.order()) == \
                       (ref.tiers[0].policy.order(), ref.tiers[1].policy.order()), i
    return sorted(h._h.resident(0)), sorted(h._h.resident(1)), h.written_blocks, h.dropped_blocks


@pytest.mark.parametrize("pol", ["fifo", "slru"])
def test_a_dead_tables_cpu_entries_are_not_read(pol):
    gc.collect()
    native._lruhier.kept_clear()
    first = native.NativeHierarchy(_tiers(pol), "back", expected_blocks=12288)
    assert first._h.shared_table()
    worked = (list(range(10240, 12288)), list(range(6144, 10240)), [0, 10240], 6144)
    assert _fill(first) == worked
    first._check()
    del first
    gc.collect()
    kept = native._lruhier.kept_bytes()
    assert kept >= 2 * 262144                     # both entry arrays (the table's, the CPU tier's) kept
    second = native.NativeHierarchy(_tiers(pol), "back", expected_blocks=12288)
    assert native._lruhier.kept_bytes() <= kept - 2 * 262144   # ... and taken back by the identical table
    assert second._h.shared_table()
    ref = Hierarchy(_tiers(pol))
    assert _fill(second, ref) == worked
    second._check()
    assert (second.written_blocks, second.dropped_blocks) == (ref.written_blocks, ref.dropped_blocks)
    # the same keys again: 2,048 GPU hits at most per request's lead, restores from the CPU tier, and the blocks
    # dropped come back as new: the reference decides, the dead table's fields must not
    for k in range(0, 12288, 64):
        keys = list(range(k, k + 64))
        _admit(second, keys)
        _admit(ref, keys)
    second._check()
    assert (second.tiers[0].policy.order(), second.tiers[1].policy.order()) == \
           (ref.tiers[0].policy.order(), ref.tiers[1].policy.order())
    assert (second.written_blocks, second.dropped_blocks) == (ref.written_blocks, ref.dropped_blocks)
