"""One note counts every truncated request by cause, the same in every timing (docs/semantics.md §5).

Default model llama-2-70b fp16, TP 8, blocks of 512 tokens. The trace: two requests of 2,560 tokens (5 full
blocks, ids 1..5) and one of 10 tokens (1 block), one output token each. A GPU tier of 2 blocks cannot give the
first two their 5 slots (nor 5 minus a 2-block hit for the second: 3 > 2 - 2 pinned), so both are truncated at
their first admission, in sequential, infinite and step timing alike; the third fits (1 slot).
"""
from __future__ import annotations

import json

import pytest

from tests.helpers import invoke

ROWS = ('{"timestamp": 0, "input_length": 2560, "output_length": 1, "hash_ids": [1, 2, 3, 4, 5]}\n'
        '{"timestamp": 1, "input_length": 2560, "output_length": 1, "hash_ids": [1, 2, 3, 4, 5]}\n'
        '{"timestamp": 2, "input_length": 10, "output_length": 1, "hash_ids": [9]}\n')


def _replay(tmp_path, *args):
    trace = tmp_path / "t.jsonl"
    trace.write_text(ROWS)
    r = invoke("replay", str(trace), "-q", "--format", "json", *args)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


@pytest.mark.parametrize("timing", [("--timing", "sequential"), ("--compute", "infinite"), ()])
def test_every_timing_names_every_truncated_request(tmp_path, timing):
    d = _replay(tmp_path, "--tier", "gpu=2blocks", "--tier", "cpu=10blocks", *timing)
    assert d["requests_truncated"] == 2
    assert ("2 of 3 requests truncated: the GPU tier (2 blocks) could not hold all their KV: 2 at their first "
            "admission (the slots reserved then did not fit) (docs/semantics.md §5)") in d["notes"]


def test_no_note_without_truncation(tmp_path):
    # 200 blocks hold every request whole: nothing truncated, no such note.
    d = _replay(tmp_path, "--tier", "gpu=200blocks", "--tier", "cpu=10blocks")
    assert d["requests_truncated"] == 0
    assert not [n for n in d["notes"] if "truncated" in n]


def test_a_hybrid_run_counts_the_gpu_tier_in_pages(tmp_path):
    # gemma-3-27b is hybrid (sliding-window and full-attention groups): its tiers hold pages, and the note's
    # capacity is the tier's capacity_blocks, which counts pages there (docs/semantics.md §3.1), named so.
    d = _replay(tmp_path, "--model", "gemma-3-27b", "--tier", "gpu=1blocks", "--tier", "cpu=10blocks")
    pages = d["tiers"][0]["capacity_blocks"]
    (note,) = [n for n in d["notes"] if "could not hold" in n]
    assert f"the GPU tier ({pages:,} pages)" in note and "blocks)" not in note
    # more than half truncated (the step scheduler's default timing): the timing note names the tier in pages too
    assert 2 * d["requests_truncated"] > d["requests"]
    (timing,) = [n for n in d["notes"] if "truncated, more than half" in n]
    assert f"(this one: {pages:,} {'page' if pages == 1 else 'pages'})" in timing
