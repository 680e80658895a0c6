"""A single-instance replay that caches decode blocks reports the decode-aware single-sequence ceiling
(docs/semantics.md §12, §17): real <= ``single_sequence_with_decode_hit_ratio``, and the text report's ceiling
line is that ratio."""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers import req, unwrapped
from pcs import replay
from pcs.engine.schedconfig import SchedulerConfig
from pcs.report.replay import render_replay

BS = 4
STEP = dict(model="llama-3.1-8b", hardware="h100-sxm", tp=1)     # the analytic compute: the step scheduler runs
SAMPLE = Path(__file__).resolve().parents[2] / "traces" / "sample_chat.jsonl"


def _hand_case() -> list:
    # block size 4. A at 0 s: ids [1, 2], prompt 8, output 9 -> its KV ends at 8 + 9 - 1 = 16 tokens, so its
    # output fills the full blocks at positions 2 .. 16 // 4 - 1 = 3.
    # B at 10 s (A long finished): ids [1, 2, 3, 4, 5], prompt 20 >= 8 + 9: A's next turn; A's output blocks
    # are cached under B's ids 3, 4. B hits [1, 2, 3, 4] (cap (20 - 1) // 4 = 4 blocks) = 16 tokens.
    # Prompt tokens 8 + 20 = 28: real = 16 / 28 = 57.1 %.
    # Prompt-only single-sequence: ids 3, 4 are first uses at B -> B hits [1, 2] = 8 tokens = 8 / 28 = 28.6 %
    # (below real: finding 6). Decode-aware: 3, 4 seen after A -> 16 / 28, the ceiling real reaches.
    return [req([1, 2], 0.0, prompt=8, out=9, bs=BS), req([1, 2, 3, 4, 5], 10.0, prompt=20, out=0, bs=BS)]


def test_hand_case_real_is_at_most_the_decode_aware_ceiling():
    s = replay(_hand_case(), **STEP).summary
    assert (s.hit_tokens, s.prompt_tokens) == (16, 28)
    assert s.single_sequence_hit_ratio == 8 / 28
    assert s.single_sequence_with_decode_hit_ratio == 16 / 28
    assert s.hit_ratio <= s.single_sequence_with_decode_hit_ratio
    text = unwrapped(render_replay(s.to_dict()))
    # each label names its own JSON key (single_sequence_with_decode_hit_ratio, single_sequence_hit_ratio)
    ceiling = next(line for line in text.splitlines() if line.startswith("single-sequence with decode hit ratio"))
    assert "57.1 %" in ceiling and "incl. the next turns' cached decode blocks" in ceiling
    prompt_only = next(line for line in text.splitlines() if line.startswith("single-sequence hit ratio"))
    assert "28.6 %" in prompt_only and "prompt blocks only" in prompt_only
    # the gap split's text names the decode blocks' share, (16 - 8) / 28 = 28.57 pts exactly, as the difference
    # of the printed ratios (docs/semantics.md §12, "Printed figures add up"): 57.1 - 28.6 = +28.5 pts
    assert "raise the ceiling by +28.5 pts" in text


def test_no_decode_blocks_no_new_key_and_the_old_ceiling_line():
    # decode blocks off: B hits [1, 2] only (8 / 28); the prompt-only ceiling is the ceiling, no new key
    s = replay(_hand_case(), scheduler=SchedulerConfig(cache_decode_blocks=False), **STEP).summary
    assert s.hit_tokens == 8 and s.single_sequence_with_decode_hit_ratio is None
    d = s.to_dict()
    assert "single_sequence_with_decode_hit_ratio" not in d
    text = render_replay(d)
    assert "prompt blocks only" not in text and "infinite cache, same block rules: NOT what" in text


def test_compute_infinite_caches_no_decode_blocks():
    # instant compute has no step scheduler: no decode blocks, so B hits 8 tokens and no new key
    s = replay(_hand_case(), compute_mode="infinite", **STEP).summary
    assert s.hit_tokens == 8 and s.single_sequence_with_decode_hit_ratio is None


@pytest.mark.parametrize("dtype", ["fp16", "fp8"])
def test_sample_real_is_at_most_the_decode_aware_ceiling(dtype):
    # the walkthrough's case: `pcs replay --dtype fp8` printed real 38.1 % above the prompt-only 37.7 %
    s = replay(str(SAMPLE), dtype=dtype).summary
    assert s.scheduler.cache_decode_blocks and s.scheduler.decode_blocks_cached > 0
    assert s.hit_ratio <= s.single_sequence_with_decode_hit_ratio
    assert s.single_sequence_with_decode_hit_ratio >= s.single_sequence_hit_ratio


def test_a_negative_oracle_capacity_gap_says_why_on_its_line():
    # docs/semantics.md §12. The hand case with --gap-oracle: the Belady oracle on
    # the same tiers (room for everything) hits like the real run, B's [1, 2, 3, 4] incl. A's cached decode
    # blocks = 16 / 28; the prompt-only single-sequence is 8 / 28, so gap.capacity = (8 - 16) / 28 = -28.57 pts,
    # printed as the difference of the printed ratios (§12, "Printed figures add up"): 28.6 - 57.1 = -28.5 pts
    s = replay(_hand_case(), gap_oracle=True, **STEP).summary
    assert s.oracle_hit_ratio == 16 / 28
    line = next(line for line in unwrapped(render_replay(s.to_dict())).splitlines() if line.startswith("oracle split: capacity"))
    assert "-28.5 pts" in line and "< 0: the oracle also hits cached decode blocks" in line
    # without decode blocks the oracle hits B's [1, 2] only: 8 / 28, gap 0: no hint
    s = replay(_hand_case(), gap_oracle=True, scheduler=SchedulerConfig(cache_decode_blocks=False), **STEP).summary
    line = next(line for line in unwrapped(render_replay(s.to_dict())).splitlines() if line.startswith("oracle split: capacity"))
    assert s.oracle_hit_ratio == 8 / 28 and "< 0" not in line
