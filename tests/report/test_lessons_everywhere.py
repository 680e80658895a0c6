"""Both lessons in every report that shows a replay's figures (compare once lacked lesson 2, sweep both).

Lesson 1: the real hit ratio a finite cache reaches beside the single-sequence (infinite-cache) ratio.
Lesson 2: a KV dtype of half the bytes halves payload, reserved bytes and restore bytes, not prefill or TTFT.
Byte counts by hand: llama-2-70b (the default model), 512-token blocks, TP 8 replay tiers per TP group:
80 layers x 8 KV heads x 128 dims x 2 (K, V) x 512 tokens = 83,886,080 values -> fp16 167,772,160 B per block,
fp8 (vLLM: per-tensor scales outside the pages) 83,886,080 B: exactly x0.500 (tests/report/test_fp8_lesson.py).
"""
from __future__ import annotations

import json

from helpers import invoke, invoke_json
from pcs.sweep.store import encode_row, write_point
from pcs.sweep.summary import summarize
from pcs.trace import DEFAULT_TRACE

FP16, FP8 = 167_772_160, 83_886_080
COMPARE = ("compare", DEFAULT_TRACE, "--policy", "lru", "--policy", "fifo", "--tier", "gpu=200blocks",
           "--tier", "cpu=800blocks", "--compute", "infinite")


def test_compare_text_shows_both_lessons_per_variant():
    r = invoke(*COMPARE)
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "single-sequence hit ratio" in out and "NOT what a finite cache reaches" in out      # lesson 1
    for variant in ("lru", "fifo"):
        assert f"{variant}: Payload is not everything: KV fp16 vs fp8" in out                  # lesson 2, each
    rows = {line.split("  ")[0]: line.split()[-1] for line in out.splitlines() if "  x" in line}
    assert rows["GPU bytes/block (Reserved)"] == "x0.500"             # the bytes halve ...
    assert rows["prefill of the missed tokens"] == "x1.000"           # ... the prefill of the misses does not
    assert out.count("stored bytes shrink with the payload only") == 1   # the note once, not per variant


def test_compare_json_carries_each_variants_lens():
    res = invoke_json(*COMPARE)
    for v in res["variants"]:
        lens = v["payload_lens"]
        assert lens["gpu_bytes_per_block"] == [FP16, FP8]
        assert lens["reference_bytes_per_block"] == [FP16, FP8]
        assert lens["restored_bytes"][1] * 2 == lens["restored_bytes"][0]       # same hits, half the bytes
        assert lens["prefill_s"][0] == lens["prefill_s"][1]                     # compute counts FLOPs, not bytes
    assert res["variants"][0]["single_sequence_hit_ratio"] >= res["variants"][0]["hit_ratio"]


def test_compare_html_shows_each_variants_lens(tmp_path):
    page = tmp_path / "c.html"
    r = invoke(*COMPARE, "--html", page)
    assert r.exit_code == 0, r.output
    html = page.read_text()
    assert "lru: Payload is not everything" in html and "fifo: Payload is not everything" in html


def _row(pid, hit, ss, restored):
    """A replay point's row as pcs sweep writes it (flattened JSON; a pair is a JSON text cell)."""
    lens = {"dtype": "fp16", "alt_dtype": "fp8", "layout": "fp16", "reference_bytes_per_block": [FP16, FP8],
            "gpu_bytes_per_block": [FP16, FP8], "lower_bytes_per_block": [FP16, FP8],
            "gpu_capacity_blocks": [100, 200], "restored_bytes": [restored, restored // 2],
            "restore_transfer_s": [2.0, 1.0], "prefill_s": [30.0, 30.0], "ttft_mean_s": [4.0, 4.0]}
    row = {"point_id": pid, "kind": "replay", "option.tier.cpu": pid, "hit_ratio": hit,
           "single_sequence_hit_ratio": ss, "envelope.ttft_p50_s": 1.0, "envelope.ttft_p99_s": 2.0,
           "envelope.wait_p99_s": 0.0, "tiers.gpu.capacity_bytes": 10**9,
           "tiers.cpu.capacity_bytes": {"small": 10**9, "big": 4 * 10**9}[pid]}
    row.update({f"payload_lens.{k}": json.dumps(v) if isinstance(v, list) else v for k, v in lens.items()})
    return row


def test_sweep_summary_shows_both_lessons(tmp_path):
    # two points: "big" reaches 0.30 of a 0.40 ceiling with more CPU bytes, "small" 0.20: both on the front;
    # the lens is the best hit-ratio point's ("big", restored 8e9 B -> 4e9 B in fp8)
    for pid, hit in (("small", 0.20), ("big", 0.30)):
        write_point(tmp_path, pid, encode_row(_row(pid, hit, 0.40, 8 * 10**9)))
    s = summarize(tmp_path)
    assert [(p.point_id, p.hit_ratio, p.single_sequence_hit_ratio) for p in s.front] == \
        [("small", 0.20, 0.40), ("big", 0.30, 0.40)]
    assert s.payload_lens_point_id == "big"
    assert s.payload_lens["restored_bytes"] == [8 * 10**9, 4 * 10**9]
    out = invoke("sweep", "summarize", tmp_path).stdout
    assert "single-sequence hit ratio" in out and "40.0 %" in out and "NOT what a finite cache reaches" in out
    assert "best hit-ratio point big: Payload is not everything: KV fp16 vs fp8" in out
    rows = {line.split("  ")[0]: line.split("  ")[1:] for line in out.splitlines() if "  x" in line}
    assert [c.strip() for c in rows["bytes of this run's restores"] if c.strip()] == ["8.00 GB", "4.00 GB", "x0.500"]
    assert [c.strip() for c in rows["prefill of the missed tokens"] if c.strip()] == ["30.00 s", "30.00 s", "x1.000"]
