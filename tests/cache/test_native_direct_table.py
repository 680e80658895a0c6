"""The direct mode of the table two plain LRU tiers share (pcs/cache/_lruhier.c ``sh_open``, ``Tier.dmap``).

Below a limit (``direct_limit``: twice the trace's block hashes, at least 2**20) a key indexes an array of entries
directly; a key at or above it to be added moves the resident blocks into the hashed slots for good
(``sh_hashed``). No number may depend on the mode (docs/semantics.md §1: ids are compared only for equality): the
hand-worked demotions and restores of ``test_replay_native.py`` come out the same whichever request crosses the
limit, and the compiled hierarchy equals the Python reference on hypothesis traces that stay direct, cross the limit
mid-trace, or are hashed from the start.
"""
from __future__ import annotations

import functools
import json

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from pcs.cache import Hierarchy, Tier, make_policy
from pcs.engine.chunks import iter_chunks
from pcs.engine.engine import ReplayEngine, TimeModel
from helpers import ALL_RULES, SETTINGS, LinearCompute, assert_twin_runs_equal, invoke_json, traces

native = pytest.importorskip("pcs.cache.native")
if native._lruhier is None:
    pytest.skip("pcs.cache._lruhier is not compiled", allow_module_level=True)

DEFAULT_LIMIT = 1 << 20        # dmap_limit's least: expected_blocks 0 (not known)


def _tiers(caps):
    return [Tier(f"t{i}", c, make_policy("lru", c)) for i, c in enumerate(caps)]


def _hier(monkeypatch, caps, limit, wp="back", expected=0):
    """A NativeHierarchy whose shared table's direct limit is ``limit`` (-1: its own rule, 0: hashed from the start)."""
    monkeypatch.setattr(native._lruhier, "Hierarchy", functools.partial(_ORIG, direct_limit=limit))
    return native.NativeHierarchy(_tiers(caps), wp, expected_blocks=expected)


_ORIG = native._lruhier.Hierarchy


def _admit(h, keys):
    a = h.start(keys, len(keys), len(keys))
    h.prefill_done(a)
    h.finish(a)
    h._check()
    return a


def _orders(h):
    return h.tiers[0].policy.order(), h.tiers[1].policy.order()


def test_default_limit_from_the_trace_block_hashes(monkeypatch):
    """dmap_limit: 2 x expected_blocks, at least 2**20 and at most 2**27 keys."""
    for expected, limit in [(0, DEFAULT_LIMIT), (1000, DEFAULT_LIMIT), (2_885_000, 5_770_000), (10 ** 9, 1 << 27)]:
        assert _hier(monkeypatch, [2, 3], -1, expected=expected)._h.direct_limit() == limit
    assert _hier(monkeypatch, [2, 3], 0)._h.direct_limit() == 0                 # hashed from the start
    with pytest.raises(ValueError, match="direct_limit"):
        _hier(monkeypatch, [2, 3], -2)
    one = _hier(monkeypatch, [4], -1)                                             # no shared table: no direct mode
    assert not one._h.shared_table() and one._h.direct_limit() == 0


# GPU 2 + CPU 3 blocks, write-back: the requests of test_replay_native's hand-worked demotion and restore, and the
# orders after each (worked there by hand; reproduced here for every limit).
STEPS = [([1, 2], ([2, 1], [])), ([3], ([1, 3], [2])), ([2], ([3, 2], [2, 1])), ([4, 5], ([5, 4], [1, 3, 2])),
         ([6], ([4, 6], [3, 2, 5]))]


@pytest.mark.parametrize("limit, direct_steps", [(0, 0), (3, 1), (4, 3), (5, 3), (6, 4), (7, 5), (DEFAULT_LIMIT, 5)])
def test_switch_at_the_limit_worked_by_hand(monkeypatch, limit, direct_steps):
    """Keys limit - 1 and below stay direct; the first request adding key `limit` (or above) switches the table to
    hashed before its adds, for good. Limit 4: [1, 2], [3], [2] (a restore: no add) are direct, [4, 5] adds 4 =
    limit; limit 6: [4, 5] (5 = limit - 1) is still direct, [6] switches; limit 7: every request is direct. The
    orders, drops and writes are the same in every case (1 dropped: written 1, 2, 3, 5 into the CPU tier)."""
    h = _hier(monkeypatch, [2, 3], limit)
    for step, (keys, orders) in enumerate(STEPS):
        _admit(h, keys)
        assert _orders(h) == orders
        assert h._h.direct_limit() == (limit if step < direct_steps else 0), step
    assert h.dropped_blocks == 1 and h.written_blocks == [0, 4]
    assert dict(h.tiers[0].resident) == {4: 0, 6: 0} and dict(h.tiers[1].resident) == {3: 0, 2: 0, 5: 0}


