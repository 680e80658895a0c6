"""The HTML page carries both lessons like the text report: the gap rows with the text's signs, the payload lens."""
from pcs.report.htmlcharts import waterfall_chart
from pcs.report.htmltables import lens_table


def test_waterfall_gap_labels_have_the_text_reports_signs():
    # ideal 50 %, single-sequence 40 %, sequential 30 %, real 25 %: the gaps are +10, +10, +5 pts (ideal - real = 25)
    s = {"ideal_hit_ratio": 0.5, "single_sequence_hit_ratio": 0.4, "sequential_hit_ratio": 0.3, "hit_ratio": 0.25,
         "gap": {"block_rounding": 0.1, "capacity_eviction": 0.1, "concurrency": 0.05}}
    rows = waterfall_chart(s, None).spec["datasets"]["steps"]
    assert [r["label"] for r in rows if r["kind"] == "gap"] == ["+10.0 pts", "+10.0 pts", "+5.0 pts"]


def test_lens_table_shows_payload_halving_beside_what_does_not_halve():
    # fp16 -> fp8: payload 2,000 -> 1,000 B a block (x0.500); prefill 10 s both (x1.000)
    lens = {"dtype": "fp16", "alt_dtype": "fp8", "reference_bytes_per_block": [2000, 1000],
            "gpu_bytes_per_block": [2000, 1032], "lower_bytes_per_block": [2000, 1032],
            "gpu_capacity_blocks": [100, 193], "restored_bytes": [10**6, 516000], "restore_transfer_s": [1.0, 0.516],
            "prefill_s": [10.0, 10.0], "ttft_mean_s": [2.0, 1.9]}
    t = lens_table({"payload_lens": lens})
    cells = {r[0]["text"]: r[3]["text"] for r in t["rows"]}
    assert cells["payload bytes/block (Reference)"] == "x0.500" and cells["GPU bytes/block (Reserved)"] == "x0.516"
    assert cells["prefill of the missed tokens"] == "x1.000" and cells["mean TTFT (waits and queueing held)"] == "x0.950"
    assert lens_table({}) is None
