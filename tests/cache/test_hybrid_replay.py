"""Hybrid models through ``pcs.replay`` and ``pcs replay`` (docs/semantics.md §3.1, §13.1, docs/hybrid.md).

- a model made only of full attention (llama-3.1-70b, deepseek-v3.2's MLA + indexer) gives
  exactly the replay it gave before: on the Mooncake trace the default equals
  ``hybrid_kv_cache_manager="disabled"``, and the hybrid engine run on it equals the reference;
- the presets' groups and pages follow vLLM's uniform page size and SGLang's ratios (worked out
  below from the configs);
- for hybrid models (hypothesis traces and the bundled sample): per-component bytes add up to each
  tier's totals at the end and at the peak, pools stay within their pages, the gap terms still sum
  to ideal - real, the time series holds the peak;
- the CLI: the JSON ``hybrid`` section, the per-request columns, options and their errors.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import ROOT, assert_one_line_error, invoke, traces, tables_equal
from pcs.engine.api import replay
from pcs.engine.hybrid import cache_groups, plan_hybrid
from pcs import _native
from pcs.engine.select import HYBRID_ROWS, SUMMARY_KEYS
from pcs.model import get_model, group_block_bytes, load_hf_config

from conftest import MOONCAKE_CONV as MOONCAKE  # noqa: E402  (../shared/traces or $PCS_SHARED_TRACES)
SAMPLE = ROOT / "traces" / "sample_chat.jsonl"
GEMMA2 = ROOT / "tests" / "model" / "configs" / "gemma2.json"
HYBRIDS = ("gpt-oss-120b", "gemma-3-27b", "qwen3-next-80b-a3b")


#: the engine ``auto`` picks for a hybrid model on the default shared lru pool (docs/semantics.md §15)
AUTO_HYBRID = "compiled-hybrid" if _native.built("grouphier") else "hybrid"


def _plan(model, manager="vllm", size=400 * 10**9, B=512, tp=8):
    spec = (get_model(model) if isinstance(model, str) else model).with_tp(tp)
    bb = [group_block_bytes(spec, B, lay) for lay in ("reserved", "serialized")]
    return plan_hybrid(spec, B, ["gpu", "cpu"], bb, [(size, None), (2 * 10**12, None)], manager, 0.8, 0.9, "all")


def _no_engine(d: dict) -> dict:
    return {k: v for k, v in d.items() if k not in SUMMARY_KEYS}


@pytest.mark.skipif(not MOONCAKE.exists(), reason="no Mooncake trace in ../shared/traces or $PCS_SHARED_TRACES")
def test_all_full_attention_on_mooncake_is_todays_replay():
    from pcs.trace import open_trace

    trace = open_trace(MOONCAKE)
    kw = dict(model="llama-3.1-70b", tiers=["gpu=100GB", "cpu=1TB"])
    base = replay(trace, hybrid_kv_cache_manager="disabled", **kw)
    default = replay(trace, **kw)
    assert default.summary.to_dict() == base.summary.to_dict() and "hybrid" not in default.summary.to_dict()
    tables_equal(default.requests, base.requests)
    # the hybrid engine with one full-attention group equals the reference (compute infinite here; under
    # the step scheduler: tests/engine/test_hybrid_step.py::test_one_full_group_under_the_step_scheduler)
    on_groups = replay(trace, engine="hybrid", compute_mode="infinite", **kw)
    ref = replay(trace, engine="reference", compute_mode="infinite", **kw)
    assert on_groups.summary.engine == "hybrid"
    assert _no_engine(on_groups.summary.to_dict()) == _no_engine(ref.summary.to_dict())
    tables_equal(on_groups.requests, ref.requests)


def test_full_attention_components_make_one_group():
    # DeepSeek V3.2: MLA latents and the indexer's keys share the full rule -> one group, not hybrid
    groups = cache_groups(get_model("deepseek-v3.2"), 64, 64, False)
    assert [(g.name, g.rule) for g in groups] == [("mla_latent+indexer_keys", "full")]
    assert _plan("deepseek-v3.2") is None and _plan("llama-3.1-70b") is None
    s = replay(SAMPLE, model="deepseek-v3.2", tiers=["gpu=300blocks"]).summary
    assert s.hybrid is None and s.engine != "hybrid"


def test_vllm_uniform_page_size_of_the_presets():
    # gpt-oss-120b, TP 8: 18 sliding + 18 full layers -> G = 18 (within 1.25x: the most); one KV head per
    # rank: 64 x 2 (K, V) x 2 B = 256 B per layer-token per rank, x 8 ranks x 512 tokens = 1,048,576 B
    # per layer-block; page = 18 x that = 18,874,368 B; each group's block is one page
    p = _plan("gpt-oss-120b")
    assert (p.layer_group_size, p.page_bytes[0][0], [g.pages for g in p.groups]) == (18, 18_874_368, [1, 1])
    assert p.groups[1].window_blocks == 1                       # W = 128: ceil(127 / 512)
    assert p.capacity_pages[0][0] == 400 * 10**9 // 18_874_368  # 21,192
    # gemma-3-27b: 10 full, 52 sliding -> G = 10; 2 KV heads per rank x 256 x 2 B x 8 x 512 = 4,194,304 B
    # per layer-block; page 41,943,040 B; sliding block = ceil(52 / 10) = 6 pages (8 layers of padding)
    p = _plan("gemma-3-27b")
    assert (p.layer_group_size, p.page_bytes[0][0], [g.pages for g in p.groups]) == (10, 41_943_040, [1, 6])
    assert 6 * p.page_bytes[0][0] - p.component_bytes[0][1]["sliding_window"] == 8 * 4_194_304
    # qwen3-next, TP 8: hybrid block size 144 (vLLM: 16 x ceil(137,216 / (16 x 1,024))) -> checkpoints
    # every 512 tokens (the smallest multiple of 512 >= 144); G = 12; a state takes 36 / 12 = 3 pages
    p = _plan("qwen3-next-80b-a3b")
    assert (p.hybrid_block_size, p.checkpoint_tokens, [g.pages for g in p.groups]) == (144, 512, [1, 3])
    # at TP 1 b_h = 16 x ceil(1,097,728 / (16 x 2,048)) = 544 -> every 1,024 tokens
    assert _plan("qwen3-next-80b-a3b", tp=1).checkpoint_tokens == 1024


def test_sglang_pools_follow_the_swa_ratio():
    # gpt-oss-120b on 400 GB: full and SWA bytes per token are both 36,864 (18 layers x 2,048 B);
    # F x 36,864 + 0.8 F x 36,864 = 400e9 -> F = 6,028,163 tokens: 11,773 full blocks, 0.8 F -> 9,419
    p = _plan("gpt-oss-120b", manager="sglang")
    assert p.pools == 2 and p.capacity_pages[0] == (11_773, 9_419)
    assert [g.pool for g in p.groups] == [0, 1]


def test_gemma2_config_alternates_full_and_window():
    spec = load_hf_config(GEMMA2)
    groups = cache_groups(spec, 16, 16, False)
    assert [(g.rule, g.layers, g.span_tokens) for g in groups] == [("full", 21, 0), ("window", 21, 4096)]
    s = replay(SAMPLE, model=spec, tiers=["gpu=60blocks", "cpu=200blocks"]).summary
    assert s.engine in HYBRID_ROWS and [g["rule"] for g in s.hybrid.groups] == ["full", "window"]


def _check_adds_up(s) -> None:
    """Per component bytes add up to each tier's totals; pools within pages; gap terms sum."""
    for t in s.tiers:
        assert sum(t.resident_bytes_end_by_component.values()) == t.resident_bytes_end
        assert sum(t.resident_bytes_peak_by_component.values()) == t.resident_bytes_peak
        assert t.resident_blocks_peak <= t.capacity_blocks
    g = s.gap
    assert abs(g.block_rounding + g.capacity_eviction + g.concurrency + g.hybrid_rules
               - (s.ideal_hit_ratio - s.hit_ratio)) < 1e-12
    assert sum(s.hit_ratio_per_tier.values()) == pytest.approx(s.hit_ratio)
    for name, per in s.hybrid.restored_bytes_by_component.items():
        tier = next(t for t in s.tiers if t.name == name)
        assert sum(per.values()) == tier.restored_bytes


