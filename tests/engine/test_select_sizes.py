"""A compiled row's fixed sizes are known to the engine-selection table (docs/semantics.md §15): ``auto`` takes the
first row that applies, so it never picks a compiled row whose set-up then refuses the replay; a row asked for by
name that cannot run is refused with the size it breaks.

The sizes (pcs/cache/nativegroups.py, pcs/cache/native.py, pcs/engine/stepnative.py): the compiled hybrid
hierarchy takes at most 8 tiers and 8 cache groups, a group block of at most 4096 pages, and per tier its pages x
the slab (the most pages of a group block rounded up to a power of two) at most 2**30; the compiled hierarchy at
most 64 tiers of at most 2**30 blocks; the C step loop at most 8 tiers.

Page counts below are worked out by hand from the models' figures (docs/semantics.md §3.1, §13.1: vLLM's uniform
page, G = the fewest layers of a kind, a group block takes ceil(layers / G) pages, a state group's pages once per
checkpoint of N = B x ceil(b_h / B) tokens, b_h = 16 x ceil(state page / (16 x attention bytes per token)), per
layer and rank).
"""
from __future__ import annotations

import pytest

from helpers import ROOT, invoke, invoke_json
from pcs import _native
from pcs.cache import Tier
from pcs.cache.groups import CacheGroup
from pcs.cache.policies import make_policy
from pcs.engine import select

HYBRID_C = _native.built("grouphier")
needs_grouphier = pytest.mark.skipif(not HYBRID_C, reason="pcs.cache._grouphier is not built")
TOKENS = ROOT / "traces" / "sample_tokens.jsonl"
QWEN = ("--model", "qwen3-next-80b-a3b")


def _same_but_engine(a: dict, b: dict) -> None:
    """Two replay summaries equal but for the keys that say which engine ran (select.SUMMARY_KEYS) and the command line."""
    strip = lambda d: {k: v for k, v in d.items() if k not in (*select.SUMMARY_KEYS, "replay_command")}  # noqa: E731
    assert strip(a) == strip(b)


def _auto_equals_hybrid(*args) -> dict:
    """``pcs replay ARGS`` under ``auto``: runs on ``hybrid`` with the numbers of ``--engine hybrid``."""
    auto = invoke_json("replay", *args)
    assert auto["engine"] == "hybrid", auto["engine_reason"]
    _same_but_engine(auto, invoke_json("replay", *args, "--engine", "hybrid"))
    return auto


def _groups(pages: int) -> tuple[CacheGroup, ...]:
    return (CacheGroup("full_attention", "full", ("full_attention",), 16),
            CacheGroup("sliding_window", "window", ("sliding_window",), 16, span_tokens=16, pages=pages))


# -- the reproducers (review 46f, F1): auto ran compiled-hybrid, which refused at set-up (exit 2) ------------------

@needs_grouphier
def test_qwen3_next_block_size_1_runs_on_hybrid_under_auto():
    """Qwen3-Next at TP 8, block size 1: b_h = 144 (the checkpoint), its 36 DeltaNet layers in groups of G = 12
    (the 12 full-attention layers) take ceil(36/12) = 3 pages per checkpoint of 144 blocks: a group block of
    3 x 144 = 432 pages, slab 512, so a tier of at most 2**30 / 512 = 2,097,152 pages; the default CPU tier
    (2 TB) holds more: compiled-hybrid does not apply."""
    s = _auto_equals_hybrid(TOKENS, *QWEN, "--tp", "8", "--block-size", "1", "--timing", "sequential")
    assert "not compiled-hybrid: it needs tiers of at most 2,097,152 pages with group blocks of 432 pages" \
        in s["engine_reason"]


@needs_grouphier
def test_qwen3_next_big_lower_tiers_run_on_hybrid_under_auto():
    """Block size 16 at TP 8: N = 16 x ceil(144/16) = 144 tokens, u = 9 blocks, a group block of 3 x 9 = 27 pages,
    slab 32: at most 2**30 / 32 = 33,554,432 pages a tier; 100 TB of 1,572,864 B pages is 63,578,491 pages."""
    s = _auto_equals_hybrid(TOKENS, *QWEN, "--tp", "8", "--tier", "gpu=auto", "--tier", "cpu=2TB",
                            "--tier", "ssd=100TB", "--timing", "sequential")
    assert "not compiled-hybrid: it needs tiers of at most 33,554,432 pages with group blocks of 27 pages, tier ssd " \
        "has more" in s["engine_reason"]


@needs_grouphier
def test_a_group_block_over_4096_pages_runs_on_hybrid_under_auto(tmp_path):
    """nvfp4 at TP 2, block size 1. Per layer and rank: the DeltaNet state is 16 V heads x 128 x 128 x 2 B +
    the conv state 4,096 x 3 x 2 B = 548,864 B; a full-attention token 1 KV head x 256 x 2 (K, V) x 0.5 B + one
    scale byte per 16 values (32 B) = 288 B; b_h = 16 x ceil(548,864 / (16 x 288)) = 16 x 120 = 1,920, so a
    checkpoint every 1,920 blocks of 3 pages each: a group block of 5,760 pages, over 4,096. One request, nothing
    cached before it: hit ratio 0."""
    one = tmp_path / "one.jsonl"
    one.write_text('{"timestamp": 0, "output_length": 1, "token_ids": [1, 2, 3, 4]}\n')
    args = (one, "--block-size", "1", *QWEN, "--dtype", "nvfp4", "--tp", "2", "--tier", "gpu=2blocks",
            "--timing", "sequential")
    s = _auto_equals_hybrid(*args)
    assert s["hit_ratio"] == 0.0
    assert "not compiled-hybrid: it takes at most 4,096 pages a group block, got 5,760" in s["engine_reason"]
    r = invoke("replay", *args, "--engine", "compiled-hybrid", "--format", "json", "--quiet")
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "engine 'compiled-hybrid' cannot run this replay: it takes at most 4,096 pages a group block, got 5,760" \
        in r.stderr


