"""A hybrid replay's resident bytes per component over time come from the one place that counts pages per
cache group (``hybrid.series``, docs/semantics.md §13.1), never from a tier's pages x each component's bytes per
block (review 48k K1: Nemotron-H showed full_attention = the whole tier and ssm_state on top of it)."""
from __future__ import annotations

import json

import pcs
from pcs.report.htmltime import hybrid_residency_chart

#: gpt-oss-120b (pcs/model/presets.py, its config.json): 36 layers alternating sliding (window 128) / full, 8 KV
#: heads, head_dim 64, bf16. vLLM's uniform page (§13.1): G = 18 layers a page, one page per block per group;
#: a 16-token page = 18 layers x (K + V) x 8 heads x 64 x 2 B x 16 tokens (all TP ranks together).
PAGE = 18 * 2 * 8 * 64 * 2 * 16


def _trace(tmp_path):
    """A 64-token request at t = 0 (4 blocks of 16; the window 128 keeps all 4) and a 17-token one at 10 s."""
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({"timestamp": 0, "output_length": 1, "token_ids": list(range(1, 65))}) + "\n"
                 + json.dumps({"timestamp": 10_000, "output_length": 1, "token_ids": list(range(1000, 1017))}) + "\n")
    return str(p)


def test_hybrid_components_over_time_add_up_to_the_tier(tmp_path):
    s = pcs.replay(pcs.open_trace(_trace(tmp_path), block_size=16), model="gpt-oss-120b",
                   residency_step_s=1.0).summary.to_dict()
    assert PAGE == 589_824 == s["tiers"][0]["bytes_per_block"]
    ts, hs = s["series"], s["hybrid"]["series"]["tiers"]["gpu"]
    # before the second request: 4 full-attention pages + 4 sliding-window pages = 8 pages resident
    before = [b for t, b in zip(ts["t_s"], ts["resident_bytes"]["gpu"]) if 5.0 < t < 10.0]
    assert set(before) == {8 * PAGE}
    # no per-component line made of 8 pages x each component's bytes per block (2 x 8 x PAGE, twice the tier)
    assert "gpu" not in ts["resident_bytes_by_component"]
    k = hs["t_s"].index(9.0)   # residency step 1 s from the first arrival at 0 s
    assert (hs["full_attention"][k], hs["sliding_window"][k]) == (4 * PAGE, 4 * PAGE)
    assert hs["full_attention"][k] + hs["sliding_window"][k] == 8 * PAGE == before[-1]


def test_html_draws_the_hybrid_components_from_hybrid_series(tmp_path):
    s = pcs.replay(pcs.open_trace(_trace(tmp_path), block_size=16), model="gpt-oss-120b",
                   residency_step_s=1.0).summary.to_dict()
    chart = hybrid_residency_chart(s["hybrid"])
    rows = {(r["series"], r["x"]): r["y"] for r in chart.spec["datasets"]["lines"]}
    assert rows[("gpu: full_attention", 9.0)] == rows[("gpu: sliding_window", 9.0)] == 4 * PAGE
    assert hybrid_residency_chart(None) is None
