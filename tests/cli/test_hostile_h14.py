"""Hostile input that crashed: each finding's whole kind refused with one line naming the cause (exit 2).

Every input is written here (tmp_path); the expected messages and bounds are worked out in the comments.
"""
import json

import pytest

from helpers import SMALL_TRACE, assert_one_line_error, invoke

TIERS = ("--tier", "gpu=40blocks", "--tier", "cpu=150blocks")


def _far_trace(tmp_path):
    # four 1,024-token requests 1e11 ms = 1e8 s apart: the last arrives 3e8 s > 31,622,400 s (366 days) after
    # the first (each of two round-robin instances gets two of them, 2e8 s apart), so the step scheduler's span
    # limit is reached (schedstats.MAX_SPAN_S) but not the trace's +-2**32 s clock bound (MAX_ARRIVAL_S).
    f = tmp_path / "far.jsonl"
    rows = [{"timestamp": k * 10 ** 11, "input_length": 1024, "output_length": 5, "hash_ids": [1, 2]}
            for k in range(4)]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return f


@pytest.mark.parametrize("extra", [(), ("--instances", "2"), ("--instances", "2", "--shared-tier", "remote=100blocks"),
                                   ("--model", "gemma-3-27b", "--tp", "1")])
def test_f3_span_limit_is_one_line_on_both_engines(tmp_path, extra):
    # F3: the compiled loop raised a plain ValueError ("bug in pcs", exit 1) where the reference raises UserError
    f = _far_trace(tmp_path)
    lines = [assert_one_line_error(invoke("replay", f, *TIERS, *extra, *eng, "-q"), "366 days", "ran past")
             for eng in ((), ("--engine", "reference"))]
    assert lines[0] == lines[1]


def test_f3_span_limit_in_compare(tmp_path):
    f = _far_trace(tmp_path)
    assert_one_line_error(invoke("compare", f, *TIERS, "--policy", "lru", "--policy", "fifo", "-q"), "366 days")


@pytest.mark.parametrize("field, value, needle", [
    ("bf16_flops", "1e-300", "must be between 1e+09 and 1e+21 FLOP/s"),   # overflowed to inf (F4)
    ("bf16_flops", "1.0", "got 1"),                      # 1 FLOP/s: years per token (F3's hardware path)
    ("bf16_flops", "1e22", "got 1e+22"),                 # 10^5 above a B200: a token's time underflows to ~0
    ("fp8_flops", "1e-300", "must be between"),
    ("hbm_bps", '"1B/s"', "must be at least 1e+06 bytes/s"),
])
def test_f4_hardware_rates_outside_bounds_name_file_and_field(tmp_path, field, value, needle):
    hw = tmp_path / "hw.toml"
    hw.write_text(f"[gpu.h100-sxm]\n{field} = {value}\n", encoding="utf-8")
    for extra in ((), ("--compute", "infinite"), ("--timing", "sequential")):     # the field's own line, 2
        assert_one_line_error(invoke("replay", SMALL_TRACE, "--hardware-file", hw, *extra, "-q"),
                              f"hw.toml:2: field 'gpu.h100-sxm.{field}': ", needle)


def test_f4_rates_at_the_bounds_run(tmp_path):
    # the bounds themselves are allowed: 1e9 FLOP/s and 1e6 bytes/s (an 8B model: 1.6e10 FLOP per token -> 16 s)
    hw = tmp_path / "hw.toml"
    hw.write_text('[gpu.h100-sxm]\nbf16_flops = 1e9\nhbm_bps = "1MB/s"\n', encoding="utf-8")
    assert invoke("replay", SMALL_TRACE, "--hardware-file", hw, "--compute", "infinite", "-q").exit_code == 0


def test_f4_utilisation_below_the_flops_bound_names_mfu():
    # 1e-300 x 989.4e12 (H100 dense BF16) = 9.894e-286 FLOP/s < 1e9 x 0.001
    r = invoke("envelope", "--model", "llama-3.1-8b", "--restore-tokens", "8192", "--bandwidth", "10GB/s",
               "--mfu", "1e-300", "-q")
    assert_one_line_error(r, "--mfu 1e-300 x h100-sxm's bf16 peak", "below 1e+06")


CONFIGS = __import__("pathlib").Path(__file__).parent.parent / "model" / "configs"


def _config(tmp_path, base, name, **changes):
    cfg = json.loads((CONFIGS / base).read_text(encoding="utf-8"))
    (cfg["text_config"] if "text_config" in cfg else cfg).update(changes)
    f = tmp_path / name
    f.write_text(json.dumps(cfg), encoding="utf-8")
    return f


