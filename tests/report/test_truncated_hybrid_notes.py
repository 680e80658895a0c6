"""The hybrid notes when every request is truncated (a GPU tier smaller than one request's pages).

``hybrid.lost_tokens`` counts, at each request's lookup, the hits the other groups' rules refused of what the
full-attention group held, before a truncation cuts the request's hits (docs/semantics.md §3.1, §5). With every
request truncated and no hit in the run nor in the same run with every layer as full attention, the note said
"N hit tokens of this run lost to the hybrid rules (full attention held them)" beside a comparison line of 0 %:
it now says no hit was lost, and why; the comparison line says nothing of a difference that is 0.
"""
from __future__ import annotations

import json

from helpers import ROOT, invoke, unwrapped
from pcs.report.replay import hybrid_rows, render_replay

SAMPLE = ROOT / "traces" / "sample_chat.jsonl"


def _payload(**over) -> dict:
    """A hand-made hybrid replay payload: 3 requests, 3,072 prompt tokens, the fields the notes read."""
    s = {"requests": 3, "requests_truncated": 3, "hit_tokens": 0, "hit_ratio": 0.0, "sequential_hit_ratio": 0.0,
         "gap": {"hybrid_rules": 1024 / 3072},
         "tiers": [{"name": "gpu", "capacity_bytes": 100, "resident_bytes_peak_by_component": {"full_attention": 50}}],
         "hybrid": {"manager": "vllm", "lost_tokens": 1024,
                    "full_attention": {"hit_ratio": 0.0, "sequential_hit_ratio": 0.0, "tiers": {}}}}
    for k, v in over.items():
        s[k] = v
    return s


def _notes(s: dict) -> list[str]:
    return hybrid_rows(s)[3]


def test_every_request_truncated_and_no_hit_anywhere_loses_no_hit():
    comparison, lost = _notes(_payload())
    assert comparison == "the same run with every layer as full attention: hit ratio 0.0 % (this run 0.0 %)"
    assert lost.startswith("no hit of this run lost to the hybrid rules: all 3 requests were truncated (larger "
                           "than the GPU tier) and kept no hit, as the same run with every layer as full "
                           "attention; the 1,024 tokens the rules refused at lookup, before the truncation, were no "
                           "hit to lose (JSON hybrid.lost_tokens")


def test_every_request_truncated_with_hits_elsewhere_says_when_the_count_was_taken():
    """The comparison line hit 1,024 of 3,072 tokens (33.3 %): full attention did keep hits, so the refused ones
    are the rules' doing; the note says they were counted before the truncation."""
    full = {"hit_ratio": 1024 / 3072, "sequential_hit_ratio": 1024 / 3072, "tiers": {}}
    _, lost = _notes(_payload(hybrid={"manager": "vllm", "lost_tokens": 1024, "full_attention": full}))
    assert lost.startswith("1,024 hit tokens of this run refused by the hybrid rules at lookup (full attention held "
                           "them then), counted before all 3 requests were truncated (larger than the GPU tier)")


def test_some_requests_truncated_keep_the_plain_note():
    _, lost = _notes(_payload(requests_truncated=2, hit_tokens=512, hit_ratio=512 / 3072))
    assert lost.startswith("1,024 hit tokens of this run lost to the hybrid rules (full attention held them) (JSON")
    _, lost = _notes(_payload(requests_truncated=0, hybrid={"manager": "vllm", "lost_tokens": 0,
                                                            "full_attention": {"hit_ratio": 0.0, "tiers": {}}}))
    assert lost.startswith("0 hit tokens of this run lost to the hybrid rules (JSON")


def test_a_gpu_tier_of_one_page_truncates_every_request_and_the_notes_say_so(tmp_path):
    """gemma-3-27b at TP 8: a page is 10 layers x 512 tokens x 16 KV heads x 128 x 2 (K, V) x 2 B = 41,943,040 B
    (docs/hybrid.md), so gpu=0.05GB holds 1 page (50,000,000 / 41,943,040 = 1.19) and no request of the sample's
    first 100 rows (each at least one block: 1 full-attention page + 6 window pages) fits; sequential timing, so
    the run is the sequential replay: no hit there, nor in its all-full-attention line (a block of 260 MB)."""
    head = tmp_path / "h.jsonl"
    head.write_text("".join(SAMPLE.read_text().splitlines(keepends=True)[:100]))
    args = ["replay", head, "--model", "gemma-3-27b", "--tier", "gpu=0.05GB", "--tier", "cpu=1GB",
            "--timing", "sequential", "-q"]
    s = json.loads(invoke(*args, "--format", "json").stdout)
    assert (s["requests"], s["requests_truncated"], s["hit_tokens"]) == (100, 100, 0)
    assert s["tiers"][0]["capacity_blocks"] == 1
    assert s["hybrid"]["full_attention"]["hit_ratio"] == 0.0
    text = unwrapped(render_replay(s))
    assert "100 of 100 requests truncated: the GPU tier (1 page) could not hold" in text
    assert "1 GPU page pinned or reserved at once" in text
    assert "note: the same run with every layer as full attention: hit ratio 0.0 % (this run 0.0 %)\n" in text
    assert "note: no hit of this run lost to the hybrid rules: all 100 requests were truncated" in text
    if s["gap"]["hybrid_rules"]:
        (row,) = [line for line in text.splitlines() if line.startswith("gap: hybrid rules")]
        assert row.endswith("here refused at lookup, before truncation: that replay kept no hit, nor the same with "
                            "every layer as full attention, so read this row with capacity and eviction (the GPU "
                            "tier holds no request whole)")