@pytest.mark.parametrize("chains, direct_after", [
    ([[1, 2, 5]], [6]),                        # rising, the last (5) below the limit: direct
    ([[1, 2], [1, 2, 4, 6]], [6, 0]),          # rising, computed keys 4, 6: the last (6) is the limit -> hashed
    ([[7, 1]], [0]),                           # not rising: its first key (7) past the limit -> hashed
    ([[1, 2, 5], [5, 3]], [6, 6]),             # not rising, every key below the limit: direct
    ([[3, 1], [1, 2, 4, 5]], [6, 6]),          # both kinds, all below: direct throughout
])
def test_the_fill_of_rising_keys_checks_their_last_against_the_limit(monkeypatch, chains, direct_after):
    """Limit 6, GPU 8 + CPU 8 blocks (nothing evicted): a chain's computed keys are added at its prefill_done; when
    the chain's keys rise only the last is compared with the limit (PcsAdm.rises), otherwise every key is. Worked by
    the rule of sh_mode: a computed key at or above 6 switches the table to hashed before the adds, for good. Every
    block stays resident in the GPU tier whatever the mode (the table's check after every admission)."""
    h = _hier(monkeypatch, [8, 8], 6)
    seen = set()
    for keys, limit in zip(chains, direct_after):
        _admit(h, keys)
        seen |= set(keys)
        assert h._h.direct_limit() == limit, keys
        assert set(dict(h.tiers[0].resident)) == seen and not dict(h.tiers[1].resident)


def _renamed(reqs, f):
    """The trace with block i of request r renamed f(r, id) (an injective renaming per id: f(r, id) depends on r only
    through the request's half, and both halves map ids apart)."""
    return [r._replace(block_hashes=np.array([f(j, int(x)) for x in r.block_hashes], dtype=np.uint64))
            for j, r in enumerate(reqs)]


def _run(monkeypatch, reqs, caps, timing, rules, wp, limit):
    if limit is None:
        h = Hierarchy(_tiers(caps), wp)
    else:
        h = _hier(monkeypatch, caps, limit, wp)
    eng = ReplayEngine(h, timing, block_bytes=[7] * len(caps), check=True)
    for ch in iter_chunks(reqs, rules, TimeModel(LinearCompute())):
        eng.feed(ch)
    return eng.close(), h


MODES = {
    "direct": (lambda j, x: x, -1),                                   # ids 0 ..: below 2**20
    "switch": (None, -1),                                             # ids of the later half + 2**40 (see below)
    "hashed": (lambda j, x: x, 0),                                    # hashed from the start
    "big": (lambda j, x: (1 << 63) | (x * 0x9E3779B97F4A7C15 % (1 << 62)), -1),   # 64-bit ids: hashed at the first add
}


@pytest.mark.parametrize("mode", sorted(MODES))
@SETTINGS
@given(traces(), st.lists(st.integers(0, 12), min_size=2, max_size=2), st.sampled_from(["sequential", "modeled"]),
       st.sampled_from(ALL_RULES), st.sampled_from(["back", "through"]))