@pytest.mark.parametrize("model", HYBRIDS)
@pytest.mark.parametrize("manager", ["vllm", "sglang"])
def test_presets_on_the_sample(model, manager):
    r = replay(SAMPLE, model=model, tiers=["gpu=50GB", "cpu=200GB"], hybrid_kv_cache_manager=manager,
               residency_step_s=30.0)
    s = r.summary
    assert s.engine == ("hybrid" if manager == "sglang" else AUTO_HYBRID) and s.hybrid.manager == manager
    _check_adds_up(s)
    assert s.hybrid.full_attention["engine"] not in HYBRID_ROWS
    series = s.hybrid.series["tiers"]["gpu"]
    assert series["t_s"] == sorted(series["t_s"]) and "peak" in series["kind"]
    peak = series["kind"].index("peak")
    assert {c: series[c][peak] for c in s.tiers[0].resident_bytes_peak_by_component} == \
        s.tiers[0].resident_bytes_peak_by_component
    cols = [c for c in r.requests.column_names if c.startswith("gpu_resident_bytes_")]
    assert {c[len("gpu_resident_bytes_"):] for c in cols} >= {c for c in s.tiers[0].resident_bytes_peak_by_component}
    assert int(r.requests.column("hybrid_lost_tokens").to_numpy().sum()) == s.hybrid.lost_tokens