# -- the boundaries ------------------------------------------------------------------------------------------------

@needs_grouphier
@pytest.mark.parametrize("pages, applies", [(4096, True), (4097, False)])
def test_selection_and_set_up_agree_on_the_group_block_boundary(pages, applies):
    """A group block of exactly 4,096 pages applies, 4,097 does not, and the selection says what the set-up
    says (pcs.cache.nativegroups.unsupported): 4 pages x slab 4,096 (or 8,192) is far under 2**30."""
    from pcs.cache.nativegroups import unsupported

    tiers = [Tier("gpu", 4, make_policy("lru", 4))]
    row, reason = select.choose(select.RunConfig.of(tiers, "sequential", "auto", _groups(pages)))
    assert (row.name == "compiled-hybrid") is applies, reason
    assert (unsupported(tiers, _groups(pages), 1) is None) is applies
    if not applies:
        assert "not compiled-hybrid: it takes at most 4,096 pages a group block, got 4,097" in reason


@needs_grouphier
def test_selection_and_set_up_agree_on_the_tier_boundary():
    """Group blocks of 4,096 pages (slab 4,096 = 2**12): a tier of 2**30 / 2**12 = 262,144 pages applies, one
    page more does not -- in the table and at set-up alike."""
    from pcs.cache.nativegroups import unsupported

    for cap, applies in ((262_144, True), (262_145, False)):
        tiers = [Tier("gpu", cap, make_policy("lru", cap))]
        row, reason = select.choose(select.RunConfig.of(tiers, "sequential", "auto", _groups(4096)))
        assert (row.name == "compiled-hybrid") is applies, reason
        assert (unsupported(tiers, _groups(4096), 1) is None) is applies


@needs_grouphier
def test_the_tier_boundary_from_the_model_figures():
    """Qwen3-Next at TP 8, block size 1: a block of the model takes 1 full-attention page + 432 / 144 = 3 state
    pages = 4 pages, so gpu=524288blocks is 2,097,152 pages = 2**30 / 512 (slab of 432): compiled-hybrid; one
    block more (2,097,156 pages) runs on hybrid -- the same numbers."""
    base = (TOKENS, *QWEN, "--tp", "8", "--block-size", "1", "--timing", "sequential")
    at = invoke_json("replay", *base, "--tier", "gpu=524288blocks")
    over = invoke_json("replay", *base, "--tier", "gpu=524289blocks")
    assert (at["tiers"][0]["capacity_blocks"], over["tiers"][0]["capacity_blocks"]) == (2_097_152, 2_097_156)
    assert (at["engine"], over["engine"]) == ("compiled-hybrid", "hybrid")
    assert at["hit_ratio"] == over["hit_ratio"]


# -- the other compiled rows: the same kind ------------------------------------------------------------------------

def _tiers(n: int) -> list[str]:
    return ["--tier", "gpu=100blocks"] + [a for i in range(n - 1) for a in ("--tier", f"t{i}=100blocks",
                                                                            "--link", f"t{i}=25GB/s")]


@pytest.mark.skipif(not _native.built("lruhier"), reason="pcs.cache._lruhier is not built")
def test_65_tiers_run_on_the_reference_under_auto():
    """The compiled hierarchy takes at most 64 tiers (pcs/cache/_lruhier.c): 65 ran compiled-hierarchy under
    auto and stopped with an internal error; now the reference runs them, as named, with the same numbers."""
    auto = invoke_json("replay", TOKENS, "--timing", "sequential", *_tiers(65))
    assert auto["engine"] == "reference"
    assert "not compiled-hierarchy: it takes at most 64 tiers, got 65" in auto["engine_reason"]
    _same_but_engine(auto, invoke_json("replay", TOKENS, "--timing", "sequential", *_tiers(65),
                                       "--engine", "reference"))
    assert invoke_json("replay", TOKENS, "--timing", "sequential", *_tiers(64))["engine"] == "compiled-hierarchy"


@pytest.mark.skipif(not _native.built("stepsched"), reason="pcs.engine._stepsched is not built")
def test_nine_tiers_are_passed_by_the_table_not_at_set_up():
    """The C step loop takes at most 8 tiers: with 9 the table passes compiled-step (its reason says so) instead
    of the runner falling back from it at set-up; 8 run on it."""
    nine = invoke_json("replay", TOKENS, *_tiers(9))
    assert nine["engine"] == "compiled-hierarchy"
    assert "not compiled-step: the C step loop takes at most 8 tiers, got 9;" in nine["engine_reason"]
    assert "found at set-up" not in nine["engine_reason"]
    assert invoke_json("replay", TOKENS, *_tiers(8))["engine"] == "compiled-step"
