"""A sampled curve whose sample is too small to trust is warned about (stderr and the JSON's notes), and
pcs.curve refuses a capacity listed twice as pcs curve --capacities does (hostile-input review of 2026-12-04,
findings 2 and 4).

Finding 2: ``pcs curve --sample-rate 1e-6`` on the bundled sample kept no block beyond the exact chain heads and
put the ceiling at 3.7 % against 37.7 % with only "LRU values are estimates". The threshold, 1,000 distinct
sampled blocks (pcs.curves.api.MIN_SAMPLED_BLOCKS), is measured in docs/curves.md ("How small a sample"); the
warning cites the error measured there at the sample's size (fix34b finding 4: it said "may be off by many
points" of ~500-1,700 blocks measured at 0.4-1.5 points on average).
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import pcs
from helpers import invoke, make_requests
from pcs.curves.api import MIN_SAMPLED_BLOCKS, LruCurve, load_accesses, lru_curve, small_sample_note
from pcs.errors import UserError

# 4-token blocks. Heads (position 0 of a request): ids 1 and 10. Non-head ids: 2, 3, 4 (request 0 and 1),
# 11, 12 (requests 2 and 3): 5 distinct non-head blocks, 10 non-head accesses (all full blocks: 16 and 12 tokens).
SPEC = [([1, 2, 3, 4], 16), ([1, 2, 3, 4], 16), ([10, 11, 12], 12), ([10, 11, 12], 12)]


def _curve(sampled_blocks):
    return LruCurve(np.zeros(2), np.zeros(2), 1, 1, 1, 0.5, "python", sampled_blocks)


def test_the_note_starts_below_the_threshold():
    assert MIN_SAMPLED_BLOCKS == 1000
    assert small_sample_note(_curve(MIN_SAMPLED_BLOCKS)) is None
    assert small_sample_note(_curve(None)) is None                       # exact, or nothing estimated
    note = small_sample_note(_curve(999))
    assert note.startswith("SHARDS sample rate 0.5 kept 999 distinct blocks beyond the exact chain heads, fewer "
                           "than 1,000: samples of 504-864 blocks (the largest size measured at or below it) erred "
                           "by 0.42-1.52 points on average over the capacities and by up to 4.64")


@pytest.mark.parametrize("n, cited", [
    # docs/curves.md's table, sizes of the sample: 0-1 and 3-4 (bundled) -> 0-4: means 5.83 and 18.18, worst 34.23;
    # 53-58, 32-36, 35-40 -> 32-58: means 1.40, 6.96, 14.07, worst 19.48 (10x); 336-349, 327-335 -> 327-349:
    # means 0.64, 4.79, worst 8.72; 504-521, 813-841, 844-864 -> 504-864: means 0.83, 0.42, 1.52, worst 4.64
    (0, "samples of 0-4 blocks erred by 5.83-18.18 points on average over the capacities and by up to 34.23"),
    (31, "samples of 0-4 blocks (the largest size measured at or below it) erred by 5.83-18.18 points"),
    (32, "samples of 32-58 blocks erred by 1.40-14.07 points on average over the capacities and by up to 19.48"),
    (349, "samples of 327-349 blocks erred by 0.64-4.79 points on average over the capacities and by up to 8.72"),
    (503, "samples of 327-349 blocks (the largest size measured at or below it) erred by 0.64-4.79"),
    (504, "samples of 504-864 blocks erred by 0.42-1.52 points on average over the capacities and by up to 4.64"),
])
def test_the_note_cites_the_error_measured_at_that_size(n, cited):
    note = small_sample_note(_curve(n))
    assert f"kept {n:,} distinct blocks beyond the exact chain heads, fewer than 1,000: {cited}" in note
    assert note.endswith("(docs/curves.md: 3 traces, 8 seeds); raise --sample-rate, or drop it for the exact curve")


def test_an_exact_curve_has_no_sample():
    flat, _ = load_accesses(make_requests(SPEC))
    assert lru_curve(flat).sampled_blocks is None


def test_a_rate_that_keeps_nothing_counts_0_sampled_blocks():
    # at rate 2^-60 a block is kept when its 64-bit hash is below 2^4: none of these 5 ids (p = 5 x 2^-60)
    flat, _ = load_accesses(make_requests(SPEC))
    lru = lru_curve(flat, "python", 2.0 ** -60, 0, 1)
    assert lru.sampled_blocks == 0
    assert "kept 0 distinct blocks" in small_sample_note(lru)


def test_nothing_estimated_is_no_sample():
    # every block within the first 10 positions of a request: all kept exactly, none scaled up
    flat, _ = load_accesses(make_requests(SPEC))
    assert lru_curve(flat, "python", 0.5, 0, 10).sampled_blocks is None


def test_the_counted_sample_is_the_distinct_non_head_blocks_kept():
    # at rate 1 - 2^-53 (below 1: sampled) every block hashes below the threshold but for a 2^-53 chance each:
    # all 5 non-head blocks kept, yet the curve is estimated from them
    flat, _ = load_accesses(make_requests(SPEC))
    lru = lru_curve(flat, "python", 1.0 - 2.0 ** -53, 0, 1)
    assert lru.sampled_blocks is None        # every non-head access kept: nothing left out, nothing estimated
    lru = lru_curve(flat, "python", 0.5, 0, 1)
    from pcs.curves.shards import sample_mask

    ids = np.array([2, 3, 4, 11, 12], dtype=np.uint64)
    kept = int(sample_mask(ids, 0.5, 0).sum())
    assert lru.sampled_blocks == (kept if kept < 5 else None)


def test_pcs_curve_warns_on_stderr_and_in_the_notes():
    args = ["curve", "--sample-rate", "1e-6", "--capacities", "1blocks,40000blocks", "--format", "json"]
    r = invoke(*args)
    assert r.exit_code == 0, r.output
    warning = [ln for ln in r.stderr.splitlines() if ln.startswith("pcs: warning: ")]
    assert len(warning) == 1 and "SHARDS sample rate 1e-06 kept " in warning[0]
    assert "fewer than 1,000: samples of " in warning[0]
    notes = json.loads(r.stdout)["notes"]
    assert notes[-1] == warning[0].removeprefix("pcs: warning: ")
    quiet = invoke(*args, "--quiet")                        # -q: no stderr, the note stays in the JSON
    assert "warning" not in quiet.stderr and json.loads(quiet.stdout)["notes"] == notes
    table = invoke(*args[:-2])
    assert "note: SHARDS sample rate 1e-06 kept " in table.stdout


def test_a_large_enough_sample_is_not_warned():
    # rate 0.5 of the bundled sample keeps 12,508-12,568 blocks beyond the heads (docs/curves.md)
    r = invoke("curve", "--sample-rate", "0.5", "--points", "5", "--format", "json")
    assert r.exit_code == 0, r.output
    assert "warning" not in r.stderr
    assert not any("fewer than 1,000" in n for n in json.loads(r.stdout).get("notes", []))


@pytest.mark.parametrize("caps, repeat", [([5, 5], 5), ([1, 7, 3, 7], 7), ([0, 0], 0)])
def test_the_api_refuses_a_capacity_listed_twice_as_the_cli_does(caps, repeat):
    with pytest.raises(UserError, match=rf"^capacities: {repeat} is listed twice; give each capacity once$"):
        pcs.curve(capacities=caps)
    cli = invoke("curve", "--capacities", ",".join(f"{c}blocks" for c in caps))
    assert cli.exit_code == 2
    assert f"--capacities: '{repeat}blocks' is listed twice; give each capacity once" in cli.stderr


def test_the_repeat_is_refused_before_the_trace_is_read(tmp_path):
    with pytest.raises(UserError, match="listed twice"):
        pcs.curve(tmp_path / "no-such-trace.jsonl", capacities=[5, 5])


def test_capacities_given_once_are_sorted():
    assert [r.capacity_blocks for r in pcs.curve(capacities=[40, 1, 5], belady=False).rows] == [1, 5, 40]