@settings(max_examples=15, deadline=None)
@given(reqs=traces(max_requests=14), model=st.sampled_from(HYBRIDS), gpu=st.integers(4, 40),
       timing=st.sampled_from(["sequential", "modeled"]), manager=st.sampled_from(["vllm", "sglang"]))
def test_hybrid_replays_add_up(reqs, model, gpu, timing, manager):
    s = replay(reqs, model=model, tiers=[f"gpu={gpu}blocks", f"cpu={3 * gpu}blocks"], timing=timing,
               hybrid_kv_cache_manager=manager).summary
    _check_adds_up(s)


def test_cli_json_requests_out_and_options(tmp_path: Path):
    out = tmp_path / "rows.parquet"
    r = invoke("replay", SAMPLE, "--model", "gemma-3-27b", "--tier", "gpu=40GB", "--format", "json", "--quiet",
               "--requests-out", out, "--residency-step", "120s")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["engine"] == AUTO_HYBRID and d["hybrid"]["series"]["step_s"] == 120
    assert set(d["gap"]) == {"block_rounding", "capacity_eviction", "concurrency", "hybrid_rules"}
    import pyarrow.parquet as pq

    names = pq.read_table(out).column_names
    assert {"gpu_resident_bytes_full_attention", "gpu_resident_bytes_sliding_window", "hybrid_lost_tokens"} <= set(names)
    r = invoke("replay", SAMPLE, "--model", "gpt-oss-120b", "--hybrid-kv-cache-manager", "disabled", "--format",
               "json", "--quiet")
    assert r.exit_code == 0 and "hybrid" not in json.loads(r.stdout)
    assert_one_line_error(invoke("replay", SAMPLE, "--model", "gpt-oss-120b", "--engine", "reference"),
                          "reference", "hybrid")
    assert_one_line_error(invoke("replay", SAMPLE, "--hybrid-kv-cache-manager", "tgi"), "--hybrid-kv-cache-manager")
    assert_one_line_error(invoke("replay", SAMPLE, "--swa-full-tokens-ratio", "0"), "--swa-full-tokens-ratio")
    r = invoke("replay", SAMPLE, "--model", "qwen3-next-80b-a3b", "--tier", "gpu=40GB")
    assert r.exit_code == 0 and "hybrid block size" in r.stdout and "Hybrid model (vllm)" in r.stdout


def test_hybrid_models_run_the_step_scheduler():
    # the step scheduler (docs/semantics.md §9) runs cache groups (pcs.engine.hybridstep): a hybrid model's
    # modeled replay is compute step by default, no note about falling back; infinite when asked
    s = replay(SAMPLE, model="gpt-oss-120b", tiers=["gpu=40GB"], timing="modeled").summary
    assert s.compute == "step" and s.engine == AUTO_HYBRID and s.scheduler is not None
    assert not any("step scheduler does not" in n for n in s.notes)
    i = replay(SAMPLE, model="gpt-oss-120b", tiers=["gpu=40GB"], timing="modeled", compute_mode="infinite").summary
    assert i.compute == "infinite" and i.scheduler is None


def test_html_waterfall_of_a_hybrid_replay_has_the_hybrid_rules_gap():
    # §12: a hybrid model's gap adds hybrid_rules, taken out of capacity_eviction; the waterfall draws it
    # between single-sequence (ss) and capacity and eviction: from ss down to ss - hybrid_rules, and
    # capacity and eviction then starts there (an --html page of a hybrid replay failed its sum check)
    from pcs.report.htmlcharts import waterfall_chart

    s = replay(SAMPLE, model="gemma-3-27b", tiers=["gpu=40GB", "cpu=200GB"]).summary.to_dict()
    hyb, ss = s["gap"]["hybrid_rules"], s["single_sequence_hit_ratio"]
    assert hyb > 0
    rows = {r["step"]: r for r in waterfall_chart(s, None).spec["datasets"]["steps"]}
    hr = rows["hybrid rules (sequential replay)"]         # a sequential replay's term, so labelled (§12)
    assert hr["hi"] == ss and hr["lo"] == pytest.approx(ss - hyb, abs=1e-15)
    assert rows["capacity and eviction"]["hi"] == pytest.approx(ss - hyb, abs=1e-15)