@pytest.mark.parametrize("pattern", ["-" * 52, "E" * 52, "-E" * 26])
def test_f1_a_model_with_no_cache_layer_is_refused_at_load_by_every_command(tmp_path, pattern):
    # F1: Nemotron-H '-' (MLP) and 'E' (MoE) layers hold no cache: 52 of them give 0 bytes per block, which
    # crashed replay (IndexError), deploy and curve (ZeroDivisionError) and printed 0 B in footprint.
    f = _config(tmp_path, "nemotron_h.json", "nh.json", hybrid_override_pattern=pattern)
    needles = ("nh.json:1: field 'hybrid_override_pattern'", "none of the 52 layers holds a KV cache", "nothing to cache")
    for args in (["replay", SMALL_TRACE, "--model", f, "--tp", "1"], ["deploy", "--model", f, "--tp", "1"],
                 ["curve", SMALL_TRACE, "--model", f, "--capacities", "10GB"],
                 ["footprint", "--model-config", f, "--tokens", "8192"]):
        assert_one_line_error(invoke(*args, "-q"), *needles)


def test_f1_one_cache_layer_is_enough(tmp_path):
    # one '*' (attention) among 51 MLP layers: a model with one full-attention layer, which runs
    f = _config(tmp_path, "nemotron_h.json", "nh.json", hybrid_override_pattern="*" + "-" * 51)
    assert invoke("footprint", "--model-config", f, "--tokens", "16", "-q").exit_code == 0


@pytest.mark.parametrize("table, line, needle", [
    ("axes", "policy = [1979-05-27T07:32:00Z]", "[axes]: option 'policy[0]': a TOML date/time (1979-05-27T07:32:00+00:00)"),
    ("fixed", "ttft-slo = 07:32:00", "[fixed]: option 'ttft-slo': a TOML date/time (07:32:00)"),
    ("fixed", 'tier = {gpu = "40blocks", cpu = 1979-05-27}', "[fixed]: option 'tier.cpu': a TOML date/time (1979-05-27)"),
    ("axes", '"tier.cpu" = ["10blocks", 1979-05-27]', "[axes]: option 'tier.cpu[1]': a TOML date/time"),    # its path
])
def test_f2_toml_dates_in_a_sweep_plan_are_refused_with_file_and_key(tmp_path, table, line, needle):
    # F2: tomllib turns these into datetime/date/time objects; the point id's json.dumps raised TypeError
    plan = tmp_path / "plan.toml"
    other = "axes" if table == "fixed" else "fixed"
    plan.write_text(f'kind = "replay"\n[{other}]\ntrace = "t.jsonl"\n[{table}]\n{line}\n', encoding="utf-8")
    r = invoke("sweep", "run", plan, "-o", tmp_path / "out", "--jobs", "1", "-q")
    assert_one_line_error(r, "plan.toml:5: " + needle, 'write the value as a string')    # the key's line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("base, field", [("llama4.json", "attention_chunk_size"), ("gemma3.json", "sliding_window"),
                                         ("gpt_oss.json", "sliding_window")])
@pytest.mark.parametrize("value, needle", [(0, "must be an integer >= 1, got 0"),
                                           (10 ** 15, "must be <= 1,048,576 (pcs's bound), got 1,000,000,000,000,000")])
def test_f7_chunk_and_window_fields_have_one_rule(tmp_path, base, field, value, needle):
    # F7: the chunk size and the window are refused alike: >= 1 and <= 2^20 = 1,048,576 (Fields.MAX_INT)
    f = _config(tmp_path, base, "c.json", **{field: value})
    assert_one_line_error(invoke("footprint", "--model-config", f, "--tokens", "16", "-q"),
                          f"c.json:1: field '{field}'", needle)


def test_f7_a_top_level_field_text_config_overrides_is_said(tmp_path):
    # F7's input: llama4.json keeps attention_chunk_size 8192 in text_config and gets 0 at the top level;
    # text_config wins (Llama4Config), and the assumption now says so instead of passing unsaid
    cfg = json.loads((CONFIGS / "llama4.json").read_text(encoding="utf-8"))
    cfg["attention_chunk_size"] = 0
    f = tmp_path / "l4.json"
    f.write_text(json.dumps(cfg), encoding="utf-8")
    r = invoke("footprint", "--model-config", f, "--tokens", "16", "--format", "json", "-q")
    assert r.exit_code == 0
    assert ("attention_chunk_size is 0 at the top level but 8192 in text_config: used text_config's 8192"
            in json.loads(r.stdout)["assumptions"])


@pytest.mark.parametrize("base, field", [("gemma3.json", "sliding_window_pattern"), ("jamba.json", "attn_layer_period"),
                                         ("qwen3_next.json", "full_attention_interval")])
def test_f7_pattern_and_period_fields_are_bounded_as_windows(tmp_path, base, field):
    # the layer-pattern integers had no upper bound where windows have 2^20 = 1,048,576 (Fields.MAX_INT)
    f = _config(tmp_path, base, "p.json", **{field: 10 ** 15})
    assert_one_line_error(invoke("footprint", "--model-config", f, "--tokens", "16", "-q"),
                          f"p.json:1: field '{field}'", "must be <= 1,048,576 (pcs's bound), got 1,000,000,000,000,000")