def test_compiled_equals_reference_in_every_mode(mode, reqs, caps, timing, rules, wp):
    """The Python hierarchy against the compiled one (ReplayEngine with its checks after every step, then every
    column, the ledger and the end state) on the same renamed trace, the shared table direct throughout, switching
    mid-trace (the requests of the later half renamed past the limit: ids seen in both halves become distinct
    blocks in each, as the renaming is the same for both runs), hashed from the start, or hashed at its first add."""
    with pytest.MonkeyPatch.context() as mp:
        f, limit = MODES[mode]
        if f is None:
            half = len(reqs) // 2
            f = lambda j, x: x + (1 << 40) * (j >= half)        # noqa: E731
        renamed = _renamed(reqs, f)
        a, ha = _run(mp, renamed, caps, timing, rules, wp, None)
        b, hb = _run(mp, renamed, caps, timing, rules, wp, limit)
        assert_twin_runs_equal(a, ha, b, hb)
        event(f"{mode}: {'direct' if hb._h.direct_limit() else 'hashed'} at the end")   # (--hypothesis-show-statistics)
        if mode == "direct":
            assert hb._h.direct_limit() == DEFAULT_LIMIT
        elif mode == "hashed" or (mode == "big" and hb.tiers[0].stats.inserted_blocks):
            assert hb._h.direct_limit() == 0


def _write(path, far: int) -> None:
    """400 Mooncake requests (512-token blocks): each of 1-5 fresh ids, half of them after ids 0, 1 (a shared
    prefix); the fresh ids of the later 200 requests offset by `far`."""
    rng = np.random.default_rng(5)
    nxt, rows = 2, []
    for i in range(400):
        n = int(rng.integers(1, 6))
        fresh = [x + (far if i >= 200 else 0) for x in range(nxt, nxt + n)]
        nxt += n
        ids = ([0, 1] if rng.random() < 0.5 else []) + fresh
        rows.append(json.dumps({"timestamp": i * 40, "input_length": 512 * len(ids), "output_length": 3,
                                "hash_ids": ids}))
    path.write_text("\n".join(rows) + "\n")


@pytest.mark.parametrize("pol, caps", [("lru", (3, 5)), ("lru", (40, 60)), ("fifo", (3, 5)), ("slru", (3, 5))])
def test_a_replay_that_crosses_the_limit_equals_one_that_does_not(tmp_path, monkeypatch, pol, caps):
    """The compiled step loop (pcs replay --policy POL, two tiers, modeled; lru's shared table and fifo / slru's,
    pcs/cache/_lruhier_polshare.h) on 400 requests whose later 200 take fresh ids past the limit (+ 2**40: the
    shared table switches to hashed mid-trace) against the same trace with those ids + 10**6 (below the limit
    2**20: direct throughout). A renaming of ids changes no number (docs/semantics.md §1): the same JSON."""
    seen = []

    def spy(*a, **kw):
        seen.append(_ORIG(*a, **kw))
        return seen[-1]

    monkeypatch.setattr(native._lruhier, "Hierarchy", spy)
    out = {}
    for name, far in (("far", 1 << 40), ("near", 10 ** 6)):
        (tmp_path / name).mkdir()
        path = tmp_path / name / "t.jsonl"
        _write(path, far)
        seen.clear()
        r = invoke_json("replay", path, "--tier", f"gpu={caps[0]}blocks", "--tier", f"cpu={caps[1]}blocks",
                        "--policy", pol)
        r = json.loads(json.dumps(r).replace(str(tmp_path / name), "X"))
        r.pop("trace_file")
        used = [h for h in seen if h.shared_table() and h.tier_info(0)[3]]   # (fifo / slru build one not fed)
        out[name] = (r, [h.direct_limit() for h in used])
    assert out["far"][1] == [0] and out["near"][1] == [DEFAULT_LIMIT]
    assert out["far"][0]["engine"].startswith("compiled-"), out["far"][0]["engine"]
    assert out["far"][0] == out["near"][0]


def test_keys_added_before_the_prefill_are_each_checked_against_the_limit(monkeypatch):
    """Out of extend's documented order (after prefill_done): start [3, 7] (rising, 7 past limit 6), extend [1],
    then prefill_done fills 3, 7 and 1 again. The Admission's rising answer no longer holds for its keys [3, 7, 1]
    (c_extend clears it), so the fill compares every key: 7 switches the table to hashed before its add and the
    table stays sound (without the clear the last key, 1, would be compared alone and 7 written past the map)."""
    h = _hier(monkeypatch, [8, 8], 6)
    a = h.start([3, 7], 2, 2, 1)
    h.extend(a, [1])
    h.prefill_done(a)
    h._check()
    assert h._h.direct_limit() == 0
    assert set(dict(h.tiers[0].resident)) == {1, 3, 7}
