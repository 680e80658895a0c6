"""A replay's set-up objects kept per process (pcs.engine.keptsetup), one plan fewer for a model that is not
hybrid, and the gated summary parts' one worker: the same objects and numbers the set-up made afresh each call.

The values checked are worked out from the model's documented figures: llama-2-70b (80 layers, 8 KV heads of
128, bf16) keeps 2 x 80 x 8 x 128 x 2 = 327,680 bytes of KV a token; over TP 8 each rank holds one KV head,
40,960 bytes a token, and a 16-token block is 16 x 327,680 = 5,242,880 bytes across the group.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

import pcs
from helpers import ROOT
from pcs.engine import api, keptsetup
from pcs.engine.keptsetup import cdf_indexes, kept_group_block_bytes, kept_tier, kept_with_tp
from pcs.errors import UserError
from pcs.model import get_model, group_block_bytes

TINY = ROOT / "traces" / "formats" / "mooncake_conv_8.jsonl"


def test_with_tp_kept_per_spec_object():
    spec = get_model("llama-2-70b")
    split = kept_with_tp(spec, 8)
    assert split.tp == 8 and split.kv_bytes_per_token("reference") == 40_960      # one KV head a rank, by hand
    assert split == spec.with_tp(8) and kept_with_tp(spec, 8) is split           # made once, then kept
    assert kept_with_tp(spec, 4).tp == 4 and kept_with_tp(spec, 4) is not split
    # an equal spec that prints differently (weights of 2 bytes as an int, not 2.0) is a key of its own: a kept
    # object is never handed to an equal but distinct input
    other = pcs.model.spec.ModelSpec(**{f: getattr(spec, f) for f in spec.__dataclass_fields__} | {"weight_dtype_bytes": 2})
    assert other == spec and repr(kept_with_tp(other, 8).weight_dtype_bytes) == "2"
    with pytest.raises(UserError, match="tensor-parallel size"):
        kept_with_tp(spec, 0)                   # an error is raised each time, never kept
    with pytest.raises(UserError, match="tensor-parallel size"):
        kept_with_tp(spec, 0)


def test_group_block_bytes_kept_and_each_caller_its_own_dict():
    split = kept_with_tp(get_model("llama-2-70b"), 8)
    bb = kept_group_block_bytes(split, 16, "reserved")
    assert bb.total_bytes == 5_242_880 and bb == group_block_bytes(split, 16, "reserved")
    bb.per_component.clear()                    # a caller changing its own dict does not change the next one's
    again = kept_group_block_bytes(split, 16, "reserved")
    assert again == group_block_bytes(split, 16, "reserved") and again.per_component
    assert kept_group_block_bytes(split, np.int64(16), "reserved") == bb.__class__(5_242_880, again.per_component)
    assert type(kept_group_block_bytes(split, np.int64(16), "reserved").total_bytes) is \
        type(group_block_bytes(split, np.int64(16), "reserved").total_bytes)   # the key holds each input's type


def test_tiers_kept_per_text():
    tier = api.parse_tier("gpu=16384blocks")
    assert tier == api.TierSpec("gpu", capacity_blocks=16384) and api.parse_tier("gpu=16384blocks") is tier
    assert api.parse_tier("cpu=2TB") == api.TierSpec("cpu", capacity_bytes=2 * 10 ** 12)
    for bad in ("gpu", "gpu=lots"):             # refused every time, not kept
        for _ in range(2):
            with pytest.raises(UserError):
                api.parse_tier(bad)
    assert kept_tier("x", lambda text: ("made", text)) == ("made", "x") and kept_tier("x", None) == ("made", "x")


def test_an_input_that_cannot_be_hashed_is_made_afresh():
    made = []
    kept = keptsetup._ByIdentity(lambda obj, extra: made.append(extra) or len(made))
    spec = object()
    assert kept(spec, [1]) == 1 and kept(spec, [1]) == 2          # a list: no key, made each call
    assert kept(spec, 1) == 3 and kept(spec, 1) == 3              # an int: kept


def test_tables_keep_at_most_their_bound():
    table = keptsetup._Table()
    for k in range(keptsetup.KEPT + 3):
        table.put(k, k * 10)
    assert table.get(0) is None and table.get(2) is None and table.get(3) == 30      # the oldest dropped first
    assert table.get(keptsetup.KEPT + 2) == (keptsetup.KEPT + 2) * 10


def test_cdf_indexes_by_hand_and_read_only():
    from pcs.engine.series import CDF_LEVELS

    # 10 values: level q -> the ceil(10 q)-th smallest, 1-based: q = 0 -> the smallest (index 0), 0.5 -> the
    # 5th (index 4), 1.0 -> the 10th (index 9)
    idx = cdf_indexes(10)
    levels = CDF_LEVELS.tolist()
    assert idx[levels.index(0.0)] == 0 and idx[levels.index(0.5)] == 4 and idx[levels.index(1.0)] == 9
    assert idx.tolist() == np.clip(np.ceil(10 * CDF_LEVELS).astype(np.int64) - 1, 0, 9).tolist()
    assert cdf_indexes(10) is idx and not idx.flags.writeable
    with pytest.raises(ValueError):
        idx[0] = 5
    with pytest.raises(ValueError):     # nor made writeable again: it views a read-only array held by the table
        idx.flags.writeable = True


def test_a_model_that_is_not_hybrid_is_planned_once(monkeypatch):
    from pcs.engine import hybrid

    spec = kept_with_tp(get_model("llama-2-70b"), 8)
    specs = [api.parse_tier("gpu=16384blocks"), api.parse_tier("cpu=65536blocks")]
    bb = [kept_group_block_bytes(spec, 16, lay) for lay in ("reserved", "serialized")]
    made = []
    real = hybrid.plan_hybrid
    monkeypatch.setattr(hybrid, "plan_hybrid", lambda *a: made.append(a[4]) or real(*a))
    plan, sizes, _ = api._hybrid_plan(spec, 16, specs, bb, None, None, None, None)
    assert plan is None and sizes == [(None, 16384), (None, 65536)] and len(made) == 1
    # a hybrid model still gets its plan: the empty tiers' plan, then the plan of the tiers' sizes
    gemma = kept_with_tp(get_model("gemma-3-27b"), 8)
    gbb = [kept_group_block_bytes(gemma, 16, lay) for lay in ("reserved", "serialized")]
    made.clear()
    plan, sizes, _ = api._hybrid_plan(gemma, 16, specs, gbb, None, None, None, None)
    assert plan is not None and len(made) == 2 and made[1] == sizes


def test_gated_parts_ask_threads_wanted_no_more(monkeypatch):
    import pcs.beside as beside
    from pcs.engine.runparts import PendingParts

    asked = []
    real = beside.threads_wanted
    monkeypatch.setattr(beside, "threads_wanted", lambda: asked.append(1) or real())
    pending = PendingParts.gated(np.array([1.0, 0.5]))
    pending.settle()
    assert asked == [] and pending._split
    plain = PendingParts(None)                  # the plain kind still follows threads_wanted
    assert asked == [1]
    plain.settle()


def test_replays_in_threads_share_the_kept_objects():
    # two threads replaying at once: the same summaries as one after the other
    kw = dict(tiers=["gpu=64blocks", "cpu=256blocks"], policy="lru")
    want = pcs.replay(TINY, **kw).summary.to_dict()
    out = []
    ts = [threading.Thread(target=lambda: out.append(pcs.replay(TINY, **kw).summary.to_dict())) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert out == [want] * 3
